// SPDX-License-Identifier: BSD-3-Clause
// The scenario runner: builds the fabric, connects one QP pair per
// (sender, receiver) of the workload, posts each step's messages when the
// previous step is complete, applies the failure schedule, and summarises.
#include "drivers/sim/scenario.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

#include "core/cc.hpp"
#include "drivers/sim/memory_model.hpp"
#include "drivers/sim/path_plan.hpp"
#include "wire/frame.hpp"

namespace omrc::sim {

const char* to_string(FailureKind k) noexcept {
    switch (k) {
        case FailureKind::link_down: return "link_down";
        case FailureKind::link_up: return "link_up";
        case FailureKind::link_flap: return "link_flap";
        case FailureKind::switch_down: return "switch_down";
        case FailureKind::switch_up: return "switch_up";
        case FailureKind::nic_port_down: return "nic_port_down";
        case FailureKind::nic_port_up: return "nic_port_up";
    }
    return "unknown";
}

namespace {

constexpr std::uint64_t kVaBase = 0x10000000ull;  ///< receive buffers: flow f at kVaBase + f · 2^32
constexpr std::uint32_t kRkey = 0x5111;

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

/// User + system CPU time of this process: on a shared machine it measures
/// the simulator's own work where wall time also counts other processes.
double cpu_seconds() {
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

class Runner {
public:
    explicit Runner(const ScenarioConfig& cfg) : cfg_(cfg), rng_(cfg.seed ^ 0x5EEDF00Dull) {}
    /// build(), simulate(), summarise(), with the wall time of the first two.
    Result run();

private:
    struct Conn {
        std::uint32_t src_qpn = 0;
        std::uint32_t dst_qpn = 0;
    };
    core::EngineConfig engine_config(std::uint32_t host) const;
    void connect(std::uint32_t src, std::uint32_t dst, Conn& c);
    void start_step(std::uint32_t step);
    void on_completion(std::uint32_t nic, const core::Completion& c, TimePs now);
    void schedule_failures();
    void measure_dead_path();
    void apply(const FailureSpec& f, bool down);
    std::uint32_t link_port(const FailureSpec& f) const;
    TimePs ideal_fct_ps(const Flow& f) const;
    TimePs base_rtt_ps() const;

    /// The simulator, the workload, the topology with its engines, one QP
    /// pair per (sender, receiver), the payload buffers, the failure
    /// schedule and the first step.
    void build();
    /// Runs to completion or max_time_ps.
    void simulate();
    /// What came out: flows, steps, counters, telemetry.
    [[nodiscard]] Result summarise() const;
    void summarise_flows(Result& r) const;   ///< FCTs and their ideals, completion, job time
    void summarise_steps(Result& r) const;   ///< each step's duration and ideal
    void summarise_phases(Result& r) const;  ///< mean step before, during and after the failures
    void summarise_tracked(Result& r) const; ///< the tracked host's rate before and after its port failure
    void summarise_counters(Result& r) const;  ///< retransmits, trims, marks, drops, errors
    void summarise_telemetry(Result& r) const;  ///< per-plane rates, uplink utilisation

    const ScenarioConfig& cfg_;
    core::Rng rng_;
    std::unique_ptr<Simulator> sim_;
    Topology topo_;
    WorkloadPlan plan_;
    std::map<std::pair<std::uint32_t, std::uint32_t>, Conn> conns_;
    /// Policy planned (SRv6 fabrics): each (src, dst) connection's plan.
    std::map<std::pair<std::uint32_t, std::uint32_t>, core::PathPlan> plans_;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> plan_order_;  ///< connections in the planner's order
    std::vector<bool> dead_t1_;          ///< planes × t1: failed T1s the controller knows of
    std::uint32_t plan_sharing_ = 0;
    std::uint32_t replans_ = 0;
    /// Policy planned: computes every connection's plan for the live T1s.
    void make_plans();
    /// ... and installs them in the QPs (RTS→RTS modify).
    void install_plans();
    /// Installs plans_[{host, peer}], if any, in `host`'s QP `qpn` (RTS→RTS modify).
    void install_plan(std::uint32_t host, std::uint32_t qpn, std::uint32_t peer);
    /// Policy rnl: the controller, and one scoring round every interval.
    std::unique_ptr<RnlController> rnl_;
    std::vector<std::uint64_t> rnl_prev_tx_up_, rnl_prev_tx_down_;  ///< port tx_bytes at the previous round
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> rnl_index_;  ///< connection → index in plan_order_
    void rnl_round();
    std::vector<std::pair<std::uint32_t, std::uint32_t>> qps_;  ///< (nic, qpn) of every QP
    CountingMemory counting_;
    std::vector<std::unique_ptr<BufferMemory>> buffers_;       ///< carry_payload: per host
    std::vector<std::vector<std::uint8_t>> send_bufs_;         ///< carry_payload: per flow
    std::vector<std::span<std::uint8_t>> recv_bufs_;           ///< carry_payload: per flow
    std::uint32_t current_step_ = 0;
    std::uint32_t step_left_ = 0;
    std::vector<TimePs> step_start_;
    std::vector<TimePs> step_end_;
    std::uint64_t qp_errors_ = 0;
    std::uint32_t max_qps_ = 1;
    bool srv6_ = true;
    // switch_down bookkeeping for the dead-path metric
    std::uint32_t dead_switch_ = kNone;
    TimePs dead_since_ = 0;
    double dead_path_last_drop_us_ = -1;
    double dead_path_p90_drop_us_ = -1;
    double dead_path_share_50us_ = -1;
    std::uint64_t dead_path_drops_ = 0;
    double cpu_run_s_ = 0;
};

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

TimePs Runner::ideal_fct_ps(const Flow& f) const {
    // Alone on an idle fabric at the NIC's full rate (every plane): the message's
    // frames back to back, plus one frame's store-and-forward and the propagation
    // and switch latency of its path.
    const TopologyConfig& t = cfg_.topology;
    const std::uint64_t mtu = cfg_.mtu_bytes;
    const std::uint64_t pkts = std::max<std::uint64_t>(1, (f.bytes + mtu - 1) / mtu);
    const std::size_t hdr = srv6_ ? 138 : 98;  // through RETH
    const std::uint64_t per_pkt = hdr + 4 + cfg_.sim.wire_overhead_bytes;
    const std::uint64_t wire_bytes = f.bytes + pkts * per_pkt + 4;
    const std::uint32_t links = topo_.links_between(f.src, f.dst);
    const std::uint64_t nic_bps = t.host_link_bps * topo_.planes;
    const std::uint64_t frame = std::min<std::uint64_t>(f.bytes, mtu) + per_pkt;
    TimePs hop = 2 * t.host_link_delay_ns * kPsPerNs + (links - 2) * t.fabric_link_delay_ns * kPsPerNs +
                 (links - 1) * cfg_.sim.switch_latency_ps + serialization_ps(frame, t.host_link_bps) +
                 (links - 2) * serialization_ps(frame, t.fabric_link_bps);
    return serialization_ps(wire_bytes, nic_bps) + hop;
}

void Runner::connect(std::uint32_t src, std::uint32_t dst, Conn& c) {
    core::Engine* ends[2] = {&sim_->engine(src), &sim_->engine(dst)};
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

void Runner::start_step(std::uint32_t step) {
    current_step_ = step;
    const auto& flows = plan_.steps[step];
    step_left_ = static_cast<std::uint32_t>(flows.size());
    step_start_[step] = sim_->now();
    const core::TimeNs now = sim_->now_ns();
    for (std::uint32_t id : flows) {
        Flow& f = plan_.flows[id];
        f.start_ps = sim_->now();
        const Conn& c = conns_.at({f.src, f.dst});
        core::RecvRequest rr{id, static_cast<std::uint32_t>(f.bytes)};
        (void)sim_->engine(f.dst).submit(core::CmdPostRecv{c.dst_qpn, std::span(&rr, 1)}, now);
        core::SendRequest wr;
        wr.wr_id = id;
        wr.with_imm = true;
        wr.imm_data = id;
        wr.signaled = true;
        wr.remote_addr = kVaBase + (std::uint64_t{id} << 32);
        wr.rkey = cfg_.carry_payload ? kRkey + id : kRkey;
        wr.sge_count = 1;
        // Without payload the engine only ever adds offsets to this address (no read): any non-null value.
        const std::uint8_t* addr = cfg_.carry_payload ? send_bufs_[id].data()
                                                      : reinterpret_cast<const std::uint8_t*>(std::uintptr_t{4096});
        wr.sges[0] = {addr, static_cast<std::uint32_t>(f.bytes)};
        const core::SubmitResult r = sim_->engine(f.src).submit(core::CmdPostSend{c.src_qpn, std::span(&wr, 1)}, now);
        if (r.err != 0) throw std::runtime_error("scenario: post_send failed (max_send_wr too small?)");
        sim_->kick(f.dst);
        sim_->kick(f.src);
    }
}

void Runner::on_completion(std::uint32_t, const core::Completion& c, TimePs now) {
    if (c.status != core::WcStatus::success) {
        ++qp_errors_;
        return;
    }
    if (c.opcode != core::WcOpcode::recv_rdma_with_imm) return;
    if (c.imm_data >= plan_.flows.size()) return;
    Flow& f = plan_.flows[c.imm_data];
    if (f.end_ps != kNeverPs) return;
    f.end_ps = now;
    if (f.step != current_step_ || step_left_ == 0) return;
    if (--step_left_ == 0) {
        step_end_[current_step_] = now;
        if (current_step_ + 1 < plan_.steps.size()) {
            const std::uint32_t next = current_step_ + 1;
            sim_->schedule(now, [this, next] { start_step(next); });
        } else {
            sim_->stop();
        }
    }
}

std::uint32_t Runner::link_port(const FailureSpec& f) const {
    if (cfg_.topology.kind == TopologyKind::fat_tree) throw std::invalid_argument("scenario: link failures need a clos or leaf-spine");
    if (f.plane >= topo_.planes || f.index >= cfg_.topology.t0 || f.peer >= cfg_.topology.t1)
        throw std::invalid_argument("scenario: link failure out of range");
    return sim_->switch_port(topo_.t0_switch(f.plane, f.index), topo_.t0_uplink_local(f.peer));
}

void Runner::make_plans() {
    const PlanShape shape{cfg_.topology.t0, cfg_.topology.t1, cfg_.topology.hosts_per_t0, topo_.planes};
    const std::vector<core::PathPlan> plans = plan_paths(plan_order_, shape, dead_t1_);
    plan_sharing_ = std::max(plan_sharing_, max_link_sharing(plan_order_, plans, shape));
    for (std::size_t i = 0; i < plan_order_.size(); ++i) plans_[plan_order_[i]] = plans[i];
}

void Runner::install_plans() {
    for (const auto& [key, c] : conns_) {
        install_plan(key.first, c.src_qpn, key.second);
        install_plan(key.second, c.dst_qpn, key.first);
    }
    ++replans_;
}

void Runner::install_plan(std::uint32_t host, std::uint32_t qpn, std::uint32_t peer) {
    const auto plan = plans_.find({host, peer});
    if (plan == plans_.end() || plan->second.t1_count == 0) return;
    core::QpAttr a{};
    a.plan = plan->second;
    if (sim_->engine(host).submit(core::CmdModifyQp{qpn, core::QpState::rts, a, core::kAttrPath}, sim_->now_ns()).err != 0)
        throw std::runtime_error("scenario: installing a path plan failed");
}

void Runner::rnl_round() {
    // Perception: every T0-T1 link's utilisation since the previous round,
    // its data queue and whether it is usable; the job's active connections.
    const TopologyConfig& t = cfg_.topology;
    const std::size_t links = std::size_t{topo_.planes} * t.t0 * t.t1;
    FabricReading reading;
    reading.up.resize(links);
    reading.down.resize(links);
    const bool first = rnl_prev_tx_up_.empty();
    if (first) {
        rnl_prev_tx_up_.assign(links, 0);
        rnl_prev_tx_down_.assign(links, 0);
    }
    const double interval_s = static_cast<double>(cfg_.rnl.interval_ps) * 1e-12;
    auto read = [&](std::uint32_t port_index, const QueueConfig& q, std::uint64_t& prev, LinkReading& r) {
        const Port& port = sim_->port(port_index);
        const double bits = static_cast<double>(port.tx_bytes - prev) * 8.0;
        prev = port.tx_bytes;
        const double rate = static_cast<double>(sim_->link_config(port.link).rate_bps);
        r.utilisation = first ? 0 : std::min(1.0, bits / (rate * interval_s));
        r.queue = q.limit_bytes != 0 ? std::min(1.0, static_cast<double>(port.lo.bytes) / static_cast<double>(q.limit_bytes)) : 0;
        r.usable = port.up && sim_->sw(port.owner).alive && port.peer != kNone && sim_->sw(sim_->port(port.peer).owner).alive;
    };
    for (std::uint32_t p = 0; p < topo_.planes; ++p)
        for (std::uint32_t i = 0; i < t.t0; ++i)
            for (std::uint32_t j = 0; j < t.t1; ++j) {
                const std::size_t l = (std::size_t{p} * t.t0 + i) * t.t1 + j;
                read(sim_->switch_port(topo_.t0_switch(p, i), topo_.t0_uplink_local(j)), t.uplink, rnl_prev_tx_up_[l], reading.up[l]);
                read(sim_->switch_port(topo_.t1_switch(p, j), i), t.downlink, rnl_prev_tx_down_[l], reading.down[l]);
            }
    std::vector<bool> active(plan_order_.size(), false);
    if (current_step_ < plan_.steps.size())
        for (std::uint32_t id : plan_.steps[current_step_]) {
            const Flow& f = plan_.flows[id];
            if (f.end_ps == kNeverPs) active[rnl_index_.at({f.src, f.dst})] = true;
        }
    for (const RnlMove& m : rnl_->round(reading, active)) {
        const auto& [src, dst] = plan_order_[m.conn];
        plans_[{src, dst}] = rnl_->plan(m.conn);
        install_plan(src, conns_.at({src, dst}).src_qpn, dst);
    }
    sim_->schedule(sim_->now() + cfg_.rnl.interval_ps, [this] { rnl_round(); });
}

void Runner::apply(const FailureSpec& f, bool down) {
    switch (f.kind) {
        case FailureKind::link_down:
        case FailureKind::link_up:
        case FailureKind::link_flap: sim_->set_link(link_port(f), !down); break;
        case FailureKind::switch_down:
        case FailureKind::switch_up: {
            if (cfg_.topology.kind == TopologyKind::fat_tree) throw std::invalid_argument("scenario: switch failures need a clos or leaf-spine");
            if (f.plane >= topo_.planes) throw std::invalid_argument("scenario: failure plane out of range");
            const std::uint32_t sw = f.tier == Tier::t0 ? topo_.t0_switch(f.plane, f.index) : topo_.t1_switch(f.plane, f.index);
            if ((f.tier == Tier::t0 && f.index >= cfg_.topology.t0) || (f.tier == Tier::t1 && f.index >= cfg_.topology.t1))
                throw std::invalid_argument("scenario: switch failure index out of range");
            if (down) {
                dead_switch_ = sw;
                dead_since_ = sim_->now();
            } else if (sw == dead_switch_) {
                measure_dead_path();  // before its links come back
                dead_switch_ = kNone;
            }
            sim_->set_switch(sw, !down);
            if (!dead_t1_.empty() && f.tier == Tier::t1) {
                // The controller learns of it and re-plans around it (or back onto it).
                const std::size_t at = std::size_t{f.plane} * cfg_.topology.t1 + f.index;
                sim_->schedule(sim_->now() + cfg_.plan_reaction_ps, [this, at, down] {
                    if (dead_t1_[at] == down) return;
                    dead_t1_[at] = down;
                    make_plans();
                    install_plans();
                });
            }
            break;
        }
        case FailureKind::nic_port_down:
        case FailureKind::nic_port_up:
            if (f.host >= topo_.hosts || f.plane >= topo_.planes) throw std::invalid_argument("scenario: NIC port out of range");
            sim_->set_nic_port(f.host, f.plane, !down);
            break;
    }
}

void Runner::measure_dead_path() {
    // Data frames lost toward the dead switch: at the ports facing it (queued,
    // sent into the down link later) and on the wire of its links.
    const Switch& s = sim_->sw(dead_switch_);
    std::vector<bool> facing(sim_->port_count(), false);
    for (std::uint32_t i = 0; i < s.ports; ++i) {
        const Port& p = sim_->port(s.first_port + i);
        if (p.peer != kNone) facing[p.peer] = true;
        facing[s.first_port + i] = true;
    }
    std::vector<TimePs> after;
    for (const auto& [t, port] : sim_->down_drop_log())
        if (t >= dead_since_ && facing[port]) after.push_back(t - dead_since_);
    dead_path_drops_ = after.size();
    if (after.empty()) {
        dead_path_last_drop_us_ = dead_path_p90_drop_us_ = 0;
        dead_path_share_50us_ = 1;
        return;
    }
    std::sort(after.begin(), after.end());
    dead_path_last_drop_us_ = to_us(after.back());
    const auto rank = static_cast<std::size_t>(std::ceil(0.90 * static_cast<double>(after.size())));
    dead_path_p90_drop_us_ = to_us(after[std::clamp<std::size_t>(rank, 1, after.size()) - 1]);
    const auto early = std::upper_bound(after.begin(), after.end(), 50 * kPsPerUs) - after.begin();
    dead_path_share_50us_ = static_cast<double>(early) / static_cast<double>(after.size());
}

void Runner::schedule_failures() {
    for (const FailureSpec& f : cfg_.failures) {
        const bool down = f.kind == FailureKind::link_down || f.kind == FailureKind::switch_down ||
                          f.kind == FailureKind::nic_port_down || f.kind == FailureKind::link_flap;
        if (f.kind == FailureKind::link_flap) {
            if (f.period_ps == 0 || f.down_ps == 0 || f.down_ps >= f.period_ps)
                throw std::invalid_argument("scenario: link_flap needs 0 < down < period");
            (void)link_port(f);  // validate now, not mid-run
            for (TimePs t = f.at_ps; t < f.until_ps; t += f.period_ps) {
                sim_->schedule(t, [this, f] { apply(f, true); });
                sim_->schedule(t + f.down_ps, [this, f] { apply(f, false); });
            }
        } else {
            sim_->schedule(f.at_ps, [this, f, down] { apply(f, down); });
        }
    }
}

Result Runner::run() {
    const auto t_build = std::chrono::steady_clock::now();
    build();
    const auto t_run = std::chrono::steady_clock::now();
    simulate();
    const auto t_end = std::chrono::steady_clock::now();
    Result r = summarise();
    r.build_s = std::chrono::duration<double>(t_run - t_build).count();
    r.wall_s = std::chrono::duration<double>(t_end - t_run).count();
    return r;
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

void Runner::simulate() {
    const double cpu0 = cpu_seconds();
    sim_->run(cfg_.max_time_ps);
    cpu_run_s_ = cpu_seconds() - cpu0;
    if (dead_switch_ != kNone) measure_dead_path();
}

Result Runner::summarise() const {
    Result r;
    r.name = cfg_.name;
    r.hosts = topo_.hosts;
    r.planes = topo_.planes;
    r.flows = static_cast<std::uint32_t>(plan_.flows.size());
    r.steps = static_cast<std::uint32_t>(plan_.steps.size());
    r.nics = sim_->nic_count();
    r.switches = sim_->switch_count();
    r.ports = sim_->port_count();
    summarise_flows(r);
    summarise_steps(r);
    summarise_counters(r);
    summarise_telemetry(r);
    r.data_packets = sim_->data_packets_sent();
    r.packets = sim_->packets_sent();
    r.events = sim_->events_processed();
    r.dead_path_last_drop_us = dead_path_last_drop_us_;
    r.dead_path_p90_drop_us = dead_path_p90_drop_us_;
    r.dead_path_share_50us = dead_path_share_50us_;
    r.dead_path_drops = dead_path_drops_;
    if (cfg_.carry_payload)
        for (std::size_t i = 0; i < plan_.flows.size(); ++i)
            if (!std::equal(send_bufs_[i].begin(), send_bufs_[i].end(), recv_bufs_[i].begin(), recv_bufs_[i].end()))
                ++r.payload_mismatches;
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) == 0) r.peak_rss_bytes = static_cast<std::uint64_t>(ru.ru_maxrss) * 1024;
    r.cpu_s = cpu_run_s_;
    return r;
}

void Runner::summarise_flows(Result& r) const {
    r.completed = std::all_of(plan_.flows.begin(), plan_.flows.end(), [](const Flow& f) { return f.end_ps != kNeverPs; });
    TimePs first = kNeverPs, last = 0;
    std::vector<double> ratio;
    std::map<std::pair<std::uint64_t, std::uint32_t>, std::uint32_t> shapes;
    for (const Flow& f : plan_.flows) {
        const double ideal = to_us(ideal_fct_ps(f));
        r.ideal_fct_us.push_back(ideal);
        ++shapes[{f.bytes, topo_.links_between(f.src, f.dst)}];
        if (f.end_ps == kNeverPs) continue;
        first = std::min(first, f.start_ps);
        last = std::max(last, f.end_ps);
        const double fct = to_us(f.end_ps - f.start_ps);
        r.fct_us.push_back(fct);
        ratio.push_back(fct / ideal);
    }
    {
        auto best = std::max_element(shapes.begin(), shapes.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
        if (best != shapes.end()) {
            Flow f{};
            f.bytes = best->first.first;
            f.src = 0;
            f.dst = best->first.second == 2 ? 1 : topo_.hosts - 1;
            r.ideal_fct_us_typical = to_us(ideal_fct_ps(f));
        }
    }
    if (!r.fct_us.empty()) {
        r.fct_mean_us = std::accumulate(r.fct_us.begin(), r.fct_us.end(), 0.0) / static_cast<double>(r.fct_us.size());
        r.fct_p50_us = percentile(r.fct_us, 0.50);
        r.fct_p99_us = percentile(r.fct_us, 0.99);
        r.fct_max_us = *std::max_element(r.fct_us.begin(), r.fct_us.end());
        r.fct_p99_over_ideal = percentile(ratio, 0.99);
    }
    r.job_us = last > first && first != kNeverPs ? to_us(last - first) : 0;
}

void Runner::summarise_steps(Result& r) const {
    std::vector<std::uint64_t> out_bytes(topo_.hosts, 0), in_bytes(topo_.hosts, 0);
    for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
        // A step can be no shorter than its slowest flow alone, nor than the
        // busiest NIC moving everything it sends or receives in that step.
        double ideal = 0;
        std::uint64_t busiest = 0;
        std::uint32_t busiest_host = 0;
        for (std::uint32_t id : plan_.steps[s]) {
            const Flow& f = plan_.flows[id];
            ideal = std::max(ideal, r.ideal_fct_us[id]);
            for (std::uint64_t* b : {&out_bytes[f.src], &in_bytes[f.dst]}) {
                *b += f.bytes;
                if (*b > busiest) {
                    busiest = *b;
                    busiest_host = static_cast<std::uint32_t>(b == &out_bytes[f.src] ? f.src : f.dst);
                }
            }
        }
        if (busiest > 0) {
            Flow agg{};
            agg.src = busiest_host;
            agg.dst = busiest_host == 0 ? topo_.hosts - 1 : 0;
            agg.bytes = busiest;
            ideal = std::max(ideal, to_us(ideal_fct_ps(agg)));
        }
        for (std::uint32_t id : plan_.steps[s]) {
            out_bytes[plan_.flows[id].src] = 0;
            in_bytes[plan_.flows[id].dst] = 0;
        }
        r.ideal_step_us.push_back(ideal);
        r.ideal_job_us += ideal;
        if (step_end_[s] != kNeverPs) r.step_us.push_back(to_us(step_end_[s] - step_start_[s]));
    }
    summarise_phases(r);
}

void Runner::summarise_phases(Result& r) const {
    if (cfg_.failures.empty()) return;
    TimePs first_fail = kNeverPs, last_repair = 0;
    bool repaired = false;
    for (const FailureSpec& f : cfg_.failures) {
        switch (f.kind) {
            case FailureKind::link_down:
            case FailureKind::switch_down:
            case FailureKind::nic_port_down:
                first_fail = std::min(first_fail, f.at_ps);
                break;
            case FailureKind::link_flap: {
                first_fail = std::min(first_fail, f.at_ps);
                // The last outage starts before until_ps and lasts down_ps.
                const TimePs period = std::max<TimePs>(f.period_ps, 1);
                const TimePs last_start = f.until_ps > f.at_ps ? f.at_ps + (f.until_ps - 1 - f.at_ps) / period * period : f.at_ps;
                last_repair = std::max(last_repair, last_start + f.down_ps);
                repaired = true;
                break;
            }
            case FailureKind::link_up:
            case FailureKind::switch_up:
            case FailureKind::nic_port_up:
                last_repair = std::max(last_repair, f.at_ps);
                repaired = true;
                break;
        }
    }
    if (first_fail == kNeverPs) return;
    double sum[3] = {0, 0, 0};
    std::size_t n[3] = {0, 0, 0};
    for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
        if (step_end_[s] == kNeverPs) continue;
        const double us = to_us(step_end_[s] - step_start_[s]);
        int phase = -1;
        if (step_end_[s] <= first_fail) phase = 0;
        else if (step_start_[s] >= first_fail && (!repaired || step_end_[s] <= last_repair)) phase = 1;
        else if (repaired && step_start_[s] >= last_repair) phase = 2;
        if (phase < 0) continue;
        sum[phase] += us;
        ++n[phase];
    }
    if (n[0] != 0) r.step_mean_before_us = sum[0] / static_cast<double>(n[0]);
    if (n[1] != 0) r.step_mean_during_us = sum[1] / static_cast<double>(n[1]);
    if (n[2] != 0) r.step_mean_after_us = sum[2] / static_cast<double>(n[2]);
}

void Runner::summarise_counters(Result& r) const {
    for (std::size_t nic = 0; nic < sim_->nic_count(); ++nic) {
        const core::EngineStats& es = sim_->engine(static_cast<std::uint32_t>(nic)).stats();
        r.path_alarms_sent += es.path_alarms_sent;
        r.path_alarms_believed += es.path_alarms_believed;
    }
    for (const auto& [nic, qpn] : qps_) {
        const core::Qp* qp = sim_->engine(nic).find_qp(qpn);
        if (qp == nullptr) continue;
        r.retransmits += qp->stats.data_pkts_resent;
        r.ev_retirements += qp->stats.ev_retirements;
        for (std::size_t c = 0; c < core::kRetireCauses; ++c) r.ev_retirements_by_cause[c] += qp->stats.ev_retirements_by_cause[c];
        r.losses_timeout += qp->stats.losses_timeout;
        r.losses_send_order += qp->stats.losses_send_order;
        r.losses_send_order_cross_plane += qp->stats.losses_send_order_cross_plane;
        r.losses_path_order += qp->stats.losses_path_order;
        if (qp->plane_counters.empty()) continue;
        // How far each QP's active set is, at the end, from its split at the start.
        std::uint32_t away = 0;
        for (std::size_t i = 0; i < qp->paths.size(); ++i) away += qp->paths.slot(i).ev != qp->paths.slot(i).home_ev ? 1 : 0;
        r.ev_slots_away_from_home += away;
        r.ev_bad_at_end += qp->paths.bad().size();
        r.stale_path_starts += qp->paths.stale_starts();
        r.reps_explored += qp->paths.reps_explored();
        r.reps_recycled += qp->paths.reps_recycled();
        r.reps_freezes += qp->paths.reps_freezes();
        for (std::size_t i = 0; i < qp->paths.size(); ++i) {
            const core::EvSlot& s = qp->paths.slot(i);
            if (!s.parked && !qp->paths.in_plan(s.plane, qp->paths.group_of(s.ev))) ++r.slots_off_plan;
        }
    }
    r.plan_max_link_sharing = plan_sharing_;
    r.replans = replans_;
    if (rnl_) {
        r.rnl_rounds = rnl_->rounds();
        r.rnl_moves = rnl_->total_moves();
        r.rnl_most_moves_in_a_round = rnl_->most_moves_in_a_round();
        const PlanShape shape{cfg_.topology.t0, cfg_.topology.t1, cfg_.topology.hosts_per_t0, topo_.planes};
        std::vector<core::PathPlan> plans;
        for (std::uint32_t c = 0; c < plan_order_.size(); ++c) plans.push_back(rnl_->plan(c));
        r.plan_max_link_sharing = max_link_sharing(plan_order_, plans, shape);
    }
    for (std::size_t i = 0; i < sim_->port_count(); ++i) {
        const Port& p = sim_->port(static_cast<std::uint32_t>(i));
        r.trims += p.trims;
        r.ecn_marks += p.ecn_marks;
        r.drops += p.drops;
        if (p.last_hop) r.last_hop_queue_peak_bytes = std::max(r.last_hop_queue_peak_bytes, p.peak_lo_bytes);
        else if (!p.nic_side) r.fabric_queue_peak_bytes = std::max(r.fabric_queue_peak_bytes, p.peak_lo_bytes);
    }
    r.qp_errors = qp_errors_;
    r.reorder_at_nic = sim_->reorder_at_nic();
    r.ddc = sim_->ddc_stats();
}

void Runner::summarise_tracked(Result& r) const {
    // The tracked host's rate before its first failure (from the third
    // bucket: the first ones ramp up) and, as long again, from the third
    // bucket after it (the outage's transient excluded).
    const auto& s = r.tracked_series_gbps;
    TimePs fail = kNeverPs;
    for (const FailureSpec& f : cfg_.failures)
        if (f.kind == FailureKind::nic_port_down && f.host == cfg_.tracked_src_host) fail = std::min(fail, f.at_ps);
    if (s.empty() || fail == kNeverPs || cfg_.telemetry_bucket_ps == 0) return;
    const std::size_t fail_bucket = static_cast<std::size_t>(fail / cfg_.telemetry_bucket_ps);
    const std::size_t from = 2, after_from = fail_bucket + 3;
    if (fail_bucket <= from || after_from >= s.size()) return;
    const std::size_t len = std::min(fail_bucket - from, s.size() - after_from);
    auto mean = [&](std::size_t a, std::size_t n) {
        double sum = 0;
        for (std::size_t i = a; i < a + n; ++i) sum += s[i];
        return sum / static_cast<double>(n);
    };
    r.tracked_gbps_before = mean(from, fail_bucket - from);
    r.tracked_gbps_after = mean(after_from, len);
}

void Runner::summarise_telemetry(Result& r) const {
    const double job_s = r.job_us * 1e-6;
    // Per-plane throughput and its time series.
    r.bucket_us = to_us(cfg_.telemetry_bucket_ps);
    r.plane_gbps.assign(topo_.planes, 0.0);
    const auto& series = sim_->delivered_series();
    for (const auto& b : series) {
        std::array<double, 16> g{};
        for (std::uint32_t p = 0; p < topo_.planes; ++p) {
            g[p] = r.bucket_us > 0 ? static_cast<double>(b[p]) * 8.0 / (r.bucket_us * 1e3) : 0.0;
            r.plane_gbps[p] += static_cast<double>(b[p]);
        }
        r.plane_series_gbps.push_back(g);
    }
    for (auto& g : r.plane_gbps) g = job_s > 0 ? g * 8.0 / job_s / 1e9 : 0.0;
    for (std::uint64_t b : sim_->tracked_series())
        r.tracked_series_gbps.push_back(r.bucket_us > 0 ? static_cast<double>(b) * 8.0 / (r.bucket_us * 1e3) : 0.0);
    summarise_tracked(r);
    // Utilisation of the lowest-tier uplinks over the job, and its CoV.
    double sum = 0, sq = 0;
    for (std::uint32_t idx : topo_.uplink_ports) {
        const Port& p = sim_->port(idx);
        const double cap = static_cast<double>(sim_->link_config(p.link).rate_bps) / 8.0 * job_s;
        const double u = cap > 0 ? static_cast<double>(p.tx_bytes) / cap : 0.0;
        r.uplink_util.push_back(u);
        sum += u;
        sq += u * u;
    }
    if (!r.uplink_util.empty() && sum > 0) {
        const double n = static_cast<double>(r.uplink_util.size());
        const double mean = sum / n;
        r.t0_t1_util_cov = std::sqrt(std::max(0.0, sq / n - mean * mean)) / mean;
    }
}

}  // namespace

Result run_scenario(const ScenarioConfig& cfg) {
    Runner r(cfg);
    return r.run();
}

}  // namespace omrc::sim
