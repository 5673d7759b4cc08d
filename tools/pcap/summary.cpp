// SPDX-License-Identifier: BSD-3-Clause
#include "summary.hpp"

#include <fmt/format.h>

#include <iterator>

namespace omrc::pcaptool {

void Summary::add(const FrameRecord& r) {
    total_.add(r.wire_bytes);
    if (r.captured_bytes < r.wire_bytes) ++snapped_;
    if (r.seal != SealStatus::plain) ++sealed_[r.seal];
    if (r.error != wire::WireError::ok) {
        errors_[r.error].add(r.wire_bytes);
        return;
    }
    const wire::ParsedFrame& p = r.parsed;
    parsed_.add(r.wire_bytes);
    opcodes_[static_cast<std::uint8_t>(p.bth.opcode)].add(r.wire_bytes);
    if (r.icrc == IcrcStatus::ok) ++icrc_ok_;
    if (r.icrc == IcrcStatus::unchecked) ++icrc_unchecked_;
    if (p.trim != wire::TrimKind::none) ++trimmed_;
    if (p.bth.rtx) ++rtx_;
    if (p.mode == wire::FrameMode::plain) ++plain_;
    else ++srv6_;
    if (p.has_srh) ++srh_;
}

std::string Summary::text() const {
    std::string s;
    auto o = std::back_inserter(s);
    fmt::format_to(o,
                   "{} frames, {} bytes on the wire: {} parsed ({} ICRC ok, {} unchecked, {} trimmed, {} "
                   "retransmitted; {} plain, {} srv6 of which {} with an SRH), {} not parsed\n",
                   total_.frames, total_.wire_bytes, parsed_.frames, icrc_ok_, icrc_unchecked_, trimmed_, rtx_,
                   plain_, srv6_, srh_, not_parsed());
    if (snapped_ != 0) fmt::format_to(o, "{} frames captured shorter than their wire length\n", snapped_);
    if (!sealed_.empty()) {
        fmt::format_to(o, "sealed frames:");
        for (const auto& [st, n] : sealed_) fmt::format_to(o, " {} {}", n, to_string(st));
        fmt::format_to(o, "\n");
    }
    fmt::format_to(o, "{:<24} {:>10} {:>14}\n", "opcode", "frames", "bytes");
    for (const auto& [op, t] : opcodes_)
        fmt::format_to(o, "{:<24} {:>10} {:>14}\n", wire::opcode_name(static_cast<wire::Opcode>(op)), t.frames,
                       t.wire_bytes);
    if (errors_.empty()) {
        fmt::format_to(o, "parse errors: none\n");
        return s;
    }
    fmt::format_to(o, "{:<24} {:>10} {:>14}\n", "parse error", "frames", "bytes");
    for (const auto& [e, t] : errors_) fmt::format_to(o, "{:<24} {:>10} {:>14}\n", wire::to_string(e), t.frames, t.wire_bytes);
    return s;
}

nlohmann::ordered_json Summary::json() const {
    using Json = nlohmann::ordered_json;
    Json opcodes = Json::object();
    for (const auto& [op, t] : opcodes_)
        opcodes[wire::opcode_name(static_cast<wire::Opcode>(op))] = {{"frames", t.frames}, {"wire_bytes", t.wire_bytes}};
    Json sealed = Json::object();
    for (const auto& [st, n] : sealed_) sealed[to_string(st)] = n;
    Json errors = Json::object();
    for (const auto& [e, t] : errors_)
        errors[std::string(wire::to_string(e))] = {{"frames", t.frames}, {"wire_bytes", t.wire_bytes}};
    return Json{{"summary",
                 {{"frames", total_.frames},
                  {"wire_bytes", total_.wire_bytes},
                  {"parsed", parsed_.frames},
                  {"not_parsed", not_parsed()},
                  {"icrc_ok", icrc_ok_},
                  {"icrc_unchecked", icrc_unchecked_},
                  {"trimmed", trimmed_},
                  {"retransmitted", rtx_},
                  {"plain", plain_},
                  {"srv6", srv6_},
                  {"srh", srh_},
                  {"snapped", snapped_},
                  {"sealed", sealed},
                  {"opcodes", opcodes},
                  {"errors", errors}}}};
}

}  // namespace omrc::pcaptool
