// SPDX-License-Identifier: BSD-3-Clause
// Shared receive queues through the C++ verbs API: QPs of one device take
// their receives from one Srq (each in its own message order), the limit
// event reaches Device::poll_async_events, and what ibverbs refuses is
// refused; with worker threads, the QPs live on their SRQ's worker.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/verbs_net.hpp"

using namespace omrc;
using omrc::test::addr_of;
using omrc::test::drain;
using omrc::test::init_attr;

namespace {

/// One device in virtual time (the loopback to itself), `pairs` QP pairs
/// a[i] → b[i], every b[i] on one SRQ of `max_wr` receives.
struct SrqSetup {
    omrc::test::VirtualNet net;
    std::unique_ptr<Device> dev;
    std::unique_ptr<Pd> pd;
    std::unique_ptr<Cq> scq, rcq;
    std::unique_ptr<Srq> srq;
    std::vector<std::unique_ptr<Qp>> a, b;
    std::vector<std::uint8_t> src, dst;
    std::unique_ptr<Mr> src_mr, dst_mr;

    /// One endpoint of a virtual-clock loopback fabric with a queue per worker.
    static loopback::FabricConfig fabric(std::uint32_t workers) {
        loopback::FabricConfig c;
        c.endpoints = 1;
        c.planes = 4;
        c.queues = workers;
        c.seed = 5;
        c.mode = loopback::ClockMode::virtual_clock;
        return c;
    }

    SrqSetup(std::size_t pairs, SrqAttr attr, std::uint32_t workers = 1)
        : net(fabric(workers)), src(64 << 10), dst(64 << 10) {
        DeviceOptions o;
        o.workers = workers;
        dev = net.open(0, 5, o);
        pd = dev->alloc_pd();
        scq = dev->create_cq(256);
        rcq = dev->create_cq(256);
        int err = -1;
        srq = pd->create_srq(attr, &err);
        REQUIRE(err == 0);
        REQUIRE(srq != nullptr);
        for (std::size_t i = 0; i < pairs; ++i) {
            a.push_back(pd->create_qp(init_attr(*scq, *rcq)));
            QpInitAttr ia = init_attr(*scq, *rcq);
            ia.srq = srq.get();
            b.push_back(pd->create_qp(ia, &err));
            REQUIRE(err == 0);
            CHECK(b.back()->worker() == srq->worker());
            omrc::test::connect(*a.back(), *dev, *b.back(), *dev);
        }
        for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 13 + i / 251);
        src_mr = pd->reg_mr(src.data(), src.size(), AccessFlags::local_write);
        dst_mr = pd->reg_mr(dst.data(), dst.size(), AccessFlags::local_write | AccessFlags::remote_write);
    }
    ~SrqSetup() {
        a.clear();
        b.clear();
    }
    bool run(const std::function<bool()>& done, std::uint64_t budget_ns = 200'000'000) {
        return net.run({dev.get()}, done, budget_ns);
    }
    /// Receive i: dst bytes [i * each, (i + 1) * each).
    int post_receives(std::size_t first, std::size_t n, std::uint32_t each) {
        std::vector<Sge> sges;
        std::vector<RecvWr> wrs;
        sges.reserve(n);
        for (std::size_t i = first; i < first + n; ++i) sges.push_back({addr_of(dst.data()) + i * each, each, dst_mr->lkey()});
        for (std::size_t i = 0; i < n; ++i) wrs.push_back({100 + first + i, {&sges[i], 1}});
        return srq->post_recv(wrs);
    }
    int send(Qp& qp, std::uint64_t wr_id, std::size_t offset, std::uint32_t len) {
        const Sge sge{addr_of(src.data()) + offset, len, src_mr->lkey()};
        SendWr w;
        w.wr_id = wr_id;
        w.opcode = WrOpcode::send;
        w.send_flags = SendFlags::signaled;
        w.sg_list = {&sge, 1};
        return qp.post_send(w);
    }
};

}  // namespace

TEST_CASE("srq__three_qps_share_one_srq", "[unit][verbs]") {
    SrqAttr attr;
    attr.max_wr = 64;
    attr.srq_limit = 4;
    SrqSetup s(3, attr);
    constexpr std::uint32_t kEach = 4096;
    REQUIRE(s.post_receives(0, 12, kEach) == 0);
    CHECK(s.srq->size() == 12);
    // QP i sends messages i*4 .. i*4+3 of the source, 3000 bytes each.
    for (std::size_t q = 0; q < 3; ++q)
        for (std::size_t m = 0; m < 4; ++m) REQUIRE(s.send(*s.a[q], q * 10 + m, (q * 4 + m) * 4000, 3000) == 0);
    std::vector<Wc> recv, sent;
    REQUIRE(s.run([&] {
        for (const Wc& wc : drain(*s.rcq)) recv.push_back(wc);
        for (const Wc& wc : drain(*s.scq)) sent.push_back(wc);
        return recv.size() == 12 && sent.size() == 12;
    }));
    std::map<std::uint32_t, std::size_t> next;  // per receiving QP: messages seen
    std::vector<int> used(12, 0);
    for (const Wc& wc : recv) {
        REQUIRE(wc.status == WcStatus::success);
        REQUIRE(wc.byte_len == 3000);
        const std::size_t slot = wc.wr_id - 100;
        REQUIRE(slot < 12);
        ++used[slot];
        std::size_t q = 0;
        while (q < 3 && s.b[q]->qp_num() != wc.qp_num) ++q;
        REQUIRE(q < 3);
        const std::size_t m = next[wc.qp_num]++;
        INFO("QP " << q << " message " << m << " in receive " << slot);
        CHECK(std::equal(s.src.begin() + (q * 4 + m) * 4000, s.src.begin() + (q * 4 + m) * 4000 + 3000,
                         s.dst.begin() + slot * kEach));
    }
    for (int u : used) CHECK(u == 1);
    for (const Wc& wc : sent) CHECK(wc.status == WcStatus::success);
    // Fewer than 4 left once the 9th receive was taken: one limit event, then disarmed.
    AsyncEvent ev[4];
    REQUIRE(s.dev->poll_async_events(ev) == 1);
    CHECK(ev[0].type == AsyncEventType::srq_limit_reached);
    CHECK(ev[0].srq == s.srq.get());
    CHECK(s.dev->poll_async_events(ev) == 0);
    const SrqAttr q = s.srq->query();
    CHECK(q.max_wr == 64);
    CHECK(q.max_sge == 1);
    CHECK(q.srq_limit == 0);
    CHECK(s.srq->size() == 0);
    // The SRQ's counters in the device's stats.
    const auto j = nlohmann::json::parse(s.dev->stats_json());
    REQUIRE(j["srqs"].size() == 1);
    const auto& sj = j["srqs"][0];
    CHECK(sj["srqn"] == s.srq->srq_num());
    CHECK(sj["posted"] == 12);
    CHECK(sj["taken"] == 12);
    CHECK(sj["posted_now"] == 0);
    CHECK(sj["qps"] == 3);
    CHECK(sj["limit_events"] == 1);
}

TEST_CASE("srq__rnr_until_posted_and_modify", "[unit][verbs]") {
    SrqAttr attr;
    attr.max_wr = 2;
    SrqSetup s(1, attr);
    REQUIRE(s.send(*s.a[0], 1, 0, 500) == 0);
    s.run([] { return false; }, 2'000'000);
    CHECK(drain(*s.rcq).empty());  // no receive: RNR-NAKed, retried
    REQUIRE(s.post_receives(0, 2, 1024) == 0);
    CHECK(s.post_receives(2, 1, 1024) == ENOMEM);  // max_wr 2 posted
    std::vector<Wc> recv;
    REQUIRE(s.run([&] {
        for (const Wc& wc : drain(*s.rcq)) recv.push_back(wc);
        return recv.size() == 1;
    }));
    CHECK(recv[0].wr_id == 100);
    CHECK(std::equal(s.src.begin(), s.src.begin() + 500, s.dst.begin()));
    // Resize (not below what it holds), arm the limit.
    SrqAttr m;
    m.max_wr = 0;
    CHECK(s.srq->modify(m, SrqAttrMask::max_wr) == EINVAL);
    m.max_wr = 8;
    m.srq_limit = 2;
    REQUIRE(s.srq->modify(m, SrqAttrMask::max_wr | SrqAttrMask::limit) == 0);
    CHECK(s.srq->query().max_wr == 8);
    CHECK(s.srq->query().srq_limit == 2);
    m.srq_limit = 9;
    CHECK(s.srq->modify(m, SrqAttrMask::limit) == EINVAL);
    CHECK(s.srq->modify(m, 1u << 5) == EINVAL);
    REQUIRE(s.send(*s.a[0], 2, 1000, 700) == 0);
    REQUIRE(s.run([&] {
        for (const Wc& wc : drain(*s.rcq)) recv.push_back(wc);
        return recv.size() == 2;
    }));
    AsyncEvent ev[2];
    CHECK(s.dev->poll_async_events(ev) == 1);  // 0 left < 2
}

TEST_CASE("srq__refused_as_ibverbs_refuses", "[unit][verbs]") {
    SrqAttr attr;
    SrqSetup s(1, attr, 2);
    int err = 0;
    SrqAttr bad;
    bad.max_wr = 0;
    CHECK(s.pd->create_srq(bad, &err) == nullptr);
    CHECK(err == EINVAL);
    bad.max_wr = 65537;
    CHECK(s.pd->create_srq(bad, &err) == nullptr);
    bad = {};
    bad.max_sge = kMaxSge + 1;
    CHECK(s.pd->create_srq(bad, &err) == nullptr);
    bad = {};
    bad.srq_limit = bad.max_wr + 1;
    CHECK(s.pd->create_srq(bad, &err) == nullptr);
    CHECK(s.pd->create_srq({}, &err, 2) == nullptr);  // no worker 2
    // A QP with an SRQ has no receive queue.
    const Sge sge{addr_of(s.dst.data()), 64, s.dst_mr->lkey()};
    CHECK(s.b[0]->post_recv(RecvWr{1, {&sge, 1}}) == EINVAL);
    // Receives are checked against the SRQ's PD and its max_sge.
    const Sge bad_key{addr_of(s.dst.data()), 64, s.dst_mr->lkey() ^ 1};
    std::size_t bad_wr = 9;
    CHECK(s.srq->post_recv(std::array{RecvWr{1, {&sge, 1}}, RecvWr{2, {&bad_key, 1}}}, &bad_wr) == EINVAL);
    CHECK(bad_wr == 1);
    CHECK(s.srq->size() == 1);
    const Sge two[2] = {sge, sge};
    CHECK(s.srq->post_recv(RecvWr{3, two}) == EINVAL);
    // A QP must live on its SRQ's worker.
    QpInitAttr ia = init_attr(*s.scq, *s.rcq);
    ia.srq = s.srq.get();
    ia.worker = static_cast<int>(1 - s.srq->worker());
    CHECK(s.pd->create_qp(ia, &err) == nullptr);
    CHECK(err == EINVAL);
}

TEST_CASE("srq__worker_threads: QPs on the SRQ's worker thread", "[workers]") {
    loopback::FabricConfig fc;
    fc.endpoints = 1;
    fc.planes = 2;
    fc.queues = 2;
    fc.mode = loopback::ClockMode::real_time;
    loopback::Fabric fabric(fc);
    DeviceOptions o;
    o.driver_context = &fabric;
    o.args["endpoint"] = "0";
    o.workers = 2;
    o.worker_threads = WorkerThreads::own;
    o.min_ev_timeout_ns = 50'000'000;  // time-shared CI cores
    o.worker_sleep_ns = 20'000;
    int err = -1;
    auto dev = Device::open("loopback", o, &err);
    REQUIRE(err == 0);
    REQUIRE(dev->worker_threads());
    auto pd = dev->alloc_pd();
    auto cq = dev->create_cq(256);
    SrqAttr attr;
    attr.max_wr = 32;
    auto srq = pd->create_srq(attr, &err, 1);
    REQUIRE(srq != nullptr);
    std::vector<std::uint8_t> src(16 << 10), dst(16 << 10, 0);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 7 + i / 2048 * 29 + 1);
    auto smr = pd->reg_mr(src.data(), src.size(), AccessFlags::local_write);
    auto dmr = pd->reg_mr(dst.data(), dst.size(), AccessFlags::local_write | AccessFlags::remote_write);
    std::vector<std::unique_ptr<Qp>> a, b;
    for (int i = 0; i < 2; ++i) {
        a.push_back(pd->create_qp(init_attr(*cq, *cq)));
        QpInitAttr ia = init_attr(*cq, *cq);
        ia.srq = srq.get();
        b.push_back(pd->create_qp(ia));
        REQUIRE(b.back() != nullptr);
        CHECK(b.back()->worker() == 1);
        QpAttr base;
        base.timeout_ns = 500'000'000;
        omrc::test::connect(*a.back(), *dev, *b.back(), *dev, base);
    }
    std::vector<Sge> rs;
    std::vector<RecvWr> rw;
    for (std::size_t i = 0; i < 8; ++i) rs.push_back({addr_of(dst.data()) + i * 2048, 2048, dmr->lkey()});
    for (std::size_t i = 0; i < 8; ++i) rw.push_back({i, {&rs[i], 1}});
    REQUIRE(srq->post_recv(rw) == 0);
    for (std::size_t i = 0; i < 8; ++i) {
        const Sge sge{addr_of(src.data()) + i * 2048, 2048, smr->lkey()};
        SendWr w;
        w.wr_id = 50 + i;
        w.opcode = WrOpcode::send;
        w.send_flags = SendFlags::signaled;
        w.sg_list = {&sge, 1};
        REQUIRE(a[i % 2]->post_send(w) == 0);
    }
    std::size_t recvs = 0, sends = 0;
    std::map<std::uint32_t, std::vector<std::uint64_t>> taken;  // receiving QP → receives, in completion order
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((recvs < 8 || sends < 8) && std::chrono::steady_clock::now() < deadline) {
        dev->progress();
        Wc wc[16];
        const std::size_t n = cq->poll(wc);
        for (std::size_t k = 0; k < n; ++k) {
            CHECK(wc[k].status == WcStatus::success);
            (wc[k].opcode == WcOpcode::recv ? recvs : sends)++;
            if (wc[k].opcode == WcOpcode::recv) taken[wc[k].qp_num].push_back(wc[k].wr_id);
        }
        std::this_thread::yield();
    }
    CHECK(recvs == 8);
    CHECK(sends == 8);
    // QP j sent chunks j, j + 2, ...: its k-th receive holds chunk 2k + j.
    for (std::size_t j = 0; j < 2; ++j) {
        const auto& rs_of = taken[b[j]->qp_num()];
        REQUIRE(rs_of.size() == 4);
        for (std::size_t k = 0; k < 4; ++k) {
            const std::size_t chunk = 2 * k + j, slot = rs_of[k];
            INFO("QP " << j << " message " << k << " in receive " << slot);
            CHECK(std::equal(src.begin() + chunk * 2048, src.begin() + (chunk + 1) * 2048, dst.begin() + slot * 2048));
        }
    }
    a.clear();
    b.clear();
}
