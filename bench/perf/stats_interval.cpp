// SPDX-License-Identifier: BSD-3-Clause
#include "stats_interval.hpp"

#include <cstdio>
#include <fmt/format.h>

namespace omrc::perf {

IntervalStats::IntervalStats(const Device& dev, std::uint32_t interval_ms, bool quiet)
    : dev_(dev), interval_ms_(quiet ? 0 : interval_ms), start_(Clock::now()), last_(start_),
      next_(start_ + milliseconds(interval_ms)) {}

void IntervalStats::print(Clock::time_point now) {
    const nlohmann::json doc = nlohmann::json::parse(dev_.stats_json());
    const nlohmann::json& planes = doc["planes"];
    if (seen_.size() < planes.size()) seen_.resize(planes.size());
    const double secs = seconds_between(last_, now);
    std::string line = fmt::format("stats {:.3f}s", seconds_between(start_, now));
    for (std::size_t p = 0; p < planes.size(); ++p) {
        const nlohmann::json& pl = planes[p];
        const PlaneSeen was = seen_[p];
        PlaneSeen& is = seen_[p];
        is.bytes = pl.value("data_bytes_sent", std::uint64_t{0});
        is.resent = pl.value("data_resent", std::uint64_t{0});
        is.lost = pl.value("lost", std::uint64_t{0});
        const double gbps = secs > 0 ? static_cast<double>(is.bytes - was.bytes) * 8 / secs / 1e9 : 0;
        if (!pl.value("link_up", true)) {
            line += fmt::format(" | p{} down", p);
            continue;
        }
        line += fmt::format(" | p{} {:.2f} Gb/s rtx {} lost {} ev {}/{}", p, gbps, is.resent - was.resent,
                            is.lost - was.lost, pl.value("evs_active", std::uint64_t{0}),
                            pl.value("evs_assumed_bad", std::uint64_t{0}));
    }
    fmt::print(stderr, "{}\n", line);
    std::fflush(stderr);
    last_ = now;
    // The next line one interval on, not "now + interval": no drift, no burst after a stall.
    while (next_ <= now) next_ += milliseconds(interval_ms_);
}

}  // namespace omrc::perf
