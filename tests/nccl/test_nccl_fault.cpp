// SPDX-License-Identifier: BSD-3-Clause
// Failures under a collective. The plugin's objects are linked into this
// test, which hands them (DeviceTable::preset, the test hook) one device per
// rank on a real-time loopback fabric of its own, so that it can take
// links down while the ranks run (drivers/loopback: set_link):
//   [nccl_fault_plane]   in the middle of ring allreduces a plane silently
//                        drops everything (a blackhole: only losses tell),
//                        comes back, then another plane's ports go down and
//                        come back: every allreduce completes byte-exact;
//   [nccl_fault_silent]  a rank's every port dies: its peers' requests fail
//                        with ncclRemoteError and OpenMRC's reason, in
//                        bounded time, instead of hanging.
// Each tag runs in a process of its own (the device table is per process).
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "device_table.hpp"
#include "drivers/loopback/loopback.hpp"
#include "harness/collectives.hpp"

extern "C" ncclNet_v12_t ncclNetPlugin_v12;

using namespace omrc::nccl::test;

namespace {

constexpr int kRanks = 4;
constexpr std::uint32_t kPlanes = 4;

/// The fabric and the plugin's devices on it: device r is endpoint r.
omrc::loopback::Fabric& fabric() {
    static omrc::loopback::Fabric* f = [] {
        omrc::loopback::FabricConfig fc;
        fc.endpoints = kRanks;
        fc.planes = kPlanes;
        fc.mode = omrc::loopback::ClockMode::real_time;
        fc.ring_slots = 512;
        fc.max_frame_bytes = 4608;
        fc.ring_backpressure = true;
        auto* fab = new omrc::loopback::Fabric(fc);
        std::vector<omrc::DeviceConfig> devices;
        for (int r = 0; r < kRanks; ++r) {
            omrc::DeviceConfig d;
            d.name = "omrc" + std::to_string(r);
            d.driver = "loopback";
            d.options.driver_context = fab;
            d.options.args["endpoint"] = std::to_string(r);
            // Correctness under failures is under test, not timing: a shared
            // 2-core machine may starve a rank's thread for many milliseconds,
            // so the retry budget (timeout × 8) is generous.
            d.qp.timeout_ns = 100'000'000;
            devices.push_back(std::move(d));
        }
        REQUIRE(omrc::nccl::DeviceTable::instance().preset(std::move(devices)) == 0);
        return fab;
    }();
    return *f;
}

/// Frames the blackhole of `plane` swallowed, over every link direction.
std::uint64_t blackholed(omrc::loopback::Fabric& f, std::uint32_t plane) {
    std::uint64_t n = 0;
    for (std::uint32_t s = 0; s < kRanks; ++s)
        for (std::uint32_t d = 0; d < kRanks; ++d) n += f.link_counters(s, d, plane).blackholed;
    return n;
}

void blackhole_plane(omrc::loopback::Fabric& f, std::uint32_t plane, bool on) {
    omrc::loopback::Impairment imp;
    imp.blackhole = on;
    for (std::uint32_t s = 0; s < kRanks; ++s)
        for (std::uint32_t d = 0; d < kRanks; ++d) f.set_impairment(s, d, plane, imp);
}

struct RankState {
    Status status;
    bool exact = true;
    int iterations = 0;
};

}  // namespace

TEST_CASE("planes fail and return in the middle of ring allreduces: every one completes exact", "[nccl_fault_plane]") {
    auto& fab = fabric();
    auto net0 = make_net(&ncclNetPlugin_v12, 12);
    REQUIRE(net0->init() == ncclSuccess);
    int ndev = 0;
    REQUIRE(net0->devices(&ndev) == ncclSuccess);
    REQUIRE(ndev == kRanks);

    constexpr int kIterations = 8;
    constexpr std::size_t kCount = 2u << 20;  // 8 MiB of floats per rank
    MemoryExchange ex;
    std::atomic<int> finished{0};  // allreduces completed by rank 0
    std::vector<RankState> state(kRanks);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < kRanks; ++rank)
        threads.emplace_back([&, rank] {
            RankState& st = state[rank];
            auto net = make_net(&ncclNetPlugin_v12, 12);
            const auto deadline = Clock::now() + std::chrono::seconds(50);
            if (net->init() != ncclSuccess) {
                st.status = Status::error(ncclSystemError, "init");
                return;
            }
            RingComms comms;
            st.status = ring_connect(*net, rank, rank, kRanks, ex, "fault", &comms, deadline);
            std::vector<float> data(kCount), tmp(kCount / kRanks + 1);
            Registered dm, tm;
            if (st.status.ok())
                st.status =
                    register_buffer(*net, comms.send_next, comms.recv_prev, data.data(), kCount * sizeof(float), &dm);
            if (st.status.ok())
                st.status =
                    register_buffer(*net, nullptr, comms.recv_prev, tmp.data(), tmp.size() * sizeof(float), &tm);
            for (int it = 0; it < kIterations && st.status.ok(); ++it) {
                for (std::size_t i = 0; i < kCount; ++i) data[i] = allreduce_input(rank + it, i);
                SliceOptions o;
                o.slice_bytes = 512 << 10;
                st.status =
                    ring_allreduce(*net, comms, data.data(), dm, tmp.data(), tm, kCount, rank, kRanks, o, deadline);
                for (std::size_t i = 0; i < kCount && st.status.ok(); ++i) {
                    float want = 0;
                    for (int r = 0; r < kRanks; ++r) want += allreduce_input(r + it, i);
                    if (data[i] != want) {
                        st.exact = false;
                        break;
                    }
                }
                ++st.iterations;
                if (rank == 0) finished.store(it + 1);
            }
            deregister_buffer(*net, comms.send_next, comms.recv_prev, dm);
            deregister_buffer(*net, nullptr, comms.recv_prev, tm);
            ring_close(*net, comms);
        });

    // Once the first allreduce is through (the second is running), plane 1
    // swallows every frame until two more are done; then plane 2's ports go
    // down until two more are done.
    const auto limit = Clock::now() + std::chrono::seconds(50);
    auto wait_for = [&](int n) {
        while (finished.load() < n && Clock::now() < limit) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return finished.load();
    };
    wait_for(1);
    blackhole_plane(fab, 1, true);
    const int blackhole_from = finished.load();
    const int blackhole_until = wait_for(3);
    blackhole_plane(fab, 1, false);
    const std::uint64_t swallowed = blackholed(fab, 1);
    for (std::uint32_t e = 0; e < kRanks; ++e) fab.set_link(e, 2, false);
    const int down_from = finished.load();
    const int down_until = wait_for(5);
    for (std::uint32_t e = 0; e < kRanks; ++e) fab.set_link(e, 2, true);
    for (auto& t : threads) t.join();

    for (int r = 0; r < kRanks; ++r) {
        INFO("rank " << r << ": " << describe(state[r].status));
        CHECK(state[r].status.ok());
        CHECK(state[r].exact);
        CHECK(state[r].iterations == kIterations);
    }
    // Allreduces ran through each failure, and the blackhole did swallow frames.
    INFO("blackhole during allreduces " << blackhole_from << ".." << blackhole_until << " (" << swallowed
                                        << " frames), plane 2 down during " << down_from << ".." << down_until);
    CHECK(blackhole_until - blackhole_from >= 1);
    CHECK(down_until - down_from >= 1);
    CHECK(swallowed > 0);
}

TEST_CASE("a rank whose ports all die: its peers' requests fail with OpenMRC's reason, in bounded time",
          "[nccl_fault_silent]") {
    auto& fab = fabric();
    auto net = make_net(&ncclNetPlugin_v12, 12);
    REQUIRE(net->init() == ncclSuccess);
    // Rank 0 sends to rank 1 (devices 0 and 1); then rank 1's ports go down.
    Handle h(NCCL_NET_HANDLE_MAXSIZE, 0);
    void *lc = nullptr, *sc = nullptr, *rc = nullptr;
    REQUIRE(net->listen(1, h.data(), &lc) == ncclSuccess);
    // connect on device 0 and accept (device 1) polled together.
    std::size_t polls = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while ((sc == nullptr || rc == nullptr) && Clock::now() < deadline) {
        if (sc == nullptr) REQUIRE(net->connect(0, h.data(), &sc) == ncclSuccess);
        if (rc == nullptr) REQUIRE(net->accept(lc, &rc) == ncclSuccess);
        ++polls;
    }
    REQUIRE(sc != nullptr);
    REQUIRE(rc != nullptr);
    std::vector<std::uint8_t> src(32 << 20, 9), dst(32 << 20);
    Registered sm, rm;
    REQUIRE(register_buffer(*net, sc, nullptr, src.data(), src.size(), &sm).ok());
    REQUIRE(register_buffer(*net, nullptr, rc, dst.data(), dst.size(), &rm).ok());
    void* data = dst.data();
    std::size_t size = dst.size();
    int tag = 0;
    void* rreq = nullptr;
    REQUIRE(net->irecv(rc, 1, &data, &size, &tag, &rm.recv_mh, &rreq) == ncclSuccess);
    void* sreq = nullptr;
    while (sreq == nullptr && Clock::now() < deadline)
        REQUIRE(net->isend(sc, src.data(), src.size(), 0, sm.send_mh, &sreq) == ncclSuccess);
    REQUIRE(sreq != nullptr);
    for (std::uint32_t p = 0; p < kPlanes; ++p) fab.set_link(1, p, false);

    LogSink::instance().clear();
    const auto t0 = Clock::now();
    ncclResult_t result = ncclSuccess;
    int done = 0;
    while (result == ncclSuccess && !done && Clock::now() - t0 < std::chrono::seconds(20))
        result = net->test(sreq, &done, nullptr);
    const auto took = Clock::now() - t0;
    CHECK(done == 0);
    CHECK(result == ncclRemoteError);
    CHECK(took < std::chrono::seconds(10));  // the retry budget is 0.8 s
    CHECK(LogSink::instance().contains("OpenMRC work completion"));
    CHECK(LogSink::instance().contains("retry_exc_err"));
    net->close_send(sc);
    net->close_recv(rc);
    net->close_listen(lc);
    deregister_buffer(*net, sc, nullptr, sm);
    deregister_buffer(*net, nullptr, rc, rm);
}
