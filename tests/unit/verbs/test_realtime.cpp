// SPDX-License-Identifier: BSD-3-Clause
// The loopback driver in real-time mode: two devices, one thread each, the
// real clock, lock-free rings between them. A transfer must arrive byte-exact
// with exactly one completion per WR, with and without impairments.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <chrono>
#include <random>
#include <thread>

#include "support/verbs_net.hpp"

using namespace omrc;
using namespace omrc::test;

namespace {

void run_realtime_transfer(std::uint64_t seed, double loss) {
    loopback::FabricConfig c;
    c.endpoints = 2;
    c.planes = 8;
    c.seed = seed;
    c.mode = loopback::ClockMode::real_time;
    c.link_delay_ns = 2'000;
    c.ring_slots = 2048;
    c.rx_pool_frames = 2048;
    c.zero_copy = true;  // lossless links lend payloads (the receiver places from the sender's MR); lossy ones copy
    loopback::Fabric fabric(c);
    if (loss > 0) {
        loopback::Impairment imp;
        imp.loss.rate = loss;
        fabric.set_impairment_all(imp);
    }
    std::unique_ptr<Device> dev[2];
    std::unique_ptr<Pd> pd[2];
    std::unique_ptr<Cq> cq[2];
    std::unique_ptr<Qp> qp[2];
    for (int i = 0; i < 2; ++i) {
        DeviceOptions o;
        o.driver_context = &fabric;
        o.args["endpoint"] = std::to_string(i);
        o.seed = seed + static_cast<std::uint64_t>(i);
        int err = -1;
        dev[i] = Device::open("loopback", o, &err);
        REQUIRE(err == 0);
        pd[i] = dev[i]->alloc_pd();
        cq[i] = dev[i]->create_cq(1024);
        qp[i] = pd[i]->create_qp(init_attr(*cq[i], *cq[i]));
        REQUIRE(qp[i] != nullptr);
    }
    // Correctness, not timing, is under test: a shared 2-core CI machine may
    // starve a thread for many milliseconds, so the retry budget is generous.
    QpAttr base;
    base.timeout_ns = 200'000'000;
    connect(*qp[0], *dev[0], *qp[1], *dev[1], base);
    const std::size_t n = 64u << 20, msg = 256u << 10;
    std::vector<std::uint8_t> src(n), dst(n, 0);
    std::mt19937_64 rng(seed);
    for (auto& b : src) b = static_cast<std::uint8_t>(rng());
    auto smr = pd[0]->reg_mr(src.data(), n, AccessFlags::local_write);
    auto dmr = pd[1]->reg_mr(dst.data(), n, AccessFlags::local_write | AccessFlags::remote_write);
    REQUIRE(smr != nullptr);
    REQUIRE(dmr != nullptr);
    // The receiver runs on its own thread; everything of device 1 stays there.
    std::atomic<bool> stop{false};
    std::thread peer([&] {
        while (!stop.load(std::memory_order_relaxed))
            if (dev[1]->progress() == 0) std::this_thread::yield();
    });
    std::size_t posted = 0, done = 0, errors = 0;
    WcStatus first_error = WcStatus::success;
    std::vector<int> seen(n / msg, 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    Wc wc[32];
    while (done < n / msg && std::chrono::steady_clock::now() < deadline) {
        while (posted < n / msg && posted - done < 16) {
            const Sge sge{reinterpret_cast<std::uint64_t>(src.data()) + posted * msg, static_cast<std::uint32_t>(msg), smr->lkey()};
            SendWr w;
            w.wr_id = posted;
            w.send_flags = SendFlags::signaled;
            w.sg_list = {&sge, 1};
            w.remote_addr = reinterpret_cast<std::uint64_t>(dst.data()) + posted * msg;
            w.rkey = dmr->rkey();
            REQUIRE(qp[0]->post_send(w) == 0);
            ++posted;
        }
        if (dev[0]->progress() == 0) std::this_thread::yield();
        for (std::size_t k = cq[0]->poll(wc), i = 0; i < k; ++i) {
            ++done;
            if (wc[i].status != WcStatus::success && errors++ == 0) first_error = wc[i].status;
            if (wc[i].wr_id < seen.size()) ++seen[wc[i].wr_id];
        }
    }
    stop = true;
    peer.join();
    CHECK(done == n / msg);
    CAPTURE(to_string(first_error));
    CHECK(errors == 0);
    CHECK(std::all_of(seen.begin(), seen.end(), [](int x) { return x == 1; }));
    CHECK(std::memcmp(src.data(), dst.data(), n) == 0);  // not src == dst: Catch would print 64 MiB
    const auto sent = fabric.endpoint_counters(0).sent;
    if (loss == 0) CHECK(sent.zero_copy * 10 >= sent.delivered * 9);  // data frames lend their payload
    else CHECK(sent.zero_copy == 0);  // impaired links copy
}

}  // namespace

TEST_CASE("real time: two threads, 64 MiB of WRITEs over 8 planes", "[unit][verbs]") {
    run_realtime_transfer(31, 0.0);
}

TEST_CASE("real time: two threads, 64 MiB of WRITEs with 1% loss", "[unit][verbs]") {
    run_realtime_transfer(32, 0.01);
}
