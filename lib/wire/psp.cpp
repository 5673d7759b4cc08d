// SPDX-License-Identifier: BSD-3-Clause
#include "wire/psp.hpp"

#include <cstring>

#include "wire/bytes.hpp"
#include "wire/ethernet.hpp"
#include "wire/icrc.hpp"
#include "wire/ipv6.hpp"
#include "wire/srh.hpp"

namespace omrc::wire {

namespace {

/// The IPv6 chain up to the UDP header (as parse_frame walks it): the offset
/// of the IPv6 header before UDP, and the mode.
WireError walk_to_udp(std::span<const std::uint8_t> f, std::size_t& ip, FrameMode& mode) noexcept {
    if (f.size() < EthHdr::kSize) return WireError::truncated_eth;
    if (load_be16(&f[12]) != kEthertypeIpv6) return WireError::not_ipv6;
    // Plain mode, the common case: IPv6 straight to UDP (what the full walk
    // below concludes for it, without decoding the whole header).
    if (f.size() >= EthHdr::kSize + Ipv6Hdr::kSize && (f[EthHdr::kSize] >> 4) == 6 &&
        f[EthHdr::kSize + 6] == kNextHeaderUdp) {
        ip = EthHdr::kSize;
        mode = FrameMode::plain;
        return WireError::ok;
    }
    std::size_t off = EthHdr::kSize;
    Ipv6Hdr h;
    if (const WireError e = Ipv6Hdr::decode(f.subspan(off), h); e != WireError::ok) return e;
    ip = off;
    mode = FrameMode::plain;
    off += Ipv6Hdr::kSize;
    std::uint8_t next = h.next_header;
    if (next == kNextHeaderRouting) {
        SrhHdr srh;
        std::size_t used = 0;
        if (const WireError e = SrhHdr::decode(f.subspan(off), srh, used); e != WireError::ok) return e;
        next = srh.next_header;
        off += used;
    }
    if (next == kNextHeaderIpv6) {
        const std::size_t outer_end = EthHdr::kSize + Ipv6Hdr::kSize + h.payload_len;
        Ipv6Hdr inner;
        if (const WireError e = Ipv6Hdr::decode(f.subspan(off), inner); e != WireError::ok) return e;
        if (off + Ipv6Hdr::kSize + inner.payload_len != outer_end) return WireError::bad_ip_payload_len;
        ip = off;
        mode = FrameMode::srv6;
        next = inner.next_header;
        off += Ipv6Hdr::kSize;
    }
    if (next != kNextHeaderUdp) return WireError::unsupported_next_header;
    return WireError::ok;
}
}  // namespace

bool is_psp_frame(std::span<const std::uint8_t> frame) noexcept {
    std::size_t ip = 0;
    FrameMode mode{};
    if (walk_to_udp(frame, ip, mode) != WireError::ok) return false;
    const std::size_t udp = ip + Ipv6Hdr::kSize;
    return frame.size() >= udp + UdpHdr::kSize && load_be16(&frame[udp + 2]) == kPspUdpPort;
}

WireError locate_psp(std::span<const std::uint8_t> f, PspLayout& out) noexcept {
    out.sealed = false;
    std::size_t ip = 0;
    FrameMode mode{};
    if (const WireError e = walk_to_udp(f, ip, mode); e != WireError::ok) return e;
    const std::size_t udp = ip + Ipv6Hdr::kSize;
    UdpHdr u;
    if (const WireError e = UdpHdr::decode(f.subspan(std::min(udp, f.size())), u); e != WireError::ok) return e;
    if (u.dst_port != kPspUdpPort) return WireError::not_roce_port;
    out.sealed = true;
    const std::size_t ip_payload = load_be16(&f[ip + 4]);
    if (u.length != ip_payload) return WireError::bad_udp_len;
    const std::size_t end = udp + u.length;  // end of the IPv6 packet
    if (end > f.size()) return WireError::psp_truncated;
    const std::size_t psp = udp + UdpHdr::kSize;
    PspHdr h;
    if (const WireError e = PspHdr::decode(f.subspan(psp, end - std::min(psp, end)), h); e != WireError::ok) return e;
    if (h.next_header != kNextHeaderUdp || h.crypt_offset != kPspCryptOffsetWords) return WireError::psp_bad_header;
    const std::size_t inner = psp + PspHdr::kSize;
    const std::size_t bth = inner + UdpHdr::kSize;
    const std::size_t ct = bth + BthHdr::kSize;
    if (end < ct + kPspIcvSize + kIcrcSize) return WireError::psp_truncated;
    UdpHdr iu;
    (void)UdpHdr::decode(f.subspan(inner), iu);
    if (iu.dst_port != kRoceUdpPort) return WireError::psp_bad_inner;
    // The inner UDP length is the plain frame's: the sealed one less PSP's overhead.
    if (iu.length + kPspOverhead != u.length) return WireError::psp_bad_inner;
    out.mode = mode;
    out.ip_offset = static_cast<std::uint16_t>(ip);
    out.psp_offset = static_cast<std::uint16_t>(psp);
    out.bth_offset = static_cast<std::uint16_t>(bth);
    out.ct_offset = static_cast<std::uint32_t>(ct);
    out.icrc_offset = static_cast<std::uint32_t>(end - kIcrcSize);
    out.ct_len = static_cast<std::uint32_t>(end - kIcrcSize - kPspIcvSize - ct);
    out.psp = h;
    out.opcode = f[bth];
    out.dest_qp = load_be24(&f[bth + 5]);
    return WireError::ok;
}

void psp_udp_to_bth(std::span<const std::uint8_t, UdpHdr::kSize + BthHdr::kSize> udp_bth, const PspHdr& psp,
                    PspUdpToBth& out) noexcept {
    const UdpHdr outer{.src_port = load_be16(&udp_bth[0]),
                       .dst_port = kPspUdpPort,
                       .length = static_cast<std::uint16_t>(load_be16(&udp_bth[4]) + kPspOverhead),
                       .checksum = 0};
    (void)outer.encode(out);
    (void)psp.encode(std::span(out).subspan(UdpHdr::kSize));
    std::memcpy(&out[UdpHdr::kSize + PspHdr::kSize], udp_bth.data(), udp_bth.size());
}

bool psp_seal_headers(std::span<std::uint8_t> hdr, std::size_t ip_offset, FrameMode mode,
                      const PspUdpToBth& tail) noexcept {
    if (hdr.size() < ip_offset + kPspClearBytesAfterIp) return false;
    auto grow = [&](std::size_t len_at) {
        store_be16(&hdr[len_at], static_cast<std::uint16_t>(load_be16(&hdr[len_at]) + kPspOverhead));
    };
    grow(ip_offset + 4);
    if (mode == FrameMode::srv6) grow(EthHdr::kSize + 4);
    std::memcpy(&hdr[ip_offset + Ipv6Hdr::kSize], tail.data(), tail.size());
    return true;
}

std::size_t psp_write_clear_part(std::span<const std::uint8_t> plain, std::size_t ip_offset, FrameMode mode,
                                 const PspHdr& psp, std::span<std::uint8_t> out) noexcept {
    const std::size_t udp = ip_offset + Ipv6Hdr::kSize;
    const std::size_t plain_len = udp + UdpHdr::kSize + BthHdr::kSize;
    const std::size_t n = plain_len + UdpHdr::kSize + PspHdr::kSize;
    if (plain.size() < plain_len || out.size() < n) return 0;
    PspUdpToBth tail;
    psp_udp_to_bth(plain.subspan(udp).first<UdpHdr::kSize + BthHdr::kSize>(), psp, tail);
    std::memcpy(out.data(), plain.data(), udp);
    (void)psp_seal_headers(out.first(n), ip_offset, mode, tail);
    return n;
}

std::size_t psp_write_plain_part(std::span<const std::uint8_t> sealed, const PspLayout& l,
                                 std::span<std::uint8_t> out) noexcept {
    const std::size_t udp = l.ip_offset + Ipv6Hdr::kSize;
    const std::size_t n = udp + UdpHdr::kSize + BthHdr::kSize;
    if (out.size() < n || sealed.size() < l.ct_offset) return 0;
    if (l.mode == FrameMode::plain && udp == EthHdr::kSize + Ipv6Hdr::kSize)
        std::memcpy(out.data(), sealed.data(), EthHdr::kSize + Ipv6Hdr::kSize);  // a constant size: no call
    else
        std::memcpy(out.data(), sealed.data(), udp);
    auto shrink = [&](std::size_t len_at) {
        store_be16(&out[len_at], static_cast<std::uint16_t>(load_be16(&out[len_at]) - kPspOverhead));
    };
    shrink(l.ip_offset + 4);
    if (l.mode == FrameMode::srv6) shrink(EthHdr::kSize + 4);
    std::memcpy(&out[udp], &sealed[l.bth_offset - UdpHdr::kSize], UdpHdr::kSize + BthHdr::kSize);
    return n;
}

}  // namespace omrc::wire
