// SPDX-License-Identifier: BSD-3-Clause
// The receive path's parsed frame: validated like parse_frame() (bounds,
// versions, lengths, opcode, extension-header fields, ICRC), but decoded
// only as far as the engine needs to dispatch — BTH, EV, ECN, trim, the
// offsets of the IPv6 header and of the extension headers, and the payload.
// Extension headers are decoded on demand from their fixed offsets. Nothing
// wide is zeroed per frame. parse_frame() is this plus a full decode.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

#include "wire/frame.hpp"
#include "wire/rx_frame.hpp"

namespace omrc::wire {

struct FrameView {
    std::span<const std::uint8_t> frame{};   ///< the whole frame (header split: headers, pad and ICRC)
    FrameMode mode = FrameMode::plain;
    TrimKind trim = TrimKind::none;
    std::uint8_t ecn = 0;         ///< ECN of the header the fabric marks (outer in srv6 mode)
    bool has_meth = false;        ///< data: METH present (always, unless lost to a trim)
    bool has_tseth = false;       ///< data: TSETH present (BTH.TS and, for a trim, it survived)
    bool has_crth = false;        ///< data: CRTH present (BTH.CR and, for a trim, it survived)
    bool has_cgth = false;        ///< SACK: CGTH present (SETH cc_type credit)
    std::uint16_t ip_offset = 0;  ///< IPv6 header before UDP (the inner one in srv6 mode)
    std::uint16_t ext_offset = 0; ///< first byte after BTH
    std::uint32_t ev = 0;
    BthHdr bth{};
    std::span<const std::uint8_t> payload{};  ///< data frames, untrimmed: payload without pad

    /// Source address of the IPv6 header before UDP (16 bytes in the frame).
    [[nodiscard]] const std::uint8_t* ip_src() const noexcept { return frame.data() + ip_offset + 8; }
    [[nodiscard]] bool ip_src_is(const Ipv6Addr& a) const noexcept { return std::memcmp(ip_src(), a.data(), 16) == 0; }
    [[nodiscard]] Ipv6Addr ip_src_addr() const noexcept {
        Ipv6Addr a;
        std::memcpy(a.data(), ip_src(), 16);
        return a;
    }

    // Extension headers at their fixed offsets. Valid for the opcodes that
    // carry them (the parser checked the sizes and the fields' ranges).
    [[nodiscard]] MethHdr meth() const noexcept { return {load_be16(ext(0)), load_be16(ext(2))}; }
    [[nodiscard]] TsethHdr tseth() const noexcept {
        const std::uint16_t w = load_be16(ext(MethHdr::kSize + 2));
        return {load_be16(ext(MethHdr::kSize)), (w & 0x8000) != 0, static_cast<std::uint8_t>(w & 0xF)};
    }
    [[nodiscard]] std::size_t crth_offset() const noexcept { return MethHdr::kSize + (bth.ts ? TsethHdr::kSize : 0); }
    [[nodiscard]] CrthHdr crth() const noexcept {
        const std::uint8_t* p = ext(crth_offset());
        return {load_be32(p), load_be32(p + 4), load_be16(p + 8)};
    }
    [[nodiscard]] std::size_t reth_offset() const noexcept { return crth_offset() + (bth.cr ? CrthHdr::kSize : 0); }
    [[nodiscard]] RethHdr reth() const noexcept {
        const std::uint8_t* p = ext(reth_offset());
        return {load_be64(p), load_be32(p + 8), load_be32(p + 12)};
    }
    [[nodiscard]] ImmDtHdr imm() const noexcept { return {load_be32(ext(reth_offset() + RethHdr::kSize))}; }
    /// A SACK's CGTH (has_cgth only).
    [[nodiscard]] CgthHdr cgth() const noexcept { return ext_header<CgthHdr>(SethHdr::kSize + CcStateHdr::kSize); }
    /// The extension header of a non-data opcode (SethHdr + CcStateHdr for SACK, ...).
    template <class H>
    [[nodiscard]] H ext_header(std::size_t at = 0) const noexcept {
        H h{};
        (void)H::decode(frame.subspan(ext_offset + at, H::kSize), h);
        return h;
    }

private:
    [[nodiscard]] const std::uint8_t* ext(std::size_t at) const noexcept { return frame.data() + ext_offset + at; }
};

/// Validates `frame` exactly as parse_frame() does (same checks, same first
/// error) and fills the view. Never reads outside the frame.
WireError parse_frame_view(std::span<const std::uint8_t> frame, const ParseOptions& opts, FrameView& out) noexcept;

/// The same for a frame as a driver hands it over, contiguous or header
/// split (RxFrame::payload). `frame` (FrameView::frame) is then the header
/// and tail bytes only; `payload` points at the driver's payload piece.
WireError parse_frame_view(const RxFrame& frame, const ParseOptions& opts, FrameView& out) noexcept;

}  // namespace omrc::wire
