// SPDX-License-Identifier: BSD-3-Clause
// UDP header. RoCEv2 destination port 4791; the source port carries EV[31:16].
#pragma once

#include <cstdint>
#include <span>

#include "wire/bytes.hpp"
#include "wire/error.hpp"

namespace omrc::wire {

inline constexpr std::uint16_t kRoceUdpPort = 4791;

struct UdpHdr {
    static constexpr std::size_t kSize = 8;
    std::uint16_t src_port = 0;  ///< EV[31:16]
    std::uint16_t dst_port = kRoceUdpPort;
    std::uint16_t length = 0;    ///< header + payload, bytes
    std::uint16_t checksum = 0;  ///< 0 = not computed (RoCEv2 relies on the ICRC; RFC 6935 zero checksum)

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        store_be16(&out[0], src_port);
        store_be16(&out[2], dst_port);
        store_be16(&out[4], length);
        store_be16(&out[6], checksum);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, UdpHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_udp;
        h.src_port = load_be16(&in[0]);
        h.dst_port = load_be16(&in[2]);
        h.length = load_be16(&in[4]);
        h.checksum = load_be16(&in[6]);
        return WireError::ok;
    }
    friend bool operator==(const UdpHdr&, const UdpHdr&) = default;

    // In-place stores into an encoded header (header templates).
    static void store_src_port(std::uint8_t* hdr, std::uint16_t port) noexcept { store_be16(hdr, port); }
    static void store_length(std::uint8_t* hdr, std::uint16_t len) noexcept { store_be16(hdr + 4, len); }
};

}  // namespace omrc::wire
