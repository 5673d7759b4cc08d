// SPDX-License-Identifier: BSD-3-Clause
// RNL-style controller: hash mapping, link scoring, bounded migration
// (rnl.hpp gives the model).
#include "drivers/sim/rnl.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "core/rng.hpp"

namespace omrc::sim {

RnlController::RnlController(std::vector<std::pair<std::uint32_t, std::uint32_t>> conns, const PlanShape& shape,
                             const RnlConfig& cfg, std::uint64_t seed)
    : conns_(std::move(conns)), shape_(shape), cfg_(cfg) {
    if (shape_.t0 == 0 || shape_.t1 == 0 || shape_.hosts_per_t0 == 0 || shape_.planes == 0 ||
        shape_.planes > core::kMaxPlanes || shape_.t1 >= core::PathPlan::kNoT1)
        throw std::invalid_argument("rnl: the fabric needs T0s, T1s, hosts per T0 and 1..16 planes");
    if (cfg_.max_moves == 0 || cfg_.interval_ps == 0)
        throw std::invalid_argument("rnl: interval and max_moves must be positive");
    t1_.assign(conns_.size() * shape_.planes, 0);
    score_.assign(conns_.size() * shape_.planes, 0);
    for (std::size_t c = 0; c < conns_.size(); ++c)
        for (std::uint32_t p = 0; p < shape_.planes; ++p) {
            // The hash mapping of (connection, plane): a SplitMix64 step of their bits.
            std::uint64_t key = seed ^ (std::uint64_t{conns_[c].first} << 40) ^ (std::uint64_t{conns_[c].second} << 16) ^ p;
            t1_[c * shape_.planes + p] = static_cast<std::uint32_t>(core::splitmix64(key) % shape_.t1);
        }
}

core::PathPlan RnlController::plan(std::uint32_t c) const {
    core::PathPlan plan{};
    if (t0_of(conns_[c].first) == t0_of(conns_[c].second)) return plan;  // crosses no T1
    plan.first_t1.fill(core::PathPlan::kNoT1);
    for (std::uint32_t p = 0; p < shape_.planes; ++p) plan.first_t1[p] = static_cast<std::uint16_t>(t1_of(c, p));
    plan.t1_count = 1;
    return plan;
}

std::vector<RnlMove> RnlController::round(const FabricReading& reading, const std::vector<bool>& active) {
    const std::size_t links = std::size_t{shape_.planes} * shape_.t0 * shape_.t1;
    if (reading.up.size() != links || reading.down.size() != links || active.size() != conns_.size())
        throw std::invalid_argument("rnl: reading or activity of the wrong size");
    ++rounds_;

    // Demand: each active connection can use 1 / max(its sender's, its
    // receiver's active connections) of its NIC, so of each of its links.
    std::vector<std::uint32_t> out, in;
    for (std::size_t c = 0; c < conns_.size(); ++c) {
        if (!active[c]) continue;
        const auto [s, d] = conns_[c];
        if (s >= out.size()) out.resize(s + 1, 0);
        if (d >= in.size()) in.resize(d + 1, 0);
        ++out[s];
        ++in[d];
    }
    std::vector<double> share(conns_.size(), 0);
    std::vector<double> dem_up(links, 0), dem_down(links, 0);
    for (std::size_t c = 0; c < conns_.size(); ++c) {
        if (!active[c]) continue;
        const auto [s, d] = conns_[c];
        share[c] = 1.0 / static_cast<double>(std::max(out[s], in[d]));
        const std::uint32_t st0 = t0_of(s), dt0 = t0_of(d);
        if (st0 == dt0) continue;
        for (std::uint32_t p = 0; p < shape_.planes; ++p) {
            const std::uint32_t j = t1_of(static_cast<std::uint32_t>(c), p);
            dem_up[link(p, st0, j)] += share[c];
            dem_down[link(p, dt0, j)] += share[c];
        }
    }
    auto score = [&](const LinkReading& r, double demand) {
        return r.usable ? std::max(demand, r.utilisation) + cfg_.queue_weight * r.queue : kDead;
    };
    // Path score of c in plane p through T1 j, with `extra` more demand on both links.
    auto path_score = [&](std::uint32_t p, std::uint32_t st0, std::uint32_t dt0, std::uint32_t j, double extra) {
        const std::size_t u = link(p, st0, j), w = link(p, dt0, j);
        return std::max(score(reading.up[u], dem_up[u] + extra), score(reading.down[w], dem_down[w] + extra));
    };
    // The best other T1 for c in p and its score with c's demand moved there.
    auto best_other = [&](std::uint32_t c, std::uint32_t p) {
        const std::uint32_t st0 = t0_of(conns_[c].first), dt0 = t0_of(conns_[c].second);
        const std::uint32_t cur = t1_of(c, p);
        std::uint32_t best = cur;
        double best_score = kDead * 2;
        for (std::uint32_t k = 1; k < shape_.t1; ++k) {
            // Start beside the current T1 so ties spread instead of piling on T1 0.
            const std::uint32_t j = (cur + k) % shape_.t1;
            const double s = path_score(p, st0, dt0, j, share[c]);
            if (s < best_score) best_score = s, best = j;
        }
        return std::make_pair(best, best_score);
    };

    // Candidates: over capacity (worst first).
    std::vector<std::tuple<double, std::uint32_t, std::uint32_t>> cand;  // (score, conn, plane)
    for (std::uint32_t c = 0; c < conns_.size(); ++c) {
        const std::uint32_t st0 = t0_of(conns_[c].first), dt0 = t0_of(conns_[c].second);
        if (st0 == dt0) continue;
        for (std::uint32_t p = 0; p < shape_.planes; ++p) {
            const double cur = path_score(p, st0, dt0, t1_of(c, p), 0);
            score_[std::size_t{c} * shape_.planes + p] = cur;
            if (active[c] && cur > 1.0 + cfg_.margin) cand.emplace_back(cur, c, p);
        }
    }
    std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) {
        if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) > std::get<0>(b);
        return std::make_pair(std::get<1>(a), std::get<2>(a)) < std::make_pair(std::get<1>(b), std::get<2>(b));
    });

    std::vector<RnlMove> moves;
    auto move = [&](std::uint32_t c, std::uint32_t p, std::uint32_t to) {
        const std::uint32_t st0 = t0_of(conns_[c].first), dt0 = t0_of(conns_[c].second);
        const std::uint32_t from = t1_of(c, p);
        const std::size_t u0 = link(p, st0, from), w0 = link(p, dt0, from), u1 = link(p, st0, to), w1 = link(p, dt0, to);
        dem_up[u0] -= share[c];
        dem_down[w0] -= share[c];
        dem_up[u1] += share[c];
        dem_down[w1] += share[c];
        t1_[std::size_t{c} * shape_.planes + p] = to;
        moves.push_back({c, p, from, to});
    };
    for (const auto& [unused, c, p] : cand) {
        if (moves.size() >= cfg_.max_moves) break;
        // Earlier moves of this round changed the demand: score again.
        const std::uint32_t st0 = t0_of(conns_[c].first), dt0 = t0_of(conns_[c].second);
        const double cur = path_score(p, st0, dt0, t1_of(c, p), 0);
        if (cur <= 1.0 + cfg_.margin) continue;
        if (const auto [to, to_score] = best_other(c, p); cur - to_score >= cfg_.margin) move(c, p, to);
    }
    total_moves_ += moves.size();
    most_moves_ = std::max(most_moves_, static_cast<std::uint32_t>(moves.size()));
    return moves;
}

}  // namespace omrc::sim
