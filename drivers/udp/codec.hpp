// SPDX-License-Identifier: BSD-3-Clause
// The udp driver's mapping between engine frames and UDP datagrams (plain
// mode), as pure functions: no sockets, testable byte by byte.
//
// On the wire a frame travels as one UDP datagram holding the UDP payload
// of the engine's frame (BTH onward, ICRC included). The Ethernet, IPv6 and
// UDP headers are not sent; the receiver rebuilds them from the datagram's
// metadata so that the engine's parser and ICRC check run unchanged. The
// ICRC covers the IPv6 addresses, the UDP ports and the lengths, so every one
// of them must come back exactly; it masks traffic class, flow label and hop
// limit.
//
// Addressing (docs/DRIVERS.md, "udp"). A device has one IPv6 address (the
// engine's address, DeviceAddress::addr). Plane p owns a block of
// kSocketsPerPlane consecutive UDP ports starting at a multiple of
// kSocketsPerPlane; socket i of the block is bound to base_p + i and both
// sends and receives. A device's per-plane MAC (DeviceAddress::macs[p])
// carries base_p, so a peer learns every port from the address exchange.
//
// The EV (32 bits: plane+1 | path | salt, routing::make_ev) travels in
// three places, so that ECMP fabrics hash on it and the receiver recovers it
// exactly:
//   EV[31:28]  the plane: the block the datagram arrives on (EV[31:28] must
//              equal plane + 1, which every engine frame satisfies; others
//              are dropped and counted as tx_ev_plane)
//   EV[27:24]  destination port index: base_p(peer) + EV[27:24]
//   EV[23:20]  source port index: sent from socket EV[23:20] of the block
//   EV[19:0]   IPv6 flow label (IPV6_FLOWINFO_SEND, read back through the
//              IPV6_FLOWINFO ancillary message); its low 16 bits are the
//              EV[15:0] the protocol puts into the flow label anyway.
// The rebuilt frame carries the protocol's packing: UDP source port =
// EV[31:16], destination port 4791, flow label = EV[15:0].
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "wire/ethernet.hpp"
#include "wire/gather_frame.hpp"
#include "wire/ipv6.hpp"

namespace omrc::udp {

/// Sockets (and UDP ports) per plane: 4 EV bits in each port index.
inline constexpr std::uint32_t kSocketsPerPlane = 16;
/// Ethernet + IPv6 + UDP: the part of a plain frame that is not sent.
inline constexpr std::size_t kPlainHeaderBytes = 14 + 40 + 8;
/// Smallest datagram that can be a frame: BTH (12) + ICRC (4).
inline constexpr std::size_t kMinDatagramBytes = 16;
/// Largest datagram a receive buffer holds (MTU 4096 + every extension
/// header + pad + ICRC fits with room to spare); larger ones are truncated
/// by the kernel and dropped (rx_truncated).
inline constexpr std::size_t kMaxDatagramBytes = 4608 - kPlainHeaderBytes - 2;

struct EvPorts {
    std::uint8_t src_index = 0;    ///< socket of the plane's block to send from
    std::uint8_t dst_index = 0;    ///< port of the peer's block to send to
    std::uint32_t flow_label = 0;  ///< 20 bits
};

[[nodiscard]] constexpr EvPorts ev_to_ports(std::uint32_t ev) noexcept {
    return {static_cast<std::uint8_t>((ev >> 20) & 0xF), static_cast<std::uint8_t>((ev >> 24) & 0xF),
            ev & 0xFFFFFu};
}
/// Inverse of ev_to_ports() for a datagram that arrived on `plane`.
[[nodiscard]] constexpr std::uint32_t ev_from_ports(std::uint32_t plane, std::uint16_t src_port,
                                                    std::uint16_t dst_port, std::uint32_t flow_label) noexcept {
    return ((plane + 1) << 28) | (std::uint32_t{dst_port & 0xFu} << 24) | (std::uint32_t{src_port & 0xFu} << 20) |
           (flow_label & 0xFFFFFu);
}
[[nodiscard]] constexpr bool ev_plane_ok(std::uint32_t ev, std::uint32_t plane) noexcept {
    return (ev >> 28) == plane + 1;
}

/// The MAC a udp device shows for plane `plane`: 02:55:<base port, 2 bytes>:00:<plane>.
[[nodiscard]] wire::MacAddr plane_mac(std::uint16_t base_port, std::uint32_t plane) noexcept;
/// The base port a udp MAC carries; false when `mac` is not one (wrong
/// prefix, or a port that is 0 or not a multiple of kSocketsPerPlane).
[[nodiscard]] bool mac_base_port(const wire::MacAddr& mac, std::uint16_t& base_port) noexcept;

/// What a send needs, taken from an engine frame's headers.
struct TxMeta {
    wire::Ipv6Addr src{};         ///< frame IPv6 source (must be the device address)
    wire::Ipv6Addr dst{};         ///< where the datagram goes
    std::uint16_t dst_port = 0;   ///< peer base port + EV[27:24]
    std::uint8_t src_index = 0;   ///< EV[23:20]
    std::uint32_t flow_label = 0; ///< EV[19:0]
    std::uint8_t traffic_class = 0;
    std::uint8_t hop_limit = 64;
    std::uint32_t ev = 0;
};

enum class TxParse : std::uint8_t {
    ok = 0,
    bad_frame,     ///< not Ethernet/IPv6/UDP (plain) or headers shorter than that
    bad_peer_mac,  ///< Ethernet destination is not a udp device MAC
    ev_plane,      ///< EV[31:28] is not the frame's plane + 1
};

/// Reads the plain headers of `g` (first kPlainHeaderBytes of g.header).
[[nodiscard]] TxParse parse_tx(const wire::GatherFrame& g, TxMeta& out) noexcept;

/// Copies the UDP payload of `g` (header bytes after kPlainHeaderBytes,
/// payload segments, tail) into `out`; returns the bytes written, 0 when
/// `out` is too small or the header is shorter than kPlainHeaderBytes.
[[nodiscard]] std::size_t copy_udp_payload(const wire::GatherFrame& g, std::span<std::uint8_t> out) noexcept;

/// What the receiver knows about a datagram.
struct RxMeta {
    std::uint32_t plane = 0;
    wire::Ipv6Addr src{};          ///< datagram source address (the peer's device address)
    wire::Ipv6Addr dst{};          ///< datagram destination (IPV6_PKTINFO)
    std::uint16_t src_port = 0;    ///< peer socket: its plane base + EV[23:20]
    std::uint16_t dst_port = 0;    ///< our socket: our plane base + EV[27:24]
    std::uint8_t traffic_class = 0;
    std::uint32_t flow_label = 0;  ///< 20 bits
    std::uint8_t hop_limit = 64;
    wire::MacAddr local_mac{};     ///< our MAC on the plane
};

/// Writes the Ethernet, IPv6 and UDP headers of the frame a datagram of
/// `datagram_len` bytes came from (datagram_len ≤ 65535 − 8). `sealed`: the
/// datagram is a sealed frame's (wire::is_psp_payload), whose UDP
/// destination port is PSP's 1000 rather than 4791.
void write_rx_headers(std::span<std::uint8_t, kPlainHeaderBytes> out, const RxMeta& m,
                      std::size_t datagram_len, bool sealed = false) noexcept;

}  // namespace omrc::udp
