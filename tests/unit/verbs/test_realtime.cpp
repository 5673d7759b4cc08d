// SPDX-License-Identifier: BSD-3-Clause
// The loopback driver in real-time mode: two devices, one thread each, the
// real clock, lock-free rings between them. A transfer must arrive byte-exact
// with exactly one completion per WR, with and without impairments.
#include <catch2/catch.hpp>

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
    for (int i = 0; i < 2; ++i) {
        DeviceOptions o;
        o.driver_context = &fabric;
        o.args["endpoint"] = std::to_string(i);
        o.seed = seed + static_cast<std::uint64_t>(i);
        int err = -1;
        dev[i] = Device::open("loopback", o, &err);
        REQUIRE(err == 0);
    }
    TransferSpec spec;
    spec.bytes = 64u << 20;
    spec.msg_bytes = 256u << 10;
    spec.seed = seed;
    // Correctness, not timing, is under test: a shared 2-core CI machine may
    // starve a thread for many milliseconds, so the retry budget is generous.
    spec.qp.timeout_ns = 200'000'000;
    // The receiver runs on its own thread; everything of device 1 stays there.
    spec.peer_thread = true;
    check_transfer(transfer(*dev[0], *dev[1], spec));
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
