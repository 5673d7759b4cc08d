// SPDX-License-Identifier: BSD-3-Clause
// Switch forwarding: the uN uSID behaviour (lib/wire's usid_un_process on
// the frame's real outer destination address) followed by a lookup of the
// next uSID in the switch's static table, or ECMP hashing of the EV read
// from the inner headers, or (ev_path) the EV's path bits naming the uplink;
// and trimming of overflowing data frames.
//
// Static tables. A uSID names (plane, role, index) (lib/routing/fabric.hpp),
// so the table of every switch of a tier is the same map from (role, index)
// to a port range; it is derived from RoutingDims rather than stored per
// switch (131,072-host fabrics have 6,144 switches). The plane nibble must
// be the switch's own plane: a frame that strayed into another plane is
// dropped and counted (no_route), as a real uN node without a matching
// prefix would.
#include <algorithm>

#include "drivers/sim/forwarding.hpp"
#include "routing/fabric.hpp"
#include "wire/bytes.hpp"
#include "wire/ev.hpp"
#include "wire/usid.hpp"

namespace omrc::sim {

namespace {

constexpr std::size_t kEth = wire::EthHdr::kSize;
constexpr std::size_t kIp = wire::Ipv6Hdr::kSize;
constexpr std::size_t kOuterDa = kEth + 24;

/// Final mixer of SplitMix64: a good 64-bit hash of the EV and a switch salt.
constexpr std::uint64_t mix(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void set_first_dscp(std::uint8_t* h, std::uint8_t dscp) noexcept { wire::Ipv6Hdr::store_dscp(h + kEth, dscp); }

}  // namespace

std::uint32_t Simulator::route(Switch& s, Packet& p) {
    if (p.frame.header_len < kEth + kIp) return kNone;
    std::uint8_t* h = p.frame.header.data();
    if (h[kEth + 7] <= 1) return kNone;  // hop limit exhausted
    --h[kEth + 7];
    if (cfg_.routing == RoutingMode::usid) return route_usid(s, p);
    return cfg_.routing == RoutingMode::ddc ? ddc_route_control(s, p) : route_ecmp(s, p);  // ecmp and ev_path
}

std::uint32_t usid_forward(const RoutingDims& dims, const Switch& s, std::span<std::uint8_t> header) noexcept {
    if (header.size() < kOuterDa + 16) return kNone;
    std::uint8_t* h = header.data();
    if (h[kEth + 6] != wire::kNextHeaderIpv6 && h[kEth + 6] != wire::kNextHeaderRouting) return kNone;
    wire::Ipv6Addr da;
    std::copy_n(h + kOuterDa, 16, da.begin());
    wire::UnAction action{};
    if (wire::usid_un_process(da, nullptr, dims.usid_block, s.usid, action) != wire::WireError::ok ||
        action != wire::UnAction::shifted)
        return kNone;
    std::copy_n(da.begin(), 16, h + kOuterDa);
    const std::uint16_t next = wire::load_be16(da.data() + 4);
    if ((next >> 12) != s.plane + 1u) return kNone;
    const auto role = static_cast<routing::UsidRole>((next >> 10) & 0x3);
    const std::uint32_t index = next & 0x3FF;
    switch (s.tier) {
        case Tier::t0:
            if (role == routing::UsidRole::host_port && index < dims.hosts_per_t0) return index;
            if (role == routing::UsidRole::t1 && index < dims.t1) return dims.hosts_per_t0 + index;
            return kNone;
        case Tier::t1:
            if (role == routing::UsidRole::t0 && index < dims.t0) return index;
            return kNone;
        default: return kNone;
    }
}

std::uint32_t Simulator::route_usid(Switch& s, Packet& p) {
    return usid_forward(dims_, s, std::span(p.frame.header.data(), p.frame.header_len));
}

std::uint32_t Simulator::pick_up(const Switch& s, std::uint32_t first, std::uint32_t count,
                                 std::uint32_t ev) const noexcept {
    // Hash (or, routing ev_path, the EV's path digit for this tier), then the
    // next up port: a down next hop leaves the group at once.
    std::uint32_t start = 0;
    if (cfg_.routing == RoutingMode::ev_path) {
        // T0 / edge uplinks take the path's low digit; aggregation uplinks
        // (fat tree) the next one: k/2 × k/2 distinct core paths per pod pair.
        const std::uint32_t path = routing::ev_path(ev);
        start = (s.tier == Tier::agg ? path / count : path) % count;
    } else {
        const std::uint64_t hsh =
            mix((std::uint64_t{ev} << 32) ^ (std::uint64_t{s.first_port} * 0x9E3779B97F4A7C15ull) ^ cfg_.seed);
        start = static_cast<std::uint32_t>(hsh % count);
    }
    for (std::uint32_t k = 0; k < count; ++k) {
        const std::uint32_t local = first + (start + k) % count;
        if (ports_[s.first_port + local].up) return local;
    }
    return first + start;
}

std::uint32_t Simulator::route_ecmp(Switch& s, Packet& p) {
    const std::uint8_t* h = p.frame.header.data();
    const std::size_t ip = h[kEth + 6] == wire::kNextHeaderUdp ? kEth : kEth + kIp;
    const std::size_t udp = ip + kIp;
    if (p.frame.header_len < udp + wire::UdpHdr::kSize) return kNone;
    const std::uint32_t ev = wire::ev_from_wire(wire::load_be16(h + udp), wire::load_be32(h + ip) & 0xFFFFFu);
    // Host addresses carry the host index in their last four bytes (topology.cpp).
    const std::uint32_t dst = wire::load_be32(h + ip + 24 + 12);
    if (dims_.k != 0) {
        const std::uint32_t half = dims_.k / 2;
        const std::uint32_t per_pod = half * half;
        const std::uint32_t pod = dst / per_pod, edge = (dst / half) % half, port = dst % half;
        if (pod >= dims_.k) return kNone;
        switch (s.tier) {
            case Tier::edge:
                if (s.pod == pod && s.index == edge) return port;
                return pick_up(s, half, half, ev);
            case Tier::agg:
                if (s.pod == pod) return edge;
                return pick_up(s, half, half, ev);
            case Tier::core: return pod;
            default: return kNone;
        }
    }
    const std::uint32_t t0 = dst / dims_.hosts_per_t0, port = dst % dims_.hosts_per_t0;
    if (t0 >= dims_.t0) return kNone;
    switch (s.tier) {
        case Tier::t0:
            if (s.index == t0) return port;
            return pick_up(s, dims_.hosts_per_t0, dims_.t1, ev);
        case Tier::t1: return t0;
        default: return kNone;
    }
}

void Simulator::trim(Packet& p, const QueueConfig& q, bool last_hop) noexcept {
    std::uint8_t* h = p.frame.header.data();
    // Keep at least through BTH + METH: what the receiver needs for a NACK.
    const std::size_t ip = h[kEth + 6] == wire::kNextHeaderUdp ? kEth : kEth + kIp;
    const std::size_t minimum = ip + kIp + wire::UdpHdr::kSize + wire::BthHdr::kSize + wire::MethHdr::kSize;
    const std::size_t keep = std::max<std::size_t>(minimum, q.trim_bytes);
    if (keep < p.frame.header_len) p.frame.header_len = static_cast<std::uint16_t>(keep);
    // Payload bytes (a prefix of the segments) are cut too when trim_bytes reaches into them.
    const std::size_t payload_keep = keep > p.frame.header_len ? keep - p.frame.header_len : 0;
    std::uint32_t kept = 0;
    std::uint8_t segs = 0;
    for (std::uint8_t i = 0; i < p.frame.segment_count && kept < payload_keep; ++i) {
        auto& sg = p.frame.segments[i];
        sg.len = static_cast<std::uint32_t>(std::min<std::size_t>(sg.len, payload_keep - kept));
        kept += sg.len;
        segs = static_cast<std::uint8_t>(i + 1);
    }
    p.frame.segment_count = segs;
    p.payload_bytes = kept;
    p.frame.tail_len = 0;
    set_first_dscp(h, last_hop ? wire::kDscpTrimmedLastHop : wire::kDscpTrimmed);
    p.trimmed = true;
    p.priority = true;
}

}  // namespace omrc::sim
