// SPDX-License-Identifier: BSD-3-Clause
// The connection manager's state machine (core/conn_manager.hpp) between two
// instances over a lossy virtual link: setup with cookies, 50 setups under
// 30 % loss (fault row 3 in core form), replayed REQs after completion and
// after reconnect (row 20), every rejection, a flood of forged REQs holding
// no state (row 25), key mismatch and missing keys (row 31), timeouts and
// disconnects. Every message crosses the wire codec on the way.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "core/conn_manager.hpp"
#include "core/rng.hpp"
#include "security/cookie_mac.hpp"
#include "security/psp_keys.hpp"

using namespace omrc;
using namespace omrc::core;
using wire::CmMessage;
using wire::CmReject;
using wire::CmType;

namespace {

wire::Ipv6Addr addr(std::uint8_t last) {
    wire::Ipv6Addr a{};
    a[0] = 0xfd;
    a[15] = last;
    return a;
}

/// Key checks as a PRF of (cluster key, receiver address, select, nonce,
/// context): two ends with the same cluster key agree, others do not.
struct TestKeys final : CmKeys {
    wire::Ipv6Addr self{};
    std::array<std::uint8_t, 32> cluster{};
    bool present = true;
    bool has_key(std::uint8_t) const override { return present; }
    bool compute(const wire::Ipv6Addr& receiver, std::uint8_t select, const std::array<std::uint8_t, 16>& nonce,
                 std::span<const std::uint8_t> ctx, std::array<std::uint8_t, 16>& out) const {
        std::vector<std::uint8_t> d(receiver.begin(), receiver.end());
        d.push_back(select);
        d.insert(d.end(), nonce.begin(), nonce.end());
        d.insert(d.end(), ctx.begin(), ctx.end());
        return security::cookie_mac(cluster, d, out);
    }
    bool own_check(std::uint8_t s, const std::array<std::uint8_t, 16>& n, std::span<const std::uint8_t> c,
                   std::array<std::uint8_t, 16>& out) override {
        return compute(self, s, n, c, out);
    }
    bool peer_check(const wire::Ipv6Addr& p, std::uint8_t s, const std::array<std::uint8_t, 16>& n,
                    std::span<const std::uint8_t> c, std::array<std::uint8_t, 16>& out) override {
        return compute(p, s, n, c, out);
    }
};

struct Node {
    wire::Ipv6Addr a;
    TestKeys keys;
    ConnManager cm;
    std::vector<CmEvent> events;
    Node(std::uint8_t last, std::uint64_t seed, CmLimits lim = {}) : a(addr(last)), cm(lim, seed, &keys) {
        keys.self = a;
    }
};

CmMessage params(std::uint64_t service, std::uint32_t qpn, std::uint8_t encryption = 0) {
    CmMessage m;
    m.service_id = service;
    m.qpn = qpn;
    m.psn = qpn & 0xFFFFFF;
    m.mtu = 4096;
    m.planes = 2;
    m.macs[0] = {2, 0, 0, 0, 0, 1};
    m.macs[1] = {2, 0, 0, 0, 0, 2};
    m.encryption = encryption;
    m.key_nonce.fill(static_cast<std::uint8_t>(qpn));
    return m;
}

/// Two nodes and the link between them: every message is encoded and
/// decoded; `loss` of them (both ways) is lost; 10 µs one way.
struct Link {
    Node& x;
    Node& y;
    double loss = 0;
    Rng rng{42};
    TimeNs now = 1'000'000'000;
    std::vector<CmMessage> to_y;  ///< every message that reached y (for replays)
    std::uint64_t carried = 0;

    bool deliver(Node& from, Node& to, bool record) {
        CmOutgoing o;
        bool moved = false;
        while (from.cm.poll_outgoing(o)) {
            moved = true;
            REQUIRE(o.to == to.a);
            std::array<std::uint8_t, wire::kCmMaxMessage> b{};
            std::size_t len = 0;
            REQUIRE(o.msg.encode(b, len) == wire::WireError::ok);
            if (static_cast<double>(rng.below(1000)) < loss * 1000) continue;
            CmMessage d;
            REQUIRE(CmMessage::decode(std::span(b).first(len), d) == wire::WireError::ok);
            if (record) to_y.push_back(d);
            ++carried;
            to.cm.on_message(from.a, d, now + 10'000);
        }
        return moved;
    }
    /// Runs until both are idle or `until`, answering events with `on_event`.
    template <typename F>
    void run(TimeNs until, F&& on_event) {
        for (int guard = 0; guard < 1'000'000; ++guard) {
            bool any = deliver(x, y, true);
            any = deliver(y, x, false) || any;
            for (Node* n : {&x, &y}) {
                CmEvent e;
                while (n->cm.poll_event(e)) {
                    n->events.push_back(e);
                    on_event(*n, e);
                    any = true;
                }
            }
            if (any) continue;
            const TimeNs next = std::min(x.cm.next_wakeup(), y.cm.next_wakeup());
            if (next == kNever || next > until) return;
            now = std::max(now + 10'000, next);
            x.cm.on_timer(now);
            y.cm.on_timer(now);
        }
        FAIL("the exchange did not settle");
    }
    /// The usual application: accept every request, confirm every reply.
    void run_accepting(TimeNs until) {
        run(until, [&](Node& n, const CmEvent& e) {
            if (e.kind == CmEventKind::request) {
                CmMessage rep = params(e.msg.service_id, 0x2000 + e.msg.qpn, e.msg.encryption);
                REQUIRE(n.cm.accept(e.id, rep, now) == 0);
            } else if (e.kind == CmEventKind::reply) {
                REQUIRE(n.cm.confirm(e.id, now) == 0);
            }
        });
    }
};

std::size_t count(const std::vector<CmEvent>& ev, CmEventKind k) {
    std::size_t n = 0;
    for (const CmEvent& e : ev) n += e.kind == k;
    return n;
}

}  // namespace

TEST_CASE("ConnManager::setup_with_a_cookie_and_disconnect", "[unit][core][cm]") {
    Node a(1, 11), b(2, 22);
    REQUIRE(b.cm.listen(7, {}) == 0);
    CHECK(b.cm.listen(7, {}) == EADDRINUSE);
    Link l{a, b};
    std::uint32_t id = 0;
    REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1001), l.now, id) == 0);
    l.run_accepting(l.now + 1'000'000'000);
    // REQ, COOKIE, REQ with the cookie, REP, RTU.
    CHECK(b.cm.stats().cookies_sent == 1);
    CHECK(l.carried == 5);
    REQUIRE(count(a.events, CmEventKind::reply) == 1);
    REQUIRE(count(b.events, CmEventKind::request) == 1);
    REQUIRE(count(b.events, CmEventKind::established) == 1);
    CHECK(a.events[0].msg.qpn == 0x3001);   // the responder's QP, from the REP
    CHECK(b.events[0].msg.qpn == 0x1001);   // the requester's, from the REQ
    CHECK(a.cm.live() == 1);
    CHECK(b.cm.live() == 1);
    REQUIRE(a.cm.disconnect(id, l.now, 0x00ABCD) == 0);
    l.run_accepting(l.now + 1'000'000'000);
    CHECK(count(a.events, CmEventKind::disconnected) == 1);
    CHECK(count(b.events, CmEventKind::disconnected) == 1);
    // The DREQ's receive edge reaches the peer with its event.
    for (const CmEvent& e : b.events)
        if (e.kind == CmEventKind::disconnected) {
            CHECK(e.msg.type == wire::CmType::dreq);
            CHECK(e.msg.has_rcv_psn);
            CHECK(e.msg.rcv_psn == 0x00ABCD);
        }
    CHECK(a.cm.live() == 0);
    CHECK(b.cm.live() == 0);
    CHECK(a.cm.disconnect(id, l.now) == ENOENT);
}

TEST_CASE("ConnManager::row_3_fifty_setups_under_30_percent_loss", "[unit][core][cm]") {
    Node a(1, 11), b(2, 22);
    REQUIRE(b.cm.listen(7, {.backlog = 128, .per_peer = 64}) == 0);
    Link l{a, b};
    l.loss = 0.30;
    std::vector<std::uint32_t> ids;
    for (std::uint32_t i = 0; i < 50; ++i) {
        std::uint32_t id = 0;
        REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1000 + i), l.now, id) == 0);
        ids.push_back(id);
    }
    l.run_accepting(l.now + 2'000'000'000);
    CHECK(count(a.events, CmEventKind::reply) == 50);
    CHECK(count(b.events, CmEventKind::request) == 50);
    CHECK(count(a.events, CmEventKind::failed) == 0);
    CHECK(a.cm.stats().retransmits + b.cm.stats().retransmits > 0);
    // An RTU lost for good leaves the responder's connection to its REP
    // resends, each answered by the requester's RTU again: every one ends established.
    CHECK(count(b.events, CmEventKind::established) == 50);
    for (std::uint32_t id : ids) REQUIRE(a.cm.disconnect(id, l.now) == 0);
    l.run_accepting(l.now + 4'000'000'000);
    CHECK(a.cm.live() == 0);  // no leaked connection state on either side
    CHECK(b.cm.live() == 0);
    CHECK(count(a.events, CmEventKind::disconnected) == 50);
}

TEST_CASE("ConnManager::row_20_replayed_reqs_make_no_connection", "[unit][core][cm]") {
    Node a(1, 11), b(2, 22);
    REQUIRE(b.cm.listen(7, {}) == 0);
    Link l{a, b};
    std::uint32_t id = 0;
    REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1001), l.now, id) == 0);
    l.run_accepting(l.now + 1'000'000'000);
    std::vector<CmMessage> reqs;
    for (const CmMessage& m : l.to_y)
        if (m.type == CmType::req) reqs.push_back(m);
    REQUIRE(reqs.size() == 2);
    const auto requests_before = count(b.events, CmEventKind::request);
    // reqs[0] carries no cookie: the listener (cookies always) answers it
    // with a cookie before looking for its connection; reqs[1] echoes one.
    SECTION("during the connection: answered as a duplicate") {
        const auto cookies = b.cm.stats().cookies_sent;
        for (const CmMessage& m : reqs) b.cm.on_message(a.a, m, l.now);
        CHECK(b.cm.stats().duplicates == 1);
        CHECK(b.cm.stats().cookies_sent == cookies + 1);
    }
    SECTION("after a disconnect and a new connection: remembered, then expired") {
        REQUIRE(a.cm.disconnect(id, l.now) == 0);
        l.run_accepting(l.now + 1'000'000'000);
        std::uint32_t id2 = 0;
        REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1002), l.now, id2) == 0);
        l.run_accepting(l.now + 1'000'000'000);
        CHECK(count(b.events, CmEventKind::request) == requests_before + 1);  // the new one
        for (const CmMessage& m : reqs) b.cm.on_message(a.a, m, l.now);
        CHECK(b.cm.stats().replays == 1);  // in time-wait (the one with its cookie; the other got a new cookie)
        // Later than time-wait: the cookie has expired with it.
        l.now += 3'000'000'000;
        b.cm.on_timer(l.now);
        const auto bad = b.cm.stats().cookies_bad;
        for (const CmMessage& m : reqs) b.cm.on_message(a.a, m, l.now);
        CHECK(b.cm.stats().cookies_bad == bad + 1);  // the first REQ had no cookie at all
    }
    CmEvent e;
    std::size_t more = 0;
    while (b.cm.poll_event(e)) more += e.kind == CmEventKind::request;
    CHECK(more == 0);
    CHECK(count(b.events, CmEventKind::request) <= requests_before + 1);
}

TEST_CASE("ConnManager::rejections_keep_no_state", "[unit][core][cm]") {
    Node a(1, 11), b(2, 22);
    Link l{a, b};
    auto reasons = [&] {
        std::vector<CmReject> r;
        for (const CmEvent& e : a.events)
            if (e.kind == CmEventKind::rejected) r.push_back(e.reason);
        return r;
    };
    std::uint32_t id = 0;
    SECTION("nobody listens") {
        REQUIRE(a.cm.connect(b.a, params(0, 0), params(9, 0x1001), l.now, id) == 0);
        l.run_accepting(l.now + 1'000'000'000);
        CHECK(reasons() == std::vector{CmReject::no_listener});
    }
    SECTION("backlog full, then per peer") {
        REQUIRE(b.cm.listen(7, {.backlog = 2, .per_peer = 3, .cookies = CmCookies::never}) == 0);
        for (std::uint32_t i = 0; i < 3; ++i) REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1000 + i), l.now, id) == 0);
        l.run(l.now + 1'000'000, [](Node&, const CmEvent&) {});  // the application takes its time
        CHECK(reasons() == std::vector{CmReject::busy});
        CHECK(b.cm.live() == 2);
        REQUIRE(b.cm.listen(8, {.backlog = 8, .per_peer = 3, .cookies = CmCookies::never}) == 0);
        for (std::uint32_t i = 0; i < 2; ++i) REQUIRE(a.cm.connect(b.a, params(0, 0), params(8, 0x1100 + i), l.now, id) == 0);
        l.run(l.now + 1'000'000, [](Node&, const CmEvent&) {});
        CHECK(reasons() == std::vector{CmReject::busy, CmReject::peer_limit});
        CHECK(b.cm.live() == 3);
        // Unanswered requests expire (accept_timeout), and the requesters hear of it.
        l.run(l.now + 5'000'000'000, [](Node&, const CmEvent&) {});
        CHECK(b.cm.live() == 0);
        CHECK(a.cm.live() == 0);
    }
    SECTION("the application rejects") {
        REQUIRE(b.cm.listen(7, {}) == 0);
        REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1001), l.now, id) == 0);
        l.run(l.now + 1'000'000'000, [&](Node& n, const CmEvent& e) {
            if (e.kind == CmEventKind::request) {
                const std::uint8_t why[] = {'n', 'o'};
                REQUIRE(n.cm.reject(e.id, CmReject::consumer, why, l.now) == 0);
            }
        });
        REQUIRE(reasons() == std::vector{CmReject::consumer});
        CHECK(a.events.back().msg.private_len == 2);
        CHECK(b.cm.live() == 0);
        CHECK(a.cm.live() == 0);
    }
    SECTION("encryption required") {
        REQUIRE(b.cm.listen(7, {.require_encryption = true}) == 0);
        REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1001), l.now, id) == 0);
        l.run_accepting(l.now + 1'000'000'000);
        CHECK(reasons() == std::vector{CmReject::security_required});
    }
    CHECK(b.cm.live() == 0);
}

TEST_CASE("ConnManager::row_31_wrong_or_missing_key_fails_at_setup", "[unit][core][cm]") {
    Node a(1, 11), b(2, 22);
    a.keys.cluster.fill(0x11);
    b.keys.cluster.fill(0x11);
    REQUIRE(b.cm.listen(7, {}) == 0);
    Link l{a, b};
    std::uint32_t id = 0;
    SECTION("same key: established, encrypted") {
        REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1001, 2), l.now, id) == 0);
        l.run_accepting(l.now + 1'000'000'000);
        CHECK(count(b.events, CmEventKind::established) == 1);
        CHECK(a.events.at(0).msg.encryption == 2);
    }
    SECTION("a different key on the listener: REJ key_mismatch before any request event") {
        b.keys.cluster.fill(0x22);
        REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1001, 2), l.now, id) == 0);
        l.run_accepting(l.now + 1'000'000'000);
        REQUIRE(count(a.events, CmEventKind::rejected) == 1);
        CHECK(a.events[0].reason == CmReject::key_mismatch);
        CHECK(count(b.events, CmEventKind::request) == 0);
        CHECK(b.cm.stats().key_mismatches == 1);
    }
    SECTION("no key on the listener: security_unavailable") {
        b.keys.present = false;
        REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1001, 1), l.now, id) == 0);
        l.run_accepting(l.now + 1'000'000'000);
        REQUIRE(count(a.events, CmEventKind::rejected) == 1);
        CHECK(a.events[0].reason == CmReject::security_unavailable);
    }
    SECTION("no key on the requester: refused locally") {
        a.keys.present = false;
        CHECK(a.cm.connect(b.a, params(0, 0), params(7, 0x1001, 2), l.now, id) == EINVAL);
    }
    SECTION("a forged REP with a wrong key check: the requester refuses it") {
        REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1001, 2), l.now, id) == 0);
        l.run(l.now + 1'000'000'000, [&](Node& n, const CmEvent& e) {
            if (e.kind == CmEventKind::request) {
                n.keys.cluster.fill(0x33);  // the responder's check comes out wrong
                REQUIRE(n.cm.accept(e.id, params(7, 0x3001, 2), l.now) == 0);
            }
        });
        REQUIRE(count(a.events, CmEventKind::rejected) == 1);
        CHECK(a.events.back().reason == CmReject::key_mismatch);
        CHECK(a.events.back().local);
        CHECK(count(b.events, CmEventKind::rejected) == 1);  // told, and its state gone
    }
    CHECK(a.cm.live() == 0 + (count(b.events, CmEventKind::established) == 1 ? 1 : 0));
    if (count(b.events, CmEventKind::established) == 0) CHECK(b.cm.live() == 0);
}

TEST_CASE("ConnManager::row_25_a_flood_of_forged_reqs_holds_no_state", "[unit][core][cm]") {
    Node a(1, 11), b(2, 22);
    REQUIRE(b.cm.listen(7, {.backlog = 16}) == 0);
    Link l{a, b};
    Rng r(5);
    for (std::uint32_t i = 0; i < 10000; ++i) {
        CmMessage m = params(7, 0x1000 + (i & 0xFFF));
        m.type = CmType::req;
        m.src_comm_id = r.next_u32() | 1;
        m.cookie[0] = static_cast<std::uint8_t>(i);  // guessed cookies
        wire::Ipv6Addr forged = addr(static_cast<std::uint8_t>(100 + i % 100));
        forged[14] = static_cast<std::uint8_t>(i >> 8);
        b.cm.on_message(forged, m, l.now);
    }
    CHECK(b.cm.live() == 0);
    CHECK(b.cm.stats().cookies_sent == 10000);
    CHECK(b.cm.stats().requests == 0);
    CmOutgoing o;
    while (b.cm.poll_outgoing(o)) {}
    // A real requester still gets through.
    std::uint32_t id = 0;
    REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1001), l.now, id) == 0);
    l.run_accepting(l.now + 1'000'000'000);
    CHECK(count(b.events, CmEventKind::established) == 1);
}

TEST_CASE("ConnManager::no_answer_fails_after_the_resends", "[unit][core][cm]") {
    Node a(1, 11), b(2, 22);
    REQUIRE(b.cm.listen(7, {}) == 0);
    Link l{a, b};
    l.loss = 1.0;
    std::uint32_t id = 0;
    REQUIRE(a.cm.connect(b.a, params(0, 0), params(7, 0x1001), l.now, id) == 0);
    const TimeNs start = l.now;
    TimeNs failed_at = 0;
    l.run(l.now + 10'000'000'000, [&](Node&, const CmEvent& e) {
        if (e.kind == CmEventKind::failed) failed_at = l.now;
    });
    REQUIRE(count(a.events, CmEventKind::failed) == 1);
    CHECK(a.events[0].reason == CmReject::timeout);
    CHECK(a.cm.stats().retransmits == CmLimits{}.retries);
    // 1 + 2 + 4 + ... + 64 ms, then 64 ms per resend left, then the last wait.
    CHECK(failed_at - start <= 127'000'000 + 64'000'000 * (CmLimits{}.retries - 6) + 1'000'000);
    CHECK(a.cm.live() == 0);
}
