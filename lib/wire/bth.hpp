// SPDX-License-Identifier: BSD-3-Clause
// Base Transport Header (IBTA, 12 bytes) with OpenMRC's use of byte 8:
// bit 7 AckReq, bit 5 RTX (this packet is a retransmission), bit 4 TS (a
// TSETH follows METH). The opcode table is OpenMRC's (docs/PROTOCOL.md §3).
#pragma once

#include <cstdint>
#include <span>

#include "wire/bytes.hpp"
#include "wire/error.hpp"

namespace omrc::wire {

enum class Opcode : std::uint8_t {
    // OpenMRC's SEND (docs/PROTOCOL.md §3.1, §11.9): not MRC opcodes. The
    // low five bits are IBTA RC's SEND numbering, as MRC's WRITEs follow
    // IBTA's WRITE numbering; every packet carries METH and a RETH whose VA
    // is its byte offset within the message (R_Key 0).
    send_first = 0xC0,
    send_middle = 0xC1,
    send_last = 0xC2,
    send_last_imm = 0xC3,
    send_only = 0xC4,
    send_only_imm = 0xC5,
    write_first = 0xC6,
    write_middle = 0xC7,
    write_last = 0xC8,
    write_last_imm = 0xC9,
    write_only = 0xCA,
    write_only_imm = 0xCB,
    // OpenMRC's RDMA READ (docs/PROTOCOL.md §3.1, §11.10): not MRC opcodes;
    // the low five bits are IBTA RC's READ numbering. The request (one PSN,
    // no payload) carries METH (RQMSN = the requester's read sequence) and a
    // RETH naming the responder's memory; the responder's answer is a
    // message of its own direction, each packet with METH (RQMSN = that read
    // sequence) and a RETH whose VA is its byte offset in the read (R_Key 0).
    // After the request's RETH, in ImmDt's place: the PSN the requester
    // expects next from the responder (a responder still in RTR, which has
    // sent nothing, starts its PSNs there).
    read_req = 0xCC,
    read_resp_first = 0xCD,
    read_resp_middle = 0xCE,
    read_resp_last = 0xCF,
    read_resp_only = 0xD0,
    ack = 0xD1,            ///< transport ACK/NAK: AETH
    /// OpenMRC's connection manager (docs/PROTOCOL.md §13): IBTA UD
    /// SEND_ONLY numbering, as RoCE carries its CM MADs; DETH, then one CM
    /// message as payload; always to DestQP 1 (kCmQpn). Not an MRC opcode.
    cm = 0x64,
    ep_request = 0xD8,     ///< endpoint request (ERTH), reserved QPN 2
    ep_response = 0xD9,    ///< endpoint response (ERTH), reserved QPN 2
    sack = 0xDC,           ///< reliability SACK: SETH + CC state
    nack = 0xDD,           ///< reliability NACK: NETH
    probe = 0xDE,          ///< reliability probe: PETH
};

/// Reserved destination QPN for connectionless endpoint messages (ERTH).
inline constexpr std::uint32_t kEndpointQpn = 2;
/// Reserved destination QPN of connection-manager messages (IBTA's QP1, the
/// GSI QP that RoCE CM MADs go to); QPN 1 is never assigned to a connection.
inline constexpr std::uint32_t kCmQpn = 1;

[[nodiscard]] constexpr bool is_known_opcode(std::uint8_t op) noexcept {
    switch (op) {
        case 0xC0: case 0xC1: case 0xC2: case 0xC3: case 0xC4: case 0xC5:
        case 0xC6: case 0xC7: case 0xC8: case 0xC9: case 0xCA: case 0xCB:
        case 0xCC: case 0xCD: case 0xCE: case 0xCF: case 0xD0:
        case 0xD1: case 0xD8: case 0xD9: case 0xDC: case 0xDD: case 0xDE:
        case 0x64:
            return true;
        default:
            return false;
    }
}
/// A packet of a message (SEND_*, WRITE_*, READ_*): consumes a PSN, carries METH and RETH.
[[nodiscard]] constexpr bool is_data_opcode(Opcode op) noexcept {
    return op >= Opcode::send_first && op <= Opcode::read_resp_only;
}
/// Carries a payload after its extension headers: data, and CM messages.
[[nodiscard]] constexpr bool carries_payload(Opcode op) noexcept { return is_data_opcode(op) || op == Opcode::cm; }
/// READ_RESPONSE_*: placed into the READ WR its METH.RQMSN names, at RETH.VA bytes in.
[[nodiscard]] constexpr bool is_read_response_opcode(Opcode op) noexcept {
    return op >= Opcode::read_resp_first && op <= Opcode::read_resp_only;
}
/// SEND_*: placed into the receive WR its METH.RQMSN names, at RETH.VA bytes in.
[[nodiscard]] constexpr bool is_send_opcode(Opcode op) noexcept {
    return op >= Opcode::send_first && op <= Opcode::send_only_imm;
}
[[nodiscard]] constexpr bool carries_imm(Opcode op) noexcept {
    return op == Opcode::write_last_imm || op == Opcode::write_only_imm || op == Opcode::send_last_imm ||
           op == Opcode::send_only_imm;
}
/// A 4-byte field follows RETH: ImmDt (carries_imm), or a READ request's
/// response PSN (the PSN its requester expects next from the responder).
[[nodiscard]] constexpr bool has_imm_field(Opcode op) noexcept { return carries_imm(op) || op == Opcode::read_req; }
/// First packet of a message (FIRST or ONLY): starts a new MSN.
[[nodiscard]] constexpr bool is_first_of_message(Opcode op) noexcept {
    return op == Opcode::write_first || op == Opcode::write_only || op == Opcode::write_only_imm ||
           op == Opcode::send_first || op == Opcode::send_only || op == Opcode::send_only_imm ||
           op == Opcode::read_req || op == Opcode::read_resp_first || op == Opcode::read_resp_only;
}
/// Last packet of a message (LAST or ONLY).
[[nodiscard]] constexpr bool is_last_of_message(Opcode op) noexcept {
    return op == Opcode::write_last || op == Opcode::write_last_imm || op == Opcode::write_only ||
           op == Opcode::write_only_imm || op == Opcode::send_last || op == Opcode::send_last_imm ||
           op == Opcode::send_only || op == Opcode::send_only_imm || op == Opcode::read_req ||
           op == Opcode::read_resp_last || op == Opcode::read_resp_only;
}
const char* opcode_name(Opcode op) noexcept;

inline constexpr std::uint8_t kBthAckReq = 0x80;  ///< byte 8 bit 7
inline constexpr std::uint8_t kBthRtx = 0x20;     ///< byte 8 bit 5: retransmission
inline constexpr std::uint8_t kBthTs = 0x10;      ///< byte 8 bit 4: TSETH present
/// byte 8 bit 6, reserved in MRC: OpenMRC's credit flag, a CRTH follows
/// METH [TSETH] on a data packet (docs/PROTOCOL.md §11.8)
inline constexpr std::uint8_t kBthCredit = 0x40;
inline constexpr std::uint16_t kDefaultPkey = 0xFFFF;

struct BthHdr {
    static constexpr std::size_t kSize = 12;
    Opcode opcode = Opcode::write_only;
    bool solicited = false;     ///< SE
    bool mig_req = false;       ///< M
    std::uint8_t pad_count = 0; ///< 0..3 bytes of pad before the ICRC
    std::uint8_t tver = 0;      ///< transport version, must be 0
    std::uint16_t pkey = kDefaultPkey;
    std::uint8_t resv8 = 0;     ///< byte 4; masked to 0xFF for the ICRC
    std::uint32_t dest_qp = 0;  ///< 24 bits
    bool ack_req = false;
    bool rtx = false;           ///< MRC RTX flag
    bool ts = false;            ///< MRC TS flag: a TSETH follows METH
    bool cr = false;            ///< OpenMRC credit flag (data): a CRTH follows METH [TSETH]
    std::uint32_t psn = 0;      ///< 24 bits

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (dest_qp > 0xFFFFFF || psn > 0xFFFFFF || pad_count > 3 || tver > 15)
            return WireError::bad_field;
        out[0] = static_cast<std::uint8_t>(opcode);
        out[1] = static_cast<std::uint8_t>((solicited ? 0x80 : 0) | (mig_req ? 0x40 : 0) |
                                           (pad_count << 4) | tver);
        store_be16(&out[2], pkey);
        out[4] = resv8;
        store_be24(&out[5], dest_qp);
        out[8] = static_cast<std::uint8_t>((ack_req ? kBthAckReq : 0) | (rtx ? kBthRtx : 0) |
                                           (ts ? kBthTs : 0) | (cr ? kBthCredit : 0));
        store_be24(&out[9], psn);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, BthHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_bth;
        if (!is_known_opcode(in[0])) return WireError::unknown_opcode;
        h.opcode = static_cast<Opcode>(in[0]);
        h.solicited = (in[1] & 0x80) != 0;
        h.mig_req = (in[1] & 0x40) != 0;
        h.pad_count = (in[1] >> 4) & 0x3;
        h.tver = in[1] & 0x0F;
        if (h.tver != 0) return WireError::bad_tver;
        h.pkey = load_be16(&in[2]);
        h.resv8 = in[4];
        h.dest_qp = load_be24(&in[5]);
        h.ack_req = (in[8] & kBthAckReq) != 0;
        h.rtx = (in[8] & kBthRtx) != 0;
        h.ts = (in[8] & kBthTs) != 0;
        h.cr = (in[8] & kBthCredit) != 0;
        h.psn = load_be24(&in[9]);
        return WireError::ok;
    }
    friend bool operator==(const BthHdr&, const BthHdr&) = default;
};

}  // namespace omrc::wire
