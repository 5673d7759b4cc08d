// SPDX-License-Identifier: BSD-3-Clause
// The scenario runner, building (drivers/sim/scenario_runner.hpp): the
// simulator and its engines, the QP pairs, the buffers, the controllers'
// first plans, the failure schedule and the first step.
#include <algorithm>
#include <map>
#include <stdexcept>

#include "core/cc.hpp"
#include "drivers/sim/path_plan.hpp"
#include "drivers/sim/scenario_runner.hpp"
#include "wire/frame.hpp"

namespace omrc::sim::detail {

core::EngineConfig Runner::engine_config(std::uint32_t host) const {
    core::EngineConfig e;
    e.planes = cfg_.topology.plane_count();
    e.mode = srv6_ ? wire::FrameMode::srv6 : wire::FrameMode::plain;
    for (std::uint32_t p = 0; p < e.planes; ++p) e.local_macs[p] = host_mac(host, p);
    e.local_addr = host_addr(host);
    e.fabric = cfg_.topology.fabric_desc();
    e.local_host = host;
    std::uint64_t mix = cfg_.seed ^ (std::uint64_t{host} * 0x9E3779B97F4A7C15ull);
    e.seed = core::splitmix64(mix);
    e.compute_icrc = e.verify_icrc = cfg_.carry_payload;
    e.ev_track_depth = cfg_.ev_track_depth;
    e.path_alarm_ns = cfg_.path_alarm_ns;
    e.peer_path_alarms = cfg_.peer_path_alarms;
    e.stale_path_packets = cfg_.stale_path_packets;
    e.max_qps = max_qps_;
    return e;
}

TimePs Runner::base_rtt_ps() const {
    // Unloaded round trip over the longest path: a full data frame out, a SACK back.
    const TopologyConfig& t = cfg_.topology;
    const std::uint32_t links = t.kind == TopologyKind::fat_tree ? 6 : 4;
    const std::uint32_t fabric_links = links - 2;
    const std::uint64_t data = cfg_.mtu_bytes + 170, ack = 200;
    auto one_way = [&](std::uint64_t bytes) {
        return 2 * (serialization_ps(bytes, t.host_link_bps) + t.host_link_delay_ns * kPsPerNs) +
               fabric_links * (serialization_ps(bytes, t.fabric_link_bps) + t.fabric_link_delay_ns * kPsPerNs) +
               (links - 1) * cfg_.sim.switch_latency_ps;
    };
    return one_way(data) + one_way(ack);
}

void Runner::connect(std::uint32_t src, std::uint32_t dst, Conn& c) {
    // Each end on its NIC's engines in turn (SimConfig::workers).
    core::Engine* ends[2] = {&sim_->place_qp(src), &sim_->place_qp(dst)};
    const std::uint32_t hosts[2] = {src, dst};
    std::uint32_t qpn[2];
    const core::TimeNs now = sim_->now_ns();
    core::QpCaps caps;
    caps.max_send_wr = cfg_.max_send_wr;
    caps.max_recv_wr = cfg_.max_send_wr;
    caps.max_inline_data = 0;
    for (int i = 0; i < 2; ++i) {
        const core::SubmitResult r = ends[i]->submit(core::CmdCreateQp{caps}, now);
        if (r.err != 0) throw std::runtime_error("scenario: QP creation failed (max_qps too small?)");
        qpn[i] = r.qpn;
        core::QpAttr init{};
        init.access_flags = core::kAccessRemoteWrite | core::kAccessLocalWrite;
        init.pd = 1;
        ends[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::init, init, core::kAttrAccess}, now);
    }
    for (int i = 0; i < 2; ++i) {
        const std::uint32_t peer = hosts[1 - i];
        core::QpAttr a{};
        a.dest_qp_num = qpn[1 - i];
        a.dest_conn_id = ends[1 - i]->qp_info(qpn[1 - i]).conn_id;
        a.rq_psn = 0;
        a.sq_psn = 0;
        a.peer_addr = host_addr(peer);
        a.peer_host = peer;
        for (std::uint32_t p = 0; p < topo_.planes; ++p) a.peer_macs[p] = host_mac(peer, p);
        a.mtu_bytes = cfg_.mtu_bytes;
        a.mpr = cfg_.mpr;
        a.policy = cfg_.policy;
        a.evs = cfg_.evs;
        a.backup_evs = cfg_.backup_evs;
        if (auto it = plans_.find({hosts[i], peer}); it != plans_.end()) a.plan = it->second;
        a.cc = cfg_.cc;
        if (a.cc.base_rtt_ns == 0) a.cc.base_rtt_ns = to_ns(base_rtt_ps());
        a.cc.link_rate_bps = cfg_.topology.host_link_bps;
        const std::uint32_t rtr = core::kAttrDestQpn | core::kAttrRqPsn | core::kAttrPath | core::kAttrMtu | core::kAttrMpr;
        const std::uint32_t rts = core::kAttrSqPsn | core::kAttrTimeout | core::kAttrRetryCnt | core::kAttrCc;
        if (ends[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::rtr, a, rtr}, now).err != 0 ||
            ends[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::rts, a, rts}, now).err != 0)
            throw std::runtime_error("scenario: QP connection failed");
        qps_.emplace_back(hosts[i], qpn[i]);
    }
    c.src_qpn = qpn[0];
    c.dst_qpn = qpn[1];
}

void Runner::build() {
    if (cfg_.routing == RoutingMode::ddc && cfg_.topology.kind == TopologyKind::fat_tree)
        throw std::invalid_argument("scenario: routing ddc needs a two-tier topology (clos or leaf_spine), not fat_tree");
    srv6_ = cfg_.routing == RoutingMode::usid && cfg_.topology.kind != TopologyKind::fat_tree;
    SimConfig sc = cfg_.sim;
    sc.seed = cfg_.seed;
    sc.planes = cfg_.topology.plane_count();
    // usid on a fat tree (no uSID numbering) falls back to ecmp; every other mode is taken as asked.
    sc.routing = cfg_.routing == RoutingMode::usid && !srv6_ ? RoutingMode::ecmp : cfg_.routing;
    sc.carry_payload = cfg_.carry_payload;
    // INT stamping where the QPs' algorithm reads it (its registration says so).
    const core::CcAlgorithmInfo* cc = core::find_cc(cfg_.cc.algorithm);
    if (cc == nullptr) throw std::invalid_argument("scenario: unknown congestion-control algorithm");
    sc.int_telemetry = sc.int_telemetry || cc->needs_telemetry;
    sc.telemetry_bucket_ps = cfg_.telemetry_bucket_ps;
    sc.tracked_src_nic = cfg_.tracked_src_host;
    sc.log_down_drops = std::any_of(cfg_.failures.begin(), cfg_.failures.end(),
                                    [](const FailureSpec& f) { return f.kind == FailureKind::switch_down; });
    sim_ = std::make_unique<Simulator>(sc);

    // The workload first: it decides how many QPs an engine needs.
    plan_ = make_workload(cfg_.workload, cfg_.topology.hosts(), rng_);
    std::vector<std::uint32_t> degree(cfg_.topology.hosts(), 0);
    {
        std::map<std::pair<std::uint32_t, std::uint32_t>, bool> seen;
        for (const Flow& f : plan_.flows)
            if (seen.emplace(std::make_pair(f.src, f.dst), true).second) {
                ++degree[f.src];
                ++degree[f.dst];
            }
        max_qps_ = std::max<std::uint32_t>(1, *std::max_element(degree.begin(), degree.end()));
    }
    if (cfg_.carry_payload) {
        buffers_.resize(cfg_.topology.hosts());
        for (auto& b : buffers_) b = std::make_unique<BufferMemory>();
    }
    topo_ = build_topology(
        *sim_, cfg_.topology, [this](std::uint32_t h) { return engine_config(h); },
        [this](std::uint32_t h) -> core::PlacementTarget* {
            return cfg_.carry_payload ? static_cast<core::PlacementTarget*>(buffers_[h].get()) : &counting_;
        });
    if (core::follows_plan(cfg_.policy) && srv6_) {
        // A controller's connections, in their order of first use.
        std::map<std::pair<std::uint32_t, std::uint32_t>, bool> seen;
        for (const Flow& f : plan_.flows)
            if (seen.emplace(std::make_pair(f.src, f.dst), true).second) plan_order_.emplace_back(f.src, f.dst);
    }
    if (cfg_.policy == core::PathPolicy::planned && srv6_) {
        // What a controller would install: a T1 per connection and plane.
        dead_t1_.assign(std::size_t{topo_.planes} * cfg_.topology.t1, false);
        make_plans();
    } else if (cfg_.policy == core::PathPolicy::rnl && srv6_) {
        // The controller's first mapping is a hash of (connection, plane);
        // its rounds start with the job.
        rnl_ = std::make_unique<RnlController>(
            plan_order_, PlanShape{cfg_.topology.t0, cfg_.topology.t1, cfg_.topology.hosts_per_t0, topo_.planes},
            cfg_.rnl, cfg_.seed);
        for (std::uint32_t c = 0; c < plan_order_.size(); ++c) {
            plans_[plan_order_[c]] = rnl_->plan(c);
            rnl_index_[plan_order_[c]] = c;
        }
        sim_->schedule(cfg_.workload.start_ps + cfg_.rnl.interval_ps, [this] { rnl_round(); });
    }
    for (const Flow& f : plan_.flows) {
        auto [it, fresh] = conns_.try_emplace({f.src, f.dst});
        if (fresh) connect(f.src, f.dst, it->second);
    }
    if (cfg_.carry_payload) {
        core::Rng fill(cfg_.seed * 31 + 7);
        send_bufs_.resize(plan_.flows.size());
        recv_bufs_.resize(plan_.flows.size());
        for (std::size_t i = 0; i < plan_.flows.size(); ++i) {
            const Flow& f = plan_.flows[i];
            send_bufs_[i].resize(f.bytes);
            for (auto& b : send_bufs_[i]) b = static_cast<std::uint8_t>(fill.next());
            recv_bufs_[i] = buffers_[f.dst]->add_region(kRkey + static_cast<std::uint32_t>(i),
                                                        kVaBase + (std::uint64_t{i} << 32), f.bytes);
        }
    }
    sim_->set_completion_handler([this](std::uint32_t nic, const core::Completion& wc, TimePs now) {
        on_completion(nic, wc, now);
    });
    step_start_.assign(plan_.steps.size(), 0);
    step_end_.assign(plan_.steps.size(), kNeverPs);
    schedule_failures();
    sim_->schedule(cfg_.workload.start_ps, [this] { start_step(0); });
}

}  // namespace omrc::sim::detail
