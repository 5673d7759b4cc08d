// SPDX-License-Identifier: BSD-3-Clause
#include "wire/icrc.hpp"

#include <isa-l/crc.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "wire/bytes.hpp"

namespace omrc::wire {
namespace {

constexpr std::size_t kIp = 40, kUdp = 8, kBth = 12;
constexpr std::size_t kMasked = 8 + kIp + kUdp + kBth;  // pseudo-LRH + masked headers

/// Copies IPv6+UDP+BTH into `buf` after 8 bytes of 0xFF and applies the masks.
/// `buf` holds kMasked bytes.
void masked_prefix(const std::uint8_t* hdr, std::uint8_t* buf) noexcept {
    std::memset(buf, 0xFF, 8);
    std::memcpy(buf + 8, hdr, kIp + kUdp + kBth);
    std::uint8_t* ip = buf + 8;
    ip[0] |= 0x0F;  // traffic class high nibble
    ip[1] = 0xFF;   // traffic class low nibble + flow label
    ip[2] = 0xFF;
    ip[3] = 0xFF;
    ip[7] = 0xFF;   // hop limit
    std::uint8_t* udp = ip + kIp;
    udp[6] = 0xFF;  // checksum
    udp[7] = 0xFF;
    std::uint8_t* bth = udp + kUdp;
    bth[4] = 0xFF;  // resv8
}

std::uint32_t crc_update(std::uint32_t crc, const std::uint8_t* p, std::size_t n) noexcept {
    // crc32_gzip_refl takes uint64_t lengths and a non-const pointer in older ISA-L headers.
    return n == 0 ? crc : crc32_gzip_refl(crc, const_cast<std::uint8_t*>(p), n);
}

/// Small covered ranges are copied whole behind the masked prefix so the CRC
/// runs in one call: each ISA-L call has a fixed cost (~18 ns here) that
/// dominates below a few hundred bytes.
constexpr std::size_t kOneCallBytes = 256;

/// Reflected CRC-32 table for the few bytes handed over without ISA-L
/// (zero pad after a large payload).
constexpr std::array<std::uint32_t, 256> kCrcTable = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        t[i] = c;
    }
    return t;
}();

std::uint32_t crc_zeros(std::uint32_t crc, std::size_t n) noexcept {
    std::uint32_t state = ~crc;
    for (std::size_t i = 0; i < n; ++i) state = kCrcTable[state & 0xFF] ^ (state >> 8);
    return ~state;
}

}  // namespace

std::uint32_t icrc_compute_pieces(std::span<const std::uint8_t> headers,
                                  std::span<const std::span<const std::uint8_t>> pieces,
                                  std::size_t zero_pad) noexcept {
    if (headers.size() < kIp + kUdp + kBth) return 0;
    alignas(64) std::array<std::uint8_t, kMasked + 160 + kOneCallBytes> buf;
    masked_prefix(headers.data(), buf.data());
    std::size_t n = kMasked;
    const std::size_t rest = headers.size() - (kIp + kUdp + kBth);
    std::size_t payload = zero_pad;
    for (const auto& p : pieces) payload += p.size();
    if (rest <= 160 && payload <= kOneCallBytes) {
        // Everything in one buffer, one call.
        std::memcpy(buf.data() + n, headers.data() + kIp + kUdp + kBth, rest);
        n += rest;
        for (const auto& p : pieces) {
            if (!p.empty()) std::memcpy(buf.data() + n, p.data(), p.size());
            n += p.size();
        }
        std::memset(buf.data() + n, 0, zero_pad);
        return crc_update(0, buf.data(), n + zero_pad);
    }
    std::uint32_t crc;
    if (rest <= 160) {
        std::memcpy(buf.data() + n, headers.data() + kIp + kUdp + kBth, rest);
        crc = crc_update(0, buf.data(), n + rest);
    } else {
        crc = crc_update(crc_update(0, buf.data(), n), headers.data() + kIp + kUdp + kBth, rest);
    }
    for (const auto& p : pieces) crc = crc_update(crc, p.data(), p.size());
    return crc_zeros(crc, zero_pad);
}

std::uint32_t icrc_compute(std::span<const std::uint8_t> headers,
                           std::span<const std::uint8_t> tail) noexcept {
    const std::span<const std::uint8_t> one[1] = {tail};
    return icrc_compute_pieces(headers, one, 0);
}

std::uint32_t icrc_extend(std::uint32_t crc, std::span<const std::uint8_t> more) noexcept {
    return crc_update(crc, more.data(), more.size());
}

std::uint32_t icrc_compute(std::span<const std::uint8_t> covered) noexcept {
    if (covered.size() < kIp + kUdp + kBth) return 0;
    return icrc_compute(covered.first(kIp + kUdp + kBth), covered.subspan(kIp + kUdp + kBth));
}

bool icrc_verify(std::span<const std::uint8_t> with_icrc) noexcept {
    if (with_icrc.size() < kIp + kUdp + kBth + kIcrcSize) return false;
    const auto covered = with_icrc.first(with_icrc.size() - kIcrcSize);
    return icrc_compute(covered) == load_le32(with_icrc.data() + covered.size());
}

}  // namespace omrc::wire
