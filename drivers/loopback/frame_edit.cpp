// SPDX-License-Identifier: BSD-3-Clause
#include "drivers/loopback/frame_edit.hpp"

#include <algorithm>
#include <array>

#include "wire/bth.hpp"
#include "wire/bytes.hpp"
#include "wire/ev.hpp"

namespace omrc::loopback {

namespace {

constexpr std::size_t kEth = wire::EthHdr::kSize;
constexpr std::size_t kIp = wire::Ipv6Hdr::kSize;
constexpr std::size_t kUdp = wire::UdpHdr::kSize;
constexpr std::size_t kBth = wire::BthHdr::kSize;

bool ipv6_at(std::span<const std::uint8_t> f, std::size_t off) noexcept {
    return off + kIp <= f.size() && (f[off] >> 4) == 6;
}

}  // namespace

FrameInfo inspect_frame(std::span<const std::uint8_t> f) noexcept {
    FrameInfo fi;
    if (f.size() < kEth || wire::load_be16(&f[12]) != wire::kEthertypeIpv6) return fi;
    if (!ipv6_at(f, kEth)) return fi;
    fi.has_ipv6 = true;
    std::size_t ip = kEth;
    const std::uint8_t nh = f[kEth + 6];
    if (nh == wire::kNextHeaderIpv6) {
        ip = kEth + kIp;
    } else if (nh == wire::kNextHeaderRouting) {
        const std::size_t srh = kEth + kIp;
        if (srh + 2 > f.size() || f[srh] != wire::kNextHeaderIpv6) return fi;
        ip = srh + wire::SrhHdr::kFixedSize + 8u * f[srh + 1];
    } else if (nh != wire::kNextHeaderUdp) {
        return fi;
    }
    if (!ipv6_at(f, ip) || f[ip + 6] != wire::kNextHeaderUdp) return fi;
    const std::size_t udp = ip + kIp;
    if (udp + kUdp > f.size()) return fi;
    fi.has_udp = true;
    fi.ip_offset = static_cast<std::uint16_t>(ip);
    fi.udp_offset = static_cast<std::uint16_t>(udp);
    fi.ev = wire::ev_from_wire(wire::load_be16(&f[udp]), wire::load_be32(&f[ip]) & 0xFFFFFu);
    const std::size_t bth = udp + kUdp;
    if (bth + kBth > f.size()) return fi;
    fi.has_bth = true;
    fi.bth_offset = static_cast<std::uint16_t>(bth);
    fi.opcode = f[bth];
    fi.is_data = wire::is_data_opcode(static_cast<wire::Opcode>(fi.opcode));
    return fi;
}

std::uint8_t first_traffic_class(std::span<const std::uint8_t> f) noexcept {
    return wire::Ipv6Hdr::load_traffic_class(&f[kFirstIpv6Offset]);
}

void set_first_dscp(std::span<std::uint8_t> f, std::uint8_t dscp) noexcept {
    wire::Ipv6Hdr::store_dscp(&f[kFirstIpv6Offset], dscp);
}

void set_first_ecn(std::span<std::uint8_t> f, std::uint8_t ecn) noexcept {
    wire::Ipv6Hdr::store_ecn(&f[kFirstIpv6Offset], ecn);
}

std::size_t trimmed_length(const FrameInfo& fi, std::size_t frame_len, std::uint32_t size_bytes) noexcept {
    const std::size_t minimum = fi.bth_offset + kBth + wire::MethHdr::kSize;
    return std::min(frame_len, std::max<std::size_t>(minimum, size_bytes));
}

std::size_t flip_random_bit(std::span<std::uint8_t> f, const FrameInfo& fi, bool anywhere, Rng& rng) noexcept {
    if (f.empty()) return 0;
    std::size_t bit = 0;
    if (anywhere || !fi.has_bth) {
        bit = rng.below_or_equal(f.size() * 8 - 1);
    } else {
        // Bits the ICRC masks (icrc.hpp), as sorted [begin, end) ranges in
        // MSB-first bit numbering: IPv6 traffic class + flow label (bits 4..31
        // of the header), hop limit, UDP checksum, BTH byte 4.
        const std::size_t ip = fi.ip_offset, udp = fi.udp_offset, bth = fi.bth_offset;
        const std::array<std::array<std::size_t, 2>, 4> masked{{{ip * 8 + 4, (ip + 4) * 8},
                                                                 {(ip + 7) * 8, (ip + 8) * 8},
                                                                 {(udp + 6) * 8, (udp + 8) * 8},
                                                                 {(bth + 4) * 8, (bth + 5) * 8}}};
        std::size_t masked_bits = 0;
        for (const auto& r : masked) masked_bits += r[1] - r[0];
        const std::size_t protected_bits = (f.size() - ip) * 8 - masked_bits;  // > 0: BTH is present
        bit = ip * 8 + rng.below_or_equal(protected_bits - 1);
        for (const auto& r : masked)
            if (bit >= r[0]) bit += r[1] - r[0];
    }
    f[bit / 8] ^= static_cast<std::uint8_t>(0x80u >> (bit % 8));
    return bit;
}

}  // namespace omrc::loopback
