// SPDX-License-Identifier: BSD-3-Clause
// Devices with several workers (DeviceOptions::workers): QP placement and the
// QPN's shard, transfers on every worker with the port steering by QPN and
// spreading (frames handed between workers), endpoint requests seen by every
// worker and answered once, worker threads over a real-time fabric, and the
// options' errors.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "drivers/loopback/loopback.hpp"
#include "support/verbs_net.hpp"

using namespace omrc;
using namespace omrc::test;

namespace {

/// Devices on one virtual-time loopback fabric with `workers` queues per endpoint.
struct WorkerNet : VirtualNet {
    WorkerNet(std::uint32_t workers, loopback::QueueSteering steering, std::uint32_t planes = 4,
              std::uint64_t seed = 7)
        : VirtualNet(config(workers, steering, planes, seed)) {}

    static loopback::FabricConfig config(std::uint32_t workers, loopback::QueueSteering steering,
                                         std::uint32_t planes, std::uint64_t seed) {
        loopback::FabricConfig c;
        c.endpoints = 2;
        c.planes = planes;
        c.queues = workers;
        c.steering = steering;
        c.seed = seed;
        c.mode = loopback::ClockMode::virtual_clock;
        return c;
    }

    std::unique_ptr<Device> open(std::uint32_t endpoint, std::uint32_t workers) {
        DeviceOptions o;
        o.workers = workers;
        return VirtualNet::open(endpoint, 100 + endpoint, o);
    }
};

/// One QP pair per worker of two devices, each moving `bytes` as 64 KiB WRITEs.
struct Flows {
    struct One {
        std::unique_ptr<Qp> qa, qb;
        std::vector<std::uint8_t> src, dst;
        std::unique_ptr<Mr> smr, dmr;
        std::size_t posted = 0, done = 0, errors = 0;
    };
    std::unique_ptr<Pd> pa, pb;
    std::unique_ptr<Cq> ca, cb;
    std::vector<One> flows;
    std::size_t msgs = 0;
    static constexpr std::size_t kMsg = 64u << 10;

    Flows(Device& a, Device& b, std::uint32_t n, std::size_t bytes, bool crossed) {
        pa = a.alloc_pd();
        pb = b.alloc_pd();
        ca = a.create_cq(4096);
        cb = b.create_cq(4096);
        msgs = bytes / kMsg;
        flows.resize(n);
        for (std::uint32_t i = 0; i < n; ++i) {
            One& f = flows[i];
            QpInitAttr ia = init_attr(*ca, *ca);
            ia.worker = static_cast<int>(i);
            f.qa = pa->create_qp(ia);
            ia = init_attr(*cb, *cb);
            // Crossed: the receiving QP lives on another worker than the sending one.
            ia.worker = static_cast<int>(crossed ? (i + 1) % n : i);
            f.qb = pb->create_qp(ia);
            REQUIRE(f.qa != nullptr);
            REQUIRE(f.qb != nullptr);
            f.src.resize(bytes);
            std::mt19937_64 rng(i + 1);
            for (auto& x : f.src) x = static_cast<std::uint8_t>(rng());
            f.dst.assign(bytes, 0);
            f.smr = pa->reg_mr(f.src.data(), bytes, AccessFlags::local_write);
            f.dmr = pb->reg_mr(f.dst.data(), bytes, AccessFlags::local_write | AccessFlags::remote_write);
            QpAttr base;
            base.evs = 32;
            connect(*f.qa, a, *f.qb, b, base);
        }
    }

    void post() {
        for (auto& f : flows) {
            while (f.posted < msgs && f.posted - f.done < 16) {
                const Sge sge{addr_of(f.src.data()) + f.posted * kMsg, static_cast<std::uint32_t>(kMsg), f.smr->lkey()};
                SendWr w;
                w.wr_id = f.posted;
                w.send_flags = SendFlags::signaled;
                w.sg_list = {&sge, 1};
                w.remote_addr = addr_of(f.dst.data()) + f.posted * kMsg;
                w.rkey = f.dmr->rkey();
                REQUIRE(f.qa->post_send(w) == 0);
                ++f.posted;
            }
        }
    }

    void poll() {
        Wc wc[64];
        for (std::size_t k = ca->poll(wc), i = 0; i < k; ++i) {
            for (auto& f : flows)
                if (f.qa->qp_num() == wc[i].qp_num) {
                    ++f.done;
                    if (wc[i].status != WcStatus::success) ++f.errors;
                }
        }
    }

    [[nodiscard]] bool finished() const {
        return std::all_of(flows.begin(), flows.end(), [&](const One& f) { return f.done == msgs; });
    }
};

nlohmann::json stats(const Device& d) { return nlohmann::json::parse(d.stats_json()); }

}  // namespace

TEST_CASE("workers__placement: QPs go to the worker asked for or in turn; the QPN names it", "[workers]") {
    WorkerNet net(4, loopback::QueueSteering::by_qpn);
    auto dev = net.open(0, 4);
    CHECK(dev->workers() == 4);
    CHECK_FALSE(dev->worker_threads());  // a caller's clock: progress() drives them
    auto pd = dev->alloc_pd();
    auto cq = dev->create_cq(64);
    std::vector<std::unique_ptr<Qp>> qps;
    for (int i = 0; i < 8; ++i) {
        QpInitAttr ia = init_attr(*cq, *cq);
        qps.push_back(pd->create_qp(ia));
        REQUIRE(qps.back() != nullptr);
        CHECK(qps.back()->worker() == static_cast<std::uint32_t>(i % 4));
        CHECK(core::qpn_shard(qps.back()->qp_num(), 2) == qps.back()->worker());
    }
    QpInitAttr ia = init_attr(*cq, *cq);
    ia.worker = 3;
    auto q3 = pd->create_qp(ia);
    REQUIRE(q3 != nullptr);
    CHECK(q3->worker() == 3);
    CHECK(core::qpn_shard(q3->qp_num(), 2) == 3);
    ia.worker = 4;
    int err = 0;
    CHECK(pd->create_qp(ia, &err) == nullptr);
    CHECK(err == EINVAL);
    const auto s = stats(*dev);
    CHECK(s["device"]["workers"] == 4);
    REQUIRE(s["device"]["per_worker"].size() == 4);
    CHECK(s["device"]["per_worker"][3]["qps"] == 3);
    CHECK(s["device"]["steering"]["kind"] == "by_qpn");
}

TEST_CASE("workers__transfer: a QP on every worker, steered by QPN and spread, byte-exact", "[workers]") {
    const auto steering = GENERATE(loopback::QueueSteering::by_qpn, loopback::QueueSteering::spread);
    const std::uint32_t workers = GENERATE(2u, 4u);
    const bool crossed = GENERATE(false, true);
    CAPTURE(static_cast<int>(steering), workers, crossed);
    WorkerNet net(workers, steering);
    auto a = net.open(0, workers);
    auto b = net.open(1, workers);
    Flows f(*a, *b, workers, 2u << 20, crossed);
    REQUIRE(net.run({a.get(), b.get()}, [&] {
        f.post();
        f.poll();
        return f.finished();
    }, 5'000'000'000));
    for (const auto& one : f.flows) {
        CHECK(one.errors == 0);
        CHECK(one.src == one.dst);
    }
    for (const Device* d : {a.get(), b.get()}) {
        const auto s = stats(*d);
        std::uint64_t foreign = 0, handed = 0, copies = 0;
        for (const auto& w : s["device"]["per_worker"]) {
            // Every frame reached the engine of its QP: none found no QP.
            CHECK(w["engine"]["rx_drops"]["no_qp"] == 0);
            CHECK(w["engine"]["rx_drops"]["wrong_source"] == 0);
            CHECK(w["exchange"]["dropped_ring_full"] == 0);
            CHECK(w["engine"]["rx_frames"].get<std::uint64_t>() > 0);
            foreign += w["exchange"]["rx_foreign"].get<std::uint64_t>();
            copies += w["exchange"]["endpoint_copies"].get<std::uint64_t>();
            handed += w["exchange"]["handed_in"].get<std::uint64_t>();
        }
        CHECK(handed == foreign + copies);  // everything handed over arrived
        const auto frames = s["driver"]["rx_frames"].get<std::uint64_t>();
        if (steering == loopback::QueueSteering::spread) {
            // RSS on the entropy: most frames land on another worker than their QP's.
            CHECK(foreign > frames / 4);
        } else {
            CHECK(foreign == 0);  // the fabric steers every QP frame; no endpoint response was asked for
        }
    }
}

TEST_CASE("workers__endpoint: a port-status update reaches every worker with a QP of the peer, answered once",
          "[workers]") {
    WorkerNet net(4, loopback::QueueSteering::by_qpn);
    auto a = net.open(0, 4);
    auto b = net.open(1, 4);
    Flows f(*a, *b, 4, 1u << 20, false);
    REQUIRE(net.run({a.get(), b.get()}, [&] {
        f.post();
        f.poll();
        return f.finished();
    }, 5'000'000'000));
    // Device a's plane 1 goes down and comes back: each of a's workers tells
    // its peers, again while the port stays down, and once it is back.
    net.fabric.set_link(0, 1, false);
    std::uint64_t until = net.now_ns + 1'000'000;
    net.run({a.get(), b.get()}, [&] { return net.now_ns >= until; }, 2'000'000);
    net.fabric.set_link(0, 1, true);
    until = net.now_ns + 1'000'000;  // the last updates and their answers arrive
    net.run({a.get(), b.get()}, [&] { return net.now_ns >= until; }, 2'000'000);
    const auto sa = stats(*a);
    const auto sb = stats(*b);
    const std::uint64_t sent = sa["engine"]["port_status_sent"];
    REQUIRE(sent > 0);
    // Each update was acted on by every worker of b (one answering, three observing)...
    CHECK(sb["engine"]["port_status_received"].get<std::uint64_t>() == 4 * sent);
    CHECK(sb["engine"]["ep_requests_observed"].get<std::uint64_t>() == 3 * sent);
    // ... and answered once, the answer reaching the worker of a that asked.
    CHECK(sb["engine"]["ep_responses_sent"].get<std::uint64_t>() == sent);
    CHECK(sa["engine"]["ep_responses_received"].get<std::uint64_t>() == sent);
    CHECK(sa["engine"]["rx_drops"]["unexpected"] == 0);
    for (const auto& w : sb["device"]["per_worker"]) CHECK(w["engine"]["port_status_received"] == sent);
}

TEST_CASE("workers__options: out-of-range workers and CPU lists are refused", "[workers]") {
    int err = 0;
    DeviceOptions o;
    o.workers = 0;
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o.workers = 17;
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o.workers = 2;
    o.cpus = {0};
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o.cpus = {0, -1};
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    // A shared fabric must have one queue per worker.
    WorkerNet net(2, loopback::QueueSteering::by_qpn);
    DeviceOptions s;
    s.driver_context = &net.fabric;
    s.workers = 4;
    s.clock = [&] { return net.now_ns; };
    CHECK(Device::open("loopback", s, &err) == nullptr);
    CHECK(err == EINVAL);
}

TEST_CASE("workers__threads: worker threads over a real-time fabric, posting and polling from the program's thread",
          "[workers]") {
    const std::uint32_t workers = GENERATE(1u, 2u);
    CAPTURE(workers);
    loopback::FabricConfig fc;
    fc.endpoints = 2;
    fc.planes = 2;
    fc.queues = workers;
    fc.mode = loopback::ClockMode::real_time;
    fc.max_frame_bytes = 4608;
    fc.ring_backpressure = true;
    loopback::Fabric fabric(fc);
    std::unique_ptr<Device> dev[2];
    for (std::uint32_t e = 0; e < 2; ++e) {
        DeviceOptions o;
        o.driver_context = &fabric;
        o.args["endpoint"] = std::to_string(e);
        o.workers = workers;
        o.worker_threads = WorkerThreads::own;
        o.min_ev_timeout_ns = 50'000'000;  // time-shared CI cores
        o.worker_sleep_ns = 20'000;
        int err = -1;
        dev[e] = Device::open("loopback", o, &err);
        REQUIRE(err == 0);
        CHECK(dev[e]->worker_threads());
    }
    Flows f(*dev[0], *dev[1], workers, 4u << 20, workers > 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!f.finished() && std::chrono::steady_clock::now() < deadline) {
        f.post();
        dev[0]->progress();  // collects what the workers completed
        f.poll();
        std::this_thread::yield();
    }
    REQUIRE(f.finished());
    for (const auto& one : f.flows) {
        CHECK(one.errors == 0);
        CHECK(one.src == one.dst);
    }
    const auto s = stats(*dev[0]);
    CHECK(s["device"]["worker_threads"] == true);
    for (const auto& w : s["device"]["per_worker"]) CHECK(w["thread"]["passes"].get<std::uint64_t>() > 0);
    // The QPs' state through a parked worker.
    for (const auto& one : f.flows) CHECK(one.qa->state() == QpState::rts);
    // Deregistration with the workers running: the MR is gone for the peer's next WRITE.
    Flows::One& first = f.flows.front();
    REQUIRE(first.dmr->deregister() == 0);
    const Sge sge{addr_of(first.src.data()), 4096, first.smr->lkey()};
    SendWr w;
    w.wr_id = 999;
    w.send_flags = SendFlags::signaled;
    w.sg_list = {&sge, 1};
    w.remote_addr = addr_of(first.dst.data());
    w.rkey = first.dmr->rkey();
    REQUIRE(first.qa->post_send(w) == 0);
    Wc wc{};
    bool got = false;
    while (!got && std::chrono::steady_clock::now() < deadline) {
        dev[0]->progress();
        got = f.ca->poll({&wc, 1}) == 1;
        std::this_thread::yield();
    }
    REQUIRE(got);
    CHECK(wc.wr_id == 999);
    CHECK(wc.status == WcStatus::rem_access_err);
}

TEST_CASE("workers__threads_post_errors: a full send queue and a QP not ready are refused at post", "[workers]") {
    DeviceOptions o;
    o.workers = 2;
    o.worker_threads = WorkerThreads::own;
    int err = -1;
    auto dev = Device::open("loopback", o, &err);
    REQUIRE(dev != nullptr);
    auto pd = dev->alloc_pd();
    auto cq = dev->create_cq(64);
    QpCap cap;
    cap.max_send_wr = 4;
    auto qa = pd->create_qp(init_attr(*cq, *cq, cap));
    auto qb = pd->create_qp(init_attr(*cq, *cq, cap));
    std::vector<std::uint8_t> buf(64 << 10);
    auto mr = pd->reg_mr(buf.data(), buf.size(), AccessFlags::local_write | AccessFlags::remote_write);
    const Sge sge{addr_of(buf.data()), 1024, mr->lkey()};
    SendWr w;
    w.sg_list = {&sge, 1};
    w.remote_addr = addr_of(buf.data()) + 32768;
    w.rkey = mr->rkey();
    CHECK(qa->post_send(w) == EINVAL);  // RESET
    connect(*qa, *dev, *qb, *dev);
    // Three unsignalled WRs and a signalled one fill the queue of four: a
    // fifth is refused until the signalled one's completion says that all
    // four are done (as a NIC's queue frees at the completion).
    std::vector<SendWr> five(5, w);
    five[3].send_flags = SendFlags::signaled;
    five[3].wr_id = 3;
    std::size_t bad = 99;
    CHECK(qa->post_send(five, &bad) == ENOMEM);
    CHECK(bad == 4);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    Wc wc{};
    while (cq->poll({&wc, 1}) == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    CHECK(wc.wr_id == 3);
    CHECK(wc.status == WcStatus::success);
    w.send_flags = SendFlags::signaled;
    w.wr_id = 4;
    std::vector<SendWr> four(4, w);
    CHECK(qa->post_send(four) == 0);
    CHECK(qa->post_send(w) == ENOMEM);
}
