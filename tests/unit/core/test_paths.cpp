// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "core/paths.hpp"
#include "routing/fabric.hpp"

using namespace omrc::core;

namespace {
PathSet make(PathPolicy p, std::uint32_t planes = 8, std::uint32_t evs = 128) {
    Rng rng(1);
    PathSet s;
    s.init(p, planes, evs, 16, 16, 0x1001, rng);
    return s;
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
        CHECK(omrc::routing::ev_plane(s.slot(i).ev) == s.slot(i).plane);
    }
    CHECK(per_plane.size() == 8);
    for (auto [p, n] : per_plane) CHECK(n == 16);
    CHECK(evs.size() == 128);
    CHECK(s.backups() == 16);
    // 100 EVs over 8 planes round up to 13 per plane.
    CHECK(make(PathPolicy::spray, 8, 100).size() == 104);
}

TEST_CASE("PathSet::select__spray_rotates_and_avoids_down_planes", "[unit][core]") {
    PathSet s = make(PathPolicy::spray);
    std::map<int, int> uses;
    for (int i = 0; i < 112 * 4; ++i) ++uses[s.select(0xFF & ~(1u << 2))];
    for (auto [slot, n] : uses) {
        CHECK(s.slot(static_cast<std::size_t>(slot)).plane != 2);
        CHECK(n == 4);
    }
    CHECK(uses.size() == 112);
    CHECK(s.select(0) == -1);
}

TEST_CASE("PathSet::select__ecmp_sticks_to_one_ev", "[unit][core]") {
    PathSet s = make(PathPolicy::ecmp);
    const int first = s.select(0xFF);
    for (int i = 0; i < 100; ++i) CHECK(s.select(0xFF) == first);
    const auto plane = s.slot(static_cast<std::size_t>(first)).plane;
    const int failover = s.select(0xFF & ~(1u << plane));
    CHECK(failover != first);
    CHECK(s.retire(static_cast<std::size_t>(first), 0, *std::make_unique<Rng>(2)) == false);
}

TEST_CASE("PathSet::mark_skip__skips_one_rotation_only", "[unit][core]") {
    PathSet s = make(PathPolicy::adaptive, 2, 4);
    const int a = s.select(3);
    s.mark_skip(static_cast<std::size_t>(a));
    std::vector<int> seq;
    for (int i = 0; i < 8; ++i) seq.push_back(s.select(3));
    // Skipped for the rest of this rotation, then back.
    CHECK(std::count(seq.begin(), seq.begin() + 3, a) == 0);
    CHECK(std::count(seq.begin() + 3, seq.end(), a) >= 1);
}

TEST_CASE("PathSet::retire__replaces_from_same_plane_and_probes_back", "[unit][core]") {
    Rng rng(3);
    PathSet s = make(PathPolicy::adaptive);
    const std::uint32_t old_ev = s.slot(5).ev;
    const std::uint8_t plane = s.slot(5).plane;
    REQUIRE(s.retire(5, 1000, rng));
    CHECK(s.slot(5).ev != old_ev);
    CHECK(s.slot(5).plane == plane);
    CHECK(omrc::routing::ev_plane(s.slot(5).ev) == plane);
    CHECK(s.backups() == 15);
    REQUIRE(s.bad().size() == 1);
    BadEv* b = s.probe_due(1000);
    REQUIRE(b != nullptr);
    CHECK(b->ev == old_ev);
    for (int i = 0; i < 3; ++i) {
        b = s.probe_due(1000 + static_cast<std::uint64_t>(i));
        REQUIRE(b != nullptr);
        b->probe_id = 0x100u + static_cast<std::uint32_t>(i);
        const bool restored = s.on_probe_answer(old_ev, b->probe_id, 3, rng);
        CHECK(restored == (i == 2));
    }
    CHECK(s.bad().empty());
    CHECK(s.backups() == 16);
    CHECK(s.restorations() == 1);
}

TEST_CASE("PathSet::on_probe_answer__wrong_id_or_timeout_resets", "[unit][core]") {
    Rng rng(4);
    PathSet s = make(PathPolicy::adaptive);
    const std::uint32_t ev = s.slot(0).ev;
    s.retire(0, 0, rng);
    BadEv* b = s.probe_due(0);
    b->probe_id = 7;
    b->probe_sent_ns = 0;
    CHECK_FALSE(s.on_probe_answer(ev, 8, 1, rng));  // not the outstanding probe
    s.expire_probes(1000, 500);
    CHECK(s.bad().front().probe_id == 0);
    CHECK(s.bad().front().successes == 0);
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
    Rng rng(5);
    PathSet s = make(PathPolicy::adaptive);
    const std::uint32_t ev = s.slot(9).ev;
    CHECK(s.deny(ev, rng));
    for (std::size_t i = 0; i < s.size(); ++i) CHECK(s.slot(i).ev != ev);
    CHECK_FALSE(s.deny(ev, rng));
}

TEST_CASE("PathSet::retire__a_failed_plane_is_parked_and_a_probe_answer_brings_it_back", "[unit][core]") {
    Rng rng(6);
    PathSet s = make(PathPolicy::adaptive, 2, 4);  // slots 0, 2 on plane 0; 1, 3 on plane 1
    REQUIRE(s.slot(0).plane == 0);
    REQUIRE(s.slot(2).plane == 0);
    // A plane's worth of retirements in a row with no acknowledgement on the plane.
    REQUIRE(s.retire(0, 0, rng));
    CHECK(s.parked() == 0);  // first one: replaced by a fresh EV
    REQUIRE(s.retire(2, 0, rng));
    CHECK(s.slot(2).parked);
    REQUIRE(s.retire(0, 0, rng));
    CHECK(s.parked() == 2);
    for (int i = 0; i < 16; ++i) CHECK(s.slot(static_cast<std::size_t>(s.select(3))).plane == 1);
    // An acknowledgement on the plane resets the run; a probe answer unparks it.
    BadEv* b = s.probe_due(0);
    REQUIRE(b != nullptr);
    REQUIRE(b->plane == 0);
    b->probe_id = 0x77;
    const std::uint32_t probed = b->ev;
    (void)s.on_probe_answer(probed, 0x77, 3, rng);
    CHECK(s.parked() == 0);
    CHECK(omrc::routing::ev_plane(s.slot(0).ev) == 0);
    CHECK(omrc::routing::ev_plane(s.slot(2).ev) == 0);
}

TEST_CASE("PathSet::expire_probes__unanswered_probes_back_off_to_the_cap", "[unit][core]") {
    Rng rng(7);
    PathSet s = make(PathPolicy::adaptive);
    s.set_probe_intervals(50'000, 400'000);
    s.retire(0, 0, rng);
    TimeNs now = 0;
    std::vector<TimeNs> gaps;
    for (int i = 0; i < 6; ++i) {
        BadEv* b = s.probe_due(now);
        if (b == nullptr) {
            now = s.next_probe_ns();
            b = s.probe_due(now);
        }
        REQUIRE(b != nullptr);
        b->probe_id = 1;
        b->probe_sent_ns = now;
        s.expire_probes(now + 1'000, 1'000);  // never answered
        gaps.push_back(s.bad().front().next_probe_ns - now);
    }
    CHECK(gaps == std::vector<TimeNs>{100'000, 200'000, 400'000, 400'000, 400'000, 400'000});
}
