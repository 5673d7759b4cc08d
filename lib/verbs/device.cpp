// SPDX-License-Identifier: BSD-3-Clause
// Device: open (driver registry, engine configuration), PDs, CQs, the
// progress entry points and the stats document.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <optional>
#include <random>

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
    if (!pcap_path.empty()) {
        // Every frame the driver sends or receives, as the device sees it.
        int e = 0;
        auto capture = runtime::CaptureDriver::open(std::move(attached.driver), pcap_path, e, why);
        if (capture == nullptr) {
            log::logger().error("pcap={}: {}", pcap_path, why);
            set_err(err, e);
            return nullptr;
        }
        attached.driver = std::move(capture);
        log::logger().info("capturing to {}", pcap_path);
    }
    const std::uint32_t driver_planes = std::min(attached.driver->planes(), kMaxPlanes);
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
    const bool icrc_needed = attached.driver->icrc() == driver::IcrcHandling::software;
    ec.compute_icrc = options.compute_icrc && icrc_needed;
    ec.verify_icrc = options.verify_icrc && icrc_needed;
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

    auto keys = options.seed != 0 ? verbs::KeyGenerator::from_seed(options.seed) : verbs::KeyGenerator::from_entropy();
    std::function<std::uint64_t()> clock = options.clock;
    if (!clock) clock = &runtime::steady_now_ns;
    auto core = std::make_unique<detail::DeviceCore>(std::move(attached), std::string(driver), std::move(clock), keys);
    core->next_hop_macs = next_hop_macs;
    core->next_hop_mask = next_hop_mask;
    core->engine = std::make_unique<core::Engine>(ec, &core->mrs);
    runtime::ProgressConfig pc{};
    pc.rx_burst_frames = options.rx_burst_frames;
    pc.tx_burst_frames = options.tx_burst_frames;
    core->loop = std::make_unique<runtime::ProgressLoop>(*core->attached.driver, *core->engine, pc);

    core->address.addr = ec.local_addr;
    core->address.planes = planes;
    core->address.host = ec.local_host;
    for (std::uint32_t p = 0; p < kMaxPlanes; ++p) core->address.macs[p] = ec.local_macs[p];

    // The engine starts with every plane up; tell it about ports that are not.
    const std::uint64_t now = core->now();
    for (std::uint32_t p = 0; p < planes; ++p)
        if (!core->attached.driver->link_up(p)) (void)core->engine->submit(core::CmdLinkChange{p, false}, now);

    log::logger().info("device open: driver={} planes={} mode={} seed={} icrc={}{}", driver, planes,
                           options.frame_mode == FrameMode::srv6 ? "srv6" : "plain",
                           options.seed != 0 ? "fixed" : "random", ec.compute_icrc ? "compute" : "off",
                           ec.verify_icrc ? "+verify" : "");
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
    if (cqe < 1 || cqe > (1 << 20)) {
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
    const std::size_t work = core_->loop->run_once(core_->now(), *core_);
    // A reader on another thread (DPDK telemetry) asked for the stats.
    if (core_->attached.driver->stats_wanted()) core_->attached.driver->publish_stats(stats_json());
    return work;
}

std::uint64_t Device::next_wakeup_ns() const { return core_->loop->next_wakeup(core_->now()); }

std::uint64_t Device::now_ns() const { return core_->now(); }

DeviceAddress Device::address() const { return core_->address; }

std::uint32_t Device::planes() const { return core_->address.planes; }

const std::string& Device::driver_name() const { return core_->driver_name; }

std::string Device::stats_json() const {
    const detail::DeviceCore& c = *core_;
    const verbs::MrTableStats& m = c.mrs.stats();
    nlohmann::json cqs = nlohmann::json::array();
    for (const Cq* cq : c.cqs)
        cqs.push_back({{"cqe", cq->cqe()}, {"waiting", cq->size()}, {"overruns", cq->overruns()}});
    nlohmann::json doc;
    doc["device"] = {
        {"driver", c.driver_name},
        {"planes", c.address.planes},
        {"icrc", {{"compute", c.engine->config().compute_icrc}, {"verify", c.engine->config().verify_icrc}}},
        {"progress", runtime::progress_json(c.loop->stats())},
        {"tx_kept_now", c.loop->kept_frames()},
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
        {"path_events", runtime::path_events_json(c.loop->path_events(), c.engine->stats())}};
    doc["engine"] = runtime::engine_json(*c.engine);
    doc["driver"] = runtime::driver_json(*c.attached.driver);
    std::vector<std::uint32_t> qpns;
    for (const auto& [qpn, qp] : c.qps) qpns.push_back(qpn);
    std::sort(qpns.begin(), qpns.end());
    nlohmann::json qps = nlohmann::json::array();
    std::vector<const core::Qp*> live;
    for (std::uint32_t qpn : qpns) {
        if (const core::Qp* q = c.engine->find_qp(qpn)) {
            qps.push_back(runtime::qp_json(*q));
            live.push_back(q);
        }
    }
    doc["planes"] = runtime::planes_summary_json(*c.attached.driver, live);
    doc["qps"] = std::move(qps);
    return doc.dump();
}

}  // namespace omrc
