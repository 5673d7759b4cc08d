// SPDX-License-Identifier: BSD-3-Clause
// Typed reasons for rejecting a frame or a header. Every rejected packet is
// counted by one of these; nothing is logged per packet.
#pragma once

#include <cstdint>
#include <string_view>

namespace omrc::wire {

enum class WireError : std::uint8_t {
    ok = 0,
    buffer_too_small,      ///< encode: output span shorter than the header
    truncated_eth,         ///< fewer than 14 bytes
    not_ipv6,              ///< ethertype is not 0x86DD
    truncated_ipv6,        ///< fewer than 40 bytes for an IPv6 header
    bad_ip_version,        ///< IPv6 version nibble is not 6
    bad_ip_payload_len,    ///< SRv6 mode: the inner IPv6 packet does not end where the outer one does
    unsupported_next_header,  ///< a next-header value we do not carry (not 41, 43 or 17 where expected)
    truncated_srh,         ///< SRH fixed part or segment list runs past the frame
    bad_srh,               ///< routing type, last-entry, segments-left or length inconsistent
    truncated_udp,         ///< fewer than 8 bytes for UDP
    bad_udp_len,           ///< UDP length field disagrees with the IPv6 payload length
    not_roce_port,         ///< UDP destination port is not 4791
    truncated_bth,         ///< fewer than 12 bytes for BTH
    bad_tver,              ///< BTH transport version is not 0
    unknown_opcode,        ///< opcode outside the set OpenMRC speaks
    truncated_ext,         ///< an extension header (METH, RETH, SETH, ...) runs past the frame
    bad_pad,               ///< pad count larger than the payload, or nonzero where no payload exists
    truncated_icrc,        ///< no room for the 4-byte ICRC after the headers
    bad_icrc,              ///< ICRC mismatch
    bad_field,             ///< a field value outside its documented range
    usid_too_many,         ///< more than six uSIDs for one F3216 container
    usid_zero,             ///< a uSID of 0x0000 inside a path (0 ends a container)
    usid_no_match,         ///< DA does not match this node's block + uSID
    bad_split,             ///< a header-split frame whose split is not where its payload starts
    psp_truncated,         ///< sealed frame: PSP header, BTH, ICV or ICRC runs past the frame
    psp_bad_header,        ///< sealed frame: PSP header OpenMRC does not send (cookie, version, crypt offset, next header)
    psp_bad_inner,         ///< sealed frame: inner UDP header not port 4791 or its length does not match
    count_                 ///< number of reasons (array size for counters)
};

std::string_view to_string(WireError e) noexcept;

}  // namespace omrc::wire
