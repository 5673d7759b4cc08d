// SPDX-License-Identifier: BSD-3-Clause
#include "address.hpp"

#include <fmt/format.h>

#include <cstring>

namespace omrc::ibv {

namespace {

// The udp driver's per-plane MAC: 02:55:<block base port, big endian>:00:<plane>
// (drivers/udp/codec.cpp, plane_mac; blocks of 16 ports).
constexpr std::uint32_t kUdpPortsPerPlane = 16;

bool udp_base(const MacAddr& m, std::uint32_t& base) {
    if (m[0] != 0x02 || m[1] != 0x55) return false;
    base = static_cast<std::uint32_t>(m[2] << 8 | m[3]);
    return base != 0 && base % kUdpPortsPerPlane == 0;
}

MacAddr udp_mac(std::uint32_t base, std::uint32_t plane) {
    return {0x02, 0x55, static_cast<std::uint8_t>(base >> 8), static_cast<std::uint8_t>(base), 0,
            static_cast<std::uint8_t>(plane)};
}

}  // namespace

LocalAddress encode_lid(const std::string& driver, FrameMode mode, const DeviceAddress& a) {
    LocalAddress out;
    if (mode == FrameMode::srv6) {
        if (a.host > 0xFFFF) {
            out.warning = fmt::format("host index {} does not fit a 16-bit LID: peers cannot reach it", a.host);
            return out;
        }
        out.lid = static_cast<std::uint16_t>(a.host);
        return out;
    }
    if (driver == "udp") {
        std::uint32_t base0 = 0;
        if (a.planes == 0 || !udp_base(a.macs[0], base0)) {
            out.warning = "udp device without a port block on plane 0";
            return out;
        }
        for (std::uint32_t p = 1; p < a.planes; ++p) {
            std::uint32_t base = 0;
            if (!udp_base(a.macs[p], base) || base != base0 + p * kUdpPortsPerPlane) {
                out.warning = fmt::format(
                    "udp port blocks are not consecutive (plane 0 at {}, plane {} at {}): peers learn only "
                    "plane 0's block from the LID; give one local=[addr]:port entry for all planes",
                    base0, p, base);
                return out;
            }
        }
        out.lid = static_cast<std::uint16_t>(base0 / kUdpPortsPerPlane);
        return out;
    }
    if (driver != "loopback")
        out.warning = fmt::format(
            "driver {} in plain frame mode: the peer's port MACs cannot travel in GID and LID; set "
            "next_hop_macs in [device.args] (the peer's MACs on a point-to-point link, the router's otherwise)",
            driver);
    return out;
}

DeviceAddress decode_peer(const std::string& driver, FrameMode mode, const DeviceAddress& local,
                          const std::uint8_t (&gid)[16], std::uint16_t lid) {
    DeviceAddress peer;
    std::memcpy(peer.addr.data(), gid, 16);
    peer.planes = local.planes;
    if (mode == FrameMode::srv6) {
        peer.host = lid;
        return peer;
    }
    if (driver == "udp") {
        const std::uint32_t base0 = std::uint32_t{lid} * kUdpPortsPerPlane;
        for (std::uint32_t p = 0; p < local.planes && p < kMaxPlanes; ++p)
            peer.macs[p] = udp_mac(base0 + p * kUdpPortsPerPlane, p);
        return peer;
    }
    if (driver == "loopback") peer.macs = local.macs;
    return peer;
}

}  // namespace omrc::ibv
