// SPDX-License-Identifier: BSD-3-Clause
// Segment Routing Header (RFC 8754, routing type 4). OpenMRC needs it only for
// paths longer than one F3216 container (six uSIDs) and for debugging; the
// common case is a single container in the outer destination address.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "wire/bytes.hpp"
#include "wire/error.hpp"
#include "wire/ipv6.hpp"

namespace omrc::wire {

inline constexpr std::uint8_t kRoutingTypeSrh = 4;

/// SRH with up to kMaxSegments segments and no TLVs. The segment list is kept
/// in wire order: segments[0] is the LAST segment of the path (RFC 8754 §2).
struct SrhHdr {
    static constexpr std::size_t kFixedSize = 8;
    static constexpr std::size_t kMaxSegments = 8;
    std::uint8_t next_header = kNextHeaderIpv6;
    std::uint8_t segments_left = 0;
    std::uint8_t last_entry = 0;  ///< index of the last element of the list (= count - 1)
    std::uint8_t flags = 0;
    std::uint16_t tag = 0;
    std::uint8_t num_segments = 0;  ///< decoded/encoded count, ≤ kMaxSegments
    std::array<Ipv6Addr, kMaxSegments> segments{};

    /// Total bytes on the wire: 8 + 16 * num_segments (no TLVs are emitted).
    [[nodiscard]] std::size_t wire_size() const noexcept { return kFixedSize + 16u * num_segments; }

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (num_segments == 0 || num_segments > kMaxSegments) return WireError::bad_srh;
        if (segments_left > last_entry || last_entry != num_segments - 1) return WireError::bad_srh;
        if (out.size() < wire_size()) return WireError::buffer_too_small;
        out[0] = next_header;
        out[1] = static_cast<std::uint8_t>(2 * num_segments);  // 8-octet units beyond the first 8
        out[2] = kRoutingTypeSrh;
        out[3] = segments_left;
        out[4] = last_entry;
        out[5] = flags;
        store_be16(&out[6], tag);
        for (std::size_t s = 0; s < num_segments; ++s)
            for (std::size_t i = 0; i < 16; ++i) out[8 + 16 * s + i] = segments[s][i];
        return WireError::ok;
    }

    /// Decodes the SRH at the start of `in`. TLVs after the segment list are
    /// skipped (their bytes are counted by hdr_ext_len). `consumed` returns the
    /// full header length including TLVs.
    static WireError decode(std::span<const std::uint8_t> in, SrhHdr& h, std::size_t& consumed) noexcept {
        if (in.size() < kFixedSize) return WireError::truncated_srh;
        const std::size_t total = kFixedSize + 8u * in[1];
        if (in.size() < total) return WireError::truncated_srh;
        if (in[2] != kRoutingTypeSrh) return WireError::bad_srh;
        const std::size_t entries = std::size_t{in[4]} + 1;
        if (entries > kMaxSegments || kFixedSize + 16 * entries > total) return WireError::bad_srh;
        if (in[3] > in[4]) return WireError::bad_srh;
        h.next_header = in[0];
        h.segments_left = in[3];
        h.last_entry = in[4];
        h.flags = in[5];
        h.tag = load_be16(&in[6]);
        h.num_segments = static_cast<std::uint8_t>(entries);
        for (std::size_t s = 0; s < entries; ++s)
            for (std::size_t i = 0; i < 16; ++i) h.segments[s][i] = in[8 + 16 * s + i];
        consumed = total;
        return WireError::ok;
    }
};

}  // namespace omrc::wire
