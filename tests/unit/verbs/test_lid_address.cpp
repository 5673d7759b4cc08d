// SPDX-License-Identifier: BSD-3-Clause
// omrc::lid_address / peer_from_lid: a DeviceAddress through what ibverbs
// programs exchange (GID and LID) and back, per frame mode and driver (the
// codec each driver registers; lib/ibverbs names none).
#include <catch2/catch.hpp>

#include <cstring>

#include "omrc/verbs.hpp"

using omrc::DeviceAddress;
using omrc::FrameMode;
using omrc::MacAddr;

namespace {

MacAddr udp_mac(std::uint32_t base, std::uint32_t plane) {
    return {0x02, 0x55, static_cast<std::uint8_t>(base >> 8), static_cast<std::uint8_t>(base), 0,
            static_cast<std::uint8_t>(plane)};
}

DeviceAddress udp_device(std::uint32_t base0, std::uint32_t planes, std::uint32_t stride = 16) {
    DeviceAddress a;
    a.addr[15] = 1;  // ::1
    a.planes = planes;
    for (std::uint32_t p = 0; p < planes; ++p) a.macs[p] = udp_mac(base0 + p * stride, p);
    return a;
}

const omrc::Ipv6Addr& gid_of(const DeviceAddress& a) { return a.addr; }

}  // namespace

TEST_CASE("udp, plain: the LID carries plane 0's port block; the peer's MACs come back exactly",
          "[lid_address]") {
    DeviceAddress server = udp_device(14800, 4);
    const auto lid = omrc::lid_address("udp", FrameMode::plain, server);
    CHECK(lid.warning.empty());
    CHECK(lid.lid == 14800 / 16);
    const DeviceAddress client = udp_device(15808, 4);
    const DeviceAddress peer = omrc::peer_from_lid("udp", FrameMode::plain, client, gid_of(server), lid.lid);
    CHECK(peer.addr == server.addr);
    CHECK(peer.planes == 4);
    for (std::uint32_t p = 0; p < 4; ++p) CHECK(peer.macs[p] == server.macs[p]);
}

TEST_CASE("udp, plain: blocks that are not consecutive cannot travel in a LID, and say so", "[lid_address]") {
    const auto lid = omrc::lid_address("udp", FrameMode::plain, udp_device(14800, 3, 32));
    CHECK_FALSE(lid.warning.empty());
    CHECK(lid.warning.find("not consecutive") != std::string::npos);
    DeviceAddress none;
    none.planes = 1;
    CHECK_FALSE(omrc::lid_address("udp", FrameMode::plain, none).warning.empty());
}

TEST_CASE("srv6: the LID is the host index, for any driver", "[lid_address]") {
    DeviceAddress a;
    a.addr = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
    a.planes = 2;
    a.host = 4321;
    for (const char* driver : {"udp", "dpdk"}) {
        const auto lid = omrc::lid_address(driver, FrameMode::srv6, a);
        CHECK(lid.warning.empty());
        CHECK(lid.lid == 4321);
        DeviceAddress local;
        local.planes = 2;
        const DeviceAddress peer = omrc::peer_from_lid(driver, FrameMode::srv6, local, gid_of(a), lid.lid);
        CHECK(peer.host == 4321);
        CHECK(peer.addr == a.addr);
    }
    a.host = 70000;
    CHECK_FALSE(omrc::lid_address("udp", FrameMode::srv6, a).warning.empty());
}

TEST_CASE("loopback reaches itself; dpdk in plain mode needs next_hop_macs", "[lid_address]") {
    DeviceAddress a;
    a.planes = 2;
    a.macs[0] = {2, 0, 0, 0, 0, 1};
    a.macs[1] = {2, 0, 0, 0, 1, 1};
    CHECK(omrc::lid_address("loopback", FrameMode::plain, a).warning.empty());
    const DeviceAddress peer = omrc::peer_from_lid("loopback", FrameMode::plain, a, gid_of(a), 0);
    CHECK(peer.macs[0] == a.macs[0]);
    CHECK(peer.macs[1] == a.macs[1]);
    const auto dpdk = omrc::lid_address("dpdk", FrameMode::plain, a);
    CHECK(dpdk.lid == 0);
    CHECK(dpdk.warning.find("next_hop_macs") != std::string::npos);
}
