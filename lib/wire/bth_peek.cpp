// SPDX-License-Identifier: BSD-3-Clause
#include "wire/bth_peek.hpp"

#include "wire/bth.hpp"
#include "wire/bytes.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv6.hpp"
#include "wire/psp.hpp"
#include "wire/srh.hpp"
#include "wire/udp.hpp"

namespace omrc::wire {

bool peek_bth(std::span<const std::uint8_t> head, BthPeek& out) noexcept {
    std::size_t off = EthHdr::kSize;
    if (head.size() < off + Ipv6Hdr::kSize || load_be16(&head[12]) != kEthertypeIpv6) return false;
    std::uint8_t next = head[off + 6];
    std::size_t ip = off;
    off += Ipv6Hdr::kSize;
    if (next == kNextHeaderRouting) {  // srv6 with an SRH, then the inner IPv6 header
        if (head.size() < off + SrhHdr::kFixedSize) return false;
        next = head[off];
        off += SrhHdr::kFixedSize + 8u * head[off + 1];
    }
    if (next == kNextHeaderIpv6) {  // srv6: the inner IPv6 header
        if (head.size() < off + Ipv6Hdr::kSize) return false;
        next = head[off + 6];
        ip = off;
        off += Ipv6Hdr::kSize;
    }
    if (next != kNextHeaderUdp) return false;
    if (head.size() < off + UdpHdr::kSize) return false;
    // A sealed frame (docs/PROTOCOL.md §12): its BTH follows the PSP header and
    // the inner UDP header, in the clear.
    const bool sealed = load_be16(&head[off + 2]) == kPspUdpPort;
    off += UdpHdr::kSize;
    if (sealed) off += PspHdr::kSize + UdpHdr::kSize;
    if (head.size() < off + BthHdr::kSize) return false;
    out.opcode = head[off];
    out.dest_qp = load_be24(&head[off + 5]);
    out.psn = load_be24(&head[off + 9]);
    out.ip_offset = static_cast<std::uint16_t>(ip);
    return true;
}

}  // namespace omrc::wire
