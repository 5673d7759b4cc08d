// SPDX-License-Identifier: BSD-3-Clause
// Receiver credit (lib/core/cc_credit.cpp): the receiver's scheduler and the
// sender's credit accounting, in virtual time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include <random>

#include "core/cc_credit.hpp"
#include "support/engine_pair.hpp"
#include "wire/frame.hpp"

using namespace omrc::core;
using omrc::test::EnginePair;
using omrc::test::Fate;

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
    s.configure(kRate, 32'768, 4096, 1'000'000'000);
    constexpr std::uint32_t kQps = 5;
    TimeNs now = 1'000;
    for (std::uint32_t q = 0; q < kQps; ++q) s.on_request(q, 100'000'000, 0, now);
    // Senders that use their credit at once: every packet says so.
    auto run = [&] {
        s.run(now, [](std::uint32_t) {});
        for (std::uint32_t q = 0; q < kQps; ++q) s.on_request(q, 100'000'000, s.granted(q), now);
    };
    run();
    for (int i = 0; i < 10'000; ++i) {
        now += 100;
        run();
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
    s.configure(kRate, 1'000'000, 4096, 1'000'000'000);
    s.on_request(3, 10'000, 0, 0);
    std::uint32_t calls = 0;
    s.run(0, [&](std::uint32_t) { ++calls; });
    s.run(100'000, [&](std::uint32_t) { ++calls; });
    // Exactly what was asked: 4096 + 4096 + 1808, and no QP that asked nothing gets any.
    CHECK(s.granted(3) == 10'000);
    CHECK(calls == 3);
    CHECK(s.granted(0) == 0);
    CHECK(s.demanding() == 0);
    // Until its packets show the grant used, the scheduler looks again at its
    // expiry (granted at 0, the whole bucket at once; expiry 1 s).
    CHECK(s.next_grant_ns(100'000) == 1'000'000'001);
    s.on_request(3, 10'000, 10'000, 100'000);
    CHECK(s.next_grant_ns(100'000) == kNever);
    s.run(200'000, [&](std::uint32_t) { ++calls; });
    CHECK(calls == 3);
    // An older (smaller) request changes nothing; a larger one reopens the demand.
    s.on_request(3, 5'000, 0, 200'000);
    CHECK(s.demanding() == 0);
    s.on_request(3, 12'000, 0, 200'000);
    s.run(300'000, [&](std::uint32_t) { ++calls; });
    CHECK(s.granted(3) == 12'000);
    s.forget(3);
    CHECK(s.granted(3) == 0);
    CHECK(s.demanding() == 0);
}

TEST_CASE("CreditScheduler::charge__unscheduled_arrivals_hold_grants_back", "[unit][core]") {
    CreditScheduler s;
    s.configure(kRate, 4096, 4096, 1'000'000'000);
    s.on_request(0, 1'000'000, 0, 0);
    s.run(0, [](std::uint32_t) {});
    CHECK(s.granted(0) == 4096);  // the full bucket
    s.on_request(0, 1'000'000, 4096, 0);  // used at once
    // 125,000 B arrived unasked: 10 µs of the line's time are spoken for.
    s.charge(125'000);
    s.run(9'000, [](std::uint32_t) {});
    CHECK(s.granted(0) == 4096);
    s.run(10'400, [](std::uint32_t) {});
    CHECK(s.granted(0) == 8192);
}

TEST_CASE("CreditScheduler::run__unused_grants_are_bounded_and_expire", "[unit][core]") {
    CreditScheduler s;
    s.configure(kRate, 16'384, 4096, 50'000);
    s.on_request(0, 1'000'000, 0, 0);
    s.on_request(1, 1'000'000, 0, 0);
    s.run(0, [](std::uint32_t) {});
    // Much later the budget is full again, but nothing granted was used: no more.
    s.run(2'000, [](std::uint32_t) {});
    CHECK(s.granted(0) + s.granted(1) == 16'384);
    CHECK(s.unused_credit(2'000) == 16'384);
    CHECK(s.next_grant_ns(2'000) == 50'001);  // when the silent QPs' grants expire
    // QP 0's packets say it used its 8192 (a cumulative count: the packets
    // between, lost or not, leave nothing behind): room for 8192 more.
    s.on_request(0, 1'000'000, 8'192, 3'000);
    s.run(3'000, [](std::uint32_t) {});
    CHECK(s.granted(0) + s.granted(1) == 24'576);
    // QP 1 never sends: after `expire` its unused grant no longer counts,
    // and the caller is told to send it again (its SACK may have been lost).
    s.on_request(0, 1'000'000, s.granted(0), 60'000);
    std::vector<std::uint32_t> lost;
    s.expire(60'000, [&](std::uint32_t id) { lost.push_back(id); });
    CHECK(lost == std::vector<std::uint32_t>{1});
    s.run(60'000, [](std::uint32_t) {});
    CHECK(s.unused_credit(60'000) <= 16'384);
    CHECK(s.granted(0) + s.granted(1) > 24'576);
}

TEST_CASE("Credit::sender_never_exceeds_unscheduled_plus_granted", "[unit][core]") {
    Credit c(cfg(16384), 1, 4096);
    CHECK(dynamic_cast<Credit*>(make_cc(cfg(), 1, 4096).get()) != nullptr);
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
    // Unscheduled bytes 0: one BDP (125,000 B here); a message smaller than that goes whole.
    Credit bdp(cfg(0), 1, 4096);
    bdp.on_demand(1'048'576, true, true);
    CHECK(bdp.unscheduled_allowance() == 125'000);
    Credit small(cfg(0), 1, 4096);
    small.on_demand(10'000, true, true);
    CHECK(small.unscheduled_allowance() == 10'000);
    CHECK(small.request_bytes() == 0);
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
    // A SACK without a grant: the peer does not speak credit; the gate is off for good.
    c.on_no_grant();
    CHECK(c.off());
    CHECK(c.may_send(4096, false));
}

namespace {
/// A credit-mode QP's attributes for EnginePair (8 planes of 100G, 10 µs base RTT).
QpAttr credit_attr() {
    QpAttr a;
    a.cc.algorithm = CcAlgorithm::credit;
    a.evs = 64;
    return a;
}

/// Posts `bytes` of WRITEs from A to B in messages of `msg` bytes into `dst`.
void post(EnginePair& pair, std::uint32_t qpn, const std::vector<std::uint8_t>& src, std::vector<std::uint8_t>& dst,
          std::size_t msg) {
    const std::vector<SendRequest> wrs = omrc::test::make_write_wrs(src.data(), dst.data(), src.size(), 0x1234, msg);
    REQUIRE(pair.engines[0]->submit(CmdPostSend{qpn, wrs}, pair.now).err == 0);
}
}  // namespace

TEST_CASE("Engine::credit__trimmed_packets_are_asked_for_again_and_the_transfer_completes", "[unit][core]") {
    EnginePair pair;
    std::mt19937_64 rng(5);
    std::uint64_t trimmed = 0;
    pair.hook = [&](int from, std::uint8_t plane, std::vector<std::uint8_t>& f) {
        // 5 % of data packets on plane 3 are cut to 128 bytes and remarked.
        if (from == 0 && plane == 3 && f.size() > 1000 && rng() % 20 == 0) {
            omrc::test::trim_frame(f);
            ++trimmed;
        }
        return Fate{};
    };
    auto [a, b] = pair.connect(credit_attr());
    std::vector<std::uint8_t> src(4u << 20), dst(4u << 20, 0);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 7 + 1);
    pair.memory[1].add(0x1234, dst.data(), dst.size());
    post(pair, a, src, dst, 1 << 20);
    REQUIRE(pair.run([&] { return pair.completions[0].size() == 4; }, pair.now + 1'000'000'000));
    CHECK((dst == src));  // a bool: Catch prints no vectors
    const Qp* qa = pair.engines[0]->find_qp(a);
    const Qp* qb = pair.engines[1]->find_qp(b);
    REQUIRE(qa->credit != nullptr);
    const Credit& c = *qa->credit;
    REQUIRE(trimmed > 0);
    CHECK(qb->stats.trims_received == trimmed);
    CHECK(qa->stats.data_pkts_resent == trimmed);
    CHECK(!c.off());  // every SACK carried a grant
    // Every resent packet's bytes were asked for again (all packets are
    // 4096 B), granted and spent; nothing went beyond unscheduled + granted.
    CHECK(c.sent_bytes() == (4u << 20) + 4096 * qa->stats.data_pkts_resent);
    CHECK(c.unscheduled_allowance() == 65536);
    CHECK(c.request_bytes() == c.demand_bytes() - 65536);
    CHECK(c.granted_bytes() == c.request_bytes());
    CHECK(c.sent_bytes() <= c.unscheduled_allowance() + c.granted_bytes());
    // A packet declared lost and then acknowledged before its resend was
    // asked for and not sent: its grant goes unused (measured: one packet).
    CHECK(c.demand_bytes() >= c.sent_bytes());
    CHECK(c.demand_bytes() - c.sent_bytes() <= 4 * 4096);
}

TEST_CASE("Engine::credit__a_peer_that_grants_nothing_turns_the_gate_off", "[unit][core]") {
    // B runs nscc: its SACKs carry no grant. A's first SACK turns credit off
    // and the transfer completes on A's window alone.
    EnginePair pair;
    QpAttr nscc = credit_attr();
    nscc.cc.algorithm = CcAlgorithm::nscc;
    auto [a, b] = pair.connect(credit_attr(), nscc);
    (void)b;
    std::vector<std::uint8_t> src(1u << 20, 0x5A), dst(1u << 20, 0);
    pair.memory[1].add(0x1234, dst.data(), dst.size());
    post(pair, a, src, dst, 256 << 10);
    REQUIRE(pair.run([&] { return pair.completions[0].size() == 4; }, pair.now + 1'000'000'000));
    CHECK((dst == src));
    const Qp* qa = pair.engines[0]->find_qp(a);
    REQUIRE(qa->credit != nullptr);
    CHECK(qa->credit->off());
    CHECK(qa->credit->granted_bytes() == 0);
}
