// SPDX-License-Identifier: BSD-3-Clause
// DCQCN's reaction point, written from its public description (Zhu et al.,
// "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015).
// Where this differs from a NIC's implementation:
//  - the CNP is the ECN echo of a SACK (the receiver's notification point
//    sends no separate CNP); the NP's one-CNP-per-interval spacing becomes
//    "at most one cut per cnp_interval" here;
//  - trims and losses are notifications too: in an MRC fabric the last hop
//    trims instead of marking, and a rate-based sender that ignored trims
//    would keep overflowing it;
//  - the byte counter counts acknowledged bytes (the sender learns of bytes
//    through SACKs), not bytes handed to the wire;
//  - timers run lazily: every callback first plays the periods that
//    elapsed since the previous one, so a sender that hears nothing for a
//    while catches up at its next SACK. A sender that has nothing in flight
//    hears nothing, but then its rate does not matter until it sends.
#include <algorithm>
#include <cmath>

#include "core/cc_dcqcn.hpp"

namespace omrc::core {

namespace {
/// Increase events played one by one after a long silence. The loop stops
/// as soon as RC and RT are both at the line rate (later events could only
/// raise the stage counters), which takes at most F + 1 / ai_ratio events
/// plus the ~50 halvings that bring RC to RT in double precision; this cap
/// only bounds the work for absurdly small ai_ratio.
constexpr std::uint64_t kMaxCatchUpEvents = 1u << 20;
}  // namespace

Dcqcn::Dcqcn(const CcConfig& cfg, std::uint32_t planes, std::uint32_t mtu_bytes, std::uint64_t ack_hold_ns)
    : p_(cfg.dcqcn),
      line_bps_(static_cast<double>(cfg.link_rate_bps) * std::max<std::uint32_t>(planes, 1)),
      window_ns_(static_cast<double>(std::max<std::uint64_t>(cfg.base_rtt_ns, 1) + ack_hold_ns)),
      mtu_bytes_(mtu_bytes) {
    // The window a SACK-clocked sender needs to send at rate R is what R
    // sends before the first SACK can release it: the round trip plus what
    // the receiver may hold it (as Nscc's maximum window).
    min_bps_ = std::min(line_bps_, mtu_bytes_ * 8e9 / window_ns_);
    p_.alpha_period_ns = std::max<std::uint64_t>(p_.alpha_period_ns, 1);
    p_.increase_period_ns = std::max<std::uint64_t>(p_.increase_period_ns, 1);
    p_.byte_counter_bytes = std::max<std::uint64_t>(p_.byte_counter_bytes, 1);
    // DCQCN starts at line rate (no slow start).
    rc_bps_ = line_bps_;
    rt_bps_ = line_bps_;
    update_window();
}

void Dcqcn::update_window() {
    rc_bps_ = std::clamp(rc_bps_, min_bps_, line_bps_);
    rt_bps_ = std::clamp(rt_bps_, min_bps_, line_bps_);
    window_bytes_ = std::max(static_cast<std::uint64_t>(mtu_bytes_),
                             static_cast<std::uint64_t>(rc_bps_ * window_ns_ / 8e9));
}

void Dcqcn::advance(TimeNs now) {
    if (!started_) {
        started_ = true;
        next_alpha_ns_ = now + p_.alpha_period_ns;
        next_increase_ns_ = now + p_.increase_period_ns;
        return;
    }
    if (now >= next_alpha_ns_) {
        const std::uint64_t periods = (now - next_alpha_ns_) / p_.alpha_period_ns + 1;
        alpha_ *= std::pow(1.0 - p_.g, static_cast<double>(periods));
        next_alpha_ns_ += periods * p_.alpha_period_ns;
    }
    if (now >= next_increase_ns_) {
        const std::uint64_t periods = (now - next_increase_ns_) / p_.increase_period_ns + 1;
        for (std::uint64_t i = 0; i < std::min(periods, kMaxCatchUpEvents); ++i) {
            if (rc_bps_ >= line_bps_ && rt_bps_ >= line_bps_) {
                // Nothing left to raise: count the remaining events only.
                timer_stage_ = static_cast<std::uint32_t>(
                    std::min<std::uint64_t>(UINT32_MAX, timer_stage_ + (periods - i)));
                break;
            }
            ++timer_stage_;
            increase();
        }
        next_increase_ns_ += periods * p_.increase_period_ns;
    }
}

void Dcqcn::increase() {
    const std::uint32_t f = p_.fast_recovery_stages;
    const std::uint32_t hi = std::max(timer_stage_, byte_stage_);
    const std::uint32_t lo = std::min(timer_stage_, byte_stage_);
    // The stage counts include this event, so fast recovery is the first F
    // events after a cut, and hyper increase starts when both counters have
    // passed F.
    if (hi <= f) {
        // Fast recovery: RT stays, RC halves its distance to it.
    } else if (lo > f) {
        // Hyper increase: both counters past F; the step grows with the stage.
        rt_bps_ += p_.hai_ratio * line_bps_ * static_cast<double>(lo - f);
    } else {
        // Additive increase.
        rt_bps_ += p_.ai_ratio * line_bps_;
    }
    rt_bps_ = std::min(rt_bps_, line_bps_);
    rc_bps_ = (rc_bps_ + rt_bps_) / 2;
    // Halving stalls one ulp short in double arithmetic: under 1 b/s is there.
    if (rt_bps_ - rc_bps_ < 1.0) rc_bps_ = rt_bps_;
    update_window();
}

void Dcqcn::notify(TimeNs now) {
    advance(now);
    if (cut_ever_ && now < last_cut_ns_ + p_.cnp_interval_ns) return;
    cut_ever_ = true;
    last_cut_ns_ = now;
    rt_bps_ = rc_bps_;
    rc_bps_ *= 1.0 - alpha_ / 2;
    alpha_ = (1.0 - p_.g) * alpha_ + p_.g;
    timer_stage_ = 0;
    byte_stage_ = 0;
    bytes_since_event_ = 0;
    next_alpha_ns_ = now + p_.alpha_period_ns;
    next_increase_ns_ = now + p_.increase_period_ns;
    update_window();
}

void Dcqcn::on_ack(const AckSample& s) {
    if (s.ecn) {
        // The bytes of a marked SACK do not count toward an increase.
        notify(s.now);
        return;
    }
    advance(s.now);
    bytes_since_event_ += s.acked_bytes;
    while (bytes_since_event_ >= p_.byte_counter_bytes) {
        bytes_since_event_ -= p_.byte_counter_bytes;
        ++byte_stage_;
        increase();
    }
}

namespace {

constexpr double kMaxTimerNs = 3.6e12;  ///< one hour: a bound that catches unit slips
constexpr double kMaxBytes = static_cast<double>(std::uint64_t{1} << 40);

constexpr CcParam kParams[] = {
    cc_param<&CcConfig::dcqcn, &DcqcnConfig::g>("dcqcn_g", CcParam::Kind::positive, 0, 1, "alpha's gain"),
    cc_param<&CcConfig::dcqcn, &DcqcnConfig::alpha_period_ns>(
        "dcqcn_alpha_period_ns", CcParam::Kind::integer, 1, kMaxTimerNs,
        "alpha decays by (1 - g) per period without a notification, ns"),
    cc_param<&CcConfig::dcqcn, &DcqcnConfig::cnp_interval_ns>("dcqcn_cnp_interval_ns", CcParam::Kind::integer, 0,
                                                              kMaxTimerNs, "at most one rate cut per interval, ns"),
    cc_param<&CcConfig::dcqcn, &DcqcnConfig::increase_period_ns>("dcqcn_increase_period_ns", CcParam::Kind::integer, 1,
                                                                 kMaxTimerNs, "the rate-increase timer, ns"),
    cc_param<&CcConfig::dcqcn, &DcqcnConfig::byte_counter_bytes>(
        "dcqcn_byte_counter_bytes", CcParam::Kind::integer, 4096, kMaxBytes,
        "acknowledged bytes per byte-counter increase"),
    cc_param<&CcConfig::dcqcn, &DcqcnConfig::fast_recovery_stages>(
        "dcqcn_fast_recovery_stages", CcParam::Kind::integer, 0, 64, "F: increase events of fast recovery"),
    cc_param<&CcConfig::dcqcn, &DcqcnConfig::ai_ratio>("dcqcn_ai_ratio", CcParam::Kind::positive, 0, 1,
                                                       "additive increase step / line rate"),
    cc_param<&CcConfig::dcqcn, &DcqcnConfig::hai_ratio>("dcqcn_hai_ratio", CcParam::Kind::positive, 0, 1,
                                                        "hyper increase step / line rate"),
};

}  // namespace

void Dcqcn::report(CcStateWriter& out) const {
    out.value("rate_bps", rc_bps_);
    out.value("target_rate_bps", rt_bps_);
    out.value("alpha", alpha_);
    out.count("timer_stage", timer_stage_);
    out.count("byte_stage", byte_stage_);
}

extern const CcAlgorithmInfo kCcDcqcn{
    .id = CcAlgorithm::dcqcn,
    .name = "dcqcn",
    .description = "DCQCN's reaction point: rate cut on ECN echoes, trims and losses; window = rate x RTT",
    .params = kParams,
    .make = &make_cc_as<Dcqcn>,
};

}  // namespace omrc::core
