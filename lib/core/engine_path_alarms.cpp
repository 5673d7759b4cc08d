// SPDX-License-Identifier: BSD-3-Clause
// Engine, sender half: retiring an EV and what its failure tells. The QP's
// other EVs through the same (plane, T1) leave with it; the engine's other
// QPs toward the same destination T0 hear of it through a path alarm
// (EngineConfig::path_alarm_ns, the alarms in core/path_alarms.hpp) before
// they send there again; and, with peer_path_alarms, the QP's peer engine
// through an ERTH PATH_ALARM (docs/PROTOCOL.md §11.5).
#include <algorithm>

#include "core/engine.hpp"

namespace omrc::core {

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
        path_alarms_.raise_for(plane, group, cfg_.fabric.t0_of(qp.attr.peer_host), now);
        qp.alarms_seen = path_alarms_.seq();
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

void Engine::apply_path_alarms(Qp& qp, TimeNs now) {
    const std::uint64_t seen = qp.alarms_seen;
    qp.alarms_seen = path_alarms_.seq();
    if (qp.paths.groups_per_plane() <= 1 || !qp.paths.manages_paths()) return;
    path_alarms_.since(seen, cfg_.fabric.t0_of(qp.attr.peer_host), now, [&](std::uint8_t plane, std::uint16_t group) {
        for (std::size_t i = 0; i < qp.paths.size(); ++i) {
            const EvSlot& s = qp.paths.slot(i);
            if (s.parked || s.plane != plane || qp.paths.group_of(s.ev) != group) continue;
            retire_slot(qp, i, now, RetireCause::path_alarm);
        }
    });
}

void Engine::send_path_alarm(Qp& qp, std::uint8_t plane, std::uint16_t group, TimeNs now) {
    if (path_alarms_.told(qp.attr.peer_host, plane, group, now)) return;
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
                             .tx_timestamp = tseth_ticks(now),
                             .ftype = wire::mrc::kFtypeTransmitTimestamp};
    if (!send_ep_request(qp, on, ev, erth, now)) return;
    path_alarms_.note_told(qp.attr.peer_host, plane, group, now);
    ++stats_.path_alarms_sent;
}

}  // namespace omrc::core
