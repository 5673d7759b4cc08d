// SPDX-License-Identifier: BSD-3-Clause
// Connection (QP) state: the sender half (messages, per-packet transmit
// records, retransmissions, paths, congestion window) and the receiver half
// (cumulative PSN, receive bitmap, pending immediate data, receive queue).
// Owned by one Engine; touched only by the engine's owning thread.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cc.hpp"
#include "core/cc_credit.hpp"
#include "core/config.hpp"
#include "core/paths.hpp"
#include "core/qp_security.hpp"
#include "core/ring.hpp"
#include "core/rtt_estimator.hpp"
#include "core/srq.hpp"
#include "core/stats.hpp"
#include "core/types.hpp"
#include "routing/fabric.hpp"
#include "wire/data_template.hpp"
#include "wire/frame.hpp"

namespace omrc::core {

/// A posted send WR while it is outstanding.
struct SendMsg {
    SendRequest req{};
    std::vector<std::uint8_t> inline_copy;  ///< inline WRs: the bytes (sges point here)
    std::uint32_t length = 0;               ///< message bytes
    std::uint32_t first_psn = 0;
    std::uint32_t npkts = 0;                ///< ≥ 1 (a zero-length message takes one packet)
    std::uint16_t msn = 0;
    /// Receive-queue MSN (SEND and WRITE_WITH_IMM: the receive it consumes);
    /// a READ request and a READ response: the read sequence (Qp::next_rd_seq).
    std::uint16_t rqmsn = 0;
    // RDMA READ requester (req.is_read): length is 0 (the request carries no payload).
    std::uint32_t rd_len = 0;               ///< bytes read: the READ WR's SGEs
    std::uint32_t rd_placed = 0;            ///< response bytes placed so far (each packet once: receive bitmap)
    bool rd_issued = false;                 ///< its request was segmented: counted in Qp::rd_outstanding
    bool rd_done = false;                   ///< every response byte placed (completes once its request is acknowledged, in order)
    /// RDMA READ responder: this message answers a peer's READ (req.remote_addr
    /// and req.rkey name our MR, re-checked per packet built); no WR of ours:
    /// it never completes and is not counted in Qp::sq_retired.
    bool response = false;

    [[nodiscard]] WcOpcode wc_opcode() const noexcept {
        return req.is_read ? WcOpcode::rdma_read : req.is_send ? WcOpcode::send : WcOpcode::rdma_write;
    }

    /// Opcode of the packet at byte `offset` carrying `len` bytes. Decided
    /// from bytes, never from a PSN difference: a message may span more PSNs
    /// (up to 2^31 bytes / 64-byte MTU = 2^25) than a signed 24-bit PSN
    /// difference can count.
    [[nodiscard]] wire::Opcode opcode_at(std::uint32_t offset, std::uint32_t len) const noexcept {
        if (req.is_read) return wire::Opcode::read_req;
        const bool imm = req.with_imm;
        const bool first = offset == 0;
        const bool last = std::uint64_t{offset} + len >= length;
        if (response) {
            if (first && last) return wire::Opcode::read_resp_only;
            if (first) return wire::Opcode::read_resp_first;
            if (last) return wire::Opcode::read_resp_last;
            return wire::Opcode::read_resp_middle;
        }
        if (req.is_send) {
            if (first && last) return imm ? wire::Opcode::send_only_imm : wire::Opcode::send_only;
            if (first) return wire::Opcode::send_first;
            if (last) return imm ? wire::Opcode::send_last_imm : wire::Opcode::send_last;
            return wire::Opcode::send_middle;
        }
        if (first && last) return imm ? wire::Opcode::write_only_imm : wire::Opcode::write_only;
        if (first) return wire::Opcode::write_first;
        if (last) return imm ? wire::Opcode::write_last_imm : wire::Opcode::write_last;
        return wire::Opcode::write_middle;
    }
};

/// Transmit record of one PSN in [snd_una, snd_nxt).
struct TxPkt {
    std::uint64_t tx_seq = 0;      ///< QP-wide sequence of its latest transmission (unique, increasing)
    TimeNs sent_ns = 0;            ///< time of the latest transmission
    std::uint32_t msg_slot = 0;    ///< index into Qp::sq
    std::uint32_t offset = 0;      ///< byte offset of this packet in its message
    std::uint32_t len = 0;         ///< payload bytes
    std::uint32_t ev = 0;          ///< EV of the latest transmission
    std::uint16_t ev_slot = 0;
    std::uint8_t tx_count = 0;     ///< transmissions so far (saturates at 255)
    bool acked = false;
    bool lost = false;             ///< queued for retransmission
    bool untracked = false;        ///< its latest transmission did not fit its EV's tracking ring

    /// The plane its latest transmission went on (its EV's; the slot may
    /// hold an EV of another plane since).
    [[nodiscard]] std::uint8_t plane() const noexcept { return ev_plane_index(ev); }
};

/// A send time as TSETH carries it (16 bits of 128 ns ticks, wrapping every
/// 8.39 ms): what a SACK's timestamp echo is matched against.
[[nodiscard]] inline std::uint16_t tseth_ticks(TimeNs t) noexcept {
    return static_cast<std::uint16_t>(t / wire::TsethHdr::kTickNs);
}

/// A peer's RDMA READ request accepted by the responder: answered (a
/// response message queued on our sending half) once every PSN up to it has
/// arrived, so that a READ sees every WRITE posted before it.
struct PendingRead {
    std::uint32_t psn = 0;      ///< the request's PSN (answered once cack_psn reaches it)
    std::uint16_t rd_seq = 0;   ///< the requester's read sequence (METH.RQMSN), echoed in every response packet
    std::uint64_t va = 0;       ///< our memory, checked when accepted (PlacementTarget::read_source)
    std::uint32_t rkey = 0;
    std::uint32_t len = 0;
};

/// A message that consumes a receive (SEND, WRITE_WITH_IMM) whose last
/// packet has arrived: its receive completes once every PSN up to that
/// packet has (receives complete in message order).
struct PendingImm {
    std::uint32_t last_psn = 0;   ///< completes once cack_psn reaches it
    std::uint32_t imm = 0;
    std::uint32_t byte_len = 0;
    bool send = false;             ///< a SEND (placed into the receive) rather than a WRITE_WITH_IMM
    bool has_imm = false;          ///< imm is valid (always for WRITE_WITH_IMM; SEND_WITH_IMM)
    bool solicited = false;        ///< its last packet had BTH.SE
    bool counted_waiting = false;  ///< already counted in QpStats::imm_waiting_for_recv
};

struct Qp {
    std::uint32_t qpn = 0;
    std::uint16_t conn_id = 0;
    QpState state = QpState::reset;
    QpCaps caps{};
    QpAttr attr{};
    QpStats stats{};

    // ---- sender ----
    std::vector<SendMsg> sq;        ///< ring of max_send_wr messages
    std::uint32_t sq_head = 0;      ///< oldest outstanding message
    std::uint32_t sq_count = 0;     ///< outstanding messages
    std::uint32_t sq_unsegmented = 0;  ///< messages at the tail not yet given PSNs
    std::uint32_t sq_retired = 0;   ///< send WRs retired so far, completed or flushed (mod 2^32; Completion::sq_retired)
    std::uint32_t seg_msg = 0;      ///< message being segmented (index into sq)
    std::uint32_t seg_offset = 0;   ///< its next byte to put in a packet
    std::uint32_t snd_una = 0;      ///< oldest unacknowledged PSN
    std::uint32_t snd_nxt = 0;      ///< next new PSN
    std::uint16_t next_msn = 0;
    std::uint16_t next_rqmsn = 0;
    /// RNR: no data leaves before this time (an RNR NAK's wait; 0: none).
    TimeNs rnr_until_ns = 0;
    std::uint8_t rnr_waits_used = 0;  ///< RNR waits since a SEND last completed (against attr.rnr_retry)
    std::vector<TxPkt> pkts;        ///< ring indexed by psn & pkt_mask
    std::uint32_t pkt_mask = 0;
    std::uint32_t window_pkts = 0;  ///< send window = peer's receive window
    Ring<std::uint32_t> resend;     ///< PSNs to retransmit, oldest first
    std::uint64_t alarms_seen = 0;  ///< Engine path alarms (by sequence) this QP has applied
    /// Per plane: latest send time of a packet sent once and acknowledged
    /// (planes may differ in delay; T1 paths of a plane do not by design).
    std::array<TimeNs, kMaxPlanes> rack_sent_ns{};
    /// Per plane: when a packet sent once on it was last acknowledged (0 = never).
    std::array<TimeNs, kMaxPlanes> plane_ack_ns{};
    /// Per plane (kMaxPlanes entries once the QP has sent; empty before).
    std::vector<PlaneCounters> plane_counters;
    std::uint32_t untracked = 0;    ///< packets in flight whose transmission no EV ring tracks (the window sweep covers them)
    std::uint32_t acked_above_una = 0;  ///< packets in (snd_una, snd_nxt) already acknowledged (SACK bitmaps)
    std::uint64_t inflight_bytes = 0;
    std::uint64_t tx_seq = 0;
    PathSet paths;
    std::unique_ptr<CongestionControl> cc;
    /// Encrypted mode (QpAttr::encrypt); null: plain frames.
    std::unique_ptr<QpSecurity> sec;
    Credit* credit = nullptr;       ///< cc, when it is the receiver-credit mode (its send gate and request); else null
    /// The registration of attr.cc.algorithm (set from RTR on: never null there).
    const CcAlgorithmInfo* cc_info = nullptr;
    std::vector<std::uint16_t> infer_pending;  ///< EV slots with an acknowledged packet newer than their oldest tracked one (EvSlot::infer_queued)
    RttEstimator rtt;               ///< RTT samples per plane and QP-wide: EV timeout, reorder windows
    TimeNs last_progress_ns = 0;    ///< last time snd_una advanced (or first send after idle)
    TimeNs next_scan_ns = kNever;   ///< next time the EV timers must be looked at
    TimeNs next_sweep_ns = 0;       ///< next QP-wide sweep for untracked overdue packets (at most every half EV timeout)
    // What the peer's last SACKs said in CC_STATE.
    std::uint32_t peer_rcvd_units = 0;     ///< newest rcvd_bytes (256-byte units, 24 bits wrapping)
    bool peer_rcvd_known = false;          ///< peer_rcvd_units holds a value
    std::uint32_t peer_ooo_pkts = 0;       ///< newest ooo_count: packets the peer holds beyond its cack
    /// Bytes of packets the peer holds beyond its cack that no SACK bitmap
    /// has reported yet (ooo_count minus acked_above_una, times the MTU):
    /// they have left the network, so they do not count in flight.
    std::uint64_t peer_held_unreported_bytes = 0;
    wire::DataTemplate data_tmpl{}; ///< prebuilt headers of this QP's data packets
    wire::FrameSpec ctrl_spec{};    ///< headers shared by this QP's control packets
    /// Per plane: destination MAC then source MAC, as the Ethernet header carries them.
    std::array<std::array<std::uint8_t, 12>, kMaxPlanes> plane_macs{};
    routing::UsidTemplate usid_template{};

    // RDMA READ, requester: READs whose request was segmented and whose
    // response is not wholly placed (≤ max(1, attr.max_rd_atomic)).
    std::uint16_t next_rd_seq = 0;  ///< read sequence of the next READ posted
    std::uint32_t rd_outstanding = 0;
    Ring<std::uint32_t> rd_slots;   ///< sq slots of those READs, oldest first
    // RDMA READ, responder.
    Ring<PendingRead> rd_in;        ///< accepted requests not yet answered, by PSN
    /// Accepted READs whose response has not yet wholly left once (≤
    /// max(1, attr.max_dest_rd_atomic)): a requester within its own limit
    /// never exceeds it, since its READ is outstanding from before the
    /// request arrives until after the response's last packet has left.
    std::uint32_t rd_resp_unsent = 0;
    std::uint32_t rd_resp_queued = 0;  ///< response messages in sq (≤ kMaxRdAtomic: sq's room beyond max_send_wr)
    /// A responder in RTR answers READs (IBTA): its sending half started at
    /// the first request's response PSN, before any RTS (whose sq_psn it then keeps).
    bool rtr_responder = false;

    // ---- receiver ----
    std::uint32_t rcv_cack = 0;     ///< every PSN ≤ this has been received (rq_psn − 1 at start)
    std::vector<std::uint64_t> rcv_bitmap;  ///< window bits, index psn & (rcv_window − 1)
    std::uint32_t rcv_window = 0;   ///< packets: mpr · 128, a power of two (mpr is one)
    std::uint64_t rcvd_bytes = 0;
    std::uint32_t ack_pending = 0;  ///< data packets since the last SACK
    bool ack_due = false;           ///< a SACK goes out at the end of this receive burst
    bool ack_queued = false;        ///< on the engine's list of QPs to acknowledge after the burst
    TimeNs ack_deadline = kNever;
    std::uint32_t ack_trigger_psn = 0;
    std::uint32_t ack_trigger_ev = 0;
    std::uint8_t ack_trigger_plane = 0;  ///< plane the triggering packet arrived on (the SACK goes back on it)
    std::uint16_t ack_trigger_ts = 0;
    bool ack_trigger_ecn = false;
    bool ack_trigger_has_int = false;      ///< the trigger came with INT records (simulator only)
    wire::IntStack ack_trigger_int{};      ///< ... these, echoed with the SACK
    /// A retransmission arrived that was already received: the sender's loss
    /// reaction was spurious (CC_STATE restore_cwnd in the next SACK).
    bool ack_restore_cwnd = false;
    /// Receiver credit (attr.cc.algorithm credit): the grant the last SACK
    /// carried, cumulative bytes (the engine's CreditScheduler has the current one).
    std::uint64_t credit_grant_sent = 0;
    bool credit_grant_listed = false;  ///< on the engine's list of QPs whose grant grew (Engine::credit_granted_)
    bool credit_resend = false;        ///< its grant went unused for the expiry: send it again
    std::uint32_t rcv_ooo = 0;      ///< received PSNs beyond rcv_cack (set bits of rcv_bitmap): CC_STATE ooo_count
    std::uint32_t rcv_msn = 0;      ///< messages wholly received (24 bits, IB MSN): Transport ACK/NAK MSN
    Ring<std::uint32_t> msg_ends;   ///< last PSNs of messages whose end has arrived, ordered; counted into rcv_msn once ≤ cack
    std::uint32_t reverse_cursor = 0;  ///< rotates SACKs over the planes
    /// Which bitmap window the next SACK reports when received packets lie
    /// more than 64 PSNs beyond cack (engine_rx.cpp send_sack): 0 after
    /// cack, 1 ending at the trigger, 2 the sweep through the rest.
    std::uint8_t sack_turn = 0;
    /// The sweep's next window starts here (a PSN beyond cack + 64; taken
    /// back there when it has passed rcv_highest or fallen behind).
    std::uint32_t sack_sweep_psn = 0;
    std::uint32_t rcv_highest = 0;     ///< highest PSN received beyond rcv_cack (valid while rcv_ooo > 0)
    std::uint16_t sack_followups = 0;  ///< timer SACKs left for the sweep since the last arrival (engine_rx.cpp send_sack)
    Ring<PendingImm> imms;          ///< ordered by last_psn
    /// Posted receives (or, with an SRQ, those taken from it for messages
    /// not yet completed); rq[k] takes RQMSN rq_consumed + k.
    Ring<RecvRequest> rq;
    Srq* srq = nullptr;             ///< the SRQ its receives come from (caps.srqn), or null
    std::uint16_t rq_consumed = 0;  ///< receives consumed so far (mod 2^16): the RQMSN rq.front() takes

    // ---- engine bookkeeping ----
    bool tx_listed = false;         ///< on the engine's list of QPs with something to send
    TimeNs timer_armed_ns = kNever; ///< deadline of this QP's entry in the engine's timer heap
    std::uint32_t planes_epoch = 0; ///< engine plane epoch usable_mask was computed at
    std::uint32_t usable_mask = 0;  ///< planes both ends can use (cached)

    /// Earliest time this QP's timers have work.
    [[nodiscard]] TimeNs deadline() const noexcept { return ack_deadline < next_scan_ns ? ack_deadline : next_scan_ns; }
    /// Whether the sending half runs: RTS, or RTR answering READs.
    [[nodiscard]] bool sends() const noexcept {
        return state == QpState::rts || (state == QpState::rtr && rtr_responder);
    }
    /// Whether an RNR wait keeps the QP from sending at `now`.
    [[nodiscard]] bool rnr_waiting(TimeNs now) const noexcept { return rnr_until_ns != 0 && now < rnr_until_ns; }
    /// Bytes in the network for the congestion window: in flight less what
    /// the peer holds unreported (CC_STATE ooo_count).
    [[nodiscard]] std::uint64_t pipe_bytes() const noexcept {
        return inflight_bytes > peer_held_unreported_bytes ? inflight_bytes - peer_held_unreported_bytes : 0;
    }
    [[nodiscard]] bool has_tx_work() const noexcept { return !resend.empty() || sq_unsegmented > 0; }

    [[nodiscard]] TxPkt& pkt(std::uint32_t psn) noexcept { return pkts[psn & pkt_mask]; }
    /// Calls f(psn, packet) for every packet EV slot `slot` tracks whose
    /// latest transmission is the tracked one and is not acknowledged (the
    /// ring itself is left as it is; f must not change it).
    template <class F>
    void for_each_in_flight(std::size_t slot, F&& f) {
        for (std::uint32_t i = 0; i < paths.tracked(slot); ++i) {
            std::uint32_t psn;
            std::uint64_t seq;
            paths.tracked_at(slot, i, psn, seq);
            TxPkt& p = pkt(psn);
            if (p.tx_seq == seq && !p.acked) f(psn, p);
        }
    }
    [[nodiscard]] bool rcv_bit(std::uint32_t psn) const noexcept {
        const std::uint32_t i = psn & (rcv_window - 1);
        return (rcv_bitmap[i / 64] >> (i % 64)) & 1u;
    }
    void set_rcv_bit(std::uint32_t psn, bool v) noexcept {
        const std::uint32_t i = psn & (rcv_window - 1);
        if (v) rcv_bitmap[i / 64] |= (1ull << (i % 64));
        else rcv_bitmap[i / 64] &= ~(1ull << (i % 64));
    }
    /// Clears the receive bits of the `n` (≤ 64) PSNs from `psn` on.
    void clear_rcv_bits(std::uint32_t psn, std::uint32_t n) noexcept {
        const std::uint32_t i = psn & (rcv_window - 1);
        const std::uint32_t w = i / 64, sh = i % 64;
        const std::uint32_t first = n < 64 - sh ? n : 64 - sh;
        rcv_bitmap[w] &= ~(low_bits(first) << sh);
        if (n > first) rcv_bitmap[(w + 1) & (rcv_window / 64 - 1)] &= ~low_bits(n - first);
    }
    [[nodiscard]] static constexpr std::uint64_t low_bits(std::uint32_t n) noexcept {
        return n >= 64 ? ~0ull : (1ull << n) - 1;
    }
    /// Receive bits of the 64 PSNs from `psn` on, bit k = psn + k (the
    /// window is a power of two ≥ 128, so 64 bits span at most two words).
    [[nodiscard]] std::uint64_t rcv_bits64(std::uint32_t psn) const noexcept {
        const std::uint32_t i = psn & (rcv_window - 1);
        const std::uint32_t w = i / 64, sh = i % 64;
        const std::uint64_t lo = rcv_bitmap[w] >> sh;
        if (sh == 0) return lo;
        return lo | (rcv_bitmap[(w + 1) & (rcv_window / 64 - 1)] << (64 - sh));
    }
};

}  // namespace omrc::core
