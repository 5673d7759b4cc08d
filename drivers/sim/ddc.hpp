// SPDX-License-Identifier: BSD-3-Clause
// routing = ddc: the state of a distributed disaggregated chassis (H3C's DDC,
// built from its public description). Each plane's T0s and T1s act as one
// switch: a data frame from a host waits at its T0 in the VOQ of its
// destination host port; the egress T0's scheduler of that port grants
// credits at the port's line rate, round robin over the VOQs asking for it;
// a credited packet is cut into cells sprayed round robin over the T1s that
// can reach the egress T0; the egress T0 reassembles it and releases the
// packets of each VOQ to the host port in the order the VOQ sent them. The
// NIC sees one in-order path. Logic in ddc.cpp; the Simulator owns this.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "drivers/sim/network.hpp"
#include "drivers/sim/packet.hpp"

namespace omrc::sim {

/// One VOQ: at ingress T0 `ingress_sw`, for host port `egress_local` of
/// egress T0 `egress_sw` (the same plane). It also holds the egress side's
/// view of its stream: the packets sent, in order, not yet released.
struct DdcVoq {
    PacketFifo q;                       ///< packets waiting for credit (their frame bytes in q.bytes)
    std::int64_t balance = 0;           ///< credit wire bytes in hand; ≥ −(one packet), ≤ credit_bytes while idle
    std::uint32_t ingress_sw = 0;
    std::uint32_t egress_sw = 0;
    std::uint32_t egress_t0 = 0;        ///< the egress T0's index in its plane
    std::uint32_t egress_local = 0;     ///< host port on the egress T0
    std::uint32_t sched = 0;            ///< its egress port scheduler (DdcState::ports)
    std::uint32_t head = kNone;         ///< oldest record not yet released (egress side), or kNone
    std::uint32_t tail = kNone;         ///< newest record
    std::uint64_t held_bytes = 0;       ///< frame bytes of its records waiting at the egress T0
    bool local = false;                 ///< ingress T0 = egress T0: no cells, no control delay
    bool requested = false;             ///< ingress side: it has asked for credit and not released it
    bool in_ring = false;               ///< scheduler side: in the port's round robin
};

/// One egress host port's credit scheduler.
struct DdcPort {
    std::vector<std::uint32_t> ring;    ///< VOQs asking for credit, served round robin
    std::uint32_t next = 0;             ///< position in ring of the next grant
    TimePs interval_ps = 0;             ///< credit_bytes at the port's line rate
    TimePs next_tick_ps = 0;            ///< no grant before this (the port's rate)
    bool ticking = false;               ///< a ddc_tick event is pending
};

/// A packet in the fabric as cells, from its VOQ to its release.
struct DdcRecord {
    Packet* pkt = nullptr;              ///< the whole packet (null once lost)
    std::uint32_t voq = 0;
    std::uint32_t next = kNone;         ///< next record of its VOQ's stream, or the free list
    std::uint16_t cells_out = 0;        ///< cells neither arrived nor lost
    bool lost = false;                  ///< a cell was lost: the packet is dropped
    bool skippable = false;             ///< lost and its reassembly timer has fired
    bool released = false;              ///< left its stream (delivered or skipped)
};

struct DdcState {
    DdcConfig cfg;
    TimePs ctrl_ps = 0;                 ///< one-way control delay between T0s in use
    std::unordered_map<std::uint64_t, std::uint32_t> voq_index;  ///< (ingress switch << 32 | destination host) → voqs
    std::vector<DdcVoq> voqs;
    std::vector<DdcPort> ports;         ///< plane · hosts + host
    std::vector<DdcRecord> records;
    std::uint32_t free_record = kNone;
    std::vector<std::uint32_t> spray;   ///< (plane · t0 + ingress) · t0 + egress → next T1 to try
    std::vector<std::uint64_t> held;    ///< per switch: bytes waiting at it for in-order release
    DdcStats stats;

    std::uint32_t new_record() {
        if (free_record != kNone) {
            const std::uint32_t r = free_record;
            free_record = records[r].next;
            records[r] = DdcRecord{};
            return r;
        }
        records.emplace_back();
        return static_cast<std::uint32_t>(records.size() - 1);
    }
    void free(std::uint32_t r) noexcept {
        records[r].pkt = nullptr;
        records[r].next = free_record;
        free_record = r;
    }
};

}  // namespace omrc::sim
