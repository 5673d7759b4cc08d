// SPDX-License-Identifier: BSD-3-Clause
// One captured frame as omrc-pcap saw it: where it sits in the capture and
// what lib/wire's parse_frame() made of it. The printers (frame_print.hpp)
// and the tally (summary.hpp) read only this.
#pragma once

#include <cstdint>
#include <span>

#include "decrypt.hpp"
#include "wire/frame.hpp"

namespace omrc::pcaptool {

/// What was checked of the frame's ICRC.
enum class IcrcStatus : std::uint8_t {
    ok,         ///< parse_frame() verified it
    bad,        ///< parse_frame() rejected the frame with bad_icrc
    unchecked,  ///< --no-icrc: the parser was told not to verify it
    trimmed,    ///< a trimmed data packet carries no ICRC to check
    none,       ///< the frame did not parse far enough to have one
};

struct FrameRecord {
    std::uint64_t number = 0;       ///< 1-based position in the capture
    std::uint64_t time_ns = 0;      ///< capture timestamp, ns since the Unix epoch
    std::int64_t rel_time_ns = 0;   ///< ns since the capture's first frame (negative when a frame is older)
    std::uint32_t wire_bytes = 0;   ///< the frame's length on the wire (pcap `len`)
    std::uint32_t captured_bytes = 0;  ///< bytes the capture kept (pcap `caplen`); < wire_bytes when snapped
    /// ok, or the first reason parse_frame() rejected the frame.
    wire::WireError error = wire::WireError::ok;
    /// `parsed` holds decoded headers: the frame parsed, or it failed only its
    /// ICRC and parsed again with the ICRC check off.
    bool has_headers = false;
    IcrcStatus icrc = IcrcStatus::none;
    /// A sealed frame (encrypted mode): what opening it gave; `parsed` is
    /// then the opened plain frame's (opened) or nothing (the others).
    SealStatus seal = SealStatus::plain;
    std::uint32_t spi = 0;  ///< sealed frames: the PSP SPI
    wire::ParsedFrame parsed{};
};

[[nodiscard]] const char* to_string(IcrcStatus s) noexcept;

/// Runs `bytes` (the captured bytes of frame `r`) through wire::parse_frame()
/// with `opts` and fills r.error, r.has_headers, r.icrc and r.parsed. A frame
/// that fails only its ICRC is parsed a second time with the check off, so
/// that its headers can still be shown beside the error.
void decode_frame(std::span<const std::uint8_t> bytes, const wire::ParseOptions& opts, FrameRecord& r) noexcept;

}  // namespace omrc::pcaptool
