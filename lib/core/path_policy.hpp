// SPDX-License-Identifier: BSD-3-Clause
// The path policies (how a QP chooses the EV of each packet) and their
// registry: each one's name, description and the properties the engine and
// its front ends read (configuration files, omrc-perf, omrc-fabric, stats
// name a policy through this table and nothing else). The behaviour itself
// lives in PathSet (paths.cpp), by these properties and the id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace omrc::core {

/// How a QP chooses the EV of each packet.
enum class PathPolicy : std::uint8_t {
    ecmp,      ///< one EV for the whole QP: the classic single-path RoCE baseline
    spray,     ///< oblivious rotation over the active set (only planes that are down are avoided)
    adaptive,  ///< MRC: rotation that skips, retires and probes EVs by their state
    /// adaptive, but the slots use only the T1s a controller's plan gives the
    /// QP (QpAttr::plan; NSLB-style network-level load balancing). Without a
    /// plan, or where the sender does not know T1s (plain frames), adaptive.
    planned,
    /// Lenovo RNL-style scored paths with incremental migration: in the
    /// engine the same plan-restricted spraying as planned (one or a few
    /// T1s per plane, QpAttr::plan); what differs is the controller, which
    /// starts from a hash mapping and moves only the worst-scoring
    /// connections, a few per interval (docs/DESIGNS.md).
    rnl,
    /// UET 1.0's REPS (recycled entropy packet spraying) over the slot
    /// rotation: a slot's EV is used again while its acknowledgements come
    /// back clean; one marked (ECN), trimmed or lost is dropped and the slot
    /// explores a fresh EV of its plane. An EV timeout (a failure) freezes
    /// exploration for EngineConfig::reps_freeze_ns: slots that drop their EV
    /// then take one recycled from a slot of the plane acknowledged cleanly.
    /// No retirement, no probes (docs/DESIGNS.md).
    reps,
};

/// A policy's registration.
struct PathPolicyInfo {
    PathPolicy id{};
    std::string_view name;         ///< what configuration files, omrc-perf, omrc-fabric and stats call it
    std::string_view description;  ///< one phrase, for help texts
    /// EVs are managed by their state: skipped on ECN, retired on losses
    /// that stand out, probed back (PathSet::manages_paths).
    bool manages_paths = false;
    /// Sprays only over the T1s of a controller's plan (QpAttr::plan).
    bool follows_plan = false;
    /// Offered by the public API (include/omrc/verbs.hpp PathPolicy: a
    /// Device's QPs, configuration files, omrc-perf); the others are the
    /// simulator's (a controller's plan, or not offered yet).
    bool device = false;
};

/// Every policy, in the order of PathPolicy.
inline constexpr PathPolicyInfo kPathPolicies[] = {
    {PathPolicy::ecmp, "ecmp", "one EV for the whole QP (single-path RoCE)", false, false, true},
    {PathPolicy::spray, "spray", "oblivious rotation over the active EVs (down planes avoided)", false, false, true},
    {PathPolicy::adaptive, "adaptive", "MRC: rotation that skips, retires and probes EVs by their state", true, false,
     true},
    {PathPolicy::planned, "planned",
     "adaptive over a controller's conflict-free T1 per flow and plane, computed from the topology and workload", true,
     true, false},
    {PathPolicy::rnl, "rnl",
     "a hashed T1 per flow and plane; a controller scores links and moves the worst flows, a few per interval", true,
     true, false},
    {PathPolicy::reps, "reps",
     "UET REPS: EVs recycled while their ACKs come back clean, fresh ones explored otherwise, exploration frozen "
     "after a failure",
     false, false, false},
};

/// The policy registered as `id` (kPathPolicies is in the order of the ids), or null.
[[nodiscard]] constexpr const PathPolicyInfo* find_path_policy(PathPolicy id) noexcept {
    const auto i = static_cast<std::size_t>(id);
    return i < std::size(kPathPolicies) ? &kPathPolicies[i] : nullptr;
}
static_assert([] {
    for (std::size_t i = 0; i < std::size(kPathPolicies); ++i)
        if (static_cast<std::size_t>(kPathPolicies[i].id) != i) return false;
    return true;
}(), "kPathPolicies lists the policies in the order of their ids");
[[nodiscard]] constexpr const PathPolicyInfo* find_path_policy(std::string_view name) noexcept {
    for (const PathPolicyInfo& p : kPathPolicies)
        if (p.name == name) return &p;
    return nullptr;
}
/// The name of `id`, or "unknown".
[[nodiscard]] constexpr std::string_view path_policy_name(PathPolicy id) noexcept {
    const PathPolicyInfo* p = find_path_policy(id);
    return p != nullptr ? p->name : "unknown";
}
/// Whether a policy sprays only over the T1s of a controller's plan.
[[nodiscard]] constexpr bool follows_plan(PathPolicy id) noexcept {
    const PathPolicyInfo* p = find_path_policy(id);
    return p != nullptr && p->follows_plan;
}

}  // namespace omrc::core
