// SPDX-License-Identifier: BSD-3-Clause
// The tally at the end of a capture: frames and wire bytes per opcode (of
// the frames that parsed) and per parse error (of those that did not), so
// that the two tables add up to the capture.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "frame_record.hpp"

namespace omrc::pcaptool {

struct Tally {
    std::uint64_t frames = 0;
    std::uint64_t wire_bytes = 0;  ///< sum of the frames' lengths on the wire
    void add(std::uint32_t bytes) noexcept {
        ++frames;
        wire_bytes += bytes;
    }
};

class Summary {
public:
    void add(const FrameRecord& r);

    /// Frames that parse_frame() rejected.
    [[nodiscard]] std::uint64_t not_parsed() const noexcept { return total_.frames - parsed_.frames; }
    /// The totals line and the two tables, each line ending in a newline.
    [[nodiscard]] std::string text() const;
    /// {"summary": {...}}: the same counts; opcode and error tables keyed by name.
    [[nodiscard]] nlohmann::ordered_json json() const;

private:
    Tally total_;
    Tally parsed_;
    std::map<std::uint8_t, Tally> opcodes_;     ///< parsed frames by BTH opcode value
    std::map<wire::WireError, Tally> errors_;   ///< rejected frames by reason
    std::uint64_t icrc_ok_ = 0;
    std::uint64_t icrc_unchecked_ = 0;
    std::uint64_t trimmed_ = 0;
    std::uint64_t rtx_ = 0;          ///< parsed frames with BTH RTX set
    std::uint64_t plain_ = 0;
    std::uint64_t srv6_ = 0;
    std::uint64_t srh_ = 0;          ///< srv6 frames with an SRH
    std::uint64_t snapped_ = 0;      ///< frames the capture kept shorter than the wire carried
    std::map<SealStatus, std::uint64_t> sealed_;  ///< sealed frames by what opening them gave
};

}  // namespace omrc::pcaptool
