// SPDX-License-Identifier: BSD-3-Clause
// NSCC (lib/core/cc_nscc.cpp; registered there as "nscc").
#pragma once

#include "core/cc.hpp"

namespace omrc::core {

/// NSCC: delay = rtt − base_rtt against a target; ECN echo; four cases
/// (proportional increase, fair increase, hold, multiplicative decrease at
/// most once per base RTT); quick adapt to the bytes delivered in the last
/// RTT on trims/losses (at most once per RTT).
class Nscc final : public CongestionControl {
public:
    /// ack_hold_ns: how long the receiver may hold a packet before it
    /// acknowledges it (its SACK delay bound); what the sender sends at the
    /// full rate in that time is added to the maximum window, so that a
    /// sender at that window still fills the link while the receiver coalesces.
    Nscc(const CcConfig& cfg, std::uint32_t planes, std::uint32_t mtu_bytes, std::uint64_t ack_hold_ns = 0);
    void on_ack(const AckSample& s) override;
    void on_trim(TimeNs now) override { quick_adapt(now); }
    void on_loss(TimeNs now) override { quick_adapt(now); }
    void on_penalty(std::uint8_t penalty, TimeNs now) override;
    void on_restore(TimeNs now) override;
    [[nodiscard]] std::uint64_t window_bytes() const override { return static_cast<std::uint64_t>(cwnd_); }

private:
    void quick_adapt(TimeNs now);
    double cwnd_;               ///< bytes
    double min_cwnd_;           ///< one MTU
    double max_cwnd_;           ///< max_window_bdp · BDP + rate · ack_hold_ns
    std::uint64_t base_rtt_ns_;
    std::uint64_t target_ns_;
    TimeNs last_decrease_ns_ = 0;
    TimeNs last_adapt_ns_ = 0;
    TimeNs last_penalty_ns_ = 0;
    double before_adapt_ = 0;   ///< window before the last quick adapt (0 = none to restore)
    TimeNs rtt_epoch_start_ns_ = 0;
    std::uint64_t acked_this_epoch_ = 0;   ///< bytes acknowledged since rtt_epoch_start
    std::uint64_t acked_last_epoch_ = 0;   ///< bytes acknowledged in the previous base RTT
};

}  // namespace omrc::core
