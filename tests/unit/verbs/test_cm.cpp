// SPDX-License-Identifier: BSD-3-Clause
// The connection manager through the C++ verbs API (Device::cm_*;
// docs/PROTOCOL.md §13), its messages carried by the engines over a loopback
// fabric in virtual time: connect, accept with private data carrying the
// memory key, a WRITE byte-exact, disconnect with both QPs in ERR; setup
// under 30 % loss of every frame (fault row 3 over real devices); refusals
// (no listener, consumer, busy); encrypted connections keyed per connection
// (row 31's set-up half: a wrong or missing key fails at setup with no QP
// past INIT at the refusing end); an unanswered request fails in bounded time.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/verbs_net.hpp"

using namespace omrc;

namespace {

std::array<std::uint8_t, 32> key_of(std::uint8_t fill) {
    std::array<std::uint8_t, 32> k{};
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(fill ^ (5 * i));
    return k;
}

/// One end: device, PD, CQ, a buffer registered for remote writes.
struct End {
    std::unique_ptr<Device> dev;
    std::unique_ptr<Pd> pd;
    std::unique_ptr<Cq> cq;
    std::vector<std::uint8_t> buf;
    std::unique_ptr<Mr> mr;
    std::vector<CmEvent> events;

    End(omrc::test::VirtualNet& net, std::uint32_t endpoint, DeviceOptions o = {}) {
        dev = net.open(endpoint, 100 + endpoint, o);
        pd = dev->alloc_pd();
        cq = dev->create_cq(1024);
        buf.assign(256 << 10, 0);
        mr = pd->reg_mr(buf.data(), buf.size(),
                        AccessFlags::local_write | AccessFlags::remote_write | AccessFlags::remote_read);
        REQUIRE(mr != nullptr);
    }
    std::unique_ptr<Qp> qp() {
        auto q = pd->create_qp(omrc::test::init_attr(*cq, *cq));
        REQUIRE(q != nullptr);
        return q;
    }
    /// Polls the CM events into `events`; true when one of `type` is there.
    bool has(CmEventType type) {
        CmEvent ev[8];
        for (std::size_t n; (n = dev->cm_poll(ev)) != 0;) events.insert(events.end(), ev, ev + n);
        for (const CmEvent& e : events)
            if (e.type == type) return true;
        return false;
    }
    CmEvent take(CmEventType type) {
        for (auto it = events.begin(); it != events.end(); ++it)
            if (it->type == type) {
                const CmEvent e = *it;
                events.erase(it);
                return e;
            }
        FAIL("no CM event " << to_string(type));
        return {};
    }
};

/// The MR's address and rkey as private data (12 bytes).
void put_key(CmConnParams& p, const Mr& mr, const std::vector<std::uint8_t>& buf) {
    const std::uint64_t addr = omrc::test::addr_of(buf.data());
    const std::uint32_t rkey = mr.rkey();
    std::memcpy(p.private_data.data(), &addr, 8);
    std::memcpy(p.private_data.data() + 8, &rkey, 4);
    p.private_len = 12;
}

constexpr std::uint64_t kService = 0x4F4D5243'00000007ull;

/// A connects to B's kService; B accepts with its MR in the private data.
/// Returns false (with the events left in the ends) when setup did not end
/// with established at both.
bool setup(omrc::test::VirtualNet& net, End& a, End& b, Qp& qa, Qp& qb, std::uint32_t& id_a, std::uint32_t& id_b,
           Encryption enc = Encryption::device_default, std::uint64_t budget_ns = 3'000'000'000ull) {
    CmConnParams p;
    p.service_id = kService;
    p.peer = b.dev->address();
    p.encryption = enc;
    REQUIRE(a.dev->cm_connect(qa, p, &id_a) == 0);
    if (!net.run({a.dev.get(), b.dev.get()},
                 [&] { return b.has(CmEventType::connect_request) || a.has(CmEventType::rejected); }, budget_ns))
        return false;
    if (!b.has(CmEventType::connect_request)) return false;
    const CmEvent req = b.take(CmEventType::connect_request);
    CHECK(req.service_id == kService);
    CHECK(req.peer.addr == a.dev->address().addr);
    id_b = req.id;
    CmConnParams acc;
    put_key(acc, *b.mr, b.buf);
    REQUIRE(b.dev->cm_accept(req.id, qb, acc) == 0);
    CHECK(qb.state() == QpState::rts);
    return net.run({a.dev.get(), b.dev.get()},
                   [&] { return a.has(CmEventType::established) && b.has(CmEventType::established); }, budget_ns);
}

/// A writes `len` patterned bytes into B's buffer at the address B's REP named.
void write_and_check(omrc::test::VirtualNet& net, End& a, End& b, Qp& qa, const CmEvent& established, std::size_t len) {
    REQUIRE(established.private_len == 12);
    std::uint64_t raddr = 0;
    std::uint32_t rkey = 0;
    std::memcpy(&raddr, established.private_data.data(), 8);
    std::memcpy(&rkey, established.private_data.data() + 8, 4);
    for (std::size_t i = 0; i < len; ++i) a.buf[i] = static_cast<std::uint8_t>(i * 13 + 7);
    const Sge sge{omrc::test::addr_of(a.buf.data()), static_cast<std::uint32_t>(len), a.mr->lkey()};
    SendWr wr;
    wr.wr_id = 77;
    wr.opcode = WrOpcode::rdma_write;
    wr.send_flags = SendFlags::signaled;
    wr.sg_list = {&sge, 1};
    wr.remote_addr = raddr;
    wr.rkey = rkey;
    REQUIRE(qa.post_send(wr) == 0);
    std::vector<Wc> got;
    REQUIRE(net.run({a.dev.get(), b.dev.get()},
                    [&] {
                        auto more = omrc::test::drain(*a.cq);
                        got.insert(got.end(), more.begin(), more.end());
                        return !got.empty();
                    },
                    2'000'000'000ull));
    REQUIRE(got.size() == 1);
    CHECK(got[0].status == WcStatus::success);
    CHECK(got[0].wr_id == 77);
    CHECK(std::memcmp(a.buf.data(), b.buf.data(), len) == 0);
}

std::uint64_t engine_counter(const Device& d, const char* name) {
    const nlohmann::json j = nlohmann::json::parse(d.stats_json());
    return j["engine"].value(name, std::uint64_t{0});
}

}  // namespace

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

TEST_CASE("cm__setup_under_30_percent_loss", "[unit][verbs][cm][fault]") {
    // Fault row 3 over real devices: every frame (CM messages among them)
    // lost with probability 0.3; 20 connections in turn, each moves data.
    omrc::test::VirtualNet net(2, 4, 9);
    End a(net, 0), b(net, 1);
    REQUIRE(b.dev->cm_listen(kService) == 0);
    loopback::Impairment imp;
    imp.loss.rate = 0.3;
    net.fabric.set_impairment_all(imp);
    std::vector<std::unique_ptr<Qp>> keep;
    for (int i = 0; i < 20; ++i) {
        INFO("connection " << i);
        auto qa = a.qp();
        auto qb = b.qp();
        std::uint32_t id_a = 0, id_b = 0;
        REQUIRE(setup(net, a, b, *qa, *qb, id_a, id_b));
        write_and_check(net, a, b, *qa, a.take(CmEventType::established), 8192);
        (void)b.take(CmEventType::established);
        keep.push_back(std::move(qa));
        keep.push_back(std::move(qb));
    }
    // Frames were lost both ways, CM messages among them: resends made up for them.
    std::uint64_t lost = 0;
    for (std::uint32_t p = 0; p < 4; ++p)
        lost += net.fabric.link_counters(0, 1, p).lost_random + net.fabric.link_counters(1, 0, p).lost_random;
    CHECK(lost > 100);
    CHECK(engine_counter(*a.dev, "cm_frames_sent") > 60);  // ≥ 3 per connection without loss
    const nlohmann::json ja = nlohmann::json::parse(a.dev->stats_json());
    CAPTURE(ja["engine"].dump());
    CHECK(engine_counter(*a.dev, "cm_unroutable") == 0);
    CHECK(ja["engine"]["rx_drops"].value("cm_invalid", 0) == 0);
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
        write_and_check(net, a, b, *qa, a.take(CmEventType::established), 65536);
        // The QPs' keys came from the connection's nonces: a rotation still works.
        CHECK(qa->rotate_key() == 0);
        write_and_check(net, a, b, *qa, [&] {
            CmEvent e;
            e.private_len = 12;
            const std::uint64_t addr = omrc::test::addr_of(b.buf.data());
            const std::uint32_t rkey = b.mr->rkey();
            std::memcpy(e.private_data.data(), &addr, 8);
            std::memcpy(e.private_data.data() + 8, &rkey, 4);
            return e;
        }(), 30000);
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
