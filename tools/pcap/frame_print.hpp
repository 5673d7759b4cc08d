// SPDX-License-Identifier: BSD-3-Clause
// A FrameRecord as one text line or one JSON object. Only what lib/wire's
// parser decoded is shown; names of opcodes and errors are lib/wire's own.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "frame_record.hpp"

namespace omrc::pcaptool {

struct PrintOptions {
    bool eth = false;  ///< text: show the Ethernet source and destination MACs
};

/// One line, no newline: frame number, time since the first frame (s), wire
/// length, then the decoded headers as `key=value` and `HDR[key=value ...]`
/// groups, the ICRC status, and `error=NAME` for a frame that did not parse.
[[nodiscard]] std::string frame_text(const FrameRecord& r, const PrintOptions& opts);

/// The same as one JSON object; numbers are numbers, addresses strings,
/// keys with a unit name it (time_ns, wire_bytes, payload_bytes).
[[nodiscard]] nlohmann::ordered_json frame_json(const FrameRecord& r);

}  // namespace omrc::pcaptool
