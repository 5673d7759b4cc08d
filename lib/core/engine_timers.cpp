// SPDX-License-Identifier: BSD-3-Clause
// Engine, sender half: the sender's timers of one QP (Engine::on_timer calls
// them when Qp::next_scan_ns is due): EV timeouts, path-order suspicions
// past their reorder window, the window sweep, the retry budget and the
// probes of retired EVs' groups.
#include <algorithm>

#include "core/engine.hpp"

namespace omrc::core {

TimeNs Engine::ev_timeout(Qp& qp) noexcept {
    return qp.rtt.ev_timeout(cfg_.ev_timeout_ns, cfg_.min_ev_timeout_ns, usable_planes(qp));
}

void Engine::sender_timers(Qp& qp, TimeNs now) {
    if (!qp.sends()) {
        qp.next_scan_ns = kNever;
        return;
    }
    const TimeNs timeout = ev_timeout(qp);
    // 0. An RNR wait that has passed: what it held may go.
    TimeNs next = kNever;
    if (qp.rnr_until_ns != 0) {
        if (now >= qp.rnr_until_ns) {
            qp.rnr_until_ns = 0;
            want_tx(qp);
        } else {
            next = qp.rnr_until_ns;
        }
    }
    // 1. Per-EV oldest-unacknowledged timers; 2. path-order suspicions whose
    // reorder window has passed (engine_loss.cpp).
    next = std::min(next, detect_losses_by_timeout(qp, timeout, now));
    next = std::min(next, infer_pending_losses(qp, SackView{}, now));
    // 3. The window sweep for packets no EV ring tracks.
    const bool in_flight = qp.snd_una != qp.snd_nxt;
    if (in_flight) next = std::min(next, sweep_untracked(qp, timeout, now));
    // 4. Retry budget: no progress for timeout · (retry_cnt + 1), with
    // packets in flight, with READs whose response has stopped coming, or
    // with messages waiting and no plane to send them on.
    const bool reading = qp.rd_outstanding > 0;
    if (in_flight || reading || qp.sq_unsegmented > 0) {
        const TimeNs give_up = qp.last_progress_ns + qp.attr.timeout_ns * (qp.attr.retry_cnt + 1);
        if (now >= give_up && (in_flight || reading || usable_planes(qp) == 0)) {
            enter_error(qp, WcStatus::retry_exc_err, now);
            return;
        }
        next = std::min(next, give_up);
    }
    // 5. Probes: one stream per group with EVs out, at a fixed cadence.
    qp.paths.expire_probes(now, timeout);
    const std::uint32_t planes = usable_planes(qp);
    PathSet::ProbeDue due;
    for (int guard = 0; guard < 256 && qp.paths.probe_due(now, planes, due); ++guard) send_probe(qp, due, now);
    next = std::min(next, qp.paths.next_probe_event_ns(timeout));
    qp.next_scan_ns = next;
}

}  // namespace omrc::core
