// SPDX-License-Identifier: BSD-3-Clause
// SRv6 micro-segments (RFC 9800 NEXT-C-SID, F3216 format): an IPv6 address
// holding a 32-bit locator block followed by up to six 16-bit uSIDs and zero
// fill. One uSID per switch; 0x0000 ends the container.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "wire/error.hpp"
#include "wire/ipv6.hpp"
#include "wire/srh.hpp"

namespace omrc::wire {

inline constexpr std::size_t kUsidsPerContainer = 6;

/// A decoded container: block and the uSIDs before the first zero.
struct UsidContainer {
    std::uint32_t block = 0;
    std::array<std::uint16_t, kUsidsPerContainer> usids{};
    std::uint8_t count = 0;
};

/// Builds block | usids... | 0-fill. Rejects more than six uSIDs and zero uSIDs.
WireError usid_container_build(std::uint32_t block, std::span<const std::uint16_t> usids,
                               Ipv6Addr& out) noexcept;

/// Splits an address into block and uSIDs (stops at the first zero uSID).
/// Nonzero bytes after the end marker are reported as bad_field.
WireError usid_container_parse(const Ipv6Addr& addr, UsidContainer& out) noexcept;

/// What a uN node did with a packet.
enum class UnAction : std::uint8_t {
    shifted,       ///< uSIDs remain: forward on the shifted DA by plain longest-prefix match
    next_segment,  ///< container exhausted, SRH had segments left: DA = next SRH segment
    end_of_path,   ///< container exhausted and no SRH segment left: local delivery / decapsulation
};

/// The uN (End with NEXT-C-SID) behaviour at node (block, my_usid): the DA's
/// first 48 bits must equal block+my_usid (else usid_no_match). Shifts the
/// uSID part left by 16 bits and zero-fills; when nothing remains, acts as
/// End: with an SRH whose segments_left > 0, decrements it and copies the
/// next segment into the DA.
WireError usid_un_process(Ipv6Addr& da, SrhHdr* srh, std::uint32_t block, std::uint16_t my_usid,
                          UnAction& action) noexcept;

/// Encodes a path of switch uSIDs: up to six in the DA alone (srh_needed =
/// false); longer paths are cut into containers of six, the first in the DA
/// and all of them in `srh` (wire order: segments[0] = last container).
WireError usid_path_encode(std::uint32_t block, std::span<const std::uint16_t> path, Ipv6Addr& da,
                           SrhHdr& srh, bool& srh_needed) noexcept;

}  // namespace omrc::wire
