// SPDX-License-Identifier: BSD-3-Clause
// A plane that dies behind the NIC (no link event: its link blackholes every
// frame) costs its own share and nothing more. These cases run the demo's
// own scenario (examples/demo_scenario.cpp, what `scripts/demo` prints) in
// virtual time and assert, in 250 µs buckets:
//  - the floor: no healthy plane's rate falls below 90 % of its rate before
//    the first outage, from the outage to the end of the transfer;
//  - the total: goodput ≥ 0.95 × (line rate − the dark plane's share over
//    the outages), and the destination byte for byte;
//  - no acknowledgement called forged on a clean fabric (a real peer's ACK
//    is never forged; the receiver once reported PSNs beyond its window).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include "demo_scenario.hpp"

namespace {

using omrc::demo::Options;
using omrc::demo::Outage;
using omrc::demo::Result;

struct Figures {
    double floor = 0;        ///< worst healthy-plane bucket over its rate before, from the first outage on
    double total = 0;        ///< goodput, Gb/s
    double goal_total = 0;   ///< 0.95 × (line rate − the dark plane's share over the outages)
    std::uint64_t forged = 0;
    std::uint64_t retirements = 0;
    std::uint64_t timeouts = 0;
};

Figures figures(const Options& o, const Result& r) {
    Figures f;
    const std::uint32_t dark = std::min(o.dark_plane, o.planes - 1);
    const std::uint64_t first_dark = r.dark_ns.front().first;
    // Before: full buckets after the first (the start's burst fills the queues) and before the outage.
    std::vector<double> before(o.planes, 0);
    std::uint32_t n_before = 0;
    for (std::size_t i = 1; i < r.buckets.size() && r.buckets[i].end_ns <= first_dark; ++i) {
        for (std::uint32_t p = 0; p < o.planes; ++p) before[p] += r.buckets[i].gbps[p];
        ++n_before;
    }
    REQUIRE(n_before >= 2);
    for (double& b : before) b /= n_before;
    // From the bucket the outage begins in to the last full bucket (the last one ends with the transfer).
    f.floor = 1e9;
    for (const omrc::demo::Bucket& b : r.buckets) {
        if (b.end_ns <= first_dark || b.length_ns != o.bucket_ns || b.end_ns == r.elapsed_ns) continue;
        for (std::uint32_t p = 0; p < o.planes; ++p)
            if (p != dark) f.floor = std::min(f.floor, b.gbps[p] / before[p]);
    }
    std::uint64_t dark_ns = 0;
    for (const auto& [from, to] : r.dark_ns) dark_ns += std::min(to, r.elapsed_ns) - std::min(from, r.elapsed_ns);
    const double line = o.planes * 100.0;
    f.total = r.gbps();
    f.goal_total = 0.95 * (line - 100.0 * static_cast<double>(dark_ns) / static_cast<double>(r.elapsed_ns));
    const auto j = nlohmann::json::parse(r.sender_stats_json);
    f.forged = j["engine"]["rx_drops"]["forged_ack"].get<std::uint64_t>();
    const auto& s = j["qps"][0]["stats"];
    f.retirements = s["ev_retirements"].get<std::uint64_t>();
    f.timeouts = s["ev_timeouts"].get<std::uint64_t>();
    return f;
}

void check(const Options& o) {
    const Result r = omrc::demo::run(o);
    INFO("planes " << o.planes << ", " << o.outages.size() << " outage(s), " << (o.bytes >> 20) << " MiB, seed "
                   << o.seed << ": " << r.error);
    REQUIRE(r.error.empty());
    REQUIRE(r.byte_exact);
    const Figures f = figures(o, r);
    std::printf("plane loss: %u planes, %zu outage(s), seed %llu: floor %.3f, %.1f Gb/s (goal %.1f), "
                "%llu retirements, %llu EV timeouts, %llu forged\n",
                o.planes, o.outages.size(), static_cast<unsigned long long>(o.seed), f.floor, f.total, f.goal_total,
                static_cast<unsigned long long>(f.retirements), static_cast<unsigned long long>(f.timeouts),
                static_cast<unsigned long long>(f.forged));
    CHECK(f.floor >= 0.90);
    CHECK(f.total >= f.goal_total);
    CHECK(f.forged == 0);
}

Options scenario(std::uint32_t planes, std::uint64_t bytes) {
    Options o;
    o.planes = planes;
    o.bytes = bytes;
    o.bucket_ns = 250'000;
    return o;
}

}  // namespace

TEST_CASE("plane loss: the demo as scripts/demo runs it (8 planes, 1 GiB, plane 3 dark 30-60 %)",
          "[fault][fault_long][plane_loss]") {
    check(scenario(8, 1ull << 30));
}

TEST_CASE("plane loss: 2, 4 and 8 planes cost only the dark plane's share", "[fault][plane_loss]") {
    const std::uint32_t planes = GENERATE(2u, 4u, 8u);
    // 64 MiB a plane: the outage spans six or more buckets at every plane count.
    check(scenario(planes, std::uint64_t{planes} << 26));
}

TEST_CASE("plane loss: a plane that dies and comes back twice", "[fault][plane_loss]") {
    Options o = scenario(8, 1ull << 29);
    o.outages = {Outage{0.2, 0.35}, Outage{0.5, 0.65}};
    check(o);
}

TEST_CASE("plane loss: seeds 2 and 3 of the demo's scenario", "[fault][fault_long][plane_loss]") {
    Options o = scenario(8, 1ull << 29);
    o.seed = GENERATE(2u, 3u);
    check(o);
}
