// SPDX-License-Identifier: BSD-3-Clause
#include "core/paths.hpp"

#include <algorithm>

#include "routing/fabric.hpp"

namespace omrc::core {

const char* to_string(EvState s) noexcept {
    switch (s) {
        case EvState::good: return "good";
        case EvState::skip: return "skip";
        case EvState::assumed_bad: return "assumed_bad";
        case EvState::denied: return "denied";
    }
    return "unknown";
}

std::uint32_t PathSet::fresh_ev(std::uint32_t plane, Rng& rng) {
    // Walk the path space of the plane (T1 choices in an SRv6 fabric); the
    // salt keeps EVs distinct for ECMP hashing and from denied values.
    for (;;) {
        const std::uint32_t path = next_path_[plane]++ & 0xFFF;
        const std::uint32_t ev = routing::make_ev(plane, path, static_cast<std::uint16_t>(rng.next_u32()));
        if (std::find(denied_.begin(), denied_.end(), ev) == denied_.end()) return ev;
    }
}

void PathSet::init(PathPolicy policy, std::uint32_t planes, std::uint32_t evs, std::uint32_t backups,
                   std::uint32_t track_depth, std::uint32_t qpn, Rng& rng) {
    policy_ = policy;
    planes_ = std::max<std::uint32_t>(planes, 1);
    depth_ = std::max<std::uint32_t>(track_depth, 1);
    const std::uint32_t per_plane = std::max<std::uint32_t>((evs + planes_ - 1) / planes_, 1);
    next_path_.assign(planes_, 0);
    retire_streak_.assign(planes_, 0);
    for (auto& p : next_path_) p = static_cast<std::uint32_t>(rng.below(4096));
    slots_.assign(static_cast<std::size_t>(per_plane) * planes_, EvSlot{});
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        slots_[i].plane = static_cast<std::uint8_t>(i % planes_);  // interleaved: a rotation alternates planes
        slots_[i].ev = fresh_ev(slots_[i].plane, rng);
    }
    fifo_.assign(slots_.size() * depth_, 0);
    backup_.clear();
    for (std::uint32_t b = 0; b < backups; ++b) backup_.push_back(fresh_ev(b % planes_, rng));
    bad_.clear();
    cursor_ = 0;
    rotation_ = 0;
    ecmp_slot_ = qpn % static_cast<std::uint32_t>(slots_.size());
}

int PathSet::select(std::uint32_t plane_mask) noexcept {
    const auto n = static_cast<std::uint32_t>(slots_.size());
    if (policy_ == PathPolicy::ecmp) {
        // One EV per QP; fail over to the next plane only when its port is down.
        for (std::uint32_t k = 0; k < n; ++k) {
            const std::uint32_t i = (ecmp_slot_ + k) % n;
            if (plane_mask & (1u << slots_[i].plane)) return static_cast<int>(i);
        }
        return -1;
    }
    for (int pass = 0; pass < 2; ++pass) {
        for (std::uint32_t k = 0; k < n; ++k) {
            const std::uint32_t i = cursor_;
            if (++cursor_ == n) {
                cursor_ = 0;
                ++rotation_;
            }
            EvSlot& s = slots_[i];
            if (!(plane_mask & (1u << s.plane)) || s.parked) continue;
            if (policy_ == PathPolicy::adaptive && pass == 0 && s.state == EvState::skip) {
                if (s.skip_rotation >= rotation_) continue;
                s.state = EvState::good;
            }
            return static_cast<int>(i);
        }
        // Every usable slot was skipped this rotation: send anyway rather than stall.
    }
    return -1;
}

void PathSet::mark_skip(std::size_t slot) noexcept {
    if (policy_ != PathPolicy::adaptive) return;
    slots_[slot].state = EvState::skip;
    slots_[slot].skip_rotation = rotation_;
    ++slots_[slot].counters.skips;
}

bool PathSet::retire(std::size_t slot, TimeNs now, Rng& rng) {
    if (policy_ != PathPolicy::adaptive) return false;
    EvSlot& s = slots_[slot];
    // At most a few EVs per plane are probed: enough to see the plane come
    // back, without a probe storm while a whole plane is dark.
    constexpr std::size_t kProbedPerPlane = 4;
    const auto probing = static_cast<std::size_t>(
        std::count_if(bad_.begin(), bad_.end(), [&](const BadEv& b) { return b.plane == s.plane; }));
    if (probing < kProbedPerPlane) bad_.push_back(BadEv{s.ev, s.plane, 0, now, 0, 0, probe_first_ns_});
    ++retirements_;
    ++s.counters.retirements;
    // A plane's worth of retirements in a row with no acknowledgement on it:
    // the plane failed, not the paths. Park the slot instead of feeding it
    // fresh EVs that would fail the same way; a probe answer brings it back.
    const std::uint32_t per_plane = static_cast<std::uint32_t>(slots_.size()) / planes_;
    if (++retire_streak_[s.plane] >= per_plane) {
        s.parked = true;
        reset_slot(slot, s.ev);
        return true;
    }
    // Replace from the same plane: a known-good backup first, else a fresh EV.
    auto it = std::find_if(backup_.begin(), backup_.end(),
                           [&](std::uint32_t ev) { return routing::ev_plane(ev) == s.plane; });
    std::uint32_t replacement;
    if (it != backup_.end()) {
        replacement = *it;
        backup_.erase(it);
    } else {
        replacement = fresh_ev(s.plane, rng);
    }
    reset_slot(slot, replacement);
    return true;
}

void PathSet::reset_slot(std::size_t slot, std::uint32_t ev) noexcept {
    EvSlot& s = slots_[slot];
    s.ev = ev;
    s.state = EvState::good;
    s.last_acked_tx_seq = 0;
    s.suspect_ns = 0;
    s.loss_ewma = 0.0;
    clear_tracked(slot);
}

bool PathSet::deny(std::uint32_t ev, Rng& rng) {
    denied_.push_back(ev);
    std::erase(backup_, ev);
    std::erase_if(bad_, [&](const BadEv& b) { return b.ev == ev; });
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].ev != ev) continue;
        reset_slot(i, fresh_ev(slots_[i].plane, rng));
        return true;
    }
    return false;
}

bool PathSet::track(std::size_t slot, std::uint32_t psn, std::uint64_t tx_seq) noexcept {
    EvSlot& s = slots_[slot];
    if (s.fifo_count == depth_) return false;
    const std::uint32_t pos = (s.fifo_head + s.fifo_count) % depth_;
    fifo_[slot * depth_ + pos] = (tx_seq << 24) | (psn & 0xFFFFFF);
    ++s.fifo_count;
    return true;
}

void PathSet::tracked_at(std::size_t slot, std::uint32_t i, std::uint32_t& psn, std::uint64_t& tx_seq) const noexcept {
    const EvSlot& s = slots_[slot];
    const std::uint64_t e = fifo_[slot * depth_ + (s.fifo_head + i) % depth_];
    psn = static_cast<std::uint32_t>(e & 0xFFFFFF);
    tx_seq = e >> 24;
}

void PathSet::pop_tracked(std::size_t slot) noexcept {
    EvSlot& s = slots_[slot];
    if (s.fifo_count == 0) return;
    s.fifo_head = (s.fifo_head + 1) % depth_;
    --s.fifo_count;
}

void PathSet::clear_tracked(std::size_t slot) noexcept {
    slots_[slot].fifo_head = 0;
    slots_[slot].fifo_count = 0;
}

bool PathSet::record_outcome(std::size_t slot, bool lost) noexcept {
    EvSlot& s = slots_[slot];
    if (!lost) retire_streak_[s.plane] = 0;
    const double x = lost ? 1.0 : 0.0;
    s.loss_ewma += (x - s.loss_ewma) / 8.0;
    qp_loss_ewma_ += (x - qp_loss_ewma_) / 256.0;
    return lost && s.loss_ewma > 0.05 && s.loss_ewma > 3.0 * qp_loss_ewma_;
}

BadEv* PathSet::probe_due(TimeNs now) noexcept {
    for (auto& b : bad_)
        if (b.probe_id == 0 && b.next_probe_ns <= now) return &b;
    return nullptr;
}

bool PathSet::on_probe_answer(std::uint32_t ev, std::uint16_t probe_id, std::uint32_t needed, Rng& rng) {
    auto it = std::find_if(bad_.begin(), bad_.end(), [&](const BadEv& b) { return b.ev == ev; });
    if (it == bad_.end() || it->probe_id == 0 || it->probe_id != probe_id) return false;
    it->probe_id = 0;
    it->interval_ns = probe_first_ns_;
    it->next_probe_ns = it->probe_sent_ns;  // answered: probe again right away until restored
    const std::uint8_t plane = it->plane;
    // The plane answers again: parked slots come back at once with fresh EVs.
    retire_streak_[plane] = 0;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (!slots_[i].parked || slots_[i].plane != plane) continue;
        slots_[i].parked = false;
        slots_[i].ev = fresh_ev(plane, rng);
    }
    if (++it->successes < needed) return false;
    backup_.push_back(it->ev);
    bad_.erase(it);
    ++restorations_;
    return true;
}

std::uint32_t PathSet::parked() const noexcept {
    return static_cast<std::uint32_t>(std::count_if(slots_.begin(), slots_.end(), [](const EvSlot& s) { return s.parked; }));
}

void PathSet::expire_probes(TimeNs now, TimeNs timeout) noexcept {
    for (auto& b : bad_) {
        if (b.probe_id != 0 && now >= b.probe_sent_ns + timeout) {
            b.probe_id = 0;
            b.successes = 0;
            b.interval_ns = std::min(probe_max_ns_, std::max(b.interval_ns, probe_first_ns_) * 2);
            b.next_probe_ns = b.probe_sent_ns + b.interval_ns;
        }
    }
}

TimeNs PathSet::next_probe_ns() const noexcept {
    TimeNs t = kNever;
    for (const auto& b : bad_)
        if (b.probe_id == 0) t = std::min(t, b.next_probe_ns);
    return t;
}

}  // namespace omrc::core
