// SPDX-License-Identifier: BSD-3-Clause
// Device: open (driver registry, engine configuration), PDs, CQs, the
// progress entry points and the stats document.
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <optional>
#include <random>
#include <sched.h>

#include <nlohmann/json.hpp>

#include "driver/args.hpp"
#include "log/log.hpp"
#include "routing/fabric.hpp"
#include "runtime/capture_driver.hpp"
#include "runtime/clock.hpp"
#include "runtime/stats_json.hpp"
#include "verbs/device_core.hpp"

namespace omrc {

namespace detail {

void abort_live_children(const char* object, std::uint32_t children) {
    log::logger().critical("{} destroyed while {} of its objects are alive (children must be destroyed first)",
                               object, children);
    log::logger().flush();
    std::abort();
}

}  // namespace detail

namespace {

/// Arguments the runtime takes out of DeviceOptions::args before the driver
/// sees them (open() below): accepted for every driver.
constexpr std::array<std::string_view, 2> kRuntimeArgKeys{"next_hop_macs", "pcap"};

void set_err(int* err, int value) {
    if (err != nullptr) *err = value;
}

/// The device's own options. Returns 0, or EINVAL with `error` set.
int validate(const DeviceOptions& o, std::string& error) {
    auto bad = [&](std::string what) {
        error = std::move(what);
        return EINVAL;
    };
    if (o.planes > kMaxPlanes) return bad(fmt::format("planes={} exceeds {}", o.planes, kMaxPlanes));
    if (o.rx_burst_frames == 0 || o.rx_burst_frames > 1024) return bad("rx_burst_frames must be 1..1024");
    if (o.tx_burst_frames == 0 || o.tx_burst_frames > 1024) return bad("tx_burst_frames must be 1..1024");
    if (o.max_qps == 0 || o.max_qps > 4096) return bad("max_qps must be 1..4096");
    if (o.ack_every_pkts == 0 || o.ack_every_pkts > 64) return bad("ack_every_pkts must be 1..64");
    if (o.ev_track_depth == 0) return bad("ev_track_depth must be ≥ 1");
    if (o.frame_mode != FrameMode::plain && o.frame_mode != FrameMode::srv6) return bad("unknown frame_mode");
    if (o.workers == 0 || o.workers > (1u << core::kMaxShardBits))
        return bad(fmt::format("workers={}: must be 1..{}", o.workers, 1u << core::kMaxShardBits));
    if (!o.cpus.empty() && o.cpus.size() != o.workers)
        return bad(fmt::format("cpus names {} CPUs for {} workers: one per worker, or none", o.cpus.size(), o.workers));
    if (std::any_of(o.cpus.begin(), o.cpus.end(), [](int c) { return c < 0 || c >= CPU_SETSIZE; }))
        return bad("cpus: a CPU number must be 0..1023");
    if (o.worker_threads != WorkerThreads::automatic && o.worker_threads != WorkerThreads::none &&
        o.worker_threads != WorkerThreads::own)
        return bad("unknown worker_threads");
    if (o.worker_threads == WorkerThreads::own && o.clock && o.workers > 0)
        log::logger().warn("worker_threads=own with a clock of the caller's: the workers read it on their threads");
    const auto& sec = o.security;
    if (sec.key_select > 1) return bad("security.key_select must be 0 or 1");
    if (sec.replay_window < 64 || sec.replay_window > 65536 || !std::has_single_bit(sec.replay_window))
        return bad(fmt::format("security.replay_window={}: a power of two, 64..65536", sec.replay_window));
    if (sec.encryption != Encryption::off && sec.encryption != Encryption::aes_gcm_128 &&
        sec.encryption != Encryption::aes_gcm_256)
        return bad("security.encryption: off, aes_gcm_128 or aes_gcm_256");
    if (sec.encryption != Encryption::off && !sec.master_key[sec.key_select])
        return bad(fmt::format("security.encryption is on but master key {} (security.key_select) is not set",
                               sec.key_select));
    if (o.frame_mode == FrameMode::srv6) {
        const routing::FabricDesc f{o.fabric.usid_block, o.fabric.planes, o.fabric.t0_per_plane,
                                    o.fabric.t1_per_plane, o.fabric.hosts_per_t0};
        if (const std::string why = f.validate(); !why.empty()) return bad(fmt::format("srv6 fabric layout: {}", why));
        if (o.local_host >= f.hosts())
            return bad(fmt::format("local_host {} is not a host of the fabric ({} hosts)", o.local_host, f.hosts()));
    }
    return 0;
}

/// "aa:bb:cc:dd:ee:ff,..." → one MAC per plane (an empty entry keeps the
/// peer's MAC on that plane). Returns false on malformed input.
bool parse_next_hop_macs(std::string_view text, std::array<MacAddr, kMaxPlanes>& macs, std::uint32_t& mask) {
    const std::vector<std::string_view> items = driver::split(text);
    if (items.size() > kMaxPlanes) return false;
    for (std::uint32_t plane = 0; plane < items.size(); ++plane) {
        if (items[plane].empty()) continue;
        if (!driver::parse_mac(items[plane], macs[plane])) return false;
        mask |= 1u << plane;
    }
    return true;
}

std::uint64_t entropy_u64() {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

std::vector<std::string> Device::drivers() {
    driver::register_builtin_drivers();
    return driver::driver_names();
}

int Device::driver_arg_keys(std::string_view driver, std::vector<std::string>* keys) {
    driver::register_builtin_drivers();
    const std::optional<driver::DriverInfo> info = driver::find_driver(driver);
    if (!info) return ENODEV;
    if (keys != nullptr) {
        keys->assign(kRuntimeArgKeys.begin(), kRuntimeArgKeys.end());
        for (const driver::ArgKey& k : info->arg_keys) keys->emplace_back(k.name);
        std::sort(keys->begin(), keys->end());
        keys->erase(std::unique(keys->begin(), keys->end()), keys->end());
    }
    return 0;
}

LidAddress lid_address(std::string_view driver, FrameMode mode, const DeviceAddress& a) {
    LidAddress out;
    if (mode == FrameMode::srv6) {
        if (a.host > 0xFFFF) {
            out.warning = fmt::format("host index {} does not fit a 16-bit LID: peers cannot reach it", a.host);
            return out;
        }
        out.lid = static_cast<std::uint16_t>(a.host);
        return out;
    }
    driver::register_builtin_drivers();
    const std::optional<driver::DriverInfo> info = driver::find_driver(driver);
    if (!info || info->lid_codec == nullptr) {
        out.warning = fmt::format(
            "driver {} in plain frame mode: the peer's port MACs cannot travel in GID and LID; set "
            "next_hop_macs in [device.args] (the peer's MACs on a point-to-point link, the router's otherwise)",
            driver);
        return out;
    }
    if (!info->lid_codec->encode(a, out.lid, out.warning)) out.lid = 0;
    return out;
}

DeviceAddress peer_from_lid(std::string_view driver, FrameMode mode, const DeviceAddress& local, const Ipv6Addr& gid,
                            std::uint16_t lid) {
    DeviceAddress peer;
    peer.addr = gid;
    peer.planes = local.planes;
    if (mode == FrameMode::srv6) {
        peer.host = lid;
        return peer;
    }
    driver::register_builtin_drivers();
    const std::optional<driver::DriverInfo> info = driver::find_driver(driver);
    if (info && info->lid_codec != nullptr) info->lid_codec->decode(lid, local, peer);
    return peer;
}

std::unique_ptr<Device> Device::open(std::string_view driver, const DeviceOptions& options, int* err) {
    driver::register_builtin_drivers();
    const std::optional<driver::DriverInfo> info = driver::find_driver(driver);
    if (!info) {
        log::logger().error("no driver named '{}'", driver);
        set_err(err, ENODEV);
        return nullptr;
    }
    std::string why;
    if (const int e = validate(options, why); e != 0) {
        log::logger().error("device options: {}", why);
        set_err(err, e);
        return nullptr;
    }
    // Arguments of the runtime itself are taken out before the driver sees them.
    std::array<MacAddr, kMaxPlanes> next_hop_macs{};
    std::uint32_t next_hop_mask = 0;
    DeviceOptions driver_options = options;
    if (auto it = driver_options.args.find("next_hop_macs"); it != driver_options.args.end()) {
        if (!parse_next_hop_macs(it->second, next_hop_macs, next_hop_mask)) {
            log::logger().error("next_hop_macs={}: expected comma-separated aa:bb:cc:dd:ee:ff, one per plane",
                                    it->second);
            set_err(err, EINVAL);
            return nullptr;
        }
        driver_options.args.erase(it);
    }
    std::string pcap_path;
    if (auto it = driver_options.args.find("pcap"); it != driver_options.args.end()) {
        pcap_path = it->second;
        driver_options.args.erase(it);
        if (pcap_path.empty()) {
            log::logger().error("pcap=: give the file to write");
            set_err(err, EINVAL);
            return nullptr;
        }
    }
    driver::AttachedDriver attached;
    if (const int e = info->factory(driver_options, attached, why); e != 0) {
        log::logger().error("{}: {}", driver, why.empty() ? std::strerror(e) : why);
        set_err(err, e);
        return nullptr;
    }
    if (attached.queues.size() != options.workers ||
        std::any_of(attached.queues.begin(), attached.queues.end(), [](const auto& q) { return q == nullptr; })) {
        log::logger().error("{}: {} workers asked for, the driver opened {} queues", driver, options.workers,
                            attached.queues.size());
        set_err(err, EINVAL);
        return nullptr;
    }
    if (!pcap_path.empty()) {
        // Every frame the driver sends or receives, as the device sees it.
        if (const int e = runtime::CaptureDriver::wrap_all(attached.queues, pcap_path, why); e != 0) {
            log::logger().error("pcap={}: {}", pcap_path, why);
            set_err(err, e);
            return nullptr;
        }
        log::logger().info("capturing to {}", pcap_path);
    }
    driver::Driver& first = *attached.queues.front();
    const std::uint32_t driver_planes = std::min(first.planes(), kMaxPlanes);
    const std::uint32_t planes = options.planes != 0 ? options.planes : driver_planes;
    if (planes == 0 || planes > driver_planes) {
        log::logger().error("{} planes requested, driver '{}' has {}", planes, driver, driver_planes);
        set_err(err, EINVAL);
        return nullptr;
    }

    core::EngineConfig ec{};
    ec.planes = planes;
    ec.mode = options.frame_mode == FrameMode::srv6 ? wire::FrameMode::srv6 : wire::FrameMode::plain;
    ec.local_macs = attached.macs;
    const bool addr_given = std::any_of(options.local_addr.begin(), options.local_addr.end(),
                                        [](std::uint8_t b) { return b != 0; });
    ec.local_addr = addr_given ? options.local_addr : attached.default_addr;
    ec.fabric = {options.fabric.usid_block, options.fabric.planes, options.fabric.t0_per_plane,
                 options.fabric.t1_per_plane, options.fabric.hosts_per_t0};
    ec.local_host = options.local_host;
    const std::uint64_t seed = options.seed != 0 ? options.seed : entropy_u64();
    ec.seed = seed;
    // Software ICRC unless the caller turned it off or the driver says the
    // medium does not need it.
    const bool icrc_needed = first.icrc() == driver::IcrcHandling::software;
    ec.compute_icrc = options.compute_icrc && icrc_needed;
    ec.verify_icrc = options.verify_icrc && icrc_needed;
    for (int k = 0; k < 2; ++k)
        if (options.security.master_key[k]) {
            ec.security.master_keys[k] = *options.security.master_key[k];
            ec.security.present |= static_cast<std::uint8_t>(1u << k);
        }
    ec.security.key_select = static_cast<std::uint8_t>(options.security.key_select);
    ec.security.replay_window = options.security.replay_window;
    ec.ack_every_pkts = options.ack_every_pkts;
    ec.ack_delay_ns = options.ack_delay_ns;
    ec.ev_timeout_ns = options.ev_timeout_ns;
    ec.min_ev_timeout_ns = options.min_ev_timeout_ns;
    ec.probe_interval_ns = options.probe_interval_ns;
    ec.probe_successes_to_restore = options.probe_successes_to_restore;
    ec.ev_track_depth = options.ev_track_depth;
    ec.path_alarm_ns = options.path_alarm_ns;
    ec.peer_path_alarms = options.peer_path_alarms;
    ec.stale_path_packets = options.stale_path_packets;
    ec.port_status_repeat_ns = options.port_status_repeat_ns;
    ec.max_qps = options.max_qps;
    ec.shard_bits = core::shard_bits_for(options.workers);
    for (std::uint32_t p = 0; p < kMaxPlanes; ++p) ec.next_hop_macs[p] = next_hop_macs[p];
    ec.next_hop_mask = next_hop_mask;

    auto keys = options.seed != 0 ? verbs::KeyGenerator::from_seed(options.seed) : verbs::KeyGenerator::from_entropy();
    std::function<std::uint64_t()> clock = options.clock;
    if (!clock) clock = &runtime::steady_now_ns;
    auto core = std::make_unique<detail::DeviceCore>(std::move(attached.keepalive), std::string(driver),
                                                     std::move(clock), keys);
    detail::DeviceCore& d = *core;
    d.next_hop_macs = next_hop_macs;
    d.next_hop_mask = next_hop_mask;
    d.security_default = options.security.encryption;
    d.threaded = uses_worker_threads(options);
    if (options.workers > 1) d.exchange = std::make_unique<runtime::FrameExchange>(options.workers);
    runtime::ProgressConfig pc{};
    pc.rx_burst_frames = options.rx_burst_frames;
    pc.tx_burst_frames = options.tx_burst_frames;
    const std::uint64_t now = d.now();
    for (std::uint32_t w = 0; w < options.workers; ++w) {
        auto wk = std::make_unique<detail::Worker>(d, w, std::move(attached.queues[w]), d.mrs);
        core::EngineConfig wc = ec;
        wc.shard = w;
        wc.seed = seed + w;  // an independent stream per shard (seed + 0: a single worker's as before)
        wk->engine = std::make_unique<core::Engine>(wc, &wk->placement);
        wk->loop = std::make_unique<runtime::ProgressLoop>(*wk->queue, *wk->engine, pc, d.exchange.get(), w);
        // The engine starts with every plane up; tell it about ports that are not.
        for (std::uint32_t p = 0; p < planes; ++p)
            if (!wk->queue->link_up(p)) (void)wk->engine->submit(core::CmdLinkChange{p, false}, now);
        if (d.threaded) {
            wk->posts = std::make_unique<runtime::SpscQueue<detail::PostEntry>>(1024);
            wk->done = std::make_unique<runtime::SpscQueue<core::Completion>>(4096);
        }
        d.workers.push_back(std::move(wk));
    }

    d.address.addr = ec.local_addr;
    d.address.planes = planes;
    d.address.host = ec.local_host;
    for (std::uint32_t p = 0; p < kMaxPlanes; ++p) d.address.macs[p] = ec.local_macs[p];

    std::string cpus_text;
    if (d.threaded) {
        // Where the threads run: as configured, else the CPUs of the first
        // port's NUMA node in turn, else wherever the scheduler puts them.
        std::vector<int> cpus = options.cpus;
        if (cpus.empty()) {
            const std::vector<int> node = runtime::numa_node_cpus(first.numa_node());
            for (std::uint32_t w = 0; w < options.workers && !node.empty(); ++w) cpus.push_back(node[w % node.size()]);
        }
        const runtime::IdleConfig idle{options.worker_spin_ns, options.worker_yield_ns, options.worker_sleep_ns};
        for (std::uint32_t w = 0; w < options.workers; ++w) {
            const int cpu = w < cpus.size() ? cpus[w] : -1;
            cpus_text += fmt::format("{}{}", w == 0 ? "" : ",", cpu);
            detail::Worker& wk = *d.workers[w];
            wk.thread = std::make_unique<runtime::WorkerThread>(fmt::format("omrc-w{}", w), cpu, wk, idle, d.clock);
        }
    }

    const driver::SteeringInfo steer = d.first_queue().steering();
    log::logger().info("device open: driver={} planes={} mode={} seed={} icrc={}{} workers={}{}{}", driver, planes,
                       options.frame_mode == FrameMode::srv6 ? "srv6" : "plain",
                       options.seed != 0 ? "fixed" : "random", ec.compute_icrc ? "compute" : "off",
                       ec.verify_icrc ? "+verify" : "", options.workers,
                       d.threaded ? fmt::format(" threads (cpus {})", cpus_text) : std::string(),
                       options.workers > 1 ? fmt::format(" steering={} ({})", driver::to_string(steer.kind), steer.method)
                                           : std::string());
    set_err(err, 0);
    return std::unique_ptr<Device>(new Device(std::move(core)));
}

Device::Device(std::unique_ptr<detail::DeviceCore> core) : core_(std::move(core)) {}

Device::~Device() {
    if (core_->children != 0) detail::abort_live_children("Device", core_->children);
}

std::unique_ptr<Pd> Device::alloc_pd(int* err) {
    const std::uint32_t handle = core_->next_pd++;
    ++core_->children;
    set_err(err, 0);
    return std::unique_ptr<Pd>(new Pd(core_.get(), handle));
}

std::unique_ptr<Cq> Device::create_cq(int cqe, int* err) {
    if (cqe < 1 || cqe > kMaxCqe) {
        set_err(err, EINVAL);
        return nullptr;
    }
    auto cq = std::unique_ptr<Cq>(new Cq(core_.get(), cqe));
    core_->cqs.push_back(cq.get());
    ++core_->children;
    set_err(err, 0);
    return cq;
}

std::size_t Device::progress() {
    const detail::OwnerScope owner(*core_);
    const std::size_t work = core_->progress();
    // A reader on another thread (DPDK telemetry) asked for the stats.
    if (core_->first_queue().stats_wanted()) core_->first_queue().publish_stats(stats_json());
    return work;
}

std::uint64_t Device::next_wakeup_ns() const {
    const std::uint64_t now = core_->now();
    if (core_->threaded) {
        // The workers run by themselves; only completions they produced wait here.
        for (const auto& w : core_->workers)
            if (!w->done->empty()) return now;
        return UINT64_MAX;
    }
    std::uint64_t t = UINT64_MAX;
    for (const auto& w : core_->workers) t = std::min(t, w->loop->next_wakeup(now));
    return t;
}

std::uint32_t Device::workers() const { return static_cast<std::uint32_t>(core_->workers.size()); }

bool Device::worker_threads() const { return core_->threaded; }

std::uint64_t Device::now_ns() const { return core_->now(); }

DeviceAddress Device::address() const { return core_->address; }

std::uint32_t Device::planes() const { return core_->address.planes; }

const std::string& Device::driver_name() const { return core_->driver_name; }

std::string Device::stats_json() const {
    detail::DeviceCore& c = *core_;
    // The workers' counters are read while they are parked.
    const detail::WorkerControl parked(c);
    verbs::MrTableStats m = c.mrs.stats();
    runtime::ProgressStats progress{};
    runtime::PathEventCounts path_events{};
    core::EngineStats engine{};
    driver::DriverStats drv{};
    std::size_t kept_now = 0;
    nlohmann::json workers = nlohmann::json::array();
    for (const auto& w : c.workers) {
        const verbs::MrTableStats& p = w->placement.stats();
        m.placed_pkts += p.placed_pkts;
        m.placed_bytes += p.placed_bytes;
        for (std::size_t i = 0; i < m.rejected.size(); ++i) m.rejected[i] += p.rejected[i];
        runtime::add(progress, w->loop->stats());
        runtime::add(path_events, w->loop->path_events());
        runtime::add(engine, w->engine->stats());
        runtime::add(drv, w->queue->stats());
        kept_now += w->loop->kept_frames();
        if (c.workers.size() == 1 && !c.threaded) continue;
        nlohmann::json j = {{"worker", w->index},
                            {"qps", w->qps},
                            {"progress", runtime::progress_json(w->loop->stats())},
                            {"engine", runtime::engine_json(*w->engine)},
                            {"driver", runtime::driver_json(*w->queue)},
                            {"placed_pkts", p.placed_pkts}};
        if (c.exchange) j["exchange"] = runtime::exchange_json(c.exchange->stats(w->index));
        if (w->thread) {
            const runtime::WorkerThreadStats t = w->thread->stats();
            j["thread"] = {{"cpu", t.cpu},       {"passes", t.passes}, {"busy_passes", t.busy_passes},
                           {"yields", t.yields}, {"sleeps", t.sleeps}, {"parks", t.parks}};
        }
        workers.push_back(std::move(j));
    }
    const detail::Worker& w0 = *c.workers.front();
    nlohmann::json cqs = nlohmann::json::array();
    for (const Cq* cq : c.cqs)
        cqs.push_back({{"cqe", cq->cqe()}, {"waiting", cq->size()}, {"overruns", cq->overruns()}});
    const driver::SteeringInfo steer = w0.queue->steering();
    nlohmann::json doc;
    doc["device"] = {
        {"driver", c.driver_name},
        {"planes", c.address.planes},
        {"icrc", {{"compute", w0.engine->config().compute_icrc}, {"verify", w0.engine->config().verify_icrc}}},
        {"workers", c.workers.size()},
        {"worker_threads", c.threaded},
        {"steering", {{"kind", driver::to_string(steer.kind)}, {"method", steer.method}}},
        {"progress", runtime::progress_json(progress)},
        {"tx_kept_now", kept_now},
        {"mr",
         {{"live", c.mrs.size()},
          {"registered", m.registered},
          {"deregistered", m.deregistered},
          {"placed_pkts", m.placed_pkts},
          {"placed_bytes", m.placed_bytes},
          {"rejected",
           {{"bad_rkey", m.rejected[static_cast<std::size_t>(core::PlaceStatus::bad_rkey)]},
            {"pd_mismatch", m.rejected[static_cast<std::size_t>(core::PlaceStatus::pd_mismatch)]},
            {"no_access", m.rejected[static_cast<std::size_t>(core::PlaceStatus::no_access)]},
            {"out_of_bounds", m.rejected[static_cast<std::size_t>(core::PlaceStatus::out_of_bounds)]}}}}},
        {"cqs", std::move(cqs)},
        {"completions_orphaned", c.completions_orphaned},
        {"path_events", runtime::path_events_json(path_events, engine)}};
    if (!workers.empty()) doc["device"]["per_worker"] = std::move(workers);
    doc["engine"] = runtime::engine_json(engine, w0.engine->local_plane_mask());
    doc["driver"] = runtime::driver_json(*w0.queue, drv);
    std::vector<std::uint32_t> qpns;
    for (const auto& [qpn, qp] : c.qps) qpns.push_back(qpn);
    std::sort(qpns.begin(), qpns.end());
    nlohmann::json qps = nlohmann::json::array();
    std::vector<const core::Qp*> live;
    for (std::uint32_t qpn : qpns) {
        const Qp& qp = *c.qps.at(qpn);
        if (const core::Qp* q = c.worker_of(qp).engine->find_qp(qpn)) {
            nlohmann::json j = runtime::qp_json(*q);
            if (c.workers.size() > 1) j["worker"] = qp.worker();
            qps.push_back(std::move(j));
            live.push_back(q);
        }
    }
    doc["planes"] = runtime::planes_summary_json(*w0.queue, live);
    if (const core::ConnManager* cm = w0.engine->conn_manager()) doc["cm"] = runtime::cm_json(*cm);
    doc["qps"] = std::move(qps);
    // Shared receive queues, by worker and number.
    std::vector<std::uint64_t> srq_keys;
    for (const auto& [key, srq] : c.srqs) srq_keys.push_back(key);
    std::sort(srq_keys.begin(), srq_keys.end());
    nlohmann::json srqs = nlohmann::json::array();
    for (std::uint64_t key : srq_keys) {
        const Srq& srq = *c.srqs.at(key);
        const core::Srq* s = c.workers[srq.worker()]->engine->find_srq(srq.srq_num());
        if (s == nullptr) continue;
        srqs.push_back({{"worker", srq.worker()},
                        {"srqn", s->srqn},
                        {"max_wr", s->max_wr},
                        {"posted_now", s->wrs.size()},
                        {"limit", s->limit},
                        {"qps", s->qps},
                        {"posted", s->posted},
                        {"taken", s->taken},
                        {"limit_events", s->limit_events},
                        {"rnr_naks", s->rnr_naks}});
    }
    doc["srqs"] = std::move(srqs);
    return doc.dump();
}

}  // namespace omrc
