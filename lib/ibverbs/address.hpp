// SPDX-License-Identifier: BSD-3-Clause
// What an ibverbs program exchanges with its peer — GID, LID, QPN, PSN — has
// to carry an OpenMRC DeviceAddress. The GID is the device's IPv6 address
// (DeviceAddress::addr); the LID carries the rest, by frame mode and driver:
//
//   srv6 (any driver)  LID = the host index in the fabric (< 65536); the
//                      next hops come from the local device's next_hop_macs
//   udp, plain         LID = the base UDP port of plane 0 / 16; planes use
//                      consecutive 16-port blocks, so the peer rebuilds the
//                      per-plane MACs that carry the blocks (docs/DRIVERS.md)
//   loopback           LID = 0; a device without a shared fabric reaches only
//                      itself, so the peer's MACs are its own
//   dpdk, plain        LID = 0; the peer's port MACs cannot travel in a LID:
//                      the local device's next_hop_macs name them
//
// docs/IBVERBS.md explains the rules and their limits.
#pragma once

#include <cstdint>
#include <string>

#include "omrc/verbs.hpp"

namespace omrc::ibv {

struct LocalAddress {
    std::uint16_t lid = 0;
    /// Empty, or why peers cannot learn this device's address from GID and
    /// LID (logged once at open; the device still opens).
    std::string warning;
};

/// The LID to report for a device of `driver` whose address is `a`.
LocalAddress encode_lid(const std::string& driver, FrameMode mode, const DeviceAddress& a);

/// The peer's DeviceAddress from its GID and LID, as seen by a local device
/// of `driver` in `mode` whose own address is `local`.
DeviceAddress decode_peer(const std::string& driver, FrameMode mode, const DeviceAddress& local,
                          const std::uint8_t (&gid)[16], std::uint16_t lid);

}  // namespace omrc::ibv
