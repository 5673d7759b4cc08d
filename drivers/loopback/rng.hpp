// SPDX-License-Identifier: BSD-3-Clause
// Random streams of the loopback fabric's impairments. Every impairment of
// every link direction owns one stream (the project's core::Rng), seeded from
// (fabric seed, src, dst, plane, impairment kind), so traffic on one link or
// one impairment never shifts the pattern of another. There is no global
// generator anywhere in the driver.
#pragma once

#include <cstdint>

#include "core/rng.hpp"

namespace omrc::loopback {

using core::Rng;

/// Stream for one impairment `kind` of the link direction (src → dst, plane).
[[nodiscard]] constexpr Rng link_rng(std::uint64_t fabric_seed, std::uint32_t src, std::uint32_t dst,
                                     std::uint32_t plane, std::uint32_t kind) noexcept {
    std::uint64_t sm = fabric_seed;
    std::uint64_t h = core::splitmix64(sm);
    for (std::uint64_t v : {std::uint64_t{src}, std::uint64_t{dst}, std::uint64_t{plane}, std::uint64_t{kind}}) {
        sm = h ^ v;
        h = core::splitmix64(sm);
    }
    return Rng(h);
}

}  // namespace omrc::loopback
