// SPDX-License-Identifier: BSD-3-Clause
// The controller of policy `rnl` (Lenovo RNL-style path scoring with
// incremental flow migration): what a fabric controller with network-wide
// perception would install, built from the public idea in our own code.
//
// Each connection that crosses the T1 tier has one T1 per plane, its
// "physical path" (the engine sprays the QP's slots of a plane over that
// T1 only, QpAttr::plan). The first mapping is a hash of (connection,
// plane), as an ECMP fabric's would be. Every interval the controller
// scores every link from three dimensions it perceives:
//   - topology: a link that is down, or whose switch is dead, scores kDead;
//   - the job's traffic demand: the connections the controller knows to be
//     active on it, each weighted by the share of its NIC it can use
//     (1 / the larger of its sender's and receiver's active connection
//     counts), in units of the link's rate;
//   - measured load: the link's utilisation over the last interval, plus
//     its data queue over its trim limit.
// A link's score is max(demand, utilisation) + queue; a connection's path
// score in a plane is the larger of its T0→T1 and T1→T0 links' scores. The
// active connections whose path scores exceed 1 + margin are candidates,
// worst first. A candidate moves to the T1 that scores best with its demand
// moved there, when that is at least `margin` better. Each move updates the
// demand it leaves and takes; at most `max_moves` moves per round, nothing
// else moves: the migration is incremental and bounded per interval. Single
// greedy moves stall where a connection's free uplinks and free downlinks
// are different T1s: on a fully packed permutation some links keep two
// connections (a two-move chain was tried and freed none of them on the
// unit test's fabric; the planner of policy planned swaps whole
// alternating paths instead).
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "drivers/sim/path_plan.hpp"

namespace omrc::sim {

struct RnlConfig {
    std::uint64_t interval_ps = 5'000'000;   ///< between two scoring rounds (5 µs)
    std::uint32_t max_moves = 32;            ///< (connection, plane) migrations per round, over the whole fabric
    double margin = 0.25;                    ///< in link rates: a move must gain at least this much
    double queue_weight = 1.0;               ///< score added by a data queue at its trim limit
};

/// What the controller perceives of one directed fabric link in one interval.
struct LinkReading {
    double utilisation = 0;   ///< transmitted bits / (rate · interval), 0..1
    double queue = 0;         ///< data-class bytes queued / the queue's limit, 0..1
    bool usable = true;       ///< the link is up and both its switches are alive
};

/// Link readings of the whole fabric: per plane, T0 i → T1 j and T1 j → T0 i.
struct FabricReading {
    std::vector<LinkReading> up;    ///< index (plane · t0 + i) · t1 + j
    std::vector<LinkReading> down;  ///< same indexing: the T1 j → T0 i link
};

/// One migration: connection `conn` (index into the controller's list) moved
/// in `plane` from T1 `from` to T1 `to`.
struct RnlMove {
    std::uint32_t conn = 0;
    std::uint32_t plane = 0;
    std::uint32_t from = 0;
    std::uint32_t to = 0;
};

class RnlController {
public:
    static constexpr double kDead = 1e9;  ///< score of a link the controller must leave

    /// `conns`: (src host, dst host) of every connection, in a fixed order.
    RnlController(std::vector<std::pair<std::uint32_t, std::uint32_t>> conns, const PlanShape& shape,
                  const RnlConfig& cfg, std::uint64_t seed);

    /// One scoring round. `active[c]`: connection c has data to send now.
    /// Returns the moves made (at most cfg.max_moves), worst first.
    std::vector<RnlMove> round(const FabricReading& reading, const std::vector<bool>& active);

    /// The current plan of connection c (t1_count 0 for a connection that
    /// stays under one T0).
    [[nodiscard]] core::PathPlan plan(std::uint32_t c) const;
    [[nodiscard]] std::uint32_t t1_of(std::uint32_t c, std::uint32_t plane) const noexcept {
        return t1_[std::size_t{c} * shape_.planes + plane];
    }
    [[nodiscard]] const std::vector<std::pair<std::uint32_t, std::uint32_t>>& conns() const noexcept { return conns_; }
    [[nodiscard]] std::uint64_t total_moves() const noexcept { return total_moves_; }
    [[nodiscard]] std::uint32_t rounds() const noexcept { return rounds_; }
    [[nodiscard]] std::uint32_t most_moves_in_a_round() const noexcept { return most_moves_; }
    /// Path score of connection c in `plane` at the last round (0 before any).
    [[nodiscard]] double last_score(std::uint32_t c, std::uint32_t plane) const noexcept {
        return score_[std::size_t{c} * shape_.planes + plane];
    }

private:
    [[nodiscard]] std::size_t link(std::uint32_t plane, std::uint32_t t0, std::uint32_t t1) const noexcept {
        return (std::size_t{plane} * shape_.t0 + t0) * shape_.t1 + t1;
    }
    [[nodiscard]] std::uint32_t t0_of(std::uint32_t host) const noexcept { return host / shape_.hosts_per_t0; }

    std::vector<std::pair<std::uint32_t, std::uint32_t>> conns_;
    PlanShape shape_;
    RnlConfig cfg_;
    std::vector<std::uint32_t> t1_;     ///< per (connection, plane): its T1 (crossing connections only)
    std::vector<double> score_;         ///< per (connection, plane): path score at the last round
    std::uint64_t total_moves_ = 0;
    std::uint32_t rounds_ = 0;
    std::uint32_t most_moves_ = 0;
};

}  // namespace omrc::sim
