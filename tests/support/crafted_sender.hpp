// SPDX-License-Identifier: BSD-3-Clause
// Sender tests (tests/unit/core/test_engine_tx.cpp, test_engine_sack.cpp,
// test_engine_loss.cpp, test_engine_timers.cpp): whole transfers between two
// engines, and one engine's sender against a peer whose acknowledgements
// are crafted (CraftedPeer).
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "core/psn.hpp"
#include "support/crafted_peer.hpp"
#include "support/engine_pair.hpp"

namespace omrc::test {

/// `bytes` of random data from A to B as WRITEs of `msg` bytes; returns the destination.
inline std::vector<std::uint8_t> write_all(EnginePair& pair, std::uint32_t qpn, const std::vector<std::uint8_t>& src,
                                           std::size_t msg) {
    std::vector<std::uint8_t> dst(src.size(), 0);
    pair.memory[1].add(0x77, dst.data(), dst.size());
    const std::vector<core::SendRequest> wrs = make_write_wrs(src.data(), dst.data(), src.size(), 0x77, msg);
    REQUIRE(pair.engines[0]->submit(core::CmdPostSend{qpn, wrs}, pair.now).err == 0);
    const std::size_t want = wrs.size();
    REQUIRE(pair.run([&] { return pair.completions[0].size() >= want; }, pair.now + 2'000'000'000));
    for (const core::Completion& c : pair.completions[0]) CHECK(c.status == core::WcStatus::success);
    return dst;
}

inline std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937_64 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

/// Payload bytes per packet of the crafted-peer cases.
inline constexpr std::uint32_t kTxMtu = 256;

/// Engine 1 sends to engine 0's QP; the peer's acknowledgements are crafted.
struct Tx {
    EnginePair pair;
    std::uint32_t qa = 0, qb = 0;
    std::vector<std::uint8_t> src = random_bytes(64u << 10, 99);
    std::unique_ptr<CraftedPeer> peer;

    explicit Tx(core::QpAttr attr = base_attr(), core::EngineConfig cfg = {}) : pair(cfg) {
        std::tie(qa, qb) = pair.connect(attr);
        peer = std::make_unique<CraftedPeer>(pair, qa, qb);
    }
    static core::QpAttr base_attr() {
        core::QpAttr a;
        a.mtu_bytes = kTxMtu;
        a.cc.algorithm = core::CcAlgorithm::fixed;
        a.cc.fixed_window_bytes = 1u << 20;
        a.evs = 16;
        return a;
    }
    /// Posts one WRITE of `npkts` packets (wr_id = `id`) and returns what the engine sends.
    std::vector<SentFrame> post(std::uint32_t npkts, std::uint64_t id = 1, std::size_t src_off = 0) {
        core::SendRequest r;
        r.wr_id = id;
        r.remote_addr = 0x10000;
        r.rkey = 9;
        r.sge_count = 1;
        r.sges[0] = {src.data() + src_off, npkts * kTxMtu};
        REQUIRE(pair.engines[1]->submit(core::CmdPostSend{qb, std::span(&r, 1)}, pair.now).err == 0);
        return peer->sent();
    }
    [[nodiscard]] std::uint32_t first_psn() const { return peer->qp().attr.sq_psn; }
    std::uint64_t drops(core::DropReason r) const { return pair.engines[1]->stats().rx_drops[static_cast<std::size_t>(r)]; }
};

}  // namespace omrc::test
