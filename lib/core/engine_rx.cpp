// SPDX-License-Identifier: BSD-3-Clause
// Engine, receiver half: duplicate detection, bounds-checked direct
// placement, cumulative PSN and bitmap, WRITE_WITH_IMM ordering, the ACK
// policy, NACKs for trims, probe answers and endpoint messages.
#include <algorithm>
#include <bit>

#include "core/engine.hpp"
#include "core/psn.hpp"
#include "routing/fabric.hpp"
#include "wire/icrc.hpp"

namespace omrc::core {

wire::GatherFrame* Engine::ctrl_slot() {
    if (ctrl_.size() >= kCtrlQueueLimit) {
        ++stats_.ctrl_queue_overflow;
        return nullptr;
    }
    return &ctrl_.emplace_back();
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

namespace {
/// The reverse EV of a QP on a plane: fixed per (QP, plane), so SACKs of one
/// plane follow one path.
std::uint32_t reverse_ev(const Qp& qp, std::uint8_t plane) noexcept {
    return routing::make_ev(plane, qp.qpn & 0xFFF, static_cast<std::uint16_t>(qp.conn_id ^ 0x5A5A));
}
}  // namespace

wire::FrameSpec& Engine::address_ctrl(Qp& qp, std::uint8_t plane, std::uint32_t ev, wire::GatherFrame& g) {
    wire::FrameSpec& s = qp.ctrl_spec;
    s.eth.src = cfg_.local_macs[plane];
    s.eth.dst = qp.attr.peer_macs[plane];
    s.ev = ev;
    if (cfg_.mode == wire::FrameMode::srv6) s.outer.dst = qp.usid_template.apply(ev);
    g.plane = plane;
    return s;
}

void Engine::send_sack(Qp& qp, TimeNs now, bool probe_answer, std::uint32_t probe_ev, std::uint32_t probe_id) {
    (void)now;
    if (!probe_answer) {
        qp.ack_pending = 0;
        qp.ack_due = false;
        qp.ack_deadline = kNever;  // a timer entry left behind is stale and skipped
    }
    wire::GatherFrame* g = ctrl_slot();
    if (g == nullptr) return;
    const std::uint8_t plane = reverse_plane(qp);
    wire::FrameSpec& s = address_ctrl(qp, plane, reverse_ev(qp, plane), *g);
    s.bth.opcode = wire::Opcode::sack;
    s.bth.psn = psn_add(qp.rcv_cack, 1);
    wire::SethHdr& h = s.seth;
    h = {};
    h.src_conn_id = qp.conn_id;
    h.dst_conn_id = qp.attr.dest_conn_id;
    h.cack_psn = qp.rcv_cack;
    h.cc_type = qp.attr.cc.algorithm == CcAlgorithm::nscc ? 1 : 0;
    h.mpr = static_cast<std::uint8_t>(qp.attr.mpr);
    if (probe_answer) {
        h.flags = wire::kSackFlagProbeResponse;
        h.ev = probe_ev;
        h.ack_psn_offset = static_cast<std::int16_t>(probe_id & 0xFFFF);
    } else {
        h.ev = qp.ack_trigger_ev;
        const std::int32_t off = psn_diff(qp.ack_trigger_psn, qp.rcv_cack);
        h.ack_psn_offset = static_cast<std::int16_t>(std::clamp(off, -32768, 32767));
        if (qp.ack_trigger_ecn) {
            h.flags |= wire::kSackFlagEcnEcho;
            h.skip = wire::SackSkip::skip_once;
        }
    }
    // The bitmap starts right after cack, or late enough to cover the
    // triggering packet when it is more than 64 PSNs ahead.
    // The bitmap normally starts right after cack: that is where holes block
    // the sender's window, and the sender infers losses only from such
    // bitmaps. When the triggering packet is more than 64 PSNs ahead, every
    // other SACK covers it instead, so its EV is acknowledged promptly too.
    std::int32_t start = 1;
    const std::int32_t trig = psn_diff(qp.ack_trigger_psn, qp.rcv_cack);
    if (!probe_answer && trig > 64) {
        qp.sack_near_trigger = !qp.sack_near_trigger;
        if (qp.sack_near_trigger) start = trig - 63;
    }
    h.sack_offset = static_cast<std::int16_t>(start);
    // Bit k of the window words is PSN base + k; the wire puts base at bit 63.
    const std::uint64_t bm = wire::reverse_bits64(qp.rcv_bits64(psn_add(qp.rcv_cack, start)));
    h.bitmap = bm;
    s.cc = {};
    s.cc.ts_echo = probe_answer ? 0 : qp.ack_trigger_ts;
    s.cc.rcvd_bytes = static_cast<std::uint32_t>((qp.rcvd_bytes / wire::CcStateHdr::kRcvdBytesUnit) & 0xFFFFFF);
    finish_ctrl(*g, s);
    ++qp.stats.sacks_sent;
}

void Engine::send_nack(Qp& qp, const NackFields& n) {
    wire::GatherFrame* g = ctrl_slot();
    if (g == nullptr) return;
    const std::uint8_t plane = reverse_plane(qp);
    wire::FrameSpec& s = address_ctrl(qp, plane, reverse_ev(qp, plane), *g);
    s.bth.opcode = wire::Opcode::nack;
    s.bth.psn = n.psn;
    s.neth = {.reason = static_cast<std::uint8_t>(n.reason),
              .ts_echo = n.ts_echo,
              .ev = n.ev,
              .src_conn_id = qp.conn_id,
              .dst_conn_id = qp.attr.dest_conn_id,
              .nack_psn = n.psn,
              .cack_psn = qp.rcv_cack};
    finish_ctrl(*g, s);
    ++qp.stats.nacks_sent;
}

void Engine::send_aeth_nak(Qp& qp, wire::AethSyndrome syndrome, std::uint32_t msn) {
    wire::GatherFrame* g = ctrl_slot();
    if (g == nullptr) return;
    const std::uint8_t plane = reverse_plane(qp);
    wire::FrameSpec& s = address_ctrl(qp, plane, reverse_ev(qp, plane), *g);
    s.bth.opcode = wire::Opcode::ack;
    s.bth.psn = psn_add(qp.rcv_cack, 1);
    s.aeth = {static_cast<std::uint8_t>(syndrome), msn & 0xFFFFFF};
    finish_ctrl(*g, s);
    ++qp.stats.naks_sent;
}

void Engine::deliver_imms(Qp& qp) {
    // A WRITE_WITH_IMM completes only when every PSN up to its last packet —
    // all of this message and of every earlier one — has been placed.
    while (!qp.imms.empty() && psn_diff(qp.imms.front().last_psn, qp.rcv_cack) <= 0) {
        if (qp.rq.empty()) {
            // Documented behaviour: the data is placed and acknowledged; the
            // completion waits for a receive to be posted.
            return;
        }
        const PendingImm& im = qp.imms.front();
        const RecvRequest r = qp.rq.front();
        qp.rq.pop_front();
        complete({.wr_id = r.wr_id,
                  .qpn = qp.qpn,
                  .status = WcStatus::success,
                  .opcode = WcOpcode::recv_rdma_with_imm,
                  .has_imm = true,
                  .byte_len = im.byte_len,
                  .imm_data = im.imm});
        ++qp.stats.recv_completions;
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
        qp.ack_trigger_ts = f.has_tseth ? f.tseth().tx_timestamp : 0;
        qp.ack_trigger_ecn = ecn;
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
        // Recognised before any byte is written; the SACK it triggers repairs a lost one.
        ++qp.stats.duplicates;
        drop(DropReason::duplicate);
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
    if (!(qp.attr.access_flags & kAccessRemoteWrite)) {
        drop(DropReason::remote_access);
        send_aeth_nak(qp, wire::AethSyndrome::nak_invalid_request, f.meth().msn);
        return;
    }
    PlaceStatus ps = PlaceStatus::ok;
    if (memory_ && wire::is_first_of_message(f.bth.opcode) && reth.dma_len > len)
        ps = memory_->check(qp.attr.pd, reth.rkey, reth.va, reth.dma_len);
    if (memory_ && ps == PlaceStatus::ok) ps = memory_->place(qp.attr.pd, reth.rkey, reth.va, f.payload);
    if (ps != PlaceStatus::ok) {
        drop(DropReason::remote_access);
        send_aeth_nak(qp, wire::AethSyndrome::nak_remote_access, f.meth().msn);
        return;
    }
    qp.set_rcv_bit(psn, true);
    ++qp.stats.data_pkts_received;
    qp.stats.data_bytes_received += len;
    qp.rcvd_bytes += len;
    if (wire::carries_imm(f.bth.opcode)) {
        // Kept in last_psn order; nearly always appended at the back.
        std::size_t at = qp.imms.size();
        while (at > 0 && psn_diff(qp.imms[at - 1].last_psn, psn) > 0) --at;
        qp.imms.insert(at, PendingImm{psn, f.imm().imm, reth.dma_len});
    }
    // Advance the cumulative PSN over the run of received bits after it.
    for (;;) {
        const std::uint32_t next = psn_add(qp.rcv_cack, 1);
        const auto run = static_cast<std::uint32_t>(std::countr_one(qp.rcv_bits64(next)));
        if (run == 0) break;
        qp.clear_rcv_bits(next, run);
        qp.rcv_cack = psn_add(qp.rcv_cack, run);
        if (run < 64) break;
    }
    deliver_imms(qp);
    if (f.ecn == 3) ++qp.stats.ecn_received;
    note_ack(qp, f, f.bth.ack_req || f.bth.rtx);
}

void Engine::on_trimmed(Qp& qp, const wire::FrameView& f, TimeNs) {
    ++qp.stats.trims_received;
    drop(DropReason::trimmed);
    const std::uint32_t psn = f.bth.psn;
    const std::int32_t d = psn_diff(psn, qp.rcv_cack);
    if (d <= 0 || d > static_cast<std::int32_t>(qp.rcv_window) || qp.rcv_bit(psn)) return;
    send_nack(qp, {.psn = psn,
                   .ev = f.ev,
                   .ts_echo = f.has_tseth ? f.tseth().tx_timestamp : std::uint16_t{0},
                   .reason = f.trim == wire::TrimKind::dscp_last_hop ? wire::NackReason::trimmed_lasthop
                                                                      : wire::NackReason::trimmed});
}

void Engine::on_probe(Qp& qp, const wire::FrameView& f, TimeNs now) {
    const auto peth = f.ext_header<wire::PethHdr>();
    if (peth.dst_conn_id != qp.conn_id || peth.src_conn_id != qp.attr.dest_conn_id)
        return drop(DropReason::bad_conn_id);
    send_sack(qp, now, true, peth.ev, peth.probe_id);
}

void Engine::on_endpoint(const wire::FrameView& f, TimeNs) {
    if (f.bth.dest_qp != wire::kEndpointQpn) return drop(DropReason::unexpected);
    const auto erth = f.ext_header<wire::ErthHdr>();
    if (f.bth.opcode != wire::Opcode::ep_request || erth.op != wire::ErthOp::port_status_update)
        return drop(DropReason::unexpected);
    // Only peers we have a connection with may change how we reach them.
    const wire::Ipv6Addr src = f.ip_src_addr();
    bool known = false;
    for (const Qp* qp : live_)
        if (qp->state != QpState::reset && qp->attr.peer_addr == src) known = true;
    if (!known) return drop(DropReason::wrong_source);
    ++stats_.port_status_received;
    ++planes_epoch_;
    const std::uint32_t mask = erth.port_status_mask;
    for (auto& p : peer_ports_) {
        if (p.addr != src) continue;
        p.up_mask = mask;
        return;
    }
    peer_ports_.push_back({src, mask});
}

void Engine::send_port_status(TimeNs now) {
    (void)now;
    // One update per peer we have a connection with, on every plane that is up.
    std::vector<const Qp*> seen;
    for (const Qp* qp : live_) {
        if (qp->state != QpState::rtr && qp->state != QpState::rts) continue;
        if (std::any_of(seen.begin(), seen.end(), [&](const Qp* o) { return o->attr.peer_addr == qp->attr.peer_addr; }))
            continue;
        seen.push_back(qp);
        for (std::uint32_t plane = 0; plane < cfg_.planes; ++plane) {
            if (!(local_up_ & (1u << plane))) continue;
            wire::GatherFrame* g = ctrl_slot();
            if (g == nullptr) return;
            wire::FrameSpec s = qp->ctrl_spec;
            const std::uint32_t ev = reverse_ev(*qp, static_cast<std::uint8_t>(plane));
            s.eth.src = cfg_.local_macs[plane];
            s.eth.dst = qp->attr.peer_macs[plane];
            s.ev = ev;
            if (cfg_.mode == wire::FrameMode::srv6) s.outer.dst = qp->usid_template.apply(ev);
            s.bth.opcode = wire::Opcode::ep_request;
            s.bth.dest_qp = wire::kEndpointQpn;
            s.bth.psn = 0;
            s.erth = {wire::ErthOp::port_status_update, 0, 0, local_up_, 0, ++port_status_seq_};
            g->plane = static_cast<std::uint8_t>(plane);
            finish_ctrl(*g, s);
            ++stats_.port_status_sent;
        }
    }
}

}  // namespace omrc::core
