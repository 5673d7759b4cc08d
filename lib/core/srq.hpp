// SPDX-License-Identifier: BSD-3-Clause
// A shared receive queue (IBTA SRQ): receives that the messages of any QP
// attached to it may take. It lives in one engine, and so do its QPs (the
// verbs layer places a QP on its SRQ's worker): taking a receive is then
// one engine's business and needs no lock between cores.
#pragma once

#include <cstdint>

#include "core/ring.hpp"
#include "core/types.hpp"

namespace omrc::core {

/// Receives are taken from the front, in posting order. A QP takes them as
/// its messages need them (Engine::bind_receives): the first packet to
/// arrive of message RQMSN m binds a receive to m and to every message
/// before m that has none yet, so that a QP's receives still follow its
/// message order whatever order their packets arrive in.
struct Srq {
    std::uint32_t srqn = 0;     ///< 1.. (engine-local; 0 means "no SRQ" in QpCaps)
    std::uint32_t pd = 0;       ///< protection domain its receives' lkeys belong to
    std::uint32_t max_wr = 0;   ///< posted receives it holds at most (1..65536)
    /// The limit event's threshold: armed while non-zero, it fires once
    /// (a Completion with opcode srq_limit_reached) when a QP's taking
    /// leaves fewer than this many receives, and disarms (IBTA).
    std::uint32_t limit = 0;
    Ring<RecvRequest> wrs;      ///< posted, not yet taken
    std::uint32_t qps = 0;      ///< QPs attached (an SRQ with QPs cannot be destroyed)
    /// A message of one of its QPs is wholly placed and waits for a receive
    /// (Engine::deliver_imms found the SRQ empty): the next post looks for it.
    bool imm_waiting = false;
    std::uint64_t posted = 0;   ///< receives ever posted
    std::uint64_t taken = 0;    ///< receives ever bound to a QP's message
    std::uint64_t limit_events = 0;  ///< limit events raised
    std::uint64_t rnr_naks = 0;      ///< SEND packets refused because it held too few receives
};

}  // namespace omrc::core
