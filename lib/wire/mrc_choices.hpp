// SPDX-License-Identifier: BSD-3-Clause
// The wire values where the public reimplementations of the OCP MRC 1.0
// format disagree or only guess (docs/PROTOCOL.md §10 lists each with its
// sources and confidence). Every codec and the engine take them from here,
// so each choice can be flipped in one place once the specification text
// settles it.
#pragma once

#include <cstdint>

namespace omrc::wire::mrc {

/// ERTH op codes (byte 1 bits 1..0). One reimplementation numbers
/// PORT_STATUS_UPDATE 0 and EV_PROBE 1; the OCP API enum is the reverse,
/// but an API enum need not be the wire code. Confidence: low.
inline constexpr std::uint8_t kErthOpPortStatusUpdate = 0;
inline constexpr std::uint8_t kErthOpEvProbe = 1;
/// OpenMRC's own (not MRC): PATH_ALARM, a (plane, T1) the sender found
/// failed, named in ERTH bytes 8..11 (docs/PROTOCOL.md §11.5).
inline constexpr std::uint8_t kErthOpPathAlarm = 2;

/// EETH (endpoint response): where the 2-bit op sits in byte 1. The two
/// reimplementations disagree (bits 5..4 or bits 3..2); the one whose op
/// values are used above puts it at bits 5..4. Confidence: low.
inline constexpr unsigned kEethOpShift = 4;

/// ERTH.port_status_mask numbering. The OCP API calls the port mask
/// 1-based ("bit N set => port N"): plane p (0-based) is bit p + 1 and bit
/// 0 is unused. Confidence: low.
inline constexpr bool kPortMaskOneBased = true;
[[nodiscard]] constexpr std::uint32_t port_mask_bit(std::uint32_t plane) noexcept {
    return 1u << (plane + (kPortMaskOneBased ? 1 : 0));
}
/// Planes (bit p = plane p) from a wire port mask.
[[nodiscard]] constexpr std::uint32_t planes_from_port_mask(std::uint32_t mask) noexcept {
    return kPortMaskOneBased ? mask >> 1 : mask;
}
/// The wire port mask of planes (bit p = plane p); planes ≤ 31.
[[nodiscard]] constexpr std::uint32_t port_mask_from_planes(std::uint32_t planes) noexcept {
    return kPortMaskOneBased ? planes << 1 : planes;
}

/// SETH cc_type of NSCC. UET numbers NSCC 0 and credit-based CC 1, and the
/// MRC reimplementations send 0 in SACKs. Confidence: low-medium.
inline constexpr std::uint8_t kSethCcTypeNscc = 0;
/// SETH cc_type of OpenMRC's receiver-credit mode (CcAlgorithm::credit):
/// UET's number for credit-based CC. Sent, ignored on receive.
inline constexpr std::uint8_t kSethCcTypeCredit = 1;

/// NETH cc_type: every reimplementation sends 2; its meaning is not known.
/// Sent as they send it, ignored on receive. Confidence: medium (value), none (meaning).
inline constexpr std::uint8_t kNethCcType = 2;

/// TSETH / PETH / ERTH format type of a valid transmit timestamp: every
/// source sends 1; 0 is taken as "no timestamp". Confidence: medium.
inline constexpr std::uint8_t kFtypeTransmitTimestamp = 1;

// Not carried: the port-state bitmap the MRC paper says SACKs carry has no
// known location (SETH byte 12 is the only reserved room). OpenMRC neither
// writes nor reads one there, since a peer that leaves the byte 0 would take
// every plane down; port status travels in ERTH updates only.

}  // namespace omrc::wire::mrc
