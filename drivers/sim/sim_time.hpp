// SPDX-License-Identifier: BSD-3-Clause
// Simulated time: an integer picosecond count from the start of a
// simulation. The engine (lib/core) keeps nanoseconds; the simulator converts
// at the NIC boundary only (floor on the way in, exact ×1000 on the way out,
// so an engine wakeup at T ns runs at exactly T·1000 ps).
#pragma once

#include <cstdint>

#include "core/types.hpp"

namespace omrc::sim {

using TimePs = std::uint64_t;
inline constexpr TimePs kNeverPs = UINT64_MAX;
inline constexpr TimePs kPsPerNs = 1000;
inline constexpr TimePs kPsPerUs = 1'000'000;

[[nodiscard]] constexpr core::TimeNs to_ns(TimePs t) noexcept { return t / kPsPerNs; }
[[nodiscard]] constexpr TimePs from_ns(core::TimeNs t) noexcept {
    return t == core::kNever ? kNeverPs : t * kPsPerNs;
}
[[nodiscard]] constexpr double to_us(TimePs t) noexcept { return static_cast<double>(t) / 1e6; }

/// Time to serialise `bytes` at `rate_bps` (rounded down to a picosecond).
[[nodiscard]] constexpr TimePs serialization_ps(std::uint64_t bytes, std::uint64_t rate_bps) noexcept {
    // 128-bit: whole messages (ideal times) overflow 64 bits beyond 2 MB.
    return static_cast<TimePs>(static_cast<unsigned __int128>(bytes) * 8'000'000'000'000ull / rate_bps);
}

}  // namespace omrc::sim
