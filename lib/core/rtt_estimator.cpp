// SPDX-License-Identifier: BSD-3-Clause
#include "core/rtt_estimator.hpp"

#include <algorithm>

namespace omrc::core {

void RttStats::add(TimeNs rtt_ns) noexcept {
    min_ns = min_ns == 0 ? rtt_ns : std::min(min_ns, rtt_ns);
    max_ns = rtt_ns >= max_ns ? rtt_ns : max_ns - (max_ns - rtt_ns) / kRttMaxForget;
    recent_max_ns = rtt_ns >= recent_max_ns ? rtt_ns : recent_max_ns - (recent_max_ns - rtt_ns) / kRttRecentMaxForget;
}

void RttEstimator::add(std::uint8_t plane, TimeNs rtt_ns) noexcept {
    planes_sampled_ |= 1u << plane;
    plane_[plane].add(rtt_ns);
    all_.add(rtt_ns);
}

TimeNs RttEstimator::reorder_window(TimeNs initial_ev_timeout_ns) const noexcept {
    // The spread of RTTs seen over all planes (planes differ in delay, a
    // report waits for the bitmap to reach it, queues vary).
    if (!all_.sampled()) return initial_ev_timeout_ns / 4;
    return (all_.recent_max_ns - all_.min_ns) + all_.slack_ns();
}

TimeNs RttEstimator::send_order_window(std::uint8_t plane, bool t1s_known, TimeNs initial_ev_timeout_ns) const noexcept {
    // With the recent maximum where T1s are not known, a path whose queue
    // outgrew it was judged lost (fat tree under ECMP, no frame dropped: 47
    // packets resent and 47 EVs retired, against 14 and 14). With the slow
    // one where T1s are known, detection on a flapping link came late
    // enough that one flow of perm_1024_link_flap waited for an EV timeout
    // (its job 1.076 -> 1.225 x ideal).
    const RttStats& r = plane_[plane];
    if (!r.sampled()) return reorder_window(initial_ev_timeout_ns);
    const TimeNs max = t1s_known ? r.recent_max_ns : r.max_ns;
    return (max - r.min_ns) + r.slack_ns();
}

TimeNs RttEstimator::ev_timeout(TimeNs initial_ns, TimeNs floor_ns, std::uint32_t usable_planes) const noexcept {
    // A few measured round trips (tens of microseconds on a fabric), never a
    // fixed RTO: the slowest path's RTT sets it, so a long path is not
    // mistaken for a dead one. Until every usable plane has answered, the
    // slowest is not known (planes may differ in delay, and a packet's report
    // waits for the slowest plane's holes to fill): the initial timeout is
    // the floor then.
    if (!all_.sampled()) return initial_ns;
    const TimeNs measured = std::max<TimeNs>(2 * all_.max_ns + reorder_window(initial_ns), floor_ns);
    if ((usable_planes & ~planes_sampled_) != 0) return std::max<TimeNs>(measured, initial_ns);
    return measured;
}

bool RttEstimator::overtaken(std::uint8_t plane, TimeNs sent_ns, TimeNs horizon_ns) const noexcept {
    const TimeNs own_max = plane_[plane].max_ns;
    return own_max != 0 && horizon_ns != 0 && sent_ns + own_max + all_.slack_ns() < horizon_ns;
}

bool RttEstimator::silent(std::uint8_t plane, TimeNs last_ack_ns, TimeNs now) const noexcept {
    const TimeNs max = plane_[plane].max_ns;
    return max != 0 && last_ack_ns + max < now;
}

}  // namespace omrc::core
