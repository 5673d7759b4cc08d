// SPDX-License-Identifier: BSD-3-Clause
// A multi-plane two-tier Clos and the algorithmic EV → SRv6 destination
// address mapping. Every plane is a copy of the same Clos; NIC port p of a
// host attaches to plane p at the same T0 index and T0 port in every plane.
//
// uSID numbering (OpenMRC's, docs/PROTOCOL.md §7.4; EV layout §6):
//   usid[15:12] = plane + 1   (1..15; never 0, so a uSID is never the end marker)
//   usid[11:10] = role        (0 = host attachment port on a T0, 1 = T0 switch, 2 = T1 switch)
//   usid[9:0]   = index       (T0/T1 index within the plane, or the T0 port of a host)
// EV layout for SRv6 fabrics:
//   EV[31:28] = plane + 1,  EV[27:16] = path (T1 choice, modulo T1 count),  EV[15:0] = salt
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "wire/error.hpp"
#include "wire/ipv6.hpp"

namespace omrc::routing {

inline constexpr std::uint32_t kMaxPlanes = 15;
inline constexpr std::uint32_t kMaxUsidIndex = 1024;

enum class UsidRole : std::uint8_t { host_port = 0, t0 = 1, t1 = 2 };

[[nodiscard]] constexpr std::uint16_t make_usid(std::uint32_t plane, UsidRole role, std::uint32_t index) noexcept {
    return static_cast<std::uint16_t>(((plane + 1) << 12) | (static_cast<std::uint32_t>(role) << 10) |
                                      (index & 0x3FF));
}

/// The path space of a plane: EV[27:16], 4096 paths (a path names a T1
/// modulo the plane's T1 count, or is one hashed way through a fabric).
inline constexpr std::uint32_t kEvPathBits = 12;
inline constexpr std::uint32_t kEvPaths = 1u << kEvPathBits;
inline constexpr std::uint32_t kEvPathMask = kEvPaths - 1;

/// EV helpers for the layout above.
[[nodiscard]] constexpr std::uint32_t make_ev(std::uint32_t plane, std::uint32_t path, std::uint16_t salt) noexcept {
    return ((plane + 1) << 28) | ((path & kEvPathMask) << 16) | salt;
}
[[nodiscard]] constexpr std::uint32_t ev_plane(std::uint32_t ev) noexcept { return (ev >> 28) - 1; }
[[nodiscard]] constexpr std::uint32_t ev_path(std::uint32_t ev) noexcept { return (ev >> 16) & kEvPathMask; }
[[nodiscard]] constexpr bool ev_valid(std::uint32_t ev, std::uint32_t planes) noexcept {
    return (ev >> 28) != 0 && (ev >> 28) <= planes;
}

/// The fabric description. Defaults are MRC's headline fabric: 8 planes of
/// 512 T0 (256 hosts down, 256 up) and 256 T1 → 131,072 hosts.
struct FabricDesc {
    std::uint32_t usid_block = 0xFCBB0000;  ///< 32-bit locator block
    std::uint32_t planes = 8;               ///< NIC ports per host = planes
    std::uint32_t t0_per_plane = 512;
    std::uint32_t t1_per_plane = 256;       ///< each T0 has one uplink to every T1 of its plane
    std::uint32_t hosts_per_t0 = 256;

    [[nodiscard]] std::uint32_t hosts() const noexcept { return t0_per_plane * hosts_per_t0; }
    /// Empty when valid; otherwise what is wrong.
    [[nodiscard]] std::string validate() const;
    [[nodiscard]] std::uint32_t t0_of(std::uint32_t host) const noexcept { return host / hosts_per_t0; }
    [[nodiscard]] std::uint32_t port_of(std::uint32_t host) const noexcept { return host % hosts_per_t0; }
};

/// Per-peer template: the path's uSIDs with plane and T1 index left zero.
/// apply() fills them from an EV with a handful of ORs — no per-path storage.
class UsidTemplate {
public:
    static constexpr std::size_t kMaxHops = 4;

    /// Builds the template from src_host to dst_host. Returns bad_field when
    /// the description is invalid or a host is out of range.
    static wire::WireError make(const FabricDesc& fabric, std::uint32_t src_host, std::uint32_t dst_host,
                                UsidTemplate& out) noexcept;

    /// Destination address for a packet on `ev`. Does not check the EV: the
    /// path selector only hands out EVs whose plane exists.
    [[nodiscard]] wire::Ipv6Addr apply(std::uint32_t ev) const noexcept;

    [[nodiscard]] std::uint8_t hops() const noexcept { return hops_; }
    [[nodiscard]] bool crosses_t1() const noexcept { return crosses_t1_; }

private:
    wire::Ipv6Addr base_{};       ///< block + uSIDs with plane nibble = 0 and T1 index = 0
    std::uint8_t hops_ = 0;       ///< uSIDs in the container (2 or 4)
    bool crosses_t1_ = false;     ///< uSID 1 is the T1 hop
    std::uint32_t t1_count_ = 1;  ///< T1 index = EV path modulo this
};

/// The NIC's own outer address on `plane`: block + its host-port uSID. A
/// frame whose outer DA equals this has reached its NIC and is decapsulated.
[[nodiscard]] wire::Ipv6Addr nic_usid_address(const FabricDesc& fabric, std::uint32_t host,
                                              std::uint32_t plane) noexcept;

}  // namespace omrc::routing
