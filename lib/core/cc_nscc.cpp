// SPDX-License-Identifier: BSD-3-Clause
#include <algorithm>

#include "core/cc_nscc.hpp"

namespace omrc::core {

Nscc::Nscc(const CcConfig& cfg, std::uint32_t planes, std::uint32_t mtu_bytes, std::uint64_t ack_hold_ns)
    : base_rtt_ns_(std::max<std::uint64_t>(cfg.base_rtt_ns, 1)),
      target_ns_(static_cast<std::uint64_t>(static_cast<double>(cfg.base_rtt_ns) * cfg.target_delay_ratio)) {
    const double bdp = static_cast<double>(cfg.link_rate_bps) / 8.0 * static_cast<double>(planes) *
                       static_cast<double>(base_rtt_ns_) / 1e9;
    // Whole bytes sent at the full rate while the receiver holds a SACK.
    const double rate_bytes_per_ns = static_cast<double>(cfg.link_rate_bps) / 8e9 * planes;
    const auto ack_hold_bytes = static_cast<std::uint64_t>(rate_bytes_per_ns * static_cast<double>(ack_hold_ns));
    min_cwnd_ = mtu_bytes;
    // The window is released only by SACKs, and a receiver holds packets
    // until its coalescing count or delay bound sends one: with
    // max_window_bdp · BDP alone, a window-limited sender idles for that
    // hold every round trip (perm_1024, a loaded 100G leaf-spine: 10 % of
    // the line rate). The hold is added on top.
    max_cwnd_ = std::max(min_cwnd_, cfg.max_window_bdp * bdp + static_cast<double>(ack_hold_bytes));
    cwnd_ = max_cwnd_;
}

void Nscc::on_ack(const AckSample& s) {
    if (s.now >= rtt_epoch_start_ns_ + base_rtt_ns_) {
        acked_last_epoch_ = acked_this_epoch_;
        acked_this_epoch_ = 0;
        rtt_epoch_start_ns_ = s.now;
    }
    // Delivered bytes, when the receiver reports them, count packets no
    // bitmap acknowledged: the better measure for quick adapt.
    acked_this_epoch_ += s.delivered_bytes != 0 ? s.delivered_bytes : s.acked_bytes;
    if (s.acked_bytes == 0) return;
    const double acked = static_cast<double>(s.acked_bytes);
    const std::uint64_t delay = s.rtt_ns > base_rtt_ns_ ? s.rtt_ns - base_rtt_ns_ : 0;
    const bool have_rtt = s.rtt_ns != 0;
    if (!s.ecn && have_rtt && delay < target_ns_) {
        // Proportional increase: the further below target, the faster.
        const double headroom = static_cast<double>(target_ns_ - delay) / static_cast<double>(target_ns_ ? target_ns_ : 1);
        cwnd_ += acked * headroom;
    } else if (!s.ecn) {
        // Over target, or no delay to judge by (a SACK that echoes no
        // timestamp: a sweep's follow-up reporting old arrivals late):
        // Fair increase: about one MTU per window's worth of ACKs.
        cwnd_ += min_cwnd_ * acked / cwnd_;
    } else if (delay >= target_ns_ && s.now >= last_decrease_ns_ + base_rtt_ns_) {
        // Multiplicative decrease, at most once per base RTT, by how far over target we are.
        const double over = std::min(1.0, static_cast<double>(delay - target_ns_) / static_cast<double>(delay ? delay : 1));
        cwnd_ *= 1.0 - 0.5 * over;
        last_decrease_ns_ = s.now;
    }
    // ECN below target: hold.
    cwnd_ = std::clamp(cwnd_, min_cwnd_, max_cwnd_);
}

void Nscc::quick_adapt(TimeNs now) {
    if (now < last_adapt_ns_ + base_rtt_ns_ && last_adapt_ns_ != 0) return;
    last_adapt_ns_ = now;
    before_adapt_ = cwnd_;
    const double delivered = static_cast<double>(std::max(acked_last_epoch_, acked_this_epoch_));
    cwnd_ = std::clamp(std::min(cwnd_, delivered), min_cwnd_, max_cwnd_);
}

void Nscc::on_penalty(std::uint8_t penalty, TimeNs now) {
    if (penalty == 0 || (last_penalty_ns_ != 0 && now < last_penalty_ns_ + base_rtt_ns_)) return;
    last_penalty_ns_ = now;
    // 127 takes the window to one MTU; smaller penalties in proportion.
    const double keep = 1.0 - std::min(1.0, static_cast<double>(penalty) / 127.0);
    cwnd_ = std::clamp(min_cwnd_ + (cwnd_ - min_cwnd_) * keep, min_cwnd_, max_cwnd_);
}

void Nscc::on_restore(TimeNs) {
    if (before_adapt_ <= 0) return;
    cwnd_ = std::clamp(std::max(cwnd_, before_adapt_), min_cwnd_, max_cwnd_);
    before_adapt_ = 0;
}

namespace {

constexpr CcParam kParams[] = {
    cc_param<&CcConfig::target_delay_ratio>("target_delay_ratio", CcParam::Kind::positive, 0, 100,
                                            "target queueing delay as a fraction of base_rtt_ns"),
    cc_param<&CcConfig::max_window_bdp>("max_window_bdp", CcParam::Kind::positive, 0, 1000,
                                        "initial and largest window, in BDPs"),
};

}  // namespace

extern const CcAlgorithmInfo kCcNscc{
    .id = CcAlgorithm::nscc,
    .name = "nscc",
    .description = "NSCC: delay and ECN, quick adapt on trims",
    .params = kParams,
    .make = &make_cc_as<Nscc>,
};

}  // namespace omrc::core
