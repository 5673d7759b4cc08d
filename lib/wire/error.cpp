// SPDX-License-Identifier: BSD-3-Clause
#include "wire/error.hpp"

namespace omrc::wire {

std::string_view to_string(WireError e) noexcept {
    switch (e) {
        case WireError::ok: return "ok";
        case WireError::buffer_too_small: return "buffer_too_small";
        case WireError::truncated_eth: return "truncated_eth";
        case WireError::not_ipv6: return "not_ipv6";
        case WireError::truncated_ipv6: return "truncated_ipv6";
        case WireError::bad_ip_version: return "bad_ip_version";
        case WireError::bad_ip_payload_len: return "bad_ip_payload_len";
        case WireError::unsupported_next_header: return "unsupported_next_header";
        case WireError::truncated_srh: return "truncated_srh";
        case WireError::bad_srh: return "bad_srh";
        case WireError::truncated_udp: return "truncated_udp";
        case WireError::bad_udp_len: return "bad_udp_len";
        case WireError::not_roce_port: return "not_roce_port";
        case WireError::truncated_bth: return "truncated_bth";
        case WireError::bad_tver: return "bad_tver";
        case WireError::unknown_opcode: return "unknown_opcode";
        case WireError::truncated_ext: return "truncated_ext";
        case WireError::bad_pad: return "bad_pad";
        case WireError::truncated_icrc: return "truncated_icrc";
        case WireError::bad_icrc: return "bad_icrc";
        case WireError::bad_split: return "bad_split";
        case WireError::psp_truncated: return "psp_truncated";
        case WireError::psp_bad_header: return "psp_bad_header";
        case WireError::psp_bad_inner: return "psp_bad_inner";
        case WireError::bad_field: return "bad_field";
        case WireError::usid_too_many: return "usid_too_many";
        case WireError::usid_zero: return "usid_zero";
        case WireError::usid_no_match: return "usid_no_match";
        case WireError::count_: break;
    }
    return "unknown";
}

}  // namespace omrc::wire
