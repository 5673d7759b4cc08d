// SPDX-License-Identifier: BSD-3-Clause
// Shared receive queues through the engine's sans-IO API: the messages of
// several QPs take their receives from one SRQ, each QP's in its message
// order whatever order the sprayed packets arrive in; RNR when the SRQ is
// empty, the limit event, and the commands' errors.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "support/engine_pair.hpp"
#include "support/engine_requests.hpp"

using namespace omrc;
using namespace omrc::core;
using omrc::test::EnginePair;
using omrc::test::EngineEnd;
using omrc::test::Fate;
using omrc::test::random_bytes;
using omrc::test::recv_wr;
using omrc::test::send_wr;

namespace {

QpAttr srq_attr() { return omrc::test::fixed_window_attr(); }

/// An SRQ on each engine (number 1: B's is the one under test; A's only
/// lets both ends share one QpCaps) and `n` connected QP pairs using it.
struct SrqPair {
    EnginePair pair;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> qps;
    explicit SrqPair(std::size_t n, std::uint32_t max_wr = 1024, std::uint32_t limit = 0, QpAttr attr = srq_attr()) {
        for (auto& e : pair.engines) {
            const SubmitResult r = e->submit(CmdCreateSrq{1, max_wr, limit}, pair.now);
            REQUIRE(r.err == 0);
            REQUIRE(r.srqn == 1);
        }
        QpCaps caps;
        caps.srqn = 1;
        const EngineEnd x{pair.engines[0].get(), 0, pair.engines[0]->config().local_macs};
        const EngineEnd y{pair.engines[1].get(), 1, pair.engines[1]->config().local_macs};
        for (std::size_t i = 0; i < n; ++i)
            qps.push_back(omrc::test::connect_engines(x, y, 100 + 7 * static_cast<std::uint32_t>(i), 101, attr, caps,
                                                      pair.now));
    }
    Engine& b() { return *pair.engines[1]; }
    std::vector<Completion> of(int side, WcOpcode op) const {
        std::vector<Completion> out;
        for (const Completion& c : pair.completions[side])
            if (c.opcode == op) out.push_back(c);
        return out;
    }
};

}  // namespace

TEST_CASE("Engine::srq__two_qps_share_receives_each_in_message_order", "[unit][core]") {
    SrqPair s(2);
    s.pair.plane_delay_ns[0] = 150'000;  // earlier packets on plane 0 arrive after later messages
    constexpr std::size_t kMsgs = 10, kMsg = 48 << 10;
    std::vector<std::uint8_t> src[2] = {random_bytes(kMsgs * kMsg, 1), random_bytes(kMsgs * kMsg, 2)};
    std::vector<std::uint8_t> dst(2 * kMsgs * kMsg, 0);
    std::vector<RecvRequest> rr;
    for (std::size_t i = 0; i < 2 * kMsgs; ++i) rr.push_back(recv_wr(500 + i, dst.data() + i * kMsg, kMsg));
    REQUIRE(s.b().submit(CmdPostSrqRecv{1, rr}, s.pair.now).err == 0);
    CHECK(s.b().find_srq(1)->wrs.size() == 2 * kMsgs);
    for (int q = 0; q < 2; ++q) {
        std::vector<SendRequest> wrs;
        for (std::size_t i = 0; i < kMsgs; ++i)
            wrs.push_back(send_wr(q * 100 + i, src[q].data() + i * kMsg, static_cast<std::uint32_t>(kMsg)));
        REQUIRE(s.pair.engines[0]->submit(CmdPostSend{s.qps[q].first, wrs}, s.pair.now).err == 0);
    }
    REQUIRE(s.pair.run([&] { return s.of(1, WcOpcode::recv).size() == 2 * kMsgs && s.of(0, WcOpcode::send).size() == 2 * kMsgs; },
                       s.pair.now + 400'000'000));
    // Every receive taken exactly once; per QP, its k-th completion holds its k-th message.
    std::map<std::uint32_t, std::size_t> next;
    std::vector<int> taken(2 * kMsgs, 0);
    for (const Completion& c : s.of(1, WcOpcode::recv)) {
        REQUIRE(c.status == WcStatus::success);
        REQUIRE(c.wr_id >= 500);
        REQUIRE(c.wr_id < 500 + 2 * kMsgs);
        const std::size_t slot = c.wr_id - 500;
        ++taken[slot];
        const int q = c.qpn == s.qps[0].second ? 0 : 1;
        REQUIRE(c.qpn == s.qps[q].second);
        const std::size_t k = next[c.qpn]++;
        CHECK(c.byte_len == kMsg);
        INFO("QP " << q << " message " << k << " in receive " << slot);
        CHECK(std::equal(src[q].begin() + k * kMsg, src[q].begin() + (k + 1) * kMsg, dst.begin() + slot * kMsg));
    }
    for (int t : taken) CHECK(t == 1);
    const Srq* srq = s.b().find_srq(1);
    CHECK(srq->wrs.empty());
    CHECK(srq->taken == 2 * kMsgs);
    CHECK(srq->qps == 2);
}

TEST_CASE("Engine::srq__loss_both_ways_and_reordering_keep_each_qps_message_order", "[unit][core]") {
    SrqPair s(3);
    std::mt19937 rng(17);
    // 5 % of frames either way lost, the rest delayed 0–40 µs at random: SACKs, NAKs and resends on every QP.
    s.pair.hook = [&](int, std::uint8_t, std::vector<std::uint8_t>&) {
        return Fate{rng() % 20 == 0, static_cast<TimeNs>(rng() % 40'000)};
    };
    constexpr std::size_t kMsgs = 6, kMsg = 20000;
    std::vector<std::uint8_t> src[3] = {random_bytes(kMsgs * kMsg, 7), random_bytes(kMsgs * kMsg, 8),
                                        random_bytes(kMsgs * kMsg, 9)};
    std::vector<std::uint8_t> dst(3 * kMsgs * kMsg, 0);
    std::vector<RecvRequest> rr;
    for (std::size_t i = 0; i < 3 * kMsgs; ++i) rr.push_back(recv_wr(900 + i, dst.data() + i * kMsg, kMsg));
    REQUIRE(s.b().submit(CmdPostSrqRecv{1, rr}, s.pair.now).err == 0);
    for (int q = 0; q < 3; ++q) {
        std::vector<SendRequest> wrs;
        for (std::size_t i = 0; i < kMsgs; ++i)
            wrs.push_back(send_wr(q * 100 + i, src[q].data() + i * kMsg, static_cast<std::uint32_t>(kMsg)));
        REQUIRE(s.pair.engines[0]->submit(CmdPostSend{s.qps[q].first, wrs}, s.pair.now).err == 0);
    }
    REQUIRE(s.pair.run([&] { return s.of(1, WcOpcode::recv).size() == 3 * kMsgs && s.of(0, WcOpcode::send).size() == 3 * kMsgs; },
                       s.pair.now + 2'000'000'000));
    std::map<std::uint32_t, std::size_t> next;
    std::vector<int> taken(3 * kMsgs, 0);
    for (const Completion& c : s.of(1, WcOpcode::recv)) {
        REQUIRE(c.status == WcStatus::success);
        const std::size_t slot = c.wr_id - 900;
        REQUIRE(slot < 3 * kMsgs);
        ++taken[slot];
        int q = 0;
        while (q < 3 && c.qpn != s.qps[q].second) ++q;
        REQUIRE(q < 3);
        const std::size_t k = next[c.qpn]++;
        INFO("QP " << q << " message " << k << " in receive " << slot);
        CHECK(std::equal(src[q].begin() + k * kMsg, src[q].begin() + (k + 1) * kMsg, dst.begin() + slot * kMsg));
    }
    for (int t : taken) CHECK(t == 1);  // one receive consumed per message
    for (const Completion& c : s.of(0, WcOpcode::send)) CHECK(c.status == WcStatus::success);
    std::uint64_t resent = 0;
    for (const auto& [a, b] : s.qps) resent += s.pair.engines[0]->find_qp(a)->stats.data_pkts_resent;
    CHECK(resent > 0);  // the loss was real
}

TEST_CASE("Engine::srq__empty_srq_naks_rnr_until_a_receive_is_posted", "[unit][core]") {
    QpAttr attr = srq_attr();
    attr.min_rnr_timer = 1;  // 10 µs
    SrqPair s(1, 16, 0, attr);
    std::vector<std::uint8_t> src = random_bytes(3000, 3), dst(3000, 0);
    const SendRequest w = send_wr(7, src.data(), 3000);
    REQUIRE(s.pair.engines[0]->submit(CmdPostSend{s.qps[0].first, {&w, 1}}, s.pair.now).err == 0);
    s.pair.run([] { return false; }, s.pair.now + 100'000);
    const Qp* qb = s.b().find_qp(s.qps[0].second);
    CHECK(qb->stats.rnr_naks_sent > 0);
    CHECK(s.b().find_srq(1)->rnr_naks > 0);
    CHECK(s.pair.completions[1].empty());
    const RecvRequest r = recv_wr(9, dst.data(), 3000);
    REQUIRE(s.b().submit(CmdPostSrqRecv{1, {&r, 1}}, s.pair.now).err == 0);
    REQUIRE(s.pair.run([&] { return s.pair.completions[0].size() == 1 && s.pair.completions[1].size() == 1; },
                       s.pair.now + 10'000'000));
    CHECK(s.pair.completions[0][0].status == WcStatus::success);
    CHECK(s.pair.completions[1][0].wr_id == 9);
    CHECK((dst == src));
}

TEST_CASE("Engine::srq__write_with_imm_takes_an_srq_receive", "[unit][core]") {
    SrqPair s(1);
    std::vector<std::uint8_t> src = random_bytes(4096, 4), wdst(4096, 0);
    s.pair.memory[1].add(0x99, wdst.data(), wdst.size());
    RecvRequest r = recv_wr(11, nullptr, 0);
    r.sge_count = 0;
    REQUIRE(s.b().submit(CmdPostSrqRecv{1, {&r, 1}}, s.pair.now).err == 0);
    SendRequest w;
    w.wr_id = 1;
    w.with_imm = true;
    w.imm_data = 0xC0FFEE;
    w.remote_addr = reinterpret_cast<std::uint64_t>(wdst.data());
    w.rkey = 0x99;
    w.sge_count = 1;
    w.sges[0] = {src.data(), 4096};
    REQUIRE(s.pair.engines[0]->submit(CmdPostSend{s.qps[0].first, {&w, 1}}, s.pair.now).err == 0);
    REQUIRE(s.pair.run([&] { return s.pair.completions[1].size() == 1; }, s.pair.now + 10'000'000));
    CHECK(s.pair.completions[1][0].opcode == WcOpcode::recv_rdma_with_imm);
    CHECK(s.pair.completions[1][0].wr_id == 11);
    CHECK(s.pair.completions[1][0].imm_data == 0xC0FFEE);
    CHECK((wdst == src));
    CHECK(s.b().find_srq(1)->wrs.empty());
}

TEST_CASE("Engine::srq__write_with_imm_placed_into_an_empty_srq_completes_once_one_is_posted", "[unit][core]") {
    SrqPair s(1);
    std::vector<std::uint8_t> src = random_bytes(4096, 10), wdst(4096, 0);
    s.pair.memory[1].add(0x99, wdst.data(), wdst.size());
    SendRequest w;
    w.wr_id = 1;
    w.with_imm = true;
    w.imm_data = 0xAB;
    w.remote_addr = reinterpret_cast<std::uint64_t>(wdst.data());
    w.rkey = 0x99;
    w.sge_count = 1;
    w.sges[0] = {src.data(), 4096};
    REQUIRE(s.pair.engines[0]->submit(CmdPostSend{s.qps[0].first, {&w, 1}}, s.pair.now).err == 0);
    // Placed and acknowledged with no receive anywhere: the sender completes, the receive waits.
    REQUIRE(s.pair.run([&] { return s.pair.completions[0].size() == 1; }, s.pair.now + 10'000'000));
    CHECK(s.pair.completions[0][0].status == WcStatus::success);
    CHECK((wdst == src));
    CHECK(s.pair.completions[1].empty());
    CHECK(s.b().find_srq(1)->imm_waiting);
    CHECK(s.b().find_srq(1)->rnr_naks == 0);  // a WRITE_WITH_IMM is never RNR-NAKed
    RecvRequest r = recv_wr(12, nullptr, 0);
    r.sge_count = 0;
    REQUIRE(s.b().submit(CmdPostSrqRecv{1, {&r, 1}}, s.pair.now).err == 0);
    REQUIRE(s.pair.completions[1].empty());  // completions come out through the pair's run
    REQUIRE(s.pair.run([&] { return s.pair.completions[1].size() == 1; }, s.pair.now + 1'000'000));
    CHECK(s.pair.completions[1][0].wr_id == 12);
    CHECK(s.pair.completions[1][0].opcode == WcOpcode::recv_rdma_with_imm);
    CHECK(s.pair.completions[1][0].imm_data == 0xAB);
    CHECK_FALSE(s.b().find_srq(1)->imm_waiting);
    CHECK(s.b().find_srq(1)->taken == 1);
}

TEST_CASE("Engine::srq__limit_event_fires_once_per_arming", "[unit][core]") {
    SrqPair s(1, 64, 4);
    std::vector<std::uint8_t> src = random_bytes(8 * 256, 5), dst(8 * 256, 0);
    std::vector<RecvRequest> rr;
    for (std::size_t i = 0; i < 8; ++i) rr.push_back(recv_wr(i, dst.data() + i * 256, 256));
    REQUIRE(s.b().submit(CmdPostSrqRecv{1, rr}, s.pair.now).err == 0);
    auto send = [&](std::size_t i) {
        const SendRequest w = send_wr(i, src.data() + i * 256, 256);
        REQUIRE(s.pair.engines[0]->submit(CmdPostSend{s.qps[0].first, {&w, 1}}, s.pair.now).err == 0);
        REQUIRE(s.pair.run([&] { return s.of(1, WcOpcode::recv).size() == i + 1; }, s.pair.now + 10'000'000));
    };
    for (std::size_t i = 0; i < 4; ++i) send(i);  // 4 left: not below the limit
    CHECK(s.of(1, WcOpcode::srq_limit_reached).empty());
    send(4);  // 3 left
    auto ev = s.of(1, WcOpcode::srq_limit_reached);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].wr_id == 1);  // the SRQ's number
    CHECK(ev[0].qpn == 0);
    CHECK(s.b().find_srq(1)->limit == 0);  // disarmed
    send(5);
    CHECK(s.of(1, WcOpcode::srq_limit_reached).size() == 1);
    REQUIRE(s.b().submit(CmdModifySrq{1, kSrqAttrLimit, 0, 3}, s.pair.now).err == 0);  // 2 left < 3 once taken
    send(6);
    CHECK(s.of(1, WcOpcode::srq_limit_reached).size() == 2);
    CHECK(s.b().find_srq(1)->limit_events == 2);
}

TEST_CASE("Engine::srq__commands_refuse_what_ibverbs_refuses", "[unit][core]") {
    SrqPair s(1, 4);
    Engine& b = s.b();
    const std::uint32_t qpn = s.qps[0].second;
    std::uint8_t buf[64];
    const RecvRequest r = recv_wr(1, buf, 64);
    CHECK(b.submit(CmdPostRecv{qpn, {&r, 1}}, s.pair.now).err == EINVAL);  // the QP has no receive queue
    CHECK(b.submit(CmdCreateSrq{1, 0, 0}, s.pair.now).err == EINVAL);
    CHECK(b.submit(CmdCreateSrq{1, 65537, 0}, s.pair.now).err == EINVAL);
    CHECK(b.submit(CmdCreateSrq{1, 8, 9}, s.pair.now).err == EINVAL);  // limit above max_wr
    QpCaps caps;
    caps.srqn = 77;
    CHECK(b.submit(CmdCreateQp{caps}, s.pair.now).err == EINVAL);  // no such SRQ
    const RecvRequest five[5] = {r, r, r, r, r};
    const SubmitResult full = b.submit(CmdPostSrqRecv{1, five}, s.pair.now);
    CHECK(full.err == ENOMEM);
    CHECK(full.bad_index == 4);
    CHECK(b.submit(CmdPostSrqRecv{2, {&r, 1}}, s.pair.now).err == EINVAL);
    CHECK(b.submit(CmdModifySrq{1, kSrqAttrMaxWr, 3, 0}, s.pair.now).err == EINVAL);  // holds 4
    CHECK(b.submit(CmdModifySrq{1, kSrqAttrMaxWr, 8, 0}, s.pair.now).err == 0);
    CHECK(b.find_srq(1)->max_wr == 8);
    CHECK(b.submit(CmdModifySrq{1, kSrqAttrLimit, 0, 9}, s.pair.now).err == EINVAL);
    CHECK(b.submit(CmdModifySrq{1, 4, 0, 0}, s.pair.now).err == EINVAL);  // unknown mask bit
    CHECK(b.submit(CmdDestroySrq{1}, s.pair.now).err == EBUSY);           // a QP uses it
    REQUIRE(b.submit(CmdDestroyQp{qpn}, s.pair.now).err == 0);
    CHECK(b.find_srq(1)->qps == 0);
    CHECK(b.submit(CmdDestroySrq{1}, s.pair.now).err == 0);
    CHECK(b.find_srq(1) == nullptr);
    CHECK(b.submit(CmdDestroySrq{1}, s.pair.now).err == EINVAL);
    // The number is free again.
    CHECK(b.submit(CmdCreateSrq{1, 4, 0}, s.pair.now).srqn == 1);
}

TEST_CASE("Engine::srq__error_flushes_the_qps_taken_receives_and_leaves_the_srqs", "[unit][core]") {
    SrqPair s(2);
    std::vector<std::uint8_t> src = random_bytes(9000, 6), dst(4 * 1024, 0);
    std::vector<RecvRequest> rr;
    for (std::size_t i = 0; i < 4; ++i) rr.push_back(recv_wr(40 + i, dst.data() + i * 1024, 1024));
    REQUIRE(s.b().submit(CmdPostSrqRecv{1, rr}, s.pair.now).err == 0);
    // 9000 bytes into a 1024-byte receive: QP 0 at B fails with LOC_LEN_ERR.
    const SendRequest w = send_wr(1, src.data(), 9000);
    REQUIRE(s.pair.engines[0]->submit(CmdPostSend{s.qps[0].first, {&w, 1}}, s.pair.now).err == 0);
    REQUIRE(s.pair.run([&] { return s.pair.completions[0].size() == 1 && !s.pair.completions[1].empty(); },
                       s.pair.now + 10'000'000));
    CHECK(s.pair.completions[1][0].status == WcStatus::loc_len_err);
    CHECK(s.pair.completions[1][0].wr_id == 40);
    CHECK(s.pair.completions[0][0].status == WcStatus::rem_inv_req_err);
    CHECK(s.b().qp_info(s.qps[0].second).state == QpState::err);
    // The other QP still gets the SRQ's remaining receives.
    CHECK(s.b().find_srq(1)->wrs.size() == 3);
    const SendRequest ok = send_wr(2, src.data(), 1000);
    REQUIRE(s.pair.engines[0]->submit(CmdPostSend{s.qps[1].first, {&ok, 1}}, s.pair.now).err == 0);
    REQUIRE(s.pair.run([&] { return s.of(1, WcOpcode::recv).size() == 2; }, s.pair.now + 10'000'000));
    const Completion c = s.of(1, WcOpcode::recv)[1];
    CHECK(c.status == WcStatus::success);
    CHECK(c.qpn == s.qps[1].second);
    CHECK(c.wr_id == 41);
    CHECK(std::equal(src.begin(), src.begin() + 1000, dst.begin() + 1024));
}
