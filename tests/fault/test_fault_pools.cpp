// SPDX-License-Identifier: BSD-3-Clause
// Fault-matrix row 22 on the loopback driver (docs/TESTING.md): a receive
// pool of ring size + 64 buffers, a receiver that stops polling for 100 ms
// and transmit rings that fill, through the verbs API on a real-time fabric
// (two devices driven from this thread by the real clock; the 100 ms stall
// is the only thing timed, and nothing is asserted on time).
//
// The loopback fabric in real-time mode (drivers/loopback/loopback.hpp) has
// one ring of ring_slots frames per (sender, receiver) pair: a sender's
// transmit ring and its receiver's receive ring at once. A receiver parks
// frames that are not due yet, while a later frame of the same ring may be
// due first (jitter), in its pool of rx_pool_frames buffers; with the pool
// empty they wait in the ring, which backs up. A full ring drops the frame
// (ring_full, DriverStats::tx_dropped_full) or, with ring_backpressure (what
// worker-thread devices get), refuses it: tx_burst accepts a prefix and the
// runtime keeps the rest (device.progress.tx_partial).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "support/verbs_net.hpp"

using namespace omrc;
using namespace omrc::test;

namespace {

constexpr std::uint32_t kRingSlots = 256;              ///< frames per (sender, receiver) ring
constexpr std::uint32_t kPoolFrames = kRingSlots + 64;  ///< the row's receive pool: ring size + 64
/// Data direction: every frame 20-170 ms late (20 ms plus 0-150 ms,
/// uniform). A receiver parks a frame in its pool only while a later frame
/// of its ring overtakes it (the rest wait in the ring, in order), so the
/// pool runs empty only when frames sent within the jitter fill it: with
/// 150 ms of jitter even a sender slowed down by a sanitizer (about 2·10^4
/// frames/s under ASan) sends ring + pool frames well within it; with 20 ms
/// an ASan build sometimes never ran the pool empty. Long against a
/// time-shared core's scheduler slices (milliseconds).
constexpr std::uint64_t kExtraDelayNs = 20'000'000;
constexpr std::uint64_t kJitterNs = 150'000'000;
constexpr auto kStall = std::chrono::milliseconds(100);  ///< the receiver polls nothing this long

/// Pool and ring occupancy of both endpoints (0 at baseline).
void check_pools_at_baseline(const loopback::Fabric& f, const char* when) {
    for (std::uint32_t e = 0; e < 2; ++e) {
        const loopback::EndpointCounters c = f.endpoint_counters(e);
        INFO(when << ", endpoint " << e);
        CHECK(c.rx_pool_in_use == 0);
        CHECK(c.rx_ring_frames == 0);
    }
}

struct Row22Figures {
    std::uint64_t ring_full = 0, tx_dropped_full = 0, rx_pool_empty = 0, tx_partial = 0, tx_kept = 0, resent = 0;
    std::uint64_t delivered = 0;  ///< frames the links to the receiver delivered
    double seconds = 0;           ///< the transfer, wall clock (reported, never asserted)
};

/// 16 MiB of sprayed 1 MiB WRITEs from endpoint 0 to 1 over 8 planes; the
/// receiver stalls for kStall after the 4th completion.
Row22Figures run_row22(std::uint64_t seed, bool backpressure) {
    CAPTURE(seed, backpressure);
    loopback::FabricConfig c;
    c.endpoints = 2;
    c.planes = 8;
    c.seed = seed;
    c.mode = loopback::ClockMode::real_time;
    c.link_delay_ns = 2'000;
    c.ring_slots = kRingSlots;
    c.rx_pool_frames = kPoolFrames;
    c.ring_backpressure = backpressure;
    loopback::Fabric fabric(c);
    loopback::Impairment imp;
    imp.delay.extra_ns = kExtraDelayNs;
    imp.delay.jitter_ns = kJitterNs;
    fabric.set_impairment(0, 1, imp);
    check_pools_at_baseline(fabric, "before the devices");

    Row22Figures fig;
    {
        std::unique_ptr<Device> dev[2];
        for (int i = 0; i < 2; ++i) {
            DeviceOptions o;
            o.driver_context = &fabric;
            o.args["endpoint"] = std::to_string(i);
            o.seed = seed * 10 + static_cast<std::uint64_t>(i);
            // EVs are not judged failed within the delay (20-170 ms) plus
            // the stall (100 ms) nor a time-shared core's slices.
            o.ev_timeout_ns = 500'000'000;
            o.min_ev_timeout_ns = 500'000'000;
            int err = -1;
            dev[i] = Device::open("loopback", o, &err);
            REQUIRE(err == 0);
        }
        TransferSpec spec;
        spec.bytes = 16u << 20;
        spec.msg_bytes = 1u << 20;
        spec.depth = 16;
        spec.seed = seed;
        spec.qp.path_policy = PathPolicy::spray;
        spec.qp.mpr = 32;  // a receive window of 4096 packets: more than the ring and the pool hold
        spec.qp.cc.algorithm = CcAlgorithm::fixed;
        spec.qp.cc.fixed_window_bytes = 16u << 20;  // no congestion control holds the sender back
        // Correctness, not timing: the QP outlives the stall and any scheduler slice.
        spec.qp.timeout_ns = 1'000'000'000;
        spec.timeout = std::chrono::seconds(60);
        bool stalled = false;
        TransferHooks hooks;
        hooks.on_send_completion = [&](const Wc&, std::size_t done) {
            if (done != 4 || stalled) return;
            stalled = true;
            // The receiver stops polling; the sender goes on sending (and
            // resending what times out) into the ring until it is full.
            const auto until = std::chrono::steady_clock::now() + kStall;
            while (std::chrono::steady_clock::now() < until) (void)dev[0]->progress();
        };
        WriteTransfer t(*dev[0], *dev[1], spec);  // its QPs live on for the stats below
        const TransferResult r = t.run(hooks);
        const auto ja = nlohmann::json::parse(dev[0]->stats_json());
        INFO("sender: " << ja["device"]["progress"].dump() << ' ' << ja["driver"].dump());
        INFO("receiver: " << nlohmann::json::parse(dev[1]->stats_json())["engine"].dump());
        CHECK(stalled);
        check_transfer(r);
        fig.tx_partial = ja["device"]["progress"]["tx_partial"].get<std::uint64_t>();
        fig.tx_kept = ja["device"]["progress"]["tx_kept_frames"].get<std::uint64_t>();
        for (const auto& q : ja["qps"]) fig.resent += q["stats"]["data_pkts_resent"].get<std::uint64_t>();
        const loopback::EndpointCounters a = fabric.endpoint_counters(0), b = fabric.endpoint_counters(1);
        fig.ring_full = a.sent.ring_full;
        fig.tx_dropped_full = a.driver.tx_dropped_full;
        fig.rx_pool_empty = b.rx_pool_empty;
        fig.delivered = b.received.delivered;
        fig.seconds = r.seconds;
    }  // the devices go: every frame in flight to them with them

    WARN("row 22 (loopback, " << (backpressure ? "backpressure" : "dropping rings") << "): ring_full "
                              << fig.ring_full << ", tx_dropped_full " << fig.tx_dropped_full << ", rx_pool_empty "
                              << fig.rx_pool_empty << ", tx_partial " << fig.tx_partial << ", tx_kept_frames "
                              << fig.tx_kept << ", resent " << fig.resent << "; " << fig.delivered
                              << " frames delivered in " << fig.seconds << " s");
    check_pools_at_baseline(fabric, "after teardown");
    return fig;
}

}  // namespace

TEST_CASE("row 22: receive pool = ring + 64, receiver stalled 100 ms, full transmit rings drop: counted, completes",
          "[fault]") {
    const Row22Figures f = run_row22(2201, false);
    CHECK(f.rx_pool_empty > 0);   // the pool ran empty (frames waited in the ring)
    CHECK(f.ring_full > 0);       // the full ring dropped frames, each counted ...
    CHECK(f.tx_dropped_full == f.ring_full);  // ... once by the link and once by the driver
    CHECK(f.resent > 0);          // and the sender sent them again
    CHECK(f.tx_partial == 0);     // a dropping ring never refuses
}

TEST_CASE("row 22: receive pool = ring + 64, receiver stalled 100 ms, full transmit rings hold the sender back",
          "[fault]") {
    const Row22Figures f = run_row22(2202, true);
    CHECK(f.rx_pool_empty > 0);
    CHECK(f.ring_full == 0);      // nothing dropped: refused instead
    CHECK(f.tx_partial > 0);      // tx_burst accepted a prefix ...
    CHECK(f.tx_kept > 0);         // ... and the runtime kept the rest for later
}
