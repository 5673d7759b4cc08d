// SPDX-License-Identifier: BSD-3-Clause
// The sender half of the engine (lib/core/engine_tx.cpp): segmentation,
// retransmission within the peer's window, RTT sampling. Cases in the order
// of the functions they exercise, named Function__case.
#include <catch2/catch.hpp>

#include <random>

#include "core/psn.hpp"
#include "support/crafted_peer.hpp"
#include "support/engine_pair.hpp"

using namespace omrc;
using namespace omrc::core;
using omrc::test::CraftedPeer;
using omrc::test::EnginePair;
using wire::Opcode;

namespace {

/// `bytes` of random data from A to B as WRITEs of `msg` bytes; returns the destination.
std::vector<std::uint8_t> write_all(EnginePair& pair, std::uint32_t qpn, const std::vector<std::uint8_t>& src,
                                    std::size_t msg) {
    std::vector<std::uint8_t> dst(src.size(), 0);
    pair.memory[1].add(0x77, dst.data(), dst.size());
    const std::vector<SendRequest> wrs = omrc::test::make_write_wrs(src.data(), dst.data(), src.size(), 0x77, msg);
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

// ---- Crafted SACKs, NACKs and NAKs against a sender ----

namespace {

constexpr std::uint32_t kTxMtu = 256;

/// Engine 1 sends to engine 0's QP; the peer's acknowledgements are crafted.
struct Tx {
    EnginePair pair;
    std::uint32_t qa = 0, qb = 0;
    std::vector<std::uint8_t> src = random_bytes(64u << 10, 99);
    std::unique_ptr<CraftedPeer> peer;

    explicit Tx(QpAttr attr = base_attr(), EngineConfig cfg = {}) : pair(cfg) {
        std::tie(qa, qb) = pair.connect(attr);
        peer = std::make_unique<CraftedPeer>(pair, qa, qb);
    }
    static QpAttr base_attr() {
        QpAttr a;
        a.mtu_bytes = kTxMtu;
        a.cc.algorithm = CcAlgorithm::fixed;
        a.cc.fixed_window_bytes = 1u << 20;
        a.evs = 16;
        return a;
    }
    /// Posts one WRITE of `npkts` packets (wr_id = `id`) and returns what the engine sends.
    std::vector<test::SentFrame> post(std::uint32_t npkts, std::uint64_t id = 1, std::size_t src_off = 0) {
        SendRequest r;
        r.wr_id = id;
        r.remote_addr = 0x10000;
        r.rkey = 9;
        r.sge_count = 1;
        r.sges[0] = {src.data() + src_off, npkts * kTxMtu};
        REQUIRE(pair.engines[1]->submit(CmdPostSend{qb, std::span(&r, 1)}, pair.now).err == 0);
        return peer->sent();
    }
    [[nodiscard]] std::uint32_t first_psn() const { return peer->qp().attr.sq_psn; }
    std::uint64_t drops(DropReason r) const { return pair.engines[1]->stats().rx_drops[static_cast<std::size_t>(r)]; }
};

}  // namespace

TEST_CASE("Engine::build_data_frame__ack_req_only_when_the_sender_cannot_go_on", "[unit][core]") {
    Tx t;
    const auto out = t.post(6);
    REQUIRE(out.size() == 6);
    for (std::size_t k = 0; k < 6; ++k) {
        CHECK(out[k].f.bth.psn == psn_add(t.first_psn(), static_cast<std::int32_t>(k)));
        CHECK(out[k].f.bth.ack_req == (k == 5));  // the queue is empty after the last packet
        CHECK_FALSE(out[k].f.bth.rtx);
        CHECK(out[k].f.payload.size() == kTxMtu);
        CHECK(std::equal(out[k].f.payload.begin(), out[k].f.payload.end(), t.src.begin() + k * kTxMtu));
    }
    CHECK(out[0].f.bth.opcode == Opcode::write_first);
    CHECK(out[5].f.bth.opcode == Opcode::write_last);
}

TEST_CASE("Engine::build_data_frame__ack_req_when_the_window_is_full", "[unit][core]") {
    QpAttr a = Tx::base_attr();
    a.cc.fixed_window_bytes = 4 * kTxMtu;
    Tx t(a);
    const auto out = t.post(10);
    REQUIRE(out.size() == 4);  // the window holds four
    CHECK_FALSE(out[2].f.bth.ack_req);
    CHECK(out[3].f.bth.ack_req);
}

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

TEST_CASE("Engine::infer_losses_on_path__a_later_packet_on_the_same_ev_proves_an_earlier_loss", "[unit][core]") {
    Tx t;
    const auto out = t.post(40);
    REQUIRE(out.size() == 40);
    // Two packets on one EV: the first is lost, the later one arrives.
    std::size_t w = 0, x = 0;
    for (std::size_t i = 0; i < out.size() && x == 0; ++i)
        for (std::size_t j = i + 1; j < out.size(); ++j)
            if (out[j].f.ev == out[i].f.ev) {
                w = i;
                x = j;
                break;
            }
    REQUIRE(x != 0);
    // cack just before w; the bitmap says everything after w up to 40 arrived.
    const std::uint32_t cack = psn_add(out[w].f.bth.psn, -1);
    std::uint64_t bitmap = 0;
    for (std::size_t k = w + 1; k < out.size() && k - w < 64; ++k) bitmap |= 1ull << (k - w);  // bit 0 = w
    t.peer->deliver(CraftedPeer::build(t.peer->sack_spec(cack, 1, bitmap, out[x].f.bth.psn, out[x].f.ev)));
    CHECK(t.peer->qp().stats.losses_path_order == 1);
    const auto again = t.peer->sent();
    REQUIRE(again.size() == 1);
    CHECK(again[0].f.bth.psn == out[w].f.bth.psn);
    CHECK(again[0].f.bth.rtx);
}

TEST_CASE("Engine::sender_timers__an_ev_timeout_resends_what_it_carried", "[unit][core]") {
    EngineConfig cfg;
    cfg.ev_timeout_ns = 100'000;
    Tx t(Tx::base_attr(), cfg);
    const auto out = t.post(1);
    REQUIRE(out.size() == 1);
    const core::TimeNs sent_at = t.pair.now;
    CHECK(t.pair.engines[1]->next_wakeup() <= sent_at + 100'000);
    t.peer->at(sent_at + 99'999);
    CHECK(t.peer->sent().empty());
    t.peer->at(sent_at + 100'000);
    const auto again = t.peer->sent();
    const auto data = CraftedPeer::only(again, Opcode::write_only);
    REQUIRE(data.size() == 1);
    CHECK(data[0]->f.bth.psn == out[0].f.bth.psn);
    CHECK(data[0]->f.bth.rtx);
    CHECK(t.peer->qp().stats.ev_timeouts == 1);
    CHECK(t.peer->qp().stats.losses_timeout == 1);
    // The only packet of the EV was lost: its loss record stands out from
    // the QP's, so the EV is retired, the resend takes another, and the EV
    // is probed one probe interval later.
    if (t.peer->qp().stats.ev_retirements == 1) {
        CHECK(data[0]->f.ev != out[0].f.ev);
        CHECK(CraftedPeer::only(again, Opcode::probe).empty());
        t.peer->at(sent_at + 100'000 + cfg.probe_interval_ns);
        const auto probes = CraftedPeer::only(t.peer->sent(), Opcode::probe);
        REQUIRE(probes.size() == 1);
        CHECK(probes[0]->f.ev == out[0].f.ev);
        // Both changes are path events for the runtime to log.
        std::vector<PathEvent> events(8);
        events.resize(t.peer->engine().poll_path_events(events));
        REQUIRE(events.size() == 2);
        CHECK(events[0].kind == PathEventKind::retired);
        CHECK(events[0].cause == RetireCause::timeout);
        CHECK(events[0].ev == out[0].f.ev);
        CHECK(events[0].qpn == t.qb);
        CHECK(events[0].at_ns == sent_at + 100'000);
        CHECK(events[1].kind == PathEventKind::probe_sent);
        CHECK(events[1].ev == out[0].f.ev);
        CHECK(t.peer->engine().poll_path_events(events) == 0);
    }
}

TEST_CASE("Engine::sender_timers__no_progress_for_the_retry_budget_is_retry_exc_err", "[unit][core]") {
    QpAttr a = Tx::base_attr();
    a.timeout_ns = 1'000'000;
    a.retry_cnt = 1;  // budget 2 ms
    Tx t(a);
    REQUIRE(t.post(2, 5).size() == 2);
    REQUIRE(t.post(1, 6).size() == 1);
    const core::TimeNs start = t.pair.now;
    for (core::TimeNs now = start; now < start + 2'100'000; now += 50'000) {
        t.peer->at(now);
        (void)t.peer->sent();  // resends go nowhere
    }
    const auto wc = t.peer->completions();
    REQUIRE(wc.size() == 2);
    CHECK(wc[0].wr_id == 5);
    CHECK(wc[0].status == WcStatus::retry_exc_err);
    CHECK(wc[1].wr_id == 6);
    CHECK(wc[1].status == WcStatus::wr_flush_err);
    CHECK(t.peer->qp().state == QpState::err);
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
