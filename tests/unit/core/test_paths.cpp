// SPDX-License-Identifier: BSD-3-Clause
// PathSet: the EV set of a QP (lib/core/paths.cpp), cases in the order of
// its functions, named Function__case.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "core/paths.hpp"
#include "routing/fabric.hpp"

using namespace omrc::core;
using omrc::routing::ev_plane;

namespace {
PathSet make(PathPolicy p, std::uint32_t planes = 8, std::uint32_t evs = 128, std::uint32_t t1s = 0) {
    Rng rng(1);
    PathSet s;
    s.init(p, planes, evs, 16, 16, 0x1001, t1s, rng);
    return s;
}

/// Active slots per (plane, group).
std::map<std::pair<int, int>, int> per_group(const PathSet& s) {
    std::map<std::pair<int, int>, int> m;
    for (std::size_t i = 0; i < s.size(); ++i)
        if (!s.slot(i).parked) ++m[{s.slot(i).plane, s.group_of(s.slot(i).ev)}];
    return m;
}

/// Answers the next `n` probes of the group of `ev` (returns the EVs restored).
std::uint32_t answer_probes(PathSet& s, Rng& rng, TimeNs& now, int n, std::uint32_t plane_mask = 0xFF) {
    std::uint32_t restored = 0;
    for (int i = 0; i < n; ++i) {
        PathSet::ProbeDue due;
        if (!s.probe_due(now, plane_mask, due)) {
            now = s.next_probe_event_ns(1'000'000);
            REQUIRE(s.probe_due(now, plane_mask, due));
        }
        const auto id = static_cast<std::uint16_t>(0x100 + i);
        s.probe_sent(due, id, now);
        restored += s.on_probe_answer(due.ev, id, 3, rng, now);
    }
    return restored;
}
}  // namespace

TEST_CASE("PathSet::init__equal_split_over_planes", "[unit][core]") {
    PathSet s = make(PathPolicy::adaptive);
    REQUIRE(s.size() == 128);
    std::map<int, int> per_plane;
    std::set<std::uint32_t> evs;
    for (std::size_t i = 0; i < s.size(); ++i) {
        ++per_plane[s.slot(i).plane];
        evs.insert(s.slot(i).ev);
        CHECK(ev_plane(s.slot(i).ev) == s.slot(i).plane);
        CHECK(s.slot(i).home_ev == s.slot(i).ev);
    }
    CHECK(per_plane.size() == 8);
    for (auto [p, n] : per_plane) CHECK(n == 16);
    CHECK(evs.size() == 128);
    CHECK(s.backups() == 16);
    CHECK(s.groups_per_plane() == 1);
    // 100 EVs over 8 planes round up to 13 per plane.
    CHECK(make(PathPolicy::spray, 8, 100).size() == 104);
}

TEST_CASE("PathSet::init__slots_spread_evenly_over_the_t1s", "[unit][core]") {
    // 16 slots per plane over 4 T1s: 4 on each; over 32 T1s: 16 distinct ones.
    PathSet s = make(PathPolicy::adaptive, 8, 128, 4);
    CHECK(s.groups_per_plane() == 4);
    for (const auto& [key, n] : per_group(s)) CHECK(n == 4);
    CHECK(per_group(s).size() == 32);
    PathSet wide = make(PathPolicy::adaptive, 8, 128, 32);
    for (const auto& [key, n] : per_group(wide)) CHECK(n == 1);
    CHECK(per_group(wide).size() == 128);
}

TEST_CASE("PathSet::select__spray_rotates_and_avoids_down_planes", "[unit][core]") {
    PathSet s = make(PathPolicy::spray);
    Rng rng(2);
    std::map<int, int> uses;
    for (int i = 0; i < 128 * 4; ++i) {
        const int k = s.select(0xFF & ~(1u << 2), rng);
        if (k >= 0) ++uses[k];
    }
    for (auto [slot, n] : uses) CHECK(s.slot(static_cast<std::size_t>(slot)).plane != 2);
    CHECK(uses.size() == 112);
    // Every rotation visits each usable slot once: after 4 rotations' worth
    // of picks the counts differ by at most one rotation.
    int lo = 1 << 30, hi = 0;
    for (auto [slot, n] : uses) lo = std::min(lo, n), hi = std::max(hi, n);
    CHECK(hi - lo <= 1);
    CHECK(s.select(0, rng) == -1);
}

TEST_CASE("PathSet::select__rotations_change_order_and_alternate_planes", "[unit][core]") {
    PathSet s = make(PathPolicy::spray);
    Rng rng(3);
    std::vector<std::vector<int>> rotations(3);
    for (auto& r : rotations)
        for (int i = 0; i < 128; ++i) r.push_back(s.select(0xFF, rng));
    for (const auto& r : rotations) {
        CHECK(std::set<int>(r.begin(), r.end()).size() == 128);  // each slot once
        for (std::size_t i = 1; i < r.size(); ++i)
            CHECK(s.slot(static_cast<std::size_t>(r[i])).plane != s.slot(static_cast<std::size_t>(r[i - 1])).plane);
    }
    CHECK(rotations[0] != rotations[1]);  // not in phase with itself, so not with other QPs either
    CHECK(rotations[1] != rotations[2]);
}

TEST_CASE("PathSet::select__ecmp_sticks_to_one_ev", "[unit][core]") {
    PathSet s = make(PathPolicy::ecmp);
    Rng rng(4);
    const int first = s.select(0xFF, rng);
    for (int i = 0; i < 100; ++i) CHECK(s.select(0xFF, rng) == first);
    const auto plane = s.slot(static_cast<std::size_t>(first)).plane;
    const int failover = s.select(0xFF & ~(1u << plane), rng);
    CHECK(failover != first);
    CHECK(s.retire(static_cast<std::size_t>(first), 0, rng) == false);
}

TEST_CASE("PathSet::mark_skip__skips_one_rotation_only", "[unit][core]") {
    PathSet s = make(PathPolicy::adaptive, 2, 4);
    Rng rng(5);
    const int a = s.select(3, rng);
    s.mark_skip(static_cast<std::size_t>(a));
    std::vector<int> seq;
    for (int i = 0; i < 3; ++i) seq.push_back(s.select(3, rng));
    CHECK(std::count(seq.begin(), seq.end(), a) == 0);  // the rest of this rotation
    for (int i = 0; i < 4; ++i) seq.push_back(s.select(3, rng));
    CHECK(std::count(seq.begin() + 3, seq.end(), a) == 1);  // back in the next one
}

TEST_CASE("PathSet::select__a_stale_slot_carries_its_budget_then_waits_for_an_ack", "[unit][core]") {
    // 2 planes × 4 slots, all acknowledged at t = 1 µs; at t = 100 µs (stale
    // after 20 µs) each slot may carry 2 packets before an acknowledgement.
    PathSet s = make(PathPolicy::adaptive, 2, 8);
    Rng rng(6);
    constexpr TimeNs kStale = 20'000, kNow = 100'000;
    for (std::size_t i = 0; i < s.size(); ++i) s.note_ack(i, s.slot(i).ev, 1'000);
    // Not stale yet: no limit.
    std::map<int, int> uses;
    for (int i = 0; i < 40; ++i) ++uses[s.select(3, rng, 10'000, kStale, 2)];
    CHECK(uses.size() == 8);
    CHECK(uses.begin()->second == 5);
    for (std::size_t i = 0; i < s.size(); ++i) s.note_ack(i, s.slot(i).ev, 1'000);
    // Stale: 16 packets, 2 per slot and 8 per plane, then nothing.
    uses.clear();
    std::map<int, int> per_plane;
    for (int i = 0; i < 16; ++i) {
        const int k = s.select(3, rng, kNow, kStale, 2);
        REQUIRE(k >= 0);
        ++uses[k];
        ++per_plane[s.slot(static_cast<std::size_t>(k)).plane];
    }
    for (const auto& [slot, n] : uses) CHECK(n == 2);
    CHECK(per_plane[0] == 8);
    CHECK(per_plane[1] == 8);
    CHECK(s.select(3, rng, kNow, kStale, 2) == -1);  // the QP waits for acknowledgements
    CHECK(s.stale_starts() == 8);  // each slot once
    // An acknowledgement frees its slot at once; a new EV in a slot has no history.
    s.note_ack(3, s.slot(3).ev, kNow);
    CHECK(s.select(3, rng, kNow + 1, kStale, 2) == 3);
    s.slot(5).ev ^= 0x10;  // as a retirement's stand-in would
    CHECK(s.select(3, rng, kNow + 2, kStale, 2) >= 0);
    CHECK(s.select(3, rng, kNow + 3, kStale, 2) >= 0);
    // Budget 0: no limit at all.
    for (int i = 0; i < 20; ++i) CHECK(s.select(3, rng, kNow, kStale, 0) >= 0);
}

TEST_CASE("PathSet::select__a_waiting_slot_gives_its_turn_to_its_own_plane", "[unit][core]") {
    // Slot 0's plane keeps its share of every rotation while slot 0 waits.
    PathSet s = make(PathPolicy::adaptive, 2, 8);
    Rng rng(7);
    constexpr TimeNs kStale = 20'000, kNow = 100'000;
    s.note_ack(0, s.slot(0).ev, 1'000);  // only slot 0 is stale (the others were never acknowledged)
    const std::uint8_t plane0 = s.slot(0).plane;
    int on_plane0 = 0, on_slot0 = 0;
    for (int i = 0; i < 8 * 10; ++i) {
        const int k = s.select(3, rng, kNow, kStale, 1);
        REQUIRE(k >= 0);
        on_plane0 += s.slot(static_cast<std::size_t>(k)).plane == plane0;
        on_slot0 += k == 0;
    }
    CHECK(on_slot0 == 1);
    CHECK(on_plane0 == 40);
}

TEST_CASE("PathSet::retire__a_stand_in_never_loads_a_t1_above_the_others", "[unit][core]") {
    Rng rng(6);
    // 16 slots per plane over 32 T1s: half the groups hold none. A retired
    // EV's stand-in goes to an empty healthy group, on any plane.
    PathSet s = make(PathPolicy::adaptive, 8, 128, 32);
    const std::uint32_t old_ev = s.slot(5).ev;
    const std::uint8_t plane = s.slot(5).plane;
    const std::uint16_t group = s.group_of(old_ev);
    REQUIRE(s.retire(5, 1000, rng));
    CHECK(s.slot(5).ev != old_ev);
    CHECK(s.slot(5).home_ev == old_ev);
    CHECK_FALSE(s.slot(5).parked);
    CHECK(ev_plane(s.slot(5).ev) == s.slot(5).plane);
    CHECK_FALSE((s.slot(5).plane == plane && s.group_of(s.slot(5).ev) == group));  // never the T1 that just failed
    REQUIRE(s.bad().size() == 1);
    CHECK(s.bad().front().ev == old_ev);
    for (const auto& [key, n] : per_group(s)) CHECK(n == 1);
    // 4 slots on each of 32 groups: every healthy group is as full as any,
    // so the slots of a failed T1 park instead (the QP sprays over the 31
    // healthy T1s evenly until the failed one comes back).
    PathSet even = make(PathPolicy::adaptive, 8, 128, 4);
    const std::uint8_t p2 = even.slot(3).plane;
    const std::uint16_t g2 = even.group_of(even.slot(3).ev);
    for (std::size_t i = 0; i < even.size(); ++i)
        if (even.slot(i).plane == p2 && even.group_of(even.slot(i).ev) == g2) REQUIRE(even.retire(i, 1000, rng));
    CHECK(even.parked() == 4);
    const auto groups = per_group(even);
    CHECK(groups.count({p2, g2}) == 0);
    CHECK(groups.size() == 31);
    for (const auto& [key, n] : groups) CHECK(n == 4);
    // Stand-ins skip planes that are not usable.
    PathSet t = make(PathPolicy::adaptive, 8, 128, 32);
    REQUIRE(t.retire(0, 1000, rng, 1u << 6));
    CHECK(t.slot(0).plane == 6);
}

TEST_CASE("PathSet::on_probe_answer__a_t1_back_brings_its_evs_home", "[unit][core]") {
    Rng rng(7);
    PathSet s = make(PathPolicy::adaptive, 8, 128, 4);
    s.set_probe_interval(20'000);
    const std::uint8_t plane = s.slot(3).plane;
    const std::uint16_t group = s.group_of(s.slot(3).ev);
    std::vector<std::size_t> lost;
    for (std::size_t i = 0; i < s.size(); ++i)
        if (s.slot(i).plane == plane && s.group_of(s.slot(i).ev) == group) lost.push_back(i);
    REQUIRE(lost.size() == 4);
    for (std::size_t i : lost) REQUIRE(s.retire(i, 0, rng));
    CHECK(s.bad().size() == 4);
    CHECK(s.groups().size() == 1);  // one probe stream for the T1, not one per EV
    // First probe one interval after the failure, at most one outstanding.
    PathSet::ProbeDue due;
    CHECK_FALSE(s.probe_due(19'999, 0xFF, due));
    REQUIRE(s.probe_due(20'000, 0xFF, due));
    s.probe_sent(due, 9, 20'000);
    PathSet::ProbeDue again;
    CHECK_FALSE(s.probe_due(20'000, 0xFF, again));
    // Three answers in a row: the whole group is back, each EV in its home slot.
    TimeNs now = 20'000;
    CHECK(s.on_probe_answer(due.ev, 9, 3, rng, now) == 0);
    std::vector<std::size_t> hooked;
    std::uint32_t restored = 0;
    for (int i = 0; i < 2; ++i) {
        REQUIRE(s.probe_due(now, 0xFF, due));  // answered: the next goes at once
        s.probe_sent(due, static_cast<std::uint16_t>(20 + i), now);
        restored += s.on_probe_answer(due.ev, static_cast<std::uint16_t>(20 + i), 3, rng, now,
                                      [&](std::size_t slot) { hooked.push_back(slot); });
    }
    CHECK(restored == 4);
    CHECK(s.bad().empty());
    for (std::size_t i : lost) {
        CHECK(s.slot(i).ev == s.slot(i).home_ev);
        CHECK_FALSE(s.slot(i).parked);
    }
    CHECK(std::set<std::size_t>(hooked.begin(), hooked.end()) == std::set<std::size_t>(lost.begin(), lost.end()));
    CHECK(s.parked() == 0);
    for (const auto& [key, n] : per_group(s)) CHECK(n == 4);  // even again
    CHECK(s.restorations() == 4);
}

TEST_CASE("PathSet::on_probe_answer__without_groups_each_ev_comes_back_alone", "[unit][core]") {
    Rng rng(8);
    PathSet s = make(PathPolicy::adaptive);
    const std::uint32_t a = s.slot(0).ev, b = s.slot(8).ev;  // both plane 0
    REQUIRE(s.retire(0, 0, rng));
    REQUIRE(s.retire(8, 0, rng));
    TimeNs now = 0;
    // One stream for the plane, rotating over its two bad EVs: six answers restore both.
    CHECK(answer_probes(s, rng, now, 6) == 2);
    CHECK(s.bad().empty());
    CHECK(s.slot(0).ev == a);
    CHECK(s.slot(8).ev == b);
}

TEST_CASE("PathSet::on_probe_answer__wrong_id_or_ev_is_ignored", "[unit][core]") {
    Rng rng(9);
    PathSet s = make(PathPolicy::adaptive);
    s.retire(0, 0, rng);
    PathSet::ProbeDue due;
    REQUIRE(s.probe_due(s.next_probe_event_ns(1000), 0xFF, due));
    s.probe_sent(due, 7, 0);
    CHECK(s.on_probe_answer(due.ev, 8, 1, rng, 0) == 0);      // not the outstanding probe
    CHECK(s.on_probe_answer(due.ev ^ 1, 7, 1, rng, 0) == 0);  // another EV
    CHECK(s.groups().front().answers == 0);
    CHECK(s.on_probe_answer(due.ev, 7, 1, rng, 0) == 1);
}

TEST_CASE("PathSet::expire_probes__fixed_cadence_and_the_run_resets", "[unit][core]") {
    Rng rng(10);
    PathSet s = make(PathPolicy::adaptive);
    s.set_probe_interval(50'000);
    s.retire(0, 0, rng);
    std::vector<TimeNs> sent;
    TimeNs now = 0;
    for (int i = 0; i < 5; ++i) {
        now = s.next_probe_event_ns(1'000);
        PathSet::ProbeDue due;
        REQUIRE(s.probe_due(now, 0xFF, due));
        s.probe_sent(due, 1, now);
        sent.push_back(now);
        s.expire_probes(now + 1'000, 1'000);  // never answered
        CHECK(s.groups().front().probe_id == 0);
    }
    // No backoff: a probe every interval while the EV is out.
    for (std::size_t i = 1; i < sent.size(); ++i) CHECK(sent[i] - sent[i - 1] == 50'000);
    CHECK(s.bad().size() == 1);
}

TEST_CASE("PathSet::probe_due__a_plane_that_is_down_is_not_probed", "[unit][core]") {
    Rng rng(11);
    PathSet s = make(PathPolicy::adaptive);
    s.retire(0, 0, rng);  // plane 0
    PathSet::ProbeDue due;
    const TimeNs t = s.next_probe_event_ns(1000);
    CHECK_FALSE(s.probe_due(t, 0xFE, due));
    CHECK(s.probe_due(t + s.probe_interval(), 0xFF, due));
}

TEST_CASE("PathSet::track__path_order_ring", "[unit][core]") {
    PathSet s = make(PathPolicy::adaptive);
    for (std::uint32_t i = 0; i < 16; ++i) CHECK(s.track(3, 100 + i, 1000 + i));
    CHECK_FALSE(s.track(3, 200, 2000));  // full
    std::uint32_t psn;
    std::uint64_t seq;
    s.tracked_at(3, 0, psn, seq);
    CHECK(psn == 100);
    CHECK(seq == 1000);
    s.pop_tracked(3);
    s.tracked_at(3, 0, psn, seq);
    CHECK(psn == 101);
    CHECK(s.tracked(3) == 15);
}

TEST_CASE("PathSet::deny__never_handed_out_again", "[unit][core]") {
    Rng rng(12);
    PathSet s = make(PathPolicy::adaptive);
    const std::uint32_t ev = s.slot(9).ev;
    CHECK(s.deny(ev, rng));
    for (std::size_t i = 0; i < s.size(); ++i) {
        CHECK(s.slot(i).ev != ev);
        CHECK(s.slot(i).home_ev != ev);
    }
    CHECK_FALSE(s.deny(ev, rng));
}

TEST_CASE("PathSet::retire__a_failed_plane_is_parked_and_a_probe_answer_brings_it_back", "[unit][core]") {
    Rng rng(13);
    PathSet s = make(PathPolicy::adaptive, 2, 4);  // slots 0, 2 on plane 0; 1, 3 on plane 1
    REQUIRE(s.slot(0).plane == 0);
    REQUIRE(s.slot(2).plane == 0);
    // A plane's worth of retirements in a row with no acknowledgement on the plane.
    REQUIRE(s.retire(0, 0, rng));
    CHECK(s.parked() == 0);  // first one: a stand-in
    REQUIRE(s.retire(2, 0, rng));
    CHECK(s.slot(2).parked);
    REQUIRE(s.retire(0, 0, rng));
    CHECK(s.parked() == 2);
    for (int i = 0; i < 16; ++i) CHECK(s.slot(static_cast<std::size_t>(s.select(3, rng))).plane == 1);
    // A probe answer on the plane unparks its slots.
    TimeNs now = 0;
    (void)answer_probes(s, rng, now, 1);
    CHECK(s.parked() == 0);
    CHECK(ev_plane(s.slot(0).ev) == 0);
    CHECK(ev_plane(s.slot(2).ev) == 0);
}

TEST_CASE("PathSet::init__planned_slots_use_only_the_plan", "[unit][core]") {
    Rng rng(11);
    PathPlan plan;
    plan.t1_count = 2;
    for (std::uint32_t p = 0; p < 8; ++p) plan.first_t1[p] = static_cast<std::uint16_t>(15 + p);  // wraps past T1 15
    PathSet s;
    s.init(PathPolicy::planned, 8, 128, 16, 16, 0x1001, 16, rng, plan);
    CHECK(s.manages_paths());
    const auto groups = per_group(s);
    CHECK(groups.size() == 16);  // two T1s in each of 8 planes
    for (const auto& [key, n] : groups) {
        CHECK(n == 8);
        const auto [plane, group] = key;
        CHECK((group == (15 + plane) % 16 || group == (16 + plane) % 16));
        CHECK(s.in_plan(static_cast<std::uint32_t>(plane), static_cast<std::uint32_t>(group)));
    }
    CHECK_FALSE(s.in_plan(0, 1));
    // Without groups (plain frames) or without a plan, planned is adaptive.
    PathSet plain;
    plain.init(PathPolicy::planned, 8, 128, 16, 16, 0x1001, 0, rng, plan);
    CHECK(plain.in_plan(0, 0));
    PathSet none;
    none.init(PathPolicy::planned, 8, 128, 16, 16, 0x1001, 16, rng);
    CHECK(per_group(none).size() == 128);
    // Other policies ignore a plan.
    PathSet adaptive;
    adaptive.init(PathPolicy::adaptive, 8, 128, 16, 16, 0x1001, 16, rng, plan);
    CHECK(per_group(adaptive).size() == 128);
}

TEST_CASE("PathSet::retire__planned_stand_ins_stay_on_the_plan_or_park", "[unit][core]") {
    Rng rng(12);
    PathPlan plan;
    plan.t1_count = 2;
    for (std::uint32_t p = 0; p < 8; ++p) plan.first_t1[p] = 4;  // T1s 4 and 5 of every plane
    PathSet s;
    s.init(PathPolicy::planned, 8, 128, 16, 16, 0x1001, 16, rng, plan);
    // One slot of (plane 3, T1 4) retired: its stand-in goes to a planned
    // group with fewer slots than the fullest. All hold 8, so it parks.
    std::size_t victim = s.size();
    for (std::size_t i = 0; i < s.size() && victim == s.size(); ++i)
        if (s.slot(i).plane == 3 && s.group_of(s.slot(i).ev) == 4) victim = i;
    REQUIRE(victim < s.size());
    REQUIRE(s.retire(victim, 1000, rng));
    CHECK(s.slot(victim).parked);
    // A second slot of the same group retired next: the groups are uneven now
    // (plane 3 T1 4 has 6), and stand-ins still never leave the plan.
    for (std::size_t i = 0; i < s.size(); ++i) {
        const EvSlot& e = s.slot(i);
        if (e.parked || e.plane != 3 || s.group_of(e.ev) != 4) continue;
        REQUIRE(s.retire(i, 2000, rng));
    }
    for (std::size_t i = 0; i < s.size(); ++i) {
        const EvSlot& e = s.slot(i);
        if (!e.parked) CHECK(s.in_plan(e.plane, s.group_of(e.ev)));
    }
    CHECK(per_group(s).count({3, 4}) == 0);
    // 15 slots a plane: 8 on one planned T1 and 7 on the other. A slot of a
    // fuller group gets a stand-in, on a planned group with 7.
    PathSet u;
    u.init(PathPolicy::planned, 8, 120, 16, 16, 0x1001, 16, rng, plan);
    std::size_t full = u.size();
    const auto before = per_group(u);
    for (std::size_t i = 0; i < u.size() && full == u.size(); ++i)
        if (before.at({u.slot(i).plane, u.group_of(u.slot(i).ev)}) == 8) full = i;
    REQUIRE(full < u.size());
    REQUIRE(u.retire(full, 1000, rng));
    CHECK_FALSE(u.slot(full).parked);
    CHECK(u.in_plan(u.slot(full).plane, u.group_of(u.slot(full).ev)));
    CHECK(before.at({u.slot(full).plane, u.group_of(u.slot(full).ev)}) == 7);
}

TEST_CASE("PathSet::replan__slots_move_to_the_new_plan", "[unit][core]") {
    Rng rng(13);
    PathPlan plan;
    plan.t1_count = 1;
    for (std::uint32_t p = 0; p < 8; ++p) plan.first_t1[p] = 3;
    PathSet s;
    s.init(PathPolicy::planned, 8, 128, 16, 16, 0x1001, 16, rng, plan);
    // T1 3 of plane 2 fails: its slots park (nothing else on the plan).
    for (std::size_t i = 0; i < s.size(); ++i)
        if (s.slot(i).plane == 2) REQUIRE(s.retire(i, 1000, rng));
    CHECK(s.parked() == 16);
    // The controller moves plane 2 to T1 9: every slot of plane 2 is back,
    // on T1 9; the other planes' slots keep their EVs.
    std::vector<std::uint32_t> before;
    for (std::size_t i = 0; i < s.size(); ++i) before.push_back(s.slot(i).ev);
    PathPlan next = plan;
    next.first_t1[2] = 9;
    s.replan(next, rng);
    CHECK(s.parked() == 0);
    for (std::size_t i = 0; i < s.size(); ++i) {
        const EvSlot& e = s.slot(i);
        CHECK(s.group_of(e.ev) == (e.plane == 2 ? 9 : 3));
        CHECK(e.ev == e.home_ev);
        if (e.plane != 2) CHECK(e.ev == before[i]);
    }
    // No path in plane 5 any more: its slots park, the others stay.
    PathPlan none5 = next;
    none5.first_t1[5] = PathPlan::kNoT1;
    s.replan(none5, rng);
    CHECK(s.parked() == 16);
    for (std::size_t i = 0; i < s.size(); ++i) CHECK(s.slot(i).parked == (s.slot(i).plane == 5));
    CHECK_FALSE(s.in_plan(5, 3));
    s.replan(next, rng);  // and back
    CHECK(s.parked() == 0);
    // A slot that changes EV hands over what it tracks first (the engine's
    // window sweep takes those packets): the hook sees exactly the slots of
    // the plane that moved, each still tracking its packet.
    for (std::size_t i = 0; i < s.size(); ++i) REQUIRE(s.track(i, static_cast<std::uint32_t>(i), i + 1));
    PathPlan moved = next;
    moved.first_t1[6] = 11;
    std::vector<std::size_t> handed;
    s.replan(moved, rng, [&](std::size_t slot) {
        CHECK(s.tracked(slot) == 1);
        handed.push_back(slot);
    });
    CHECK(handed.size() == 16);
    for (std::size_t slot : handed) {
        CHECK(s.slot(slot).plane == 6);
        CHECK(s.tracked(slot) == 0);
    }
    // The rnl policy follows plans as planned does.
    PathSet r;
    r.init(PathPolicy::rnl, 8, 128, 16, 16, 0x1001, 16, rng, plan);
    for (std::size_t i = 0; i < r.size(); ++i) CHECK(r.group_of(r.slot(i).ev) == 3);
    r.replan(moved, rng);
    for (std::size_t i = 0; i < r.size(); ++i) CHECK(r.group_of(r.slot(i).ev) == (r.slot(i).plane == 6 ? 11 : r.slot(i).plane == 2 ? 9 : 3));
    // Another policy ignores a plan.
    PathSet a = make(PathPolicy::adaptive, 8, 128, 16);
    const std::uint32_t ev0 = a.slot(0).ev;
    a.replan(next, rng);
    CHECK(a.slot(0).ev == ev0);
}

TEST_CASE("PathSet::reps_choose__explores_until_an_ev_comes_back_clean_then_recycles_it", "[core]") {
    Rng rng(7);
    PathSet s = make(PathPolicy::reps, 2, 8);
    // Nothing acknowledged yet: every packet explores a fresh EV of the rotation's plane.
    std::set<std::uint32_t> seen;
    for (int k = 0; k < 8; ++k) {
        const int slot = s.reps_choose(s.select(0x3, rng), 0, rng, {});
        REQUIRE(slot >= 0);
        CHECK(ev_plane(s.slot(static_cast<std::size_t>(slot)).ev) == s.slot(static_cast<std::size_t>(slot)).plane);
        seen.insert(s.slot(static_cast<std::size_t>(slot)).ev);
    }
    CHECK(s.reps_explored() == 8);
    CHECK(seen.size() == 8);
    // One EV of plane 0 comes back clean, one marked: only the clean one is used again.
    std::uint32_t clean = 0, marked = 0;
    for (std::uint32_t ev : seen) {
        if (ev_plane(ev) != 0) continue;
        if (clean == 0) clean = ev;
        else if (marked == 0) marked = ev;
    }
    s.reps_ack(clean, false);
    s.reps_ack(marked, true);
    bool recycled = false;
    for (int k = 0; k < 2 && !recycled; ++k) {  // the rotation alternates planes
        const int slot = s.reps_choose(s.select(0x3, rng), 0, rng, {});
        recycled = s.slot(static_cast<std::size_t>(slot)).ev == clean;
        CHECK(s.slot(static_cast<std::size_t>(slot)).ev != marked);
    }
    CHECK(recycled);
    CHECK(s.reps_recycled() == 1);
    // Used up: the next packet of plane 0 explores again.
    const std::uint64_t explored = s.reps_explored();
    for (int k = 0; k < 2; ++k) (void)s.reps_choose(s.select(0x3, rng), 0, rng, {});
    CHECK(s.reps_explored() == explored + 2);
}

TEST_CASE("PathSet::reps_freeze__cycles_the_clean_evs_and_explores_none_while_frozen", "[core]") {
    Rng rng(9);
    PathSet s = make(PathPolicy::reps, 1, 8);
    std::vector<std::uint32_t> good;
    for (int k = 0; k < 3; ++k) {
        const int slot = s.reps_choose(s.select(0x1, rng), 0, rng, {});
        good.push_back(s.slot(static_cast<std::size_t>(slot)).ev);
    }
    for (std::uint32_t ev : good) s.reps_ack(ev, false);
    s.reps_freeze(1'000);
    CHECK(s.reps_freezes() == 1);
    const std::uint64_t explored = s.reps_explored();
    std::map<std::uint32_t, int> uses;
    for (int k = 0; k < 30; ++k) ++uses[s.slot(static_cast<std::size_t>(s.reps_choose(s.select(0x1, rng), 500, rng, {}))).ev];
    CHECK(s.reps_explored() == explored);  // frozen: nothing new
    REQUIRE(uses.size() == 3);
    for (std::uint32_t ev : good) CHECK(uses[ev] == 10);  // cycled evenly
    // Thawed: each clean EV is used once more, then exploration resumes.
    for (int k = 0; k < 4; ++k) (void)s.reps_choose(s.select(0x1, rng), 2'000, rng, {});
    CHECK(s.reps_explored() == explored + 1);
}

TEST_CASE("PathSet::reps_choose__a_slot_already_holding_the_ev_carries_the_packet", "[core]") {
    Rng rng(11);
    PathSet s = make(PathPolicy::reps, 1, 4);
    const int first = s.reps_choose(s.select(0x1, rng), 0, rng, {});
    const std::uint32_t ev = s.slot(static_cast<std::size_t>(first)).ev;
    s.reps_ack(ev, false);
    int resets = 0;
    const int again = s.reps_choose(s.select(0x1, rng), 0, rng, [&](std::size_t) { ++resets; });
    CHECK(again == first);  // the EV's own slot, whatever the rotation chose
    CHECK(resets == 0);
}
