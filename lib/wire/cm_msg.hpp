// SPDX-License-Identifier: BSD-3-Clause
// Connection-manager messages (docs/PROTOCOL.md §13): what two devices say
// to set up and tear down a connection, carried over the fabric as RoCE
// carries its CM MADs: UDP 4791, BTH opcode 0x64 (IBTA UD SEND_ONLY) to
// DestQP 1, a DETH, then one message as the payload. Every message starts
// with a 16-byte common header; the body depends on its type. decode()
// bounds-checks every field and never reads past the span it is given.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "wire/bytes.hpp"
#include "wire/error.hpp"
#include "wire/ipv6.hpp"

namespace omrc::wire {

/// The Q_Key of every CM datagram (IBTA's well-known GSI Q_Key).
inline constexpr std::uint32_t kCmQkey = 0x80010000u;

/// DETH (IBTA datagram extended transport header, 8 bytes): 0 Q_Key; 4
/// reserved; 5 source QP (24 bits). CM messages: Q_Key kCmQkey, source QP 1.
struct DethHdr {
    static constexpr std::size_t kSize = 8;
    std::uint32_t qkey = kCmQkey;
    std::uint32_t src_qp = 1;  ///< 24 bits

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (src_qp > 0xFFFFFF) return WireError::bad_field;
        store_be32(&out[0], qkey);
        store_be32(&out[4], src_qp);  // byte 4 (reserved) is the top byte: 0
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, DethHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.qkey = load_be32(&in[0]);
        h.src_qp = load_be32(&in[4]) & 0xFFFFFF;
        return WireError::ok;
    }
    friend bool operator==(const DethHdr&, const DethHdr&) = default;
};

enum class CmType : std::uint8_t {
    req = 0x01,     ///< connect: the requester's QP and what it asks for
    cookie = 0x02,  ///< listener, statelessly: send the REQ again with this cookie
    rep = 0x03,     ///< accept: the responder's QP, and proof it holds the key
    rtu = 0x04,     ///< ready to use: the requester took the REP
    rej = 0x05,     ///< reject, with a reason
    dreq = 0x06,    ///< disconnect request
    drep = 0x07,    ///< disconnect reply
};
[[nodiscard]] std::string_view to_string(CmType t) noexcept;

/// REJ reasons (16 bits on the wire).
enum class CmReject : std::uint16_t {
    none = 0,
    no_listener = 1,        ///< nobody listens on the service id
    consumer = 2,           ///< the application rejected it (CmManager::reject)
    busy = 3,               ///< the listener's backlog is full
    peer_limit = 4,         ///< this peer has too many requests or connections pending
    no_resources = 5,       ///< the responder could not create or set up a QP
    security_required = 6,  ///< the responder only takes encrypted connections
    security_unavailable = 7,  ///< encryption asked for, but this end has no master key for it
    key_mismatch = 8,       ///< the key check failed: the two ends hold different keys
    stale = 9,              ///< names a connection this end does not have (or no longer)
    timeout = 10,           ///< this end gave up waiting (sent when it gives up, best effort)
    invalid = 11,           ///< fields this end cannot take (MTU, planes)
};
[[nodiscard]] std::string_view to_string(CmReject r) noexcept;

/// The bytes of an application's private data at most (rdma_cm's REQ allows 56).
inline constexpr std::size_t kCmPrivateMax = 64;
/// MACs a REQ or REP carries at most (routing::kMaxPlanes).
inline constexpr std::size_t kCmMaxPlanes = 15;
inline constexpr std::uint8_t kCmVersion = 1;
inline constexpr std::size_t kCmHeaderSize = 16;
/// REQ and REP: the fixed part of the body, before the MACs.
inline constexpr std::size_t kCmParamsSize = 84;
/// DREQ: flags (bit 0: the receive PSN is set; others 0), then the 24-bit PSN.
inline constexpr std::size_t kCmDreqBodySize = 4;
/// The longest message: header, params, 15 MACs (90 B, padded to 92), private data.
inline constexpr std::size_t kCmMaxMessage = kCmHeaderSize + kCmParamsSize + 92 + kCmPrivateMax;  // 256

/// One CM message, every type's fields (those of other types stay zero).
struct CmMessage {
    CmType type = CmType::req;
    std::uint32_t src_comm_id = 0;  ///< the sender's id of the connection (≠ 0)
    std::uint32_t dst_comm_id = 0;  ///< the addressee's id (0 in a REQ; a COOKIE echoes the REQ's src_comm_id)
    std::uint16_t attempt = 0;      ///< 0 for the first transmission, then 1, 2, .. (diagnostics only)
    // REQ and REP
    std::uint64_t service_id = 0;   ///< REQ: what the requester connects to; REP: echoed
    std::uint32_t qpn = 0;          ///< the sender's QP (24 bits)
    std::uint32_t psn = 0;          ///< its first PSN (24 bits)
    std::uint16_t mtu = 0;          ///< payload bytes per packet it offers (REQ) or takes (REP): 64..4096, multiple of 64
    std::uint8_t encryption = 0;    ///< 0 off, 1 AES-GCM-128, 2 AES-GCM-256 (REP: what the responder set up)
    std::uint8_t key_select = 0;    ///< 0 or 1: the master key the sender's SPIs name
    std::uint16_t conn_id = 0;      ///< the sender QP's connection id (the peer's QpAttr::dest_conn_id)
    std::uint32_t host = 0;         ///< srv6 frame mode: the sender's host index in the fabric
    std::array<std::uint8_t, 16> key_nonce{};  ///< sender's random contribution to its receive keys (encrypted only)
    /// REQ: the listener's cookie echoed (zeros on a first try); COOKIE: the cookie.
    std::array<std::uint8_t, 16> cookie{};
    /// REQ and REP, encrypted only (zeros otherwise): proof that the sender
    /// holds the key its receive keys derive from (docs/PROTOCOL.md §13.4).
    std::array<std::uint8_t, 16> key_check{};
    std::uint8_t planes = 0;        ///< MACs that follow (the sender's planes)
    std::array<std::array<std::uint8_t, 6>, kCmMaxPlanes> macs{};
    // DREQ (docs/PROTOCOL.md §13.3): the sender's receive edge, so that the
    // peer completes the sends that arrived before their ACK could reach it
    bool has_rcv_psn = false;       ///< DREQ: rcv_psn is set (a DREQ without a QP behind it has none)
    std::uint32_t rcv_psn = 0;      ///< DREQ: every PSN before this one (24 bits) arrived at the sender
    // REJ
    CmReject reason = CmReject::none;
    // REQ, REP, REJ
    std::uint8_t private_len = 0;   ///< ≤ kCmPrivateMax
    std::array<std::uint8_t, kCmPrivateMax> private_data{};

    /// Bytes encode() writes.
    [[nodiscard]] std::size_t wire_size() const noexcept;
    /// False when a field is out of range (the message is not written) or `out` is too short.
    [[nodiscard]] WireError encode(std::span<std::uint8_t> out, std::size_t& len) const noexcept;
    /// Reads one message from exactly `in` (trailing bytes beyond its length
    /// field are the frame's pad: at most 3). Errors: truncated_ext (shorter
    /// than it says), bad_field (version, type, length, a field out of range).
    static WireError decode(std::span<const std::uint8_t> in, CmMessage& out) noexcept;
};

}  // namespace omrc::wire
