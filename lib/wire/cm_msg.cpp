// SPDX-License-Identifier: BSD-3-Clause
#include "wire/cm_msg.hpp"

#include <cstring>

namespace omrc::wire {

namespace {

constexpr std::size_t kTokenSize = 16;
constexpr std::size_t kRejFixed = 4;  // reason, private length, reserved

[[nodiscard]] constexpr bool has_params(CmType t) noexcept { return t == CmType::req || t == CmType::rep; }

[[nodiscard]] constexpr std::size_t macs_size(std::size_t planes) noexcept { return (planes * 6 + 3) / 4 * 4; }

[[nodiscard]] constexpr bool known_type(std::uint8_t t) noexcept { return t >= 0x01 && t <= 0x07; }

[[nodiscard]] bool params_in_range(const CmMessage& m) noexcept {
    return m.qpn <= 0xFFFFFF && m.psn <= 0xFFFFFF && m.mtu >= 64 && m.mtu <= 4096 && m.mtu % 64 == 0 &&
           m.planes >= 1 && m.planes <= kCmMaxPlanes && m.encryption <= 2 && m.key_select <= 1;
}

}  // namespace

std::string_view to_string(CmType t) noexcept {
    switch (t) {
        case CmType::req: return "REQ";
        case CmType::cookie: return "COOKIE";
        case CmType::rep: return "REP";
        case CmType::rtu: return "RTU";
        case CmType::rej: return "REJ";
        case CmType::dreq: return "DREQ";
        case CmType::drep: return "DREP";
    }
    return "?";
}

std::string_view to_string(CmReject r) noexcept {
    switch (r) {
        case CmReject::none: return "none";
        case CmReject::no_listener: return "no_listener";
        case CmReject::consumer: return "consumer";
        case CmReject::busy: return "busy";
        case CmReject::peer_limit: return "peer_limit";
        case CmReject::no_resources: return "no_resources";
        case CmReject::security_required: return "security_required";
        case CmReject::security_unavailable: return "security_unavailable";
        case CmReject::key_mismatch: return "key_mismatch";
        case CmReject::stale: return "stale";
        case CmReject::timeout: return "timeout";
        case CmReject::invalid: return "invalid";
    }
    return "unknown";
}

std::size_t CmMessage::wire_size() const noexcept {
    switch (type) {
        case CmType::req:
        case CmType::rep: return kCmHeaderSize + kCmParamsSize + macs_size(planes) + private_len;
        case CmType::cookie: return kCmHeaderSize + kTokenSize;
        case CmType::rej: return kCmHeaderSize + kRejFixed + private_len;
        case CmType::dreq: return kCmHeaderSize + kCmDreqBodySize;
        case CmType::rtu:
        case CmType::drep: return kCmHeaderSize;
    }
    return kCmHeaderSize;
}

WireError CmMessage::encode(std::span<std::uint8_t> out, std::size_t& len) const noexcept {
    if (!known_type(static_cast<std::uint8_t>(type)) || src_comm_id == 0 || private_len > kCmPrivateMax)
        return WireError::bad_field;
    if (has_params(type) && !params_in_range(*this)) return WireError::bad_field;
    if (type == CmType::dreq && rcv_psn > 0xFFFFFF) return WireError::bad_field;
    len = wire_size();
    if (out.size() < len) return WireError::buffer_too_small;
    std::memset(out.data(), 0, len);
    std::uint8_t* p = out.data();
    p[0] = kCmVersion;
    p[1] = static_cast<std::uint8_t>(type);
    store_be16(p + 2, static_cast<std::uint16_t>(len));
    store_be32(p + 4, src_comm_id);
    store_be32(p + 8, dst_comm_id);
    store_be16(p + 12, attempt);
    std::uint8_t* b = p + kCmHeaderSize;
    switch (type) {
        case CmType::req:
        case CmType::rep: {
            store_be64(b + 0, service_id);
            store_be32(b + 8, qpn);
            store_be32(b + 12, psn);
            store_be16(b + 16, mtu);
            b[18] = planes;
            b[19] = encryption;
            b[20] = key_select;
            b[21] = private_len;
            store_be16(b + 22, conn_id);
            store_be32(b + 24, host);
            std::memcpy(b + 32, key_nonce.data(), 16);
            std::memcpy(b + 48, cookie.data(), 16);
            std::memcpy(b + 64, key_check.data(), 16);
            std::uint8_t* m = b + kCmParamsSize;
            for (std::size_t i = 0; i < planes; ++i) std::memcpy(m + 6 * i, macs[i].data(), 6);
            std::memcpy(m + macs_size(planes), private_data.data(), private_len);
            break;
        }
        case CmType::cookie: std::memcpy(b, cookie.data(), kTokenSize); break;
        case CmType::rej:
            store_be16(b, static_cast<std::uint16_t>(reason));
            b[2] = private_len;
            std::memcpy(b + kRejFixed, private_data.data(), private_len);
            break;
        case CmType::dreq: store_be32(b, has_rcv_psn ? 0x01000000u | rcv_psn : 0u); break;
        case CmType::rtu:
        case CmType::drep: break;
    }
    return WireError::ok;
}

WireError CmMessage::decode(std::span<const std::uint8_t> in, CmMessage& out) noexcept {
    out = CmMessage{};
    if (in.size() < kCmHeaderSize) return WireError::truncated_ext;
    const std::uint8_t* p = in.data();
    if (p[0] != kCmVersion || !known_type(p[1])) return WireError::bad_field;
    const std::size_t len = load_be16(p + 2);
    if (len < kCmHeaderSize) return WireError::bad_field;
    if (len > in.size()) return WireError::truncated_ext;
    if (in.size() - len > 3) return WireError::bad_field;  // more than the frame's pad after it
    out.type = static_cast<CmType>(p[1]);
    out.src_comm_id = load_be32(p + 4);
    out.dst_comm_id = load_be32(p + 8);
    out.attempt = load_be16(p + 12);
    if (out.src_comm_id == 0) return WireError::bad_field;
    const std::uint8_t* b = p + kCmHeaderSize;
    const std::size_t body = len - kCmHeaderSize;
    switch (out.type) {
        case CmType::req:
        case CmType::rep: {
            if (body < kCmParamsSize) return WireError::truncated_ext;
            out.service_id = load_be64(b + 0);
            out.qpn = load_be32(b + 8);
            out.psn = load_be32(b + 12);
            out.mtu = load_be16(b + 16);
            out.planes = b[18];
            out.encryption = b[19];
            out.key_select = b[20];
            out.private_len = b[21];
            out.conn_id = load_be16(b + 22);
            out.host = load_be32(b + 24);
            std::memcpy(out.key_nonce.data(), b + 32, 16);
            std::memcpy(out.cookie.data(), b + 48, 16);
            std::memcpy(out.key_check.data(), b + 64, 16);
            if (!params_in_range(out) || out.private_len > kCmPrivateMax) return WireError::bad_field;
            if (body != kCmParamsSize + macs_size(out.planes) + out.private_len) return WireError::bad_field;
            const std::uint8_t* m = b + kCmParamsSize;
            for (std::size_t i = 0; i < out.planes; ++i) std::memcpy(out.macs[i].data(), m + 6 * i, 6);
            std::memcpy(out.private_data.data(), m + macs_size(out.planes), out.private_len);
            return WireError::ok;
        }
        case CmType::cookie:
            if (body != kTokenSize) return WireError::bad_field;
            std::memcpy(out.cookie.data(), b, kTokenSize);
            return WireError::ok;
        case CmType::rej: {
            if (body < kRejFixed) return WireError::bad_field;
            out.reason = static_cast<CmReject>(load_be16(b));
            out.private_len = b[2];
            if (out.private_len > kCmPrivateMax || body != kRejFixed + out.private_len) return WireError::bad_field;
            std::memcpy(out.private_data.data(), b + kRejFixed, out.private_len);
            return WireError::ok;
        }
        case CmType::dreq: {
            if (body != kCmDreqBodySize) return WireError::bad_field;
            const std::uint32_t v = load_be32(b);
            const std::uint32_t flags = v >> 24;
            if ((flags & ~1u) != 0) return WireError::bad_field;  // reserved bits
            out.has_rcv_psn = (flags & 1u) != 0;
            if (!out.has_rcv_psn && (v & 0xFFFFFF) != 0) return WireError::bad_field;
            out.rcv_psn = v & 0xFFFFFF;
            return WireError::ok;
        }
        case CmType::rtu:
        case CmType::drep: return body == 0 ? WireError::ok : WireError::bad_field;
    }
    return WireError::bad_field;
}

}  // namespace omrc::wire
