// SPDX-License-Identifier: BSD-3-Clause
// The planner of policy `planned` (NSLB-style network-level load balancing):
// what a controller that knows the job's communication pattern would install.
// Every connection that crosses the T1 tier gets one T1 per plane such that,
// at every T0, the connections leaving it use distinct T1s and so do the
// connections entering it, whenever the T0 has no more of them than T1s: no
// two connections then share a T0→T1 or a T1→T0 link. With more (an
// all-to-all), each T1 carries ⌈degree / T1s⌉ of them at most.
//
// It is a proper edge colouring of the bipartite multigraph (source T0 →
// destination T0, one edge per connection) with T1s as colours, which exists
// with max-degree colours (König); built one edge at a time, swapping the two
// colours along an alternating path where both ends have no common free colour.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/config.hpp"

namespace omrc::sim {

struct PlanShape {
    std::uint32_t t0 = 0;            ///< T0 switches per plane
    std::uint32_t t1 = 0;            ///< T1 switches per plane
    std::uint32_t hosts_per_t0 = 0;
    std::uint32_t planes = 1;
};

/// One plan per connection (src host, dst host), in the order given.
/// Connections within one T0 cross no T1: their plan is empty (t1_count 0).
/// `dead` (planes × t1, true = failed; empty: none): a re-plan after a
/// failure keeps every connection on its T1s and gives those whose T1 of a
/// plane failed no path in that plane (PathPlan::kNoT1), unless that would
/// leave a connection no plane at all (a single-plane fabric): then it
/// shares the least used live T1 of each plane.
[[nodiscard]] std::vector<core::PathPlan> plan_paths(
    const std::vector<std::pair<std::uint32_t, std::uint32_t>>& conns, const PlanShape& shape,
    const std::vector<bool>& dead = {});

/// The largest number of connections of `plans` that share one T0→T1 or
/// T1→T0 link of a plane (1: conflict-free). For tests and reports.
[[nodiscard]] std::uint32_t max_link_sharing(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& conns,
                                             const std::vector<core::PathPlan>& plans, const PlanShape& shape);

}  // namespace omrc::sim
