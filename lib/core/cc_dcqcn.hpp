// SPDX-License-Identifier: BSD-3-Clause
// DCQCN's reaction point (lib/core/cc_dcqcn.cpp; registered there as "dcqcn").
#pragma once

#include "core/cc.hpp"

namespace omrc::core {

/// DCQCN's reaction point (Zhu et al., SIGCOMM 2015), rate based, driven
/// only by the `now` of its callbacks: its timers (alpha decay, rate
/// increase) are evaluated lazily at the next event, never by a thread.
/// A SACK with an ECN echo stands for a CNP, and so do trims and losses
/// (congestion the network signalled some other way); at most one rate cut
/// per cnp_interval. The engine is window based, so the rate is turned into
/// a window: RC · (base_rtt + ack_hold), at least one MTU — what a
/// SACK-clocked sender keeps in flight to send at RC.
class Dcqcn final : public CongestionControl {
public:
    Dcqcn(const CcConfig& cfg, std::uint32_t planes, std::uint32_t mtu_bytes, std::uint64_t ack_hold_ns = 0);
    void on_ack(const AckSample& s) override;
    void on_trim(TimeNs now) override { notify(now); }
    void on_loss(TimeNs now) override { notify(now); }
    [[nodiscard]] std::uint64_t window_bytes() const override { return window_bytes_; }
    void report(CcStateWriter& out) const override;

    // Read-only state for tests and dumps.
    [[nodiscard]] double rate_bps() const noexcept { return rc_bps_; }
    [[nodiscard]] double target_rate_bps() const noexcept { return rt_bps_; }
    [[nodiscard]] double alpha() const noexcept { return alpha_; }
    [[nodiscard]] double line_rate_bps() const noexcept { return line_bps_; }
    [[nodiscard]] std::uint32_t timer_stage() const noexcept { return timer_stage_; }
    [[nodiscard]] std::uint32_t byte_stage() const noexcept { return byte_stage_; }

private:
    /// Runs the alpha and increase timers up to `now`.
    void advance(TimeNs now);
    /// A congestion notification (CNP): cut, unless one was taken within cnp_interval.
    void notify(TimeNs now);
    /// One increase event (timer or byte counter).
    void increase();
    void update_window();

    DcqcnConfig p_;
    double line_bps_;             ///< planes · link_rate_bps: the largest rate
    double min_bps_;              ///< the rate whose window is one MTU: the smallest rate
    double window_ns_;            ///< base_rtt + ack_hold: window = rate · window_ns
    double mtu_bytes_;
    double rc_bps_;               ///< current rate RC, in [min_bps, line_bps]
    double rt_bps_;               ///< target rate RT, in [min_bps, line_bps]
    double alpha_ = 1.0;          ///< congestion estimate, (0, 1]
    std::uint32_t timer_stage_ = 0;  ///< increase-timer events since the last cut (T)
    std::uint32_t byte_stage_ = 0;   ///< byte-counter events since the last cut (BC)
    std::uint64_t bytes_since_event_ = 0;  ///< acknowledged bytes toward the next byte-counter event
    bool started_ = false;        ///< the timers run from the first event (no clock before it)
    bool cut_ever_ = false;       ///< a cut happened: last_cut_ns is valid
    TimeNs last_cut_ns_ = 0;
    TimeNs next_alpha_ns_ = 0;    ///< when alpha next decays (valid once started)
    TimeNs next_increase_ns_ = 0; ///< when the increase timer next fires (valid once started)
    std::uint64_t window_bytes_;  ///< rc · window_ns / 8, ≥ one MTU; recomputed on every change
};

}  // namespace omrc::core
