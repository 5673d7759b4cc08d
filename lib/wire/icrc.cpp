// SPDX-License-Identifier: BSD-3-Clause
#include "wire/icrc.hpp"

#include <isa-l/crc.h>

#include <algorithm>
#include <array>

#include "wire/bytes.hpp"

namespace omrc::wire {
namespace {

constexpr std::size_t kIp = 40, kUdp = 8, kBth = 12;
constexpr std::size_t kMasked = 8 + kIp + kUdp + kBth;  // pseudo-LRH + masked headers

/// Copies IPv6+UDP+BTH into `buf` after 8 bytes of 0xFF and applies the masks.
void masked_prefix(const std::uint8_t* hdr, std::array<std::uint8_t, kMasked>& buf) noexcept {
    std::fill_n(buf.begin(), 8, std::uint8_t{0xFF});
    std::copy_n(hdr, kIp + kUdp + kBth, buf.begin() + 8);
    std::uint8_t* ip = buf.data() + 8;
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

}  // namespace

std::uint32_t icrc_compute(std::span<const std::uint8_t> headers,
                           std::span<const std::uint8_t> tail) noexcept {
    if (headers.size() < kIp + kUdp + kBth) return 0;
    std::array<std::uint8_t, kMasked> buf;
    masked_prefix(headers.data(), buf);
    std::uint32_t crc = crc_update(0, buf.data(), buf.size());
    crc = crc_update(crc, headers.data() + kIp + kUdp + kBth, headers.size() - (kIp + kUdp + kBth));
    return crc_update(crc, tail.data(), tail.size());
}

std::uint32_t icrc_extend(std::uint32_t crc, std::span<const std::uint8_t> more) noexcept {
    return crc_update(crc, more.data(), more.size());
}

std::uint32_t icrc_compute(std::span<const std::uint8_t> covered) noexcept {
    return icrc_compute(covered, {});
}

bool icrc_verify(std::span<const std::uint8_t> with_icrc) noexcept {
    if (with_icrc.size() < kIp + kUdp + kBth + kIcrcSize) return false;
    const auto covered = with_icrc.first(with_icrc.size() - kIcrcSize);
    return icrc_compute(covered) == load_le32(with_icrc.data() + covered.size());
}

}  // namespace omrc::wire
