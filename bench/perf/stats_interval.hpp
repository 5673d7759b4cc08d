// SPDX-License-Identifier: BSD-3-Clause
// --stats-interval MS: every MS milliseconds of a test, one line on stderr
// summarising each plane of the device over the last interval (from the
// "planes" array of Device::stats_json()):
//
//   stats 2.000s | p0 12.41 Gb/s rtx 0 lost 0 ev 16/0 | p1 12.38 Gb/s rtx 3 lost 3 ev 14/2 | ...
//
// Gb/s: payload of first transmissions; rtx: retransmissions; lost:
// packets declared lost; ev: active/ASSUMED_BAD EVs now (summed over QPs),
// "down" where the link is.
#pragma once

#include <cstdint>
#include <vector>

#include "session.hpp"

namespace omrc::perf {

class IntervalStats {
public:
    /// Prints nothing when `interval_ms` is 0.
    IntervalStats(const Device& dev, std::uint32_t interval_ms, bool quiet);
    /// Prints a line when an interval has passed since the last one.
    void tick() {
        if (interval_ms_ == 0) return;
        if (const auto now = Clock::now(); now >= next_) print(now);
    }

private:
    void print(Clock::time_point now);

    struct PlaneSeen {
        std::uint64_t bytes = 0, resent = 0, lost = 0;
    };
    const Device& dev_;
    std::uint32_t interval_ms_;
    Clock::time_point start_, last_, next_;
    std::vector<PlaneSeen> seen_;
};

}  // namespace omrc::perf
