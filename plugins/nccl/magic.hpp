// SPDX-License-Identifier: BSD-3-Clause
// Every object behind an opaque pointer the plugin hands NCCL starts with a
// 32-bit magic number that says what it is (comm.hpp, connect.cpp,
// net_device.cpp). magic_at reads it as bytes, so that checking a pointer of
// the wrong kind is well defined.
#pragma once

#include <cstdint>
#include <cstring>

namespace omrc::nccl {

/// The first four bytes of whatever `p` points to; 0 for NULL.
inline std::uint32_t magic_at(const void* p) noexcept {
    std::uint32_t m = 0;
    if (p != nullptr) std::memcpy(&m, p, sizeof(m));
    return m;
}

}  // namespace omrc::nccl
