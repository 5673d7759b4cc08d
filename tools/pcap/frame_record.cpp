// SPDX-License-Identifier: BSD-3-Clause
#include "frame_record.hpp"

namespace omrc::pcaptool {

const char* to_string(IcrcStatus s) noexcept {
    switch (s) {
        case IcrcStatus::ok: return "ok";
        case IcrcStatus::bad: return "bad";
        case IcrcStatus::unchecked: return "unchecked";
        case IcrcStatus::trimmed: return "trimmed";
        case IcrcStatus::none: return "none";
    }
    return "none";
}

void decode_frame(std::span<const std::uint8_t> bytes, const wire::ParseOptions& opts, FrameRecord& r) noexcept {
    r.error = wire::parse_frame(bytes, opts, r.parsed);
    if (r.error == wire::WireError::ok) {
        r.has_headers = true;
        r.icrc = r.parsed.trim != wire::TrimKind::none ? IcrcStatus::trimmed
                 : opts.verify_icrc                    ? IcrcStatus::ok
                                                       : IcrcStatus::unchecked;
        return;
    }
    r.has_headers = false;
    r.icrc = IcrcStatus::none;
    if (r.error != wire::WireError::bad_icrc) return;
    // Everything but the ICRC held: the parser's own decoding of the headers.
    r.icrc = IcrcStatus::bad;
    wire::ParseOptions unchecked = opts;
    unchecked.verify_icrc = false;
    r.has_headers = wire::parse_frame(bytes, unchecked, r.parsed) == wire::WireError::ok;
}

}  // namespace omrc::pcaptool
