// SPDX-License-Identifier: BSD-3-Clause
// omrc_device_address as bytes: the layout of the struct, with the two
// integers big-endian, so that hosts of either byte order can exchange it.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "omrc/omrc.h"

namespace {

constexpr std::size_t kPlanesAt = 108;
constexpr std::size_t kHostAt = 112;

void store_be32(std::uint8_t* p, std::uint32_t v) {
    p[0] = static_cast<std::uint8_t>(v >> 24);
    p[1] = static_cast<std::uint8_t>(v >> 16);
    p[2] = static_cast<std::uint8_t>(v >> 8);
    p[3] = static_cast<std::uint8_t>(v);
}

std::uint32_t load_be32(const std::uint8_t* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

int omrc_device_address_to_bytes(const struct omrc_device_address* a, uint8_t out[OMRC_DEVICE_ADDRESS_BYTES]) {
    if (a == nullptr || out == nullptr) return EINVAL;
    std::memcpy(out, a->addr, sizeof a->addr);
    std::memcpy(out + sizeof a->addr, a->macs, sizeof a->macs);
    std::memset(out + kPlanesAt - sizeof a->reserved, 0, sizeof a->reserved);
    store_be32(out + kPlanesAt, a->planes);
    store_be32(out + kHostAt, a->host);
    return 0;
}

int omrc_device_address_from_bytes(const uint8_t in[OMRC_DEVICE_ADDRESS_BYTES], struct omrc_device_address* out) {
    if (in == nullptr || out == nullptr) return EINVAL;
    const std::uint32_t planes = load_be32(in + kPlanesAt);
    if (planes > OMRC_MAX_PLANES || in[kPlanesAt - 2] != 0 || in[kPlanesAt - 1] != 0) return EINVAL;
    omrc_device_address a{};
    std::memcpy(a.addr, in, sizeof a.addr);
    std::memcpy(a.macs, in + sizeof a.addr, sizeof a.macs);
    a.planes = planes;
    a.host = load_be32(in + kHostAt);
    *out = a;
    return 0;
}
