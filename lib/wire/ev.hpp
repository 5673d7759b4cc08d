// SPDX-License-Identifier: BSD-3-Clause
// Entropy value (EV) packing. The EV is the only path identity on the wire:
// EV[31:16] → UDP source port, EV[15:0] → low 16 bits of the (inner) IPv6
// flow label. ECMP switches hash both; SRv6 mode also derives the uSID path
// from the EV (lib/routing).
#pragma once

#include <cstdint>

namespace omrc::wire {

[[nodiscard]] constexpr std::uint16_t ev_to_udp_sport(std::uint32_t ev) noexcept {
    return static_cast<std::uint16_t>(ev >> 16);
}
/// The 20-bit flow label carries EV[15:0]; its top 4 bits are zero.
[[nodiscard]] constexpr std::uint32_t ev_to_flow_label(std::uint32_t ev) noexcept { return ev & 0xFFFFu; }
/// Inverse of the two above; the flow label's top 4 bits are ignored.
[[nodiscard]] constexpr std::uint32_t ev_from_wire(std::uint16_t udp_sport, std::uint32_t flow_label) noexcept {
    return (std::uint32_t{udp_sport} << 16) | (flow_label & 0xFFFFu);
}

}  // namespace omrc::wire
