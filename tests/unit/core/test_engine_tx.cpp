// SPDX-License-Identifier: BSD-3-Clause
// The sender half of the engine (lib/core/engine_tx.cpp): segmentation,
// retransmission within the peer's window, RTT sampling. Cases in the order
// of the functions they exercise, named Function__case.
#include <catch2/catch.hpp>

#include <random>

#include "core/psn.hpp"
#include "support/engine_pair.hpp"

using namespace omrc;
using namespace omrc::core;
using omrc::test::EnginePair;

namespace {

/// `bytes` of random data from A to B as WRITEs of `msg` bytes; returns the destination.
std::vector<std::uint8_t> write_all(EnginePair& pair, std::uint32_t qpn, const std::vector<std::uint8_t>& src,
                                    std::size_t msg) {
    std::vector<std::uint8_t> dst(src.size(), 0);
    pair.memory[1].add(0x77, dst.data(), dst.size());
    std::vector<SendRequest> wrs;
    for (std::size_t off = 0; off < src.size(); off += msg) {
        SendRequest r;
        r.wr_id = off / msg;
        r.remote_addr = reinterpret_cast<std::uint64_t>(dst.data()) + off;
        r.rkey = 0x77;
        r.sge_count = 1;
        r.sges[0] = {src.data() + off, static_cast<std::uint32_t>(std::min(msg, src.size() - off))};
        wrs.push_back(r);
    }
    REQUIRE(pair.engines[0]->submit(CmdPostSend{qpn, wrs}, pair.now).err == 0);
    const std::size_t want = wrs.size();
    REQUIRE(pair.run([&] { return pair.completions[0].size() >= want; }, pair.now + 2'000'000'000));
    for (const Completion& c : pair.completions[0]) CHECK(c.status == WcStatus::success);
    return dst;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937_64 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

}  // namespace

TEST_CASE("SendMsg::opcode_at__first_middle_last_by_bytes", "[unit][core]") {
    SendMsg m;
    m.length = 3 * 4096;
    CHECK(m.opcode_at(0, 4096) == wire::Opcode::write_first);
    CHECK(m.opcode_at(4096, 4096) == wire::Opcode::write_middle);
    CHECK(m.opcode_at(8192, 4096) == wire::Opcode::write_last);
    m.req.with_imm = true;
    CHECK(m.opcode_at(8192, 4096) == wire::Opcode::write_last_imm);
    m.length = 0;  // a zero-length message is one packet
    CHECK(m.opcode_at(0, 0) == wire::Opcode::write_only_imm);
    m.req.with_imm = false;
    CHECK(m.opcode_at(0, 0) == wire::Opcode::write_only);
}

TEST_CASE("SendMsg::opcode_at__message_beyond_2_23_packets_ends_with_last", "[unit][core]") {
    // The largest message (2^31 bytes) at the smallest MTU (64 B) is 2^25
    // packets: more than a signed 24-bit PSN difference counts.
    SendMsg m;
    m.length = 1u << 31;
    constexpr std::uint32_t mtu = 64;
    CHECK(m.opcode_at(0, mtu) == wire::Opcode::write_first);
    for (std::uint32_t pkt : {(1u << 23) - 1, 1u << 23, (1u << 23) + 1, 1u << 24, (1u << 25) - 2})
        CHECK(m.opcode_at(pkt * mtu, mtu) == wire::Opcode::write_middle);
    CHECK(m.opcode_at((1u << 31) - mtu, mtu) == wire::Opcode::write_last);
    m.length = (1u << 31) - 10;  // a short last packet
    CHECK(m.opcode_at((1u << 31) - mtu, mtu - 10) == wire::Opcode::write_last);
}

TEST_CASE("Engine::on_nack__resend_beyond_the_peer_window_waits_for_it", "[unit][core]") {
    // A sends with a 4096-packet window (its own mpr) before it learns that
    // B's receive window is 128 packets. The first packet is lost, so B's
    // cumulative PSN stays behind it and B NACKs what falls beyond its
    // window (PSN_OOR_WINDOW). A shrinks its window and resends each such
    // packet once the window reaches it — never into the same NACK again.
    EnginePair pair;
    QpAttr a;
    a.cc.algorithm = CcAlgorithm::fixed;
    a.cc.fixed_window_bytes = 2u << 20;  // 512 packets of 4 KiB in the first burst
    a.evs = 64;
    a.mpr = 32;
    QpAttr b = a;
    b.mpr = 1;
    auto [qa, qb] = pair.connect(a, b);
    bool dropped = false;
    pair.hook = [&](int from, std::uint8_t, std::vector<std::uint8_t>&) {
        const bool drop = from == 0 && !dropped;  // A's first frame: PSN 100
        dropped = dropped || drop;
        return test::Fate{drop, 0};
    };
    const auto src = random_bytes(8u << 20, 11);
    const auto dst = write_all(pair, qa, src, 1u << 20);
    CHECK(dst == src);
    const Qp& sender = *pair.engines[0]->find_qp(qa);
    const Qp& receiver = *pair.engines[1]->find_qp(qb);
    const std::uint64_t beyond_window = 512 - 128;
    CHECK(receiver.stats.nacks_sent == beyond_window);
    // Each NACKed packet once, and the lost one.
    CHECK(sender.stats.data_pkts_resent == receiver.stats.nacks_sent + 1);
    CHECK(sender.window_pkts == 128);
    CHECK(pair.engines[1]->stats().rx_drops[static_cast<std::size_t>(DropReason::out_of_window)] ==
          receiver.stats.nacks_sent);
}

TEST_CASE("Engine::rtt_sample__round_trip_longer_than_the_timestamp_wrap", "[unit][core]") {
    // The 16-bit TSETH timestamp (128 ns ticks) wraps every 8.39 ms. A 10 ms
    // round trip must be measured as 10 ms, not as 10 ms − 8.39 ms.
    EngineConfig cfg;
    cfg.ev_timeout_ns = 100'000'000;  // before the first sample: longer than the round trip
    constexpr TimeNs one_way = 5'000'000;
    EnginePair pair(cfg, one_way);
    QpAttr a;
    a.cc.algorithm = CcAlgorithm::fixed;
    a.cc.fixed_window_bytes = 1u << 20;
    a.evs = 16;
    a.timeout_ns = 1'000'000'000;
    auto [qa, qb] = pair.connect(a);
    (void)qb;
    const auto src = random_bytes(1u << 20, 12);
    CHECK(write_all(pair, qa, src, 256u << 10) == src);
    const Qp& sender = *pair.engines[0]->find_qp(qa);
    CHECK(sender.rtt_min_ns >= 2 * one_way);
    CHECK(sender.rtt_min_ns <= 2 * one_way + 100'000);
    CHECK(sender.rtt_max_ns <= 2 * one_way + 100'000);
    CHECK(sender.stats.data_pkts_resent == 0);
    CHECK(sender.stats.ev_timeouts == 0);
}
