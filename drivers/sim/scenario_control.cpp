// SPDX-License-Identifier: BSD-3-Clause
// The scenario runner, the path controllers (drivers/sim/scenario_runner.hpp):
// policy planned's plans (drivers/sim/path_plan.hpp), again after a T1
// fails or returns, and policy rnl's scoring rounds (drivers/sim/rnl.hpp).
#include <algorithm>
#include <stdexcept>

#include "drivers/sim/path_plan.hpp"
#include "drivers/sim/scenario_runner.hpp"

namespace omrc::sim::detail {

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
    if (sim_->engine_of(host, qpn).submit(core::CmdModifyQp{qpn, core::QpState::rts, a, core::kAttrPath}, sim_->now_ns()).err != 0)
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

}  // namespace omrc::sim::detail
