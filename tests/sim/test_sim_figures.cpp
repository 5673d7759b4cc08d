// SPDX-License-Identifier: BSD-3-Clause
// The figures of the scenario files in bench/fabric/scenarios, read from
// omrc-fabric's own JSON summary (the keys users plot), against the goals
// of docs/SIMULATOR.md §5. Virtual time: deterministic for a seed.
//
// Every goal is asserted: no case is tagged [!mayfail], so a goal missed
// fails the tier. A failed check prints the figure it compared (INFO);
// docs/SIMULATOR.md §5 records the measured values.
#include <catch2/catch.hpp>

#include <string>

#include "bench/fabric/report.hpp"
#include "bench/fabric/scenario_file.hpp"

using namespace omrc;

namespace {

nlohmann::json run_file(const std::string& name) {
    const sim::ScenarioConfig cfg = fabric::load_scenario(std::string(OMRC_SOURCE_DIR) + "/bench/fabric/scenarios/" + name + ".toml");
    const sim::Result r = sim::run_scenario(cfg);
    nlohmann::json j = fabric::summary_json(cfg, r);
    INFO(name << ": " << j.dump());
    REQUIRE(j["completed"] == true);
    REQUIRE(j["qp_errors"] == 0);
    return j;
}

double ratio(const nlohmann::json& j, const char* num, const char* den) {
    REQUIRE(j.contains(num));
    REQUIRE(j.contains(den));
    return j[num].get<double>() / j[den].get<double>();
}

}  // namespace

TEST_CASE("figure_c_goal__nic_port_loss_keeps_seven_eighths", "[sim]") {
    const nlohmann::json j = run_file("nic_port_loss");
    const double kept = ratio(j, "tracked_gbps_after", "tracked_gbps_before");
    INFO("host 0 after/before " << kept);
    CHECK(kept >= 0.95 * 7.0 / 8.0);
    CHECK(kept <= 7.0 / 8.0 * 1.02);  // only 7 ports' worth is there
}

TEST_CASE("figure_d_goal__link_flaps_cost_at_most_two_percent", "[sim]") {
    const nlohmann::json with = run_file("link_flap_allreduce");
    const nlohmann::json without = run_file("link_flap_allreduce_base");
    REQUIRE(with["drops_pkts"].get<std::uint64_t>() > 0);  // the flaps hit traffic
    const double slowdown = with["step_mean_us"].get<double>() / without["step_mean_us"].get<double>();
    INFO("mean step with flaps / without " << slowdown);
    CHECK(slowdown <= 1.02);
}

TEST_CASE("figure_b_goal__t1_loss_steps", "[sim]") {
    // Measured (seed 3): during 1.011, after 1.002 (goals 1.02, 1.01). The
    // after excess was 1.022 until a burst posted to an idle QP started a
    // fresh path rotation (PathSet::begin_burst, docs/SIMULATOR.md §5 (b)).
    const nlohmann::json j = run_file("t1_loss_allreduce");
    const double during = ratio(j, "step_mean_during_us", "step_mean_before_us");
    const double after = ratio(j, "step_mean_after_us", "step_mean_before_us");
    INFO("during/before " << during << ", after/before " << after);
    CHECK(during <= 1.02);
    CHECK(after <= 1.01);
}

TEST_CASE("figure_b_goal__t1_loss_last_drop", "[sim]") {
    // Measured (seed 3): 45.4 µs (goal 50). One sender had nothing in flight
    // through the dead T1 when it failed and met it 41 µs later; its slot
    // there was stale, so it carried two frames, not one a rotation until
    // send-order detection retired it (57.3 µs before; docs/SIMULATOR.md §5 (b)).
    const nlohmann::json j = run_file("t1_loss_allreduce");
    INFO("last drop " << j["dead_path_last_drop_us"].get<double>() << " µs");
    CHECK(j["dead_path_last_drop_us"].get<double>() <= 50.0);
    CHECK(j["stale_path_starts"].get<std::uint64_t>() > 0);
}

TEST_CASE("stale_path__an_idle_host_sends_only_its_budget_into_a_t1_that_died_meanwhile", "[sim]") {
    // t1_loss_allreduce (seed 3) with the stale-slot limit off and at its
    // default (2 packets): only the limit changes the last drop, and the
    // outage's steps stay at the goal.
    const auto config = [](std::uint32_t packets) {
        sim::ScenarioConfig c = fabric::load_scenario(std::string(OMRC_SOURCE_DIR) +
                                                      "/bench/fabric/scenarios/t1_loss_allreduce.toml");
        c.stale_path_packets = packets;
        return c;
    };
    const sim::Result off = run_scenario(config(0));
    const sim::Result on = run_scenario(config(2));
    REQUIRE(off.completed);
    REQUIRE(on.completed);
    CHECK(on.qp_errors == 0);
    INFO("last drop without the limit " << off.dead_path_last_drop_us << " µs, with it " << on.dead_path_last_drop_us
                                        << " µs; stale starts " << on.stale_path_starts);
    CHECK(off.stale_path_starts == 0);
    CHECK(on.stale_path_starts > 0);
    CHECK(off.dead_path_last_drop_us > 50);  // measured 57.3
    CHECK(on.dead_path_last_drop_us <= 50);  // measured 45.4
    CHECK(on.step_mean_during_us <= 1.02 * on.step_mean_before_us);
}

TEST_CASE("figure_b_bounds__t1_loss_within_the_lost_plane_share", "[sim]") {
    // What the engine does reach today, as a regression guard (not the goal above).
    const nlohmann::json j = run_file("t1_loss_allreduce");
    CHECK(ratio(j, "step_mean_during_us", "step_mean_before_us") <= 1.04);
    CHECK(ratio(j, "step_mean_after_us", "step_mean_before_us") <= 1.03);
    CHECK(j["dead_path_last_drop_us"].get<double>() <= 60.0);
    CHECK(j["dead_path_share_within_50us"].get<double>() >= 0.95);
    CHECK(j["ev_assumed_bad_at_end"] == 0);            // every retired EV came back
    CHECK(j["ev_slots_away_from_home_at_end"] == 0);   // to its own slot
}

TEST_CASE("figure_a_goal__adaptive_perm_1024_near_ideal", "[sim]") {
    // Measured: p99 1.053 (goal 1.10; spray 1.052). It was 1.129 while NSCC's
    // largest window (1.5 BDP) left out the receiver's ACK hold: every sender
    // was window-limited and the fabric ran at 88 % (docs/SIMULATOR.md §5 (a)).
    const nlohmann::json perm = run_file("perm_1024");
    CHECK(perm["fct_p99_over_ideal"].get<double>() <= 1.10);
}

TEST_CASE("figure_a_goal__adaptive_fat_tree_near_ideal", "[sim]") {
    // Measured: fat_tree_perm_1us (switches take uplinks from the EV's path
    // bits) p99 1.046, slowest flow 1.056 (goals 1.15, 1.20); with hashing
    // switches (fat_tree_perm_1us_ecmp) 1.212 and 1.268: the cost is the
    // hash's bunching, which the sender cannot steer (docs/SIMULATOR.md §5 (a)).
    const nlohmann::json ft = run_file("fat_tree_perm_1us");
    CHECK(ft["routing"] == "ev_path");
    CHECK(ft["fct_p99_over_ideal"].get<double>() <= 1.15);
    CHECK(ratio(ft, "fct_max_us", "ideal_fct_us") <= 1.20);
    const nlohmann::json hashed = run_file("fat_tree_perm_1us_ecmp");
    CHECK(hashed["routing"] == "ecmp");
    CHECK(hashed["fct_p99_over_ideal"].get<double>() > ft["fct_p99_over_ideal"].get<double>() + 0.05);
}

TEST_CASE("peer_path_alarm__a_host_warned_by_its_peer_never_sends_into_the_dead_t1", "[sim]") {
    // t1_loss_allreduce (64 GPUs, T1 3 of plane 2 lost at 300 µs; seed 3),
    // with and without PATH_ALARMs between engines. Without them one host
    // whose QP had nothing in flight through the T1 when it failed loses
    // frames there from 41 to 57 µs after (send-order detection on its own
    // losses); with them its ring predecessor has told it within 2 µs.
    const auto config = [](bool peer) {
        sim::ScenarioConfig c = fabric::load_scenario(std::string(OMRC_SOURCE_DIR) +
                                                      "/bench/fabric/scenarios/t1_loss_allreduce.toml");
        c.peer_path_alarms = peer;
        c.stale_path_packets = 0;  // the peer's word alone (the stale-slot limit ends those losses too)
        return c;
    };
    const sim::Result off = run_scenario(config(false));
    const sim::Result on = run_scenario(config(true));
    REQUIRE(off.completed);
    REQUIRE(on.completed);
    REQUIRE(on.qp_errors == 0);
    INFO("last drop without " << off.dead_path_last_drop_us << " µs, with " << on.dead_path_last_drop_us
                              << " µs; alarms sent " << on.path_alarms_sent << ", believed " << on.path_alarms_believed);
    CHECK(off.path_alarms_sent == 0);
    CHECK(on.path_alarms_sent > 0);
    CHECK(on.path_alarms_believed > 0);
    CHECK(off.dead_path_last_drop_us > 50);  // measured 57.3
    CHECK(on.dead_path_last_drop_us <= 5);   // measured 1.7: only what was on its way when the T1 died
    CHECK(on.completed);
}
