// SPDX-License-Identifier: BSD-3-Clause
// Fault rows 3, 20 and 25 over real devices: the connection manager
// (docs/PROTOCOL.md §13) carried by the engines of loopback devices in
// virtual time, through the verbs API.
//   row 3   50 back-to-back setups under 30 % loss of every frame; each
//           connection moves data and is disconnected; nothing left after.
//   row 20  every frame of two connections (setup, data, teardown)
//           delivered again, 300 ms later and 3.5 s later (past time-wait
//           and the cookie's life), while the second connection lives: no
//           new connection, 0 bytes placed, the live QP undisturbed.
//   row 25  a flood of REQs from forged addresses (20,000 at 2 M/s) and a
//           real peer that asks for 64 connections at once from a listener
//           with 8 QPs left (16 requests per peer): the forged ones leave no
//           state, the real peer's extra requests are refused cleanly (peer
//           limit, no QP left), a well-behaved requester still connects, and an existing
//           QP's p99 WRITE latency stays within 2 × its baseline measured in
//           the same case (virtual time).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>

#include "support/cm_ends.hpp"
#include "support/forged_cm.hpp"

using namespace omrc;
using namespace omrc::test::cm;
using omrc::test::VirtualNet;

namespace {

/// Something that acts on the fabric on its own schedule (a flood, a
/// ping-pong): tick() at every pass, next_ns() joins the clock's jumps.
struct Actor {
    virtual ~Actor() = default;
    virtual void tick(std::uint64_t now_ns) = 0;
    [[nodiscard]] virtual std::uint64_t next_ns() const = 0;
};

/// VirtualNet::run with actors beside the devices.
bool run_with(VirtualNet& net, std::initializer_list<Device*> devs, std::initializer_list<Actor*> actors,
              const std::function<bool()>& done, std::uint64_t budget_ns) {
    const std::uint64_t deadline = net.now_ns + budget_ns;
    for (std::size_t pass = 0; pass < 50'000'000; ++pass) {
        for (Actor* a : actors) a->tick(net.now_ns);
        for (Device* d : devs) d->progress();
        if (done()) return true;
        std::uint64_t next = net.fabric.next_event_ns();
        for (Device* d : devs) next = std::min(next, d->next_wakeup_ns());
        for (Actor* a : actors) next = std::min(next, a->next_ns());
        if (next == UINT64_MAX) return done();
        net.now_ns = std::max(net.now_ns, next);
        if (net.now_ns > deadline) return done();
    }
    return done();
}

/// REQs from forged source addresses, sent from a raw port of the fabric at
/// a fixed rate; whatever comes back to that port is counted and dropped.
struct ForgedFlood final : Actor {
    std::unique_ptr<driver::Driver> port;
    DeviceAddress target;
    std::uint32_t endpoint = 0;
    std::uint64_t start_ns = 0, period_ns = 500;
    std::uint64_t total = 0, sent = 0, sent_bytes = 0;
    std::uint64_t answers = 0, answer_bytes = 0;
    std::mt19937_64 rng{25};

    void tick(std::uint64_t now) override {
        wire::RxFrame rx[64];
        for (std::size_t n; (n = port->rx_burst(rx, now)) != 0;)
            for (std::size_t i = 0; i < n; ++i) {
                ++answers;
                answer_bytes += rx[i].len;
            }
        while (sent < total && start_ns + sent * period_ns <= now) send_one(now);
    }
    [[nodiscard]] std::uint64_t next_ns() const override {
        return sent < total ? start_ns + sent * period_ns : UINT64_MAX;
    }

private:
    void send_one(std::uint64_t now) {
        const auto plane = static_cast<std::uint8_t>(sent % target.planes);
        // A guessed cookie half of the time (it never verifies), none otherwise.
        const auto f = omrc::test::forged_req_frame(rng, target, kService, endpoint, plane, sent % 2 == 1);
        REQUIRE(omrc::test::send_raw(*port, f, plane, now));
        ++sent;
        sent_bytes += f.size();
    }
};

/// One 4 KiB WRITE at a time on an existing QP, each timed in virtual time.
struct PingPong final : Actor {
    End& a;
    Qp& qa;
    std::uint64_t raddr = 0;
    std::uint32_t rkey = 0;
    bool outstanding = false;
    bool failed = false;
    std::uint64_t posted_ns = 0, gap_ns = 2'000;
    std::uint64_t next_post_ns = 0;
    std::vector<std::uint64_t> latencies;

    PingPong(End& end, Qp& qp, const CmEvent& established) : a(end), qa(qp) { get_key(established, raddr, rkey); }
    void tick(std::uint64_t now) override {
        Wc wc[8];
        for (std::size_t n; (n = a.cq->poll(wc)) != 0;)
            for (std::size_t i = 0; i < n; ++i) {
                if (wc[i].wr_id != 0x9196) continue;
                if (wc[i].status != WcStatus::success) failed = true;
                latencies.push_back(now - posted_ns);
                outstanding = false;
                next_post_ns = now + gap_ns;
            }
        if (outstanding || now < next_post_ns) return;
        post_write(qa, *a.mr, a.buf.data(), 4096, raddr, rkey, 0x9196);
        outstanding = true;
        posted_ns = now;
    }
    [[nodiscard]] std::uint64_t next_ns() const override { return outstanding ? UINT64_MAX : next_post_ns; }
    /// The 99th percentile of the latencies from `from` on, ns.
    [[nodiscard]] std::uint64_t p99(std::size_t from) const {
        std::vector<std::uint64_t> v(latencies.begin() + static_cast<std::ptrdiff_t>(from), latencies.end());
        REQUIRE(v.size() >= 100);
        std::sort(v.begin(), v.end());
        return v[v.size() * 99 / 100];
    }
};

nlohmann::json stats_of(const Device& d) { return nlohmann::json::parse(d.stats_json()); }

}  // namespace

TEST_CASE("row 3: 50 back-to-back connection setups under 30 % loss", "[fault][cm]") {
    VirtualNet net(2, 8, 303);
    End a(net, 0), b(net, 1);
    REQUIRE(b.dev->cm_listen(kService) == 0);
    loopback::Impairment imp;
    imp.loss.rate = 0.3;
    net.fabric.set_impairment_all(imp);
    for (int i = 0; i < 50; ++i) {
        INFO("connection " << i);
        auto qa = a.qp();
        auto qb = b.qp();
        std::uint32_t id_a = 0, id_b = 0;
        REQUIRE(setup(net, a, b, *qa, *qb, id_a, id_b));
        write_and_check(net, a, b, *qa, a.take(CmEventType::established), 8192, static_cast<std::uint8_t>(i));
        (void)b.take(CmEventType::established);
        // Back to back: the requester ends it, both see it end, the QPs go.
        REQUIRE(a.dev->cm_disconnect(id_a) == 0);
        REQUIRE(net.run({a.dev.get(), b.dev.get()},
                        [&] { return a.has(CmEventType::disconnected) && b.has(CmEventType::disconnected); },
                        3'000'000'000ull));
        (void)a.take(CmEventType::disconnected);
        CHECK(b.take(CmEventType::disconnected).id == id_b);
    }
    std::uint64_t lost = 0;
    for (std::uint32_t p = 0; p < 8; ++p)
        lost += net.fabric.link_counters(0, 1, p).lost_random + net.fabric.link_counters(1, 0, p).lost_random;
    CHECK(lost > 200);
    CHECK(cm_counter(*a.dev, "retransmits") > 0);  // the losses hit CM messages too
    // Nothing left: no live connection at either end (time-wait entries
    // only), no QP, every CM frame well-formed.
    for (End* e : {&a, &b}) {
        const nlohmann::json j = stats_of(*e->dev);
        CAPTURE(j["cm"].dump());
        CHECK(j["cm"]["live"] == 0);
        CHECK(j["cm"]["established"] == 50);
        CHECK(j["cm"]["timeouts"] == 0);
        CHECK(j["qps"].empty());
        CHECK(j["engine"]["rx_drops"]["cm_invalid"] == 0);
        CHECK(j["engine"]["cm_unroutable"] == 0);
    }
    CHECK(a.events.empty());
    CHECK(b.events.empty());
}

TEST_CASE("row 20: setup, data and teardown frames replayed after completion and after a reconnect",
          "[fault][cm]") {
    // Every frame A sends to B is delivered a second time `late` ns after
    // the first (the fabric's late duplicates stand for a captured and
    // replayed trace). Connection 1 connects, writes, and is torn down;
    // connection 2 connects and writes; then B's buffer is cleared and the
    // copies of both connections' frames arrive.
    const std::uint64_t late = GENERATE(300'000'000ull, 3'500'000'000ull);
    CAPTURE(late);
    VirtualNet net(2, 8, 2020);
    End a(net, 0), b(net, 1);
    REQUIRE(b.dev->cm_listen(kService) == 0);
    loopback::Impairment imp;
    imp.duplicate = {.rate = 1.0, .extra_delay_ns = late, .select = loopback::Select::all};
    net.fabric.set_impairment(0, 1, imp);
    const std::uint64_t t0 = net.now_ns;

    auto qa1 = a.qp();
    auto qb1 = b.qp();
    std::uint32_t id_a1 = 0, id_b1 = 0;
    REQUIRE(setup(net, a, b, *qa1, *qb1, id_a1, id_b1));
    write_and_check(net, a, b, *qa1, a.take(CmEventType::established), 65536, 1);
    (void)b.take(CmEventType::established);
    REQUIRE(a.dev->cm_disconnect(id_a1) == 0);
    REQUIRE(net.run({a.dev.get(), b.dev.get()},
                    [&] { return a.has(CmEventType::disconnected) && b.has(CmEventType::disconnected); },
                    100'000'000ull));
    (void)a.take(CmEventType::disconnected);
    (void)b.take(CmEventType::disconnected);
    qa1.reset();
    qb1.reset();

    auto qa2 = a.qp();
    auto qb2 = b.qp();
    std::uint32_t id_a2 = 0, id_b2 = 0;
    REQUIRE(setup(net, a, b, *qa2, *qb2, id_a2, id_b2));
    const CmEvent est2 = a.take(CmEventType::established);
    (void)b.take(CmEventType::established);
    write_and_check(net, a, b, *qa2, est2, 65536, 2);
    REQUIRE(net.now_ns - t0 < late / 2);  // everything so far happened before the first copy arrives

    // The copies: REQs (with and without cookie), RTUs, WRITEs, ACKs, DREQ and DREP of both connections.
    std::fill(b.buf.begin(), b.buf.end(), 0);
    const std::uint64_t requests_before = cm_counter(*b.dev, "requests");
    net.run({a.dev.get(), b.dev.get()}, [] { return false; }, late + 50'000'000ull);
    std::uint64_t copies = 0;
    for (std::uint32_t p = 0; p < 8; ++p) copies += net.fabric.link_counters(0, 1, p).duplicated;
    // At least 16 data packets per connection and A's CM messages: REQ, REQ
    // with the cookie, RTU for both, the first's DREQ.
    CHECK(copies >= 2 * 16 + 3 + 3 + 1);
    CHECK(std::all_of(b.buf.begin(), b.buf.end(), [](std::uint8_t x) { return x == 0; }));  // 0 bytes written
    CHECK(cm_counter(*b.dev, "requests") == requests_before);  // no new connection
    CHECK_FALSE(b.has(CmEventType::connect_request));
    CHECK_FALSE(b.has(CmEventType::disconnected));
    CHECK_FALSE(a.has(CmEventType::disconnected));
    CHECK(qa2->state() == QpState::rts);
    CHECK(qb2->state() == QpState::rts);
    const nlohmann::json jb = stats_of(*b.dev);
    CAPTURE(jb["cm"].dump(), jb["engine"]["rx_drops"].dump());
    CHECK(jb["cm"]["live"] == 1);
    if (late < 2'000'000'000ull) {
        CHECK(jb["cm"]["replays"] > 0);  // connection 1's REQ found in time-wait
    } else {
        CHECK(jb["cm"]["cookies_bad"] > 0);  // time-wait is over, and so is the cookie's life
    }
    // The live connection still moves data.
    write_and_check(net, a, b, *qa2, est2, 30000, 3);
}

TEST_CASE("row 25: a flood of connection requests", "[fault][cm]") {
    // Endpoints: 0 = A (an existing connection to B, then new ones), 1 = B
    // (the listener), 2 = a raw port sending REQs from forged addresses,
    // 3 = C, a real peer that asks for many connections at once.
    VirtualNet net(4, 8, 2525, 100'000'000'000ull);
    DeviceOptions small;
    small.max_qps = 12;  // B: the existing QP, 3 of A's, and room for 8 more
    End a(net, 0), b(net, 1, small), c(net, 3);
    REQUIRE(b.dev->cm_listen(kService, {.backlog = 32, .per_peer = 16}) == 0);
    auto qa = a.qp();
    auto qb = b.qp();
    std::uint32_t id_a = 0, id_b = 0;
    REQUIRE(setup(net, a, b, *qa, *qb, id_a, id_b));
    PingPong ping(a, *qa, a.take(CmEventType::established));
    (void)b.take(CmEventType::established);
    Device* devs[] = {a.dev.get(), b.dev.get(), c.dev.get()};
    auto run = [&](std::initializer_list<Actor*> actors, const std::function<bool()>& done, std::uint64_t budget) {
        return run_with(net, {devs[0], devs[1], devs[2]}, actors, done, budget);
    };
    // B's application: accept every request while a QP can be had, else refuse it as no_resources.
    std::vector<std::unique_ptr<Qp>> b_qps;
    std::uint64_t b_refused = 0;
    auto serve_b = [&] {
        CmEvent ev[16];
        for (std::size_t n; (n = b.dev->cm_poll(ev)) != 0;)
            for (std::size_t i = 0; i < n; ++i) {
                if (ev[i].type != CmEventType::connect_request) continue;
                auto q = b.pd->create_qp(omrc::test::init_attr(*b.cq, *b.cq));
                if (q == nullptr) {
                    REQUIRE(b.dev->cm_reject(ev[i].id, {}, CmReason::no_resources) == 0);
                    ++b_refused;
                    continue;
                }
                CmConnParams acc;
                put_key(acc, *b.mr, b.buf);
                REQUIRE(b.dev->cm_accept(ev[i].id, *q, acc) == 0);
                b_qps.push_back(std::move(q));
            }
    };
    struct Serve final : Actor {
        std::function<void()> f;
        void tick(std::uint64_t) override { f(); }
        [[nodiscard]] std::uint64_t next_ns() const override { return UINT64_MAX; }
    } serve;
    serve.f = serve_b;

    // Baseline: 2,000 timed WRITEs with nothing else on the fabric.
    REQUIRE(run({&ping, &serve}, [&] { return ping.latencies.size() >= 2000; }, 1'000'000'000ull));
    const std::uint64_t base_p99 = ping.p99(100);
    const std::size_t flood_from = ping.latencies.size();

    // The flood: 20,000 forged REQs over 10 ms. During it A sets up 3 more
    // connections, one after the other, and then C asks for 64 at once.
    ForgedFlood flood;
    flood.port = net.fabric.attach(2);
    flood.endpoint = 2;
    flood.target = b.dev->address();
    flood.start_ns = net.now_ns;
    flood.total = 20'000;
    std::vector<std::unique_ptr<Qp>> c_qps;
    std::map<std::uint32_t, std::size_t> c_ids;  // connection id → index in c_qps
    auto c_burst = [&] {
        for (int i = 0; i < 64; ++i) {
            c_qps.push_back(c.qp());
            CmConnParams p;
            p.service_id = kService;
            p.peer = b.dev->address();
            std::uint32_t id = 0;
            REQUIRE(c.dev->cm_connect(*c_qps.back(), p, &id) == 0);
            c_ids[id] = c_qps.size() - 1;
        }
    };
    std::vector<std::unique_ptr<Qp>> a_new, b_new;
    std::vector<std::uint64_t> a_setup_ns;
    std::uint64_t a_started = 0;
    std::uint32_t a_id = 0;
    auto a_next = [&] {
        a_new.push_back(a.qp());
        CmConnParams p;
        p.service_id = kService;
        p.peer = b.dev->address();
        REQUIRE(a.dev->cm_connect(*a_new.back(), p, &a_id) == 0);
        a_started = net.now_ns;
    };
    a_next();
    std::map<std::uint32_t, CmEvent> c_end;  // C's connections: established or rejected
    std::map<CmReason, int> c_reasons;
    auto poll_ac = [&] {
        CmEvent ev[16];
        for (std::size_t n; (n = c.dev->cm_poll(ev)) != 0;)
            for (std::size_t i = 0; i < n; ++i) {
                c_end[ev[i].id] = ev[i];
                if (ev[i].type != CmEventType::established) ++c_reasons[ev[i].reason];
            }
        for (std::size_t n; (n = a.dev->cm_poll(ev)) != 0;)
            for (std::size_t i = 0; i < n; ++i) {
                REQUIRE(ev[i].id == a_id);
                REQUIRE(ev[i].type == CmEventType::established);
                a_setup_ns.push_back(net.now_ns - a_started);
                if (a_setup_ns.size() < 3) a_next();
                else c_burst();
            }
    };
    std::uint64_t b_live_max = 0, sampled_ns = 0;
    struct Watch final : Actor {
        std::function<void()> f;
        void tick(std::uint64_t) override { f(); }
        [[nodiscard]] std::uint64_t next_ns() const override { return UINT64_MAX; }
    } watch;
    watch.f = [&] {
        poll_ac();
        if (net.now_ns - sampled_ns < 50'000) return;  // B's live count every 50 µs (a stats document each)
        sampled_ns = net.now_ns;
        b_live_max = std::max(b_live_max, cm_counter(*b.dev, "live"));
    };
    REQUIRE(run({&ping, &serve, &flood, &watch},
                [&] { return flood.sent == flood.total && c_end.size() == 64 && a_setup_ns.size() == 3; },
                2'000'000'000ull));
    // Let the last COOKIEs drain, WRITEs go on.
    run({&ping, &serve, &flood, &watch}, [] { return false; }, 2'000'000ull);
    const std::uint64_t flood_p99 = ping.p99(flood_from);
    const std::uint64_t flood_ns = flood.total * flood.period_ns;
    REQUIRE(a_setup_ns.size() == 3);
    const nlohmann::json jb = stats_of(*b.dev);
    // `omrc_fault_tests "row 25*" -s` prints the figures.
    INFO("baseline p99 " << base_p99 << " ns, under the flood " << flood_p99 << " ns over "
                         << ping.latencies.size() - flood_from << " WRITEs; " << flood.sent << " forged REQs ("
                         << flood.sent_bytes << " B) in " << flood_ns << " ns drew " << flood.answers << " answers ("
                         << flood.answer_bytes << " B); A's setups under the flood " << a_setup_ns[0] << ", "
                         << a_setup_ns[1] << ", " << a_setup_ns[2] << " ns; B's live connections at most "
                         << b_live_max << "; B's CM " << jb["cm"].dump());
    CHECK_FALSE(ping.failed);
    CHECK(flood_p99 <= 2 * base_p99);
    // The forged REQs: each answered by at most one COOKIE, no more bytes
    // back than came in; none became a request (C's and A's are all there is).
    CHECK(flood.answers <= flood.sent);
    CHECK(flood.answer_bytes <= flood.sent_bytes);
    CHECK(jb["cm"]["cookies_bad"] >= flood.sent / 2);
    // B's connections at most: the existing one, A's 3, and C's pending
    // (per-peer limit 16; the established among them).
    CHECK(b_live_max <= 1 + 3 + 16);
    // C: every request ended, established or refused with a clear reason, none by timeout.
    REQUIRE(c_end.size() == 64);
    int established = 0;
    for (const auto& [id, ev] : c_end) {
        INFO("C's connection " << id << ": " << to_string(ev.type) << " " << to_string(ev.reason));
        Qp& q = *c_qps.at(c_ids.at(id));
        if (ev.type == CmEventType::established) {
            ++established;
            CHECK(q.state() == QpState::rts);
        } else {
            CHECK(ev.type == CmEventType::rejected);
            CHECK((ev.reason == CmReason::peer_limit || ev.reason == CmReason::no_resources ||
                   ev.reason == CmReason::busy));
            CHECK(q.state() == QpState::init);  // nothing moved
        }
    }
    CAPTURE(c_reasons.size(), b_refused, established);
    CHECK(established == 12 - 1 - 3);  // B's QPs: the existing one, A's 3, C's 8
    CHECK(b_refused > 0);
    CHECK(c_reasons[CmReason::peer_limit] + c_reasons[CmReason::no_resources] + c_reasons[CmReason::busy] ==
          64 - established);
    CHECK(jb["cm"]["requests"] == 1 + 3 + 64 - c_reasons[CmReason::peer_limit] - c_reasons[CmReason::busy]);
    CHECK(jb["cm"]["live"] == 1 + 3 + established);
    CHECK(jb["cm"]["timeouts"] == 0);
}
