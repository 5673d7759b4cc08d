// SPDX-License-Identifier: BSD-3-Clause
#include "drivers/udp/codec.hpp"

#include <cstring>

#include "wire/bytes.hpp"
#include "wire/ev.hpp"
#include "wire/psp.hpp"
#include "wire/udp.hpp"

namespace omrc::udp {

namespace {
constexpr std::uint8_t kMacPrefix0 = 0x02;  // locally administered, unicast
constexpr std::uint8_t kMacPrefix1 = 0x55;  // 'U'
constexpr std::size_t kIpOffset = wire::EthHdr::kSize;
constexpr std::size_t kUdpOffset = kIpOffset + wire::Ipv6Hdr::kSize;
}  // namespace

wire::MacAddr plane_mac(std::uint16_t base_port, std::uint32_t plane) noexcept {
    return {kMacPrefix0, kMacPrefix1, static_cast<std::uint8_t>(base_port >> 8),
            static_cast<std::uint8_t>(base_port), 0, static_cast<std::uint8_t>(plane)};
}

bool mac_base_port(const wire::MacAddr& mac, std::uint16_t& base_port) noexcept {
    if (mac[0] != kMacPrefix0 || mac[1] != kMacPrefix1) return false;
    const auto port = static_cast<std::uint16_t>((mac[2] << 8) | mac[3]);
    if (port == 0 || port % kSocketsPerPlane != 0) return false;
    base_port = port;
    return true;
}

TxParse parse_tx(const wire::GatherFrame& g, TxMeta& out) noexcept {
    if (g.header_len < kPlainHeaderBytes) return TxParse::bad_frame;
    const std::span<const std::uint8_t> h(g.header.data(), g.header_len);
    wire::EthHdr eth;
    wire::Ipv6Hdr ip;
    wire::UdpHdr udp;
    if (wire::EthHdr::decode(h, eth) != wire::WireError::ok || eth.ethertype != wire::kEthertypeIpv6)
        return TxParse::bad_frame;
    if (wire::Ipv6Hdr::decode(h.subspan(kIpOffset), ip) != wire::WireError::ok ||
        ip.next_header != wire::kNextHeaderUdp)
        return TxParse::bad_frame;
    if (wire::UdpHdr::decode(h.subspan(kUdpOffset), udp) != wire::WireError::ok) return TxParse::bad_frame;
    std::uint16_t base = 0;
    if (!mac_base_port(eth.dst, base)) return TxParse::bad_peer_mac;
    const std::uint32_t ev = wire::ev_from_wire(udp.src_port, ip.flow_label);
    if (!ev_plane_ok(ev, g.plane)) return TxParse::ev_plane;
    const EvPorts p = ev_to_ports(ev);
    out.src = ip.src;
    out.dst = ip.dst;
    out.dst_port = static_cast<std::uint16_t>(base + p.dst_index);
    out.src_index = p.src_index;
    out.flow_label = p.flow_label;
    out.traffic_class = ip.traffic_class;
    out.hop_limit = ip.hop_limit;
    out.ev = ev;
    return TxParse::ok;
}

std::size_t copy_udp_payload(const wire::GatherFrame& g, std::span<std::uint8_t> out) noexcept {
    if (g.header_len < kPlainHeaderBytes || g.header_len > g.header.size() || g.segment_count > g.segments.size() ||
        g.tail_len > g.tail.size())
        return 0;
    const std::size_t n = g.size() - kPlainHeaderBytes;
    if (out.size() < n) return 0;
    std::uint8_t* p = out.data();
    const std::size_t h = g.header_len - kPlainHeaderBytes;
    std::memcpy(p, g.header.data() + kPlainHeaderBytes, h);
    p += h;
    for (std::size_t s = 0; s < g.segment_count; ++s) {
        if (g.segments[s].len == 0) continue;
        std::memcpy(p, g.segments[s].data, g.segments[s].len);
        p += g.segments[s].len;
    }
    std::memcpy(p, g.tail.data(), g.tail_len);
    return n;
}

void write_rx_headers(std::span<std::uint8_t, kPlainHeaderBytes> out, const RxMeta& m,
                      std::size_t datagram_len, bool sealed) noexcept {
    const std::uint32_t ev = ev_from_ports(m.plane, m.src_port, m.dst_port, m.flow_label);
    wire::EthHdr eth;
    eth.dst = m.local_mac;
    eth.src = plane_mac(static_cast<std::uint16_t>(m.src_port - m.src_port % kSocketsPerPlane), m.plane);
    wire::Ipv6Hdr ip;
    ip.traffic_class = m.traffic_class;
    ip.flow_label = wire::ev_to_flow_label(ev);
    ip.payload_len = static_cast<std::uint16_t>(datagram_len + wire::UdpHdr::kSize);
    ip.next_header = wire::kNextHeaderUdp;
    ip.hop_limit = m.hop_limit;
    ip.src = m.src;
    ip.dst = m.dst;
    wire::UdpHdr udp;
    udp.src_port = wire::ev_to_udp_sport(ev);
    udp.dst_port = sealed ? wire::kPspUdpPort : wire::kRoceUdpPort;
    udp.length = ip.payload_len;
    udp.checksum = 0;
    // The span has the exact size of the three headers: encode cannot fail.
    (void)eth.encode(out);
    (void)ip.encode(out.subspan(kIpOffset));
    (void)udp.encode(out.subspan(kUdpOffset));
}

}  // namespace omrc::udp
