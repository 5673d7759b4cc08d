// SPDX-License-Identifier: BSD-3-Clause
// Ethernet II header (no VLAN tag: OpenMRC planes are untagged L3 links).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "wire/bytes.hpp"
#include "wire/error.hpp"

namespace omrc::wire {

using MacAddr = std::array<std::uint8_t, 6>;

inline constexpr std::uint16_t kEthertypeIpv6 = 0x86DD;

struct EthHdr {
    static constexpr std::size_t kSize = 14;
    MacAddr dst{};
    MacAddr src{};
    std::uint16_t ethertype = kEthertypeIpv6;

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        for (std::size_t i = 0; i < 6; ++i) {
            out[i] = dst[i];
            out[6 + i] = src[i];
        }
        store_be16(&out[12], ethertype);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, EthHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_eth;
        for (std::size_t i = 0; i < 6; ++i) {
            h.dst[i] = in[i];
            h.src[i] = in[6 + i];
        }
        h.ethertype = load_be16(&in[12]);
        return WireError::ok;
    }
    friend bool operator==(const EthHdr&, const EthHdr&) = default;
};

}  // namespace omrc::wire
