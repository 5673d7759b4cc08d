// SPDX-License-Identifier: BSD-3-Clause
// RttEstimator (lib/core/rtt_estimator.cpp): the samples' three statistics
// and the windows and timeout derived from them. Cases in the order of the
// functions, named Function__case.
#include <catch2/catch.hpp>

#include "core/rtt_estimator.hpp"

using namespace omrc::core;

namespace {
constexpr TimeNs kInitial = 200'000;  // EngineConfig::ev_timeout_ns
constexpr TimeNs kFloor = 20'000;     // EngineConfig::min_ev_timeout_ns
}  // namespace

TEST_CASE("RttStats::add__min_slow_max_and_recent_max", "[unit][core]") {
    RttStats s;
    CHECK_FALSE(s.sampled());
    s.add(10'000);
    CHECK(s.sampled());
    CHECK(s.min_ns == 10'000);
    CHECK(s.max_ns == 10'000);
    CHECK(s.recent_max_ns == 10'000);
    s.add(74'000);  // a new maximum is taken at once
    CHECK(s.max_ns == 74'000);
    CHECK(s.recent_max_ns == 74'000);
    s.add(10'000);  // and forgotten 1/1024 (slow) and 1/64 (recent) of the excess a sample
    CHECK(s.min_ns == 10'000);
    CHECK(s.max_ns == 74'000 - 64'000 / kRttMaxForget);
    CHECK(s.recent_max_ns == 74'000 - 64'000 / kRttRecentMaxForget);
    CHECK(s.slack_ns() == 10'000 / 4 + kReorderSlackNs);
}

TEST_CASE("RttEstimator::add__the_plane_and_the_qp", "[unit][core]") {
    RttEstimator r;
    r.add(3, 12'000);
    r.add(5, 8'000);
    CHECK(r.planes_sampled() == ((1u << 3) | (1u << 5)));
    CHECK(r.plane(3).min_ns == 12'000);
    CHECK(r.plane(5).max_ns == 8'000);
    CHECK_FALSE(r.plane(0).sampled());
    CHECK(r.all().min_ns == 8'000);
    CHECK(r.all().max_ns == 12'000 - 4'000 / kRttMaxForget);  // the second sample forgot some
}

TEST_CASE("RttEstimator::reorder_window__spread_plus_slack_or_a_quarter_of_the_initial_timeout", "[unit][core]") {
    RttEstimator r;
    CHECK(r.reorder_window(kInitial) == kInitial / 4);
    r.add(0, 10'000);
    r.add(1, 30'000);
    CHECK(r.reorder_window(kInitial) == 20'000 + 10'000 / 4 + kReorderSlackNs);
}

TEST_CASE("RttEstimator::send_order_window__per_plane_recent_or_slow_maximum", "[unit][core]") {
    RttEstimator r;
    r.add(0, 10'000);
    r.add(0, 74'000);
    r.add(0, 10'000);
    const RttStats& p = r.plane(0);
    CHECK(r.send_order_window(0, true, kInitial) == (p.recent_max_ns - p.min_ns) + p.slack_ns());
    CHECK(r.send_order_window(0, false, kInitial) == (p.max_ns - p.min_ns) + p.slack_ns());
    CHECK(r.send_order_window(0, false, kInitial) > r.send_order_window(0, true, kInitial));
    // A plane without a sample: the QP-wide window.
    CHECK(r.send_order_window(1, true, kInitial) == r.reorder_window(kInitial));
}

TEST_CASE("RttEstimator::ev_timeout__measured_with_a_floor_initial_until_every_plane_answers", "[unit][core]") {
    RttEstimator r;
    CHECK(r.ev_timeout(kInitial, kFloor, 0b11) == kInitial);
    r.add(0, 4'000);
    // Plane 1 is usable and has not answered: at least the initial timeout.
    CHECK(r.ev_timeout(kInitial, kFloor, 0b11) == kInitial);
    // Plane 0 alone: 2 · 4 µs + 2 µs reorder window is below the floor.
    CHECK(r.ev_timeout(kInitial, kFloor, 0b01) == kFloor);
    r.add(1, 40'000);
    const TimeNs measured = 2 * 40'000 + r.reorder_window(kInitial);
    CHECK(r.ev_timeout(kInitial, kFloor, 0b11) == measured);
}

TEST_CASE("RttEstimator::overtaken__sent_more_than_the_plane_s_slowest_round_trip_earlier", "[unit][core]") {
    RttEstimator r;
    CHECK_FALSE(r.overtaken(0, 1'000, 1'000'000));  // no sample: no bound on the one-way delay
    r.add(0, 10'000);
    const TimeNs bound = 10'000 + r.all().slack_ns();
    CHECK_FALSE(r.overtaken(0, 100'000, 100'000 + bound));
    CHECK(r.overtaken(0, 100'000, 100'000 + bound + 1));
    CHECK_FALSE(r.overtaken(0, 100'000, 0));  // no delivered packet to compare with
}

TEST_CASE("RttEstimator::silent__no_acknowledgement_for_the_slowest_round_trip", "[unit][core]") {
    RttEstimator r;
    CHECK_FALSE(r.silent(0, 0, 1'000'000));  // no sample: never judged
    r.add(0, 10'000);
    CHECK_FALSE(r.silent(0, 500'000, 510'000));
    CHECK(r.silent(0, 500'000, 510'001));
}
