// SPDX-License-Identifier: BSD-3-Clause
// Receiver-credit extension headers (an OpenMRC extension, not MRC;
// docs/PROTOCOL.md §11.8). A credit-mode sender tells its receiver its
// cumulative request on every data packet (CRTH); the receiver grants back
// on its SACKs (CGTH). Cumulative byte counts travel as their low 32 bits,
// wrapping, and are widened again against the largest value seen
// (unwrap_cumulative), as PSNs are compared modulo 2^24.
#pragma once

#include <cstdint>
#include <span>

#include "wire/bytes.hpp"
#include "wire/error.hpp"

namespace omrc::wire {

/// CRTH, 12 bytes, after METH [TSETH] and before RETH on a data packet
/// whose BTH byte 8 bit 6 (kBthCredit, reserved in MRC) is set:
///   0 request (32) | 4 used (32) | 8 unscheduled (16) | 10 reserved (16, 0)
/// Placed before RETH so that a trim keeping the first headers keeps it.
struct CrthHdr {
    static constexpr std::size_t kSize = 12;
    /// The sender's cumulative request: every byte queued for sending (new
    /// or retransmitted) less its unscheduled allowance, mod 2^32.
    /// Monotone at the sender; a receiver keeps the largest (packets reorder).
    std::uint32_t request = 0;
    /// Credit the sender had used when the packet left, this packet
    /// included (cumulative bytes sent against grants), mod 2^32. Monotone.
    std::uint32_t used = 0;
    /// Bytes of this packet's payload sent without credit (its unscheduled
    /// first burst); ≤ the payload, checked where it is used.
    std::uint16_t unscheduled = 0;

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        store_be32(&out[0], request);
        store_be32(&out[4], used);
        store_be16(&out[8], unscheduled);
        store_be16(&out[10], 0);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, CrthHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.request = load_be32(&in[0]);
        h.used = load_be32(&in[4]);
        h.unscheduled = load_be16(&in[8]);
        return WireError::ok;
    }
    friend bool operator==(const CrthHdr&, const CrthHdr&) = default;
};

/// CGTH, 8 bytes, after CC state on a SACK whose SETH cc_type is
/// mrc::kSethCcTypeCredit (every SACK of a credit-mode QP):
///   0 V (bit 7: grant valid) | 7 reserved bits | 1 reserved (24) | 4 grant (32)
/// V is clear until the receiver has heard a request.
struct CgthHdr {
    static constexpr std::size_t kSize = 8;
    bool valid = false;        ///< V: `grant` holds the receiver's grant
    std::uint32_t grant = 0;   ///< the receiver's cumulative grant to the QP, mod 2^32; ≤ the largest request seen

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        store_be32(&out[0], valid ? 0x80000000u : 0u);
        store_be32(&out[4], grant);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, CgthHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.valid = (in[0] & 0x80) != 0;
        h.grant = load_be32(&in[4]);
        return WireError::ok;
    }
    friend bool operator==(const CgthHdr&, const CgthHdr&) = default;
};

/// A cumulative count sent as its low 32 bits, widened against `largest`
/// (the largest value known): a value up to 2^31 − 1 ahead moves it on,
/// anything else (older, reordered, or corrupt by more than 2^31) leaves
/// it where it is. The counts never fall.
[[nodiscard]] constexpr std::uint64_t unwrap_cumulative(std::uint64_t largest, std::uint32_t low32) noexcept {
    const auto ahead = static_cast<std::int32_t>(low32 - static_cast<std::uint32_t>(largest));
    return ahead > 0 ? largest + static_cast<std::uint64_t>(ahead) : largest;
}

}  // namespace omrc::wire
