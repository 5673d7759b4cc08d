// SPDX-License-Identifier: BSD-3-Clause
// Workloads as lists of flows (one RDMA WRITE_WITH_IMM message each) grouped
// in steps: every flow of step s starts when the last flow of step s − 1 has
// been received in full (a barrier: the slowest flow gates the step).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "drivers/sim/sim_time.hpp"

namespace omrc::sim {

enum class WorkloadKind : std::uint8_t {
    permutation,     ///< every participant sends one message to one other; each receives one (a derangement)
    all_to_all,      ///< every participant sends one message to every other, all at once
    incast,          ///< `incast_senders` participants send to one receiver at once
    ring_allreduce,  ///< ring reduce-scatter + all-gather: 2 (N − 1) steps of message/N to the next rank
};
[[nodiscard]] const char* to_string(WorkloadKind k) noexcept;

struct WorkloadConfig {
    WorkloadKind kind = WorkloadKind::permutation;
    std::uint32_t hosts = 0;              ///< participants (0 = every host of the fabric)
    std::uint64_t message_bytes = 2u << 20;  ///< per flow; ring_allreduce: each rank's buffer (a step moves 1/N of it)
    TimePs start_ps = 0;                  ///< first step's start
    std::uint32_t incast_senders = 8;
    std::uint32_t steps = 0;              ///< ring_allreduce: steps to run (0 = all 2 (N − 1))
    bool shuffle = true;                  ///< participants / ring order drawn at random (seeded) among the hosts
    /// When > 1 and not shuffled: rank r sits on host (r % interleave) · (n / interleave) + r / interleave,
    /// so consecutive ranks are in different groups (set it to the T0 count: every ring hop crosses T1).
    std::uint32_t interleave = 0;
};

struct Flow {
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
    std::uint64_t bytes = 0;
    std::uint32_t step = 0;
    TimePs start_ps = kNeverPs;   ///< when it was posted
    TimePs end_ps = kNeverPs;     ///< when its receiver completed it (kNeverPs = not done)
};

struct WorkloadPlan {
    std::vector<Flow> flows;                          ///< ordered by step
    std::vector<std::vector<std::uint32_t>> steps;    ///< flow indices of each step
    std::uint32_t ranks = 0;                          ///< participants
};

/// Throws std::invalid_argument when the workload does not fit the fabric.
WorkloadPlan make_workload(const WorkloadConfig& cfg, std::uint32_t fabric_hosts, core::Rng& rng);

}  // namespace omrc::sim
