// SPDX-License-Identifier: BSD-3-Clause
// Nscc (lib/core/cc_nscc.cpp): the four cases and the quick adapt on
// synthetic SACKs in virtual time.
#include <catch2/catch.hpp>

#include "core/cc_nscc.hpp"

using namespace omrc::core;

namespace {
CcConfig cfg() {
    CcConfig c;
    c.base_rtt_ns = 10'000;
    c.link_rate_bps = 100'000'000'000;
    return c;
}
constexpr double kBdp8 = 100e9 / 8 * 8 * 10e-6;  // 8 planes × 100G × 10 µs = 1 MB
}  // namespace

TEST_CASE("Nscc::init__max_window_is_1_5_bdp", "[unit][core]") {
    Nscc n(cfg(), 8, 4096);
    CHECK(n.window_bytes() == static_cast<std::uint64_t>(1.5 * kBdp8));
}

TEST_CASE("Nscc::on_ack__ecn_over_target_decreases_once_per_rtt", "[unit][core]") {
    Nscc n(cfg(), 8, 4096);
    const auto w0 = n.window_bytes();
    n.on_ack({4096, 30'000, true, 100'000});  // delay 20 µs ≥ target 7.5 µs
    const auto w1 = n.window_bytes();
    CHECK(w1 < w0);
    n.on_ack({4096, 30'000, true, 101'000});  // same base RTT: no second cut
    CHECK(n.window_bytes() == w1);
    n.on_ack({4096, 30'000, true, 111'000});
    CHECK(n.window_bytes() < w1);
}

TEST_CASE("Nscc::on_ack__ecn_below_target_holds", "[unit][core]") {
    Nscc n(cfg(), 8, 4096);
    n.on_ack({4096, 30'000, true, 100'000});
    const auto w = n.window_bytes();
    n.on_ack({4096, 12'000, true, 200'000});  // delay 2 µs < target
    CHECK(n.window_bytes() == w);
}

TEST_CASE("Nscc::on_ack__increase_without_ecn", "[unit][core]") {
    Nscc n(cfg(), 8, 4096);
    n.on_ack({4096, 30'000, true, 100'000});
    const auto w = n.window_bytes();
    n.on_ack({4096, 11'000, false, 200'000});  // proportional increase
    const auto w2 = n.window_bytes();
    CHECK(w2 > w);
    n.on_ack({4096, 40'000, false, 300'000});  // fair increase: smaller step
    CHECK(n.window_bytes() > w2);
    CHECK(n.window_bytes() - w2 < w2 - w);
}

TEST_CASE("Nscc::on_ack__no_rtt_sample_is_a_fair_increase_not_a_proportional_one", "[unit][core]") {
    // A SACK that echoes no timestamp (a sweep's follow-up reporting old
    // arrivals late) says nothing of the delay now: the window grows as
    // over target (one MTU per window), not as far below it.
    Nscc a(cfg(), 8, 4096), b(cfg(), 8, 4096);
    a.on_ack({4096, 30'000, true, 100'000});
    b.on_ack({4096, 30'000, true, 100'000});
    const auto w = a.window_bytes();
    a.on_ack({65536, 0, false, 200'000});       // no RTT sample
    b.on_ack({65536, 40'000, false, 200'000});  // over target
    CHECK(a.window_bytes() == b.window_bytes());
    CHECK(a.window_bytes() - w < 4096);
}

TEST_CASE("Nscc::on_trim__quick_adapt_to_delivered_bytes", "[unit][core]") {
    Nscc n(cfg(), 8, 4096);
    for (int i = 0; i < 10; ++i) n.on_ack({4096, 10'000, false, 100'000 + static_cast<std::uint64_t>(i) * 100});
    n.on_trim(105'000);
    CHECK(n.window_bytes() == 40960);  // what was delivered this RTT
    n.on_trim(106'000);                // at most once per RTT
    CHECK(n.window_bytes() == 40960);
    n.on_loss(200'000);
    CHECK(n.window_bytes() >= 4096);
}
