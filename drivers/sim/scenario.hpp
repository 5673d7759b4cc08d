// SPDX-License-Identifier: BSD-3-Clause
// A scenario: topology + workload + path policy + CC + failures + seed, run
// to completion on a fresh Simulator, and what came out of it. The
// omrc-fabric command (bench/fabric) reads scenarios from files and prints
// and plots Results; the [sim] tests build ScenarioConfigs in code.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/stats.hpp"
#include "drivers/sim/network.hpp"
#include "drivers/sim/rnl.hpp"
#include "drivers/sim/topology.hpp"
#include "drivers/sim/workload.hpp"

namespace omrc::sim {

enum class FailureKind : std::uint8_t {
    link_down,      ///< T0 `index` ↔ T1 `peer` of `plane`
    link_up,
    link_flap,      ///< that link goes down for down_ps every period_ps, from at_ps until until_ps
    switch_down,    ///< whole switch (tier t0 or t1, `plane`, `index`) stops; its links go down
    switch_up,
    nic_port_down,  ///< host `host`'s port on `plane`
    nic_port_up,
};
[[nodiscard]] const char* to_string(FailureKind k) noexcept;

struct FailureSpec {
    FailureKind kind = FailureKind::link_down;
    TimePs at_ps = 0;
    Tier tier = Tier::t1;           ///< switch_*: which tier
    std::uint32_t plane = 0;
    std::uint32_t index = 0;        ///< switch index, or the link's T0 index
    std::uint32_t peer = 0;         ///< link: T1 index
    std::uint32_t host = 0;         ///< nic_port_*: host
    TimePs down_ps = 0;             ///< link_flap: each outage
    TimePs period_ps = 0;           ///< link_flap: from one outage to the next
    TimePs until_ps = 0;            ///< link_flap: no outage starts at or after this
};

struct ScenarioConfig {
    std::string name = "scenario";
    std::uint64_t seed = 1;
    TopologyConfig topology{};
    RoutingMode routing = RoutingMode::usid;   ///< fat_tree forces ecmp from usid, rejects ddc
    WorkloadConfig workload{};
    core::PathPolicy policy = core::PathPolicy::adaptive;
    /// Policy planned: how long after a T1 fails or returns the controller
    /// installs a new plan (detection, computation and installation).
    TimePs plan_reaction_ps = 100 * kPsPerUs;
    RnlConfig rnl{};                            ///< policy rnl: the controller's round and migration bounds
    core::CcConfig cc{};                        ///< base_rtt_ns = 0: the fabric's unloaded cross-T1 RTT
    std::uint32_t mtu_bytes = 4096;
    std::uint32_t mpr = 8;                      ///< receive window, units of 128 packets
    std::uint32_t evs = 128;                    ///< active EVs per QP
    std::uint32_t backup_evs = 32;
    std::uint32_t ev_track_depth = 16;
    std::uint64_t path_alarm_ns = core::EngineConfig{}.path_alarm_ns;  ///< engines' path alarm time (0 = off)
    bool peer_path_alarms = core::EngineConfig{}.peer_path_alarms;      ///< engines tell (and believe) peers' alarms
    std::uint32_t stale_path_packets = core::EngineConfig{}.stale_path_packets;  ///< packets a stale slot carries before an ACK (0 = no limit)
    std::uint32_t max_send_wr = 8;
    std::vector<FailureSpec> failures;
    TimePs max_time_ps = 1'000'000 * kPsPerUs;  ///< give up after this much virtual time (1 s)
    TimePs telemetry_bucket_ps = 10 * kPsPerUs;
    bool carry_payload = false;                 ///< real payload bytes, checked at the end (small fabrics)
    std::uint32_t tracked_src_host = kNone;     ///< record this host's delivered bytes over time
    SimConfig sim{};                            ///< seed, planes, routing, carry_payload and telemetry are set from the fields above; sim.ddc: routing ddc's keys
};

struct Result {
    std::string name;
    bool completed = false;              ///< every flow received in full before max_time
    std::uint32_t hosts = 0, planes = 0, flows = 0, steps = 0;
    std::size_t nics = 0, switches = 0, ports = 0;
    double job_us = 0;                   ///< first post → last flow received
    double ideal_job_us = 0;             ///< sum over steps of the step's ideal (slowest flow alone, or busiest NIC)
    std::vector<double> step_us;         ///< ring_allreduce: each step's duration
    std::vector<double> ideal_step_us;
    /// ring_allreduce with failures: mean step wholly before the first
    /// failure, wholly inside the outage (from the first failure to the
    /// last repair; to the end where nothing is repaired), and wholly after
    /// the last repair. -1 where no step falls in the phase.
    double step_mean_before_us = -1, step_mean_during_us = -1, step_mean_after_us = -1;
    std::vector<double> fct_us;          ///< per flow (posting → receiver completion)
    std::vector<double> ideal_fct_us;    ///< per flow, alone on an idle fabric at full NIC rate
    double fct_mean_us = 0, fct_p50_us = 0, fct_p99_us = 0, fct_max_us = 0;
    double ideal_fct_us_typical = 0;     ///< ideal FCT of the most common flow size and path length
    double fct_p99_over_ideal = 0;       ///< p99 of per-flow fct / ideal
    std::uint64_t retransmits = 0;       ///< data packets sent again (any cause)
    std::uint64_t trims = 0;             ///< data frames trimmed by switches
    std::uint64_t ecn_marks = 0;
    std::uint64_t drops = 0;             ///< frames dropped by queues and down links
    /// Most data bytes queued at any switch → NIC port, and at any switch →
    /// switch port, from SimConfig::queue_peak_from_ps on.
    std::uint64_t last_hop_queue_peak_bytes = 0;
    std::uint64_t fabric_queue_peak_bytes = 0;
    std::uint64_t ev_retirements = 0;
    /// ev_retirements by core::RetireCause (index: the enum's value).
    std::array<std::uint64_t, core::kRetireCauses> ev_retirements_by_cause{};
    std::uint64_t losses_timeout = 0;        ///< packets found lost by EV timeouts and the window sweep
    std::uint64_t losses_send_order = 0;     ///< by send order (of which across planes: next)
    std::uint64_t losses_send_order_cross_plane = 0;
    std::uint64_t losses_path_order = 0;
    std::uint64_t path_alarms_sent = 0;      ///< PATH_ALARMs engines sent to peers (peer_path_alarms)
    std::uint64_t path_alarms_believed = 0;  ///< PATH_ALARMs engines raised as their own alarm
    std::uint64_t stale_path_starts = 0;     ///< times a stale slot was used again (EngineConfig::stale_path_packets)
    std::uint64_t reps_explored = 0;         ///< policy reps: fresh EVs drawn (no clean one to recycle)
    std::uint64_t reps_recycled = 0;         ///< policy reps: EVs used again after a clean acknowledgement
    std::uint64_t reps_freezes = 0;          ///< policy reps: exploration frozen after an EV timeout
    /// Policy planned: most connections any of the job's plans (the first,
    /// and those after failures) puts on one T0-T1 link of a plane
    /// (1: conflict-free); 0 without a plan.
    std::uint32_t plan_max_link_sharing = 0;
    /// Policy planned: active slots of senders' QPs on a T1 their plan does not give them.
    std::uint64_t slots_off_plan = 0;
    std::uint32_t replans = 0;           ///< policy planned: plans installed after failures
    /// Policy rnl: scoring rounds run, (connection, plane) migrations made
    /// in all, and the most made in one round (≤ RnlConfig::max_moves).
    std::uint32_t rnl_rounds = 0;
    std::uint64_t rnl_moves = 0;
    std::uint32_t rnl_most_moves_in_a_round = 0;
    std::uint64_t ev_slots_away_from_home = 0;  ///< at the end: active slots not on the EV they started with (all QPs)
    std::uint64_t ev_bad_at_end = 0;     ///< at the end: EVs still ASSUMED_BAD (all QPs)
    std::uint64_t qp_errors = 0;         ///< completions with an error status
    std::vector<double> plane_gbps;      ///< mean delivered payload rate per plane over the job
    double t0_t1_util_cov = 0;           ///< coefficient of variation of T0→T1 (edge→agg) link utilisation
    std::vector<double> uplink_util;     ///< each uplink's utilisation over the job (0..1)
    std::vector<std::array<double, 16>> plane_series_gbps;  ///< per telemetry bucket and plane
    std::vector<double> tracked_series_gbps;   ///< tracked host's delivered rate per bucket
    /// nic_port_down of the tracked host: its mean rate before the failure
    /// (from the third bucket) and over as long from the third bucket after
    /// it; -1 where not applicable.
    double tracked_gbps_before = -1, tracked_gbps_after = -1;
    double bucket_us = 0;
    std::uint64_t data_packets = 0;      ///< data frames handed by engines to NIC ports
    std::uint64_t packets = 0;           ///< all frames (data + control)
    std::uint64_t events = 0;
    double wall_s = 0;                   ///< run only (building excluded)
    double cpu_s = 0;                    ///< CPU time of the run (user + system): robust on a shared machine
    double build_s = 0;
    std::uint64_t peak_rss_bytes = 0;    ///< process peak (getrusage), after the run
    double dead_path_last_drop_us = -1;  ///< switch_down: failure → last data frame lost toward the dead switch (-1: n/a)
    double dead_path_p90_drop_us = -1;   ///< ... → the time by which 90 % of those frames were lost
    double dead_path_share_50us = -1;    ///< share of those frames lost within 50 µs of the failure
    std::uint64_t dead_path_drops = 0;   ///< data frames lost toward the dead switch (queued, on the wire, sent later)
    std::uint64_t payload_mismatches = 0;  ///< carry_payload: flows whose bytes differ at the receiver
    /// SimConfig::count_reorder (on with routing ddc): untrimmed data frames that reached a
    /// NIC port after one their source port sent later.
    std::uint64_t reorder_at_nic = 0;
    DdcStats ddc{};                      ///< routing ddc: the chassis' counters
};

/// Throws std::invalid_argument for an inconsistent scenario.
Result run_scenario(const ScenarioConfig& cfg);

}  // namespace omrc::sim
