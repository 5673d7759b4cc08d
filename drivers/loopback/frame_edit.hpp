// SPDX-License-Identifier: BSD-3-Clause
// What the loopback fabric needs to know about a frame, and the edits a
// switch or a faulty link makes to it. Only header offsets are walked
// (bounds-checked, no ICRC check), so this works on any byte string; a frame
// that is not Ethernet II + IPv6 + UDP + BTH simply reports less.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "drivers/loopback/impairment.hpp"
#include "drivers/loopback/rng.hpp"

namespace omrc::loopback {

/// Offset of the first IPv6 header: the one a switch marks (DSCP, ECN).
inline constexpr std::size_t kFirstIpv6Offset = 14;

struct FrameInfo {
    bool has_ipv6 = false;        ///< ethertype 0x86DD and a whole first IPv6 header (version 6)
    bool has_udp = false;         ///< the IPv6 header before UDP and the UDP header are present: `ev` valid
    bool has_bth = false;         ///< BTH present: `opcode`, `is_data` valid
    bool is_data = false;         ///< opcode 0xC0..0xCB (SEND_*, WRITE_*)
    std::uint8_t opcode = 0;
    std::uint32_t ev = 0;         ///< UDP source port << 16 | low 16 bits of the flow label
    std::uint16_t ip_offset = 0;  ///< the IPv6 header that precedes UDP (inner in SRv6 mode)
    std::uint16_t udp_offset = 0;
    std::uint16_t bth_offset = 0;
};

/// Walks Ethernet, IPv6 (plain, or outer + optional SRH + inner), UDP, BTH.
[[nodiscard]] FrameInfo inspect_frame(std::span<const std::uint8_t> frame) noexcept;

/// Whether an effect with selector `s` applies to the frame.
[[nodiscard]] constexpr bool selected(Select s, const FrameInfo& fi) noexcept {
    return s == Select::all || (s == Select::data) == fi.is_data;
}

/// Traffic class of the first IPv6 header (DSCP in bits 7..2, ECN in 1..0).
/// Requires fi.has_ipv6.
[[nodiscard]] std::uint8_t first_traffic_class(std::span<const std::uint8_t> frame) noexcept;
void set_first_dscp(std::span<std::uint8_t> frame, std::uint8_t dscp) noexcept;
void set_first_ecn(std::span<std::uint8_t> frame, std::uint8_t ecn) noexcept;

/// Length a data frame is trimmed to: `size_bytes`, raised to BTH + METH
/// (0 also means that), never more than the frame. Requires fi.has_bth.
[[nodiscard]] std::size_t trimmed_length(const FrameInfo& fi, std::size_t frame_len,
                                         std::uint32_t size_bytes) noexcept;

/// Flips one bit chosen by `rng`: among the bits the ICRC protects when
/// `anywhere` is false and the frame has a BTH, otherwise anywhere in the
/// frame. Returns the flipped bit index (MSB-first from byte 0).
std::size_t flip_random_bit(std::span<std::uint8_t> frame, const FrameInfo& fi, bool anywhere, Rng& rng) noexcept;

}  // namespace omrc::loopback
