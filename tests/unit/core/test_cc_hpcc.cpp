// SPDX-License-Identifier: BSD-3-Clause
// Hpcc (lib/core/cc_hpcc.cpp) on synthetic INT records in virtual time.
#include <catch2/catch.hpp>

#include "core/cc_hpcc.hpp"

using namespace omrc::core;
using omrc::wire::IntStack;

namespace {
// One plane of 100 Gb/s (12.5 GB/s), 10 µs base RTT: initial window 125,000 B,
// W_AI = 0.0025 · 125,000 = 312.5 B.
CcConfig cfg() {
    CcConfig c;
    c.algorithm = CcAlgorithm::hpcc;
    c.base_rtt_ns = 10'000;
    c.link_rate_bps = 100'000'000'000;
    return c;
}
constexpr double kWinit = 125'000;
constexpr double kWai = 312.5;

/// One egress's record: `port`, its queue, its cumulative tx bytes, at `ts_ns`.
IntStack hop(std::uint32_t port, std::uint32_t qlen, std::uint64_t tx, std::uint64_t ts_ns) {
    IntStack s;
    s.hops = 1;
    s.hop[0] = {port, qlen, tx, ts_ns, 100'000'000'000};
    return s;
}

AckSample ack(const IntStack& s, TimeNs now) {
    AckSample a;
    a.acked_bytes = 4096;
    a.now = now;
    a.telemetry = &s;
    return a;
}

/// An egress that has sent at `util` × line rate since `tx` at `ts`, `dt_ns` later.
struct Egress {
    std::uint32_t port = 7;
    std::uint64_t tx = 1'000'000;
    std::uint64_t ts = 100'000;
    IntStack next(double util, std::uint32_t qlen, std::uint64_t dt_ns) {
        tx += static_cast<std::uint64_t>(util * 12.5 * static_cast<double>(dt_ns));  // 12.5 B/ns at 100G
        ts += dt_ns;
        return hop(port, qlen, tx, ts);
    }
};
}  // namespace

TEST_CASE("Hpcc::init__window_is_line_rate_times_rtt", "[unit][core]") {
    Hpcc h(cfg(), 1, 4096);
    CHECK(h.window_bytes() == 125'000);
    CHECK(dynamic_cast<Hpcc*>(make_cc(cfg(), 1, 4096).get()) != nullptr);
    Hpcc h8(cfg(), 8, 4096, 5'000);
    CHECK(h8.window_bytes() == 1'500'000);  // 800 Gb/s × 15 µs
}

TEST_CASE("Hpcc::on_ack__holds_without_telemetry_or_a_second_record", "[unit][core]") {
    Hpcc h(cfg(), 1, 4096);
    AckSample plain;
    plain.acked_bytes = 4096;
    plain.now = 1'000;
    h.on_ack(plain);
    CHECK(h.window_bytes() == 125'000);
    Egress e;
    const IntStack first = e.next(1.0, 500'000, 0);
    h.on_ack(ack(first, 2'000));  // the first record of an egress: nothing to compare
    CHECK(h.window_bytes() == 125'000);
    // A record of another egress does not pair with it.
    const IntStack other = hop(8, 500'000, 9'000'000, 120'000);
    h.on_ack(ack(other, 3'000));
    CHECK(h.window_bytes() == 125'000);
    h.on_trim(4'000);
    h.on_loss(5'000);
    CHECK(h.window_bytes() == 125'000);
}

TEST_CASE("Hpcc::on_ack__utilisation_queue_plus_rate_and_multiplicative_cut", "[unit][core]") {
    Hpcc h(cfg(), 1, 4096);
    Egress e;
    h.on_ack(ack(e.next(1.0, 62'500, 0), 100'000));
    // One base RTT later at line rate with ≥ 62,500 B queued both times:
    // U = 62,500 / (12.5 GB/s · 10 µs) + 1 = 1.5 (τ = T: the sample alone).
    h.on_ack(ack(e.next(1.0, 70'000, 10'000), 110'000));
    CHECK(h.utilisation() == Approx(1.5));
    CHECK(static_cast<double>(h.window_bytes()) == Approx(kWinit * 0.95 / 1.5 + kWai).margin(1));
    CHECK(h.reference_window_bytes() == Approx(kWinit * 0.95 / 1.5 + kWai));
    // Half an RTT later, line rate and no queue: u = 1, U = ½ · 1.5 + ½ · 1 = 1.25.
    h.on_ack(ack(e.next(1.0, 0, 5'000), 115'000));
    CHECK(h.utilisation() == Approx(1.25));
}

TEST_CASE("Hpcc::on_ack__additive_below_eta_reference_once_per_rtt_then_multiplicative", "[unit][core]") {
    Hpcc h(cfg(), 1, 4096);
    Egress e;
    h.on_ack(ack(e.next(1.0, 62'500, 0), 100'000));
    h.on_ack(ack(e.next(1.0, 62'500, 10'000), 110'000));  // U = 1.5: cut, reference set
    const double wc0 = h.reference_window_bytes();
    // Half the line rate, no queue: U = 0.5 < η. Additive, the reference
    // moves once per base RTT.
    h.on_ack(ack(e.next(0.5, 0, 10'000), 120'000));
    CHECK(h.utilisation() == Approx(0.5));
    CHECK(h.stage() == 1);
    CHECK(h.reference_window_bytes() == Approx(wc0 + kWai));
    h.on_ack(ack(e.next(0.5, 0, 5'000), 125'000));  // same RTT: W = Wc + W_AI, Wc kept
    CHECK(h.reference_window_bytes() == Approx(wc0 + kWai));
    CHECK(static_cast<double>(h.window_bytes()) == Approx(wc0 + 2 * kWai).margin(1));
    CHECK(h.stage() == 1);
    for (TimeNs t = 135'000; t <= 165'000; t += 10'000) h.on_ack(ack(e.next(0.5, 0, 10'000), t));
    CHECK(h.stage() == 5);
    const double wc5 = h.reference_window_bytes();
    CHECK(wc5 == Approx(wc0 + 5 * kWai));
    // After max_stage additive rounds: multiplicative, W = Wc · η / U + W_AI.
    h.on_ack(ack(e.next(0.5, 0, 10'000), 175'000));
    CHECK(h.stage() == 0);
    CHECK(static_cast<double>(h.window_bytes()) == Approx(std::min(kWinit, wc5 * 0.95 / 0.5 + kWai)).margin(1));
}

TEST_CASE("Hpcc::bounds__one_mtu_to_the_initial_window", "[unit][core]") {
    Hpcc h(cfg(), 1, 4096);
    Egress e;
    h.on_ack(ack(e.next(1.0, 100'000'000, 0), 100'000));
    h.on_ack(ack(e.next(1.0, 100'000'000, 10'000), 110'000));  // U ≈ 801
    CHECK(h.window_bytes() == 4096);
    Hpcc idle(cfg(), 1, 4096);
    Egress f;
    idle.on_ack(ack(f.next(0.0, 0, 0), 100'000));
    for (TimeNs t = 110'000; t < 400'000; t += 10'000) idle.on_ack(ack(f.next(0.0, 0, 10'000), t));
    CHECK(idle.window_bytes() == 125'000);
}
