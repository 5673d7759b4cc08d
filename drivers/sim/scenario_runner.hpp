// SPDX-License-Identifier: BSD-3-Clause
// The scenario runner behind run_scenario() (scenario.hpp), private to the
// simulator. One Runner per scenario; its work in four files:
//   scenario_build.cpp    the simulator, the workload, the topology and its
//                         engines, one QP pair per (sender, receiver), the
//                         payload buffers, the controllers' first plans
//   scenario_run.cpp      the run: steps posted as the previous one
//                         completes, completions, the failure schedule
//   scenario_control.cpp  the two path controllers: planned (a plan per
//                         connection, again after a T1 fails or returns)
//                         and rnl (a scoring round every interval)
//   scenario_report.cpp   the Result: flows, steps, phases, the tracked host,
//                         counters, telemetry
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/engine.hpp"
#include "core/rng.hpp"
#include "drivers/sim/memory_model.hpp"
#include "drivers/sim/scenario.hpp"

namespace omrc::sim::detail {

inline constexpr std::uint64_t kVaBase = 0x10000000ull;  ///< receive buffers: flow f at kVaBase + f · 2^32
inline constexpr std::uint32_t kRkey = 0x5111;

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

    // scenario_build.cpp
    /// The simulator, the workload, the topology with its engines, one QP
    /// pair per (sender, receiver), the payload buffers, the failure
    /// schedule and the first step.
    void build();
    core::EngineConfig engine_config(std::uint32_t host) const;
    void connect(std::uint32_t src, std::uint32_t dst, Conn& c);
    TimePs base_rtt_ps() const;

    // scenario_run.cpp
    /// Runs to completion or max_time_ps.
    void simulate();
    void start_step(std::uint32_t step);
    void on_completion(std::uint32_t nic, const core::Completion& c, TimePs now);
    void schedule_failures();
    void apply(const FailureSpec& f, bool down);
    std::uint32_t link_port(const FailureSpec& f) const;
    void measure_dead_path();

    // scenario_control.cpp
    /// Policy planned: computes every connection's plan for the live T1s.
    void make_plans();
    /// ... and installs them in the QPs (RTS→RTS modify).
    void install_plans();
    /// Installs plans_[{host, peer}], if any, in `host`'s QP `qpn` (RTS→RTS modify).
    void install_plan(std::uint32_t host, std::uint32_t qpn, std::uint32_t peer);
    /// Policy rnl: one scoring round of the controller, and the next scheduled.
    void rnl_round();

    // scenario_report.cpp
    /// What came out: flows, steps, counters, telemetry.
    [[nodiscard]] Result summarise() const;
    void summarise_flows(Result& r) const;   ///< FCTs and their ideals, completion, job time
    void summarise_steps(Result& r) const;   ///< each step's duration and ideal
    void summarise_phases(Result& r) const;  ///< mean step before, during and after the failures
    void summarise_tracked(Result& r) const; ///< the tracked host's rate before and after its port failure
    void summarise_counters(Result& r) const;  ///< retransmits, trims, marks, drops, errors
    void summarise_telemetry(Result& r) const;  ///< per-plane rates, uplink utilisation
    TimePs ideal_fct_ps(const Flow& f) const;

    // State, in the order it is built (and torn down in reverse).
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
    /// Policy rnl: the controller.
    std::unique_ptr<RnlController> rnl_;
    std::vector<std::uint64_t> rnl_prev_tx_up_, rnl_prev_tx_down_;  ///< port tx_bytes at the previous round
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> rnl_index_;  ///< connection → index in plan_order_
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

}  // namespace omrc::sim::detail
