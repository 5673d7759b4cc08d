// SPDX-License-Identifier: BSD-3-Clause
// Fault-matrix row 22 over real DPDK ports (docs/TESTING.md): net_memif
// pairs in one process (memif_devices.hpp), each (port, queue) with a frame
// mbuf pool of its receive ring's size + 64, a receiver that stops polling
// for 100 ms while the sender goes on, transmit rings that fill.
//
// What fills, over net_memif: the sender's memif ring (1024 slots, memif's
// default rsize=10, the size of the rx_desc ring the pools are sized from)
// fills once the stalled receiver hands no buffers back; the PMD then takes
// nothing (the driver's tx_ring_full; memif's own oerrors stays 0 in DPDK
// 22.11) and the driver's backlog holds the frames, each in an mbuf of the
// port's frame pool (every frame copied: zero_copy=0), until the pool is
// empty (tx_pool_empty, per refused frame) and tx_burst accepts only a
// prefix. memif's receive copies into fresh mbufs, a bulk of 32 at a time,
// and leaves what it cannot take in its ring (it counts no rx_nombuf), so
// nothing is lost on the wire: what is counted is refusals, and the engine
// sends again what its EVs gave up on meanwhile.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <rte_mempool.h>

#include "dpdk/dpdk_env.hpp"
#include "dpdk/memif_devices.hpp"
#include "omrc/omrc.hpp"
#include "support/verbs_net.hpp"

using namespace omrc;
using namespace omrc::test;

namespace {

constexpr std::uint32_t kRingSize = 1024;              ///< rx_desc, and memif's ring (rsize=10)
constexpr std::uint32_t kPoolMbufs = kRingSize + 64;   ///< the row's pool: ring size + 64
constexpr auto kStall = std::chrono::milliseconds(100);  ///< the receiver polls nothing this long
constexpr int kBase = 80;  ///< memif ports of this case (memif_vdevs): no other case uses them

/// The mbuf pools of (port, queue 0): ports.cpp names them omrc_{rx,ext,small}_p<port>q<queue>.
std::vector<const rte_mempool*> pools_of(std::uint16_t port) {
    std::vector<const rte_mempool*> out;
    for (const char* kind : {"omrc_rx", "omrc_ext", "omrc_small"}) {
        const std::string name = std::string(kind) + "_p" + std::to_string(port) + "q0";
        const rte_mempool* mp = rte_mempool_lookup(name.c_str());
        INFO(name);
        REQUIRE(mp != nullptr);
        out.push_back(mp);
    }
    return out;
}

/// Mbufs in use, pool by pool (caches included: rte_mempool_avail_count counts them free).
std::vector<unsigned> in_use(const std::vector<const rte_mempool*>& pools) {
    std::vector<unsigned> n;
    for (const rte_mempool* mp : pools) n.push_back(rte_mempool_in_use_count(mp));
    return n;
}

std::uint64_t sum_planes(const nlohmann::json& counters, const std::string& name) {
    std::uint64_t n = 0;
    for (std::uint32_t p = 0; p < kMemifPlanes; ++p)
        n += counters["plane" + std::to_string(p) + "." + name].get<std::uint64_t>();
    return n;
}

}  // namespace

TEST_CASE("row 22 (dpdk): net_memif, frame pools of ring + 64 mbufs, receiver stalled 100 ms: counted, completes, "
          "pools at baseline after teardown",
          "[dpdk]") {
    const std::string pool = std::to_string(kPoolMbufs), ring = std::to_string(kRingSize);
    // The sender copies every frame into the port's frame pool (the one its
    // receive queue takes mbufs from), and its backlog may hold more frames
    // than the pool has: the pool runs out first.
    auto a = open_dpdk(memif_ports(0, kBase), 2211,
                       {{"vdevs", memif_vdevs(0, kBase)}, {"rx_desc", ring}, {"tx_desc", ring}, {"mbufs", pool},
                        {"zero_copy", "0"}, {"backlog", "8192"}});
    auto b = open_dpdk(memif_ports(1, kBase), 2212,
                       {{"vdevs", memif_vdevs(1, kBase)}, {"rx_desc", ring}, {"tx_desc", ring}, {"mbufs", pool}});
    REQUIRE(wait_links(*a, *b));
    std::vector<std::uint16_t> ports;
    for (const Device* d : {a.get(), b.get()}) {
        const auto c = nlohmann::json::parse(d->stats_json())["driver"]["counters"];
        for (std::uint32_t p = 0; p < kMemifPlanes; ++p) {
            const std::uint64_t id = c["plane" + std::to_string(p) + ".port_id"].get<std::uint64_t>();
            ports.push_back(static_cast<std::uint16_t>(id));
        }
    }
    std::vector<std::vector<const rte_mempool*>> pools;
    std::vector<std::vector<unsigned>> baseline;
    for (std::uint16_t port : ports) {
        pools.push_back(pools_of(port));
        CHECK(rte_mempool_avail_count(pools.back()[0]) + rte_mempool_in_use_count(pools.back()[0]) == kPoolMbufs);
        baseline.push_back(in_use(pools.back()));
    }

    TransferSpec spec;
    spec.bytes = 32u << 20;
    spec.msg_bytes = 1u << 20;
    spec.depth = 16;
    spec.seed = 22;
    spec.qp.timeout_ns = 2'000'000'000;  // correctness under test, not timing: 2 shared cores
    spec.qp.evs = 32;
    spec.qp.path_policy = PathPolicy::spray;
    spec.qp.mpr = 32;  // a receive window of 4096 packets: more than a memif ring and a pool hold
    spec.qp.cc.algorithm = CcAlgorithm::fixed;
    spec.qp.cc.fixed_window_bytes = 16u << 20;  // no congestion control holds the sender back
    spec.timeout = std::chrono::seconds(120);
    bool stalled = false;
    std::uint64_t pool_empty_in_stall = 0;
    TransferHooks hooks;
    hooks.on_send_completion = [&](const Wc&, std::size_t done) {
        if (done != 4 || stalled) return;
        stalled = true;
        // The receiver stops polling; the sender goes on (and resends what
        // its EVs give up on) until its ring, backlog and pool are full.
        const auto until = std::chrono::steady_clock::now() + kStall;
        while (std::chrono::steady_clock::now() < until) (void)a->progress();
        pool_empty_in_stall = sum_planes(nlohmann::json::parse(a->stats_json())["driver"]["counters"], "tx_pool_empty");
    };
    nlohmann::json ja, jb;
    {
        WriteTransfer t(*a, *b, spec);
        const TransferResult r = t.run(hooks);
        ja = nlohmann::json::parse(a->stats_json());
        jb = nlohmann::json::parse(b->stats_json());
        INFO("sender: " << ja["device"]["progress"].dump() << ' ' << ja["driver"].dump());
        INFO("receiver: " << jb["driver"].dump());
        CHECK(stalled);
        check_transfer(r);
        CHECK(r.completions == 32);
    }
    const auto& ca = ja["driver"]["counters"];
    const auto& cb = jb["driver"]["counters"];
    std::uint64_t resent = 0;
    for (const auto& q : ja["qps"]) resent += q["stats"]["data_pkts_resent"].get<std::uint64_t>();
    const std::uint64_t pool_empty = sum_planes(ca, "tx_pool_empty"), ring_full = sum_planes(ca, "tx_ring_full");
    WARN("row 22 (dpdk, net_memif, " << kPoolMbufs << " mbufs a pool): sender tx_pool_empty " << pool_empty
         << " (" << pool_empty_in_stall << " by the end of the stall), tx_ring_full " << ring_full
         << ", tx_backlog_full " << sum_planes(ca, "tx_backlog_full") << ", pmd_oerrors "
         << sum_planes(ca, "pmd_oerrors") << ", tx_partial " << ja["device"]["progress"]["tx_partial"]
         << ", resent " << resent << "; receiver pmd_imissed " << sum_planes(cb, "pmd_imissed")
         << ", pmd_rx_nombuf " << sum_planes(cb, "pmd_rx_nombuf") << ", rx_frames " << sum_planes(cb, "rx_frames"));
    // The transmit rings filled (memif took less than offered) and the
    // frames waiting for them emptied the pool, counted per refused frame.
    CHECK(ring_full > 0);
    CHECK(pool_empty > 0);
    CHECK(pool_empty_in_stall > 0);  // during the stall already
    CHECK(ja["device"]["progress"]["tx_partial"].get<std::uint64_t>() > 0);
    CHECK(sum_planes(ca, "tx_copied") > 0);
    CHECK(sum_planes(ca, "tx_zero_copy") == 0);
    CHECK(ca["tx_released"].get<std::uint64_t>() == ca["tx_accepted"].get<std::uint64_t>());

    a.reset();
    b.reset();
    // Every mbuf is back in its pool: nothing leaked in the backlogs, the
    // held bursts or the PMD.
    unsigned at_baseline = 0, after = 0;
    for (std::size_t i = 0; i < ports.size(); ++i) {
        INFO("port " << ports[i]);
        CHECK(in_use(pools[i]) == baseline[i]);
        for (unsigned n : baseline[i]) at_baseline += n;
        for (unsigned n : in_use(pools[i])) after += n;
    }
    WARN("row 22 (dpdk): mbufs in use in the 12 pools of the 4 ports: " << at_baseline << " before the transfer, "
                                                                       << after << " after teardown");
}
