// SPDX-License-Identifier: BSD-3-Clause
// Forwarding decisions as pure functions of a switch, the fabric geometry
// and a frame's header bytes (the Simulator applies them; tests call them
// directly).
#pragma once

#include <cstdint>
#include <span>

#include "drivers/sim/network.hpp"

namespace omrc::sim {

/// uN at switch `s`: shifts the outer destination address in `header` (an
/// srv6 frame) in place and returns the local output port for the next
/// uSID, or kNone (no match, end of path, wrong plane, no table entry).
[[nodiscard]] std::uint32_t usid_forward(const RoutingDims& dims, const Switch& s, std::span<std::uint8_t> header) noexcept;

}  // namespace omrc::sim
