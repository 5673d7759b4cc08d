// SPDX-License-Identifier: BSD-3-Clause
// Dcqcn (lib/core/cc_dcqcn.cpp): the reaction point's rules on synthetic
// SACKs in virtual time.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/cc_dcqcn.hpp"

using namespace omrc::core;

namespace {
// One plane of 100 Gb/s, 10 µs base RTT: line rate 100 Gb/s, window at line
// rate 125,000 bytes.
CcConfig cfg() {
    CcConfig c;
    c.algorithm = CcAlgorithm::dcqcn;
    c.base_rtt_ns = 10'000;
    c.link_rate_bps = 100'000'000'000;
    return c;
}
constexpr double kLine = 100e9;
constexpr std::uint32_t kMtu = 4096;

AckSample ack(TimeNs now, bool ecn = false, std::uint64_t bytes = kMtu) {
    AckSample a;
    a.acked_bytes = bytes;
    a.ecn = ecn;
    a.now = now;
    return a;
}
}  // namespace

TEST_CASE("Dcqcn::init__line_rate_and_window_is_rate_times_rtt", "[unit][core]") {
    Dcqcn d(cfg(), 1, kMtu);
    CHECK(d.rate_bps() == kLine);
    CHECK(d.alpha() == 1.0);
    CHECK(d.window_bytes() == 125'000);
    // Planes multiply the line rate; the ACK hold lengthens the window's time.
    Dcqcn d8(cfg(), 8, kMtu, 5'000);
    CHECK(d8.line_rate_bps() == 8 * kLine);
    CHECK(d8.window_bytes() == 1'500'000);  // 800 Gb/s × 15 µs
    CHECK(dynamic_cast<Dcqcn*>(make_cc(cfg(), 1, kMtu).get()) != nullptr);
}

TEST_CASE("Dcqcn::on_ack__cnp_cuts_by_alpha_over_two", "[unit][core]") {
    Dcqcn d(cfg(), 1, kMtu);
    d.on_ack(ack(1'000));            // starts the timers
    d.on_ack(ack(2'000, true));      // alpha = 1: half
    CHECK(d.rate_bps() == kLine / 2);
    CHECK(d.target_rate_bps() == kLine);
    CHECK(d.alpha() == Approx(1.0));  // (1 − g) · 1 + g
    CHECK(d.window_bytes() == 62'500);
    // The next cut, a CNP interval later, uses the alpha of then.
    d.on_ack(ack(2'000 + 50'000, true));
    CHECK(d.target_rate_bps() == kLine / 2);
    CHECK(d.rate_bps() == Approx(kLine / 4));
}

TEST_CASE("Dcqcn::on_ack__one_cut_per_cnp_interval", "[unit][core]") {
    Dcqcn d(cfg(), 1, kMtu);
    d.on_ack(ack(1'000, true));
    const double r = d.rate_bps();
    for (TimeNs t = 2'000; t < 51'000; t += 1'000) d.on_ack(ack(t, true));
    CHECK(d.rate_bps() == r);
    d.on_ack(ack(51'000, true));
    CHECK(d.rate_bps() < r);
    // Trims and losses are notifications under the same spacing.
    const double r2 = d.rate_bps();
    d.on_trim(52'000);
    d.on_loss(53'000);
    CHECK(d.rate_bps() == r2);
    d.on_trim(101'000);
    CHECK(d.rate_bps() < r2);
}

TEST_CASE("Dcqcn::advance__alpha_decays_per_period_without_cnp", "[unit][core]") {
    CcConfig c = cfg();
    c.dcqcn.g = 1.0 / 16;  // large enough to see
    Dcqcn d(c, 1, kMtu);
    d.on_ack(ack(0, true));                 // alpha: (15/16)·1 + 1/16 = 1
    CHECK(d.alpha() == Approx(1.0));
    d.on_ack(ack(54'999));                  // not a whole period yet
    CHECK(d.alpha() == Approx(1.0));
    d.on_ack(ack(55'000));                  // one period
    CHECK(d.alpha() == Approx(15.0 / 16));
    d.on_ack(ack(55'000 * 4 + 10));         // three more, caught up at once
    CHECK(d.alpha() == Approx(std::pow(15.0 / 16, 4)));
    // A CNP raises it again.
    const double a = d.alpha();
    d.on_ack(ack(270'000, true));           // before the fifth period ends (275 µs)
    CHECK(d.alpha() == Approx((15.0 / 16) * a + 1.0 / 16));
}

TEST_CASE("Dcqcn::increase__fast_recovery_converges_to_target", "[unit][core]") {
    CcConfig c = cfg();
    c.dcqcn.byte_counter_bytes = 1ull << 40;  // timer events only
    Dcqcn d(c, 1, kMtu);
    d.on_ack(ack(0, true));
    REQUIRE(d.rate_bps() == kLine / 2);
    // Each timer period halves the distance to RT = line rate (the first F = 5 events).
    double expect = kLine / 2;
    for (int stage = 1; stage <= 4; ++stage) {
        d.on_ack(ack(static_cast<TimeNs>(stage) * 55'000, false, 0));
        expect = (expect + kLine) / 2;
        CHECK(d.timer_stage() == static_cast<std::uint32_t>(stage));
        CHECK(d.rate_bps() == Approx(expect));
        CHECK(d.target_rate_bps() == kLine);
    }
    CHECK(kLine - d.rate_bps() == Approx(kLine / 32));
}

TEST_CASE("Dcqcn::increase__additive_then_hyper", "[unit][core]") {
    CcConfig c = cfg();
    c.dcqcn.byte_counter_bytes = 100'000;
    c.dcqcn.fast_recovery_stages = 2;
    c.dcqcn.ai_ratio = 0.01;    // 1 Gb/s
    c.dcqcn.hai_ratio = 0.05;   // 5 Gb/s
    Dcqcn d(c, 1, kMtu);
    d.on_ack(ack(0, true));
    d.on_ack(ack(1'000, true));  // inside the interval: no second cut
    d.on_ack(ack(50'000, true)); // second cut: RT = 50 G, RC = 25 G
    REQUIRE(d.target_rate_bps() == Approx(kLine / 2));
    // Byte counter only (no timer period elapses): stages 1, 2 of fast recovery keep RT.
    d.on_ack(ack(51'000, false, 100'000));
    d.on_ack(ack(52'000, false, 100'000));
    CHECK(d.byte_stage() == 2);
    CHECK(d.target_rate_bps() == Approx(kLine / 2));
    // BC = 3 > F but T = 0 ≤ F: additive increase, RT += 1 G.
    d.on_ack(ack(53'000, false, 100'000));
    CHECK(d.target_rate_bps() == Approx(kLine / 2 + 1e9));
    // Three timer periods: T = 3 > F and BC = 3 > F: hyper, growing steps
    // (T = 1, 2 are additive while T ≤ F; T = 3: RHAI · (3 − 2)).
    d.on_ack(ack(50'000 + 3 * 55'000, false, 0));
    CHECK(d.timer_stage() == 3);
    CHECK(d.target_rate_bps() == Approx(kLine / 2 + 3e9 + 5e9));
    // A fourth byte event: min(T, BC) = 3 still: another RHAI · 1.
    d.on_ack(ack(50'000 + 3 * 55'000 + 1, false, 100'000));
    CHECK(d.target_rate_bps() == Approx(kLine / 2 + 3e9 + 10e9));
    // Byte counter and timer both at 4: RHAI · 2.
    d.on_ack(ack(50'000 + 4 * 55'000, false, 100'000));
    CHECK(d.target_rate_bps() == Approx(kLine / 2 + 3e9 + 10e9 + 10e9 + 10e9));
}

TEST_CASE("Dcqcn::bounds__rate_between_one_mtu_window_and_line_rate", "[unit][core]") {
    CcConfig c = cfg();
    c.dcqcn.cnp_interval_ns = 0;
    Dcqcn d(c, 1, kMtu);
    for (TimeNs t = 0; t < 2'000; ++t) d.on_loss(t);
    CHECK(d.window_bytes() == kMtu);
    CHECK(d.rate_bps() == Approx(kMtu * 8e9 / 10'000));
    // A long silence recovers to the line rate, not beyond.
    d.on_ack(ack(1'000'000'000));
    CHECK(d.rate_bps() <= kLine);
    CHECK(d.rate_bps() == Approx(kLine));
    CHECK(d.window_bytes() <= 125'000);
}
