// SPDX-License-Identifier: BSD-3-Clause
// Receiver-credit fields (an OpenMRC extension, not MRC; docs/PROTOCOL.md
// §11.8): what a credit-mode sender tells its receiver on every data packet
// (its cumulative request) and what the receiver grants back on its SACKs
// (its cumulative grant). Nothing of it is in the frame bytes: like INT
// (§11.7) it travels beside the frame, and only drivers/sim carries it.
#pragma once

#include <cstdint>

namespace omrc::wire {

enum class CreditKind : std::uint8_t {
    none,   ///< no credit fields (every frame of the other algorithms)
    data,   ///< on a data packet: request_bytes and unscheduled_bytes
    grant,  ///< on a SACK: grant_bytes
};

struct CreditExt {
    CreditKind kind = CreditKind::none;
    /// data: the bytes of this packet's payload sent without credit (its
    /// unscheduled first burst); the receiver charges them to its pacing
    /// budget when the packet arrives untrimmed. ≤ the payload length.
    std::uint32_t unscheduled_bytes = 0;
    /// data: the sender's cumulative request — every byte it has queued
    /// for sending (new or retransmitted) less its unscheduled allowance.
    /// Monotone: a receiver keeps the largest it has seen (packets reorder).
    std::uint64_t request_bytes = 0;
    /// data: the credit the sender had used when the packet left, this
    /// packet included (cumulative bytes sent against grants). Monotone.
    std::uint64_t used_bytes = 0;
    /// grant: the receiver's cumulative grant to this QP, ≤ the largest
    /// request it has seen. Monotone: a sender keeps the largest.
    std::uint64_t grant_bytes = 0;
};

}  // namespace omrc::wire
