// SPDX-License-Identifier: BSD-3-Clause
#include "routing/fabric.hpp"

#include <fmt/format.h>

#include "wire/bytes.hpp"

namespace omrc::routing {

std::string FabricDesc::validate() const {
    if (planes == 0 || planes > kMaxPlanes) return fmt::format("planes must be 1..{}, got {}", kMaxPlanes, planes);
    if (t0_per_plane == 0 || t0_per_plane > kMaxUsidIndex)
        return fmt::format("t0_per_plane must be 1..{}, got {}", kMaxUsidIndex, t0_per_plane);
    if (t1_per_plane == 0 || t1_per_plane > kMaxUsidIndex)
        return fmt::format("t1_per_plane must be 1..{}, got {}", kMaxUsidIndex, t1_per_plane);
    if (hosts_per_t0 == 0 || hosts_per_t0 > kMaxUsidIndex)
        return fmt::format("hosts_per_t0 must be 1..{}, got {}", kMaxUsidIndex, hosts_per_t0);
    if ((usid_block & 0xFFFF0000u) == 0) return "usid_block must have a nonzero top 16 bits";
    return {};
}

wire::WireError UsidTemplate::make(const FabricDesc& fabric, std::uint32_t src_host, std::uint32_t dst_host,
                                   UsidTemplate& out) noexcept {
    if (!fabric.validate().empty()) return wire::WireError::bad_field;
    if (src_host >= fabric.hosts() || dst_host >= fabric.hosts()) return wire::WireError::bad_field;
    out = UsidTemplate{};
    const std::uint32_t src_t0 = fabric.t0_of(src_host);
    const std::uint32_t dst_t0 = fabric.t0_of(dst_host);
    // Plane nibble left 0 (make_usid adds 1, so subtract it back out).
    auto base_usid = [](UsidRole role, std::uint32_t index) {
        return static_cast<std::uint16_t>(make_usid(0, role, index) & 0x0FFF);
    };
    std::array<std::uint16_t, kMaxHops> u{};
    if (src_t0 == dst_t0) {
        u[0] = base_usid(UsidRole::t0, src_t0);
        u[1] = base_usid(UsidRole::host_port, fabric.port_of(dst_host));
        out.hops_ = 2;
    } else {
        u[0] = base_usid(UsidRole::t0, src_t0);
        u[1] = base_usid(UsidRole::t1, 0);
        u[2] = base_usid(UsidRole::t0, dst_t0);
        u[3] = base_usid(UsidRole::host_port, fabric.port_of(dst_host));
        out.hops_ = 4;
        out.crosses_t1_ = true;
    }
    out.t1_count_ = fabric.t1_per_plane;
    wire::store_be32(out.base_.data(), fabric.usid_block);
    for (std::size_t i = 0; i < out.hops_; ++i) wire::store_be16(out.base_.data() + 4 + 2 * i, u[i]);
    return wire::WireError::ok;
}

wire::Ipv6Addr UsidTemplate::apply(std::uint32_t ev) const noexcept {
    wire::Ipv6Addr da = base_;
    const std::uint8_t plane_nibble = static_cast<std::uint8_t>((ev >> 28) << 4);  // plane + 1, as in uSIDs
    for (std::size_t i = 0; i < hops_; ++i) da[4 + 2 * i] |= plane_nibble;
    if (crosses_t1_) {
        const std::uint32_t t1 = ev_path(ev) % t1_count_;
        da[6] |= static_cast<std::uint8_t>(t1 >> 8);
        da[7] |= static_cast<std::uint8_t>(t1);
    }
    return da;
}

wire::Ipv6Addr nic_usid_address(const FabricDesc& fabric, std::uint32_t host, std::uint32_t plane) noexcept {
    wire::Ipv6Addr a{};
    wire::store_be32(a.data(), fabric.usid_block);
    wire::store_be16(a.data() + 4, make_usid(plane, UsidRole::host_port, fabric.port_of(host)));
    return a;
}

}  // namespace omrc::routing
