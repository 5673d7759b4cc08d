// SPDX-License-Identifier: BSD-3-Clause
// The receiver half of the engine (lib/core/engine_rx.cpp and the receive
// dispatch of engine.cpp), driven with crafted frames from a borrowed peer
// identity (tests/support/crafted_peer.hpp). Cases follow the functions:
// rx_one, flush_acks, note_ack, on_data, on_trimmed, on_probe,
// on_endpoint, send_sack, deliver_imms. Names are Function__case.
#include <catch2/catch.hpp>

#include <bit>
#include <numeric>
#include <set>

#include "core/psn.hpp"
#include "routing/fabric.hpp"
#include "support/crafted_peer.hpp"

using namespace omrc;
using namespace omrc::core;
using omrc::test::CraftedPeer;
using omrc::test::EnginePair;
using wire::Opcode;

namespace {

constexpr std::uint32_t kRkey = 0x5151;
constexpr std::uint32_t kMtu = 256;

/// Engine 1 receives from engine 0's QP; a 64 KiB destination region.
struct Rx {
    EnginePair pair;
    std::uint32_t qa = 0, qb = 0;
    std::vector<std::uint8_t> dst = std::vector<std::uint8_t>(64u << 10, 0);
    std::unique_ptr<CraftedPeer> peer;
    std::uint32_t first_psn = 0;  ///< the first PSN the engine expects (its rq_psn)

    explicit Rx(EngineConfig cfg = {}, QpAttr attr = base_attr()) : pair(cfg) {
        std::tie(qa, qb) = pair.connect(attr);
        peer = std::make_unique<CraftedPeer>(pair, qa, qb);
        pair.memory[1].add(kRkey, dst.data(), dst.size());
        first_psn = psn_add(peer->qp().rcv_cack, 1);
    }
    static QpAttr base_attr() {
        QpAttr a;
        a.mtu_bytes = kMtu;
        a.cc.algorithm = CcAlgorithm::fixed;
        a.evs = 16;
        return a;
    }
    [[nodiscard]] std::uint64_t va(std::size_t off = 0) const { return reinterpret_cast<std::uint64_t>(dst.data()) + off; }

    /// Packet k (0-based) of a message of `npkts` MTU-sized packets at offset 0.
    std::vector<std::uint8_t> packet(std::uint32_t k, std::uint32_t npkts, bool ack_req = false, bool imm = false,
                                     std::uint8_t fill = 0, std::uint32_t psn_base = UINT32_MAX) {
        const Opcode op = npkts == 1 ? (imm ? Opcode::write_only_imm : Opcode::write_only)
                          : k == 0   ? Opcode::write_first
                          : k + 1 == npkts ? (imm ? Opcode::write_last_imm : Opcode::write_last)
                                           : Opcode::write_middle;
        const std::uint32_t base = psn_base == UINT32_MAX ? first_psn : psn_base;
        wire::FrameSpec s = peer->data_spec(op, psn_add(base, static_cast<std::int32_t>(k)), va(k * kMtu), kRkey,
                                            npkts * kMtu);
        s.bth.ack_req = ack_req;
        if (imm) s.imm = {0xFEED0000u + k};
        std::vector<std::uint8_t> payload(kMtu, fill != 0 ? fill : static_cast<std::uint8_t>(k + 1));
        return CraftedPeer::build(s, payload);
    }
    std::vector<std::vector<std::uint8_t>> packets(std::uint32_t from, std::uint32_t to, std::uint32_t npkts) {
        std::vector<std::vector<std::uint8_t>> v;
        for (std::uint32_t k = from; k < to; ++k) v.push_back(packet(k, npkts));
        return v;
    }
    std::uint64_t drops(DropReason r) const { return pair.engines[1]->stats().rx_drops[static_cast<std::size_t>(r)]; }
};

}  // namespace

// ---- rx_one: dispatch and validation ----

TEST_CASE("Engine::rx_one__frame_for_no_qp_is_dropped_and_counted", "[unit][core]") {
    Rx t;
    wire::FrameSpec s = t.peer->data_spec(Opcode::write_only, t.first_psn, t.va(), kRkey, 64);
    s.bth.dest_qp = t.qb ^ 0x1000;  // same table index, another generation
    t.peer->deliver(CraftedPeer::build(s, std::vector<std::uint8_t>(64, 1)));
    CHECK(t.drops(DropReason::no_qp) == 1);
    CHECK(t.peer->sent().empty());
    CHECK(t.pair.memory[1].writes == 0);
}

TEST_CASE("Engine::rx_one__wrong_source_address_is_dropped", "[unit][core]") {
    Rx t;
    wire::FrameSpec s = t.peer->data_spec(Opcode::write_only, t.first_psn, t.va(), kRkey, 64);
    s.ip.src[15] ^= 0x40;
    t.peer->deliver(CraftedPeer::build(s, std::vector<std::uint8_t>(64, 1)));
    CHECK(t.drops(DropReason::wrong_source) == 1);
    CHECK(t.pair.memory[1].writes == 0);
    CHECK(t.peer->qp().rcv_cack == psn_add(t.first_psn, -1));
}

TEST_CASE("Engine::rx_one__bad_icrc_is_a_wire_error", "[unit][core]") {
    Rx t;
    auto f = t.packet(0, 1, true);
    f[f.size() - 10] ^= 0x01;  // a payload bit
    t.peer->deliver(f);
    CHECK(t.pair.engines[1]->stats().rx_wire_errors[static_cast<std::size_t>(wire::WireError::bad_icrc)] == 1);
    CHECK(t.pair.memory[1].writes == 0);
    CHECK(t.peer->sent().empty());
}

// ---- flush_acks / note_ack: the ACK policy ----

TEST_CASE("Engine::flush_acks__one_sack_per_qp_per_burst", "[unit][core]") {
    Rx t;
    t.peer->deliver(t.packets(0, 40, 40));  // 40 in-order packets, no AckReq: above the coalescing count
    const auto out = t.peer->sent();
    const auto sacks = CraftedPeer::only(out, Opcode::sack);
    REQUIRE(sacks.size() == 1);
    CHECK(sacks[0]->f.seth.cack_psn == psn_add(t.first_psn, 39));
    CHECK(sacks[0]->f.seth.bitmap == 0);
    CHECK(t.peer->qp().stats.sacks_sent == 1);
}

TEST_CASE("Engine::note_ack__fewer_than_the_coalescing_count_wait_for_the_delay_bound", "[unit][core]") {
    EngineConfig cfg;
    cfg.ack_every_pkts = 16;
    cfg.ack_delay_ns = 2'000;
    Rx t(cfg);
    t.peer->deliver(t.packets(0, 15, 40));
    CHECK(t.peer->sent().empty());
    CHECK(t.pair.engines[1]->next_wakeup() == t.pair.now + 2'000);
    t.peer->at(t.pair.now + 1'999);
    CHECK(t.peer->sent().empty());
    t.peer->at(t.pair.now + 1);
    const auto sacks = CraftedPeer::only(t.peer->sent(), Opcode::sack);
    REQUIRE(sacks.size() == 1);
    CHECK(sacks[0]->f.seth.cack_psn == psn_add(t.first_psn, 14));
}

TEST_CASE("Engine::note_ack__the_coalescing_count_sends_at_the_end_of_the_burst", "[unit][core]") {
    EngineConfig cfg;
    cfg.ack_every_pkts = 16;
    Rx t(cfg);
    t.peer->deliver(t.packets(0, 15, 40));
    CHECK(t.peer->sent().empty());
    t.peer->deliver(t.packet(15, 40));  // the 16th
    const auto sacks = CraftedPeer::only(t.peer->sent(), Opcode::sack);
    REQUIRE(sacks.size() == 1);
    CHECK(sacks[0]->f.seth.cack_psn == psn_add(t.first_psn, 15));
}

TEST_CASE("Engine::note_ack__ack_req_is_honoured_by_the_burst_sack", "[unit][core]") {
    Rx t;
    auto burst = t.packets(0, 3, 8);
    burst.push_back(t.packet(3, 8, /*ack_req=*/true));
    burst.push_back(t.packet(4, 8));
    t.peer->deliver(burst);
    const auto sacks = CraftedPeer::only(t.peer->sent(), Opcode::sack);
    REQUIRE(sacks.size() == 1);  // one SACK for the burst, not one per AckReq
    CHECK(sacks[0]->f.seth.cack_psn == psn_add(t.first_psn, 4));
}

TEST_CASE("Engine::note_ack__the_trigger_echo_names_the_packet_that_saw_ce", "[unit][core]") {
    Rx t;
    std::vector<std::vector<std::uint8_t>> burst;
    for (std::uint32_t k = 0; k < 4; ++k) {
        wire::FrameSpec s = t.peer->data_spec(Opcode::write_middle, psn_add(t.first_psn, static_cast<std::int32_t>(k)),
                                              t.va(k * kMtu), kRkey, 8 * kMtu, 0, 0, 0x10000100 + k);
        if (k == 1) s.ip.set_ecn(3);  // CE on the second packet only
        burst.push_back(CraftedPeer::build(s, std::vector<std::uint8_t>(kMtu, 7)));
    }
    t.peer->deliver(burst);
    const auto sacks = CraftedPeer::only(t.peer->sent(), Opcode::sack);
    REQUIRE(sacks.size() == 1);  // CE asks for an immediate SACK
    CHECK(sacks[0]->f.seth.ev == 0x10000101);
    CHECK(sacks[0]->f.seth.ack_psn_offset == psn_diff(psn_add(t.first_psn, 1), sacks[0]->f.seth.cack_psn));
    CHECK(sacks[0]->f.seth.skip == wire::SackSkip::skip_once);  // M = SKIP_ONCE: CE seen
    CHECK(t.peer->qp().stats.ecn_received == 1);
}

// ---- on_data ----

TEST_CASE("Engine::on_data__out_of_order_packets_are_placed_and_reported_in_the_bitmap", "[unit][core]") {
    Rx t;
    // Packets 1..4 of 6 arrive; 0 and 5 do not.
    std::vector<std::vector<std::uint8_t>> burst;
    for (std::uint32_t k = 1; k <= 4; ++k) burst.push_back(t.packet(k, 6, k == 4));
    t.peer->deliver(burst);
    for (std::uint32_t k = 1; k <= 4; ++k) CHECK(t.dst[k * kMtu] == k + 1);
    CHECK(t.dst[0] == 0);
    const auto sacks = CraftedPeer::only(t.peer->sent(), Opcode::sack);
    REQUIRE(sacks.size() == 1);
    const wire::SethHdr& s = sacks[0]->f.seth;
    CHECK(s.cack_psn == psn_add(t.first_psn, -1));
    CHECK(s.sack_offset == 1);
    // Bitmap: bit 0 = cack + 1 (packet 0, missing), then packets 1..4 at bits 1..4.
    CHECK(s.bitmap == 0x1Eull);
    CHECK(sacks[0]->f.bth.psn == s.cack_psn);  // a SACK's BTH.PSN is its cumulative PSN
    CHECK(sacks[0]->f.cc.ooo_count == 4);      // held beyond cack
    // The missing first packet completes the run up to 4.
    t.peer->deliver(t.packet(0, 6, true));
    const auto again = CraftedPeer::only(t.peer->sent(), Opcode::sack);
    REQUIRE(again.size() == 1);
    CHECK(again[0]->f.seth.cack_psn == psn_add(t.first_psn, 4));
    CHECK(again[0]->f.seth.bitmap == 0);
}

TEST_CASE("Engine::on_data__duplicate_is_dropped_before_placement_and_acknowledged", "[unit][core]") {
    Rx t;
    t.peer->deliver(t.packet(0, 4, true));
    (void)t.peer->sent();
    const auto writes = t.pair.memory[1].writes;
    t.peer->deliver(t.packet(0, 4, false, false, 0xEE));  // same PSN, other bytes
    CHECK(t.pair.memory[1].writes == writes);
    CHECK(t.dst[0] == 1);
    CHECK(t.drops(DropReason::duplicate) == 1);
    CHECK(t.peer->qp().stats.duplicates == 1);
    CHECK(CraftedPeer::only(t.peer->sent(), Opcode::sack).size() == 1);  // repairs a lost SACK
}

TEST_CASE("Engine::on_data__beyond_the_receive_window_is_nacked_psn_oor", "[unit][core]") {
    Rx t;  // mpr 8: 1024 packets
    const std::uint32_t window = t.peer->qp().rcv_window;
    REQUIRE(window == 1024);
    t.peer->deliver(t.packet(window + 1, window + 8));  // cack + window + 2: one beyond
    CHECK(t.drops(DropReason::out_of_window) == 1);
    CHECK(t.pair.memory[1].writes == 0);
    const auto nacks = CraftedPeer::only(t.peer->sent(), Opcode::nack);
    REQUIRE(nacks.size() == 1);
    CHECK(nacks[0]->f.neth.reason == static_cast<std::uint8_t>(wire::NackReason::psn_oor_window));
    CHECK(nacks[0]->f.neth.nack_psn == psn_add(t.first_psn, static_cast<std::int32_t>(window + 1)));
    CHECK(nacks[0]->f.neth.cc_type == wire::mrc::kNethCcType);
    // The last PSN inside the window is taken.
    wire::FrameSpec s = t.peer->data_spec(Opcode::write_middle, psn_add(t.first_psn, static_cast<std::int32_t>(window - 1)),
                                          t.va(), kRkey, 2 * window * kMtu);
    t.peer->deliver(CraftedPeer::build(s, std::vector<std::uint8_t>(kMtu, 5)));
    CHECK(t.pair.memory[1].writes == 1);
    CHECK(t.dst[0] == 5);
}

TEST_CASE("Engine::on_data__payload_longer_than_the_mtu_is_dropped", "[unit][core]") {
    Rx t;
    wire::FrameSpec s = t.peer->data_spec(Opcode::write_only, t.first_psn, t.va(), kRkey, 2 * kMtu);
    t.peer->deliver(CraftedPeer::build(s, std::vector<std::uint8_t>(2 * kMtu, 3)));
    CHECK(t.drops(DropReason::bad_length) == 1);
    CHECK(t.pair.memory[1].writes == 0);
}

TEST_CASE("Engine::on_data__first_packet_checks_the_whole_message_range", "[unit][core]") {
    Rx t;
    // A message that would run past the end of the region: refused at its
    // first packet (REM_ACCESS NAK), nothing written.
    wire::FrameSpec s = t.peer->data_spec(Opcode::write_first, t.first_psn, t.va(t.dst.size() - kMtu), kRkey, 4 * kMtu);
    t.peer->deliver(CraftedPeer::build(s, std::vector<std::uint8_t>(kMtu, 3)));
    CHECK(t.pair.memory[1].writes == 0);
    CHECK(t.drops(DropReason::remote_access) == 1);
    const auto naks = CraftedPeer::only(t.peer->sent(), Opcode::ack);
    REQUIRE(naks.size() == 1);
    CHECK(naks[0]->f.aeth.syndrome == static_cast<std::uint8_t>(wire::AethSyndrome::nak_remote_access));
}

// ---- on_trimmed ----

TEST_CASE("Engine::on_trimmed__nack_names_the_psn_the_ev_and_the_reason", "[unit][core]") {
    Rx t;
    for (const auto& [dscp, reason] : {std::pair{wire::kDscpTrimmed, wire::NackReason::trimmed},
                                      std::pair{wire::kDscpTrimmedLastHop, wire::NackReason::trimmed_lasthop}}) {
        const std::uint32_t k = dscp == wire::kDscpTrimmed ? 2 : 3;
        wire::FrameSpec s = t.peer->data_spec(Opcode::write_middle, psn_add(t.first_psn, static_cast<std::int32_t>(k)),
                                              t.va(k * kMtu), kRkey, 8 * kMtu, 0, 0, 0x10000777, 0x0123);
        s.ip.set_dscp(dscp);
        auto f = CraftedPeer::build(s, std::vector<std::uint8_t>(kMtu, 9));
        f.resize(wire::header_size(s));  // the payload is cut off by the switch
        t.peer->deliver(f);
        const auto nacks = CraftedPeer::only(t.peer->sent(), Opcode::nack);
        REQUIRE(nacks.size() == 1);
        CHECK(nacks[0]->f.neth.reason == static_cast<std::uint8_t>(reason));
        CHECK(nacks[0]->f.neth.nack_psn == psn_add(t.first_psn, static_cast<std::int32_t>(k)));
        CHECK(nacks[0]->f.neth.ev == 0x10000777);
        CHECK(nacks[0]->f.neth.ts_echo == 0x0123);
    }
    CHECK(t.pair.memory[1].writes == 0);
    CHECK(t.peer->qp().stats.trims_received == 2);
}

TEST_CASE("Engine::on_trimmed__an_already_received_psn_is_not_nacked", "[unit][core]") {
    Rx t;
    t.peer->deliver(t.packet(2, 8));
    (void)t.peer->sent();
    wire::FrameSpec s = t.peer->data_spec(Opcode::write_middle, psn_add(t.first_psn, 2), t.va(2 * kMtu), kRkey, 8 * kMtu);
    s.ip.set_dscp(wire::kDscpTrimmed);
    auto f = CraftedPeer::build(s, std::vector<std::uint8_t>(kMtu, 9));
    f.resize(wire::header_size(s));
    t.peer->deliver(f);  // a late trimmed copy of a packet that made it
    CHECK(CraftedPeer::only(t.peer->sent(), Opcode::nack).empty());
}

// ---- on_probe ----

TEST_CASE("Engine::on_probe__answered_with_a_probe_response_sack", "[unit][core]") {
    Rx t;
    wire::FrameSpec s = t.peer->spec(Opcode::probe, 0, 2, 0x30000042);
    s.peth = {.probe_id = 0x1235, .src_conn_id = t.peer->peer_qp().conn_id, .dst_conn_id = t.peer->qp().conn_id,
              .tx_timestamp = 77, .ftype = 1};
    t.peer->deliver(CraftedPeer::build(s), 2);
    const auto sacks = CraftedPeer::only(t.peer->sent(), Opcode::sack);
    REQUIRE(sacks.size() == 1);
    CHECK(sacks[0]->f.seth.probe_response);
    CHECK(sacks[0]->f.seth.ev == 0x30000042);  // the EV the probe came on
    CHECK(sacks[0]->f.ev == 0x30000042);       // and the answer travels on it back
    CHECK(sacks[0]->plane == 2);
    CHECK(static_cast<std::uint16_t>(sacks[0]->f.seth.ack_psn_offset) == 0x1235);
}

TEST_CASE("Engine::on_probe__wrong_connection_id_is_dropped", "[unit][core]") {
    Rx t;
    wire::FrameSpec s = t.peer->spec(Opcode::probe, 0, 0, 0x10000042);
    s.peth = {.probe_id = 5, .src_conn_id = static_cast<std::uint16_t>(t.peer->peer_qp().conn_id ^ 1),
              .dst_conn_id = t.peer->qp().conn_id};
    t.peer->deliver(CraftedPeer::build(s));
    CHECK(t.drops(DropReason::bad_conn_id) == 1);
    CHECK(t.peer->sent().empty());
}

// ---- on_endpoint ----

TEST_CASE("Engine::on_endpoint__port_status_from_a_connected_peer_changes_its_planes", "[unit][core]") {
    Rx t;
    const wire::Ipv6Addr peer = t.pair.engines[0]->config().local_addr;
    CHECK(t.pair.engines[1]->peer_plane_mask(peer) == ~0u);
    wire::FrameSpec s = t.peer->spec(Opcode::ep_request, 0);
    s.bth.dest_qp = wire::kEndpointQpn;
    s.bth.psn = 0x0042;  // the request id
    s.erth = {.op = wire::ErthOp::port_status_update, .port_status_mask = wire::mrc::port_mask_from_planes(0xF7)};  // plane 3 down
    t.peer->deliver(CraftedPeer::build(s));
    CHECK(t.pair.engines[1]->peer_plane_mask(peer) == 0xF7);
    CHECK(t.pair.engines[1]->stats().port_status_received == 1);
    // Answered with an EETH to QPN 2 carrying the same request id.
    const auto out = t.peer->sent();
    const auto rsp = CraftedPeer::only(out, Opcode::ep_response);
    REQUIRE(rsp.size() == 1);
    CHECK(rsp[0]->f.bth.dest_qp == wire::kEndpointQpn);
    CHECK(rsp[0]->f.bth.psn == 0x0042);
    CHECK(rsp[0]->f.eeth.op == wire::ErthOp::port_status_update);
}

TEST_CASE("Engine::on_endpoint__port_status_from_an_unknown_source_is_dropped", "[unit][core]") {
    Rx t;
    wire::FrameSpec s = t.peer->spec(Opcode::ep_request, 0);
    s.bth.dest_qp = wire::kEndpointQpn;
    s.ip.src[15] ^= 0x40;
    s.erth = {.op = wire::ErthOp::port_status_update};
    t.peer->deliver(CraftedPeer::build(s));
    CHECK(t.drops(DropReason::wrong_source) == 1);
    CHECK(t.pair.engines[1]->peer_plane_mask(s.ip.src) == ~0u);
    CHECK(t.pair.engines[1]->peer_plane_mask(t.pair.engines[0]->config().local_addr) == ~0u);
}

TEST_CASE("Engine::on_endpoint__responses_and_other_qpns_are_unexpected", "[unit][core]") {
    Rx t;
    wire::FrameSpec s = t.peer->spec(Opcode::ep_response, 0);
    s.bth.dest_qp = wire::kEndpointQpn;
    s.eeth = {wire::ErthOp::port_status_update, 0};  // answers no request of ours
    t.peer->deliver(CraftedPeer::build(s));
    CHECK(t.drops(DropReason::unexpected) == 1);
    CHECK(t.pair.engines[1]->peer_plane_mask(t.pair.engines[0]->config().local_addr) == ~0u);
}

// ---- send_sack ----

TEST_CASE("Engine::send_sack__echoes_the_triggers_int_records", "[unit][core]") {
    // INT records (docs/PROTOCOL.md 11.7) that came with the ACK trigger go
    // out beside its SACK; a SACK whose trigger had none carries none.
    Rx t;
    wire::IntStack st;
    st.hops = 2;
    st.hop[0] = {11, 1000, 123'456, 5'000, 100'000'000'000};
    st.hop[1] = {42, 0, 654'321, 5'400, 100'000'000'000};
    t.peer->deliver(t.packet(0, 2, true), st);
    {
        const auto sacks = CraftedPeer::only(t.peer->sent(), Opcode::sack);
        REQUIRE(sacks.size() == 1);
        REQUIRE(sacks[0]->has_telemetry);
        CHECK(sacks[0]->telemetry.hops == 2);
        CHECK(sacks[0]->telemetry.hop[0].port_id == 11);
        CHECK(sacks[0]->telemetry.hop[0].tx_bytes == 123'456);
        CHECK(sacks[0]->telemetry.hop[1].port_id == 42);
        CHECK(sacks[0]->telemetry.hop[1].ts_ns == 5'400);
    }
    t.peer->deliver(t.packet(1, 2, true));
    const auto sacks = CraftedPeer::only(t.peer->sent(), Opcode::sack);
    REQUIRE(sacks.size() == 1);
    CHECK_FALSE(sacks[0]->has_telemetry);
}

TEST_CASE("Engine::send_sack__a_far_trigger_is_covered_by_every_other_sack", "[unit][core]") {
    Rx t;
    // Packet 0 is missing; packets 100 and 101 arrive, each asking for a SACK.
    for (std::uint32_t k : {100u, 101u}) {
        t.peer->deliver(t.packet(k, 200, true));
        const auto sacks = CraftedPeer::only(t.peer->sent(), Opcode::sack);
        REQUIRE(sacks.size() == 1);
        const wire::SethHdr& s = sacks[0]->f.seth;
        CHECK(s.cack_psn == psn_add(t.first_psn, -1));
        if (k == 100) {
            // Near the trigger: the window ends at it (bit 63 = base + 63).
            CHECK(s.sack_offset == 101 - 63);
            CHECK(s.bitmap >> 63 == 1);
        } else {
            CHECK(s.sack_offset == 1);  // then back to cack + 1, where holes block the window
            CHECK(s.bitmap == 0);
        }
    }
}

TEST_CASE("Engine::send_sack__packets_beyond_both_windows_are_swept_into_view", "[unit][core]") {
    // Packet 0 is missing, so cack stays before it; 1..200 arrive in one
    // burst, then far triggers 230..249 ask for a SACK each. The window after
    // cack covers 1..63 and the one ending at a trigger 167..249: without a
    // third window 64..166 would go unreported until cack passed them, time
    // out at the sender and be resent.
    Rx t;
    t.peer->deliver(t.packets(1, 201, 250));
    (void)t.peer->sent();  // the burst's own SACKs
    std::set<std::int32_t> reported;
    int sweeps = 0;
    for (std::uint32_t k = 230; k < 250; ++k) {
        t.peer->deliver(t.packet(k, 250, true));
        for (const auto* f : CraftedPeer::only(t.peer->sent(), Opcode::sack)) {
            const wire::SethHdr& s = f->f.seth;
            CHECK(s.cack_psn == psn_add(t.first_psn, -1));
            const std::uint32_t base = psn_add(s.cack_psn, s.sack_offset);
            if (s.sack_offset > 1 && s.sack_offset + 63 < psn_diff(psn_add(s.cack_psn, s.ack_psn_offset), s.cack_psn))
                ++sweeps;
            for (std::uint64_t bits = s.bitmap; bits != 0; bits &= bits - 1)
                reported.insert(psn_diff(psn_add(base, std::countr_zero(bits)), t.first_psn));
        }
    }
    CHECK(sweeps >= 3);
    for (std::int32_t k = 1; k <= 200; ++k) {
        INFO("packet " << k);
        CHECK(reported.count(k) == 1);
    }
    CHECK(reported.count(0) == 0);
    CHECK(reported.count(210) == 0);  // never sent: no window reports what did not arrive
}

TEST_CASE("Engine::send_sack__when_arrivals_stop_timer_sacks_finish_the_sweep", "[unit][core]") {
    // Packet 0 is lost and 1..200 arrive in one burst, the last asking for a
    // SACK; then nothing more arrives (a step's last packets: the sender has
    // nothing to send after them). SACKs that follow every ACK delay carry the
    // sweep through what the first one could not report, and stop once it
    // has been round; they echo no timestamp, ECN or INT of the old trigger.
    Rx t;
    auto burst = t.packets(1, 201, 250);
    burst.back() = t.packet(200, 250, true);
    t.peer->deliver(burst);
    std::set<std::int32_t> reported;
    std::size_t followups = 0;
    const auto collect = [&](bool first) {
        for (const auto* f : CraftedPeer::only(t.peer->sent(), Opcode::sack)) {
            const wire::SethHdr& s = f->f.seth;
            const std::uint32_t base = psn_add(s.cack_psn, s.sack_offset);
            for (std::uint64_t bits = s.bitmap; bits != 0; bits &= bits - 1)
                reported.insert(psn_diff(psn_add(base, std::countr_zero(bits)), t.first_psn));
            if (!first) {
                ++followups;
                CHECK(f->f.cc.ts_echo == 0);
                CHECK(s.skip == wire::SackSkip::none);
            }
        }
    };
    collect(true);
    for (int k = 1; k <= 40; ++k) {
        t.peer->at(t.pair.now + 2'000);
        collect(false);
    }
    CHECK(followups >= 3);
    CHECK(followups <= 3 * 4 + 2);  // bounded: once round the 200 received PSNs, then silence
    for (std::int32_t k = 1; k <= 200; ++k) {
        INFO("packet " << k);
        CHECK(reported.count(k) == 1);
    }
}

TEST_CASE("Engine::ack_route__a_sack_follows_its_data_back", "[unit][core]") {
    Rx t;
    for (std::uint32_t k = 0; k < 8; ++k) {
        // Packet k on plane k with an EV of that plane: its SACK goes back on both.
        const std::uint32_t ev = omrc::routing::make_ev(k, 40 + k, 0x1234);
        wire::FrameSpec s = t.peer->data_spec(Opcode::write_middle, psn_add(t.first_psn, static_cast<std::int32_t>(k)),
                                              t.va(k * kMtu), kRkey, 8 * kMtu, 0, static_cast<std::uint8_t>(k), ev);
        s.bth.ack_req = true;
        t.peer->deliver(CraftedPeer::build(s, std::vector<std::uint8_t>(kMtu, 1)), static_cast<std::uint8_t>(k));
        const auto out = t.peer->sent();
        REQUIRE(out.size() == 1);
        CHECK(out[0].plane == k);
        CHECK(out[0].f.ev == ev);
    }
}

TEST_CASE("Engine::ack_route__an_ev_of_another_plane_falls_back_to_the_rotation", "[unit][core]") {
    Rx t;
    std::set<std::uint8_t> planes;
    for (std::uint32_t k = 0; k < 8; ++k) {
        // The EV says plane 0, the frame came on plane 5: not a path to follow.
        wire::FrameSpec s = t.peer->data_spec(Opcode::write_middle, psn_add(t.first_psn, static_cast<std::int32_t>(k)),
                                              t.va(k * kMtu), kRkey, 8 * kMtu, 0, 5, 0x10000001);
        s.bth.ack_req = true;
        t.peer->deliver(CraftedPeer::build(s, std::vector<std::uint8_t>(kMtu, 1)), 5);
        const auto out = t.peer->sent();
        REQUIRE(out.size() == 1);
        CHECK(out[0].f.ev != 0x10000001u);
        planes.insert(out[0].plane);
    }
    CHECK(planes.size() == 8);  // rotated over every plane
}

// ---- deliver_imms ----

TEST_CASE("Engine::deliver_imms__completes_only_once_every_earlier_psn_is_placed", "[unit][core]") {
    Rx t;
    const RecvRequest r{42, 4096};
    REQUIRE(t.pair.engines[1]->submit(CmdPostRecv{t.qb, std::span(&r, 1)}, t.pair.now).err == 0);
    // Last packet (with immediate) of a 3-packet message first, then 1, then 0.
    t.peer->deliver(t.packet(2, 3, true, true));
    CHECK(t.peer->completions().empty());
    t.peer->deliver(t.packet(1, 3));
    CHECK(t.peer->completions().empty());
    t.peer->deliver(t.packet(0, 3));
    const auto wc = t.peer->completions();
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == 42);
    CHECK(wc[0].opcode == WcOpcode::recv_rdma_with_imm);
    CHECK(wc[0].has_imm);
    CHECK(wc[0].imm_data == 0xFEED0002u);
    CHECK(wc[0].byte_len == 3 * kMtu);
}

TEST_CASE("Engine::deliver_imms__waits_for_a_receive_to_be_posted", "[unit][core]") {
    Rx t;
    t.peer->deliver(t.packet(0, 1, true, true));
    CHECK(t.peer->completions().empty());
    CHECK(t.dst[0] == 1);  // placed and acknowledged all the same
    CHECK(CraftedPeer::only(t.peer->sent(), Opcode::sack).size() == 1);
    const RecvRequest r{7, 64};
    REQUIRE(t.pair.engines[1]->submit(CmdPostRecv{t.qb, std::span(&r, 1)}, t.pair.now).err == 0);
    const auto wc = t.peer->completions();
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == 7);
}
