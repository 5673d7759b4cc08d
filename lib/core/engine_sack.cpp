// SPDX-License-Identifier: BSD-3-Clause
// Engine, sender half: what the peer's receiver sends back. SACKs (the
// packets they acknowledge, the cumulative PSN and completions, the skip
// signal, CC_STATE, RTT samples and the congestion control's feedback, the
// credit grant), NACKs (trims, resends) and the Transport ACKs and NAKs of
// AETH. Loss detection on a SACK's evidence is engine_loss.cpp.
#include <algorithm>
#include <bit>
#include <cassert>

#include "core/engine.hpp"
#include "core/psn.hpp"

namespace omrc::core {

bool Engine::SackView::reports(std::uint32_t psn, bool& received) const noexcept {
    if (!valid) return false;
    if (psn_diff(psn, cack) <= 0) {
        received = true;
        return true;
    }
    const std::int32_t k = psn_diff(psn, base);
    if (k < 0 || k >= wire::SethHdr::kBitmapPsns) return false;
    received = ((bitmap >> k) & 1u) != 0;
    return true;
}

void Engine::ack_packet(Qp& qp, std::uint32_t psn, TimeNs now, std::uint64_t& acked_bytes, bool marked) {
    TxPkt& p = qp.pkt(psn);
    if (p.acked || p.tx_count == 0) return;
    p.acked = true;
    assert((p.lost || qp.inflight_bytes >= p.len) && "inflight_bytes covers every packet neither acked nor lost");
    if (!p.lost) qp.inflight_bytes -= std::min<std::uint64_t>(qp.inflight_bytes, p.len);
    p.lost = false;
    if (p.untracked) {
        assert(qp.untracked > 0 && "untracked counts packets with Qp::TxPkt::untracked set");
        p.untracked = false;
        --qp.untracked;
    }
    acked_bytes += p.len;
    ++qp.stats.pkts_sacked;
    // Send-order loss detection: the latest send time known delivered. A
    // packet sent more than once does not say which copy arrived.
    ++qp.plane_counters[p.plane()].acked;
    TimeNs& rack = qp.rack_sent_ns[p.plane()];
    if (p.tx_count == 1 && p.sent_ns > rack) rack = p.sent_ns;
    if (p.tx_count == 1) qp.plane_ack_ns[p.plane()] = now;
    ++qp.acked_above_una;  // until advance_una passes it
    // Policy reps: a clean entropy is recycled, whichever slot holds it now
    // (only a packet sent once says which EV carried the copy that arrived).
    if (p.tx_count == 1) qp.paths.reps_ack(p.ev, marked);
    EvSlot& slot = qp.paths.slot(p.ev_slot);
    if (slot.ev != p.ev) return;
    if (p.tx_count != 1) {
        // Only a packet sent once identifies which copy arrived: the
        // acknowledgement may be the earlier copy's, sent on another path,
        // and says nothing for this EV (crediting it would clear a dead
        // plane's retirement streak and end its stale waits). The packet
        // has left the network all the same: a stale slot may send another.
        if (slot.stale_sent > 0) --slot.stale_sent;
        return;
    }
    ++slot.counters.acked;
    qp.paths.note_ack(p.ev_slot, p.ev, now);
    (void)qp.paths.record_outcome(p.ev_slot, false);
    if (p.tx_seq > slot.last_acked_tx_seq) {
        slot.last_acked_tx_seq = p.tx_seq;
        slot.last_acked_psn = psn;
        if (slot.suspect_ns == 0) slot.suspect_ns = now;
        if (!slot.infer_queued) {
            slot.infer_queued = true;
            qp.infer_pending.push_back(p.ev_slot);
        }
    }
}

void Engine::advance_una(Qp& qp, TimeNs now) {
    bool moved = false;
    while (qp.snd_una != qp.snd_nxt && qp.pkt(qp.snd_una).acked) {
        qp.snd_una = psn_add(qp.snd_una, 1);
        moved = true;
        assert(qp.acked_above_una > 0 && "acked_above_una counts the acked packets from snd_una on");
        --qp.acked_above_una;
    }
    if (moved) qp.last_progress_ns = now;
    assert(psn_diff(qp.snd_nxt, qp.snd_una) >= 0 && "snd_una ≤ snd_nxt");
    // Complete messages in post order once all their packets are acknowledged.
    const auto n = static_cast<std::uint32_t>(qp.sq.size());
    bool answered = false;
    while (qp.sq_count > qp.sq_unsegmented) {
        const SendMsg& m = qp.sq[qp.sq_head];
        const std::uint32_t last = psn_add(m.first_psn, m.npkts - 1);
        if (psn_diff(last, qp.snd_una) >= 0) break;
        if (m.req.is_read && !m.rd_done) break;  // its response is still arriving
        qp.sq_head = (qp.sq_head + 1) % n;
        --qp.sq_count;
        if (m.response) {
            // A READ response of ours: delivered, no WR to complete; its room
            // in the send queue may take a waiting request's answer.
            --qp.rd_resp_queued;
            if (!qp.rd_in.empty()) answered = true;
            continue;
        }
        ++qp.sq_retired;
        // A SEND acknowledged whole was placed into a receive: the peer is ready again.
        if (m.req.is_send) qp.rnr_waits_used = 0;
        if (m.req.signaled) {
            complete({.wr_id = m.req.wr_id,
                      .qpn = qp.qpn,
                      .status = WcStatus::success,
                      .opcode = m.wc_opcode(),
                      .byte_len = m.req.is_read ? m.rd_len : m.length,
                      .sq_retired = qp.sq_retired});
            ++qp.stats.send_completions;
        }
    }
    if (answered) answer_reads(qp, now);
}

std::uint32_t Engine::on_peer_receive_edge(std::uint32_t qpn, std::uint32_t rcv_psn, TimeNs now) {
    Qp* qp = qp_by_num(qpn);
    if (qp == nullptr || qp->state != QpState::rts) return 0;
    // CM messages are not sealed: an encrypted QP takes acknowledgements only
    // from frames that authenticated (a forged DREQ must not complete a send).
    if (qp->sec != nullptr) return 0;
    // Only what this QP sent: an edge past snd_nxt is not the peer's to report.
    if (psn_diff(rcv_psn, qp->snd_nxt) > 0 || psn_diff(rcv_psn, qp->snd_una) <= 0) return 0;
    std::uint64_t acked_bytes = 0;
    const std::uint64_t sacked_before = qp->stats.pkts_sacked;  // ack_packet counts each packet it acknowledges
    for (std::uint32_t psn = qp->snd_una; psn != rcv_psn; psn = psn_add(psn, 1)) ack_packet(*qp, psn, now, acked_bytes);
    const auto n = static_cast<std::uint32_t>(qp->stats.pkts_sacked - sacked_before);
    qp->stats.pkts_acked_by_dreq += n;
    advance_una(*qp, now);
    arm_timer(*qp);
    return n;
}

void Engine::on_skip_signal(Qp& qp, const wire::SethHdr& s, TimeNs now) {
    // M names the EV of the triggering packet (or of the probe answered).
    if (s.skip == wire::SackSkip::none) return;
    const bool once = s.skip == wire::SackSkip::skip_once;
    ++(once ? qp.stats.ecn_echoes : qp.stats.always_skip_received);
    for (std::size_t i = 0; i < qp.paths.size(); ++i) {
        EvSlot& slot = qp.paths.slot(i);
        if (slot.ev != s.ev) continue;
        if (once) {
            ++slot.counters.ecn;
            ++qp.plane_counters[slot.plane].ecn_echoes;
            qp.paths.mark_skip(i);
        } else if (qp.paths.manages_paths()) {
            retire_slot(qp, i, now, RetireCause::always_skip);
        }
        return;
    }
}

std::uint64_t Engine::on_cc_state(Qp& qp, const wire::CcStateHdr& cc, TimeNs now) {
    // Delivered bytes since the previous SACK, from the receiver's wrapping
    // 24-bit count of 256-byte units; SACKs that arrive out of order (they
    // cross different planes) carry an older count and add nothing.
    std::uint64_t delivered = 0;
    const std::uint32_t units = cc.rcvd_bytes & kSeq24Mask;
    if (!qp.peer_rcvd_known) {
        qp.peer_rcvd_known = true;
        qp.peer_rcvd_units = units;
    } else {
        const std::uint32_t ahead = (units - qp.peer_rcvd_units) & kSeq24Mask;
        if (ahead != 0 && ahead < kSeq24Half) {
            delivered = std::uint64_t{ahead} * wire::CcStateHdr::kRcvdBytesUnit;
            qp.peer_rcvd_units = units;
        }
    }
    qp.peer_ooo_pkts = cc.ooo_count;
    if (qp.cc) {
        if (cc.penalty != 0) {
            ++qp.stats.penalties_received;
            qp.cc->on_penalty(cc.penalty, now);
        }
        if (cc.restore_cwnd) {
            ++qp.stats.restores_received;
            qp.cc->on_restore(now);
        }
    }
    return delivered;
}

void Engine::on_sack(Qp& qp, const wire::FrameView& f, TimeNs now) {
    const auto s = f.ext_header<wire::SethHdr>();
    const auto cc_state = f.ext_header<wire::CcStateHdr>(wire::SethHdr::kSize);
    if (s.dst_conn_id != qp.conn_id || s.src_conn_id != qp.attr.dest_conn_id) return drop(DropReason::bad_conn_id);
    ++qp.stats.sacks_received;
    const bool probe_answer = s.probe_response;
    if (probe_answer) {
        ++qp.stats.probe_answers;
        // Slots that change EV hand what they track to the send-order detection first.
        const std::uint32_t restored =
            qp.paths.on_probe_answer(s.ev, static_cast<std::uint16_t>(s.ack_psn_offset), cfg_.probe_successes_to_restore,
                                     rng_, now, [&](std::size_t slot) { untrack_slot(qp, slot); });
        qp.stats.ev_restorations += restored;
        if (restored != 0)
            path_event({.at_ns = now, .kind = PathEventKind::restored,
                        .plane = ev_plane_index(s.ev),
                        .group = qp.paths.group_of(s.ev), .qpn = qp.qpn, .ev = s.ev, .count = restored});
    }
    const std::uint32_t last_sent = psn_add(qp.snd_nxt, -1);
    // Validate everything before acting on anything.
    if (psn_diff(s.cack_psn, last_sent) > 0) return drop(DropReason::forged_ack);
    const std::uint32_t base = psn_add(s.cack_psn, s.sack_offset);
    if (s.bitmap != 0) {
        const int highest = 63 - std::countl_zero(s.bitmap);  // bit k = base + k
        if (psn_diff(psn_add(base, highest), last_sent) > 0) return drop(DropReason::forged_ack);
    }
    if (s.mpr != 0) qp.window_pkts = std::min<std::uint32_t>(s.mpr * 128u, qp.pkt_mask + 1);

    std::uint64_t acked_bytes = 0;
    const bool stale = psn_diff(s.cack_psn, qp.snd_una) < -1;
    if (stale) ++stats_.rx_drops[static_cast<std::size_t>(DropReason::stale_ack)];
    // A CE-marked packet makes the receiver acknowledge at once, with it as
    // the trigger: every other packet a SACK acknowledges arrived unmarked.
    const std::uint32_t marked_psn = s.skip == wire::SackSkip::skip_once && !probe_answer
                                         ? psn_add(s.cack_psn, s.ack_psn_offset)
                                         : psn_add(qp.snd_nxt, 1);  // none
    if (!stale)
        for (std::uint32_t psn = qp.snd_una; psn_diff(psn, s.cack_psn) <= 0; psn = psn_add(psn, 1))
            ack_packet(qp, psn, now, acked_bytes, psn == marked_psn);
    for (std::uint64_t bits = s.bitmap; bits != 0; bits &= bits - 1) {
        const int k = std::countr_zero(bits);  // bit k = base + k
        const std::uint32_t psn = psn_add(base, k);
        if (psn_diff(psn, qp.snd_una) < 0) continue;
        ack_packet(qp, psn, now, acked_bytes, psn == marked_psn);
    }
    // M: skip (or give up) the EV that carried the triggering packet. Only
    // an EV the triggering packet really took counts.
    if (s.skip != wire::SackSkip::none && !qp.pkts.empty()) {
        bool ours = probe_answer;
        if (!probe_answer) {
            const std::uint32_t trig = psn_add(s.cack_psn, s.ack_psn_offset);
            if (psn_diff(trig, qp.snd_una) >= -static_cast<std::int32_t>(qp.window_pkts) && psn_diff(trig, qp.snd_nxt) < 0)
                ours = qp.pkt(trig).ev == s.ev;
        }
        if (ours) on_skip_signal(qp, s, now);
    }
    // Path-order loss inference on every EV this SACK acknowledged something on.
    // The bitmap is only trusted from cack + 1: cumulative state then covers
    // everything below it.
    if (!stale) {
        SackView view{.valid = true, .cack = s.cack_psn, .base = base, .bitmap = s.bitmap};
        view.horizon_ns = reported_send_horizon(qp, s, cc_state.ts_echo, now);
        qp.next_scan_ns = std::min(qp.next_scan_ns, infer_pending_losses(qp, view, now));
        detect_losses_by_send_order(qp, view, now);
        arm_timer(qp);
    }
    const std::uint64_t delivered = on_cc_state(qp, cc_state, now);
    if (qp.cc) {
        AckSample a;
        a.acked_bytes = acked_bytes;
        a.delivered_bytes = delivered;
        a.ecn = s.skip == wire::SackSkip::skip_once;
        a.now = now;
        a.telemetry = rx_telemetry_;
        a.rtt_ns = probe_answer ? 0 : rtt_sample(qp, s, cc_state.ts_echo, now);
        // Per plane too (the trigger's): timeouts and reorder windows are per plane.
        if (a.rtt_ns != 0) qp.rtt.add(qp.pkt(psn_add(s.cack_psn, s.ack_psn_offset)).plane(), a.rtt_ns);
        qp.cc->on_ack(a);
    }
    if (qp.credit != nullptr) {
        const wire::CgthHdr grant = f.has_cgth ? f.cgth() : wire::CgthHdr{};
        if (grant.valid) {
            qp.credit->on_grant(wire::unwrap_cumulative(qp.credit->granted_bytes(), grant.grant));
        } else if (!qp.credit->off()) {
            // The peer's SACKs carry no grant (a peer not in credit mode):
            // none will ever come.
            qp.credit->on_no_grant();
        }
        want_tx(qp);
    }
    advance_una(qp, now);
    // Packets the receiver holds beyond its cumulative PSN that no bitmap
    // has reported have left the network all the same (a fresher SACK's
    // count only: a stale one describes an older receiver state).
    if (!stale) {
        const std::uint32_t held = cc_state.ooo_count;
        qp.peer_held_unreported_bytes =
            held > qp.acked_above_una ? std::uint64_t{held - qp.acked_above_una} * qp.attr.mtu_bytes : 0;
    }
}

TimeNs Engine::rtt_sample(const Qp& qp, const wire::SethHdr& s, std::uint16_t ts_echo, TimeNs now) const noexcept {
    // The echoed 16-bit timestamp wraps every 8.39 ms, so it only names which
    // transmission of the triggering packet the SACK answers; the round trip
    // is measured from that transmission's full send time.
    if (ts_echo == 0 || qp.pkts.empty()) return 0;
    const std::uint32_t trig = psn_add(s.cack_psn, s.ack_psn_offset);
    const std::int32_t age = psn_diff(qp.snd_nxt, trig);  // the record of trig is still in the ring
    if (age <= 0 || age > static_cast<std::int32_t>(qp.pkt_mask + 1)) return 0;
    const TxPkt& t = qp.pkts[trig & qp.pkt_mask];
    if (t.tx_count == 0 || t.sent_ns > now || tseth_ticks(t.sent_ns) != ts_echo) return 0;
    return now - t.sent_ns;
}

void Engine::on_nack(Qp& qp, const wire::FrameView& f, TimeNs now) {
    const auto n = f.ext_header<wire::NethHdr>();
    if (n.dst_conn_id != qp.conn_id || n.src_conn_id != qp.attr.dest_conn_id) return drop(DropReason::bad_conn_id);
    if (psn_diff(n.nack_psn, qp.snd_una) < 0 || psn_diff(n.nack_psn, qp.snd_nxt) >= 0)
        return drop(DropReason::forged_ack);
    ++qp.stats.nacks_received;
    TxPkt& p = qp.pkt(n.nack_psn);
    const auto reason = static_cast<wire::NackReason>(n.reason);
    const bool trim = reason == wire::NackReason::trimmed || reason == wire::NackReason::trimmed_lasthop;
    if (trim) {
        ++qp.stats.trims_nacked;
        if (p.tx_count != 0) ++qp.plane_counters[p.plane()].trims;
        if (qp.cc) qp.cc->on_trim(now);
        EvSlot& slot = qp.paths.slot(p.ev_slot);
        if (slot.ev == n.ev) {
            ++slot.counters.trims;
            // Congestion inside the fabric: avoid the EV for a rotation. A
            // last-hop trim says nothing about the path. Never a retirement.
            if (reason == wire::NackReason::trimmed) qp.paths.mark_skip(p.ev_slot);
        }
    }
    if (reason == wire::NackReason::psn_oor_window) {
        // The packet fell beyond the peer's receive window: that window is
        // smaller than the distance from the peer's cumulative PSN (a power
        // of two times 128 packets). NETH carries no cumulative PSN; the
        // peer's is at least snd_una − 1, so the distance is at most this,
        // and the window shrinks to fit it: the resend below then waits
        // until the window reaches it instead of bouncing off it again.
        const std::int32_t beyond = psn_diff(n.nack_psn, psn_add(qp.snd_una, -1));
        if (beyond > 128) {
            const auto fits = std::bit_floor(static_cast<std::uint32_t>(beyond - 1));
            qp.window_pkts = std::min(qp.window_pkts, fits);
        } else {
            qp.window_pkts = std::min<std::uint32_t>(qp.window_pkts, 128);
        }
    }
    // Selective resend of exactly this PSN, ahead of everything else.
    mark_lost(qp, n.nack_psn, true);
}

void Engine::on_aeth(Qp& qp, const wire::FrameView& f, TimeNs now) {
    const auto aeth = f.ext_header<wire::AethHdr>();
    const auto syndrome = static_cast<wire::AethSyndrome>(aeth.syndrome);
    const std::uint32_t psn = f.bth.psn;
    if (syndrome == wire::AethSyndrome::ack) {
        // A positive Transport ACK (IB semantics): every PSN up to BTH.PSN is
        // delivered. Reliability is the SACKs' job; this only confirms.
        if (psn_diff(psn, psn_add(qp.snd_nxt, -1)) > 0) return drop(DropReason::forged_ack);
        if (psn_diff(psn, qp.snd_una) < 0) return;  // nothing new
        ++qp.stats.transport_acks_received;
        std::uint64_t acked_bytes = 0;
        for (std::uint32_t p = qp.snd_una; psn_diff(p, psn) <= 0; p = psn_add(p, 1)) ack_packet(qp, p, now, acked_bytes);
        advance_una(qp, now);
        return;
    }
    // A NAK names the refused packet by its PSN (IB); its message carries the error.
    if (psn_diff(psn, qp.snd_una) < 0 || psn_diff(psn, qp.snd_nxt) >= 0) return drop(DropReason::forged_ack);
    if (wire::is_rnr_nak(aeth.syndrome)) return on_rnr_nak(qp, psn, aeth.syndrome & 0x1F, now);
    fail_message(qp, psn, syndrome == wire::AethSyndrome::nak_remote_access     ? WcStatus::rem_access_err
                          : syndrome == wire::AethSyndrome::nak_invalid_request ? WcStatus::rem_inv_req_err
                                                                                : WcStatus::rem_op_err,
                 now);
}

void Engine::on_rnr_nak(Qp& qp, std::uint32_t psn, std::uint8_t timer_code, TimeNs now) {
    // The peer had no receive for the SEND this packet belongs to: the path
    // delivered it (no loss, no congestion), the packet goes again once the
    // wait the peer asked for has passed (IBTA RNR NAK). NAKs of the other
    // packets in flight during one wait spend no further retry.
    TxPkt& p = qp.pkt(psn);
    if (p.acked) return;
    ++qp.stats.rnr_naks_received;
    if (!qp.rnr_waiting(now)) {
        if (qp.attr.rnr_retry != 7 && qp.rnr_waits_used >= qp.attr.rnr_retry)
            return fail_message(qp, psn, WcStatus::rnr_retry_exc_err, now);
        ++qp.rnr_waits_used;
        ++qp.stats.rnr_waits;
        qp.rnr_until_ns = now + rnr_timer_ns(timer_code);
        if (qp.rnr_until_ns < qp.next_scan_ns) {
            qp.next_scan_ns = qp.rnr_until_ns;
            arm_timer(qp);
        }
    }
    // The peer answers: a wait is progress as far as the retry budget goes.
    qp.last_progress_ns = now;
    mark_lost(qp, psn, false);
}

void Engine::fail_message(Qp& qp, std::uint32_t psn, WcStatus st, TimeNs now) {
    const std::uint32_t slot = qp.pkt(psn).msg_slot;
    const auto n = static_cast<std::uint32_t>(qp.sq.size());
    const std::uint32_t segmented = qp.sq_count - qp.sq_unsegmented;
    const std::uint32_t k = (slot + n - qp.sq_head) % n;  // position of its message among the outstanding ones
    if (k >= segmented) return drop(DropReason::forged_ack);
    // Earlier messages still outstanding cannot be confirmed any more:
    // they are flushed, the NAKed one carries the error, the QP stops.
    for (std::uint32_t e = 0; e < k; ++e) {
        const SendMsg& early = qp.sq[qp.sq_head];
        if (!early.response)
            complete({.wr_id = early.req.wr_id,
                      .qpn = qp.qpn,
                      .status = WcStatus::wr_flush_err,
                      .opcode = early.wc_opcode(),
                      .sq_retired = ++qp.sq_retired});
        qp.sq_head = (qp.sq_head + 1) % n;
        --qp.sq_count;
    }
    enter_error(qp, st, now);
}

}  // namespace omrc::core
