// SPDX-License-Identifier: BSD-3-Clause
// A frame ready to transmit, as a gather list: headers built by the engine,
// payload still in registered memory (never copied by the engine), then pad
// and ICRC. A driver either copies the pieces into one buffer or hands them to
// a NIC as external segments (zero copy).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>

#include "wire/int_telemetry.hpp"

namespace omrc::wire {

struct GatherFrame {
    static constexpr std::size_t kMaxHeader = 160;  ///< ≥ SRv6 data headers without SRH (142 B; 154 B with a CRTH)
    static constexpr std::size_t kMaxSegments = 8;  ///< payload pieces (one per SGE touched)

    struct Segment {
        const std::uint8_t* data = nullptr;  ///< registered memory; valid until the driver releases the frame
        std::uint32_t len = 0;
    };

    std::uint8_t plane = 0;                       ///< NIC port / plane to transmit on
    std::uint16_t header_len = 0;                 ///< bytes used in `header`
    std::uint8_t tail_len = 0;                    ///< pad (0..3) + ICRC (4)
    std::uint8_t segment_count = 0;
    /// The payload lies in the engine's own memory (an inline WR's copy, or a
    /// sealed frame's cipher text and ICV), not in registered memory, so a
    /// zero-copy driver copies it instead. An inline WR's copy may be reused
    /// once the engine has the packet acknowledged; a sealed frame's (docs/PROTOCOL.md
    /// §12) at the engine's next poll_tx(): whatever keeps a frame longer
    /// (ProgressLoop::keep) copies it.
    bool payload_in_engine_memory = false;
    /// A SACK's echoed INT records (OpenMRC extension, docs/PROTOCOL.md):
    /// engine memory, valid until the next call into the engine; drivers
    /// that carry no telemetry ignore it. Null on every other frame.
    const IntStack* telemetry = nullptr;
    std::array<std::uint8_t, kMaxHeader> header{};
    std::array<Segment, kMaxSegments> segments{};
    std::array<std::uint8_t, 8> tail{};

    /// Copies the parts of `o` in use (not the whole 300-byte object).
    void assign_used(const GatherFrame& o) noexcept {
        plane = o.plane;
        header_len = o.header_len;
        tail_len = o.tail_len;
        segment_count = o.segment_count;
        payload_in_engine_memory = o.payload_in_engine_memory;
        telemetry = o.telemetry;
        std::memcpy(header.data(), o.header.data(), o.header_len);
        for (std::size_t i = 0; i < o.segment_count; ++i) segments[i] = o.segments[i];
        std::memcpy(tail.data(), o.tail.data(), o.tail_len);
    }

    [[nodiscard]] std::size_t payload_len() const noexcept {
        std::size_t n = 0;
        for (std::size_t i = 0; i < segment_count; ++i) n += segments[i].len;
        return n;
    }
    [[nodiscard]] std::size_t size() const noexcept { return header_len + payload_len() + tail_len; }
    /// Copies the whole frame into `out` (out.size() ≥ size()); returns bytes written or 0 if too small.
    std::size_t flatten(std::span<std::uint8_t> out) const noexcept {
        const std::size_t n = size();
        if (out.size() < n) return 0;
        std::uint8_t* p = out.data();
        std::memcpy(p, header.data(), header_len);
        std::size_t off = header_len;
        for (std::size_t s = 0; s < segment_count; ++s) {
            if (segments[s].len != 0) std::memcpy(p + off, segments[s].data, segments[s].len);
            off += segments[s].len;
        }
        std::memcpy(p + off, tail.data(), tail_len);
        return off + tail_len;
    }
};

}  // namespace omrc::wire
