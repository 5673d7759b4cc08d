// SPDX-License-Identifier: BSD-3-Clause
// Receiver credit (lib/core/cc_credit.cpp): the receiver's scheduler and the
// sender's credit accounting, in virtual time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "core/cc.hpp"

using namespace omrc::core;

namespace {
// One plane of 100 Gb/s (12.5 B/ns), 10 µs base RTT: BDP 125,000 B.
CcConfig cfg(std::uint64_t unscheduled = 16384) {
    CcConfig c;
    c.algorithm = CcAlgorithm::credit;
    c.base_rtt_ns = 10'000;
    c.link_rate_bps = 100'000'000'000;
    c.credit.unscheduled_bytes = unscheduled;
    return c;
}
constexpr double kRate = 12.5;  // bytes per ns
}  // namespace

TEST_CASE("CreditScheduler::run__shares_the_line_rate_equally_among_demanding_qps", "[unit][core]") {
    CreditScheduler s;
    s.configure(kRate, 32'768, 4096);
    constexpr std::uint32_t kQps = 5;
    for (std::uint32_t q = 0; q < kQps; ++q) s.on_request(q, 100'000'000);
    std::vector<std::uint64_t> grants_seen(kQps, 0);
    TimeNs now = 1'000;
    s.run(now, [&](std::uint32_t id) { ++grants_seen.at(id); });
    for (int i = 0; i < 10'000; ++i) {
        now += 100;
        s.run(now, [&](std::uint32_t id) { ++grants_seen.at(id); });
    }
    // 1 ms at 12.5 B/ns plus the full bucket it started with: the sum paces at the line rate.
    std::uint64_t total = 0, lo = UINT64_MAX, hi = 0;
    for (std::uint32_t q = 0; q < kQps; ++q) {
        total += s.granted(q);
        lo = std::min(lo, s.granted(q));
        hi = std::max(hi, s.granted(q));
    }
    const double elapsed = static_cast<double>(now - 1'000);
    CHECK(static_cast<double>(total) <= kRate * elapsed + 32'768);
    CHECK(static_cast<double>(total) >= kRate * elapsed);
    // Round robin, one quantum a turn: no QP more than a quantum ahead of another.
    CHECK(hi - lo <= 4096);
    CHECK(s.demanding() == kQps);
    // The next grant is due when the budget again covers a quantum.
    CHECK(s.next_grant_ns(now) > now);
    CHECK(s.next_grant_ns(now) <= now + static_cast<TimeNs>(4096 / kRate) + 1);
}

TEST_CASE("CreditScheduler::run__grants_stop_when_demand_is_zero", "[unit][core]") {
    CreditScheduler s;
    s.configure(kRate, 1'000'000, 4096);
    s.on_request(3, 10'000);
    std::uint32_t calls = 0;
    s.run(0, [&](std::uint32_t) { ++calls; });
    s.run(100'000, [&](std::uint32_t) { ++calls; });
    // Exactly what was asked: 4096 + 4096 + 1808, and no QP that asked nothing gets any.
    CHECK(s.granted(3) == 10'000);
    CHECK(calls == 3);
    CHECK(s.granted(0) == 0);
    CHECK(s.demanding() == 0);
    CHECK(s.next_grant_ns(100'000) == kNever);
    s.run(200'000, [&](std::uint32_t) { ++calls; });
    CHECK(calls == 3);
    // An older (smaller) request changes nothing; a larger one reopens the demand.
    s.on_request(3, 5'000);
    CHECK(s.demanding() == 0);
    s.on_request(3, 12'000);
    s.run(300'000, [&](std::uint32_t) { ++calls; });
    CHECK(s.granted(3) == 12'000);
    s.forget(3);
    CHECK(s.granted(3) == 0);
    CHECK(s.demanding() == 0);
}

TEST_CASE("CreditScheduler::charge__unscheduled_arrivals_hold_grants_back", "[unit][core]") {
    CreditScheduler s;
    s.configure(kRate, 4096, 4096);
    s.on_request(0, 1'000'000);
    s.run(0, [](std::uint32_t) {});
    CHECK(s.granted(0) == 4096);  // the full bucket
    // 125,000 B arrived unasked: 10 µs of the line's time are spoken for.
    s.charge(125'000);
    s.run(9'000, [](std::uint32_t) {});
    CHECK(s.granted(0) == 4096);
    s.run(10'400, [](std::uint32_t) {});
    CHECK(s.granted(0) == 8192);
}

TEST_CASE("Credit::sender_never_exceeds_unscheduled_plus_granted", "[unit][core]") {
    Credit c(cfg(16384), 1, 4096);
    CHECK(std::string(c.name()) == "credit");
    CHECK(make_cc(cfg(), 1, 4096)->name() == std::string("credit"));
    c.on_demand(1'048'576, true, true);
    CHECK(c.unscheduled_allowance() == 16384);
    CHECK(c.request_bytes() == 1'048'576 - 16384);
    std::uint64_t sent = 0;
    std::uint32_t unsched = 0;
    // The unscheduled burst, then nothing without credit (packets in flight).
    while (c.may_send(4096, false)) {
        unsched += c.on_sent(4096, false);
        sent += 4096;
        REQUIRE(c.sent_bytes() <= c.unscheduled_allowance() + c.granted_bytes());
    }
    CHECK(sent == 16384);
    CHECK(unsched == 16384);
    // Grants arrive (out of order too: an older one adds nothing).
    for (std::uint64_t g : {8192u, 4096u, 20'000u, 30'000u}) {
        c.on_grant(g);
        while (c.may_send(4096, false)) {
            CHECK(c.on_sent(4096, false) == 0);  // paid by credit
            sent += 4096;
            REQUIRE(c.sent_bytes() <= c.unscheduled_allowance() + c.granted_bytes());
        }
    }
    CHECK(c.granted_bytes() == 30'000);
    CHECK(sent == 16384 + 28'672);  // 7 packets of 4096 fit in 30,000
    // A second message while busy opens no new unscheduled burst.
    c.on_demand(65'536, true, false);
    CHECK(c.unscheduled_allowance() == 16384);
    CHECK(!c.may_send(4096, false));
}

TEST_CASE("Credit::a_lost_or_trimmed_packets_credit_is_asked_for_again", "[unit][core]") {
    Credit c(cfg(8192), 1, 4096);
    c.on_demand(8192, true, true);  // a message that fits the unscheduled burst
    CHECK(c.request_bytes() == 0);
    REQUIRE(c.may_send(4096, false));
    c.on_sent(4096, false);
    c.on_sent(4096, false);
    // The second packet is trimmed: the engine queues it again (mark_lost)
    // and its bytes are asked for again, not taken from the spent burst.
    c.on_demand(4096, false, false);
    CHECK(c.request_bytes() == 4096);
    CHECK(c.unscheduled_allowance() == 8192);
    CHECK(!c.may_send(4096, false));
    // Nothing in flight and a request the receiver has not heard: one packet
    // may go so that it hears it (and it grants that packet's bytes).
    CHECK(c.may_send(4096, true));
    c.on_sent(4096, true);
    CHECK(c.sent_bytes() == c.unscheduled_allowance() + c.granted_bytes() + 4096);
    CHECK(!c.may_send(4096, true));  // once: the receiver has heard the request now
    // The receiver grants the request; the debt is paid, nothing more goes.
    c.on_grant(4096);
    CHECK(!c.may_send(1, false));
    CHECK(c.sent_bytes() == c.unscheduled_allowance() + c.granted_bytes());
}
