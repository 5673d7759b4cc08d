// SPDX-License-Identifier: BSD-3-Clause
// Round-trip estimates of one QP, per plane and over every plane, and the
// times the sender's loss detection and timers derive from them: how long
// an acknowledgement may trail one for a later packet (the reorder windows)
// and when a path is given up (the EV timeout). Pure arithmetic on the
// samples it is given (no clock): rtt_estimator.cpp, its tests
// tests/unit/core/test_rtt_estimator.cpp.
#pragma once

#include <array>
#include <cstdint>

#include "core/config.hpp"
#include "core/types.hpp"

namespace omrc::core {

/// Slack every reorder window adds to its spread of RTTs, beside a quarter
/// of the base RTT: a report's own delays (coalescing, serialisation) that
/// no RTT sample shows.
inline constexpr TimeNs kReorderSlackNs = 1'000;
/// The slow maximum forgets 1/kRttMaxForget of its excess per sample (the EV
/// timeout's and the send-order window's on a hashed fabric), the recent
/// maximum 1/kRttRecentMaxForget (the reorder windows').
inline constexpr TimeNs kRttMaxForget = 1024;
inline constexpr TimeNs kRttRecentMaxForget = 64;

/// RTT samples of one plane, or of every plane: the smallest, the largest
/// slowly forgotten and the largest recently seen (0 = no sample yet).
struct RttStats {
    TimeNs min_ns = 0;
    TimeNs max_ns = 0;
    TimeNs recent_max_ns = 0;

    void add(TimeNs rtt_ns) noexcept;
    [[nodiscard]] bool sampled() const noexcept { return min_ns != 0; }
    /// A quarter of the base RTT and the slack: what every window adds to its spread.
    [[nodiscard]] TimeNs slack_ns() const noexcept { return min_ns / 4 + kReorderSlackNs; }
};

class RttEstimator {
public:
    /// A round trip measured on `plane` (the triggering packet's; < kMaxPlanes).
    void add(std::uint8_t plane, TimeNs rtt_ns) noexcept;

    [[nodiscard]] const RttStats& all() const noexcept { return all_; }
    [[nodiscard]] const RttStats& plane(std::uint8_t p) const noexcept { return plane_[p]; }
    /// Bit p: plane p has a sample.
    [[nodiscard]] std::uint32_t planes_sampled() const noexcept { return planes_sampled_; }

    /// How long an acknowledgement may trail one for a later packet over
    /// all planes: the spread of recent RTTs plus the slack. Before any
    /// sample, a quarter of the initial EV timeout.
    [[nodiscard]] TimeNs reorder_window(TimeNs initial_ev_timeout_ns) const noexcept;
    /// The same within one plane, for send-order detection: the spread of
    /// that plane's RTTs, from its recent maximum where its T1s are known
    /// (its paths are alike by design), else from its slow maximum (each EV
    /// its own way on a hashed fabric). The QP-wide window before the plane
    /// has a sample.
    [[nodiscard]] TimeNs send_order_window(std::uint8_t plane, bool t1s_known,
                                           TimeNs initial_ev_timeout_ns) const noexcept;
    /// The EV timeout: twice the slowest RTT plus the reorder window, at
    /// least `floor_ns`; the initial timeout before any sample and, at
    /// least, while a plane of `usable_planes` has none (the slowest is not
    /// known yet).
    [[nodiscard]] TimeNs ev_timeout(TimeNs initial_ns, TimeNs floor_ns, std::uint32_t usable_planes) const noexcept;
    /// Whether a packet sent on `plane` at `sent_ns` would have arrived
    /// before one sent at `horizon_ns` that did (0 = none): it left more than
    /// the plane's slowest round trip (which bounds its one-way delay) plus
    /// the slack earlier.
    [[nodiscard]] bool overtaken(std::uint8_t plane, TimeNs sent_ns, TimeNs horizon_ns) const noexcept;
    /// Whether `plane`, last acknowledging at `last_ack_ns`, has been silent
    /// for its slowest round trip at `now` (a plane that delivers, however
    /// deep its queues, acknowledges as they drain).
    [[nodiscard]] bool silent(std::uint8_t plane, TimeNs last_ack_ns, TimeNs now) const noexcept;

private:
    std::array<RttStats, kMaxPlanes> plane_{};
    RttStats all_{};
    std::uint32_t planes_sampled_ = 0;
};

}  // namespace omrc::core
