// SPDX-License-Identifier: BSD-3-Clause
// The connection manager through the C++ verbs API (Device::cm_*;
// docs/PROTOCOL.md §13), its messages carried by the engines over a loopback
// fabric in virtual time: connect, accept with private data carrying the
// memory key, a WRITE byte-exact, disconnect with both QPs in ERR (setup
// under loss, fault row 3, is tests/fault/test_fault_cm.cpp); refusals
// (no listener, consumer, busy); encrypted connections keyed per connection
// (row 31's set-up half: a wrong or missing key fails at setup with no QP
// past INIT at the refusing end); an unanswered request fails in bounded time.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cm_ends.hpp"

using namespace omrc;
using namespace omrc::test::cm;

TEST_CASE("cm__connect_write_disconnect", "[unit][verbs][cm]") {
    omrc::test::VirtualNet net(2, 4, 5);
    End a(net, 0), b(net, 1);
    REQUIRE(b.dev->cm_listen(kService) == 0);
    CHECK(b.dev->cm_listen(kService) == EADDRINUSE);
    auto qa = a.qp();
    auto qb = b.qp();
    std::uint32_t id_a = 0, id_b = 0;
    REQUIRE(setup(net, a, b, *qa, *qb, id_a, id_b));
    const CmEvent est = a.take(CmEventType::established);
    CHECK(est.id == id_a);
    CHECK(est.qp == qa.get());
    CHECK(b.take(CmEventType::established).qp == qb.get());
    CHECK(qa->state() == QpState::rts);
    CHECK(qb->state() == QpState::rts);
    // Over the fabric: REQ, COOKIE, REQ, REP, RTU at least (cookies are on by default).
    CHECK(engine_counter(*a.dev, "cm_frames_sent") >= 3);
    CHECK(engine_counter(*b.dev, "cm_frames_sent") >= 2);
    write_and_check(net, a, b, *qa, est, 100'000);

    REQUIRE(a.dev->cm_disconnect(id_a) == 0);
    CHECK(a.dev->cm_disconnect(id_a) == ENOENT);
    CHECK(qa->state() == QpState::err);
    REQUIRE(net.run({a.dev.get(), b.dev.get()},
                    [&] { return a.has(CmEventType::disconnected) && b.has(CmEventType::disconnected); },
                    1'000'000'000ull));
    CHECK(b.take(CmEventType::disconnected).id == id_b);
    CHECK(qb->state() == QpState::err);
    // A second connection to the same listener, on fresh QPs.
    auto qa2 = a.qp();
    auto qb2 = b.qp();
    REQUIRE(setup(net, a, b, *qa2, *qb2, id_a, id_b));
    write_and_check(net, a, b, *qa2, a.take(CmEventType::established), 4096);
    // Destroying a connected QP tells the peer.
    qa2.reset();
    REQUIRE(net.run({a.dev.get(), b.dev.get()}, [&] { return b.has(CmEventType::disconnected); }, 1'000'000'000ull));
    CHECK(qb2->state() == QpState::err);
}

// A peer closes right after the last WRITE landed, before our end has its
// ACK (overtaken by the DREQ, or lost): the DREQ's receive edge completes
// the WRITE; it is not flushed. The edge is all there is here: B's ACKs to
// A are blackholed until B's QP is gone.
TEST_CASE("cm__peer_dreq_completes_what_arrived", "[unit][verbs][cm]") {
    omrc::test::VirtualNet net(2, 4, 9);
    End a(net, 0), b(net, 1);
    REQUIRE(b.dev->cm_listen(kService) == 0);
    auto qa = a.qp();
    auto qb = b.qp();
    std::uint32_t id_a = 0, id_b = 0;
    REQUIRE(setup(net, a, b, *qa, *qb, id_a, id_b));
    const CmEvent est = a.take(CmEventType::established);
    std::uint64_t raddr = 0;
    std::uint32_t rkey = 0;
    get_key(est, raddr, rkey);
    constexpr std::size_t kLen = 64 << 10;
    for (std::size_t i = 0; i < kLen; ++i) a.buf[i] = static_cast<std::uint8_t>(i * 7 + 1);

    loopback::Impairment dark;
    dark.blackhole = true;
    net.fabric.set_impairment(1, 0, dark);  // B to A: no ACK gets through
    post_write(*qa, *a.mr, a.buf.data(), kLen, raddr, rkey, 5);
    REQUIRE(net.run({a.dev.get(), b.dev.get()}, [&] { return std::memcmp(a.buf.data(), b.buf.data(), kLen) == 0; },
                    1'000'000'000ull));
    CHECK(omrc::test::drain(*a.cq).empty());  // placed at B, not acknowledged at A
    net.fabric.set_impairment(1, 0, loopback::Impairment{});
    qb.reset();  // B closes: its DREQ carries what arrived
    std::vector<Wc> got;
    // Until A has B's DREQ (its CM event) and a completion of its WRITE.
    auto closed_and_completed = [&] {
        return net.run({a.dev.get(), b.dev.get()},
                       [&] {
                           const bool ended = a.has(CmEventType::disconnected);
                           auto more = omrc::test::drain(*a.cq);
                           got.insert(got.end(), more.begin(), more.end());
                           return ended && !got.empty();
                       },
                       1'000'000'000ull);
    };
    REQUIRE(closed_and_completed());
    REQUIRE(got.size() == 1);
    CHECK(got[0].wr_id == 5);
    CHECK(got[0].status == WcStatus::success);
    CHECK(qa->state() == QpState::err);
    const nlohmann::json j = nlohmann::json::parse(a.dev->stats_json());
    REQUIRE(j["qps"].size() == 1);
    CHECK(j["qps"][0]["stats"]["pkts_acked_by_dreq"].get<std::uint64_t>() > 0);
    (void)a.take(CmEventType::disconnected);

    // A send the peer never received is still flushed: A's WRITE on a
    // second connection goes into the dark, then B closes.
    auto qa2 = a.qp();
    auto qb2 = b.qp();
    REQUIRE(setup(net, a, b, *qa2, *qb2, id_a, id_b));
    const CmEvent est2 = a.take(CmEventType::established);
    get_key(est2, raddr, rkey);
    net.fabric.set_impairment(0, 1, dark);  // A to B: nothing arrives
    post_write(*qa2, *a.mr, a.buf.data(), 4096, raddr, rkey, 6);
    REQUIRE(net.run({a.dev.get(), b.dev.get()}, [&] { return false; }, 2'000'000ull) == false);
    net.fabric.set_impairment(0, 1, loopback::Impairment{});
    qb2.reset();
    got.clear();
    REQUIRE(closed_and_completed());
    CHECK(got[0].wr_id == 6);
    CHECK(got[0].status == WcStatus::wr_flush_err);
}

TEST_CASE("cm__refusals", "[unit][verbs][cm]") {
    omrc::test::VirtualNet net(2, 4, 6);
    End a(net, 0), b(net, 1);
    auto qa = a.qp();
    CmConnParams p;
    p.service_id = kService;
    p.peer = b.dev->address();
    std::uint32_t id = 0;
    // Nobody listens.
    REQUIRE(a.dev->cm_connect(*qa, p, &id) == 0);
    REQUIRE(net.run({a.dev.get(), b.dev.get()}, [&] { return a.has(CmEventType::rejected); }, 1'000'000'000ull));
    CmEvent rej = a.take(CmEventType::rejected);
    CHECK(rej.reason == CmReason::no_listener);
    CHECK_FALSE(rej.local);
    CHECK(qa->state() == QpState::init);  // nothing moved
    // The listener refuses, with private data.
    REQUIRE(b.dev->cm_listen(kService) == 0);
    REQUIRE(a.dev->cm_connect(*qa, p, &id) == 0);
    REQUIRE(net.run({a.dev.get(), b.dev.get()}, [&] { return b.has(CmEventType::connect_request); },
                    1'000'000'000ull));
    const CmEvent req = b.take(CmEventType::connect_request);
    const std::uint8_t why[3] = {1, 2, 3};
    REQUIRE(b.dev->cm_reject(req.id, why) == 0);
    CHECK(b.dev->cm_reject(req.id) == ENOENT);
    REQUIRE(net.run({a.dev.get(), b.dev.get()}, [&] { return a.has(CmEventType::rejected); }, 1'000'000'000ull));
    rej = a.take(CmEventType::rejected);
    CHECK(rej.reason == CmReason::consumer);
    REQUIRE(rej.private_len == 3);
    CHECK(rej.private_data[2] == 3);
    CHECK(qa->state() == QpState::init);
    // A QP whose request is still out cannot be given to another.
    auto qd = a.qp();
    REQUIRE(a.dev->cm_connect(*qd, p, &id) == 0);
    CHECK(a.dev->cm_connect(*qd, p, &id) == EBUSY);
    // A QP past INIT cannot be connected.
    auto qc = a.qp();
    QpAttr err;
    err.qp_state = QpState::err;
    REQUIRE(qc->modify(err, QpAttrMask::state) == 0);
    CHECK(a.dev->cm_connect(*qc, p, &id) == EINVAL);
}

TEST_CASE("cm__unanswered_request_fails_in_bounded_time", "[unit][verbs][cm]") {
    omrc::test::VirtualNet net(2, 4, 7);
    End a(net, 0), b(net, 1);
    REQUIRE(b.dev->cm_listen(kService) == 0);
    loopback::Impairment imp;
    imp.blackhole = true;
    net.fabric.set_impairment_all(imp);
    auto qa = a.qp();
    CmConnParams p;
    p.service_id = kService;
    p.peer = b.dev->address();
    std::uint32_t id = 0;
    const std::uint64_t t0 = net.now_ns;
    REQUIRE(a.dev->cm_connect(*qa, p, &id) == 0);
    REQUIRE(net.run({a.dev.get(), b.dev.get()}, [&] { return a.has(CmEventType::unreachable); }, 5'000'000'000ull));
    const CmEvent e = a.take(CmEventType::unreachable);
    CHECK(e.reason == CmReason::timeout);
    CHECK(e.qp == qa.get());
    // 15 resends from 1 ms, doubling to 64 ms: 1 + 2 + … + 64 + 8 · 64 ms ≈ 0.64 s.
    CHECK(net.now_ns - t0 < 1'000'000'000ull);
    CHECK(qa->state() == QpState::init);
    CHECK_FALSE(b.has(CmEventType::connect_request));
}

TEST_CASE("cm__encrypted_connection", "[unit][verbs][cm][psp]") {
    omrc::test::VirtualNet net(2, 4, 8);
    DeviceOptions keyed;
    keyed.security.master_key[0] = key_of(0x31);
    SECTION("the same cluster key: sealed, byte-exact") {
        End a(net, 0, keyed), b(net, 1, keyed);
        REQUIRE(b.dev->cm_listen(kService, {.require_encryption = true}) == 0);
        auto qa = a.qp();
        auto qb = b.qp();
        std::uint32_t id_a = 0, id_b = 0;
        REQUIRE(setup(net, a, b, *qa, *qb, id_a, id_b, Encryption::aes_gcm_256));
        CHECK(qa->encrypted());
        CHECK(qb->encrypted());
        const CmEvent est = a.take(CmEventType::established);
        write_and_check(net, a, b, *qa, est, 65536);
        // The QPs' keys came from the connection's nonces: a rotation still works.
        CHECK(qa->rotate_key() == 0);
        write_and_check(net, a, b, *qa, est, 30000);
    }
    SECTION("a plain request to an encryption-only listener") {
        End a(net, 0, keyed), b(net, 1, keyed);
        REQUIRE(b.dev->cm_listen(kService, {.require_encryption = true}) == 0);
        auto qa = a.qp();
        auto qb = b.qp();
        std::uint32_t id_a = 0, id_b = 0;
        CHECK_FALSE(setup(net, a, b, *qa, *qb, id_a, id_b, Encryption::off, 1'000'000'000ull));
        CHECK(a.take(CmEventType::rejected).reason == CmReason::security_required);
        CHECK(qa->state() == QpState::init);
        CHECK(qb->state() == QpState::reset);
    }
    SECTION("different cluster keys: refused at the REQ") {
        DeviceOptions other;
        other.security.master_key[0] = key_of(0x32);
        End a(net, 0, keyed), b(net, 1, other);
        REQUIRE(b.dev->cm_listen(kService) == 0);
        auto qa = a.qp();
        auto qb = b.qp();
        std::uint32_t id_a = 0, id_b = 0;
        CHECK_FALSE(setup(net, a, b, *qa, *qb, id_a, id_b, Encryption::aes_gcm_256, 1'000'000'000ull));
        CHECK(a.take(CmEventType::rejected).reason == CmReason::key_mismatch);
        CHECK_FALSE(b.has(CmEventType::connect_request));
        CHECK(qa->state() == QpState::init);
        CHECK(qb->state() == QpState::reset);
    }
    SECTION("no key at the listener: security_unavailable") {
        End a(net, 0, keyed), b(net, 1);
        REQUIRE(b.dev->cm_listen(kService) == 0);
        auto qa = a.qp();
        auto qb = b.qp();
        std::uint32_t id_a = 0, id_b = 0;
        CHECK_FALSE(setup(net, a, b, *qa, *qb, id_a, id_b, Encryption::aes_gcm_256, 1'000'000'000ull));
        CHECK(a.take(CmEventType::rejected).reason == CmReason::security_unavailable);
        CHECK(qa->state() == QpState::init);
    }
    SECTION("no key at the requester: refused at once") {
        End a(net, 0), b(net, 1, keyed);
        auto qa = a.qp();
        CmConnParams p;
        p.service_id = kService;
        p.peer = b.dev->address();
        p.encryption = Encryption::aes_gcm_256;
        std::uint32_t id = 0;
        CHECK(a.dev->cm_connect(*qa, p, &id) == EINVAL);
    }
}

TEST_CASE("cm__two_workers", "[unit][verbs][cm]") {
    // The connection manager runs on worker 0; QPs go to both workers in
    // turn, and CM frames (QPN 1) are steered to worker 0.
    loopback::FabricConfig fc;
    fc.endpoints = 2;
    fc.planes = 4;
    fc.queues = 2;
    fc.seed = 12;
    fc.mode = loopback::ClockMode::virtual_clock;
    omrc::test::VirtualNet net(fc);
    DeviceOptions o;
    o.workers = 2;
    End a(net, 0, o), b(net, 1, o);
    REQUIRE(b.dev->cm_listen(kService) == 0);
    std::vector<std::unique_ptr<Qp>> keep;
    std::set<std::uint32_t> workers_a, workers_b;
    for (int i = 0; i < 4; ++i) {
        auto qa = a.qp();
        auto qb = b.qp();
        workers_a.insert(qa->worker());
        workers_b.insert(qb->worker());
        std::uint32_t id_a = 0, id_b = 0;
        REQUIRE(setup(net, a, b, *qa, *qb, id_a, id_b));
        write_and_check(net, a, b, *qa, a.take(CmEventType::established), 20000 + 1000 * static_cast<std::size_t>(i));
        (void)b.take(CmEventType::established);
        keep.push_back(std::move(qa));
        keep.push_back(std::move(qb));
    }
    CHECK(workers_a.size() == 2);
    CHECK(workers_b.size() == 2);
}
