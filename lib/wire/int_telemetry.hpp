// SPDX-License-Identifier: BSD-3-Clause
// In-band network telemetry (INT) as HPCC uses it: each switch egress a data
// packet leaves through appends one record. An OpenMRC extension, not part
// of MRC and not in the wire bytes: the simulator carries the records beside
// a packet, the receiving engine echoes the latest data packet's records
// beside the SACK it sends, and the sender's CC reads them
// (docs/PROTOCOL.md "INT telemetry (OpenMRC extension)").
#pragma once

#include <array>
#include <cstdint>

namespace omrc::wire {

inline constexpr std::size_t kMaxIntHops = 5;  ///< fat-tree paths cross 5 switch egresses; Clos paths 3

struct IntHop {
    std::uint32_t port_id = 0;     ///< the stamping egress port (any id unique in the fabric)
    std::uint32_t qlen_bytes = 0;  ///< bytes queued at that egress as the packet left it
    std::uint64_t tx_bytes = 0;    ///< bytes that egress had sent, counted since it came up (monotonic)
    std::uint64_t ts_ns = 0;       ///< when it stamped (the fabric's clock)
    std::uint64_t rate_bps = 0;    ///< its line rate
};

struct IntStack {
    std::uint8_t hops = 0;         ///< records in use, in path order; hops beyond kMaxIntHops are not recorded
    std::array<IntHop, kMaxIntHops> hop{};
};

}  // namespace omrc::wire
