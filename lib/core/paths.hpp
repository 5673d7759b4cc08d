// SPDX-License-Identifier: BSD-3-Clause
// The EV (path) set of one QP: an active set split equally across planes and,
// where the fabric is known, evenly across each plane's T1 switches; a pool of
// known-good backups; and the ASSUMED_BAD EVs being probed back. Path
// selection is a runtime policy (ecmp, spray, adaptive).
//
// Groups. In SRv6 mode the sender knows the T1 every EV crosses
// (routing::UsidTemplate: EV path bits mod T1 count): a (plane, T1) pair is a
// group, the unit that fails (a lost T1, a T0-T1 link) and the unit probed
// back. Without that knowledge (plain mode, ECMP fabrics) each plane is one
// group and every EV is its own path.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/config.hpp"
#include "core/rng.hpp"
#include "core/types.hpp"

namespace omrc::core {

enum class EvState : std::uint8_t {
    good,         ///< used every rotation
    skip,         ///< skipped until the rotation after the one it was marked in (ECN echo, trim)
    assumed_bad,  ///< retired after a loss or timeout; probed, restored after enough successes
    denied,       ///< operator: never used until allowed again
};
const char* to_string(EvState s) noexcept;

/// Per-EV counters (per slot; they follow the slot, not the EV value).
struct EvCounters {
    std::uint64_t sent = 0;
    std::uint64_t acked = 0;
    std::uint64_t lost = 0;       ///< losses inferred on this EV (path order or send order)
    std::uint64_t timeouts = 0;   ///< oldest-unacked timer expiries
    std::uint64_t ecn = 0;
    std::uint64_t trims = 0;
    std::uint64_t retirements = 0;
    std::uint64_t skips = 0;      ///< GOOD → SKIP transitions (ECN echo, trim)
};

struct EvSlot {
    std::uint32_t ev = 0;
    /// The EV this slot was given at init: a retired home EV comes back to
    /// its slot when restored (the stand-in returns to the backups), so the
    /// split over planes and T1s is even again once the fabric heals.
    std::uint32_t home_ev = 0;
    std::uint8_t plane = 0;
    EvState state = EvState::good;   ///< good or skip (retired EVs leave the slot)
    // `plane` is the current EV's: a stand-in may come from another plane.
    std::uint8_t stale_sent = 0;     ///< packets sent since the slot went stale, before an acknowledgement (≤ 255)
    std::uint32_t acked_ev = 0;      ///< the EV of last_ack_ns (a new EV in the slot has no history)
    std::uint64_t skip_rotation = 0; ///< skip while rotation ≤ this
    std::uint64_t last_acked_tx_seq = 0;  ///< highest transmission sequence acknowledged on this EV
    std::uint32_t last_acked_psn = 0;     ///< PSN of that transmission
    TimeNs suspect_ns = 0;           ///< when an older packet on this EV became overdue (0 = none)
    std::uint32_t fifo_head = 0;     ///< path-order tracking ring (see PathSet::track)
    std::uint32_t fifo_count = 0;
    double loss_ewma = 0.0;          ///< recent loss fraction of packets on this EV (weight 1/8 per packet)
    TimeNs last_ack_ns = 0;          ///< when a packet on `acked_ev` was last acknowledged (0 = never)
    bool parked = false;             ///< its plane failed as a whole: not used until a probe on the plane succeeds
    bool infer_queued = false;       ///< listed in Qp::infer_pending
    EvCounters counters{};
};

/// An EV out of the active set, waiting for probes to bring it back.
struct BadEv {
    std::uint32_t ev = 0;
    std::uint8_t plane = 0;
    std::uint16_t group = 0;          ///< PathSet::group_of(ev)
    std::uint8_t successes = 0;       ///< consecutive probe answers (per EV where groups are not known)
    TimeNs since_ns = 0;              ///< when it was retired
};

/// The probe stream of one group with EVs out: one probe at a time, at a
/// fixed cadence, rotating over the group's bad EVs.
struct ProbeGroup {
    std::uint8_t plane = 0;
    std::uint16_t group = 0;
    TimeNs failed_ns = 0;         ///< last retirement in the group (replacements avoid it for a while)
    TimeNs next_probe_ns = 0;
    std::uint16_t probe_id = 0;   ///< outstanding probe (0 = none)
    std::uint32_t probe_ev = 0;   ///< the EV it was sent on
    TimeNs probe_sent_ns = 0;
    std::uint8_t successes = 0;   ///< consecutive answers for the group (groups known)
    std::uint32_t cursor = 0;     ///< next bad EV of the group to probe
    std::uint64_t retirements = 0;
    std::uint64_t restorations = 0;
    std::uint64_t probes = 0;
    std::uint64_t answers = 0;
};

class PathSet {
public:
    /// Called with a slot about to change EV (or park), while its tracking
    /// ring still holds what was sent on it.
    using SlotHook = std::function<void(std::size_t)>;
    /// Builds `evs` active slots (rounded up to a multiple of planes) and
    /// `backups` spare EVs, all fresh. `t1s`: T1 switches per plane whose
    /// choice the EV makes (0: not known); slots of a plane spread evenly
    /// over them, from a QP-dependent start. `qpn` spreads ECMP QPs over planes.
    /// `plan` (policy planned or rnl, groups known): per plane the slots spread
    /// evenly over the plan's T1s instead, and stand-ins stay on them.
    void init(PathPolicy policy, std::uint32_t planes, std::uint32_t evs, std::uint32_t backups,
              std::uint32_t track_depth, std::uint32_t qpn, std::uint32_t t1s, Rng& rng,
              const PathPlan& plan = PathPlan{});
    /// Policies planned and rnl: a new plan from the controller (after a failure, or a
    /// new job phase). Every slot gets a home on the new plan, spread as
    /// init spreads them; slots whose group changes take a fresh EV at once
    /// (unparked), the others keep theirs. Retired EVs stay probed: one that
    /// comes back while its slot has a new home joins the backups.
    /// `before_reset(slot)` runs before a slot drops what it tracks (the
    /// engine hands those packets to the window sweep).
    void replan(const PathPlan& plan, Rng& rng, const SlotHook& before_reset = {});
    /// Probe period while a group has EVs out (fixed: no backoff).
    void set_probe_interval(TimeNs ns) noexcept { probe_interval_ns_ = ns; }
    [[nodiscard]] TimeNs probe_interval() const noexcept { return probe_interval_ns_; }

    /// Next slot to send on, or -1 when no plane in `plane_mask` is usable.
    /// Each rotation visits every usable slot once, in an order drawn per
    /// rotation (a random stride coprime with the slot count), so QPs that
    /// start together do not stay in phase on the same paths.
    /// Adaptive: a slot acknowledged last more than `stale_after_ns` before
    /// `now` carries at most `stale_packets` packets until one is
    /// acknowledged (note_ack); until then it is passed by, and when every
    /// usable slot waits so, -1 (the QP waits for acknowledgements).
    /// stale_packets 0: no such limit.
    int select(std::uint32_t plane_mask, Rng& rng, TimeNs now = 0, TimeNs stale_after_ns = 0,
               std::uint32_t stale_packets = 0) noexcept;
    /// Times a stale slot was used again (EngineConfig::stale_path_packets).
    [[nodiscard]] std::uint64_t stale_starts() const noexcept { return stale_starts_; }
    /// A packet sent on the slot's current EV `ev` was acknowledged at `now`.
    void note_ack(std::size_t slot, std::uint32_t ev, TimeNs now) noexcept {
        EvSlot& s = slots_[slot];
        s.last_ack_ns = now;
        s.acked_ev = ev;
        s.stale_sent = 0;
    }

    /// A burst begins (work posted to a QP that had nothing left to send):
    /// the rotation in progress ends and a fresh one starts, so the burst is
    /// spread over planes and T1s as evenly as its packet count allows (per
    /// plane counts within one of each other), as a new QP's first burst is.
    /// Continuing mid-rotation would start the burst mid-way through the
    /// plane cycle and can leave one plane a packet more than the others.
    void begin_burst(Rng& rng) noexcept;

    [[nodiscard]] std::size_t size() const noexcept { return slots_.size(); }
    EvSlot& slot(std::size_t i) noexcept { return slots_[i]; }
    const EvSlot& slot(std::size_t i) const noexcept { return slots_[i]; }
    [[nodiscard]] PathPolicy policy() const noexcept { return policy_; }
    /// Skips, retires and probes EVs by their state (adaptive, planned and rnl).
    [[nodiscard]] bool manages_paths() const noexcept {
        const PathPolicyInfo* p = find_path_policy(policy_);
        return p != nullptr && p->manages_paths;
    }
    /// Whether (plane, group) is one the QP's plan allows (always, without a plan).
    [[nodiscard]] bool in_plan(std::uint32_t plane, std::uint32_t group) const noexcept;
    [[nodiscard]] std::uint32_t planes() const noexcept { return planes_; }
    /// Groups per plane: the T1 count, or 1 when the fabric is not known.
    [[nodiscard]] std::uint32_t groups_per_plane() const noexcept { return t1s_ != 0 ? t1s_ : 1; }
    /// The group of an EV within its plane (its T1, or 0).
    [[nodiscard]] std::uint16_t group_of(std::uint32_t ev) const noexcept;

    /// ECN echo or trim NACK on a slot: skip it for one rotation (adaptive only).
    void mark_skip(std::size_t slot) noexcept;
    /// Retire the slot's EV (adaptive only; returns false otherwise): it goes
    /// to the probe list, its group is avoided for a while, and the slot gets
    /// a stand-in — a known-good backup or a fresh EV. Groups known: on the
    /// (plane, T1) of a usable plane (`plane_mask`) with the fewest slots
    /// that did not fail recently, whatever its plane (docs/PROTOCOL.md §11.5:
    /// healthy T1s carry equal shares, not planes). Otherwise: of the same plane.
    /// Groups not known: the retirement that completes a plane's streak (a
    /// plane's worth of retirements with no acknowledgement on it) parks
    /// every slot of the plane, calling `before_park` with each other slot
    /// while its tracking ring still holds what was sent on it.
    bool retire(std::size_t slot, TimeNs now, Rng& rng, std::uint32_t plane_mask = ~0u,
                const SlotHook& before_park = {});
    /// Policy reps (UET 1.0's recycled entropy packet spraying). Each plane
    /// keeps a FIFO of EVs whose packets were acknowledged clean (no ECN):
    /// the next packet of the plane takes the oldest (the entropy is
    /// recycled once per clean acknowledgement, so fast paths carry more);
    /// when the FIFO is empty it explores a fresh EV. A failure freezes
    /// exploration: until then a taken EV goes back to the FIFO's end (the
    /// known-good ones are cycled) and a fresh one is drawn only when the
    /// plane has none. The EV goes into the slot the rotation chose; where
    /// another slot already holds it, that slot carries the packet instead
    /// (its path-order tracking stays valid). `before_reset` runs on a slot
    /// about to change EV. Returns the slot to send on.
    int reps_choose(int slot, TimeNs now, Rng& rng, const SlotHook& before_reset);
    /// Policy reps: a packet sent once on `ev` was acknowledged; `marked`: with ECN.
    void reps_ack(std::uint32_t ev, bool marked);
    /// Policy reps: a failure was detected (an EV timeout); no exploration until `until`.
    void reps_freeze(TimeNs until) noexcept {
        if (until > reps_frozen_until_) ++reps_freezes_;
        reps_frozen_until_ = std::max(reps_frozen_until_, until);
    }
    [[nodiscard]] std::uint64_t reps_explored() const noexcept { return reps_explored_; }
    [[nodiscard]] std::uint64_t reps_recycled() const noexcept { return reps_recycled_; }
    [[nodiscard]] std::uint64_t reps_freezes() const noexcept { return reps_freezes_; }
    /// Operator denial: the EV leaves the active set for good (until allowed).
    bool deny(std::uint32_t ev, Rng& rng);

    /// Remembers that transmission `tx_seq` of `psn` went out on `slot`.
    /// Returns false when the slot's ring is full (the packet is then only
    /// covered by the QP-wide send-order detection).
    bool track(std::size_t slot, std::uint32_t psn, std::uint64_t tx_seq) noexcept;
    /// Tracked entries of a slot, oldest first: (psn, tx_seq).
    [[nodiscard]] std::uint32_t tracked(std::size_t slot) const noexcept { return slots_[slot].fifo_count; }
    void tracked_at(std::size_t slot, std::uint32_t i, std::uint32_t& psn, std::uint64_t& tx_seq) const noexcept;
    void pop_tracked(std::size_t slot) noexcept;
    void clear_tracked(std::size_t slot) noexcept;

    /// A probe to send now: the group whose cadence is due and the bad EV of
    /// it to send on (rotating). False when none is due. The caller sends it
    /// and reports its id with probe_sent().
    struct ProbeDue {
        std::size_t group_index = 0;  ///< into groups()
        std::uint32_t ev = 0;
        std::uint8_t plane = 0;
    };
    bool probe_due(TimeNs now, std::uint32_t plane_mask, ProbeDue& out) noexcept;
    void probe_sent(const ProbeDue& p, std::uint16_t probe_id, TimeNs now) noexcept;
    /// A probe answer for `ev` with `probe_id`; returns the EVs it restored
    /// (3 answers in a row by default: the group's, where groups are known;
    /// the EV's otherwise). Restored home EVs go back to their slots, others
    /// to the backups; parked slots of the plane come back. `before_reset`
    /// is called with every slot whose EV is about to change, while its
    /// tracking ring still holds what was sent on it.
    std::uint32_t on_probe_answer(std::uint32_t ev, std::uint16_t probe_id, std::uint32_t needed, Rng& rng, TimeNs now,
                                  const SlotHook& before_reset = {});
    /// Probes unanswered for `timeout`: the success run of their group (or EV) resets.
    void expire_probes(TimeNs now, TimeNs timeout) noexcept;
    /// Earliest time probe_due() or expire_probes() has work (kNever: none).
    [[nodiscard]] TimeNs next_probe_event_ns(TimeNs timeout) const noexcept;
    [[nodiscard]] const std::vector<BadEv>& bad() const noexcept { return bad_; }
    [[nodiscard]] const std::vector<ProbeGroup>& groups() const noexcept { return groups_; }
    [[nodiscard]] std::size_t backups() const noexcept { return backup_.size(); }
    /// Slots parked because their whole plane failed.
    [[nodiscard]] std::uint32_t parked() const noexcept;

    /// Records the outcome of one packet on a slot (lost or acknowledged)
    /// and returns true when the EV's recent loss stands out from the QP's:
    /// above 5 % and above three times the loss of all the QP's EVs. Uniform
    /// loss on every path then retires nothing; one lossy EV goes at once.
    bool record_outcome(std::size_t slot, bool lost) noexcept;
    [[nodiscard]] double qp_loss_ewma() const noexcept { return qp_loss_ewma_; }

    [[nodiscard]] std::uint64_t retirements() const noexcept { return retirements_; }
    [[nodiscard]] std::uint64_t restorations() const noexcept { return restorations_; }

private:
    std::uint64_t stale_starts_ = 0;  ///< see stale_starts()
    TimeNs reps_frozen_until_ = 0;    ///< reps: exploration frozen before this time
    std::uint64_t reps_explored_ = 0; ///< reps: fresh EVs drawn
    std::uint64_t reps_recycled_ = 0; ///< reps: EVs taken again from the clean FIFO
    std::uint64_t reps_freezes_ = 0;  ///< reps: freezes begun or extended
    /// reps: per plane, a ring of EVs acknowledged clean (oldest first); capacity = slots per plane.
    std::vector<std::vector<std::uint32_t>> reps_ring_;
    std::vector<std::uint32_t> reps_head_, reps_count_;  ///< per plane: the ring's first entry and its size
    /// A fresh EV of `plane` in `group` (any path where groups are not known).
    std::uint32_t fresh_ev(std::uint32_t plane, std::uint32_t group, Rng& rng);
    /// The EV a slot of `plane` takes when its own is out: see retire().
    std::uint32_t stand_in(std::uint32_t plane, std::uint32_t avoid_group, TimeNs now, std::uint32_t plane_mask, Rng& rng);
    /// Puts `ev` in the slot with a clean state (GOOD, no tracking, no loss history).
    void reset_slot(std::size_t slot, std::uint32_t ev) noexcept;
    ProbeGroup& group_entry(std::uint8_t plane, std::uint16_t group);
    /// Brings `ev` back: to its home slot, else to the backups.
    void restore(std::uint32_t ev, const SlotHook& before_reset);
    void new_rotation(Rng& rng) noexcept;

    PathPolicy policy_ = PathPolicy::adaptive;
    std::uint32_t planes_ = 1;
    std::uint32_t depth_ = 16;
    std::uint32_t t1s_ = 0;                ///< T1s per plane the EV chooses among (0: not known)
    PathPlan plan_{};                      ///< policy planned or rnl with groups known: the allowed T1s (else t1_count 0)
    std::vector<EvSlot> slots_;
    std::vector<std::uint64_t> fifo_;      ///< slots × depth entries: (tx_seq << 24) | psn
    std::vector<std::uint32_t> backup_;    ///< known-good spare EVs (any plane)
    std::vector<BadEv> bad_;
    std::vector<ProbeGroup> groups_;       ///< groups with EVs out or a recent failure (sparse)
    std::vector<std::uint32_t> denied_;
    std::vector<std::uint32_t> next_path_; ///< per plane: next path counter for fresh EVs
    std::vector<std::uint32_t> retire_streak_;  ///< per plane: retirements since the last acknowledgement on it
    TimeNs probe_interval_ns_ = 50'000;
    std::uint32_t cursor_ = 0;             ///< position in the current rotation
    std::uint32_t stride_ = 1;             ///< the rotation's stride, coprime with the slot count
    std::uint32_t offset_ = 0;             ///< the rotation's first slot
    std::uint64_t rotation_ = 0;
    std::uint32_t ecmp_slot_ = 0;
    double qp_loss_ewma_ = 0.0;            ///< loss fraction over all EVs (weight 1/256 per packet)
    std::uint64_t retirements_ = 0;
    std::uint64_t restorations_ = 0;
};

}  // namespace omrc::core
