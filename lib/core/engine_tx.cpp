// SPDX-License-Identifier: BSD-3-Clause
// Engine, sender half: segmentation, path choice, frame building,
// SACK/NACK/AETH processing, loss inference, EV timers, probes.
#include <algorithm>
#include <cassert>
#include <cstring>

#include "core/engine.hpp"
#include "core/psn.hpp"
#include "routing/fabric.hpp"
#include "wire/icrc.hpp"

namespace omrc::core {

namespace {
/// The plane a packet's latest transmission went on (its EV's; the slot
/// may hold an EV of another plane since).
std::uint8_t packet_plane(const TxPkt& p) noexcept {
    return static_cast<std::uint8_t>(std::min<std::uint32_t>(routing::ev_plane(p.ev), kMaxPlanes - 1));
}
std::uint16_t ts_ticks(TimeNs now) noexcept {
    return static_cast<std::uint16_t>(now / wire::TsethHdr::kTickNs);
}
}  // namespace

bool Engine::can_send_more(const Qp& qp, std::uint64_t cwnd) const noexcept {
    std::uint32_t len = 0;
    if (!qp.resend.empty()) {
        len = qp.pkts[qp.resend.front() & qp.pkt_mask].len;
    } else {
        if (qp.sq_unsegmented == 0) return false;
        if (psn_diff(qp.snd_nxt, qp.snd_una) >= static_cast<std::int32_t>(qp.window_pkts)) return false;
        len = std::min(qp.attr.mtu_bytes, qp.sq[qp.seg_msg].length - qp.seg_offset);
    }
    if (qp.credit != nullptr && !qp.credit->may_send(len, qp.inflight_bytes == 0)) return false;
    const std::uint64_t pipe = qp.pipe_bytes();
    return pipe == 0 || pipe + len <= cwnd;
}

void Engine::apply_path_alarms(Qp& qp, TimeNs now) {
    const std::uint64_t first = std::max(qp.alarms_seen, oldest_path_alarm());
    qp.alarms_seen = path_alarm_seq_;
    if (qp.paths.groups_per_plane() <= 1 || !qp.paths.manages_paths()) return;
    const std::uint32_t dst_t0 = cfg_.fabric.t0_of(qp.attr.peer_host);
    for (std::uint64_t seq = first; seq < path_alarm_seq_; ++seq) {
        const PathAlarm& a = path_alarms_[seq % path_alarms_.size()];
        if ((a.dst_t0 != dst_t0 && a.dst_t0 != kAnyT0) || now > a.at_ns + cfg_.path_alarm_ns) continue;
        for (std::size_t i = 0; i < qp.paths.size(); ++i) {
            const EvSlot& s = qp.paths.slot(i);
            if (s.parked || s.plane != a.plane || qp.paths.group_of(s.ev) != a.group) continue;
            retire_slot(qp, i, now, RetireCause::path_alarm);
        }
    }
}

void Engine::raise_path_alarm(std::uint8_t plane, std::uint16_t group, std::uint32_t dst_t0, TimeNs now) {
    path_alarms_[path_alarm_seq_ % path_alarms_.size()] = {now, dst_t0, group, plane};
    ++path_alarm_seq_;
}

void Engine::send_path_alarm(Qp& qp, std::uint8_t plane, std::uint16_t group, TimeNs now) {
    for (const AlarmTold& t : alarms_told_)
        if (t.at_ns != kNever && t.peer_host == qp.attr.peer_host && t.plane == plane && t.group == group &&
            now <= t.at_ns + cfg_.path_alarm_ns)
            return;
    // On another usable plane where there is one, over an EV that carries
    // data now (a path known to work); else the plane's reverse EV.
    const std::uint32_t usable = usable_planes(qp);
    std::uint8_t on = plane;
    for (std::uint32_t k = 1; k <= cfg_.planes; ++k) {
        const auto p = static_cast<std::uint8_t>((plane + k) % cfg_.planes);
        if (usable & (1u << p)) {
            on = p;
            break;
        }
    }
    std::uint32_t ev = reverse_ev(qp, on);
    for (std::size_t i = 0; i < qp.paths.size(); ++i) {
        const EvSlot& s = qp.paths.slot(i);
        if (s.plane == on && !s.parked && !(s.plane == plane && qp.paths.group_of(s.ev) == group)) {
            ev = s.ev;
            break;
        }
    }
    const wire::ErthHdr erth{.op = wire::ErthOp::path_alarm,
                             .alarm_t1 = group,
                             .alarm_plane = plane,
                             .tx_timestamp = ts_ticks(now),
                             .ftype = wire::mrc::kFtypeTransmitTimestamp};
    if (!send_ep_request(qp, on, ev, erth, now)) return;
    alarms_told_[alarms_told_next_++ % alarms_told_.size()] = {now, qp.attr.peer_host, group, plane};
    ++stats_.path_alarms_sent;
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
    const TimeNs stale_after = std::max<TimeNs>(2 * qp.rtt_max_ns, cfg_.min_ev_timeout_ns);
    return qp.paths.select(planes, rng_, now, stale_after, std::min<std::uint32_t>(cfg_.stale_path_packets, 255));
}

bool Engine::send_one_data(Qp& qp, wire::GatherFrame& out, TimeNs now) {
    // Another QP's alarm first: this QP's packets must not follow it into a dead T1.
    if (qp.alarms_seen != path_alarm_seq_) apply_path_alarms(qp, now);
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
        if (const std::uint64_t pipe = qp.pipe_bytes(); pipe > 0 && pipe + p.len > cwnd) return false;
        if (qp.credit != nullptr && !qp.credit->may_send(p.len, qp.inflight_bytes == 0)) return false;
        const int slot = select_slot(qp, planes, now);
        if (slot < 0) return false;
        qp.resend.pop_front();
        p.lost = false;
        p.ev_slot = static_cast<std::uint16_t>(slot);
        build_data_frame(qp, psn, p, true, out, now);
        return true;
    }
    if (qp.sq_unsegmented == 0) return false;
    if (psn_diff(qp.snd_nxt, qp.snd_una) >= static_cast<std::int32_t>(qp.window_pkts)) return false;
    SendMsg& m = qp.sq[qp.seg_msg];
    const std::uint32_t len = std::min(qp.attr.mtu_bytes, m.length - qp.seg_offset);
    if (const std::uint64_t pipe = qp.pipe_bytes(); pipe > 0 && pipe + len > cwnd) return false;
    if (qp.credit != nullptr && !qp.credit->may_send(len, qp.inflight_bytes == 0)) return false;
    const int slot = select_slot(qp, planes, now);
    if (slot < 0) return false;
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
    }
    if (qp.snd_una == qp.snd_nxt) qp.last_progress_ns = now;  // the clock of the retry budget starts
    qp.snd_nxt = psn_add(qp.snd_nxt, 1);
    assert(psn_diff(qp.snd_nxt, qp.snd_una) > 0 &&
           static_cast<std::uint32_t>(psn_diff(qp.snd_nxt, qp.snd_una)) <= qp.pkt_mask + 1 &&
           "snd_una < snd_nxt ≤ snd_una + the transmit ring");
    build_data_frame(qp, psn, p, false, out, now);
    return true;
}

void Engine::build_data_frame(Qp& qp, std::uint32_t psn, TxPkt& p, bool retransmit, wire::GatherFrame& out,
                              TimeNs now) {
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
    PlaneCounters& pc = qp.plane_counters[packet_plane(p)];
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
    fields.tx_timestamp = ts_ticks(now);
    fields.reth = {m.req.remote_addr + p.offset, m.req.rkey, m.length};
    fields.imm = m.req.imm_data;
    fields.crth = qp.credit != nullptr ? &crth : nullptr;
    const std::size_t hlen = qp.data_tmpl.write(out.header.data(), fields);
    out.header_len = static_cast<std::uint16_t>(hlen);
    out.plane = plane;
    // Gather the payload straight from the SGEs covering [offset, offset+len).
    out.segment_count = 0;
    out.payload_in_engine_memory = m.req.is_inline;
    std::uint32_t skip = p.offset, want = p.len;
    for (std::size_t i = 0; i < m.req.sge_count && want > 0; ++i) {
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
}

void Engine::mark_lost(Qp& qp, std::uint32_t psn, bool front) {
    TxPkt& p = qp.pkt(psn);
    if (p.acked || p.lost) return;
    p.lost = true;
    ++qp.plane_counters[packet_plane(p)].lost;
    assert(qp.inflight_bytes >= p.len && "inflight_bytes covers every packet neither acked nor lost");
    qp.inflight_bytes -= std::min<std::uint64_t>(qp.inflight_bytes, p.len);
    // A stale slot's packet known lost no longer waits for its acknowledgement:
    // unless the loss retires the slot, the slot may carry another.
    if (EvSlot& slot = qp.paths.slot(p.ev_slot); slot.ev == p.ev && slot.stale_sent > 0) --slot.stale_sent;
    // Credit mode: the bytes are asked for again (the credit they used is
    // not lost: the receiver grants them anew when the request shows them).
    if (qp.credit != nullptr) qp.credit->on_demand(p.len, false, false);
    if (front) qp.resend.push_front(psn);
    else qp.resend.push_back(psn);
    want_tx(qp);
}

void Engine::untrack_slot(Qp& qp, std::size_t slot) {
    // Packets still in flight on the slot lose their EV tracking: the window
    // sweep covers them from now on.
    for (std::uint32_t i = 0; i < qp.paths.tracked(slot); ++i) {
        std::uint32_t psn;
        std::uint64_t seq;
        qp.paths.tracked_at(slot, i, psn, seq);
        TxPkt& p = qp.pkt(psn);
        if (p.tx_seq == seq && !p.acked && !p.untracked) {
            p.untracked = true;
            ++qp.untracked;
        }
    }
    qp.paths.clear_tracked(slot);
}

void Engine::resend_slot(Qp& qp, std::size_t slot) {
    // The EV is given up: what is still in flight on it is sent again on
    // other paths now, not after a timeout.
    for (std::uint32_t i = 0; i < qp.paths.tracked(slot); ++i) {
        std::uint32_t psn;
        std::uint64_t seq;
        qp.paths.tracked_at(slot, i, psn, seq);
        TxPkt& p = qp.pkt(psn);
        if (p.tx_seq == seq && !p.acked && !p.lost) {
            mark_lost(qp, psn, false);
            ++qp.stats.resent_on_retirement;
        }
    }
    qp.paths.clear_tracked(slot);
}

void Engine::retire_slot(Qp& qp, std::size_t slot, TimeNs now, RetireCause cause) {
    const std::uint32_t ev = qp.paths.slot(slot).ev;
    const std::uint8_t plane = qp.paths.slot(slot).plane;
    resend_slot(qp, slot);
    // Groups not known: a retirement that completes a plane's streak parks
    // every slot of the plane; what those slots carry is resent now.
    const std::uint32_t parked_before = qp.paths.parked();
    if (!qp.paths.retire(slot, now, rng_, usable_planes(qp), [&](std::size_t other) { resend_slot(qp, other); }))
        return;
    if (const std::uint32_t parked = qp.paths.parked(); parked > parked_before + 1)
        qp.stats.ev_parked_with_plane += parked - parked_before - 1;
    ++qp.stats.ev_retirements;
    ++qp.stats.ev_retirements_by_cause[static_cast<std::size_t>(cause)];
    path_event({.at_ns = now, .kind = PathEventKind::retired, .cause = cause, .plane = plane,
                .group = qp.paths.group_of(ev), .qpn = qp.qpn, .ev = ev});
    // Where the fabric is known, a failed path is a failed (plane, T1): the
    // QP's other EVs through that T1 share its fate. They leave with it
    // (their packets resent), and the group is probed back as one. (The
    // evidence for a retirement is strong: a silent EV, or losses a SACK
    // proves and that stand out from the QP's — never an overdue report.)
    if (qp.paths.groups_per_plane() <= 1) return;
    const std::uint16_t group = qp.paths.group_of(ev);
    if (cause != RetireCause::path_alarm && cfg_.path_alarm_ns != 0) {
        // The engine's other QPs toward the same T0 learn of it before they
        // send there again. Two destination T0s losing the same (plane, T1)
        // within the alarm time point at the T1 or our uplink to it, which
        // every destination crosses: that alarm is for all of them.
        std::uint32_t dst_t0 = cfg_.fabric.t0_of(qp.attr.peer_host);
        for (std::uint64_t seq = oldest_path_alarm(); seq < path_alarm_seq_; ++seq) {
            const PathAlarm& a = path_alarms_[seq % path_alarms_.size()];
            if (a.plane == plane && a.group == group && a.dst_t0 != dst_t0 && now <= a.at_ns + cfg_.path_alarm_ns) {
                dst_t0 = kAnyT0;
                break;
            }
        }
        raise_path_alarm(plane, group, dst_t0, now);
        qp.alarms_seen = path_alarm_seq_;
        // The peer's engine too: its QPs may send through the same T1 (our
        // uplink to it is its downlink), and on its own it learns only from
        // its own losses — late, if it was idle when the T1 failed.
        if (cfg_.peer_path_alarms) send_path_alarm(qp, plane, group, now);
    }
    for (std::size_t i = 0; i < qp.paths.size(); ++i) {
        const EvSlot& s = qp.paths.slot(i);
        if (s.parked || s.plane != plane || qp.paths.group_of(s.ev) != group) continue;
        const std::uint32_t other = s.ev;
        resend_slot(qp, i);
        if (qp.paths.retire(i, now, rng_, usable_planes(qp))) {
            ++qp.stats.ev_retirements;
            ++qp.stats.ev_retirements_with_group;
            ++qp.stats.ev_retirements_by_cause[static_cast<std::size_t>(RetireCause::with_group)];
            path_event({.at_ns = now, .kind = PathEventKind::retired, .cause = RetireCause::with_group, .plane = plane,
                        .group = group, .qpn = qp.qpn, .ev = other});
        }
    }
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
    ++qp.plane_counters[packet_plane(p)].acked;
    TimeNs& rack = qp.rack_sent_ns[packet_plane(p)];
    if (p.tx_count == 1 && p.sent_ns > rack) rack = p.sent_ns;
    if (p.tx_count == 1) qp.plane_ack_ns[packet_plane(p)] = now;
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

TimeNs Engine::reorder_window(const Qp& qp) const noexcept {
    // How long an acknowledgement may trail one for a later packet: the
    // spread of RTTs seen over all planes (planes differ in delay, a report
    // waits for the bitmap to reach it, queues vary) plus a quarter of the
    // base RTT. Before any sample, a quarter of the initial EV timeout.
    if (qp.rtt_min_ns == 0) return cfg_.ev_timeout_ns / 4;
    return (qp.rtt_recent_max_ns - qp.rtt_min_ns) + qp.rtt_min_ns / 4 + 1'000;
}

TimeNs Engine::send_order_window(const Qp& qp, std::uint8_t plane) const noexcept {
    // Send-order detection compares packets of one plane whose fate is
    // known (reported missing): the spread of that plane's own RTTs (its
    // T1 paths and queues) plus a quarter of its base RTT. Where the T1s are
    // known, the plane's paths are alike by design and the spread is from
    // the recent maximum (forgotten 1/64 a sample). Where they are not (a
    // hashed fabric: each EV takes its own way, of its own length and
    // queues) it is from the long-term maximum (1/1024): with the recent one
    // a path whose queue outgrew it was judged lost (fat tree under ECMP, no
    // frame dropped: 47 packets resent and 47 EVs retired, against 14 and
    // 14). With the long-term one where T1s are known, detection on a
    // flapping link came late enough that one flow of perm_1024_link_flap
    // waited for an EV timeout (its job 1.076 -> 1.225 x ideal).
    const Qp::PlaneRtt& r = qp.plane_rtt[plane];
    if (r.min_ns == 0) return reorder_window(qp);
    const TimeNs max = qp.paths.groups_per_plane() > 1 ? r.recent_max_ns : r.max_ns;
    return (max - r.min_ns) + r.min_ns / 4 + 1'000;
}

TimeNs Engine::ev_timeout(Qp& qp) noexcept {
    // A few measured round trips (tens of microseconds on a fabric), never a
    // fixed RTO: the slowest path's RTT sets it, so a long path is not
    // mistaken for a dead one. Until every usable plane has answered, the
    // slowest is not known (planes may differ in delay, and a packet's report
    // waits for the slowest plane's holes to fill): the initial timeout is
    // the floor then.
    if (qp.rtt_min_ns == 0) return cfg_.ev_timeout_ns;
    const TimeNs measured = std::max<TimeNs>(2 * qp.rtt_max_ns + reorder_window(qp), cfg_.min_ev_timeout_ns);
    if ((usable_planes(qp) & ~qp.planes_sampled) != 0) return std::max<TimeNs>(measured, cfg_.ev_timeout_ns);
    return measured;
}

bool Engine::SackView::reports(std::uint32_t psn, bool& received) const noexcept {
    if (!valid) return false;
    if (psn_diff(psn, cack) <= 0) {
        received = true;
        return true;
    }
    const std::int32_t k = psn_diff(psn, base);
    if (k < 0 || k >= 64) return false;
    received = ((bitmap >> k) & 1u) != 0;
    return true;
}

bool Engine::plane_silent(const Qp& qp, std::uint8_t plane, TimeNs now) noexcept {
    // A plane that delivers, however deep its queues, acknowledges packets
    // as its queues drain; one that died acknowledges nothing. Silent: no
    // packet sent once on it acknowledged for its slowest round trip.
    const TimeNs max = qp.plane_rtt[plane].max_ns;
    return max != 0 && qp.plane_ack_ns[plane] + max < now;
}

bool Engine::overtaken_on_any_plane(const Qp& qp, const TxPkt& p, TimeNs horizon) noexcept {
    // A packet sent at `horizon` had arrived; p, sent before it by more
    // than the slowest round trip of p's plane (which bounds its one-way
    // delay), would have arrived first.
    const TimeNs own_max = qp.plane_rtt[packet_plane(p)].max_ns;
    return own_max != 0 && horizon != 0 && p.sent_ns + own_max + qp.rtt_min_ns / 4 + 1'000 < horizon;
}

TimeNs Engine::latest_delivered_send(const Qp& qp) noexcept {
    return *std::max_element(qp.rack_sent_ns.begin(), qp.rack_sent_ns.end());
}

TimeNs Engine::reported_send_horizon(const Qp& qp, const wire::SethHdr& s, std::uint16_t ts_echo,
                                     TimeNs now) const noexcept {
    // Packets sent once (so the copy that arrived is known) that this SACK
    // shows received: its bitmap's set bits, and the trigger when the echo
    // names the transmission.
    TimeNs h = 0;
    const auto consider = [&](std::uint32_t psn) {
        const std::int32_t age = psn_diff(qp.snd_nxt, psn);
        if (age <= 0 || age > static_cast<std::int32_t>(qp.pkt_mask + 1)) return;
        const TxPkt& t = qp.pkts[psn & qp.pkt_mask];
        if (t.tx_count == 1) h = std::max(h, t.sent_ns);
    };
    const std::uint32_t base = psn_add(s.cack_psn, s.sack_offset);
    for (std::uint64_t bits = s.bitmap; bits != 0; bits &= bits - 1) consider(psn_add(base, std::countr_zero(bits)));
    if (rtt_sample(qp, s, ts_echo, now) != 0) consider(psn_add(s.cack_psn, s.ack_psn_offset));
    return h;
}

void Engine::detect_losses_by_send_order(Qp& qp, const SackView& sack, TimeNs now) {
    // RACK-style: a packet the SACK reports missing (its bit clear in the
    // SACK's bitmap, whichever 64 PSNs it covers) is lost when a packet sent
    // sufficiently later has been delivered:
    //  - on the same plane, over any of its T1s, more than the plane's own
    //    send-order window later: a dead path's packets are found about a
    //    round trip after later packets arrive on the plane's other paths;
    //  - on any plane, when the missing packet's plane has acknowledged
    //    nothing for its slowest round trip (silent) and this same SACK
    //    shows received a packet sent once more than that round trip after
    //    it (+ min RTT / 4 + 1 µs): had the missing one survived, it would
    //    have arrived first and been reported. A plane that died as a whole
    //    delivers nothing to compare with, and without this its packets
    //    waited for their EV timeouts while each held the receiver's
    //    cumulative PSN and the send window filled (docs/PROTOCOL.md §11.3).
    //    Only this SACK's own report bounds when it was built (SACKs cross
    //    planes and arrive out of order), and a round trip bounds a one-way
    //    delay whatever the planes' delays. The silence keeps a plane whose
    //    queue grew past its slowest round trip so far (credit's grant
    //    bursts, a T1's load moved onto the others) from being judged by
    //    other planes: such a plane still acknowledges as its queue drains.
    // Only reported PSNs are judged: a packet beyond the bitmap may have
    // arrived unreported.
    if (!sack.valid) return;
    std::uint64_t missing = ~sack.bitmap;  // bit k: PSN base + k not received when the SACK left
    const std::int32_t span = psn_diff(qp.snd_nxt, sack.base);
    if (span <= 0) return;
    if (span < 64) missing &= (1ull << span) - 1;
    for (; missing != 0; missing &= missing - 1) {
        const std::uint32_t psn = psn_add(sack.base, std::countr_zero(missing));
        if (psn_diff(psn, qp.snd_una) < 0 || psn_diff(psn, sack.cack) <= 0) continue;
        TxPkt& p = qp.pkt(psn);
        if (p.acked || p.lost || p.tx_count == 0) continue;
        const std::uint8_t plane = packet_plane(p);
        const TimeNs rack = qp.rack_sent_ns[plane];
        const bool same_plane = rack != 0 && p.sent_ns + send_order_window(qp, plane) < rack;
        const bool any_plane = overtaken_on_any_plane(qp, p, sack.horizon_ns) &&
                               plane_silent(qp, plane, now);
        if (!same_plane && !any_plane) continue;
        mark_lost(qp, psn, false);
        ++qp.stats.losses_send_order;
        EvSlot& slot = qp.paths.slot(p.ev_slot);
        if (!same_plane) ++qp.stats.losses_send_order_cross_plane;
        if (slot.ev != p.ev) continue;  // its EV has left the slot already
        ++slot.counters.lost;
        // Losses concentrated on one EV retire it (a failing path, not
        // congestion: the window stays); spread ones change nothing here.
        // Where each EV is its own path (groups not known: a hashed fabric),
        // one packet overtaken by other paths' does not say that its path
        // failed rather than queued deeper: the EV retires on a second loss
        // close behind (its loss average past 0.2; one loss makes it 0.125).
        // A dead path loses the next packet too.
        const bool standout = qp.paths.record_outcome(p.ev_slot, true);
        const bool repeated = qp.paths.groups_per_plane() > 1 || slot.loss_ewma > 0.2;
        if (standout && repeated && qp.paths.manages_paths())
            retire_slot(qp, p.ev_slot, now, RetireCause::send_order);
    }
}

bool Engine::infer_losses_on_path(Qp& qp, std::size_t slot_index, const SackView& sack, TimeNs now) {
    // Packets on one EV follow one path in order, so W sent on it before X is
    // lost once X has arrived and W has not:
    //  - proven by a SACK whose state covers both (X received: ≤ cack or its
    //    bit set; W not: its bit clear in the bitmap from cack + 1), at once;
    //  - otherwise W's report may still be on its way (SACKs travel over
    //    different planes): W is declared lost when it is still unacknowledged
    //    a reorder window after X was acknowledged.
    EvSlot& slot = qp.paths.slot(slot_index);
    const std::uint64_t x_seq = slot.last_acked_tx_seq;
    bool x_received = false;
    const bool proven_x = sack.reports(slot.last_acked_psn, x_received) && x_received;
    bool retire = false;
    bool undecided = false;
    while (qp.paths.tracked(slot_index) > 0) {
        std::uint32_t psn;
        std::uint64_t seq;
        qp.paths.tracked_at(slot_index, 0, psn, seq);
        if (seq >= x_seq) {
            if (seq == x_seq) qp.paths.pop_tracked(slot_index);
            break;
        }
        TxPkt& p = qp.pkt(psn);
        if (p.tx_seq != seq || p.acked || p.lost) {
            qp.paths.pop_tracked(slot_index);
            continue;
        }
        bool w_received = true;
        const bool proven = proven_x && sack.reports(psn, w_received) && !w_received;
        const bool overdue = !proven && slot.suspect_ns != 0 && now >= slot.suspect_ns + reorder_window(qp);
        if (!proven && !overdue) {
            undecided = true;
            break;
        }
        qp.paths.pop_tracked(slot_index);
        mark_lost(qp, psn, false);
        ++qp.stats.losses_path_order;
        ++slot.counters.lost;
        // A loss a SACK proves is evidence against the path; one that is only
        // overdue is resent but judges nothing (its report may just trail,
        // waiting for the bitmap to reach it behind another path's holes).
        if (proven) retire |= qp.paths.record_outcome(slot_index, true);
    }
    if (!undecided) slot.suspect_ns = 0;
    // A loss alone is not congestion (trims and delay say that): the window
    // stays; only an EV whose loss stands out from the others is retired.
    if (retire && qp.paths.manages_paths()) {
        retire_slot(qp, slot_index, now, RetireCause::path_order);
        return false;
    }
    return undecided;
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
    while (qp.sq_count > qp.sq_unsegmented) {
        const SendMsg& m = qp.sq[qp.sq_head];
        const std::uint32_t last = psn_add(m.first_psn, m.npkts - 1);
        if (psn_diff(last, qp.snd_una) >= 0) break;
        ++qp.sq_retired;
        if (m.req.signaled) {
            complete({.wr_id = m.req.wr_id,
                      .qpn = qp.qpn,
                      .status = WcStatus::success,
                      .opcode = WcOpcode::rdma_write,
                      .byte_len = m.length,
                      .sq_retired = qp.sq_retired});
            ++qp.stats.send_completions;
        }
        qp.sq_head = (qp.sq_head + 1) % n;
        --qp.sq_count;
    }
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
    const std::uint32_t units = cc.rcvd_bytes & 0xFFFFFF;
    if (!qp.peer_rcvd_known) {
        qp.peer_rcvd_known = true;
        qp.peer_rcvd_units = units;
    } else {
        const std::uint32_t ahead = (units - qp.peer_rcvd_units) & 0xFFFFFF;
        if (ahead != 0 && ahead < 0x800000) {
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
                        .plane = static_cast<std::uint8_t>(std::min<std::uint32_t>(routing::ev_plane(s.ev), kMaxPlanes - 1)),
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
        std::size_t keep = 0;
        for (std::size_t k = 0; k < qp.infer_pending.size(); ++k) {
            const std::uint16_t slot_index = qp.infer_pending[k];
            if (infer_losses_on_path(qp, slot_index, view, now)) {
                qp.infer_pending[keep++] = slot_index;
                const EvSlot& sl = qp.paths.slot(slot_index);
                qp.next_scan_ns = std::min(qp.next_scan_ns, sl.suspect_ns + reorder_window(qp));
            } else {
                qp.paths.slot(slot_index).infer_queued = false;
            }
        }
        qp.infer_pending.resize(keep);
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
        if (a.rtt_ns != 0) {
            // Per plane too (the trigger's): timeouts and reorder windows are per plane.
            const std::uint32_t trig = psn_add(s.cack_psn, s.ack_psn_offset);
            const std::uint8_t plane = packet_plane(qp.pkt(trig));
            qp.planes_sampled |= 1u << plane;
            Qp::PlaneRtt& r = qp.plane_rtt[plane];
            r.min_ns = r.min_ns == 0 ? a.rtt_ns : std::min(r.min_ns, a.rtt_ns);
            r.max_ns = a.rtt_ns >= r.max_ns ? a.rtt_ns : r.max_ns - (r.max_ns - a.rtt_ns) / 1024;
            r.recent_max_ns = a.rtt_ns >= r.recent_max_ns ? a.rtt_ns : r.recent_max_ns - (r.recent_max_ns - a.rtt_ns) / 64;
            qp.rtt_min_ns = qp.rtt_min_ns == 0 ? a.rtt_ns : std::min(qp.rtt_min_ns, a.rtt_ns);
            qp.rtt_max_ns = a.rtt_ns >= qp.rtt_max_ns ? a.rtt_ns : qp.rtt_max_ns - (qp.rtt_max_ns - a.rtt_ns) / 1024;
            qp.rtt_recent_max_ns = a.rtt_ns >= qp.rtt_recent_max_ns
                                       ? a.rtt_ns
                                       : qp.rtt_recent_max_ns - (qp.rtt_recent_max_ns - a.rtt_ns) / 64;
        }
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
    if (t.tx_count == 0 || t.sent_ns > now || ts_ticks(t.sent_ns) != ts_echo) return 0;
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
        if (p.tx_count != 0) ++qp.plane_counters[packet_plane(p)].trims;
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
    const std::uint32_t slot = qp.pkt(psn).msg_slot;
    const auto n = static_cast<std::uint32_t>(qp.sq.size());
    const std::uint32_t segmented = qp.sq_count - qp.sq_unsegmented;
    const std::uint32_t k = (slot + n - qp.sq_head) % n;  // position of its message among the outstanding ones
    if (k >= segmented) return drop(DropReason::forged_ack);
    WcStatus st = WcStatus::rem_op_err;
    if (syndrome == wire::AethSyndrome::nak_remote_access) st = WcStatus::rem_access_err;
    else if (syndrome == wire::AethSyndrome::nak_invalid_request) st = WcStatus::rem_inv_req_err;
    // Earlier messages still outstanding cannot be confirmed any more:
    // they are flushed, the NAKed one carries the error, the QP stops.
    for (std::uint32_t e = 0; e < k; ++e) {
        const SendMsg& early = qp.sq[qp.sq_head];
        complete({.wr_id = early.req.wr_id,
                  .qpn = qp.qpn,
                  .status = WcStatus::wr_flush_err,
                  .opcode = WcOpcode::rdma_write,
                  .sq_retired = ++qp.sq_retired});
        qp.sq_head = (qp.sq_head + 1) % n;
        --qp.sq_count;
    }
    enter_error(qp, st, now);
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
              .tx_timestamp = ts_ticks(now),
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
        .op = wire::ErthOp::ev_probe, .tx_timestamp = ts_ticks(now), .ftype = wire::mrc::kFtypeTransmitTimestamp};
    if (!send_ep_request(*qp, static_cast<std::uint8_t>(plane), c.ev, erth, now)) return {ENOBUFS};
    ++qp->stats.ev_probes_sent;
    return {kOk};
}

void Engine::sender_timers(Qp& qp, TimeNs now) {
    if (qp.state != QpState::rts) {
        qp.next_scan_ns = kNever;
        return;
    }
    const TimeNs timeout = ev_timeout(qp);
    TimeNs next = kNever;
    // 1. Per-EV oldest-unacknowledged timers.
    for (std::size_t i = 0; i < qp.paths.size(); ++i) {
        const TimeNs ev_to = timeout;
        while (qp.paths.tracked(i) > 0) {
            std::uint32_t psn;
            std::uint64_t seq;
            qp.paths.tracked_at(i, 0, psn, seq);
            const TxPkt& p = qp.pkt(psn);
            if (p.tx_seq != seq || p.acked || p.lost) {
                qp.paths.pop_tracked(i);
                continue;
            }
            if (p.sent_ns + ev_to > now) {
                next = std::min(next, p.sent_ns + ev_to);
                break;
            }
            // Overdue on this EV: everything still in flight on it is resent
            // elsewhere. The EV is retired when the path went silent (two or
            // more of its packets unanswered, or one that later packets
            // overtook) or its losses stand out from the QP's — not for one
            // unlucky tail packet.
            ++qp.stats.ev_timeouts;
            ++qp.paths.slot(i).counters.timeouts;
            bool retire = false;
            std::uint32_t silent = 0;
            for (std::uint32_t k = 0; k < qp.paths.tracked(i); ++k) {
                std::uint32_t lp;
                std::uint64_t ls;
                qp.paths.tracked_at(i, k, lp, ls);
                TxPkt& lpkt = qp.pkt(lp);
                if (lpkt.tx_seq == ls && !lpkt.acked && !lpkt.lost) {
                    mark_lost(qp, lp, false);
                    ++qp.stats.losses_timeout;
                    retire |= qp.paths.record_outcome(i, true);
                    ++silent;
                }
            }
            // One packet alone retires the EV too when packets sent a
            // reorder window after it, on any path, were delivered and
            // nothing on this EV was acknowledged since it left: the path,
            // not the tail of a burst, went silent (a plane dead behind the
            // NIC gives each of its EVs one or two packets a rotation).
            const EvSlot& sl = qp.paths.slot(i);
            const bool overtaken = overtaken_on_any_plane(qp, p, latest_delivered_send(qp)) &&
                                   (sl.acked_ev != sl.ev || sl.last_ack_ns <= p.sent_ns);
            retire |= silent >= 2 || (silent == 1 && overtaken);
            qp.paths.clear_tracked(i);
            // A silent path is a failure, not congestion: the window stays
            // (delay, ECN and trims are NSCC's congestion signals).
            if (retire) retire_slot(qp, i, now, RetireCause::timeout);
            // REPS: a failure; explore nothing new for a while.
            if (qp.paths.policy() == PathPolicy::reps) qp.paths.reps_freeze(now + cfg_.reps_freeze_ns);
            break;
        }
    }
    // 2. Path-order suspicions whose reorder window has passed.
    {
        std::size_t keep = 0;
        for (std::size_t k = 0; k < qp.infer_pending.size(); ++k) {
            const std::uint16_t slot_index = qp.infer_pending[k];
            if (infer_losses_on_path(qp, slot_index, SackView{}, now)) {
                qp.infer_pending[keep++] = slot_index;
                const EvSlot& sl = qp.paths.slot(slot_index);
                next = std::min(next, sl.suspect_ns + reorder_window(qp));
            } else {
                qp.paths.slot(slot_index).infer_queued = false;
            }
        }
        qp.infer_pending.resize(keep);
    }
    // 3. Safety net for packets no EV ring tracks (a full ring, a retired
    // EV): a sweep of the whole window, at most every half EV timeout, and
    // only while such packets exist (it is O(window)).
    if (qp.snd_una != qp.snd_nxt) {
        if (qp.untracked > 0 && now >= qp.next_sweep_ns) {
            const TimeNs late = timeout + timeout / 2;
            for (std::uint32_t psn = qp.snd_una; psn != qp.snd_nxt; psn = psn_add(psn, 1)) {
                TxPkt& p = qp.pkt(psn);
                if (p.acked || p.lost || p.tx_count == 0 || p.sent_ns + late > now) continue;
                mark_lost(qp, psn, false);
                ++qp.stats.losses_timeout;
            }
            qp.next_sweep_ns = now + timeout / 2;
        }
        if (qp.untracked > 0) next = std::min(next, std::max(qp.next_sweep_ns, now + 1));
        // 4. Retry budget: no progress for timeout · (retry_cnt + 1).
        const TimeNs budget = qp.attr.timeout_ns * (qp.attr.retry_cnt + 1);
        if (now >= qp.last_progress_ns + budget) {
            enter_error(qp, WcStatus::retry_exc_err, now);
            return;
        }
        next = std::min(next, qp.last_progress_ns + budget);
    } else if (qp.sq_unsegmented > 0) {
        const TimeNs budget = qp.attr.timeout_ns * (qp.attr.retry_cnt + 1);
        if (now >= qp.last_progress_ns + budget && usable_planes(qp) == 0) {
            enter_error(qp, WcStatus::retry_exc_err, now);
            return;
        }
        next = std::min(next, qp.last_progress_ns + budget);
    }
    // 5. Probes of ASSUMED_BAD EVs.
    // 5. Probes: one stream per group with EVs out, at a fixed cadence.
    qp.paths.expire_probes(now, timeout);
    const std::uint32_t planes = usable_planes(qp);
    PathSet::ProbeDue due;
    for (int guard = 0; guard < 256 && qp.paths.probe_due(now, planes, due); ++guard) send_probe(qp, due, now);
    next = std::min(next, qp.paths.next_probe_event_ns(timeout));
    qp.next_scan_ns = next;
}

}  // namespace omrc::core
