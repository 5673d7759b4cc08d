// SPDX-License-Identifier: BSD-3-Clause
#include "handshake.hpp"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "bytes.hpp"
#include "omrc/omrc.h"

namespace omrc::nccl {

namespace {

/// Written in host byte order: the ring records are host-order structs, so
/// both ends of a comm must agree on it.
constexpr std::uint32_t kByteOrderMark = 0x01020304;

std::vector<std::uint8_t> with_header(MsgType type, const std::vector<std::uint8_t>& body) {
    std::vector<std::uint8_t> out;
    Writer(out)
        .be<std::uint32_t>(kMsgMagic)
        .be<std::uint16_t>(kMsgVersion)
        .be<std::uint16_t>(static_cast<std::uint16_t>(type))
        .be<std::uint32_t>(static_cast<std::uint32_t>(body.size()));
    out.insert(out.end(), body.begin(), body.end());
    return out;
}

void address_to_bytes(const DeviceAddress& a, std::uint8_t out[OMRC_DEVICE_ADDRESS_BYTES]) {
    omrc_device_address c;
    std::memset(&c, 0, sizeof(c));
    std::memcpy(c.addr, a.addr.data(), 16);
    for (std::size_t p = 0; p < kMaxPlanes; ++p) std::memcpy(c.macs[p], a.macs[p].data(), 6);
    c.planes = a.planes;
    c.host = a.host;
    omrc_device_address_to_bytes(&c, out);
}

bool address_from_bytes(const std::uint8_t in[OMRC_DEVICE_ADDRESS_BYTES], DeviceAddress* a) {
    omrc_device_address c;
    if (omrc_device_address_from_bytes(in, &c) != 0) return false;
    std::memcpy(a->addr.data(), c.addr, 16);
    for (std::size_t p = 0; p < kMaxPlanes; ++p) std::memcpy(a->macs[p].data(), c.macs[p], 6);
    a->planes = c.planes;
    a->host = c.host;
    return true;
}

}  // namespace

std::vector<std::uint8_t> encode_info(MsgType type, const PeerInfo& info) {
    std::vector<std::uint8_t> body;
    std::uint8_t mark[4];
    std::memcpy(mark, &kByteOrderMark, 4);
    std::uint8_t addr[OMRC_DEVICE_ADDRESS_BYTES];
    address_to_bytes(info.address, addr);
    Writer(body)
        .bytes(mark, 4)
        .be<std::uint64_t>(info.nonce)
        .bytes(addr, sizeof(addr))
        .be<std::uint32_t>(info.qpn)
        .be<std::uint16_t>(info.conn_id)
        .be<std::uint16_t>(0)
        .be<std::uint32_t>(info.psn)
        .be<std::uint64_t>(info.ring_addr)
        .be<std::uint32_t>(info.ring_rkey)
        .be<std::uint32_t>(info.ring_bytes)
        .be<std::uint32_t>(info.mtu);
    return with_header(type, body);
}

std::vector<std::uint8_t> encode_ready() { return with_header(MsgType::ready, {}); }

std::vector<std::uint8_t> encode_reject(int err, const std::string& reason) {
    std::vector<std::uint8_t> body;
    const std::size_t n = std::min<std::size_t>(reason.size(), kMaxMsgBodyBytes - 8);
    Writer(body)
        .be<std::uint32_t>(static_cast<std::uint32_t>(err))
        .be<std::uint32_t>(static_cast<std::uint32_t>(n))
        .bytes(reinterpret_cast<const std::uint8_t*>(reason.data()), n);
    return with_header(MsgType::reject, body);
}

int decode_header(const std::uint8_t* p, MsgHeader* out, std::string* error) {
    Reader r(p, kMsgHeaderBytes);
    const auto magic = r.be<std::uint32_t>();
    const auto version = r.be<std::uint16_t>();
    const auto type = r.be<std::uint16_t>();
    const auto len = r.be<std::uint32_t>();
    if (magic != kMsgMagic) {
        *error = fmt::format("the peer is no OpenMRC NCCL plugin (message magic {:#010x})", magic);
        return EPROTO;
    }
    if (version != kMsgVersion) {
        *error = fmt::format("the peer speaks handshake version {}, this plugin {}", version, kMsgVersion);
        return EPROTO;
    }
    if (type < static_cast<std::uint16_t>(MsgType::hello) || type > static_cast<std::uint16_t>(MsgType::reject)) {
        *error = fmt::format("unknown handshake message type {}", type);
        return EPROTO;
    }
    if (len > kMaxMsgBodyBytes) {
        *error = fmt::format("handshake message of {} bytes (at most {})", len, kMaxMsgBodyBytes);
        return EPROTO;
    }
    out->type = static_cast<MsgType>(type);
    out->body_bytes = len;
    return 0;
}

int decode_info(const std::uint8_t* body, std::size_t len, std::uint32_t ring_bytes, PeerInfo* out,
                std::string* error) {
    Reader r(body, len);
    std::uint8_t mark[4];
    r.bytes(mark, 4);
    PeerInfo info;
    info.nonce = r.be<std::uint64_t>();
    std::uint8_t addr[OMRC_DEVICE_ADDRESS_BYTES];
    r.bytes(addr, sizeof(addr));
    info.qpn = r.be<std::uint32_t>();
    info.conn_id = r.be<std::uint16_t>();
    const auto reserved = r.be<std::uint16_t>();
    info.psn = r.be<std::uint32_t>();
    info.ring_addr = r.be<std::uint64_t>();
    info.ring_rkey = r.be<std::uint32_t>();
    info.ring_bytes = r.be<std::uint32_t>();
    info.mtu = r.be<std::uint32_t>();
    auto bad = [&](std::string what) {
        *error = std::move(what);
        return EPROTO;
    };
    if (r.failed() || r.left() != 0) return bad(fmt::format("peer information of {} bytes", len));
    if (std::memcmp(mark, &kByteOrderMark, 4) != 0) return bad("the peer's byte order differs from ours");
    if (!address_from_bytes(addr, &info.address) || info.address.planes == 0)
        return bad("the peer's device address is malformed (planes, reserved bytes)");
    if (reserved != 0) return bad("reserved field not zero");
    if (info.qpn == 0) return bad("QPN 0");
    if (info.psn >= (1u << 24)) return bad(fmt::format("PSN {:#x} has more than 24 bits", info.psn));
    if (info.ring_addr == 0 || info.ring_rkey == 0) return bad("no ring address or key");
    if (info.ring_bytes != ring_bytes)
        return bad(fmt::format("ring of {} bytes, expected {}", info.ring_bytes, ring_bytes));
    if (info.mtu < 64 || info.mtu > 4096 || info.mtu % 64 != 0) return bad(fmt::format("MTU {}", info.mtu));
    *out = info;
    return 0;
}

void decode_reject(const std::uint8_t* body, std::size_t len, int* err, std::string* reason) {
    Reader r(body, len);
    *err = static_cast<int>(r.be<std::uint32_t>());
    const auto n = r.be<std::uint32_t>();
    if (r.failed() || n > r.left()) {
        *reason = "(no reason given)";
        return;
    }
    reason->assign(reinterpret_cast<const char*>(body + 8), n);
}

void encode_ring_info(const RingInfo& r, std::uint8_t out[kRingInfoBytes]) {
    std::memcpy(out, &kByteOrderMark, 4);
    put_be<std::uint16_t>(out + 4, kRingInfoVersion);
    put_be<std::uint16_t>(out + 6, 0);
    put_be<std::uint64_t>(out + 8, r.addr);
    put_be<std::uint32_t>(out + 16, r.rkey);
    put_be<std::uint32_t>(out + 20, r.bytes);
}

int decode_ring_info(const std::uint8_t* p, std::size_t len, std::uint32_t ring_bytes, RingInfo* out,
                     std::string* error) {
    auto bad = [&](std::string what) {
        *error = std::move(what);
        return EPROTO;
    };
    if (len != kRingInfoBytes) return bad(fmt::format("private data of {} bytes, expected {}", len, kRingInfoBytes));
    if (std::memcmp(p, &kByteOrderMark, 4) != 0) return bad("the peer's byte order differs from ours");
    if (const auto v = get_be<std::uint16_t>(p + 4); v != kRingInfoVersion)
        return bad(fmt::format("ring information version {}, this plugin speaks {}", v, kRingInfoVersion));
    if (get_be<std::uint16_t>(p + 6) != 0) return bad("reserved field not zero");
    RingInfo r;
    r.addr = get_be<std::uint64_t>(p + 8);
    r.rkey = get_be<std::uint32_t>(p + 16);
    r.bytes = get_be<std::uint32_t>(p + 20);
    if (r.addr == 0 || r.rkey == 0) return bad("no ring address or key");
    if (r.bytes != ring_bytes) return bad(fmt::format("ring of {} bytes, expected {}", r.bytes, ring_bytes));
    *out = r;
    return 0;
}

}  // namespace omrc::nccl
