// SPDX-License-Identifier: BSD-3-Clause
// Whole-frame codec: builds and parses OpenMRC frames in both modes.
//
//   plain: Ethernet | IPv6 (NH=17)                          | UDP | BTH | ext | payload | pad | ICRC
//   srv6:  Ethernet | outer IPv6 (NH=41|43) | [SRH] | inner IPv6 (NH=17) | UDP | BTH | ext | ... | ICRC
//
// Extension headers by opcode (docs/PROTOCOL.md §3):
//   WRITE_*          METH [TSETH if BTH.TS] [CRTH if BTH.CR] RETH [ImmDt if *_WITH_IMM]
//   ACK              AETH
//   SACK             SETH CC-state [CGTH if SETH.cc_type is credit]
//   NACK             NETH
//   PROBE            PETH
//   EP_REQ/EP_RESP   ERTH
#pragma once

#include <cstdint>
#include <span>

#include "wire/bth.hpp"
#include "wire/cm_msg.hpp"
#include "wire/credit_ext.hpp"
#include "wire/endpoint_ext.hpp"
#include "wire/error.hpp"
#include "wire/ethernet.hpp"
#include "wire/icrc.hpp"
#include "wire/ipv6.hpp"
#include "wire/reliability_ext.hpp"
#include "wire/srh.hpp"
#include "wire/transport_ext.hpp"
#include "wire/udp.hpp"

namespace omrc::wire {

enum class FrameMode : std::uint8_t { plain = 0, srv6 = 1 };

/// DSCP values (6 bits). OpenMRC's defaults, configurable per fabric.
inline constexpr std::uint8_t kDscpData = 26;              ///< AF31: data packets (trimmable)
inline constexpr std::uint8_t kDscpControl = 48;           ///< CS6: SACK/NACK/ACK/probe/endpoint
inline constexpr std::uint8_t kDscpTrimmed = 40;           ///< set by a switch that trimmed in the fabric
inline constexpr std::uint8_t kDscpTrimmedLastHop = 41;    ///< set by a last-hop switch that trimmed

/// Byte offset where BTH ends: the minimum a trimmed frame must keep.
[[nodiscard]] constexpr std::size_t min_trim_size(FrameMode mode, std::size_t srh_bytes = 0) noexcept {
    return EthHdr::kSize + Ipv6Hdr::kSize * (mode == FrameMode::srv6 ? 2 : 1) + srh_bytes + UdpHdr::kSize +
           BthHdr::kSize;
}

/// Bytes of extension headers after BTH for this opcode and TS flag;
/// `credit`: the OpenMRC credit header is present (data: BTH.CR, a CRTH;
/// SACK: SETH cc_type credit, a CGTH; docs/PROTOCOL.md §11.8).
[[nodiscard]] std::size_t ext_header_size(Opcode op, bool ts, bool credit = false) noexcept;

/// Everything needed to build one frame. Lengths, pad count, EV packing and
/// the ICRC are filled in by build_frame(); the caller sets addresses, EV,
/// BTH and the extension headers its opcode carries (others are ignored).
struct FrameSpec {
    FrameMode mode = FrameMode::plain;
    EthHdr eth{};
    Ipv6Hdr outer{};        ///< srv6 only: src, dst = uSID container, traffic class, hop limit
    bool has_srh = false;   ///< srv6 only
    SrhHdr srh{};
    Ipv6Hdr ip{};           ///< the IPv6 header before UDP (inner in srv6 mode)
    std::uint32_t ev = 0;   ///< packed into UDP source port and ip.flow_label
    BthHdr bth{};
    MethHdr meth{};
    TsethHdr tseth{};
    CrthHdr crth{};         ///< data with bth.cr only
    RethHdr reth{};
    ImmDtHdr imm{};
    AethHdr aeth{};
    SethHdr seth{};
    CcStateHdr cc{};
    CgthHdr cgth{};         ///< SACK with seth.cc_type credit only
    NethHdr neth{};
    PethHdr peth{};
    ErthHdr erth{};
    EethHdr eeth{};
    DethHdr deth{};         ///< CM messages (opcode cm) only
};

/// Bytes from the start of the frame to the end of the extension headers.
[[nodiscard]] std::size_t header_size(const FrameSpec& spec) noexcept;

/// Writes the headers (not payload, pad or ICRC) for a payload of
/// `payload_len` bytes; sets lengths, pad count and EV fields. `hdr_len`
/// returns header_size(spec). Used by zero-copy senders that keep payload in
/// registered memory; finish with frame_icrc().
WireError build_headers(std::span<std::uint8_t> out, const FrameSpec& spec, std::size_t payload_len,
                        std::size_t& hdr_len) noexcept;

/// ICRC for headers written by build_headers() and the payload+pad bytes.
[[nodiscard]] std::uint32_t frame_icrc(std::span<const std::uint8_t> headers, FrameMode mode,
                                       std::span<const std::uint8_t> payload_and_pad) noexcept;

/// Builds a complete frame: headers, payload, zero pad to 4 bytes, ICRC.
WireError build_frame(std::span<std::uint8_t> out, const FrameSpec& spec,
                      std::span<const std::uint8_t> payload, std::size_t& frame_len) noexcept;

/// How a trimmed frame was recognised.
enum class TrimKind : std::uint8_t {
    none = 0,
    dscp,           ///< DSCP rewritten to the trimmed value in the fabric
    dscp_last_hop,  ///< DSCP rewritten to the last-hop trimmed value
    short_length,   ///< frame shorter than its IPv6/UDP lengths claim, BTH intact
};

struct ParseOptions {
    bool verify_icrc = true;
    std::uint8_t dscp_trimmed = kDscpTrimmed;
    std::uint8_t dscp_trimmed_last_hop = kDscpTrimmedLastHop;
};

/// A parsed frame. Spans point into the caller's frame buffer. Only the
/// extension headers of the frame's opcode are meaningful. For a trimmed
/// frame (trim != none) only the headers up to BTH are valid, plus METH
/// when `has_meth`; payload is empty and the ICRC was not checked.
struct ParsedFrame {
    FrameMode mode = FrameMode::plain;
    EthHdr eth{};
    Ipv6Hdr outer{};          ///< srv6 only
    bool has_srh = false;
    SrhHdr srh{};
    Ipv6Hdr ip{};             ///< the IPv6 header before UDP
    UdpHdr udp{};
    BthHdr bth{};
    bool has_meth = false;    ///< METH decoded (always for untrimmed data; if it survived a trim)
    bool has_tseth = false;   ///< TSETH decoded (BTH.TS set and, for a trim, it survived)
    bool has_crth = false;    ///< CRTH decoded (BTH.CR set and, for a trim, it survived)
    bool has_cgth = false;    ///< CGTH decoded (a SACK with SETH cc_type credit)
    MethHdr meth{};
    TsethHdr tseth{};
    CrthHdr crth{};
    RethHdr reth{};
    ImmDtHdr imm{};
    AethHdr aeth{};
    SethHdr seth{};
    CcStateHdr cc{};
    CgthHdr cgth{};
    NethHdr neth{};
    PethHdr peth{};
    ErthHdr erth{};
    EethHdr eeth{};
    DethHdr deth{};         ///< CM messages (opcode cm) only
    std::uint32_t ev = 0;
    TrimKind trim = TrimKind::none;
    std::uint8_t ecn = 0;     ///< ECN of the header the fabric marks (outer in srv6 mode)
    std::uint16_t ip_offset = 0;   ///< offset of the IPv6 header that precedes UDP
    std::span<const std::uint8_t> payload{};
    std::uint32_t icrc = 0;
};

/// Parses and validates `frame`. Never reads outside it. Returns ok for a
/// valid frame and for a trimmed data frame (check `trim`); otherwise the
/// first reason the frame was rejected.
WireError parse_frame(std::span<const std::uint8_t> frame, const ParseOptions& opts,
                      ParsedFrame& out) noexcept;

}  // namespace omrc::wire
