// SPDX-License-Identifier: BSD-3-Clause
#include "core/path_alarms.hpp"

namespace omrc::core {

void PathAlarms::raise_for(std::uint8_t plane, std::uint16_t group, std::uint32_t dst_t0, TimeNs now) noexcept {
    for (std::uint64_t s = oldest(); s < seq_; ++s) {
        const Alarm& a = alarms_[s % kAlarms];
        if (a.plane == plane && a.group == group && a.dst_t0 != dst_t0 && now <= a.at_ns + hold_ns_) {
            dst_t0 = kAnyT0;
            break;
        }
    }
    raise(plane, group, dst_t0, now);
}

void PathAlarms::raise(std::uint8_t plane, std::uint16_t group, std::uint32_t dst_t0, TimeNs now) noexcept {
    alarms_[seq_ % kAlarms] = {now, dst_t0, group, plane};
    ++seq_;
}

bool PathAlarms::told(std::uint32_t peer_host, std::uint8_t plane, std::uint16_t group, TimeNs now) const noexcept {
    for (const Told& t : told_)
        if (t.at_ns != kNever && t.peer_host == peer_host && t.plane == plane && t.group == group &&
            now <= t.at_ns + hold_ns_)
            return true;
    return false;
}

void PathAlarms::note_told(std::uint32_t peer_host, std::uint8_t plane, std::uint16_t group, TimeNs now) noexcept {
    told_[told_next_++ % kTold] = {now, peer_host, group, plane};
}

}  // namespace omrc::core
