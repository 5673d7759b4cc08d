// SPDX-License-Identifier: BSD-3-Clause
// 24-bit packet sequence numbers with wrap-safe arithmetic (serial number
// arithmetic, RFC 1982 style, on 24 bits). Two PSNs compare correctly while
// they are less than 2^23 apart; the receive window (≤ 4096 · 128 packets is
// far below) keeps them so.
#pragma once

#include <cstdint>

namespace omrc::core {

/// Every 24-bit wrapping count of the protocol: PSNs, MSNs, QPNs, CC_STATE's
/// received-bytes units. Two values compare correctly while they are less
/// than kSeq24Half apart.
inline constexpr std::uint32_t kSeq24Bits = 24;
inline constexpr std::uint32_t kSeq24Mask = (1u << kSeq24Bits) - 1;
inline constexpr std::uint32_t kSeq24Half = 1u << (kSeq24Bits - 1);
inline constexpr std::uint32_t kPsnMask = kSeq24Mask;  ///< BTH PSN
inline constexpr std::uint32_t kMsnMask = kSeq24Mask;  ///< AETH MSN (messages completed)
inline constexpr std::uint32_t kQpnMask = kSeq24Mask;  ///< BTH destination QP

[[nodiscard]] constexpr std::uint32_t psn_add(std::uint32_t psn, std::int64_t n) noexcept {
    return static_cast<std::uint32_t>((static_cast<std::int64_t>(psn) + n) & kPsnMask);
}
/// Signed distance a − b in (−2^23, 2^23].
[[nodiscard]] constexpr std::int32_t psn_diff(std::uint32_t a, std::uint32_t b) noexcept {
    std::int32_t d = static_cast<std::int32_t>((a - b) & kPsnMask);
    if (d > static_cast<std::int32_t>(kSeq24Half)) d -= static_cast<std::int32_t>(kSeq24Mask + 1);
    return d;
}
[[nodiscard]] constexpr bool psn_lt(std::uint32_t a, std::uint32_t b) noexcept { return psn_diff(a, b) < 0; }
[[nodiscard]] constexpr bool psn_le(std::uint32_t a, std::uint32_t b) noexcept { return psn_diff(a, b) <= 0; }

}  // namespace omrc::core
