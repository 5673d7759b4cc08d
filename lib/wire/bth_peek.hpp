// SPDX-License-Identifier: BSD-3-Clause
// Where a received frame goes inside a device before it is parsed: the few
// BTH fields that name its engine (a device with several workers runs one
// engine per worker, docs/ARCHITECTURE.md "Workers"). peek_bth() walks the
// headers as parse_frame_view() does (Ethernet, IPv6, an SRH and the inner
// IPv6 in srv6 mode, UDP; a sealed frame's PSP and inner UDP headers) with bounds checks only: it validates nothing
// else, reads nothing past the frame, and a frame it cannot walk is left to
// the receiving engine's parser, which counts why.
#pragma once

#include <cstdint>
#include <span>

namespace omrc::wire {

struct BthPeek {
    std::uint8_t opcode = 0;    ///< BTH byte 0, as on the wire (not checked against the opcode table)
    std::uint32_t dest_qp = 0;  ///< 24 bits
    std::uint32_t psn = 0;      ///< 24 bits (endpoint messages: the request id in bits 15..0)
    std::uint16_t ip_offset = 0;  ///< the IPv6 header before UDP (the inner one in srv6 mode): its source at +8
};

/// The BTH fields of `head` (a whole frame, or the headers of a header-split
/// one). False when the headers do not reach a whole BTH (not IPv6, an
/// unknown next header, a truncated header); `out` is then unchanged.
[[nodiscard]] bool peek_bth(std::span<const std::uint8_t> head, BthPeek& out) noexcept;

}  // namespace omrc::wire
