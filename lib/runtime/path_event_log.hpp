// SPDX-License-Identifier: BSD-3-Clause
// The engine's path events (EV retired, probe sent, group restored, local
// port down/up, the peer's ports) as structured log lines: one info line per
// event on the `omrc` logger, key=value fields, rate-limited by a token
// bucket in the caller's time. Lines over the rate are counted, and one
// "suppressed" line says how many once the bucket refills. Every event is
// counted by kind whether or not it was logged or the level lets it through.
//
//   path_event=retired cause=send_order_loss qpn=17 plane=2 t1=1 ev=0x2a01c at_ns=1250400
//   path_event=suppressed count=212 since_ns=1250400 at_ns=1350400
//
// Threads: the device's owning thread only (it drains the engine).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/engine.hpp"

namespace omrc::runtime {

struct PathLogConfig {
    /// Lines that may go out at once after a quiet spell.
    std::uint32_t burst_lines = 32;
    /// One more line allowed per this much time (10 lines/s by default).
    core::TimeNs refill_ns = 100'000'000;
};

struct PathEventCounts {
    /// Events drained, by core::PathEventKind.
    std::array<std::uint64_t, 6> by_kind{};
    std::uint64_t logged = 0;      ///< lines written for events
    std::uint64_t suppressed = 0;  ///< events over the rate (counted, not written)
};

class PathEventLog {
public:
    explicit PathEventLog(const PathLogConfig& cfg = {});

    /// Drains every path event the engine holds, logging within the rate.
    /// Returns the events drained.
    std::size_t drain(core::Engine& engine, core::TimeNs now);

    [[nodiscard]] const PathEventCounts& counts() const noexcept { return counts_; }

    /// The line for one event (without the logger's prefix).
    [[nodiscard]] static std::string format(const core::PathEvent& e);

private:
    /// Adds the tokens earned since the last refill (at most burst_lines).
    void refill(core::TimeNs now) noexcept;

    PathLogConfig cfg_;
    PathEventCounts counts_{};
    std::uint64_t tokens_;             ///< lines that may go out now
    core::TimeNs refilled_ns_ = 0;     ///< time up to which tokens were credited
    bool started_ = false;             ///< refilled_ns_ holds a time
    std::uint64_t pending_suppressed_ = 0;  ///< suppressed since the last "suppressed" line
    core::TimeNs suppressed_since_ns_ = 0;
    std::vector<core::PathEvent> buf_;
};

}  // namespace omrc::runtime
