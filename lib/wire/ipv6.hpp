// SPDX-License-Identifier: BSD-3-Clause
// IPv6 fixed header (RFC 8200). Used twice in SRv6 mode (outer: uSID path,
// inner: peer NIC address) and once in plain mode.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "wire/bytes.hpp"
#include "wire/error.hpp"

namespace omrc::wire {

using Ipv6Addr = std::array<std::uint8_t, 16>;

inline constexpr std::uint8_t kNextHeaderIpv6 = 41;     ///< IPv6-in-IPv6 (outer → inner)
inline constexpr std::uint8_t kNextHeaderRouting = 43;  ///< SRH
inline constexpr std::uint8_t kNextHeaderUdp = 17;

struct Ipv6Hdr {
    static constexpr std::size_t kSize = 40;
    std::uint8_t traffic_class = 0;  ///< DSCP in bits 7..2, ECN in bits 1..0
    std::uint32_t flow_label = 0;    ///< 20 bits; OpenMRC carries EV[15:0] in the low 16 (inner header)
    std::uint16_t payload_len = 0;   ///< bytes after this header, extension headers included
    std::uint8_t next_header = kNextHeaderUdp;
    std::uint8_t hop_limit = 64;
    Ipv6Addr src{};
    Ipv6Addr dst{};

    [[nodiscard]] std::uint8_t dscp() const noexcept { return traffic_class >> 2; }
    [[nodiscard]] std::uint8_t ecn() const noexcept { return traffic_class & 0x3; }
    void set_dscp(std::uint8_t d) noexcept {
        traffic_class = static_cast<std::uint8_t>(((d & 0x3F) << 2) | (traffic_class & 0x3));
    }
    void set_ecn(std::uint8_t e) noexcept {
        traffic_class = static_cast<std::uint8_t>((traffic_class & 0xFC) | (e & 0x3));
    }

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (flow_label > 0xFFFFF) return WireError::bad_field;
        store_be32(&out[0], (6u << 28) | (std::uint32_t{traffic_class} << 20) | flow_label);
        store_be16(&out[4], payload_len);
        out[6] = next_header;
        out[7] = hop_limit;
        for (std::size_t i = 0; i < 16; ++i) {
            out[8 + i] = src[i];
            out[24 + i] = dst[i];
        }
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, Ipv6Hdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ipv6;
        const std::uint32_t w0 = load_be32(&in[0]);
        if ((w0 >> 28) != 6) return WireError::bad_ip_version;
        h.traffic_class = static_cast<std::uint8_t>(w0 >> 20);
        h.flow_label = w0 & 0xFFFFF;
        h.payload_len = load_be16(&in[4]);
        h.next_header = in[6];
        h.hop_limit = in[7];
        for (std::size_t i = 0; i < 16; ++i) {
            h.src[i] = in[8 + i];
            h.dst[i] = in[24 + i];
        }
        return WireError::ok;
    }
    friend bool operator==(const Ipv6Hdr&, const Ipv6Hdr&) = default;

    // In-place stores of the per-packet fields into an encoded header
    // (`hdr` points at its first byte): header templates patch these.
    static void store_flow_label(std::uint8_t* hdr, std::uint32_t flow_label) noexcept {
        store_be32(hdr, (load_be32(hdr) & 0xFFF00000u) | (flow_label & 0xFFFFF));
    }
    static void store_payload_len(std::uint8_t* hdr, std::uint16_t len) noexcept { store_be16(hdr + 4, len); }
    static void store_dst(std::uint8_t* hdr, const Ipv6Addr& dst) noexcept {
        for (std::size_t i = 0; i < 16; ++i) hdr[24 + i] = dst[i];
    }

    // The traffic class of an encoded header, in place (switches and
    // impairments re-mark DSCP and ECN): its high nibble is the low nibble
    // of byte 0, its low nibble the high nibble of byte 1.
    static constexpr std::uint8_t kEcnNotEct = 0;  ///< not ECN-capable
    static constexpr std::uint8_t kEcnCe = 3;      ///< congestion experienced
    [[nodiscard]] static std::uint8_t load_traffic_class(const std::uint8_t* hdr) noexcept {
        return static_cast<std::uint8_t>(((hdr[0] & 0x0F) << 4) | (hdr[1] >> 4));
    }
    static void store_traffic_class(std::uint8_t* hdr, std::uint8_t tc) noexcept {
        hdr[0] = static_cast<std::uint8_t>((hdr[0] & 0xF0) | (tc >> 4));
        hdr[1] = static_cast<std::uint8_t>((hdr[1] & 0x0F) | ((tc & 0x0F) << 4));
    }
    /// DSCP (6 bits) replaced, ECN kept.
    static void store_dscp(std::uint8_t* hdr, std::uint8_t dscp) noexcept {
        store_traffic_class(hdr, static_cast<std::uint8_t>(((dscp & 0x3F) << 2) | (load_traffic_class(hdr) & 0x03)));
    }
    /// ECN (2 bits) replaced, DSCP kept.
    static void store_ecn(std::uint8_t* hdr, std::uint8_t ecn) noexcept {
        store_traffic_class(hdr, static_cast<std::uint8_t>((load_traffic_class(hdr) & 0xFC) | (ecn & 0x03)));
    }
    /// A switch's ECN mark: CE where the packet is ECN-capable (ECT(0),
    /// ECT(1) or CE already); returns whether it is CE now.
    static bool mark_ce(std::uint8_t* hdr) noexcept {
        if ((load_traffic_class(hdr) & 0x03) == kEcnNotEct) return false;
        store_ecn(hdr, kEcnCe);
        return true;
    }
};

}  // namespace omrc::wire
