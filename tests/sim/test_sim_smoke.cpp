// SPDX-License-Identifier: BSD-3-Clause
// Fast sanity checks of the fabric simulator (tag [sim_smoke], every tier):
// event order, uSID shift-and-forward on real header bytes, a byte-exact
// transfer through a two-tier fabric, failures on schedule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.hpp"
#include "drivers/sim/event_queue.hpp"
#include "drivers/sim/forwarding.hpp"
#include "drivers/sim/path_plan.hpp"
#include "drivers/sim/scenario.hpp"
#include "routing/fabric.hpp"
#include "wire/frame.hpp"

using namespace omrc;
using namespace omrc::sim;

namespace {

/// A small two-plane Clos: 4 T0 × 2 hosts, 2 T1 per plane, 100G links.
ScenarioConfig tiny(std::uint32_t hosts_used, std::uint64_t bytes) {
    ScenarioConfig c;
    c.name = "tiny";
    c.seed = 7;
    c.topology.planes = 2;
    c.topology.t0 = 4;
    c.topology.t1 = 2;
    c.topology.hosts_per_t0 = 2;
    c.workload.kind = WorkloadKind::permutation;
    c.workload.hosts = hosts_used;
    c.workload.message_bytes = bytes;
    c.evs = 8;
    c.backup_evs = 4;
    c.max_time_ps = 20'000 * kPsPerUs;
    return c;
}

}  // namespace

TEST_CASE("event_queue__orders_by_time_then_insertion", "[sim_smoke]") {
    EventQueue q;
    core::Rng rng(3);
    std::vector<std::pair<TimePs, std::uint32_t>> pushed;
    // Ties, the current bucket, the wheel and the far heap (beyond 67 µs), then
    // pushes while popping (as handlers do: never earlier than the last pop).
    for (std::uint32_t i = 0; i < 6000; ++i) {
        const TimePs t = i % 3 == 0 ? rng.below(50) : i % 3 == 1 ? rng.below(20 * kPsPerUs) : rng.below(2'000 * kPsPerUs);
        q.push(t, EventKind::call, i);
        pushed.emplace_back(t, i);
    }
    std::stable_sort(pushed.begin(), pushed.end(), [](auto& a, auto& b) { return a.first < b.first; });
    for (const auto& [t, id] : pushed) {
        REQUIRE_FALSE(q.empty());
        const Event e = q.pop();
        REQUIRE(e.at == t);
        REQUIRE(e.target == id);
    }
    REQUIRE(q.empty());
    // Interleaved: every pop schedules a later event; times must never go back.
    TimePs now = 0;
    std::uint32_t next_id = 0;
    for (std::uint32_t i = 0; i < 100; ++i) q.push(rng.below(kPsPerUs), EventKind::call, next_id++);
    for (std::uint32_t n = 0; n < 20000; ++n) {
        const Event e = q.pop();
        REQUIRE(e.at >= now);
        now = e.at;
        q.push(now + rng.below(n % 50 == 0 ? 500 * kPsPerUs : 3 * kPsPerUs), EventKind::call, next_id++);
    }
}

TEST_CASE("usid_forward__shifts_and_follows_the_path", "[sim_smoke]") {
    routing::FabricDesc fab;
    fab.planes = 2;
    fab.t0_per_plane = 4;
    fab.t1_per_plane = 3;
    fab.hosts_per_t0 = 2;
    const std::uint32_t src = 1, dst = 6;  // T0 0 → T0 3
    routing::UsidTemplate tpl;
    REQUIRE(routing::UsidTemplate::make(fab, src, dst, tpl) == wire::WireError::ok);
    const std::uint32_t plane = 1, path = 5;  // T1 = 5 % 3 = 2
    const std::uint32_t ev = routing::make_ev(plane, path, 0x1234);
    wire::FrameSpec spec;
    spec.mode = wire::FrameMode::srv6;
    spec.outer.dst = tpl.apply(ev);
    spec.ev = ev;
    spec.bth.opcode = wire::Opcode::write_only;
    std::array<std::uint8_t, 256> hdr{};
    std::size_t len = 0;
    REQUIRE(wire::build_headers(hdr, spec, 64, len) == wire::WireError::ok);
    std::span<std::uint8_t> h(hdr.data(), len);

    RoutingDims d;
    d.hosts_per_t0 = 2;
    d.t0 = 4;
    d.t1 = 3;
    d.usid_block = fab.usid_block;
    Switch t0s{Tier::t0, 1, true, routing::make_usid(1, routing::UsidRole::t0, 0), 0};
    Switch t1s{Tier::t1, 1, true, routing::make_usid(1, routing::UsidRole::t1, 2), 2};
    Switch t0d{Tier::t0, 1, true, routing::make_usid(1, routing::UsidRole::t0, 3), 3};
    // Wrong switch: no match, nothing changes.
    const auto before = hdr;
    REQUIRE(usid_forward(d, t0d, h) == kNone);
    REQUIRE(hdr == before);
    REQUIRE(usid_forward(d, t0s, h) == d.hosts_per_t0 + 2);  // uplink to T1 2
    REQUIRE(usid_forward(d, t1s, h) == 3);                   // down to T0 3
    REQUIRE(usid_forward(d, t0d, h) == dst % 2);             // host port
    wire::Ipv6Addr da;
    std::copy_n(hdr.begin() + 38, 16, da.begin());
    REQUIRE(da == routing::nic_usid_address(fab, dst, plane));
    // Same switch id in another plane: the plane nibble does not match.
    Switch other{Tier::t0, 0, true, routing::make_usid(0, routing::UsidRole::t0, 0), 0};
    spec.outer.dst = tpl.apply(ev);
    REQUIRE(wire::build_headers(hdr, spec, 64, len) == wire::WireError::ok);
    REQUIRE(usid_forward(d, other, h) == kNone);
}

TEST_CASE("scenario__two_hosts_byte_exact_through_the_fabric", "[sim_smoke]") {
    ScenarioConfig c = tiny(2, 300'000);
    c.carry_payload = true;  // real bytes, ICRC computed and verified
    const Result r = run_scenario(c);
    REQUIRE(r.completed);
    REQUIRE(r.flows == 2);
    REQUIRE(r.payload_mismatches == 0);
    REQUIRE(r.qp_errors == 0);
    REQUIRE(r.data_packets >= 2 * (300'000 / 4096));
    // Never faster than the physics allows, and not absurdly slower on an idle fabric.
    REQUIRE(r.fct_max_us >= r.ideal_fct_us_typical * 0.99);
    REQUIRE(r.fct_max_us < 3 * r.ideal_fct_us_typical + 20);
    // Both planes carried data.
    REQUIRE(r.plane_gbps.size() == 2);
    REQUIRE(r.plane_gbps[0] > 10);
    REQUIRE(r.plane_gbps[1] > 10);
}

TEST_CASE("scenario__ecmp_routing_and_fat_tree_deliver", "[sim_smoke]") {
    ScenarioConfig c = tiny(8, 64'000);
    c.routing = RoutingMode::ecmp;
    c.carry_payload = true;
    Result r = run_scenario(c);
    REQUIRE(r.completed);
    REQUIRE(r.payload_mismatches == 0);

    ScenarioConfig f = tiny(16, 64'000);
    f.topology.kind = TopologyKind::fat_tree;
    f.topology.k = 4;  // 16 hosts, 3 tiers
    f.carry_payload = true;
    r = run_scenario(f);
    REQUIRE(r.completed);
    REQUIRE(r.payload_mismatches == 0);
    REQUIRE(r.planes == 1);
}

TEST_CASE("scenario__ev_path_routing_places_every_ev_on_its_named_uplink", "[sim_smoke]") {
    // routing ev_path: an uplink is the EV's path digit (T0/edge: path mod
    // uplinks; aggregation: (path / k/2) mod k/2). A QP's EVs take
    // consecutive path numbers, so a flow's packets spread evenly over the
    // edge uplinks: on a k = 4 fat tree the edge→aggregation links are
    // evenly used where hashing leaves them uneven.
    ScenarioConfig f = tiny(16, 512'000);
    f.topology.kind = TopologyKind::fat_tree;
    f.topology.k = 4;
    f.carry_payload = true;
    f.evs = 16;
    f.routing = RoutingMode::ev_path;
    const Result r = run_scenario(f);
    REQUIRE(r.completed);
    REQUIRE(r.payload_mismatches == 0);
    REQUIRE(r.qp_errors == 0);
    f.routing = RoutingMode::ecmp;
    const Result hashed = run_scenario(f);
    REQUIRE(hashed.completed);
    // uplink_util: each edge switch's 2 uplinks in turn (topology.cpp).
    const auto worst_pair = [](const Result& x) {
        REQUIRE(x.uplink_util.size() == 16);
        double worst = 0;
        for (std::size_t i = 0; i < x.uplink_util.size(); i += 2) {
            const double a = x.uplink_util[i], b = x.uplink_util[i + 1];
            if (std::max(a, b) > 0) worst = std::max(worst, std::abs(a - b) / std::max(a, b));
        }
        return worst;
    };
    const double placed = worst_pair(r), hashed_pair = worst_pair(hashed);
    CAPTURE(placed, hashed_pair);
    CHECK(placed < 0.05);  // measured 0.018 (acknowledgements and probes ride the uplinks too); hashing 0.38
    CHECK(hashed_pair > 0.05);
    ScenarioConfig c = tiny(8, 64'000);
    c.routing = RoutingMode::ev_path;
    c.carry_payload = true;
    const Result rc = run_scenario(c);
    REQUIRE(rc.completed);
    REQUIRE(rc.payload_mismatches == 0);
}

TEST_CASE("scenario__failures_on_schedule", "[sim_smoke]") {
    SECTION("a T0-T1 link lost mid-transfer: frames lost, transfer completes") {
        ScenarioConfig c = tiny(8, 1'000'000);
        c.workload.shuffle = false;
        FailureSpec f;
        f.kind = FailureKind::link_down;
        f.at_ps = 20 * kPsPerUs;
        f.plane = 0;
        f.index = 0;
        f.peer = 1;
        c.failures.push_back(f);
        const Result r = run_scenario(c);
        REQUIRE(r.completed);
        REQUIRE(r.qp_errors == 0);
        REQUIRE(r.drops > 0);
        REQUIRE(r.retransmits > 0);
    }
    SECTION("a NIC port lost: the engine moves to the other plane") {
        ScenarioConfig c = tiny(2, 2'000'000);
        c.workload.shuffle = false;
        FailureSpec f;
        f.kind = FailureKind::nic_port_down;
        f.at_ps = 30 * kPsPerUs;
        f.host = 0;
        f.plane = 1;
        c.failures.push_back(f);
        c.tracked_src_host = 0;
        const Result r = run_scenario(c);
        REQUIRE(r.completed);
        REQUIRE(r.qp_errors == 0);
        // Both directions touch host 0's lost port: once the loss is known
        // (port-status to the peer), plane 1 carries no data at all.
        REQUIRE(r.plane_series_gbps.size() > 6);
        const auto& before = r.plane_series_gbps[1];
        const auto& tail = r.plane_series_gbps[r.plane_series_gbps.size() - 3];
        REQUIRE(before[1] > 0);
        REQUIRE(tail[0] > 0);
        REQUIRE(tail[1] == 0);
    }
    SECTION("a whole switch lost and returned") {
        ScenarioConfig c = tiny(8, 1'000'000);
        FailureSpec down;
        down.kind = FailureKind::switch_down;
        down.tier = Tier::t1;
        down.plane = 1;
        down.index = 0;
        down.at_ps = 15 * kPsPerUs;
        FailureSpec up = down;
        up.kind = FailureKind::switch_up;
        up.at_ps = 60 * kPsPerUs;
        c.failures = {down, up};
        const Result r = run_scenario(c);
        REQUIRE(r.completed);
        REQUIRE(r.qp_errors == 0);
        REQUIRE(r.dead_path_last_drop_us >= 0);
    }
}

TEST_CASE("scenario__incast_trims_and_still_delivers_byte_exact", "[sim_smoke]") {
    // 6 senders into one host through 64 KB last-hop queues: the last hop
    // overflows, trims (priority class, last-hop DSCP), the receiver NACKs,
    // the senders retransmit; every byte arrives.
    ScenarioConfig c = tiny(7, 200'000);
    c.workload.kind = WorkloadKind::incast;
    c.workload.incast_senders = 6;
    c.topology.host_down.limit_bytes = 64 * 1024;
    c.carry_payload = true;
    const Result r = run_scenario(c);
    REQUIRE(r.completed);
    REQUIRE(r.flows == 6);
    REQUIRE(r.trims > 0);
    REQUIRE(r.retransmits > 0);
    REQUIRE(r.payload_mismatches == 0);
    REQUIRE(r.qp_errors == 0);
    // The receiver's NIC is the bottleneck: the job takes at least its line-rate time.
    REQUIRE(r.job_us >= r.ideal_job_us * 0.99);
}

TEST_CASE("plan_paths__conflict_free_when_t0s_have_no_more_connections_than_t1s", "[sim_smoke]") {
    // 16 T0 × 16 hosts, 16 T1s: random permutations have at most 16
    // T1-crossing connections per T0 each way, so a proper colouring exists.
    const PlanShape shape{16, 16, 16, 8};
    core::Rng rng(5);
    for (int round = 0; round < 20; ++round) {
        std::vector<std::uint32_t> dst(256);
        for (std::uint32_t i = 0; i < 256; ++i) dst[i] = i;
        for (std::uint32_t i = 255; i > 0; --i) std::swap(dst[i], dst[rng.below(i + 1)]);
        std::vector<std::pair<std::uint32_t, std::uint32_t>> conns;
        for (std::uint32_t i = 0; i < 256; ++i) conns.emplace_back(i, dst[i]);
        const auto plans = plan_paths(conns, shape);
        REQUIRE(plans.size() == conns.size());
        CHECK(max_link_sharing(conns, plans, shape) == 1);
        for (std::size_t i = 0; i < conns.size(); ++i) {
            const bool crosses = conns[i].first / 16 != conns[i].second / 16;
            CHECK(plans[i].t1_count == (crosses ? 1 : 0));
            if (crosses) CHECK(plans[i].first_t1[7] < 16);
        }
    }
    // Every host of T0 0 to every host of T0 1 (256 connections, 16 T1s):
    // each T1 carries 16 of them, no more.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> all;
    for (std::uint32_t a = 0; a < 16; ++a)
        for (std::uint32_t b = 16; b < 32; ++b) all.emplace_back(a, b);
    CHECK(max_link_sharing(all, plan_paths(all, shape), shape) == 16);
    // A re-plan around T1 5 of plane 2: the same T1s, none in plane 2 for
    // the connections that had T1 5 there.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> perm;
    for (std::uint32_t i = 0; i < 256; ++i) perm.emplace_back(i, (i + 16) % 256);
    const auto healthy = plan_paths(perm, shape);
    std::vector<bool> dead(8 * 16, false);
    dead[2 * 16 + 5] = true;
    const auto degraded = plan_paths(perm, shape, dead);
    int moved = 0;
    for (std::size_t i = 0; i < perm.size(); ++i)
        for (std::uint32_t p = 0; p < 8; ++p) {
            if (p == 2 && healthy[i].first_t1[p] == 5) {
                CHECK(degraded[i].first_t1[p] == core::PathPlan::kNoT1);
                ++moved;
            } else {
                CHECK(degraded[i].first_t1[p] == healthy[i].first_t1[p]);
            }
        }
    CHECK(moved == 16);  // one connection of each of the 16 T0s
    CHECK(max_link_sharing(perm, degraded, shape) == 1);
    // One plane: a connection whose T1 failed would have no plane left, so
    // it shares the least used live T1 instead.
    const PlanShape one{16, 16, 16, 1};
    const auto single = plan_paths(perm, one);
    std::vector<bool> dead1(16, false);
    dead1[5] = true;
    const auto shared = plan_paths(perm, one, dead1);
    for (std::size_t i = 0; i < perm.size(); ++i) {
        CHECK(shared[i].first_t1[0] != core::PathPlan::kNoT1);
        CHECK(shared[i].first_t1[0] != 5);
        if (single[i].first_t1[0] != 5) CHECK(shared[i].first_t1[0] == single[i].first_t1[0]);
    }
    CHECK(max_link_sharing(perm, shared, one) == 2);
    // No T1s known: no plans.
    CHECK(plan_paths(all, PlanShape{16, 0, 16, 8})[0].t1_count == 0);
}

TEST_CASE("rnl_controller__moves_only_the_worst_a_few_per_round_and_leaves_dead_links", "[sim_smoke]") {
    // 16 T0 × 16 hosts, 16 T1s, 2 planes; a random permutation. The hashed
    // first mapping puts several connections on some links; the rounds move
    // at most max_moves of them each, worst first, until every link carries
    // one connection (demand 1 each: a permutation fills a plane's links).
    const PlanShape shape{16, 16, 16, 2};
    core::Rng rng(9);
    std::vector<std::uint32_t> dst(256);
    for (std::uint32_t i = 0; i < 256; ++i) dst[i] = i;
    for (std::uint32_t i = 255; i > 0; --i) std::swap(dst[i], dst[rng.below(i + 1)]);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> conns;
    for (std::uint32_t i = 0; i < 256; ++i) conns.emplace_back(i, dst[i]);
    RnlConfig cfg;
    cfg.max_moves = 8;
    RnlController rnl(conns, shape, cfg, 3);
    auto plans = [&] {
        std::vector<core::PathPlan> v;
        for (std::uint32_t c = 0; c < conns.size(); ++c) v.push_back(rnl.plan(c));
        return v;
    };
    // Links (either direction, any plane) that carry more than one connection.
    auto crowded = [&] {
        std::vector<std::uint32_t> up(2 * 16 * 16, 0), down(2 * 16 * 16, 0);
        for (std::uint32_t c = 0; c < conns.size(); ++c) {
            if (conns[c].first / 16 == conns[c].second / 16) continue;
            for (std::uint32_t p = 0; p < 2; ++p) {
                ++up[(p * 16 + conns[c].first / 16) * 16 + rnl.t1_of(c, p)];
                ++down[(p * 16 + conns[c].second / 16) * 16 + rnl.t1_of(c, p)];
            }
        }
        return std::count_if(up.begin(), up.end(), [](std::uint32_t n) { return n > 1; }) +
               std::count_if(down.begin(), down.end(), [](std::uint32_t n) { return n > 1; });
    };
    const std::uint32_t hashed = max_link_sharing(conns, plans(), shape);
    const auto crowded_hashed = crowded();
    CHECK(hashed >= 3);  // a hash of 256 connections onto 16 T1s collides
    FabricReading idle;
    idle.up.resize(2 * 16 * 16);
    idle.down.resize(2 * 16 * 16);
    const std::vector<bool> all_active(conns.size(), true);
    std::uint64_t moved = 0;
    for (int r = 0; r < 200; ++r) {
        const auto moves = rnl.round(idle, all_active);
        CHECK(moves.size() <= cfg.max_moves);
        for (const RnlMove& m : moves) {
            CHECK(m.from != m.to);
            CHECK(rnl.t1_of(m.conn, m.plane) == m.to);
        }
        moved += moves.size();
        if (moves.empty()) break;
    }
    CHECK(moved == rnl.total_moves());
    CHECK(rnl.most_moves_in_a_round() == cfg.max_moves);  // the first rounds have more candidates than that
    // Greedy single moves cannot always reach a conflict-free mapping (a
    // connection whose free uplinks and free downlinks are different T1s
    // stays), but they cut the crowded links by far.
    INFO("crowded links: hashed " << crowded_hashed << ", settled " << crowded());
    CHECK(max_link_sharing(conns, plans(), shape) <= 2);
    CHECK(crowded() * 5 <= crowded_hashed);
    CHECK(rnl.round(idle, all_active).empty());  // settled: nothing moves without a reason

    // Inactive connections are not moved, however they collide.
    RnlController quiet(conns, shape, cfg, 3);
    CHECK(quiet.round(idle, std::vector<bool>(conns.size(), false)).empty());

    // A dead T1 in plane 1: the connections on it leave it first, and none lands on it.
    FabricReading dead = idle;
    for (std::uint32_t i = 0; i < 16; ++i) {
        dead.up[(1 * 16 + i) * 16 + 4].usable = false;
        dead.down[(1 * 16 + i) * 16 + 4].usable = false;
    }
    std::vector<std::uint32_t> on_dead;
    for (std::uint32_t c = 0; c < conns.size(); ++c)
        if (conns[c].first / 16 != conns[c].second / 16 && rnl.t1_of(c, 1) == 4) on_dead.push_back(c);
    REQUIRE(!on_dead.empty());
    const auto moves = rnl.round(dead, all_active);
    CHECK(moves.size() == std::min<std::size_t>(on_dead.size(), cfg.max_moves));
    for (const RnlMove& m : moves) {
        CHECK(m.plane == 1);
        CHECK(m.from == 4);
    }
    for (int r = 0; r < 10; ++r) (void)rnl.round(dead, all_active);
    for (std::uint32_t c : on_dead) CHECK(rnl.t1_of(c, 1) != 4);
    // Plane 1 lost one T1 of 16 for 16 T0s' connections: some link carries two now.
    for (std::uint32_t c = 0; c < conns.size(); ++c)
        if (conns[c].first / 16 != conns[c].second / 16) CHECK(rnl.t1_of(c, 1) != 4);
    CHECK(rnl.last_score(on_dead[0], 1) < RnlController::kDead);
}

TEST_CASE("scenario__workers: NICs of 2 and 4 engines (a QP on each), byte-exact, a NIC port lost and found",
          "[sim_smoke]") {
    // Several flows per host (an all-to-all) so that every engine of a NIC
    // has QPs; a NIC port that dies tells every engine's peers.
    const std::uint32_t workers = GENERATE(2u, 4u);
    CAPTURE(workers);
    ScenarioConfig c = tiny(4, 256'000);
    c.workload.kind = WorkloadKind::all_to_all;
    c.carry_payload = true;
    ScenarioConfig one = c;
    c.sim.workers = workers;
    const Result a = run_scenario(one);
    const Result r = run_scenario(c);
    REQUIRE(r.completed);
    REQUIRE(r.flows == a.flows);
    CHECK(r.payload_mismatches == 0);
    CHECK(r.qp_errors == 0);
    // The engines share the NIC's ports: the same physics.
    CAPTURE(a.job_us, r.job_us);
    CHECK(r.job_us <= a.job_us * 1.05);
    CHECK(r.job_us >= a.job_us * 0.95);

    FailureSpec f;
    f.kind = FailureKind::nic_port_down;
    f.at_ps = 5 * kPsPerUs;
    f.host = 0;
    f.plane = 1;
    c.failures.push_back(f);
    const Result lost = run_scenario(c);
    REQUIRE(lost.completed);
    CHECK(lost.qp_errors == 0);
    CHECK(lost.payload_mismatches == 0);
}
