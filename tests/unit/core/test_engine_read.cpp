// SPDX-License-Identifier: BSD-3-Clause
// RDMA READ over sprayed multipath, through the engine's sans-IO API: two
// engines back to back in virtual time. The responder sprays its answer as a
// message of its own direction; the requester places each packet on arrival
// at its offset into the READ's SGEs; the READ completes in order once every
// byte is placed. max_rd_atomic / max_dest_rd_atomic, access and bounds
// errors, a READ after a WRITE, loss, trims and a dark responder.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "support/engine_pair.hpp"
#include "support/engine_requests.hpp"

using namespace omrc;
using namespace omrc::core;
using omrc::test::EnginePair;
using omrc::test::Fate;
using omrc::test::random_bytes;

namespace {

constexpr std::uint32_t kRkey = 0x5EAD;

QpAttr read_attr() { return omrc::test::fixed_window_attr(); }

/// A READ of `len` bytes at `remote` into `dst`, over `pieces` SGEs.
SendRequest read_wr(std::uint64_t wr_id, std::uint8_t* dst, std::uint32_t len, const std::uint8_t* remote,
                    std::uint32_t pieces = 1) {
    SendRequest r;
    r.wr_id = wr_id;
    r.is_read = true;
    r.remote_addr = reinterpret_cast<std::uint64_t>(remote);
    r.rkey = kRkey;
    r.sge_count = static_cast<std::uint8_t>(len == 0 ? 0 : pieces);
    const std::uint32_t each = len / pieces;
    for (std::uint32_t i = 0; len != 0 && i < pieces; ++i)
        r.sges[i] = {dst + i * each, i + 1 == pieces ? len - i * each : each, 0x99};
    return r;
}

/// The opcode of a frame the pair carries (plain mode: BTH at byte 62).
wire::Opcode opcode_of(const std::vector<std::uint8_t>& f) { return static_cast<wire::Opcode>(f[62]); }

/// `n` READs of `size` bytes each from B's region into A's, posted at once.
struct ReadRun {
    std::vector<std::uint8_t> src, dst;
    std::size_t n, size;
    ReadRun(EnginePair& pair, std::uint32_t a, std::size_t count, std::size_t bytes, std::uint64_t seed,
            std::uint32_t pieces = 3)
        : src(random_bytes(count * bytes, seed)), dst(count * bytes, 0), n(count), size(bytes) {
        pair.memory[1].add(kRkey, src.data(), src.size());
        std::vector<SendRequest> wrs;
        for (std::size_t i = 0; i < n; ++i)
            wrs.push_back(read_wr(i, dst.data() + i * size, static_cast<std::uint32_t>(size), src.data() + i * size,
                                  pieces));
        REQUIRE(pair.engines[0]->submit(CmdPostSend{a, wrs}, pair.now).err == 0);
    }
    bool done(const EnginePair& pair) const { return pair.completions[0].size() == n; }
    void check(const EnginePair& pair) const {
        CHECK((dst == src));  // a bool: Catch prints no vectors
        REQUIRE(pair.completions[0].size() == n);
        for (std::size_t i = 0; i < n; ++i) {
            const Completion& c = pair.completions[0][i];
            INFO("READ " << i);
            CHECK(c.wr_id == i);  // in post order
            CHECK(c.status == WcStatus::success);
            CHECK(c.opcode == WcOpcode::rdma_read);
            CHECK(c.byte_len == size);
        }
        CHECK(pair.completions[1].empty());  // the responder completes nothing
    }
};

}  // namespace

TEST_CASE("Engine::read__sprayed_response_placed_in_any_order_into_the_sges", "[unit][core]") {
    EnginePair pair;
    pair.plane_delay_ns[1] = 120'000;  // responses sprayed on plane 1 arrive after later ones
    auto [a, b] = pair.connect(read_attr());
    ReadRun r(pair, a, 6, (1u << 20) + 4097, 1);
    const Qp* qa = pair.engines[0]->find_qp(a);
    const Qp* qb = pair.engines[1]->find_qp(b);
    // Until the responder has the acknowledgement of its last response too.
    REQUIRE(pair.run([&] { return r.done(pair) && qb->rd_resp_queued == 0; }, pair.now + 500'000'000));
    r.check(pair);
    CHECK(qa->stats.reads_completed == 6);
    CHECK(qb->stats.reads_answered == 6);
    CHECK(qa->rd_outstanding == 0);
    CHECK(qb->rd_resp_queued == 0);  // every response acknowledged and retired
    CHECK(qb->sq_retired == 0);      // responses are no WRs of B's
    CHECK(qa->stats.read_resp_pkts_placed == qb->stats.data_pkts_sent);
    // The responder sprayed: its answer used every plane.
    for (std::uint32_t p = 0; p < pair.engines[1]->config().planes; ++p) CHECK(qb->plane_counters[p].data_sent > 0);
}

TEST_CASE("Engine::read__random_loss_both_directions_stays_byte_exact", "[unit][core]") {
    for (std::uint64_t seed : {31u, 32u}) {
        EnginePair pair;
        std::mt19937_64 rng(seed);
        pair.hook = [&](int, std::uint8_t, std::vector<std::uint8_t>&) { return Fate{rng() % 10 == 0, 0}; };
        auto [a, b] = pair.connect(read_attr());
        INFO("seed " << seed);
        ReadRun r(pair, a, 12, 200'000, seed);
        REQUIRE(pair.run([&] { return r.done(pair); }, pair.now + 2'000'000'000));
        r.check(pair);
        CHECK(pair.engines[1]->find_qp(b)->stats.data_pkts_resent > 0);  // lost responses were sent again
    }
}

TEST_CASE("Engine::read__trimmed_responses_are_nacked_and_resent", "[unit][core]") {
    EnginePair pair;
    std::mt19937_64 rng(41);
    std::uint64_t trims = 0;
    pair.hook = [&](int from, std::uint8_t plane, std::vector<std::uint8_t>& f) {
        if (from == 1 && plane == 3 && f.size() > 1000 && rng() % 6 == 0) {
            omrc::test::trim_frame(f);
            ++trims;
        }
        return Fate{};
    };
    auto [a, b] = pair.connect(read_attr());
    ReadRun r(pair, a, 4, 512 << 10, 41);
    REQUIRE(pair.run([&] { return r.done(pair); }, pair.now + 500'000'000));
    r.check(pair);
    REQUIRE(trims > 0);
    CHECK(pair.engines[0]->find_qp(a)->stats.trims_received == trims);
    CHECK(pair.engines[1]->find_qp(b)->stats.data_pkts_resent >= trims);
}

TEST_CASE("Engine::read__zero_one_and_odd_lengths", "[unit][core]") {
    EnginePair pair;
    auto [a, b] = pair.connect(read_attr());
    std::vector<std::uint8_t> src = random_bytes(20000, 5), dst(20000, 0xEE);
    pair.memory[1].add(kRkey, src.data(), src.size());
    std::vector<SendRequest> wrs{read_wr(0, dst.data(), 0, src.data()), read_wr(1, dst.data(), 1, src.data() + 7),
                                 read_wr(2, dst.data() + 16, 4096, src.data() + 100),
                                 read_wr(3, dst.data() + 5000, 4097, src.data() + 9000, 2)};
    REQUIRE(pair.engines[0]->submit(CmdPostSend{a, wrs}, pair.now).err == 0);
    REQUIRE(pair.run([&] { return pair.completions[0].size() == 4; }, pair.now + 50'000'000));
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(pair.completions[0][i].wr_id == i);
        CHECK(pair.completions[0][i].status == WcStatus::success);
        CHECK(pair.completions[0][i].byte_len == wrs[i].sges[0].len + wrs[i].sges[1].len);
    }
    CHECK(dst[0] == src[7]);
    CHECK(dst[1] == 0xEE);
    CHECK(std::equal(src.begin() + 100, src.begin() + 4196, dst.begin() + 16));
    CHECK(std::equal(src.begin() + 9000, src.begin() + 13097, dst.begin() + 5000));
    CHECK(dst[4999] == 0xEE);
    CHECK(dst[9097] == 0xEE);
    (void)b;
}

TEST_CASE("Engine::read__sees_the_writes_posted_before_it", "[unit][core]") {
    // The WRITE's packets go on a slow plane; the READ request overtakes
    // them. The responder answers only once everything before the request
    // has arrived, so the READ returns the written bytes.
    EnginePair pair;
    for (std::uint32_t p = 0; p < 8; ++p) pair.plane_delay_ns[p] = p % 2 ? 300'000 : 0;
    auto [a, b] = pair.connect(read_attr());
    std::vector<std::uint8_t> remote(256 << 10, 0), wsrc = random_bytes(256 << 10, 6), back(256 << 10, 0);
    pair.memory[1].add(kRkey, remote.data(), remote.size());
    SendRequest w;
    w.wr_id = 1;
    w.remote_addr = reinterpret_cast<std::uint64_t>(remote.data());
    w.rkey = kRkey;
    w.sge_count = 1;
    w.sges[0] = {wsrc.data(), static_cast<std::uint32_t>(wsrc.size())};
    std::vector<SendRequest> wrs{w, read_wr(2, back.data(), static_cast<std::uint32_t>(back.size()), remote.data())};
    REQUIRE(pair.engines[0]->submit(CmdPostSend{a, wrs}, pair.now).err == 0);
    REQUIRE(pair.run([&] { return pair.completions[0].size() == 2; }, pair.now + 500'000'000));
    CHECK(pair.completions[0][0].opcode == WcOpcode::rdma_write);
    CHECK(pair.completions[0][1].opcode == WcOpcode::rdma_read);
    CHECK(pair.completions[0][1].status == WcStatus::success);
    CHECK((back == wsrc));
    (void)b;
}

TEST_CASE("Engine::read__max_rd_atomic_bounds_the_reads_in_flight", "[unit][core]") {
    EnginePair pair;
    QpAttr qa_attr = read_attr(), qb_attr = read_attr();
    qa_attr.max_rd_atomic = 2;
    qb_attr.max_dest_rd_atomic = 2;
    auto [a, b] = pair.connect(qa_attr, qb_attr);
    ReadRun r(pair, a, 10, 64 << 10, 7);
    const Qp* qa = pair.engines[0]->find_qp(a);
    const Qp* qb = pair.engines[1]->find_qp(b);
    std::uint32_t most_a = 0, most_b = 0;
    REQUIRE(pair.run(
        [&] {
            most_a = std::max(most_a, qa->rd_outstanding);
            most_b = std::max(most_b, qb->rd_resp_unsent);
            return r.done(pair);
        },
        pair.now + 500'000'000));
    r.check(pair);
    CHECK(most_a == 2);
    CHECK(most_b <= 2);
    CHECK(pair.engines[1]->stats().rx_drops[static_cast<std::size_t>(DropReason::bad_read)] == 0);
}

TEST_CASE("Engine::read__beyond_the_responders_max_dest_rd_atomic_is_an_invalid_request", "[unit][core]") {
    EnginePair pair;
    QpAttr qa_attr = read_attr(), qb_attr = read_attr();
    qa_attr.max_rd_atomic = 8;
    qb_attr.max_dest_rd_atomic = 1;
    auto [a, b] = pair.connect(qa_attr, qb_attr);
    ReadRun r(pair, a, 8, 256 << 10, 8);
    REQUIRE(pair.run([&] { return r.done(pair); }, pair.now + 100'000'000));
    // READs done before the refusal succeed; the refused one carries the
    // NAK's error; the rest, before it (unconfirmed) and after, are flushed.
    std::size_t errors = 0, k = 0;
    while (k < 8 && pair.completions[0][k].status == WcStatus::success) ++k;
    for (std::size_t i = 0; i < 8; ++i) {
        CHECK(pair.completions[0][i].wr_id == i);
        if (i < k) continue;
        const WcStatus st = pair.completions[0][i].status;
        CHECK((st == WcStatus::wr_flush_err || st == WcStatus::rem_inv_req_err));
        errors += st == WcStatus::rem_inv_req_err;
    }
    CHECK(k < 8);
    CHECK(errors == 1);
    CHECK(pair.engines[1]->stats().rx_drops[static_cast<std::size_t>(DropReason::bad_read)] >= 1);
    CHECK(pair.engines[0]->find_qp(a)->state == QpState::err);
    (void)b;
}

TEST_CASE("Engine::read__access_and_bounds_errors", "[unit][core]") {
    std::vector<std::uint8_t> src = random_bytes(8192, 9), dst(8192, 0);
    SECTION("MR without REMOTE_READ: rem_access_err") {
        EnginePair pair;
        auto [a, b] = pair.connect(read_attr());
        pair.memory[1].add(kRkey, src.data(), src.size(), false);
        const SendRequest w = read_wr(1, dst.data(), 4096, src.data());
        REQUIRE(pair.engines[0]->submit(CmdPostSend{a, std::span(&w, 1)}, pair.now).err == 0);
        REQUIRE(pair.run([&] { return pair.completions[0].size() == 1; }, pair.now + 10'000'000));
        CHECK(pair.completions[0][0].status == WcStatus::rem_access_err);
        CHECK(pair.engines[1]->find_qp(b)->stats.reads_answered == 0);
    }
    SECTION("a random rkey and a range past the MR: rem_access_err, nothing read") {
        for (int variant = 0; variant < 2; ++variant) {
            EnginePair pair;
            auto [a, b] = pair.connect(read_attr());
            pair.memory[1].add(kRkey, src.data(), src.size());
            SendRequest w = read_wr(1, dst.data(), 4096, src.data() + (variant ? 4097 : 0));
            if (variant == 0) w.rkey = 0x1234567;
            REQUIRE(pair.engines[0]->submit(CmdPostSend{a, std::span(&w, 1)}, pair.now).err == 0);
            REQUIRE(pair.run([&] { return pair.completions[0].size() == 1; }, pair.now + 10'000'000));
            CHECK(pair.completions[0][0].status == WcStatus::rem_access_err);
            CHECK(std::all_of(dst.begin(), dst.end(), [](std::uint8_t x) { return x == 0; }));
            (void)b;
        }
    }
}

TEST_CASE("Engine::read__a_dark_responder_fails_the_read_by_the_retry_budget", "[unit][core]") {
    EnginePair pair;
    QpAttr attr = read_attr();
    attr.timeout_ns = 1'000'000;
    attr.retry_cnt = 3;
    auto [a, b] = pair.connect(attr);
    bool dark = false;
    // The request is acknowledged; then nothing more comes back from B.
    pair.hook = [&](int from, std::uint8_t, std::vector<std::uint8_t>& f) {
        if (from == 1 && wire::is_read_response_opcode(opcode_of(f))) dark = true;
        return Fate{from == 1 && dark && opcode_of(f) != wire::Opcode::sack, 0};
    };
    ReadRun r(pair, a, 1, 1 << 20, 10);
    const TimeNs start = pair.now;
    REQUIRE(pair.run([&] { return r.done(pair); }, pair.now + 100'000'000));
    CHECK(pair.completions[0][0].status == WcStatus::retry_exc_err);
    CHECK(pair.completions[0][0].opcode == WcOpcode::rdma_read);
    const TimeNs took = pair.now - start;
    CHECK(took >= 4'000'000);   // (retry_cnt + 1) · timeout without progress
    CHECK(took <= 12'000'000);
    (void)b;
}

TEST_CASE("Engine::read__fence_holds_a_wr_until_earlier_reads_complete", "[unit][core]") {
    EnginePair pair;
    auto [a, b] = pair.connect(read_attr());
    std::vector<std::uint8_t> remote = random_bytes(1 << 20, 11), back(1 << 20, 0), wsrc = random_bytes(4096, 12);
    std::vector<std::uint8_t> wdst(4096, 0);
    pair.memory[1].add(kRkey, remote.data(), remote.size());
    pair.memory[1].add(kRkey + 1, wdst.data(), wdst.size());
    const Qp* qa = nullptr;
    bool write_during_read = false;
    std::uint64_t writes_seen = 0;
    pair.hook = [&](int from, std::uint8_t, std::vector<std::uint8_t>& f) {
        if (from == 0 && opcode_of(f) == wire::Opcode::write_only) {
            ++writes_seen;
            if (qa->rd_outstanding > 0) write_during_read = true;
        }
        return Fate{};
    };
    qa = pair.engines[0]->find_qp(a);
    SendRequest w;
    w.wr_id = 2;
    w.fence = true;
    w.remote_addr = reinterpret_cast<std::uint64_t>(wdst.data());
    w.rkey = kRkey + 1;
    w.sge_count = 1;
    w.sges[0] = {wsrc.data(), 4096};
    std::vector<SendRequest> wrs{read_wr(1, back.data(), 1 << 20, remote.data()), w};
    REQUIRE(pair.engines[0]->submit(CmdPostSend{a, wrs}, pair.now).err == 0);
    REQUIRE(pair.run([&] { return pair.completions[0].size() == 2; }, pair.now + 100'000'000));
    CHECK(writes_seen >= 1);
    CHECK_FALSE(write_during_read);
    CHECK((back == remote));
    CHECK((wdst == wsrc));
    (void)b;
}

TEST_CASE("Engine::read__both_directions_at_once_with_sends_of_the_responder", "[unit][core]") {
    // Each side reads the other's region while writing to it: responses
    // share each engine's sending half with its own WRs.
    EnginePair pair;
    auto [a, b] = pair.connect(read_attr());
    std::vector<std::uint8_t> ra = random_bytes(1 << 20, 13), rb = random_bytes(1 << 20, 14);
    std::vector<std::uint8_t> got_a(1 << 20, 0), got_b(1 << 20, 0), wa(1 << 20, 0), wb(1 << 20, 0);
    pair.memory[0].add(kRkey, ra.data(), ra.size());
    pair.memory[1].add(kRkey, rb.data(), rb.size());
    pair.memory[0].add(kRkey + 2, wa.data(), wa.size());
    pair.memory[1].add(kRkey + 2, wb.data(), wb.size());
    for (int side = 0; side < 2; ++side) {
        std::vector<std::uint8_t>& mine = side == 0 ? ra : rb;
        std::vector<std::uint8_t>& peer_src = side == 0 ? rb : ra;
        std::vector<std::uint8_t>& got = side == 0 ? got_a : got_b;
        std::vector<std::uint8_t>& peer_w = side == 0 ? wb : wa;
        std::vector<SendRequest> wrs;
        for (std::uint32_t k = 0; k < 4; ++k) {
            wrs.push_back(read_wr(10 * k, got.data() + k * (256 << 10), 256 << 10, peer_src.data() + k * (256 << 10)));
            SendRequest w;
            w.wr_id = 10 * k + 1;
            w.remote_addr = reinterpret_cast<std::uint64_t>(peer_w.data()) + k * (256 << 10);
            w.rkey = kRkey + 2;
            w.sge_count = 1;
            w.sges[0] = {mine.data() + k * (256 << 10), 256 << 10};
            wrs.push_back(w);
        }
        REQUIRE(pair.engines[side]->submit(CmdPostSend{side == 0 ? a : b, wrs}, pair.now).err == 0);
    }
    REQUIRE(pair.run([&] { return pair.completions[0].size() == 8 && pair.completions[1].size() == 8; },
                     pair.now + 500'000'000));
    for (int side = 0; side < 2; ++side)
        for (const Completion& c : pair.completions[side]) CHECK(c.status == WcStatus::success);
    CHECK((got_a == rb));
    CHECK((got_b == ra));
    CHECK((wb == ra));
    CHECK((wa == rb));
}

TEST_CASE("Engine::read__a_responder_in_rtr_answers_from_the_psn_the_request_names", "[unit][core]") {
    // perftest's ib_read_bw server never leaves RTR. Its answers start at the
    // PSN the requester's receiver expects (101: B's first PSN as A knows it).
    EnginePair pair;
    std::mt19937_64 rng(15);
    pair.hook = [&](int, std::uint8_t, std::vector<std::uint8_t>&) { return Fate{rng() % 20 == 0, 0}; };
    auto [a, b] = pair.connect(read_attr(), read_attr(), {}, false);
    REQUIRE(pair.engines[1]->qp_info(b).state == QpState::rtr);
    ReadRun r(pair, a, 8, 300'000, 15);
    const Qp* qb = pair.engines[1]->find_qp(b);
    REQUIRE(pair.run([&] { return r.done(pair) && qb->rd_resp_queued == 0; }, pair.now + 1'000'000'000));
    r.check(pair);
    CHECK(qb->state == QpState::rtr);
    CHECK(qb->rtr_responder);
    CHECK(qb->stats.reads_answered == 8);
    // A send WR of B's is still refused until RTS.
    std::vector<std::uint8_t> buf(64);
    SendRequest w = read_wr(1, buf.data(), 64, buf.data());
    CHECK(pair.engines[1]->submit(CmdPostSend{b, std::span(&w, 1)}, pair.now).err == EINVAL);
}
