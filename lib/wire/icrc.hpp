// SPDX-License-Identifier: BSD-3-Clause
// RoCEv2 invariant CRC. CRC-32 (IEEE 802.3, reflected; ISA-L) over 8 bytes of
// 0xFF, then the IPv6 header that precedes UDP (the INNER header in SRv6
// mode, because the outer destination is rewritten at every uSID hop), UDP,
// BTH, extension headers, payload and pad. Masked to all-ones first: IPv6
// traffic class, flow label and hop limit; UDP checksum; BTH byte 4.
// Stored little-endian in the last 4 bytes of the frame.
#pragma once

#include <cstdint>
#include <span>

namespace omrc::wire {

inline constexpr std::size_t kIcrcSize = 4;

/// ICRC over `covered` = IPv6 header .. last pad byte (ICRC excluded).
/// Requires covered.size() >= 40 + 8 + 12; returns 0 otherwise (callers
/// bounds-check first: the frame parser never calls it on shorter input).
[[nodiscard]] std::uint32_t icrc_compute(std::span<const std::uint8_t> covered) noexcept;

/// Same CRC, with the covered bytes given in two pieces (headers built in one
/// buffer, payload still in registered memory). `headers` starts at the IPv6
/// header and holds at least IPv6 + UDP + BTH.
[[nodiscard]] std::uint32_t icrc_compute(std::span<const std::uint8_t> headers,
                                         std::span<const std::uint8_t> tail) noexcept;

/// Same CRC over `headers` (from the IPv6 header), then each payload piece,
/// then `zero_pad` zero bytes: a gather list in as few CRC calls as its size
/// allows (one for small frames).
[[nodiscard]] std::uint32_t icrc_compute_pieces(std::span<const std::uint8_t> headers,
                                                std::span<const std::span<const std::uint8_t>> pieces,
                                                std::size_t zero_pad) noexcept;

/// Continues a CRC returned by icrc_compute() over more covered bytes
/// (payload pieces of a gather list, then pad).
[[nodiscard]] std::uint32_t icrc_extend(std::uint32_t crc, std::span<const std::uint8_t> more) noexcept;

/// True when the 4 bytes after `covered` hold its ICRC (`with_icrc` = covered + ICRC).
[[nodiscard]] bool icrc_verify(std::span<const std::uint8_t> with_icrc) noexcept;

}  // namespace omrc::wire
