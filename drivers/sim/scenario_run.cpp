// SPDX-License-Identifier: BSD-3-Clause
// The scenario runner, running (drivers/sim/scenario_runner.hpp): the steps
// of the workload, completions, the failure schedule; run_scenario().
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "drivers/sim/scenario_runner.hpp"

namespace omrc::sim::detail {

namespace {

/// User + system CPU time of this process: on a shared machine it measures
/// the simulator's own work where wall time also counts other processes.
double cpu_seconds() {
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

}  // namespace

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

void Runner::simulate() {
    const double cpu0 = cpu_seconds();
    sim_->run(cfg_.max_time_ps);
    cpu_run_s_ = cpu_seconds() - cpu0;
    if (dead_switch_ != kNone) measure_dead_path();
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
        (void)sim_->engine_of(f.dst, c.dst_qpn).submit(core::CmdPostRecv{c.dst_qpn, std::span(&rr, 1)}, now);
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
        const core::SubmitResult r = sim_->engine_of(f.src, c.src_qpn).submit(core::CmdPostSend{c.src_qpn, std::span(&wr, 1)}, now);
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

}  // namespace omrc::sim::detail

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

Result run_scenario(const ScenarioConfig& cfg) {
    detail::Runner r(cfg);
    return r.run();
}

}  // namespace omrc::sim
