// SPDX-License-Identifier: BSD-3-Clause
// Path alarms (EngineConfig::path_alarm_ns, docs/PROTOCOL.md §11.5): the
// (plane, T1)s an engine's QPs gave up on strong evidence lately, for the
// engine's other QPs toward the same destination T0, and the alarms told to
// peer engines (once per peer, plane and T1 within the alarm time). Plain
// bookkeeping on the `now` it is given: path_alarms.cpp; the engine's use of
// it (retirement, applying alarms, PATH_ALARM frames) is engine_path_alarms.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "core/types.hpp"

namespace omrc::core {

class PathAlarms {
public:
    /// An alarm's destination: every T0 (the T1, or our uplink to it, failed).
    static constexpr std::uint32_t kAnyT0 = UINT32_MAX;
    /// Alarms kept (the oldest is overwritten) and peers told, at most.
    static constexpr std::size_t kAlarms = 64;
    static constexpr std::size_t kTold = 32;

    /// `hold_ns`: how long an alarm, or a telling, stands (path_alarm_ns).
    explicit PathAlarms(TimeNs hold_ns) noexcept : hold_ns_(hold_ns) {}

    /// Records that a QP toward `dst_t0` gave up (plane, group) at `now`.
    /// When a QP toward another destination T0 gave up the same (plane,
    /// group) within the hold, the failure is the T1's or our uplink's, which
    /// every destination crosses: the alarm is for kAnyT0.
    void raise_for(std::uint8_t plane, std::uint16_t group, std::uint32_t dst_t0, TimeNs now) noexcept;
    /// Records an alarm as it is (a peer's, for kAnyT0).
    void raise(std::uint8_t plane, std::uint16_t group, std::uint32_t dst_t0, TimeNs now) noexcept;
    /// Alarms raised so far: a QP that has applied every alarm before this is up to date.
    [[nodiscard]] std::uint64_t seq() const noexcept { return seq_; }
    /// Calls f(plane, group) for every alarm from sequence `seen` on (as far
    /// as the ring still holds) that is for `dst_t0` and still stands at `now`.
    template <class F>
    void since(std::uint64_t seen, std::uint32_t dst_t0, TimeNs now, F&& f) const {
        for (std::uint64_t s = std::max(seen, oldest()); s < seq_; ++s) {
            const Alarm& a = alarms_[s % kAlarms];
            if ((a.dst_t0 == dst_t0 || a.dst_t0 == kAnyT0) && now <= a.at_ns + hold_ns_) f(a.plane, a.group);
        }
    }

    /// Whether `peer_host` was told of (plane, group) within the hold.
    [[nodiscard]] bool told(std::uint32_t peer_host, std::uint8_t plane, std::uint16_t group, TimeNs now) const noexcept;
    /// Records that `peer_host` was told of (plane, group) at `now`.
    void note_told(std::uint32_t peer_host, std::uint8_t plane, std::uint16_t group, TimeNs now) noexcept;

private:
    struct Alarm {
        TimeNs at_ns = 0;
        std::uint32_t dst_t0 = 0;   ///< destination T0 of the QP that raised it, or kAnyT0
        std::uint16_t group = 0;
        std::uint8_t plane = 0;
    };
    struct Told {
        TimeNs at_ns = kNever;      ///< kNever: unused
        std::uint32_t peer_host = 0;
        std::uint16_t group = 0;
        std::uint8_t plane = 0;
    };
    /// Sequence of the oldest alarm the ring still holds.
    [[nodiscard]] std::uint64_t oldest() const noexcept { return seq_ > kAlarms ? seq_ - kAlarms : 0; }

    TimeNs hold_ns_;
    std::array<Alarm, kAlarms> alarms_{};  ///< a ring, the newest at (seq_ − 1) % kAlarms
    std::uint64_t seq_ = 0;
    std::array<Told, kTold> told_{};
    std::uint32_t told_next_ = 0;
};

}  // namespace omrc::core
