// SPDX-License-Identifier: BSD-3-Clause
// Engine, sender half: loss detection. By send order (RACK-style, over the
// packets a SACK reports missing), by path order (packets on one EV follow
// one path in order), by timeout (each EV's oldest unacknowledged packet,
// and a sweep of the window for packets no EV tracks); and what a loss does
// to a packet (mark_lost) and to what an EV slot carries.
#include <algorithm>
#include <bit>
#include <cassert>

#include "core/engine.hpp"
#include "core/psn.hpp"

namespace omrc::core {

void Engine::mark_lost(Qp& qp, std::uint32_t psn, bool front) {
    TxPkt& p = qp.pkt(psn);
    if (p.acked || p.lost) return;
    p.lost = true;
    ++qp.plane_counters[p.plane()].lost;
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
    qp.for_each_in_flight(slot, [&](std::uint32_t, TxPkt& p) {
        if (p.untracked) return;
        p.untracked = true;
        ++qp.untracked;
    });
    qp.paths.clear_tracked(slot);
}

void Engine::resend_slot(Qp& qp, std::size_t slot) {
    // The EV is given up: what is still in flight on it is sent again on
    // other paths now, not after a timeout.
    qp.for_each_in_flight(slot, [&](std::uint32_t psn, TxPkt& p) {
        if (p.lost) return;
        mark_lost(qp, psn, false);
        ++qp.stats.resent_on_retirement;
    });
    qp.paths.clear_tracked(slot);
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
    if (span < wire::SethHdr::kBitmapPsns) missing &= (1ull << span) - 1;
    for (; missing != 0; missing &= missing - 1) {
        const std::uint32_t psn = psn_add(sack.base, std::countr_zero(missing));
        if (psn_diff(psn, qp.snd_una) < 0 || psn_diff(psn, sack.cack) <= 0) continue;
        TxPkt& p = qp.pkt(psn);
        if (p.acked || p.lost || p.tx_count == 0) continue;
        const std::uint8_t plane = p.plane();
        const TimeNs rack = qp.rack_sent_ns[plane];
        const TimeNs window = qp.rtt.send_order_window(plane, qp.paths.groups_per_plane() > 1, cfg_.ev_timeout_ns);
        const bool same_plane = rack != 0 && p.sent_ns + window < rack;
        const bool any_plane = qp.rtt.overtaken(plane, p.sent_ns, sack.horizon_ns) &&
                               qp.rtt.silent(plane, qp.plane_ack_ns[plane], now);
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

TimeNs Engine::infer_pending_losses(Qp& qp, const SackView& sack, TimeNs now) {
    TimeNs next = kNever;
    std::size_t keep = 0;
    for (std::size_t k = 0; k < qp.infer_pending.size(); ++k) {
        const std::uint16_t slot_index = qp.infer_pending[k];
        if (infer_losses_on_path(qp, slot_index, sack, now)) {
            qp.infer_pending[keep++] = slot_index;
            next = std::min(next, qp.paths.slot(slot_index).suspect_ns + reorder_window(qp));
        } else {
            qp.paths.slot(slot_index).infer_queued = false;
        }
    }
    qp.infer_pending.resize(keep);
    return next;
}

TimeNs Engine::detect_losses_by_timeout(Qp& qp, TimeNs timeout, TimeNs now) {
    // Per EV, its oldest unacknowledged packet's timer.
    TimeNs next = kNever;
    for (std::size_t i = 0; i < qp.paths.size(); ++i) {
        while (qp.paths.tracked(i) > 0) {
            std::uint32_t psn;
            std::uint64_t seq;
            qp.paths.tracked_at(i, 0, psn, seq);
            const TxPkt& p = qp.pkt(psn);
            if (p.tx_seq != seq || p.acked || p.lost) {
                qp.paths.pop_tracked(i);
                continue;
            }
            if (p.sent_ns + timeout > now) {
                next = std::min(next, p.sent_ns + timeout);
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
            qp.for_each_in_flight(i, [&](std::uint32_t lost_psn, TxPkt& l) {
                if (l.lost) return;
                mark_lost(qp, lost_psn, false);
                ++qp.stats.losses_timeout;
                retire |= qp.paths.record_outcome(i, true);
                ++silent;
            });
            // One packet alone retires the EV too when packets sent a
            // reorder window after it, on any path, were delivered and
            // nothing on this EV was acknowledged since it left: the path,
            // not the tail of a burst, went silent (a plane dead behind the
            // NIC gives each of its EVs one or two packets a rotation).
            const EvSlot& sl = qp.paths.slot(i);
            const bool overtaken = qp.rtt.overtaken(p.plane(), p.sent_ns, latest_delivered_send(qp)) &&
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
    return next;
}

TimeNs Engine::sweep_untracked(Qp& qp, TimeNs timeout, TimeNs now) {
    // The safety net for packets no EV ring tracks (a full ring, a retired
    // EV): a sweep of the whole window, at most every half EV timeout, and
    // only while such packets exist (it is O(window)); such a packet is lost
    // 1.5 EV timeouts after it was sent.
    if (qp.untracked == 0) return kNever;
    if (now >= qp.next_sweep_ns) {
        const TimeNs late = timeout + timeout / 2;
        for (std::uint32_t psn = qp.snd_una; psn != qp.snd_nxt; psn = psn_add(psn, 1)) {
            TxPkt& p = qp.pkt(psn);
            if (p.acked || p.lost || p.tx_count == 0 || p.sent_ns + late > now) continue;
            mark_lost(qp, psn, false);
            ++qp.stats.losses_timeout;
        }
        qp.next_sweep_ns = now + timeout / 2;
    }
    return qp.untracked > 0 ? std::max(qp.next_sweep_ns, now + 1) : kNever;
}

}  // namespace omrc::core
