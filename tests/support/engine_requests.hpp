// SPDX-License-Identifier: BSD-3-Clause
// Engine-level work requests for the core tests: random payloads, SENDs
// from one buffer, receives over one or several SGEs, and the fixed-window
// attributes the SEND, READ and SRQ tests share.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/config.hpp"
#include "core/types.hpp"

namespace omrc::test {

/// NSCC out of the way (a fixed 2 MiB window) and 64 EVs.
inline core::QpAttr fixed_window_attr() {
    core::QpAttr a;
    a.cc.algorithm = core::CcAlgorithm::fixed;
    a.cc.fixed_window_bytes = 2u << 20;
    a.evs = 64;
    return a;
}

inline std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937_64 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

/// A SEND of [src, src + len) (no SGE for len 0).
inline core::SendRequest send_wr(std::uint64_t wr_id, const std::uint8_t* src, std::uint32_t len) {
    core::SendRequest r;
    r.wr_id = wr_id;
    r.is_send = true;
    r.sge_count = len == 0 ? 0 : 1;
    r.sges[0] = {src, len};
    return r;
}

/// A receive of `len` bytes at `buf` over `pieces` equal SGEs (the last takes the rest), lkey 0x77.
inline core::RecvRequest recv_wr(std::uint64_t wr_id, std::uint8_t* buf, std::uint32_t len, std::uint32_t pieces = 1) {
    core::RecvRequest r;
    r.wr_id = wr_id;
    r.length = len;
    r.sge_count = static_cast<std::uint8_t>(pieces);
    const std::uint32_t each = len / pieces;
    for (std::uint32_t i = 0; i < pieces; ++i)
        r.sges[i] = {buf == nullptr ? nullptr : buf + i * each, i + 1 == pieces ? len - i * each : each, 0x77};
    return r;
}

}  // namespace omrc::test
