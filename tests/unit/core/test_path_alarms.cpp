// SPDX-License-Identifier: BSD-3-Clause
// PathAlarms (lib/core/path_alarms.cpp): alarms by destination T0 and their
// hold, the escalation to every destination, the ring, the peers told.
// Cases in the order of the functions, named Function__case.
#include <catch2/catch.hpp>

#include <utility>
#include <vector>

#include "core/path_alarms.hpp"

using namespace omrc::core;

namespace {
constexpr TimeNs kHold = 50'000;

/// The (plane, group) pairs `since` reports.
std::vector<std::pair<int, int>> seen(const PathAlarms& a, std::uint64_t from, std::uint32_t dst_t0, TimeNs now) {
    std::vector<std::pair<int, int>> out;
    a.since(from, dst_t0, now, [&](std::uint8_t p, std::uint16_t g) { out.emplace_back(p, g); });
    return out;
}
}  // namespace

TEST_CASE("PathAlarms::raise_for__for_its_destination_while_it_stands", "[unit][core]") {
    PathAlarms a(kHold);
    CHECK(a.seq() == 0);
    a.raise_for(2, 7, /*dst_t0=*/4, 1'000);
    CHECK(a.seq() == 1);
    CHECK(seen(a, 0, 4, 1'000) == std::vector<std::pair<int, int>>{{2, 7}});
    CHECK(seen(a, 0, 5, 1'000).empty());          // another destination
    CHECK(seen(a, 1, 4, 1'000).empty());          // already applied
    CHECK(seen(a, 0, 4, 1'000 + kHold).size() == 1);
    CHECK(seen(a, 0, 4, 1'000 + kHold + 1).empty());  // expired
}

TEST_CASE("PathAlarms::raise_for__a_second_destination_makes_it_every_destination", "[unit][core]") {
    PathAlarms a(kHold);
    a.raise_for(1, 3, 4, 1'000);
    a.raise_for(1, 3, 9, 2'000);  // the same (plane, T1) toward another T0: the T1 or our uplink
    CHECK(seen(a, 1, 5, 2'000) == std::vector<std::pair<int, int>>{{1, 3}});
    a.raise_for(1, 4, 9, 3'000);  // another group: for its destination only
    CHECK(seen(a, 2, 5, 3'000).empty());
    // Beyond the hold the first no longer counts.
    PathAlarms b(kHold);
    b.raise_for(1, 3, 4, 1'000);
    b.raise_for(1, 3, 9, 1'000 + kHold + 1);
    CHECK(seen(b, 1, 5, 1'000 + kHold + 1).empty());
}

TEST_CASE("PathAlarms::raise__as_given", "[unit][core]") {
    PathAlarms a(kHold);
    a.raise(0, 2, PathAlarms::kAnyT0, 10);  // a peer's alarm
    CHECK(seen(a, 0, 123, 10).size() == 1);
}

TEST_CASE("PathAlarms::since__the_ring_keeps_the_newest", "[unit][core]") {
    PathAlarms a(kHold);
    for (std::uint16_t g = 0; g < PathAlarms::kAlarms + 6; ++g) a.raise(0, g, 1, 100);
    const auto all = seen(a, 0, 1, 100);
    REQUIRE(all.size() == PathAlarms::kAlarms);
    CHECK(all.front().second == 6);
    CHECK(all.back().second == static_cast<int>(PathAlarms::kAlarms + 5));
}

TEST_CASE("PathAlarms::told__once_per_peer_plane_and_group_within_the_hold", "[unit][core]") {
    PathAlarms a(kHold);
    CHECK_FALSE(a.told(7, 1, 3, 1'000));
    a.note_told(7, 1, 3, 1'000);
    CHECK(a.told(7, 1, 3, 1'000 + kHold));
    CHECK_FALSE(a.told(7, 1, 3, 1'000 + kHold + 1));
    CHECK_FALSE(a.told(8, 1, 3, 1'000));
    CHECK_FALSE(a.told(7, 2, 3, 1'000));
    CHECK_FALSE(a.told(7, 1, 4, 1'000));
    // The oldest telling is forgotten beyond kTold.
    for (std::uint32_t peer = 100; peer < 100 + PathAlarms::kTold; ++peer) a.note_told(peer, 0, 0, 2'000);
    CHECK_FALSE(a.told(7, 1, 3, 2'000));
}
