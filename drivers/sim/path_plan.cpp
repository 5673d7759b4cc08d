// SPDX-License-Identifier: BSD-3-Clause
#include "drivers/sim/path_plan.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace omrc::sim {

namespace {

constexpr std::uint32_t kFree = UINT32_MAX;

/// Bipartite edge colouring: left nodes are source T0s, right nodes
/// destination T0s; at[node · colours + c] is the edge of colour c at the
/// node, or kFree.
class EdgeColouring {
public:
    EdgeColouring(std::uint32_t nodes_per_side, std::uint32_t colours)
        : colours_(colours), at_(std::size_t{2} * nodes_per_side * colours, kFree), side_(nodes_per_side) {}

    /// Colours edge e (u on the left, v on the right); needs a free colour
    /// at both ends (degree ≤ colours).
    std::uint32_t add(std::uint32_t e, std::uint32_t u, std::uint32_t v) {
        const std::uint32_t lu = u, rv = side_ + v;
        const std::uint32_t a = free_at(lu), b = free_at(rv);
        if (ends_.size() <= e) ends_.resize(e + 1);
        ends_[e] = {lu, rv};
        if (colour_.size() <= e) colour_.resize(e + 1, kFree);
        if (at(rv, a) != kFree) flip(rv, a, b);  // a is now free at v, and still at u
        set(e, a);
        return a;
    }
    [[nodiscard]] std::uint32_t colour(std::uint32_t e) const { return colour_[e]; }

private:
    std::uint32_t& at(std::uint32_t node, std::uint32_t c) { return at_[std::size_t{node} * colours_ + c]; }
    std::uint32_t free_at(std::uint32_t node) {
        for (std::uint32_t c = 0; c < colours_; ++c)
            if (at(node, c) == kFree) return c;
        return kFree;  // not reached while degree ≤ colours
    }
    void set(std::uint32_t e, std::uint32_t c) {
        colour_[e] = c;
        at(ends_[e].first, c) = e;
        at(ends_[e].second, c) = e;
    }
    /// Swaps colours a and b along the path from `node` that starts with an
    /// a edge and alternates a, b, a, ... (in a bipartite graph it cannot
    /// reach the other end of the edge being added).
    void flip(std::uint32_t node, std::uint32_t a, std::uint32_t b) {
        std::vector<std::uint32_t> path;
        std::uint32_t c = a, n = node;
        while (at(n, c) != kFree) {
            const std::uint32_t e = at(n, c);
            path.push_back(e);
            n = ends_[e].first == n ? ends_[e].second : ends_[e].first;
            c = c == a ? b : a;
        }
        for (std::uint32_t e : path) {
            at(ends_[e].first, colour_[e]) = kFree;
            at(ends_[e].second, colour_[e]) = kFree;
        }
        for (std::uint32_t e : path) set(e, colour_[e] == a ? b : a);
    }

    std::uint32_t colours_;
    std::vector<std::uint32_t> at_;
    std::uint32_t side_;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ends_;
    std::vector<std::uint32_t> colour_;
};

/// The colour (0 .. colours-1 modulo `t1s`) of each connection's edge, or
/// kFree for connections within one T0; `t1s` colours per round, enough
/// rounds for the largest T0 degree.
std::vector<std::uint32_t> colour_connections(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& conns,
                                              const PlanShape& shape, std::uint32_t t1s) {
    std::vector<std::uint32_t> out(shape.t0, 0), in(shape.t0, 0);
    for (const auto& [src, dst] : conns) {
        const std::uint32_t a = src / shape.hosts_per_t0, b = dst / shape.hosts_per_t0;
        if (a == b || a >= shape.t0 || b >= shape.t0) continue;
        ++out[a];
        ++in[b];
    }
    const std::uint32_t degree =
        std::max(*std::max_element(out.begin(), out.end()), *std::max_element(in.begin(), in.end()));
    // A whole number of rounds over the T1s: colour c is T1 c mod t1s, so each
    // T1 carries at most ⌈degree / t1s⌉ connections of a T0.
    const std::uint32_t rounds = std::max<std::uint32_t>(1, (degree + t1s - 1) / t1s);
    EdgeColouring colouring(shape.t0, rounds * t1s);
    std::vector<std::uint32_t> edge(conns.size(), kFree);  // connection → edge
    std::uint32_t e = 0;
    for (std::size_t i = 0; i < conns.size(); ++i) {
        const std::uint32_t a = conns[i].first / shape.hosts_per_t0, b = conns[i].second / shape.hosts_per_t0;
        if (a == b || a >= shape.t0 || b >= shape.t0) continue;
        edge[i] = e;
        colouring.add(e++, a, b);
    }
    // Read the colours at the end: adding an edge may recolour earlier ones.
    std::vector<std::uint32_t> colour(conns.size(), kFree);
    for (std::size_t i = 0; i < conns.size(); ++i)
        if (edge[i] != kFree) colour[i] = colouring.colour(edge[i]) % t1s;
    return colour;
}

}  // namespace

std::vector<core::PathPlan> plan_paths(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& conns,
                                       const PlanShape& shape, const std::vector<bool>& dead) {
    std::vector<core::PathPlan> plans(conns.size());
    if (shape.t1 == 0 || shape.hosts_per_t0 == 0 || shape.t0 == 0 || conns.empty()) return plans;
    const std::uint32_t planes = std::min<std::uint32_t>(shape.planes, core::kMaxPlanes);
    const std::vector<std::uint32_t> colour = colour_connections(conns, shape, shape.t1);
    std::vector<std::size_t> lost;  // connections whose T1 failed in every plane
    for (std::size_t i = 0; i < conns.size(); ++i) {
        if (colour[i] == kFree) continue;
        plans[i].t1_count = 1;
        // The same T1 in every plane: the planes are alike, and each plane's
        // links are then as free of conflicts as the colouring. A connection
        // whose T1 failed gets no path in that plane rather than a share of
        // another connection's links (which would halve both there and make
        // the plane gate them): its share moves to its other planes, and the
        // other connections keep their links.
        bool any = false;
        for (std::uint32_t plane = 0; plane < planes; ++plane) {
            const bool failed = !dead.empty() && dead[std::size_t{plane} * shape.t1 + colour[i]];
            plans[i].first_t1[plane] = failed ? core::PathPlan::kNoT1 : static_cast<std::uint16_t>(colour[i]);
            any = any || !failed;
        }
        if (!any) lost.push_back(i);
    }
    // A connection left with no plane at all (one plane, or its T1 failed in
    // every plane) shares a live T1 after all: per plane, the live one the
    // fewest connections' links from its T0s already use.
    if (!lost.empty()) {
        std::vector<std::uint32_t> up(std::size_t{planes} * shape.t0 * shape.t1, 0), down(up.size(), 0);
        auto at = [&](std::uint32_t plane, std::uint32_t t0, std::uint32_t t1) {
            return (std::size_t{plane} * shape.t0 + t0) * shape.t1 + t1;
        };
        for (std::size_t i = 0; i < conns.size(); ++i)
            for (std::uint32_t plane = 0; plane < planes && plans[i].t1_count != 0; ++plane)
                if (plans[i].first_t1[plane] != core::PathPlan::kNoT1) {
                    ++up[at(plane, conns[i].first / shape.hosts_per_t0, plans[i].first_t1[plane])];
                    ++down[at(plane, conns[i].second / shape.hosts_per_t0, plans[i].first_t1[plane])];
                }
        for (std::size_t i : lost)
            for (std::uint32_t plane = 0; plane < planes; ++plane) {
                const std::uint32_t st0 = conns[i].first / shape.hosts_per_t0, dt0 = conns[i].second / shape.hosts_per_t0;
                std::uint32_t best = core::PathPlan::kNoT1, best_load = UINT32_MAX;
                for (std::uint32_t j = 0; j < shape.t1; ++j) {
                    if (dead[std::size_t{plane} * shape.t1 + j]) continue;
                    const std::uint32_t load = std::max(up[at(plane, st0, j)], down[at(plane, dt0, j)]);
                    if (load < best_load) best_load = load, best = j;
                }
                if (best == core::PathPlan::kNoT1) continue;
                plans[i].first_t1[plane] = static_cast<std::uint16_t>(best);
                ++up[at(plane, st0, best)];
                ++down[at(plane, dt0, best)];
            }
    }
    return plans;
}

std::uint32_t max_link_sharing(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& conns,
                               const std::vector<core::PathPlan>& plans, const PlanShape& shape) {
    // (direction, plane, T0, T1) → connections on that link.
    std::map<std::tuple<int, std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> load;
    std::uint32_t worst = 0;
    for (std::size_t i = 0; i < conns.size() && i < plans.size(); ++i) {
        const core::PathPlan& p = plans[i];
        if (p.t1_count == 0) continue;
        const std::uint32_t a = conns[i].first / shape.hosts_per_t0, b = conns[i].second / shape.hosts_per_t0;
        for (std::uint32_t plane = 0; plane < std::min<std::uint32_t>(shape.planes, core::kMaxPlanes); ++plane) {
            if (p.first_t1[plane] == core::PathPlan::kNoT1) continue;
            for (std::uint32_t k = 0; k < p.t1_count; ++k) {
                const std::uint32_t t1 = (p.first_t1[plane] + k) % shape.t1;
                worst = std::max(worst, ++load[{0, plane, a, t1}]);
                worst = std::max(worst, ++load[{1, plane, b, t1}]);
            }
        }
    }
    return worst;
}

}  // namespace omrc::sim
