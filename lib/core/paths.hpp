// SPDX-License-Identifier: BSD-3-Clause
// The EV (path) set of one QP: an active set split equally across planes, a
// pool of known-good backups, and the ASSUMED_BAD EVs being probed back.
// Path selection is a runtime policy (ecmp, spray, adaptive).
#pragma once

#include <cstdint>
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
    std::uint64_t lost = 0;       ///< losses inferred from path order on this EV
    std::uint64_t timeouts = 0;   ///< oldest-unacked timer expiries
    std::uint64_t ecn = 0;
    std::uint64_t trims = 0;
    std::uint64_t retirements = 0;
    std::uint64_t skips = 0;      ///< GOOD → SKIP transitions (ECN echo, trim)
};

struct EvSlot {
    std::uint32_t ev = 0;
    std::uint8_t plane = 0;
    EvState state = EvState::good;   ///< good or skip (retired EVs leave the slot)
    std::uint64_t skip_rotation = 0; ///< skip while rotation ≤ this
    std::uint64_t last_acked_tx_seq = 0;  ///< highest transmission sequence acknowledged on this EV
    std::uint32_t last_acked_psn = 0;     ///< PSN of that transmission
    TimeNs suspect_ns = 0;           ///< when an older packet on this EV became overdue (0 = none)
    std::uint32_t fifo_head = 0;     ///< path-order tracking ring (see PathSet::track)
    std::uint32_t fifo_count = 0;
    double loss_ewma = 0.0;          ///< recent loss fraction of packets on this EV (weight 1/8 per packet)
    bool parked = false;             ///< its plane failed as a whole: not used until a probe on the plane succeeds
    bool infer_queued = false;       ///< listed in Qp::infer_pending
    EvCounters counters{};
};

/// An EV out of the active set, waiting for probes to bring it back.
struct BadEv {
    std::uint32_t ev = 0;
    std::uint8_t plane = 0;
    std::uint8_t successes = 0;       ///< consecutive probe answers
    TimeNs next_probe_ns = 0;
    std::uint16_t probe_id = 0;       ///< outstanding probe's id (PETH, 16 bits; 0 = none)
    TimeNs probe_sent_ns = 0;
    TimeNs interval_ns = 0;           ///< current probe period; doubles after each unanswered probe, up to a cap
};

class PathSet {
public:
    /// Builds `evs` active slots (rounded up to a multiple of planes) and
    /// `backups` spare EVs, all fresh. `qpn` spreads ECMP QPs over planes.
    void init(PathPolicy policy, std::uint32_t planes, std::uint32_t evs, std::uint32_t backups,
              std::uint32_t track_depth, std::uint32_t qpn, Rng& rng);
    /// Probe period of a newly retired EV and the cap its backoff reaches.
    void set_probe_intervals(TimeNs first_ns, TimeNs max_ns) noexcept {
        probe_first_ns_ = first_ns;
        probe_max_ns_ = max_ns;
    }

    /// Next slot to send on, or -1 when no plane in `plane_mask` is usable.
    int select(std::uint32_t plane_mask) noexcept;

    [[nodiscard]] std::size_t size() const noexcept { return slots_.size(); }
    EvSlot& slot(std::size_t i) noexcept { return slots_[i]; }
    const EvSlot& slot(std::size_t i) const noexcept { return slots_[i]; }
    [[nodiscard]] PathPolicy policy() const noexcept { return policy_; }

    /// ECN echo or trim NACK on a slot: skip it for one rotation (adaptive only).
    void mark_skip(std::size_t slot) noexcept;
    /// Retire the slot's EV (adaptive only; returns false otherwise): it goes
    /// to the probe list and the slot gets a backup EV of the same plane, or a
    /// fresh one.
    bool retire(std::size_t slot, TimeNs now, Rng& rng);
    /// Operator denial: the EV leaves the active set for good (until allowed).
    bool deny(std::uint32_t ev, Rng& rng);

    /// Remembers that transmission `tx_seq` of `psn` went out on `slot`.
    /// Returns false when the slot's ring is full (the packet is then only
    /// covered by the QP-wide scan).
    bool track(std::size_t slot, std::uint32_t psn, std::uint64_t tx_seq) noexcept;
    /// Tracked entries of a slot, oldest first: (psn, tx_seq).
    [[nodiscard]] std::uint32_t tracked(std::size_t slot) const noexcept { return slots_[slot].fifo_count; }
    void tracked_at(std::size_t slot, std::uint32_t i, std::uint32_t& psn, std::uint64_t& tx_seq) const noexcept;
    void pop_tracked(std::size_t slot) noexcept;
    void clear_tracked(std::size_t slot) noexcept;

    /// Probing: an ASSUMED_BAD EV whose probe is due, or nullptr.
    BadEv* probe_due(TimeNs now) noexcept;
    /// A probe answer for `ev`; true when it restored the EV to the backup pool
    /// (parked slots of its plane then come back with fresh EVs).
    bool on_probe_answer(std::uint32_t ev, std::uint16_t probe_id, std::uint32_t needed, Rng& rng);
    /// Slots parked because their whole plane failed.
    [[nodiscard]] std::uint32_t parked() const noexcept;
    /// Probe timed out (no answer within `timeout`): success run resets.
    void expire_probes(TimeNs now, TimeNs timeout) noexcept;
    [[nodiscard]] TimeNs next_probe_ns() const noexcept;
    [[nodiscard]] const std::vector<BadEv>& bad() const noexcept { return bad_; }
    [[nodiscard]] std::size_t backups() const noexcept { return backup_.size(); }

    /// Records the outcome of one packet on a slot (lost or acknowledged)
    /// and returns true when the EV's recent loss stands out from the QP's:
    /// above 5 % and above three times the loss of all the QP's EVs. Uniform
    /// loss on every path then retires nothing; one lossy EV goes at once.
    bool record_outcome(std::size_t slot, bool lost) noexcept;
    [[nodiscard]] double qp_loss_ewma() const noexcept { return qp_loss_ewma_; }

    [[nodiscard]] std::uint64_t retirements() const noexcept { return retirements_; }
    [[nodiscard]] std::uint64_t restorations() const noexcept { return restorations_; }

private:
    std::uint32_t fresh_ev(std::uint32_t plane, Rng& rng);
    /// Puts `ev` in the slot with a clean state (GOOD, no tracking, no loss history).
    void reset_slot(std::size_t slot, std::uint32_t ev) noexcept;

    PathPolicy policy_ = PathPolicy::adaptive;
    std::uint32_t planes_ = 1;
    std::uint32_t depth_ = 16;
    std::vector<EvSlot> slots_;
    std::vector<std::uint64_t> fifo_;      ///< slots × depth entries: (tx_seq << 24) | psn
    std::vector<std::uint32_t> backup_;    ///< known-good spare EVs (any plane)
    std::vector<BadEv> bad_;
    std::vector<std::uint32_t> denied_;
    std::vector<std::uint32_t> next_path_; ///< per plane: next path index for fresh EVs
    std::vector<std::uint32_t> retire_streak_;  ///< per plane: retirements since the last acknowledgement on it
    TimeNs probe_first_ns_ = 50'000;
    TimeNs probe_max_ns_ = 1'000'000;
    std::uint32_t cursor_ = 0;
    std::uint64_t rotation_ = 0;
    std::uint32_t ecmp_slot_ = 0;
    double qp_loss_ewma_ = 0.0;            ///< loss fraction over all EVs (weight 1/256 per packet)
    std::uint64_t retirements_ = 0;
    std::uint64_t restorations_ = 0;
};

}  // namespace omrc::core
