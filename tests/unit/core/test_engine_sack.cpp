// SPDX-License-Identifier: BSD-3-Clause
// What the sender makes of its peer's acknowledgements (lib/core/engine_sack.cpp):
// SACKs, NACKs, AETH ACKs and NAKs, RTT samples. Cases in the order of the
// functions they exercise, named Function__case.
#include <catch2/catch.hpp>

#include "core/psn.hpp"
#include "support/crafted_sender.hpp"

using namespace omrc;
using namespace omrc::core;
using namespace omrc::test;
using wire::Opcode;

TEST_CASE("Engine::on_sack__cumulative_ack_completes_the_write", "[unit][core]") {
    Tx t;
    const auto out = t.post(4, 77);
    REQUIRE(out.size() == 4);
    t.peer->deliver(CraftedPeer::build(t.peer->sack_spec(psn_add(t.first_psn(), 2))));
    CHECK(t.peer->completions().empty());  // three of four
    CHECK(t.peer->qp().snd_una == psn_add(t.first_psn(), 3));
    t.peer->deliver(CraftedPeer::build(t.peer->sack_spec(psn_add(t.first_psn(), 3))));
    const auto wc = t.peer->completions();
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == 77);
    CHECK(wc[0].status == WcStatus::success);
    CHECK(t.peer->qp().inflight_bytes == 0);
}

TEST_CASE("Engine::on_sack__bitmap_acknowledges_out_of_order_packets", "[unit][core]") {
    Tx t;
    REQUIRE(t.post(4).size() == 4);
    // cack before the first packet; bitmap from cack + 1 (bit 0): packets 1..3 received.
    const std::uint32_t cack = psn_add(t.first_psn(), -1);
    t.peer->deliver(CraftedPeer::build(t.peer->sack_spec(cack, 1, 0xEull)));
    CHECK(t.peer->qp().stats.pkts_sacked == 3);
    CHECK(t.peer->qp().inflight_bytes == kTxMtu);
    CHECK(t.peer->qp().snd_una == t.first_psn());
    CHECK(t.peer->completions().empty());
}

TEST_CASE("Engine::on_sack__acknowledging_unsent_psns_is_forged", "[unit][core]") {
    Tx t;
    REQUIRE(t.post(4).size() == 4);
    const std::uint32_t last = psn_add(t.first_psn(), 3);
    t.peer->deliver(CraftedPeer::build(t.peer->sack_spec(psn_add(last, 1))));  // cack beyond snd_nxt − 1
    CHECK(t.drops(DropReason::forged_ack) == 1);
    // A bitmap bit beyond the last PSN sent.
    t.peer->deliver(CraftedPeer::build(t.peer->sack_spec(psn_add(t.first_psn(), -1), 1, 1ull << 4)));
    CHECK(t.drops(DropReason::forged_ack) == 2);
    CHECK(t.peer->qp().stats.pkts_sacked == 0);
    CHECK(t.peer->completions().empty());
    CHECK(t.peer->qp().state == QpState::rts);
}

TEST_CASE("Engine::on_sack__wrong_connection_id_is_dropped", "[unit][core]") {
    Tx t;
    REQUIRE(t.post(2).size() == 2);
    wire::FrameSpec s = t.peer->sack_spec(psn_add(t.first_psn(), 1));
    s.seth.dst_conn_id ^= 0x0100;
    t.peer->deliver(CraftedPeer::build(s));
    CHECK(t.drops(DropReason::bad_conn_id) == 1);
    CHECK(t.peer->completions().empty());
}

TEST_CASE("Engine::on_sack__ecn_echo_skips_the_ev_of_the_trigger", "[unit][core]") {
    Tx t;
    const auto out = t.post(4);
    REQUIRE(out.size() == 4);
    const std::uint32_t trig = out[2].f.bth.psn, ev = out[2].f.ev;
    wire::FrameSpec s = t.peer->sack_spec(out[3].f.bth.psn, 1, 0, trig, ev);
    s.seth.skip = wire::SackSkip::skip_once;  // M = SKIP_ONCE: CE seen
    t.peer->deliver(CraftedPeer::build(s));
    CHECK(t.peer->qp().stats.ecn_echoes == 1);
    const PathSet& paths = t.peer->qp().paths;
    std::uint64_t skips = 0;
    for (std::size_t i = 0; i < paths.size(); ++i)
        if (paths.slot(i).ev == ev) skips += paths.slot(i).counters.skips;
    CHECK(skips == 1);
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
    CHECK(sender.rtt.all().min_ns >= 2 * one_way);
    CHECK(sender.rtt.all().min_ns <= 2 * one_way + 100'000);
    CHECK(sender.rtt.all().max_ns <= 2 * one_way + 100'000);
    CHECK(sender.stats.data_pkts_resent == 0);
    CHECK(sender.stats.ev_timeouts == 0);
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

TEST_CASE("Engine::on_nack__trim_resends_that_psn_first_flagged_rtx", "[unit][core]") {
    Tx t;
    const auto out = t.post(4);
    REQUIRE(out.size() == 4);
    const std::uint32_t psn = out[1].f.bth.psn;
    t.peer->deliver(CraftedPeer::build(t.peer->nack_spec(psn, wire::NackReason::trimmed, out[1].f.ev,
                                                           psn_add(t.first_psn(), -1))));
    CHECK(t.peer->qp().stats.trims_nacked == 1);
    const auto again = t.peer->sent();
    REQUIRE(again.size() == 1);
    CHECK(again[0].f.bth.psn == psn);
    CHECK(again[0].f.bth.rtx);
    CHECK(again[0].f.bth.ack_req);  // a retransmission is acknowledged at once
    CHECK(std::equal(again[0].f.payload.begin(), again[0].f.payload.end(), t.src.begin() + kTxMtu));
    CHECK(t.peer->qp().stats.data_pkts_resent == 1);
    CHECK(t.peer->qp().stats.ev_retirements == 0);  // congestion, never a retirement
}

TEST_CASE("Engine::on_nack__a_psn_outside_what_is_in_flight_is_forged", "[unit][core]") {
    Tx t;
    REQUIRE(t.post(2).size() == 2);
    t.peer->deliver(CraftedPeer::build(t.peer->nack_spec(psn_add(t.first_psn(), 5), wire::NackReason::trimmed, 0,
                                                           psn_add(t.first_psn(), -1))));
    CHECK(t.drops(DropReason::forged_ack) == 1);
    CHECK(t.peer->sent().empty());
}

TEST_CASE("Engine::on_aeth__nak_remote_access_errors_the_message_of_its_psn", "[unit][core]") {
    Tx t;
    REQUIRE(t.post(2, 10).size() == 2);
    const auto second = t.post(2, 11);
    REQUIRE(second.size() == 2);
    // IB: the NAK's BTH.PSN is the refused packet; MSN counts completed messages.
    wire::FrameSpec s = t.peer->spec(Opcode::ack, second[1].f.bth.psn);
    s.aeth = {static_cast<std::uint8_t>(wire::AethSyndrome::nak_remote_access), 0};
    t.peer->deliver(CraftedPeer::build(s));
    const auto wc = t.peer->completions();
    REQUIRE(wc.size() == 2);
    CHECK(wc[0].wr_id == 10);
    CHECK(wc[0].status == WcStatus::wr_flush_err);  // earlier, not confirmed any more
    CHECK(wc[1].wr_id == 11);
    CHECK(wc[1].status == WcStatus::rem_access_err);
    CHECK(t.peer->qp().state == QpState::err);
}

TEST_CASE("Engine::on_aeth__a_nak_for_a_psn_not_in_flight_is_forged", "[unit][core]") {
    Tx t;
    REQUIRE(t.post(1, 10).size() == 1);
    wire::FrameSpec s = t.peer->spec(Opcode::ack, psn_add(t.first_psn(), 1));
    s.aeth = {static_cast<std::uint8_t>(wire::AethSyndrome::nak_remote_access), 0};
    t.peer->deliver(CraftedPeer::build(s));
    CHECK(t.drops(DropReason::forged_ack) == 1);
    CHECK(t.peer->completions().empty());
    CHECK(t.peer->qp().state == QpState::rts);
}

TEST_CASE("Engine::on_aeth__positive_transport_ack_acknowledges_up_to_its_psn", "[unit][core]") {
    Tx t;
    const auto out = t.post(4, 21);
    REQUIRE(out.size() == 4);
    wire::FrameSpec s = t.peer->spec(Opcode::ack, out[3].f.bth.psn);
    s.aeth = {static_cast<std::uint8_t>(wire::AethSyndrome::ack), 1};
    t.peer->deliver(CraftedPeer::build(s));
    const auto wc = t.peer->completions();
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == 21);
    CHECK(wc[0].status == WcStatus::success);
    CHECK(t.peer->qp().stats.transport_acks_received == 1);
    // One beyond what was sent is forged.
    s.bth.psn = psn_add(out[3].f.bth.psn, 1);
    t.peer->deliver(CraftedPeer::build(s));
    CHECK(t.drops(DropReason::forged_ack) == 1);
}
