// SPDX-License-Identifier: BSD-3-Clause
// SEND / SEND_WITH_IMM / RECV over sprayed multipath, through the engine's
// sans-IO API: two engines back to back in virtual time. Receives are taken
// in message order, every packet is placed on arrival at its offset, and
// completions come in order; RNR and short receives behave as IBTA says.
#include <catch2/catch.hpp>

#include <numeric>
#include <random>

#include "core/psn.hpp"
#include "support/engine_pair.hpp"
#include "support/engine_requests.hpp"

using namespace omrc;
using namespace omrc::core;
using omrc::test::EnginePair;
using omrc::test::Fate;
using omrc::test::random_bytes;
using omrc::test::recv_wr;
using omrc::test::send_wr;

namespace {

QpAttr send_attr() { return omrc::test::fixed_window_attr(); }

std::vector<Completion> of_opcode(const std::vector<Completion>& v, WcOpcode op) {
    std::vector<Completion> out;
    for (const Completion& c : v)
        if (c.opcode == op) out.push_back(c);
    return out;
}

/// `msgs` SENDs of `msg` bytes from A into as many receives of `msg` bytes
/// (3 SGEs each) at B, the last WITH_IMM.
struct SendRun {
    std::vector<std::uint8_t> src, dst;
    std::size_t msgs, msg;
    SendRun(EnginePair& pair, std::uint32_t a, std::uint32_t b, std::size_t n, std::size_t size, std::uint64_t seed)
        : src(random_bytes(n * size, seed)), dst(n * size, 0), msgs(n), msg(size) {
        std::vector<RecvRequest> rr;
        for (std::size_t i = 0; i < msgs; ++i)
            rr.push_back(recv_wr(1000 + i, dst.data() + i * msg, static_cast<std::uint32_t>(msg), 3));
        REQUIRE(pair.engines[1]->submit(CmdPostRecv{b, rr}, pair.now).err == 0);
        std::vector<SendRequest> wrs;
        for (std::size_t i = 0; i < msgs; ++i) {
            wrs.push_back(send_wr(i, src.data() + i * msg, static_cast<std::uint32_t>(msg)));
            wrs.back().with_imm = i + 1 == msgs;
            wrs.back().imm_data = 0x5E4D0000u + static_cast<std::uint32_t>(i);
        }
        REQUIRE(pair.engines[0]->submit(CmdPostSend{a, wrs}, pair.now).err == 0);
    }
    bool done(const EnginePair& pair) const {
        return pair.completions[0].size() == msgs && pair.completions[1].size() == msgs;
    }
    void check(const EnginePair& pair) const {
        CHECK((dst == src));  // a bool: Catch prints no vectors
        REQUIRE(pair.completions[1].size() == msgs);
        for (std::size_t i = 0; i < msgs; ++i) {
            const Completion& c = pair.completions[1][i];
            INFO("receive " << i);
            CHECK(c.status == WcStatus::success);
            CHECK(c.opcode == WcOpcode::recv);
            CHECK(c.wr_id == 1000 + i);  // receives consumed in message order
            CHECK(c.byte_len == msg);
            CHECK(c.has_imm == (i + 1 == msgs));
            if (c.has_imm) CHECK(c.imm_data == 0x5E4D0000u + i);
        }
        for (std::size_t i = 0; i < msgs; ++i) {
            CHECK(pair.completions[0][i].wr_id == i);
            CHECK(pair.completions[0][i].opcode == WcOpcode::send);
            CHECK(pair.completions[0][i].status == WcStatus::success);
        }
    }
};

}  // namespace

TEST_CASE("Engine::send__sprayed_reordered_messages_fill_receives_in_order", "[unit][core]") {
    EnginePair pair;
    // Plane 0 is slow: earlier packets sprayed there arrive after later messages.
    pair.plane_delay_ns[0] = 150'000;
    auto [a, b] = pair.connect(send_attr());
    SendRun r(pair, a, b, 12, 96 << 10, 1);
    REQUIRE(pair.run([&] { return r.done(pair); }, pair.now + 200'000'000));
    r.check(pair);
    const auto* qb = pair.engines[1]->find_qp(b);
    CHECK(qb->stats.send_msgs_received == 12);
    CHECK(qb->stats.rnr_naks_sent == 0);
    // Late packets may be sent again (the slow plane looks lossy at first);
    // a duplicate lands on the same bytes and consumes no second receive.
    CHECK(qb->rq.empty());
}

TEST_CASE("Engine::send__random_loss_both_directions_stays_byte_exact", "[unit][core]") {
    for (std::uint64_t seed : {11u, 12u, 13u}) {
        EnginePair pair;
        std::mt19937_64 rng(seed);
        pair.hook = [&](int, std::uint8_t, std::vector<std::uint8_t>&) { return Fate{rng() % 10 == 0, 0}; };
        auto [a, b] = pair.connect(send_attr());
        INFO("seed " << seed);
        SendRun r(pair, a, b, 16, 64 << 10, seed);
        REQUIRE(pair.run([&] { return r.done(pair); }, pair.now + 2'000'000'000));
        r.check(pair);
        CHECK(pair.engines[0]->find_qp(a)->stats.data_pkts_resent > 0);
        CHECK(pair.engines[1]->find_qp(b)->rq.empty());  // exactly one receive per message
    }
}

TEST_CASE("Engine::send__trimmed_packets_are_resent_into_the_same_receive", "[unit][core]") {
    EnginePair pair;
    std::mt19937_64 rng(21);
    pair.hook = [&](int from, std::uint8_t plane, std::vector<std::uint8_t>& f) {
        if (from == 0 && plane == 2 && f.size() > 1000 && rng() % 8 == 0) omrc::test::trim_frame(f);
        return Fate{};
    };
    auto [a, b] = pair.connect(send_attr());
    SendRun r(pair, a, b, 8, 128 << 10, 21);
    REQUIRE(pair.run([&] { return r.done(pair); }, pair.now + 500'000'000));
    r.check(pair);
}

TEST_CASE("Engine::send__zero_and_one_packet_messages", "[unit][core]") {
    EnginePair pair;
    auto [a, b] = pair.connect(send_attr());
    std::vector<std::uint8_t> src = random_bytes(100, 3), dst(4096, 0xEE);
    std::vector<RecvRequest> rr{recv_wr(1, dst.data(), 64), recv_wr(2, dst.data() + 64, 4000)};
    REQUIRE(pair.engines[1]->submit(CmdPostRecv{b, rr}, pair.now).err == 0);
    std::vector<SendRequest> wrs{send_wr(10, src.data(), 0), send_wr(11, src.data(), 100)};
    wrs[0].with_imm = true;
    wrs[0].imm_data = 0xCAFE;
    REQUIRE(pair.engines[0]->submit(CmdPostSend{a, wrs}, pair.now).err == 0);
    REQUIRE(pair.run([&] { return pair.completions[1].size() == 2 && pair.completions[0].size() == 2; },
                     pair.now + 50'000'000));
    const auto& wc = pair.completions[1];
    CHECK(wc[0].wr_id == 1);
    CHECK(wc[0].byte_len == 0);
    CHECK(wc[0].has_imm);
    CHECK(wc[0].imm_data == 0xCAFE);
    CHECK(wc[1].wr_id == 2);
    CHECK(wc[1].byte_len == 100);
    CHECK(std::equal(src.begin(), src.end(), dst.begin() + 64));
    CHECK(dst[0] == 0xEE);          // the empty message wrote nothing
    CHECK(dst[64 + 100] == 0xEE);   // nor past its length
}

TEST_CASE("Engine::send__solicited_flag_reaches_the_receive_completion", "[unit][core]") {
    EnginePair pair;
    auto [a, b] = pair.connect(send_attr());
    std::vector<std::uint8_t> src = random_bytes(9000, 4), dst(2 * 9000);
    std::vector<RecvRequest> rr{recv_wr(1, dst.data(), 9000), recv_wr(2, dst.data() + 9000, 9000)};
    REQUIRE(pair.engines[1]->submit(CmdPostRecv{b, rr}, pair.now).err == 0);
    std::vector<SendRequest> wrs{send_wr(1, src.data(), 9000), send_wr(2, src.data(), 9000)};
    wrs[1].solicited = true;
    REQUIRE(pair.engines[0]->submit(CmdPostSend{a, wrs}, pair.now).err == 0);
    REQUIRE(pair.run([&] { return pair.completions[1].size() == 2; }, pair.now + 50'000'000));
    CHECK_FALSE(pair.completions[1][0].solicited);
    CHECK(pair.completions[1][1].solicited);
}

TEST_CASE("Engine::send__and_write_with_imm_share_the_receive_queue_in_order", "[unit][core]") {
    EnginePair pair;
    pair.plane_delay_ns[1] = 80'000;
    auto [a, b] = pair.connect(send_attr());
    std::vector<std::uint8_t> src = random_bytes(3 * 20000, 5), wdst(20000, 0), rbuf(2 * 20000, 0);
    pair.memory[1].add(0x1234, wdst.data(), wdst.size());
    std::vector<RecvRequest> rr{recv_wr(1, rbuf.data(), 20000), recv_wr(2, nullptr, 0),
                                recv_wr(3, rbuf.data() + 20000, 20000)};
    rr[1].sge_count = 0;
    REQUIRE(pair.engines[1]->submit(CmdPostRecv{b, rr}, pair.now).err == 0);
    std::vector<SendRequest> wrs{send_wr(1, src.data(), 20000), {}, send_wr(3, src.data() + 40000, 20000)};
    wrs[1].wr_id = 2;
    wrs[1].with_imm = true;
    wrs[1].imm_data = 7;
    wrs[1].remote_addr = reinterpret_cast<std::uint64_t>(wdst.data());
    wrs[1].rkey = 0x1234;
    wrs[1].sge_count = 1;
    wrs[1].sges[0] = {src.data() + 20000, 20000};
    REQUIRE(pair.engines[0]->submit(CmdPostSend{a, wrs}, pair.now).err == 0);
    REQUIRE(pair.run([&] { return pair.completions[1].size() == 3 && pair.completions[0].size() == 3; },
                     pair.now + 50'000'000));
    const auto& wc = pair.completions[1];
    CHECK(wc[0].wr_id == 1);
    CHECK(wc[0].opcode == WcOpcode::recv);
    CHECK(wc[1].wr_id == 2);
    CHECK(wc[1].opcode == WcOpcode::recv_rdma_with_imm);
    CHECK(wc[2].wr_id == 3);
    CHECK(wc[2].opcode == WcOpcode::recv);
    CHECK(std::equal(src.begin(), src.begin() + 20000, rbuf.begin()));
    CHECK(std::equal(src.begin() + 20000, src.begin() + 40000, wdst.begin()));
    CHECK(std::equal(src.begin() + 40000, src.end(), rbuf.begin() + 20000));
    CHECK(of_opcode(pair.completions[0], WcOpcode::send).size() == 2);
    CHECK(of_opcode(pair.completions[0], WcOpcode::rdma_write).size() == 1);
}

TEST_CASE("Engine::send__rnr_nak_waits_then_succeeds_once_a_receive_is_posted", "[unit][core]") {
    EnginePair pair;
    QpAttr attr = send_attr();
    attr.min_rnr_timer = 1;  // 10 µs
    auto [a, b] = pair.connect(attr);
    std::vector<std::uint8_t> src = random_bytes(32 << 10, 6), dst(32 << 10, 0);
    const SendRequest w = send_wr(5, src.data(), 32 << 10);
    REQUIRE(pair.engines[0]->submit(CmdPostSend{a, std::span(&w, 1)}, pair.now).err == 0);
    // No receive for 2 ms of virtual time: refused, not placed, waited out again and again.
    pair.run([] { return false; }, pair.now + 2'000'000);
    CHECK(pair.completions[0].empty());
    CHECK(pair.completions[1].empty());
    const auto* qa = pair.engines[0]->find_qp(a);
    const auto* qb = pair.engines[1]->find_qp(b);
    CHECK(qb->stats.rnr_naks_sent > 0);
    CHECK(qa->stats.rnr_waits > 10);  // every 10 µs or so (rnr_retry 7: without limit)
    CHECK(pair.engines[1]->stats().rx_drops[static_cast<std::size_t>(DropReason::rnr)] == qb->stats.rnr_naks_sent);
    CHECK(qa->state == QpState::rts);
    CHECK(std::all_of(dst.begin(), dst.end(), [](std::uint8_t x) { return x == 0; }));
    const RecvRequest r = recv_wr(9, dst.data(), 32 << 10, 2);
    REQUIRE(pair.engines[1]->submit(CmdPostRecv{b, std::span(&r, 1)}, pair.now).err == 0);
    REQUIRE(pair.run([&] { return pair.completions[0].size() == 1 && pair.completions[1].size() == 1; },
                     pair.now + 10'000'000));
    CHECK(pair.completions[0][0].status == WcStatus::success);
    CHECK(pair.completions[1][0].wr_id == 9);
    CHECK((dst == src));
}

TEST_CASE("Engine::send__rnr_retry_exhausted_fails_with_rnr_retry_exc_err", "[unit][core]") {
    EnginePair pair;
    QpAttr attr = send_attr();
    attr.min_rnr_timer = 2;  // 20 µs
    attr.rnr_retry = 3;
    auto [a, b] = pair.connect(attr);
    std::vector<std::uint8_t> src = random_bytes(4096, 7);
    std::vector<SendRequest> wrs{send_wr(1, src.data(), 4096), send_wr(2, src.data(), 4096)};
    REQUIRE(pair.engines[0]->submit(CmdPostSend{a, wrs}, pair.now).err == 0);
    REQUIRE(pair.run([&] { return pair.completions[0].size() == 2; }, pair.now + 100'000'000));
    CHECK(pair.completions[0][0].status == WcStatus::rnr_retry_exc_err);
    CHECK(pair.completions[0][0].wr_id == 1);
    CHECK(pair.completions[0][1].status == WcStatus::wr_flush_err);
    const auto* qa = pair.engines[0]->find_qp(a);
    CHECK(qa->stats.rnr_waits == 3);
    CHECK(qa->state == QpState::err);
    CHECK(pair.completions[1].empty());
    (void)b;
}

TEST_CASE("Engine::send__rnr_retry_zero_fails_at_the_first_nak", "[unit][core]") {
    EnginePair pair;
    QpAttr attr = send_attr();
    attr.rnr_retry = 0;
    auto [a, b] = pair.connect(attr);
    std::vector<std::uint8_t> src = random_bytes(100, 8);
    const SendRequest w = send_wr(1, src.data(), 100);
    REQUIRE(pair.engines[0]->submit(CmdPostSend{a, std::span(&w, 1)}, pair.now).err == 0);
    REQUIRE(pair.run([&] { return pair.completions[0].size() == 1; }, pair.now + 10'000'000));
    CHECK(pair.completions[0][0].status == WcStatus::rnr_retry_exc_err);
    CHECK(pair.engines[0]->find_qp(a)->stats.rnr_waits == 0);
    (void)b;
}

TEST_CASE("Engine::send__longer_than_the_receive_fails_both_sides", "[unit][core]") {
    EnginePair pair;
    auto [a, b] = pair.connect(send_attr());
    std::vector<std::uint8_t> src = random_bytes(10000, 9), ok(8192, 0), small(1000, 0);
    std::vector<RecvRequest> rr{recv_wr(1, ok.data(), 8192), recv_wr(2, small.data(), 1000),
                                recv_wr(3, ok.data(), 8192)};
    REQUIRE(pair.engines[1]->submit(CmdPostRecv{b, rr}, pair.now).err == 0);
    std::vector<SendRequest> wrs{send_wr(1, src.data(), 8192), send_wr(2, src.data(), 10000)};
    REQUIRE(pair.engines[0]->submit(CmdPostSend{a, wrs}, pair.now).err == 0);
    REQUIRE(pair.run([&] { return pair.completions[0].size() == 2 && pair.completions[1].size() == 3; },
                     pair.now + 50'000'000));
    // The sender: the first SEND may succeed or be flushed (the error can
    // overtake its acknowledgement); the long one fails with the NAK's status.
    CHECK(pair.completions[0][1].wr_id == 2);
    CHECK(pair.completions[0][1].status == WcStatus::rem_inv_req_err);
    // The receiver: the short receive fails loc_len_err, nothing of the long message lands in it.
    const auto& wc = pair.completions[1];
    const auto it = std::find_if(wc.begin(), wc.end(), [](const Completion& c) { return c.wr_id == 2; });
    REQUIRE(it != wc.end());
    CHECK(it->status == WcStatus::loc_len_err);
    CHECK(it->opcode == WcOpcode::recv);
    CHECK(wc.back().wr_id == 3);
    CHECK(wc.back().status == WcStatus::wr_flush_err);
    CHECK(std::all_of(small.begin(), small.end(), [](std::uint8_t x) { return x == 0; }));
    CHECK(pair.engines[1]->find_qp(b)->state == QpState::err);
    CHECK(pair.engines[0]->find_qp(a)->state == QpState::err);
    CHECK(pair.engines[1]->stats().rx_drops[static_cast<std::size_t>(DropReason::recv_too_small)] >= 1);
}
