// SPDX-License-Identifier: BSD-3-Clause
// Engine, receiver half: duplicate detection, bounds-checked direct
// placement, cumulative PSN and bitmap, WRITE_WITH_IMM ordering, the ACK
// policy, NACKs for trims, probe answers and endpoint messages.
#include <algorithm>
#include <bit>
#include <cstring>

#include "core/engine.hpp"
#include "core/psn.hpp"
#include "routing/fabric.hpp"
#include "wire/icrc.hpp"

namespace omrc::core {

namespace {
/// Inserts `psn` into a ring kept in PSN order (nearly always at the back).
template <class T, class Key>
void insert_ordered(Ring<T>& ring, std::uint32_t psn, const T& value, Key key) {
    std::size_t at = ring.size();
    while (at > 0 && psn_diff(key(ring[at - 1]), psn) > 0) --at;
    ring.insert(at, value);
}
}  // namespace

wire::GatherFrame* Engine::ctrl_slot() {
    if (ctrl_.size() >= kCtrlQueueLimit) {
        ++stats_.ctrl_queue_overflow;
        return nullptr;
    }
    wire::GatherFrame& g = ctrl_.emplace_back();  // a reused slot: clear what not every builder sets
    g.telemetry = nullptr;
    ctrl_seal_.push_back(0);  // address_ctrl() marks a frame of an encrypted QP
    return &g;
}

void Engine::finish_ctrl(wire::GatherFrame& g, const wire::FrameSpec& spec) {
    std::size_t hlen = 0;
    (void)wire::build_headers(g.header, spec, 0, hlen);
    g.header_len = static_cast<std::uint16_t>(hlen);
    g.segment_count = 0;
    g.payload_in_engine_memory = false;
    const std::uint32_t crc = cfg_.compute_icrc ? wire::frame_icrc(std::span(g.header).first(hlen), cfg_.mode, {}) : 0;
    wire::store_le32(g.tail.data(), crc);
    g.tail_len = 4;
}

std::uint8_t Engine::reverse_plane(Qp& qp) noexcept {
    // Acknowledgements rotate over the planes both ends can use (one reverse EV per plane).
    const std::uint32_t usable = usable_planes(qp);
    for (std::uint32_t k = 0; k < cfg_.planes; ++k) {
        const std::uint32_t p = (qp.reverse_cursor + k) % cfg_.planes;
        if (usable & (1u << p)) {
            qp.reverse_cursor = p + 1;
            return static_cast<std::uint8_t>(p);
        }
    }
    return static_cast<std::uint8_t>(qp.reverse_cursor++ % cfg_.planes);
}

std::uint32_t Engine::reverse_ev(const Qp& qp, std::uint8_t plane) noexcept {
    return routing::make_ev(plane, qp.qpn & routing::kEvPathMask, static_cast<std::uint16_t>(qp.conn_id ^ 0x5A5A));
}

bool Engine::send_ep_request(const Qp& qp, std::uint8_t plane, std::uint32_t ev, const wire::ErthHdr& erth,
                             TimeNs now) {
    wire::GatherFrame* g = ctrl_slot();
    if (g == nullptr) return false;
    wire::FrameSpec s = qp.ctrl_spec;  // a copy: only the addressing of the QP's control frames is shared
    s.eth.src = cfg_.local_macs[plane];
    s.eth.dst = qp.attr.peer_macs[plane];
    s.ev = ev;
    if (cfg_.mode == wire::FrameMode::srv6) s.outer.dst = qp.usid_template.apply(ev);
    s.bth.opcode = wire::Opcode::ep_request;
    s.bth.dest_qp = wire::kEndpointQpn;
    // The low shard_bits name this engine's shard: the answer comes back to it.
    const auto id = static_cast<std::uint16_t>((++ep_request_seq_ << cfg_.shard_bits) | cfg_.shard);
    s.bth.psn = id;
    s.erth = erth;
    g->plane = plane;
    finish_ctrl(*g, s);
    if (ep_pending_.size() >= kEpPendingLimit) ep_pending_.pop_front();
    ep_pending_.push_back({id, qp.qpn, erth.op, now});
    return true;
}

void Engine::ack_route(Qp& qp, std::uint8_t arrived_plane, std::uint32_t data_ev, std::uint8_t& plane,
                       std::uint32_t& ev) noexcept {
    // An acknowledgement follows the data packet it answers back: the same
    // plane and EV, so in a Clos the same T1 both ways. Acknowledgements are
    // then spread over paths as the data is, and leave a path that fails
    // with the data (nothing arrives on it to be answered). The EV must be
    // one of the plane it arrived on, and that plane usable by both ends.
    if (data_ev != 0 && arrived_plane < cfg_.planes && routing::ev_plane(data_ev) == arrived_plane &&
        (usable_planes(qp) & (1u << arrived_plane))) {
        plane = arrived_plane;
        ev = data_ev;
        return;
    }
    plane = reverse_plane(qp);
    ev = reverse_ev(qp, plane);
}

wire::FrameSpec& Engine::address_ctrl(Qp& qp, std::uint8_t plane, std::uint32_t ev, wire::GatherFrame& g) {
    wire::FrameSpec& s = qp.ctrl_spec;
    s.eth.src = cfg_.local_macs[plane];
    s.eth.dst = qp.attr.peer_macs[plane];
    s.ev = ev;
    if (cfg_.mode == wire::FrameMode::srv6) s.outer.dst = qp.usid_template.apply(ev);
    g.plane = plane;
    // The QP's own control frames (ACK, SACK, NACK, probe: DestQP the peer's
    // QP) are sealed for an encrypted QP; endpoint messages never are.
    if (qp.sec && !ctrl_seal_.empty() && &g == &ctrl_.back()) ctrl_seal_.back() = qp.qpn;
    return s;
}

void Engine::fill_sack(Qp& qp, wire::FrameSpec& s) {
    s.bth.opcode = wire::Opcode::sack;
    s.bth.psn = qp.rcv_cack;  // a SACK's BTH.PSN is its cumulative PSN
    wire::SethHdr& h = s.seth;
    h = {};
    h.src_conn_id = qp.conn_id;
    h.dst_conn_id = qp.attr.dest_conn_id;
    h.cack_psn = qp.rcv_cack;
    h.cc_type = qp.cc_info->seth_cc_type;
    h.mpr = static_cast<std::uint8_t>(qp.attr.mpr);
    s.cc = {};
    s.cgth = {};  // a credit-mode QP's SACK carries one (cc_type credit); credit_fill sets it
    s.cc.ooo_count = static_cast<std::uint16_t>(std::min<std::uint32_t>(qp.rcv_ooo, 0x7FFF));
    // 256-byte units, rounded up, wrapping at 24 bits.
    s.cc.rcvd_bytes = static_cast<std::uint32_t>(
        ((qp.rcvd_bytes + wire::CcStateHdr::kRcvdBytesUnit - 1) / wire::CcStateHdr::kRcvdBytesUnit) & kSeq24Mask);
    // Ask for a smaller window while the application keeps WRITE_WITH_IMM
    // completions waiting for receives: it is not keeping up.
    const std::size_t waiting = qp.imms.size();
    s.cc.penalty = waiting == 0 || receive_ready(qp) ? 0 : static_cast<std::uint8_t>(std::min<std::size_t>(127, 16 * waiting));
}

void Engine::send_sack(Qp& qp, TimeNs now, bool grant_only, bool rotate) {
    // A SACK with no packet arrived since the last one (a grant alone, or a
    // sweep's follow-up) echoes nothing of its trigger: no timestamp (the
    // sender would take a stale round trip), no ECN, no INT.
    const bool answers = qp.ack_pending > 0 && !grant_only;
    qp.ack_pending = 0;
    qp.ack_due = false;
    qp.ack_deadline = kNever;  // a timer entry left behind is stale and skipped
    const bool restore = qp.ack_restore_cwnd;
    qp.ack_restore_cwnd = false;
    wire::GatherFrame* g = ctrl_slot();
    if (g == nullptr) return;
    std::uint8_t plane = 0;
    std::uint32_t route_ev = 0;
    if (rotate) ack_route(qp, kMaxPlanes, 0, plane, route_ev);  // no data EV to follow
    else ack_route(qp, qp.ack_trigger_plane, qp.ack_trigger_ev, plane, route_ev);
    wire::FrameSpec& s = address_ctrl(qp, plane, route_ev, *g);
    fill_sack(qp, s);
    wire::SethHdr& h = s.seth;
    h.ev = qp.ack_trigger_ev;
    const std::int32_t off = psn_diff(qp.ack_trigger_psn, qp.rcv_cack);
    h.ack_psn_offset = static_cast<std::int16_t>(std::clamp(off, -32768, 32767));
    if (qp.ack_trigger_ecn && answers) h.skip = wire::SackSkip::skip_once;
    if (qp.ack_trigger_has_int && answers) g->telemetry = &qp.ack_trigger_int;
    credit_fill(qp, s);
    // The bitmap normally starts right after cack: that is where holes block
    // the sender's window, and the sender infers losses only from such
    // bitmaps. When the triggering packet is more than 64 PSNs ahead, every
    // other SACK covers it instead, so its EV is acknowledged promptly too.
    // When received packets reach beyond both windows (a hole held cack
    // while planes delivered at different paces: a lost path, or queues of
    // unequal depth), every third SACK reports the next 64 PSNs of a sweep
    // through the rest, so that no received packet goes unreported until
    // cack passes it: unreported, it would time out at the sender and be
    // resent, and its healthy EV be retired.
    std::int32_t start = 1;
    if (off > 64) {
        const std::int32_t highest = qp.rcv_ooo > 0 ? psn_diff(qp.rcv_highest, qp.rcv_cack) : off;
        const bool middle = off > 128 || highest > off;  // a gap between the two windows, or packets past the trigger
        qp.sack_turn = static_cast<std::uint8_t>((qp.sack_turn + 1) % (middle ? 3 : 2));
        if (qp.sack_turn == 1) {
            start = off - 63;
        } else if (qp.sack_turn == 2) {
            std::int32_t from = psn_diff(qp.sack_sweep_psn, qp.rcv_cack);
            if (from < 65 || from > highest) from = 65;
            start = from;
            qp.sack_sweep_psn = psn_add(qp.rcv_cack, from + 64);
        }
        // The sweep needs SACKs to run on: when arrivals stop (a step's
        // last packets, the holes' packets lost), follow-ups come every ACK
        // delay until it has been round once since the last arrival.
        if (answers) qp.sack_followups = static_cast<std::uint16_t>(std::min(3 * ((highest + 63) / 64) + 2, 3000));
        if (qp.sack_followups > 0 && middle) {
            --qp.sack_followups;
            qp.ack_deadline = now + cfg_.ack_delay_ns;
            arm_timer(qp);
        }
    }
    h.sack_offset = static_cast<std::int16_t>(start);
    h.bitmap = qp.rcv_bits64(psn_add(qp.rcv_cack, start));  // bit k = base + k, as the window words keep them
    // Only PSNs inside the receive window (cack, cack + window] can have been
    // received. A window starting less than 64 PSNs before its end (a
    // sweep's last turn, a trigger near the window's edge) would otherwise
    // read on round the ring and report, as PSNs beyond the window, the
    // state of the ones a window below them: PSNs the sender never sent, for
    // which it discards the whole SACK as forged.
    if (const std::int32_t room = static_cast<std::int32_t>(qp.rcv_window) - start + 1; room < 64)
        h.bitmap &= room <= 0 ? 0 : (1ull << room) - 1;
    // A grant-only SACK answers no packet: an echoed timestamp would give the
    // sender a round trip as old as the last packet received.
    s.cc.ts_echo = answers ? qp.ack_trigger_ts : std::uint16_t{0};
    s.cc.restore_cwnd = restore;
    finish_ctrl(*g, s);
    ++qp.stats.sacks_sent;
    if (cfg_.send_transport_acks) send_transport_ack(qp);
}

void Engine::credit_fill(Qp& qp, wire::FrameSpec& s) {
    if (!qp.cc_info->receiver_credit || !credit_sched_.configured()) return;  // V stays clear
    const std::uint64_t granted = credit_sched_.granted(qp.qpn & kQpIndexMask);
    s.cgth.valid = true;
    s.cgth.grant = static_cast<std::uint32_t>(granted);  // low 32 bits; the sender widens them
    qp.credit_grant_sent = std::max(qp.credit_grant_sent, granted);
}

void Engine::credit_rx(Qp& qp, const wire::CrthHdr& c, const wire::FrameView& f, TimeNs now) {
    if (!credit_sched_.configured()) {
        // The first credit-mode QP sending to us sets the receiver's pace:
        // its line rate (planes · link rate) and how far grants may run ahead.
        const CreditConfig& k = qp.attr.cc.credit;
        const double rate = static_cast<double>(qp.attr.cc.link_rate_bps) / 8e9 * cfg_.planes *
                            std::clamp(k.rate_ratio, 1e-3, 1.0);
        const auto bdp = static_cast<std::uint64_t>(rate * static_cast<double>(qp.attr.cc.base_rtt_ns));
        const auto hold = static_cast<std::uint64_t>(rate * static_cast<double>(cfg_.ack_delay_ns));
        // A sender that neither sent nor was granted for a few round trips holds no unused credit.
        credit_sched_.configure(rate, k.ahead_bytes != 0 ? k.ahead_bytes : bdp + hold, k.quantum_bytes,
                                4 * (qp.attr.cc.base_rtt_ns + cfg_.ack_delay_ns));
    }
    // The counts come as their low 32 bits: widened against the largest seen.
    const std::uint32_t id = qp.qpn & kQpIndexMask;
    credit_sched_.on_request(id, wire::unwrap_cumulative(credit_sched_.request(id), c.request),
                             wire::unwrap_cumulative(credit_sched_.used(id), c.used), now);
    // Bytes that came unasked used the link all the same: they are paid
    // from the budget that grants would have used (a trimmed packet's did
    // not reach us: it is asked for again, and granted then).
    if (f.trim == wire::TrimKind::none)
        credit_sched_.charge(std::min<std::uint64_t>(c.unscheduled, f.payload.size()));
}

void Engine::credit_schedule(TimeNs now) {
    // A grant its sender has not used for a few round trips may have been
    // lost with its SACK: it is sent again (the cumulative count repairs it).
    credit_sched_.expire(now, [&](std::uint32_t id) {
        Qp* qp = id < qps_.size() ? qps_[id].get() : nullptr;
        if (qp == nullptr) return;
        qp->credit_resend = true;
        if (qp->credit_grant_listed) return;
        qp->credit_grant_listed = true;
        credit_granted_.push_back(qp);
    });
    credit_sched_.run(now, [&](std::uint32_t id) {
        Qp* qp = id < qps_.size() ? qps_[id].get() : nullptr;
        if (qp == nullptr || qp->credit_grant_listed) return;
        qp->credit_grant_listed = true;
        credit_granted_.push_back(qp);
    });
    credit_next_ns_ = credit_sched_.next_grant_ns(now);
}

void Engine::credit_send_grants(TimeNs now) {
    for (Qp* qp : credit_granted_) {
        qp->credit_grant_listed = false;
        if (qp->state == QpState::err || qp->state == QpState::reset) continue;
        const bool resend = qp->credit_resend;
        qp->credit_resend = false;
        if (!resend && credit_sched_.granted(qp->qpn & kQpIndexMask) <= qp->credit_grant_sent) continue;  // a SACK carried it
        // A grant sent again rotates over the planes: the SACK that carried
        // it may have died on the last data packet's path.
        send_sack(*qp, now, qp->ack_pending == 0, resend);
    }
    credit_granted_.clear();
}

void Engine::send_probe_answer(Qp& qp, std::uint8_t plane, std::uint32_t ev, std::uint16_t probe_id) {
    wire::GatherFrame* g = ctrl_slot();
    if (g == nullptr) return;
    // Back on the EV the probe came on: the answer tests that path's return too.
    wire::FrameSpec& s = address_ctrl(qp, plane, ev, *g);
    fill_sack(qp, s);
    s.seth.probe_response = true;
    s.seth.ev = ev;
    s.seth.ack_psn_offset = static_cast<std::int16_t>(probe_id);
    s.seth.sack_offset = 1;
    s.seth.bitmap = qp.rcv_bits64(psn_add(qp.rcv_cack, 1));
    credit_fill(qp, s);
    finish_ctrl(*g, s);
    ++qp.stats.sacks_sent;
}

void Engine::send_transport_ack(Qp& qp) {
    wire::GatherFrame* g = ctrl_slot();
    if (g == nullptr) return;
    std::uint8_t plane = 0;
    std::uint32_t route_ev = 0;
    ack_route(qp, qp.ack_trigger_plane, qp.ack_trigger_ev, plane, route_ev);
    wire::FrameSpec& s = address_ctrl(qp, plane, route_ev, *g);
    s.bth.opcode = wire::Opcode::ack;
    s.bth.psn = qp.rcv_cack;
    s.aeth = {static_cast<std::uint8_t>(wire::AethSyndrome::ack), qp.rcv_msn & kMsnMask};
    finish_ctrl(*g, s);
    ++qp.stats.transport_acks_sent;
}

void Engine::send_nack(Qp& qp, const NackFields& n) {
    wire::GatherFrame* g = ctrl_slot();
    if (g == nullptr) return;
    std::uint8_t plane = 0;
    std::uint32_t route_ev = 0;
    ack_route(qp, rx_plane_, n.ev, plane, route_ev);  // back the way the NACKed packet came
    wire::FrameSpec& s = address_ctrl(qp, plane, route_ev, *g);
    s.bth.opcode = wire::Opcode::nack;
    s.bth.psn = n.psn;
    s.neth = {.reason = static_cast<std::uint8_t>(n.reason),
              .ev = n.ev,
              .src_conn_id = qp.conn_id,
              .dst_conn_id = qp.attr.dest_conn_id,
              .nack_psn = n.psn,
              .cc_type = wire::mrc::kNethCcType,
              .ts_echo = n.ts_echo};
    finish_ctrl(*g, s);
    ++qp.stats.nacks_sent;
}

void Engine::send_aeth_nak(Qp& qp, wire::AethSyndrome syndrome, std::uint32_t psn) {
    wire::GatherFrame* g = ctrl_slot();
    if (g == nullptr) return;
    std::uint8_t plane = 0;
    std::uint32_t route_ev = 0;
    ack_route(qp, rx_plane_, rx_ev_, plane, route_ev);  // back the way the refused packet came
    wire::FrameSpec& s = address_ctrl(qp, plane, route_ev, *g);
    s.bth.opcode = wire::Opcode::ack;
    s.bth.psn = psn;
    s.aeth = {static_cast<std::uint8_t>(syndrome), qp.rcv_msn & kMsnMask};
    finish_ctrl(*g, s);
    ++qp.stats.naks_sent;
}

bool Engine::place_send(Qp& qp, const wire::FrameView& f, TimeNs now) {
    // A SEND packet goes into the receive its RQMSN names, at its offset:
    // receives are taken in message order, so the k-th receive posted
    // after the rq_consumed taken so far holds RQMSN rq_consumed + k.
    const std::uint32_t psn = f.bth.psn;
    const wire::RethHdr reth = f.reth();
    const auto len = static_cast<std::uint32_t>(f.payload.size());
    const auto k = static_cast<std::uint16_t>(f.meth().rqmsn - qp.rq_consumed);
    if (reth.rkey != 0 || reth.va > reth.dma_len - len || k >= 0x8000) {
        drop(DropReason::bad_length);  // an offset past the message, or a receive consumed long ago
        return false;
    }
    // Every message before this one that has no completion yet either has a
    // packet in the receive window or waits, placed, for its receive: a
    // peer naming a message further ahead would make us bind SRQ receives
    // (which other QPs could use) to messages that cannot exist.
    if (qp.srq != nullptr && k > qp.rcv_window + qp.imms.size()) {
        drop(DropReason::bad_length);
        return false;
    }
    if (!bind_receives(qp, std::size_t{k} + 1)) {
        // Receiver not ready (IBTA RNR): nothing is placed or acknowledged;
        // the sender waits the time the NAK carries and sends it again.
        drop(DropReason::rnr);
        ++qp.stats.rnr_naks_sent;
        if (qp.srq != nullptr) ++qp.srq->rnr_naks;
        send_aeth_nak(qp, static_cast<wire::AethSyndrome>(0x20 | (qp.attr.min_rnr_timer & 0x1F)), psn);
        return false;
    }
    const RecvRequest& r = qp.rq[k];
    if (reth.dma_len > r.length) {
        // IBTA: a message longer than its receive fails the receive with a
        // local length error, the sender's WR with an invalid request NAK,
        // and both QPs enter ERR.
        drop(DropReason::recv_too_small);
        send_aeth_nak(qp, wire::AethSyndrome::nak_invalid_request, psn);
        for (std::uint16_t e = 0; e < k; ++e) {
            complete({.wr_id = qp.rq.front().wr_id, .qpn = qp.qpn, .status = WcStatus::wr_flush_err, .opcode = WcOpcode::recv});
            qp.rq.pop_front();
        }
        complete({.wr_id = qp.rq.front().wr_id,
                  .qpn = qp.qpn,
                  .status = WcStatus::loc_len_err,
                  .opcode = WcOpcode::recv,
                  .byte_len = reth.dma_len});
        qp.rq.pop_front();
        enter_error(qp, WcStatus::wr_flush_err, now);
        return false;
    }
    // Scatter [va, va + len) of the message over the receive's SGEs.
    std::uint32_t skip = static_cast<std::uint32_t>(reth.va), done = 0;
    for (std::size_t i = 0; i < r.sge_count && done < len; ++i) {
        const RecvSge& sge = r.sges[i];
        if (skip >= sge.len) {
            skip -= sge.len;
            continue;
        }
        const std::uint32_t take = std::min(sge.len - skip, len - done);
        const PlaceStatus ps =
            memory_ ? memory_->place_local(qp.srq != nullptr ? qp.srq->pd : qp.attr.pd, sge.lkey, sge.addr == nullptr ? nullptr : sge.addr + skip,
                                           f.payload.subspan(done, take))
                    : PlaceStatus::ok;
        if (ps != PlaceStatus::ok) {
            // A receive's MR went away under it: the QP enters ERR with a
            // local protection error on its oldest receive not completed
            // (receives complete in order; that one cannot complete now) and
            // the rest flushed; the sender gets a remote operational error.
            drop(DropReason::remote_access);
            send_aeth_nak(qp, wire::AethSyndrome::nak_remote_op, psn);
            complete({.wr_id = qp.rq.front().wr_id, .qpn = qp.qpn, .status = WcStatus::loc_prot_err, .opcode = WcOpcode::recv});
            qp.rq.pop_front();
            enter_error(qp, WcStatus::wr_flush_err, now);
            return false;
        }
        done += take;
        skip = 0;
    }
    return true;
}

bool Engine::accept_read(Qp& qp, const wire::FrameView& f, TimeNs now) {
    // A READ request: the QP and the MR must allow remote reads, and the
    // requester stay within our max_dest_rd_atomic; refused ones are NAKed
    // as a WRITE would be (the requester's READ fails with the NAK's error).
    const std::uint32_t psn = f.bth.psn;
    const wire::RethHdr reth = f.reth();
    if (!(qp.attr.access_flags & kAccessRemoteRead)) {
        drop(DropReason::remote_access);
        send_aeth_nak(qp, wire::AethSyndrome::nak_invalid_request, psn);
        return false;
    }
    if (qp.rd_resp_unsent >= std::max<std::uint32_t>(1, qp.attr.max_dest_rd_atomic)) {
        drop(DropReason::bad_read);
        send_aeth_nak(qp, wire::AethSyndrome::nak_invalid_request, psn);
        return false;
    }
    if (reth.dma_len != 0) {  // IBTA: a zero-length READ checks no R_Key
        const std::uint8_t* src = nullptr;
        const PlaceStatus ps = memory_ != nullptr ? memory_->read_source(qp.attr.pd, reth.rkey, reth.va, reth.dma_len, src)
                                                  : PlaceStatus::no_access;
        if (ps != PlaceStatus::ok) {
            drop(DropReason::remote_access);
            send_aeth_nak(qp, wire::AethSyndrome::nak_remote_access, psn);
            return false;
        }
    }
    if (qp.state == QpState::rtr && !qp.rtr_responder) {
        // IBTA: a responder answers READs from RTR on. Our answers take PSNs
        // of our own direction: they start where the requester expects
        // them (its receiver's next PSN, which the request carries).
        qp.rtr_responder = true;
        qp.snd_una = qp.snd_nxt = f.imm().imm & kPsnMask;
        qp.cc = make_cc(qp.attr.cc, cfg_.planes, qp.attr.mtu_bytes, cfg_.ack_delay_ns);
        qp.credit = dynamic_cast<Credit*>(qp.cc.get());
        qp.last_progress_ns = now;
    }
    insert_ordered(qp.rd_in, psn,
                   PendingRead{.psn = psn, .rd_seq = f.meth().rqmsn, .va = reth.va, .rkey = reth.rkey, .len = reth.dma_len},
                   [](const PendingRead& r) { return r.psn; });
    ++qp.rd_resp_unsent;
    return true;
}

void Engine::answer_reads(Qp& qp, TimeNs now) {
    // A READ is answered once every PSN up to its request has arrived: it
    // then reads what every earlier WRITE and SEND of the requester wrote.
    const auto n = static_cast<std::uint32_t>(qp.sq.size());
    while (!qp.rd_in.empty() && psn_diff(qp.rd_in.front().psn, qp.rcv_cack) <= 0) {
        if (!qp.sends()) return;  // again at RTS (modify_qp)
        if (qp.rd_resp_queued >= kMaxRdAtomic) return;  // the send queue's room for responses is full: again as one retires
        ensure_sender(qp);
        const PendingRead r = qp.rd_in.front();
        qp.rd_in.pop_front();
        // The response goes ahead of our own messages not yet begun (only a
        // message already partly sent stays ahead): the requester's READ
        // should wait for our bytes in flight, not for our queue.
        std::uint32_t at = (qp.sq_head + qp.sq_count) % n;
        std::uint32_t waiting = qp.sq_unsegmented;  // unsegmented messages not begun
        if (waiting > 0 && qp.seg_offset > 0) --waiting;
        for (std::uint32_t k = 0; k < waiting; ++k) {
            const std::uint32_t from = (at + n - 1) % n;
            qp.sq[at] = std::move(qp.sq[from]);
            at = from;
        }
        SendMsg& m = qp.sq[at];
        m.req = SendRequest{};
        m.req.remote_addr = r.va;
        m.req.rkey = r.rkey;
        m.req.signaled = false;
        m.inline_copy.clear();
        m.response = true;
        m.length = r.len;
        m.rd_len = m.rd_placed = 0;
        m.rd_issued = m.rd_done = false;
        m.npkts = std::max<std::uint32_t>(1, (m.length + qp.attr.mtu_bytes - 1) / qp.attr.mtu_bytes);
        m.msn = qp.next_msn++;
        m.rqmsn = r.rd_seq;
        if (waiting == qp.sq_unsegmented) {
            // Nothing partly sent: the response is the next to segment.
            if (qp.sq_unsegmented == 0 && qp.resend.empty()) qp.paths.begin_burst(rng_);
            qp.seg_msg = at;
            qp.seg_offset = 0;
        }
        if (qp.credit != nullptr)
            qp.credit->on_demand(m.length, true, qp.inflight_bytes == 0 && !qp.has_tx_work());
        ++qp.sq_count;
        ++qp.sq_unsegmented;
        ++qp.rd_resp_queued;
        ++qp.stats.reads_answered;
        if (qp.snd_una == qp.snd_nxt && qp.sq_unsegmented == 1) qp.last_progress_ns = now;
        want_tx(qp);
    }
}

bool Engine::place_read_response(Qp& qp, const wire::FrameView& f, TimeNs now) {
    // A READ response packet goes into the READ its RQMSN names, at its
    // offset, scattered over the READ's SGEs.
    const wire::RethHdr reth = f.reth();
    const auto len = static_cast<std::uint32_t>(f.payload.size());
    const std::uint16_t seq = f.meth().rqmsn;
    std::size_t idx = 0;
    while (idx < qp.rd_slots.size() && qp.sq[qp.rd_slots[idx]].rqmsn != seq) ++idx;
    if (idx == qp.rd_slots.size()) {
        drop(DropReason::bad_read);  // no READ of ours is waiting for it
        return false;
    }
    SendMsg& m = qp.sq[qp.rd_slots[idx]];
    if (reth.rkey != 0 || reth.dma_len != m.rd_len || reth.va > reth.dma_len - len) {
        drop(DropReason::bad_read);  // not the READ's length, or past its end
        return false;
    }
    std::uint32_t skip = static_cast<std::uint32_t>(reth.va), done = 0;
    for (std::size_t i = 0; i < m.req.sge_count && done < len; ++i) {
        const SgePiece& sge = m.req.sges[i];
        if (skip >= sge.len) {
            skip -= sge.len;
            continue;
        }
        const std::uint32_t take = std::min(sge.len - skip, len - done);
        // The READ's destination was checked (LOCAL_WRITE) when posted; its MR
        // is checked again here, since it may have been deregistered since.
        auto* dst = const_cast<std::uint8_t*>(sge.addr);
        const PlaceStatus ps = memory_ ? memory_->place_local(qp.attr.pd, sge.lkey, dst == nullptr ? nullptr : dst + skip,
                                                             f.payload.subspan(done, take))
                                       : PlaceStatus::ok;
        if (ps != PlaceStatus::ok) {
            drop(DropReason::remote_access);
            enter_error(qp, WcStatus::loc_prot_err, now);
            return false;
        }
        done += take;
        skip = 0;
    }
    m.rd_placed += len;
    ++qp.stats.read_resp_pkts_placed;
    qp.last_progress_ns = now;  // the peer answers: progress for the retry budget
    if (m.rd_placed >= m.rd_len) {
        m.rd_done = true;
        qp.rd_slots.erase(idx);
        --qp.rd_outstanding;
        ++qp.stats.reads_completed;
        advance_una(qp, now);  // it completes in order once its request is acknowledged
        want_tx(qp);           // a READ held by max_rd_atomic may go
    }
    return true;
}

void Engine::deliver_imms(Qp& qp) {
    // A receive completes only when every PSN up to its message's last
    // packet — all of this message and of every earlier one — has been placed.
    while (!qp.imms.empty() && psn_diff(qp.imms.front().last_psn, qp.rcv_cack) <= 0) {
        if (!bind_receives(qp, 1)) {
            // Documented behaviour: the data is placed and acknowledged; the
            // completion waits for a receive to be posted.
            if (qp.srq != nullptr) qp.srq->imm_waiting = true;
            if (!qp.imms.front().counted_waiting) {
                qp.imms.front().counted_waiting = true;
                ++qp.stats.imm_waiting_for_recv;
            }
            return;
        }
        const PendingImm& im = qp.imms.front();
        const std::uint64_t wr_id = qp.rq.front().wr_id;
        qp.rq.pop_front();
        ++qp.rq_consumed;
        complete({.wr_id = wr_id,
                  .qpn = qp.qpn,
                  .status = WcStatus::success,
                  .opcode = im.send ? WcOpcode::recv : WcOpcode::recv_rdma_with_imm,
                  .has_imm = im.has_imm,
                  .solicited = im.solicited,
                  .byte_len = im.byte_len,
                  .imm_data = im.imm});
        ++qp.stats.recv_completions;
        if (im.send) ++qp.stats.send_msgs_received;
        qp.imms.pop_front();
    }
}

void Engine::note_ack(Qp& qp, const wire::FrameView& f, bool ack_now) {
    const bool ecn = f.ecn == 3;
    // The SACK echoes one packet (the trigger): the latest, unless an earlier
    // one of the same burst carried CE and this one did not — the echo then
    // still names the EV that saw congestion.
    if (ecn || !qp.ack_trigger_ecn || qp.ack_pending == 0) {
        qp.ack_trigger_psn = f.bth.psn;
        qp.ack_trigger_ev = f.ev;
        qp.ack_trigger_plane = rx_plane_;
        qp.ack_trigger_ts = f.has_tseth ? f.tseth().tx_timestamp : 0;
        qp.ack_trigger_ecn = ecn;
        qp.ack_trigger_has_int = rx_telemetry_ != nullptr && rx_telemetry_->hops != 0;
        if (qp.ack_trigger_has_int) qp.ack_trigger_int = *rx_telemetry_;
    }
    ++qp.ack_pending;
    qp.ack_due = qp.ack_due || ack_now || ecn || qp.ack_pending >= cfg_.ack_every_pkts;
    if (!qp.ack_queued) {
        qp.ack_queued = true;
        ack_list_.push_back(&qp);
    }
}

void Engine::on_data(Qp& qp, const wire::FrameView& f, TimeNs now) {
    (void)now;
    const std::uint32_t psn = f.bth.psn;
    const auto len = static_cast<std::uint32_t>(f.payload.size());
    const wire::RethHdr reth = f.reth();
    if (len > qp.attr.mtu_bytes || len > reth.dma_len) return drop(DropReason::bad_length);
    const std::int32_t d = psn_diff(psn, qp.rcv_cack);
    if (d <= 0 || (d <= static_cast<std::int32_t>(qp.rcv_window) && qp.rcv_bit(psn))) {
        // Recognised before any byte is written; the SACK it triggers repairs
        // a lost one. A retransmission of a packet we had means the sender's
        // loss reaction was spurious: say so (restore_cwnd).
        ++qp.stats.duplicates;
        drop(DropReason::duplicate);
        if (f.bth.rtx) qp.ack_restore_cwnd = true;
        note_ack(qp, f, true);
        return;
    }
    if (d > static_cast<std::int32_t>(qp.rcv_window)) {
        drop(DropReason::out_of_window);
        send_nack(qp, {.psn = psn,
                       .ev = f.ev,
                       .ts_echo = f.has_tseth ? f.tseth().tx_timestamp : std::uint16_t{0},
                       .reason = wire::NackReason::psn_oor_window});
        return;
    }
    const bool send = wire::is_send_opcode(f.bth.opcode);
    if (send) {
        if (!place_send(qp, f, now)) return;
    } else if (f.bth.opcode == wire::Opcode::read_req) {
        if (!accept_read(qp, f, now)) return;
    } else if (wire::is_read_response_opcode(f.bth.opcode)) {
        if (!place_read_response(qp, f, now)) return;
    } else {
        if (!(qp.attr.access_flags & kAccessRemoteWrite)) {
            drop(DropReason::remote_access);
            send_aeth_nak(qp, wire::AethSyndrome::nak_invalid_request, psn);
            return;
        }
        PlaceStatus ps = PlaceStatus::ok;
        if (memory_ && wire::is_first_of_message(f.bth.opcode) && reth.dma_len > len)
            ps = memory_->check(qp.attr.pd, reth.rkey, reth.va, reth.dma_len);
        if (memory_ && ps == PlaceStatus::ok) ps = memory_->place(qp.attr.pd, reth.rkey, reth.va, f.payload);
        if (ps != PlaceStatus::ok) {
            drop(DropReason::remote_access);
            send_aeth_nak(qp, wire::AethSyndrome::nak_remote_access, psn);
            return;
        }
    }
    qp.set_rcv_bit(psn, true);
    if (qp.rcv_ooo == 0 || psn_diff(psn, qp.rcv_highest) > 0) qp.rcv_highest = psn;
    ++qp.rcv_ooo;
    ++qp.stats.data_pkts_received;
    qp.stats.data_bytes_received += len;
    qp.rcvd_bytes += len;
    if (wire::is_last_of_message(f.bth.opcode) && (send || wire::carries_imm(f.bth.opcode))) {
        const bool imm = wire::carries_imm(f.bth.opcode);
        insert_ordered(qp.imms, psn,
                       PendingImm{.last_psn = psn,
                                  .imm = imm ? f.imm().imm : 0,
                                  .byte_len = reth.dma_len,
                                  .send = send,
                                  .has_imm = imm,
                                  .solicited = f.bth.solicited},
                       [](const PendingImm& p) { return p.last_psn; });
    }
    if (wire::is_last_of_message(f.bth.opcode))
        insert_ordered(qp.msg_ends, psn, psn, [](std::uint32_t p) { return p; });
    // Advance the cumulative PSN over the run of received bits after it.
    for (;;) {
        const std::uint32_t next = psn_add(qp.rcv_cack, 1);
        const auto run = static_cast<std::uint32_t>(std::countr_one(qp.rcv_bits64(next)));
        if (run == 0) break;
        qp.clear_rcv_bits(next, run);
        qp.rcv_cack = psn_add(qp.rcv_cack, run);
        qp.rcv_ooo -= std::min(qp.rcv_ooo, run);
        if (run < 64) break;
    }
    // IB MSN: messages whose every packet is now below the cumulative PSN.
    while (!qp.msg_ends.empty() && psn_diff(qp.msg_ends.front(), qp.rcv_cack) <= 0) {
        qp.msg_ends.pop_front();
        qp.rcv_msn = (qp.rcv_msn + 1) & kMsnMask;
    }
    deliver_imms(qp);
    if (!qp.rd_in.empty()) answer_reads(qp, now);
    if (f.ecn == 3) ++qp.stats.ecn_received;
    note_ack(qp, f, f.bth.ack_req || f.bth.rtx);
}

void Engine::on_trimmed(Qp& qp, const wire::FrameView& f, TimeNs) {
    ++qp.stats.trims_received;
    drop(DropReason::trimmed);
    const std::uint32_t psn = f.bth.psn;
    const std::int32_t d = psn_diff(psn, qp.rcv_cack);
    if (d > static_cast<std::int32_t>(qp.rcv_window)) return;
    if (d <= 0 || qp.rcv_bit(psn)) {
        // A trimmed copy of a packet that made it: a SACK says so (the
        // sender has nothing to resend), as UET answers it.
        note_ack(qp, f, true);
        return;
    }
    send_nack(qp, {.psn = psn,
                   .ev = f.ev,
                   .ts_echo = f.has_tseth ? f.tseth().tx_timestamp : std::uint16_t{0},
                   .reason = f.trim == wire::TrimKind::dscp_last_hop ? wire::NackReason::trimmed_lasthop
                                                                      : wire::NackReason::trimmed});
}

void Engine::on_probe(Qp& qp, const wire::FrameView& f, std::uint8_t plane, TimeNs) {
    const auto peth = f.ext_header<wire::PethHdr>();
    if (peth.dst_conn_id != qp.conn_id || peth.src_conn_id != qp.attr.dest_conn_id)
        return drop(DropReason::bad_conn_id);
    send_probe_answer(qp, plane, f.ev, peth.probe_id);
}

Qp* Engine::qp_of_peer(const std::uint8_t* addr) noexcept {
    for (Qp* qp : live_)
        if (qp->state != QpState::reset && std::memcmp(qp->attr.peer_addr.data(), addr, 16) == 0) return qp;
    return nullptr;
}

void Engine::send_ep_response(Qp& qp, std::uint8_t plane, std::uint16_t request_id, const wire::ErthHdr& req) {
    wire::GatherFrame* g = ctrl_slot();
    if (g == nullptr) return;
    wire::FrameSpec s = qp.ctrl_spec;  // a copy: only the addressing of the QP's control frames is shared
    const std::uint32_t ev = reverse_ev(qp, plane);
    s.eth.src = cfg_.local_macs[plane];
    s.eth.dst = qp.attr.peer_macs[plane];
    s.ev = ev;
    if (cfg_.mode == wire::FrameMode::srv6) s.outer.dst = qp.usid_template.apply(ev);
    s.bth.opcode = wire::Opcode::ep_response;
    s.bth.dest_qp = wire::kEndpointQpn;
    s.bth.psn = request_id;
    s.eeth = {req.op, req.tx_timestamp};
    g->plane = plane;
    finish_ctrl(*g, s);
    ++stats_.ep_responses_sent;
}

void Engine::on_endpoint(const wire::FrameView& f, std::uint8_t plane, bool no_reply, TimeNs now) {
    if (f.bth.dest_qp != wire::kEndpointQpn) return drop(DropReason::unexpected);
    // Only peers we have a connection with are answered or believed.
    Qp* qp = qp_of_peer(f.ip_src());
    if (qp == nullptr) return drop(DropReason::wrong_source);
    const auto request_id = static_cast<std::uint16_t>(f.bth.psn & 0xFFFF);
    if (f.bth.opcode == wire::Opcode::ep_response) {
        const auto eeth = f.ext_header<wire::EethHdr>();
        for (std::size_t i = 0; i < ep_pending_.size(); ++i) {
            const EpRequest r = ep_pending_[i];
            Qp* asker = qp_by_num(r.qpn);
            if (r.id != request_id || r.op != eeth.op || asker == nullptr || !f.ip_src_is(asker->attr.peer_addr))
                continue;
            ++stats_.ep_responses_received;
            if (r.op == wire::ErthOp::ev_probe) {
                ++asker->stats.ev_probe_answers;
                asker->stats.last_ev_probe_rtt_ns = now - r.sent_ns;
            }
            ep_pending_.erase(i);
            return;
        }
        return drop(DropReason::unexpected);  // no request of ours
    }
    const auto erth = f.ext_header<wire::ErthHdr>();
    switch (erth.op) {
        case wire::ErthOp::port_status_update: {
            ++stats_.port_status_received;
            ++planes_epoch_;
            const std::uint32_t up = wire::mrc::planes_from_port_mask(erth.port_status_mask);
            const wire::Ipv6Addr src = f.ip_src_addr();
            bool found = false;
            for (auto& p : peer_ports_) {
                if (p.addr != src) continue;
                p.up_mask = up;
                found = true;
            }
            if (!found) peer_ports_.push_back({src, up});
            path_event({.at_ns = now, .kind = PathEventKind::peer_ports, .qpn = qp->qpn, .count = up});
            break;
        }
        case wire::ErthOp::ev_probe: break;  // nothing to do but answer
        case wire::ErthOp::path_alarm:
            // A peer retired a (plane, T1) on strong evidence. Our QPs leave
            // it for every destination: the peer's path through it shares
            // with ours the T1 and our link to it (its downlink is our
            // uplink); if only the peer's own uplink failed, our EVs come
            // back with the group's probes. Believed only for a (plane, T1)
            // of our fabric, and never passed on (no alarm of ours comes
            // from it).
            ++stats_.path_alarms_received;
            if (cfg_.peer_path_alarms && cfg_.path_alarm_ns != 0 && cfg_.mode == wire::FrameMode::srv6 &&
                erth.alarm_plane < cfg_.planes && erth.alarm_t1 < cfg_.fabric.t1_per_plane) {
                ++stats_.path_alarms_believed;
                path_alarms_.raise(erth.alarm_plane, erth.alarm_t1, PathAlarms::kAnyT0, now);
            }
            break;
        default: return drop(DropReason::unexpected);  // an op we do not know is never a port-status update
    }
    if (no_reply) {
        ++stats_.ep_requests_observed;  // another engine of this device answers it
        return;
    }
    send_ep_response(*qp, plane, request_id, erth);
}

void Engine::send_port_status(TimeNs now) {
    // One update per peer we have a connection with, on every plane that is up.
    std::vector<const Qp*> seen;
    for (const Qp* qp : live_) {
        if (qp->state != QpState::rtr && qp->state != QpState::rts) continue;
        if (std::any_of(seen.begin(), seen.end(), [&](const Qp* o) { return o->attr.peer_addr == qp->attr.peer_addr; }))
            continue;
        seen.push_back(qp);
        for (std::uint32_t plane = 0; plane < cfg_.planes; ++plane) {
            if (!(local_up_ & (1u << plane))) continue;
            const auto p = static_cast<std::uint8_t>(plane);
            const wire::ErthHdr erth{.op = wire::ErthOp::port_status_update,
                                     .port_status_mask = wire::mrc::port_mask_from_planes(local_up_),
                                     .tx_timestamp = tseth_ticks(now),
                                     .ftype = wire::mrc::kFtypeTransmitTimestamp};
            if (!send_ep_request(*qp, p, reverse_ev(*qp, p), erth, now)) return;
            ++stats_.port_status_sent;
        }
    }
}

}  // namespace omrc::core
