// SPDX-License-Identifier: BSD-3-Clause
// The messages two ranks exchange over the listener's TCP connection to set
// a comm up (connect.cpp drives the exchange):
//
//   connector → listener  HELLO   the sender's PeerInfo (its CTS ring)
//   listener → connector  REPLY   the receiver's PeerInfo (its completion ring)
//                      or REJECT  why not (errno and a line of text)
//   connector → listener  READY   the sender's QP is in RTS: the receiver may
//                                 now write CTS records into its ring
//
// Each message is a 12-byte header (u32 magic "OMNC", u16 version, u16 type,
// u32 body length; big-endian) and a body. Everything received is checked:
// magic, version, type, length, the nonce of the listener the handle named,
// the byte order of the ring records, the device address, ring size and key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "omrc/verbs.hpp"

namespace omrc::nccl {

inline constexpr std::uint32_t kMsgMagic = 0x4f4d4e43;  // "OMNC"
inline constexpr std::uint16_t kMsgVersion = 1;
inline constexpr std::size_t kMsgHeaderBytes = 12;
inline constexpr std::size_t kMaxMsgBodyBytes = 1024;

enum class MsgType : std::uint16_t { hello = 1, reply = 2, ready = 3, reject = 4 };

/// What one side of a comm tells the other about itself.
struct PeerInfo {
    std::uint64_t nonce = 0;  ///< the listener's (HELLO: from the handle; REPLY: the same)
    DeviceAddress address{};  ///< Device::address()
    std::uint32_t qpn = 0;
    std::uint16_t conn_id = 0;
    std::uint32_t psn = 0;        ///< first PSN this side sends (24 bits)
    std::uint64_t ring_addr = 0;  ///< the ring the peer writes into
    std::uint32_t ring_rkey = 0;
    std::uint32_t ring_bytes = 0;
    std::uint32_t mtu = 0;  ///< payload per packet this side wants (the smaller one is used)
};

struct MsgHeader {
    MsgType type = MsgType::hello;
    std::uint32_t body_bytes = 0;
};

std::vector<std::uint8_t> encode_info(MsgType type, const PeerInfo& info);
std::vector<std::uint8_t> encode_ready();
std::vector<std::uint8_t> encode_reject(int err, const std::string& reason);

/// 0, or EPROTO with *error (not an OpenMRC NCCL peer, another version, a body over kMaxMsgBodyBytes).
int decode_header(const std::uint8_t* p, MsgHeader* out, std::string* error);
/// A HELLO or REPLY body. 0, or EPROTO with *error naming what is wrong
/// (`ring_bytes` is the size this side expects of the peer's ring).
int decode_info(const std::uint8_t* body, std::size_t len, std::uint32_t ring_bytes, PeerInfo* out, std::string* error);
/// A REJECT body: the peer's errno and reason.
void decode_reject(const std::uint8_t* body, std::size_t len, int* err, std::string* reason);

// With the connection manager (cm_setup.hpp) the CM carries QPN, PSN, MTU and
// addresses itself; the REQ's and REP's private data carry the ring of the
// side that sends them (kRingInfoBytes, integers big-endian):
//
//   0  4 bytes byte-order mark (host order)   4 u16 version 1, u16 0
//   8  u64 ring address   16 u32 ring rkey   20 u32 ring bytes

inline constexpr std::size_t kRingInfoBytes = 24;
inline constexpr std::uint16_t kRingInfoVersion = 1;

struct RingInfo {
    std::uint64_t addr = 0;
    std::uint32_t rkey = 0;
    std::uint32_t bytes = 0;
};

void encode_ring_info(const RingInfo& r, std::uint8_t out[kRingInfoBytes]);
/// 0, or EPROTO with *error (`ring_bytes` is the size this side expects).
int decode_ring_info(const std::uint8_t* p, std::size_t len, std::uint32_t ring_bytes, RingInfo* out,
                     std::string* error);

}  // namespace omrc::nccl
