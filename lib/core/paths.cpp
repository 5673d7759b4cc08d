// SPDX-License-Identifier: BSD-3-Clause
#include "core/paths.hpp"

#include <algorithm>
#include <numeric>

#include "core/psn.hpp"
#include "routing/fabric.hpp"

namespace omrc::core {

namespace {
/// How long a group that lost an EV is avoided by stand-ins, in probe
/// intervals (about as long as three unanswered probes take, with margin).
constexpr TimeNs kAvoidIntervals = 32;
}  // namespace

const char* to_string(EvState s) noexcept {
    switch (s) {
        case EvState::good: return "good";
        case EvState::skip: return "skip";
        case EvState::assumed_bad: return "assumed_bad";
        case EvState::denied: return "denied";
    }
    return "unknown";
}

std::uint16_t PathSet::group_of(std::uint32_t ev) const noexcept {
    return t1s_ != 0 ? static_cast<std::uint16_t>(routing::ev_path(ev) % t1s_) : 0;
}

std::uint32_t PathSet::fresh_ev(std::uint32_t plane, std::uint32_t group, Rng& rng) {
    // Walk the path space of the plane; where groups are known, only the
    // paths of `group` (path ≡ group mod T1s). The salt keeps EVs distinct
    // for ECMP hashing and from denied values.
    const std::uint32_t per_group = t1s_ != 0 ? std::max<std::uint32_t>(routing::kEvPaths / t1s_, 1) : routing::kEvPaths;
    for (;;) {
        const std::uint32_t k = next_path_[plane]++ % per_group;
        const std::uint32_t path = t1s_ != 0 ? group + t1s_ * k : k;
        const std::uint32_t ev = routing::make_ev(plane, path & routing::kEvPathMask, static_cast<std::uint16_t>(rng.next_u32()));
        if (std::find(denied_.begin(), denied_.end(), ev) == denied_.end()) return ev;
    }
}

bool PathSet::in_plan(std::uint32_t plane, std::uint32_t group) const noexcept {
    if (plan_.t1_count == 0 || t1s_ == 0) return true;
    if (plan_.first_t1[plane % kMaxPlanes] == PathPlan::kNoT1) return false;
    const std::uint32_t first = plan_.first_t1[plane % kMaxPlanes] % t1s_;
    return (group + t1s_ - first) % t1s_ < plan_.t1_count;
}

void PathSet::init(PathPolicy policy, std::uint32_t planes, std::uint32_t evs, std::uint32_t backups,
                   std::uint32_t track_depth, std::uint32_t qpn, std::uint32_t t1s, Rng& rng, const PathPlan& plan) {
    policy_ = policy;
    planes_ = std::max<std::uint32_t>(planes, 1);
    depth_ = std::max<std::uint32_t>(track_depth, 1);
    t1s_ = std::min<std::uint32_t>(t1s, routing::kEvPaths);
    plan_ = PathPlan{};
    if (follows_plan(policy_) && t1s_ != 0 && plan.t1_count != 0) {
        plan_ = plan;
        plan_.t1_count = static_cast<std::uint16_t>(std::min<std::uint32_t>(plan.t1_count, t1s_));
    }
    // The groups a plane's slots take in turn: all T1s, or the plan's.
    const std::uint32_t span = plan_.t1_count != 0 ? plan_.t1_count : t1s_;
    const std::uint32_t per_plane = std::max<std::uint32_t>((evs + planes_ - 1) / planes_, 1);
    next_path_.assign(planes_, 0);
    retire_streak_.assign(planes_, 0);
    for (auto& p : next_path_) p = static_cast<std::uint32_t>(rng.below(routing::kEvPaths));
    // Per plane, slots take consecutive groups from a random start: each T1
    // carries per_plane / T1s slots (±1), and QPs start on different T1s.
    std::vector<std::uint32_t> start(planes_);
    for (std::uint32_t p = 0; p < planes_; ++p) {
        if (plan_.t1_count != 0) start[p] = plan_.first_t1[p % kMaxPlanes] == PathPlan::kNoT1 ? 0 : plan_.first_t1[p % kMaxPlanes] % t1s_;
        else start[p] = t1s_ != 0 ? static_cast<std::uint32_t>(rng.below(t1s_)) : 0;
    }
    slots_.assign(static_cast<std::size_t>(per_plane) * planes_, EvSlot{});
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        EvSlot& s = slots_[i];
        s.plane = static_cast<std::uint8_t>(i % planes_);  // interleaved: consecutive slots alternate planes
        const auto k = static_cast<std::uint32_t>(i / planes_);
        const std::uint32_t group = t1s_ != 0 ? (start[s.plane] + k % span) % t1s_ : 0;
        s.ev = s.home_ev = fresh_ev(s.plane, group, rng);
        s.parked = !in_plan(s.plane, group);  // a plane the plan gives the QP no path in
    }
    fifo_.assign(slots_.size() * depth_, 0);
    reps_ring_.assign(policy_ == PathPolicy::reps ? planes_ : 0, std::vector<std::uint32_t>(per_plane, 0));
    reps_head_.assign(reps_ring_.size(), 0);
    reps_count_.assign(reps_ring_.size(), 0);
    backup_.clear();
    for (std::uint32_t b = 0; b < backups; ++b) {
        const std::uint32_t plane = b % planes_;
        const std::uint32_t group =
            t1s_ != 0 ? (start[plane] + static_cast<std::uint32_t>(rng.below(span))) % t1s_ : 0;
        backup_.push_back(fresh_ev(plane, group, rng));
    }
    bad_.clear();
    groups_.clear();
    cursor_ = 0;
    rotation_ = 0;
    new_rotation(rng);
    ecmp_slot_ = qpn % static_cast<std::uint32_t>(slots_.size());
}

void PathSet::replan(const PathPlan& plan, Rng& rng, const SlotHook& before_reset) {
    if (!follows_plan(policy_) || t1s_ == 0 || plan.t1_count == 0) return;
    plan_ = plan;
    plan_.t1_count = static_cast<std::uint16_t>(std::min<std::uint32_t>(plan.t1_count, t1s_));
    // Slot i of plane p is the (i / planes)-th of its plane, as in init.
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        EvSlot& s = slots_[i];
        const std::uint32_t home_plane = routing::ev_plane(s.home_ev);
        if (plan_.first_t1[home_plane % kMaxPlanes] == PathPlan::kNoT1) {
            // No path in this plane any more: the slot parks (its share goes to the other planes).
            if (!s.parked) {
                s.parked = true;
                if (before_reset) before_reset(i);
                reset_slot(i, s.ev);
            }
            continue;
        }
        const auto k = static_cast<std::uint32_t>(i / planes_);
        const std::uint32_t group = (plan_.first_t1[home_plane % kMaxPlanes] % t1s_ + k % plan_.t1_count) % t1s_;
        if (group_of(s.home_ev) == group && (s.ev == s.home_ev || in_plan(s.plane, group_of(s.ev))) && !s.parked)
            continue;  // already on the plan
        s.home_ev = fresh_ev(home_plane, group, rng);
        s.parked = false;
        if (before_reset) before_reset(i);
        reset_slot(i, s.home_ev);
    }
    std::erase_if(backup_, [&](std::uint32_t ev) { return !in_plan(routing::ev_plane(ev), group_of(ev)); });
}

void PathSet::new_rotation(Rng& rng) noexcept {
    const auto n = static_cast<std::uint32_t>(slots_.size());
    offset_ = n > 1 ? static_cast<std::uint32_t>(rng.below(n)) : 0;
    stride_ = 1;
    if (n > 2) {
        // Coprime with n: the rotation visits every slot once; with n a
        // multiple of the plane count, consecutive picks change plane.
        do {
            stride_ = 1 + static_cast<std::uint32_t>(rng.below(n - 1));
        } while (std::gcd(stride_, n) != 1);
    }
}

void PathSet::begin_burst(Rng& rng) noexcept {
    if (policy_ == PathPolicy::ecmp || cursor_ == 0) return;
    cursor_ = 0;
    ++rotation_;  // ends SKIP marks of the rotation cut short, as its natural end would
    new_rotation(rng);
}

int PathSet::select(std::uint32_t plane_mask, Rng& rng, TimeNs now, TimeNs stale_after_ns,
                    std::uint32_t stale_packets) noexcept {
    const auto n = static_cast<std::uint32_t>(slots_.size());
    if (policy_ == PathPolicy::ecmp) {
        // One EV per QP; fail over to the next plane only when its port is down.
        for (std::uint32_t k = 0; k < n; ++k) {
            const std::uint32_t i = (ecmp_slot_ + k) % n;
            if (plane_mask & (1u << slots_[i].plane)) return static_cast<int>(i);
        }
        return -1;
    }
    const bool limit = stale_packets != 0 && manages_paths();
    const auto stale = [&](const EvSlot& s) {
        return limit && s.acked_ev == s.ev && s.last_ack_ns != 0 && now > s.last_ack_ns + stale_after_ns;
    };
    const auto waiting = [&](const EvSlot& s) { return stale(s) && s.stale_sent >= stale_packets; };
    const auto take = [&](std::uint32_t i) {
        EvSlot& s = slots_[i];
        if (stale(s) && s.stale_sent++ == 0) ++stale_starts_;
        return static_cast<int>(i);
    };
    for (int pass = 0; pass < 2; ++pass) {
        for (std::uint32_t k = 0; k < n; ++k) {
            const auto i = static_cast<std::uint32_t>((offset_ + std::uint64_t{cursor_} * stride_) % n);
            if (++cursor_ == n) {
                cursor_ = 0;
                ++rotation_;
                new_rotation(rng);
            }
            EvSlot& s = slots_[i];
            if (!(plane_mask & (1u << s.plane)) || s.parked) continue;
            if (waiting(s)) {
                // Its turn goes to another slot of its plane, so the rotation
                // keeps its per-plane counts (a turn passed to the next slot
                // in the order would move the packet to another plane, and a
                // burst's slowest plane sets its time).
                std::uint32_t best = n;
                for (std::uint32_t d = 1; d < n; ++d) {
                    const std::uint32_t j = (i + d) % n;
                    const EvSlot& t = slots_[j];
                    if (t.plane != s.plane || t.parked || waiting(t)) continue;
                    if (pass == 0 && t.state == EvState::skip && t.skip_rotation >= rotation_) continue;
                    if (best == n || t.fifo_count < slots_[best].fifo_count) best = j;
                }
                if (best != n) return take(best);
                continue;  // the whole plane waits: the turn passes on
            }
            if (manages_paths() && pass == 0 && s.state == EvState::skip) {
                if (s.skip_rotation >= rotation_) continue;
                s.state = EvState::good;
            }
            return take(i);
        }
        // Every usable slot was skipped this rotation: send anyway rather than
        // stall. Stale slots out of packets are not used even then: when every
        // one waits so, the QP waits for acknowledgements.
    }
    return -1;
}

void PathSet::mark_skip(std::size_t slot) noexcept {
    if (!manages_paths()) return;
    slots_[slot].state = EvState::skip;
    slots_[slot].skip_rotation = rotation_;
    ++slots_[slot].counters.skips;
}

ProbeGroup& PathSet::group_entry(std::uint8_t plane, std::uint16_t group) {
    for (ProbeGroup& g : groups_)
        if (g.plane == plane && g.group == group) return g;
    ProbeGroup g;
    g.plane = plane;
    g.group = group;
    groups_.push_back(g);
    return groups_.back();
}

std::uint32_t PathSet::stand_in(std::uint32_t plane, std::uint32_t avoid_group, TimeNs now, std::uint32_t plane_mask,
                                Rng& rng) {
    // Returns 0 (never a valid EV: plane nibble 0) when the slot should park.
    std::uint32_t group = 0;
    if (t1s_ != 0) {
        // Groups known: the stand-in goes to the (plane, T1) with the fewest
        // slots among those that did not fail recently, on any usable plane.
        // Every healthy T1 then carries the same share of the QP, and a plane
        // that lost a T1 carries less (it has less to carry it with) rather
        // than gating the QP at the equal split.
        const std::size_t n = std::size_t{planes_} * t1s_;
        std::vector<std::uint32_t> count(n, 0);
        std::vector<bool> avoid(n, false);
        for (const EvSlot& s : slots_)
            if (!s.parked) ++count[std::size_t{s.plane} * t1s_ + group_of(s.ev)];
        // Planned: groups outside the plan are not the QP's to use (the
        // controller re-plans around a failure; until then a slot whose
        // planned groups all failed parks).
        if (plan_.t1_count != 0)
            for (std::size_t i = 0; i < n; ++i)
                if (!in_plan(static_cast<std::uint32_t>(i / t1s_), static_cast<std::uint32_t>(i % t1s_)))
                    count[i] = UINT32_MAX;
        for (const ProbeGroup& g : groups_)
            if (g.failed_ns + kAvoidIntervals * probe_interval_ns_ > now) avoid[std::size_t{g.plane} * t1s_ + g.group] = true;
        for (const BadEv& b : bad_) avoid[std::size_t{b.plane} * t1s_ + b.group] = true;
        avoid[std::size_t{plane} * t1s_ + avoid_group] = true;
        // The fullest healthy group: a stand-in may bring a group up to it,
        // never above (the slot is parked instead, see retire()).
        std::uint32_t fullest = 0;
        for (std::size_t i = 0; i < n; ++i)
            if (!avoid[i] && count[i] != UINT32_MAX && (plane_mask & (1u << (i / t1s_))))
                fullest = std::max(fullest, count[i]);
        std::size_t best_i = n;
        std::uint32_t best = UINT32_MAX, ties = 0;
        for (bool relax : {false, true}) {
            for (std::size_t i = 0; i < n; ++i) {
                const auto p = static_cast<std::uint32_t>(i / t1s_);
                if (!(plane_mask & (1u << p)) || (avoid[i] && !relax)) continue;
                if (relax && p == plane && i % t1s_ == avoid_group && t1s_ > 1) continue;
                if (count[i] == UINT32_MAX) continue;  // outside the plan
                if (count[i] < best) {
                    best = count[i];
                    best_i = i;
                    ties = 1;
                } else if (count[i] == best && rng.below(++ties) == 0) {
                    best_i = i;  // even choice among the least used
                }
            }
            if (best_i != n) break;  // else every group failed recently: the least used of them
        }
        if (best_i != n && !avoid[best_i] && best >= fullest && fullest != 0) return 0;  // park: even as it is
        if (best_i == n && plan_.t1_count != 0) return 0;  // planned, nothing of the plan usable: park
        if (best_i != n) {
            plane = static_cast<std::uint32_t>(best_i / t1s_);
            group = static_cast<std::uint32_t>(best_i % t1s_);
        }
    }
    // A known-good backup of that plane and group first, else a fresh EV.
    auto it = std::find_if(backup_.begin(), backup_.end(), [&](std::uint32_t ev) {
        return routing::ev_plane(ev) == plane && (t1s_ == 0 || group_of(ev) == group);
    });
    if (it != backup_.end()) {
        const std::uint32_t ev = *it;
        backup_.erase(it);
        return ev;
    }
    return fresh_ev(plane, group, rng);
}

bool PathSet::retire(std::size_t slot, TimeNs now, Rng& rng, std::uint32_t plane_mask, const SlotHook& before_park) {
    if (!manages_paths()) return false;
    EvSlot& s = slots_[slot];
    const std::uint16_t group = group_of(s.ev);
    bad_.push_back(BadEv{s.ev, s.plane, group, 0, now});
    ProbeGroup& g = group_entry(s.plane, group);
    g.failed_ns = now;
    if (g.probe_id == 0 && g.next_probe_ns <= now) g.next_probe_ns = now + probe_interval_ns_;
    ++g.retirements;
    ++retirements_;
    ++s.counters.retirements;
    // Groups not known: a plane's worth of retirements in a row with no
    // acknowledgement on it means the plane failed, not the paths. Park its
    // slots, all of them, instead of feeding them stand-ins that would fail
    // the same way; a probe answer on the plane brings them back. (Where
    // groups are known, stand-ins leave failed groups, and a failed plane,
    // by themselves.)
    const std::uint32_t per_plane = static_cast<std::uint32_t>(slots_.size()) / planes_;
    if (t1s_ == 0 && ++retire_streak_[s.plane] >= per_plane) {
        const std::uint8_t plane = s.plane;
        s.parked = true;
        reset_slot(slot, s.ev);
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            if (i == slot || slots_[i].parked || slots_[i].plane != plane) continue;
            if (before_park) before_park(i);
            slots_[i].parked = true;
            reset_slot(i, slots_[i].ev);
        }
        return true;
    }
    const std::uint32_t ev = stand_in(s.plane, group, now, plane_mask, rng);
    if (ev == 0) {
        // Every healthy group already carries as many of the QP's slots as
        // any: a stand-in would load one T1 more than the others. The slot
        // waits, parked, for its home EV (the QP sprays over fewer EVs, all
        // T1s evenly).
        s.parked = true;
        reset_slot(slot, s.ev);
        return true;
    }
    reset_slot(slot, ev);
    return true;
}

void PathSet::reset_slot(std::size_t slot, std::uint32_t ev) noexcept {
    EvSlot& s = slots_[slot];
    s.ev = ev;
    s.plane = static_cast<std::uint8_t>(routing::ev_plane(ev));  // a stand-in may be of another plane
    s.state = EvState::good;
    s.last_acked_tx_seq = 0;
    s.suspect_ns = 0;
    s.loss_ewma = 0.0;
    clear_tracked(slot);
}

int PathSet::reps_choose(int slot, TimeNs now, Rng& rng, const SlotHook& before_reset) {
    if (slot < 0 || policy_ != PathPolicy::reps) return slot;
    const std::uint8_t plane = slots_[static_cast<std::size_t>(slot)].plane;
    std::vector<std::uint32_t>& ring = reps_ring_[plane];
    std::uint32_t& head = reps_head_[plane];
    std::uint32_t& count = reps_count_[plane];
    const auto cap = static_cast<std::uint32_t>(ring.size());
    std::uint32_t ev = 0;
    if (count > 0) {
        ev = ring[head];
        head = (head + 1) % cap;
        --count;
        ++reps_recycled_;
        if (now < reps_frozen_until_) {  // frozen: the known-good entropies are cycled, not used up
            ring[(head + count) % cap] = ev;
            ++count;
        }
    } else {
        ev = fresh_ev(plane, t1s_ != 0 ? static_cast<std::uint32_t>(rng.below(t1s_)) : 0, rng);
        ++reps_explored_;
    }
    // A slot that holds the EV already carries the packet: the packets on
    // one EV stay on one slot, in order.
    for (std::size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].ev == ev && !slots_[i].parked) return static_cast<int>(i);
    const auto s = static_cast<std::size_t>(slot);
    if (before_reset) before_reset(s);
    reset_slot(s, ev);
    return slot;
}

void PathSet::reps_ack(std::uint32_t ev, bool marked) {
    if (policy_ != PathPolicy::reps || marked) return;  // a marked entropy is dropped
    const std::uint32_t plane = routing::ev_plane(ev);
    if (plane >= reps_ring_.size()) return;
    std::vector<std::uint32_t>& ring = reps_ring_[plane];
    const auto cap = static_cast<std::uint32_t>(ring.size());
    if (reps_count_[plane] == cap) return;  // full: the ring keeps what it has
    ring[(reps_head_[plane] + reps_count_[plane]) % cap] = ev;
    ++reps_count_[plane];
}

bool PathSet::deny(std::uint32_t ev, Rng& rng) {
    denied_.push_back(ev);
    std::erase(backup_, ev);
    std::erase_if(bad_, [&](const BadEv& b) { return b.ev == ev; });
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i].ev != ev) continue;
        reset_slot(i, fresh_ev(slots_[i].plane, group_of(ev), rng));
        if (slots_[i].home_ev == ev) slots_[i].home_ev = slots_[i].ev;  // a denied EV never comes home
        return true;
    }
    return false;
}

bool PathSet::track(std::size_t slot, std::uint32_t psn, std::uint64_t tx_seq) noexcept {
    EvSlot& s = slots_[slot];
    if (s.fifo_count == depth_) return false;
    const std::uint32_t pos = (s.fifo_head + s.fifo_count) % depth_;
    fifo_[slot * depth_ + pos] = (tx_seq << kSeq24Bits) | (psn & kPsnMask);
    ++s.fifo_count;
    return true;
}

void PathSet::tracked_at(std::size_t slot, std::uint32_t i, std::uint32_t& psn, std::uint64_t& tx_seq) const noexcept {
    const EvSlot& s = slots_[slot];
    const std::uint64_t e = fifo_[slot * depth_ + (s.fifo_head + i) % depth_];
    psn = static_cast<std::uint32_t>(e & kPsnMask);
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

bool PathSet::probe_due(TimeNs now, std::uint32_t plane_mask, ProbeDue& out) noexcept {
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
        ProbeGroup& g = groups_[gi];
        if (g.probe_id != 0 || g.next_probe_ns > now) continue;
        if (!(plane_mask & (1u << g.plane))) {
            g.next_probe_ns = now + probe_interval_ns_;  // its port is down: nothing to learn now
            continue;
        }
        // The next bad EV of the group, rotating so that none goes unprobed.
        std::uint32_t members = 0;
        for (const BadEv& b : bad_) members += b.plane == g.plane && b.group == g.group;
        if (members == 0) continue;
        std::uint32_t want = g.cursor % members, k = 0;
        for (const BadEv& b : bad_) {
            if (b.plane != g.plane || b.group != g.group) continue;
            if (k++ == want) {
                out = {gi, b.ev, b.plane};
                return true;
            }
        }
    }
    return false;
}

void PathSet::probe_sent(const ProbeDue& p, std::uint16_t probe_id, TimeNs now) noexcept {
    ProbeGroup& g = groups_[p.group_index];
    g.probe_id = probe_id;
    g.probe_ev = p.ev;
    g.probe_sent_ns = now;
    g.next_probe_ns = now + probe_interval_ns_;
    ++g.cursor;
    ++g.probes;
}

void PathSet::restore(std::uint32_t ev, const SlotHook& before_reset) {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        EvSlot& s = slots_[i];
        if (s.home_ev != ev || (s.ev == ev && !s.parked)) continue;  // a parked slot still names its EV
        if (!s.parked) backup_.push_back(s.ev);  // the stand-in goes back to the spares (its plane may differ)
        s.parked = false;
        if (before_reset) before_reset(i);
        reset_slot(i, ev);
        return;
    }
    backup_.push_back(ev);
}

std::uint32_t PathSet::on_probe_answer(std::uint32_t ev, std::uint16_t probe_id, std::uint32_t needed, Rng& rng,
                                       TimeNs now, const SlotHook& before_reset) {
    auto git = std::find_if(groups_.begin(), groups_.end(),
                            [&](const ProbeGroup& g) { return g.probe_id != 0 && g.probe_id == probe_id && g.probe_ev == ev; });
    if (git == groups_.end()) return 0;  // late, duplicate or forged
    ProbeGroup& g = *git;
    g.probe_id = 0;
    ++g.answers;
    g.next_probe_ns = now;  // answered: probe again at once until restored
    const std::uint8_t plane = g.plane;
    const std::uint16_t group = g.group;
    retire_streak_[plane] = 0;
    std::uint32_t restored = 0;
    if (t1s_ != 0) {
        // Groups known: the answer speaks for the group (its T1 is back);
        // enough of them in a row bring every EV of the group back.
        if (++g.successes >= needed) {
            g.successes = 0;
            g.failed_ns = 0;
            for (std::size_t i = 0; i < bad_.size();) {
                if (bad_[i].plane == plane && bad_[i].group == group) {
                    restore(bad_[i].ev, before_reset);
                    bad_.erase(bad_.begin() + static_cast<std::ptrdiff_t>(i));
                    ++restored;
                } else {
                    ++i;
                }
            }
        }
    } else {
        auto b = std::find_if(bad_.begin(), bad_.end(), [&](const BadEv& x) { return x.ev == ev; });
        if (b != bad_.end() && ++b->successes >= needed) {
            restore(b->ev, before_reset);
            bad_.erase(b);
            restored = 1;
        }
    }
    if (restored != 0) {
        ++groups_[static_cast<std::size_t>(git - groups_.begin())].restorations;
        restorations_ += restored;
    }
    // Groups not known: the plane answers again, so parked slots of it come
    // back, with stand-ins where their own EV is still out. (Groups known:
    // a parked slot waits for its home EV, restored above.)
    // A slot parked with its plane, its own EV never retired, keeps that EV.
    for (std::size_t i = 0; i < slots_.size() && t1s_ == 0; ++i) {
        EvSlot& s = slots_[i];
        if (!s.parked || s.plane != plane) continue;
        s.parked = false;
        if (before_reset) before_reset(i);
        const bool out = std::any_of(bad_.begin(), bad_.end(), [&](const BadEv& b) { return b.ev == s.ev; });
        reset_slot(i, out ? stand_in(plane, group_of(s.ev), now, ~0u, rng) : s.ev);
    }
    return restored;
}

std::uint32_t PathSet::parked() const noexcept {
    return static_cast<std::uint32_t>(std::count_if(slots_.begin(), slots_.end(), [](const EvSlot& s) { return s.parked; }));
}

void PathSet::expire_probes(TimeNs now, TimeNs timeout) noexcept {
    for (ProbeGroup& g : groups_) {
        if (g.probe_id == 0 || now < g.probe_sent_ns + timeout) continue;
        g.probe_id = 0;
        g.successes = 0;
        for (BadEv& b : bad_)
            if (b.ev == g.probe_ev) b.successes = 0;
        g.next_probe_ns = std::max(g.next_probe_ns, g.probe_sent_ns + probe_interval_ns_);  // fixed cadence
    }
    // Forget groups with nothing out, no probe outstanding and no recent failure.
    std::erase_if(groups_, [&](const ProbeGroup& g) {
        return g.probe_id == 0 && g.failed_ns + kAvoidIntervals * probe_interval_ns_ <= now &&
               std::none_of(bad_.begin(), bad_.end(),
                            [&](const BadEv& b) { return b.plane == g.plane && b.group == g.group; });
    });
}

TimeNs PathSet::next_probe_event_ns(TimeNs timeout) const noexcept {
    TimeNs t = kNever;
    for (const ProbeGroup& g : groups_) {
        if (g.probe_id != 0) {
            t = std::min(t, g.probe_sent_ns + timeout);
            continue;
        }
        if (std::any_of(bad_.begin(), bad_.end(), [&](const BadEv& b) { return b.plane == g.plane && b.group == g.group; }))
            t = std::min(t, g.next_probe_ns);
    }
    return t;
}

}  // namespace omrc::core
