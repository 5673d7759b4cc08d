// SPDX-License-Identifier: BSD-3-Clause
#include "drivers/sim/workload.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace omrc::sim {

const char* to_string(WorkloadKind k) noexcept {
    switch (k) {
        case WorkloadKind::permutation: return "permutation";
        case WorkloadKind::all_to_all: return "all_to_all";
        case WorkloadKind::incast: return "incast";
        case WorkloadKind::ring_allreduce: return "ring_allreduce";
    }
    return "unknown";
}

namespace {

template <typename T>
void shuffle(std::vector<T>& v, core::Rng& rng) {
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

}  // namespace

WorkloadPlan make_workload(const WorkloadConfig& cfg, std::uint32_t fabric_hosts, core::Rng& rng) {
    const std::uint32_t n = cfg.hosts == 0 ? fabric_hosts : cfg.hosts;
    if (n < 2 || n > fabric_hosts) throw std::invalid_argument("workload: participants must be 2..fabric hosts");
    // One RDMA message per flow: at most 2^31 bytes (a ring step moves message_bytes / n).
    const std::uint64_t per_flow = cfg.kind == WorkloadKind::ring_allreduce ? cfg.message_bytes / n : cfg.message_bytes;
    if (cfg.message_bytes == 0 || per_flow > (1ull << 31)) throw std::invalid_argument("workload: a flow's message must be 1..2^31 bytes");
    // Participants: the first n hosts, or n hosts drawn at random, in a random order.
    std::vector<std::uint32_t> hosts(fabric_hosts);
    std::iota(hosts.begin(), hosts.end(), 0u);
    if (cfg.shuffle) shuffle(hosts, rng);
    hosts.resize(n);
    if (!cfg.shuffle) {
        std::sort(hosts.begin(), hosts.end());
        if (cfg.interleave > 1 && n % cfg.interleave == 0) {
            std::vector<std::uint32_t> placed(n);
            for (std::uint32_t r = 0; r < n; ++r) placed[r] = hosts[(r % cfg.interleave) * (n / cfg.interleave) + r / cfg.interleave];
            hosts = placed;
        }
    }

    WorkloadPlan plan;
    plan.ranks = n;
    auto add = [&](std::uint32_t src, std::uint32_t dst, std::uint64_t bytes, std::uint32_t step) {
        if (plan.steps.size() <= step) plan.steps.resize(step + 1);
        plan.steps[step].push_back(static_cast<std::uint32_t>(plan.flows.size()));
        plan.flows.push_back(Flow{src, dst, bytes, step});
    };
    switch (cfg.kind) {
        case WorkloadKind::permutation: {
            // A uniformly random derangement (Sattolo's algorithm gives one cycle; shuffle + fix-up keeps
            // the distribution of ordinary permutations without fixed points).
            std::vector<std::uint32_t> to(n);
            std::iota(to.begin(), to.end(), 0u);
            shuffle(to, rng);
            for (std::uint32_t i = 0; i < n; ++i)
                if (to[i] == i) std::swap(to[i], to[(i + 1) % n]);
            for (std::uint32_t i = 0; i < n; ++i)
                if (to[i] == i) std::swap(to[i], to[(i + n - 1) % n]);
            for (std::uint32_t i = 0; i < n; ++i) add(hosts[i], hosts[to[i]], cfg.message_bytes, 0);
            break;
        }
        case WorkloadKind::all_to_all:
            for (std::uint32_t i = 0; i < n; ++i)
                for (std::uint32_t k = 1; k < n; ++k) add(hosts[i], hosts[(i + k) % n], cfg.message_bytes, 0);
            break;
        case WorkloadKind::incast: {
            const std::uint32_t senders = std::min(cfg.incast_senders, n - 1);
            if (senders == 0) throw std::invalid_argument("workload: incast needs at least one sender");
            for (std::uint32_t i = 1; i <= senders; ++i) add(hosts[i], hosts[0], cfg.message_bytes, 0);
            break;
        }
        case WorkloadKind::ring_allreduce: {
            const std::uint32_t all = 2 * (n - 1);
            const std::uint32_t steps = cfg.steps == 0 ? all : std::min(cfg.steps, all);
            const std::uint64_t chunk = std::max<std::uint64_t>(1, cfg.message_bytes / n);
            for (std::uint32_t s = 0; s < steps; ++s)
                for (std::uint32_t r = 0; r < n; ++r) add(hosts[r], hosts[(r + 1) % n], chunk, s);
            break;
        }
    }
    return plan;
}

}  // namespace omrc::sim
