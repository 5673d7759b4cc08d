// SPDX-License-Identifier: BSD-3-Clause
// Engine, sender half: segmentation, the send gates (window, credit), path
// choice, data frame building, probes. What comes back (SACKs, NACKs, NAKs)
// is engine_sack.cpp; loss detection engine_loss.cpp; the sender's timers
// engine_timers.cpp; retirements and path alarms engine_path_alarms.cpp.
#include <algorithm>
#include <cassert>
#include <cstring>

#include "core/engine.hpp"
#include "core/psn.hpp"
#include "routing/fabric.hpp"
#include "wire/icrc.hpp"

namespace omrc::core {

bool Engine::can_send_more(const Qp& qp, std::uint64_t cwnd) const noexcept {
    std::uint32_t len = 0;
    if (!qp.resend.empty()) {
        len = qp.pkts[qp.resend.front() & qp.pkt_mask].len;
    } else {
        if (qp.sq_unsegmented == 0) return false;
        if (psn_diff(qp.snd_nxt, qp.snd_una) >= static_cast<std::int32_t>(qp.window_pkts)) return false;
        if (!read_gate_open(qp)) return false;
        len = std::min(qp.attr.mtu_bytes, qp.sq[qp.seg_msg].length - qp.seg_offset);
    }
    return may_send(qp, len, cwnd);
}

bool Engine::read_gate_open(const Qp& qp) noexcept {
    // IBTA max_rd_atomic: a READ whose request would exceed it waits, and
    // everything posted after it with it (the send queue is in order).
    // IBV_SEND_FENCE: nothing of the WR before every earlier READ is done.
    const SendMsg& m = qp.sq[qp.seg_msg];
    if (m.req.fence && qp.rd_outstanding > 0 && qp.seg_offset == 0) return false;
    return !m.req.is_read || qp.rd_outstanding < std::max<std::uint32_t>(1, qp.attr.max_rd_atomic);
}

bool Engine::response_source(Qp& qp, const SendMsg& m, std::uint32_t offset, std::uint32_t len,
                             const std::uint8_t*& src, TimeNs now) {
    // Asked again for every packet built: our MR may have been deregistered
    // since the request was accepted. Then nothing more of ours can be
    // trusted to the peer: the QP enters ERR (the requester's READ ends by
    // its retry budget).
    src = nullptr;
    if (len == 0 || memory_ == nullptr) return true;
    if (memory_->read_source(qp.attr.pd, m.req.rkey, m.req.remote_addr + offset, len, src) == PlaceStatus::ok)
        return true;
    ++qp.stats.read_source_lost;
    enter_error(qp, WcStatus::wr_flush_err, now);
    return false;
}

bool Engine::may_send(const Qp& qp, std::uint32_t len, std::uint64_t cwnd) noexcept {
    // The congestion window (a packet always goes when nothing is in the
    // pipe), and in credit mode the credit.
    if (qp.credit != nullptr && !qp.credit->may_send(len, qp.inflight_bytes == 0)) return false;
    const std::uint64_t pipe = qp.pipe_bytes();
    return pipe == 0 || pipe + len <= cwnd;
}

int Engine::select_slot(Qp& qp, std::uint32_t planes, TimeNs now) {
    if (qp.paths.policy() == PathPolicy::reps) {
        // The rotation gives the plane; REPS the EV (recycled or explored).
        // A slot whose EV changes hands what it tracked to the window sweep.
        return qp.paths.reps_choose(qp.paths.select(planes, rng_), now, rng_,
                                    [&](std::size_t slot) { untrack_slot(qp, slot); });
    }
    if (cfg_.stale_path_packets == 0) return qp.paths.select(planes, rng_);
    // Stale: not acknowledged for two of the slowest round trips, and never
    // sooner than the EV timeout's floor (an endpoint's own stalls last that
    // long; docs/CONFIG.md). EngineConfig::stale_path_packets.
    const TimeNs stale_after = std::max<TimeNs>(2 * qp.rtt.all().max_ns, cfg_.min_ev_timeout_ns);
    return qp.paths.select(planes, rng_, now, stale_after, std::min<std::uint32_t>(cfg_.stale_path_packets, 255));
}

bool Engine::send_one_data(Qp& qp, wire::GatherFrame& out, TimeNs now) {
    // An RNR wait holds every data packet (IBTA: the requester pauses), new or resent.
    if (qp.rnr_waiting(now)) return false;
    // Another QP's alarm first: this QP's packets must not follow it into a dead T1.
    if (qp.alarms_seen != path_alarms_.seq()) apply_path_alarms(qp, now);
    const std::uint32_t planes = usable_planes(qp);
    const std::uint64_t cwnd = qp.cc ? qp.cc->window_bytes() : UINT64_MAX;
    // Retransmissions first, within the peer's receive window (a PSN beyond
    // it would only be NACKed again).
    for (std::size_t tries = qp.resend.size(); tries > 0 && !qp.resend.empty(); --tries) {
        const std::uint32_t psn = qp.resend.front();
        TxPkt& p = qp.pkt(psn);
        if (p.acked || !p.lost || psn_diff(psn, qp.snd_una) < 0 || psn_diff(psn, qp.snd_nxt) >= 0) {
            qp.resend.pop_front();
            if (!p.acked && psn_diff(psn, qp.snd_una) >= 0) p.lost = false;
            continue;
        }
        if (psn_diff(psn, qp.snd_una) >= static_cast<std::int32_t>(qp.window_pkts)) {
            qp.resend.pop_front();
            qp.resend.push_back(psn);  // later, once the window reaches it
            continue;
        }
        if (!may_send(qp, p.len, cwnd)) return false;
        const int slot = select_slot(qp, planes, now);
        if (slot < 0) return false;
        const SendMsg& rm = qp.sq[p.msg_slot];
        const std::uint8_t* src = nullptr;
        if (rm.response && !response_source(qp, rm, p.offset, p.len, src, now)) return false;
        qp.resend.pop_front();
        p.lost = false;
        p.ev_slot = static_cast<std::uint16_t>(slot);
        build_data_frame(qp, psn, p, true, out, now, src);
        return true;
    }
    if (qp.sq_unsegmented == 0) return false;
    if (psn_diff(qp.snd_nxt, qp.snd_una) >= static_cast<std::int32_t>(qp.window_pkts)) return false;
    if (!read_gate_open(qp)) return false;
    SendMsg& m = qp.sq[qp.seg_msg];
    const std::uint32_t len = std::min(qp.attr.mtu_bytes, m.length - qp.seg_offset);
    if (!may_send(qp, len, cwnd)) return false;
    const int slot = select_slot(qp, planes, now);
    if (slot < 0) return false;
    const std::uint8_t* src = nullptr;
    if (m.response && !response_source(qp, m, qp.seg_offset, len, src, now)) return false;
    if (m.req.is_read && !m.rd_issued) {
        m.rd_issued = true;
        ++qp.rd_outstanding;
        qp.rd_slots.push_back(qp.seg_msg);
    }
    const std::uint32_t psn = qp.snd_nxt;
    if (qp.seg_offset == 0) m.first_psn = psn;
    TxPkt& p = qp.pkt(psn);
    p = TxPkt{};
    p.msg_slot = qp.seg_msg;
    p.offset = qp.seg_offset;
    p.len = len;
    p.ev_slot = static_cast<std::uint16_t>(slot);
    qp.seg_offset += len;
    if (qp.seg_offset >= m.length) {
        qp.seg_msg = (qp.seg_msg + 1) % static_cast<std::uint32_t>(qp.sq.size());
        qp.seg_offset = 0;
        --qp.sq_unsegmented;
        if (m.response) {
            // The whole response has left once: the responder's READ resource is free again.
            assert(qp.rd_resp_unsent > 0 && "rd_resp_unsent counts accepted READs whose response has not left");
            --qp.rd_resp_unsent;
        }
    }
    if (qp.snd_una == qp.snd_nxt) qp.last_progress_ns = now;  // the clock of the retry budget starts
    qp.snd_nxt = psn_add(qp.snd_nxt, 1);
    assert(psn_diff(qp.snd_nxt, qp.snd_una) > 0 &&
           static_cast<std::uint32_t>(psn_diff(qp.snd_nxt, qp.snd_una)) <= qp.pkt_mask + 1 &&
           "snd_una < snd_nxt ≤ snd_una + the transmit ring");
    build_data_frame(qp, psn, p, false, out, now, src);
    return true;
}

void Engine::build_data_frame(Qp& qp, std::uint32_t psn, TxPkt& p, bool retransmit, wire::GatherFrame& out,
                              TimeNs now, const std::uint8_t* response_src) {
    const SendMsg& m = qp.sq[p.msg_slot];
    EvSlot& slot = qp.paths.slot(p.ev_slot);
    const std::uint8_t plane = slot.plane;
    out.telemetry = nullptr;  // the driver's slot may hold an earlier SACK's
    wire::CrthHdr crth;
    if (qp.credit != nullptr) {
        // Credit mode: the packet is paid (unscheduled bytes first) and
        // carries the QP's request in a CRTH (docs/PROTOCOL.md §11.8; the
        // counts' low 32 bits).
        crth.unscheduled = static_cast<std::uint16_t>(qp.credit->on_sent(p.len, qp.inflight_bytes == 0));
        crth.request = static_cast<std::uint32_t>(qp.credit->request_bytes());
        crth.used = static_cast<std::uint32_t>(qp.credit->sent_scheduled_bytes());
    }

    // Sender state first: whether this packet must ask for an acknowledgement
    // depends on what the QP can send after it.
    p.tx_seq = ++qp.tx_seq;
    p.sent_ns = now;
    p.ev = slot.ev;
    if (p.tx_count < 255) ++p.tx_count;
    qp.inflight_bytes += p.len;
    const bool tracked = qp.paths.track(p.ev_slot, psn, p.tx_seq);
    if (tracked != !p.untracked) {
        p.untracked = !tracked;
        if (tracked) {
            assert(qp.untracked > 0 && "untracked counts packets with Qp::TxPkt::untracked set");
            --qp.untracked;
        } else {
            ++qp.untracked;
        }
    }
    ++slot.counters.sent;
    PlaneCounters& pc = qp.plane_counters[p.plane()];
    if (retransmit) {
        ++qp.stats.data_pkts_resent;
        ++pc.data_resent;
    } else {
        ++qp.stats.data_pkts_sent;
        ++pc.data_sent;
        pc.data_bytes_sent += p.len;
        qp.stats.data_bytes_sent += p.len;
    }
    if (const TimeNs t = now + ev_timeout(qp); t < qp.next_scan_ns) {
        qp.next_scan_ns = t;
        arm_timer(qp);
    }
    // AckReq when the sender cannot go on without an acknowledgement (its
    // queue is empty or its windows are full) and on every retransmission;
    // otherwise the receiver's coalescing count and delay bound apply.
    const bool ack_req = retransmit || !can_send_more(qp, qp.cc ? qp.cc->window_bytes() : UINT64_MAX);

    wire::DataFields fields;
    fields.macs = qp.plane_macs[plane].data();
    fields.ev = slot.ev;
    wire::Ipv6Addr outer_dst;
    if (cfg_.mode == wire::FrameMode::srv6) {
        outer_dst = qp.usid_template.apply(slot.ev);
        fields.outer_dst = &outer_dst;
    }
    fields.opcode = m.opcode_at(p.offset, p.len);
    fields.ack_req = ack_req;
    fields.rtx = retransmit;
    fields.psn = psn;
    fields.payload_len = p.len;
    fields.meth = {m.rqmsn, m.msn};
    fields.tx_timestamp = tseth_ticks(now);
    // A SEND's and a READ response's RETH: VA is the packet's byte offset in
    // the message, R_Key 0 (docs/PROTOCOL.md §4.4); the receiver places it
    // into the receive (the READ) its RQMSN names. A READ request's names
    // the peer's memory and the bytes to read.
    if (m.req.is_read) fields.reth = wire::RethHdr{m.req.remote_addr, m.req.rkey, m.rd_len};
    else if (m.req.is_send || m.response) fields.reth = wire::RethHdr{p.offset, 0, m.length};
    else fields.reth = wire::RethHdr{m.req.remote_addr + p.offset, m.req.rkey, m.length};
    fields.solicited = m.req.solicited && wire::is_last_of_message(fields.opcode);
    // A READ request: where our receiver expects the responder's PSNs (a
    // responder still in RTR starts there).
    fields.imm = m.req.is_read ? psn_add(qp.rcv_cack, 1) : m.req.imm_data;
    fields.crth = qp.credit != nullptr ? &crth : nullptr;
    const std::size_t hlen = qp.data_tmpl.write(out.header.data(), fields);
    out.header_len = static_cast<std::uint16_t>(hlen);
    out.plane = plane;
    // Gather the payload straight from the SGEs covering [offset, offset+len).
    out.segment_count = 0;
    out.payload_in_engine_memory = m.req.is_inline;
    std::uint32_t skip = p.offset, want = p.len;
    if (m.response) {
        // A READ response: from our MR (response_source checked the range just now).
        if (want > 0) out.segments[out.segment_count++] = {response_src, want};
        want = 0;
    }
    for (std::size_t i = 0; i < m.req.sge_count && want > 0 && !m.req.is_read; ++i) {
        const SgePiece& sge = m.req.sges[i];
        if (skip >= sge.len) {
            skip -= sge.len;
            continue;
        }
        const std::uint32_t take = std::min(sge.len - skip, want);
        out.segments[out.segment_count++] = {sge.addr + skip, take};
        skip = 0;
        want -= take;
    }
    const std::size_t pad = (4 - p.len % 4) % 4;
    std::memset(out.tail.data(), 0, pad);
    std::uint32_t crc = 0;
    if (cfg_.compute_icrc) {
        std::array<std::span<const std::uint8_t>, wire::GatherFrame::kMaxSegments> pieces;
        for (std::size_t i = 0; i < out.segment_count; ++i) pieces[i] = {out.segments[i].data, out.segments[i].len};
        const std::size_t ip_off = qp.data_tmpl.icrc_offset();
        crc = wire::icrc_compute_pieces(std::span(out.header).subspan(ip_off, hlen - ip_off),
                                        std::span(pieces).first(out.segment_count), pad);
    }
    wire::store_le32(out.tail.data() + pad, crc);
    out.tail_len = static_cast<std::uint8_t>(pad + 4);
    // Never fails for a data frame: modify_qp checked that its headers fit sealed.
    if (qp.sec && !seal_frame(qp, out)) {
        assert(false && "a data frame of an encrypted QP always seals (modify_qp checked its headers fit)");
        ++stats_.psp_seal_failures;
        // Never the payload or the extension headers (RETH: address, rkey) in
        // the clear: what is left is a truncated frame the peer drops (a loss).
        out.segment_count = 0;
        out.tail_len = 0;
        if (out.header_len > wire::EthHdr::kSize + wire::Ipv6Hdr::kSize)
            std::memset(out.header.data() + wire::EthHdr::kSize + wire::Ipv6Hdr::kSize, 0,
                        out.header_len - wire::EthHdr::kSize - wire::Ipv6Hdr::kSize);
    }
}

void Engine::send_probe(Qp& qp, const PathSet::ProbeDue& due, TimeNs now) {
    const auto probe_id = static_cast<std::uint16_t>(rng_.next_u32() | 1);  // never 0 (= none outstanding)
    qp.paths.probe_sent(due, probe_id, now);
    wire::GatherFrame* g = ctrl_slot();
    if (g == nullptr) return;
    // In the control class (docs/PROTOCOL.md §10: one public builder sends
    // probes trimmable; behind data queues their answers come late and the
    // simulator's T1-loss figure loses more frames on the dead path).
    wire::FrameSpec& s = address_ctrl(qp, due.plane, due.ev, *g);
    s.bth.opcode = wire::Opcode::probe;
    s.bth.psn = 0;  // a probe consumes no PSN
    s.peth = {.probe_id = probe_id,
              .src_conn_id = qp.conn_id,
              .dst_conn_id = qp.attr.dest_conn_id,
              .tx_timestamp = tseth_ticks(now),
              .ftype = wire::mrc::kFtypeTransmitTimestamp};
    finish_ctrl(*g, s);
    ++qp.stats.probes_sent;
    path_event({.at_ns = now, .kind = PathEventKind::probe_sent, .plane = due.plane,
                .group = qp.paths.group_of(due.ev), .qpn = qp.qpn, .ev = due.ev});
}

SubmitResult Engine::probe_ev(const CmdProbeEv& c, TimeNs now) {
    Qp* qp = qp_by_num(c.qpn);
    if (qp == nullptr || (qp->state != QpState::rtr && qp->state != QpState::rts)) return {EINVAL};
    const std::uint32_t plane = routing::ev_plane(c.ev);
    if (plane >= cfg_.planes) return {EINVAL};
    const wire::ErthHdr erth{
        .op = wire::ErthOp::ev_probe, .tx_timestamp = tseth_ticks(now), .ftype = wire::mrc::kFtypeTransmitTimestamp};
    if (!send_ep_request(*qp, static_cast<std::uint8_t>(plane), c.ev, erth, now)) return {ENOBUFS};
    ++qp->stats.ev_probes_sent;
    return {kOk};
}

}  // namespace omrc::core
