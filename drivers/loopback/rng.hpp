// SPDX-License-Identifier: BSD-3-Clause
// Deterministic pseudo-random generators for the loopback fabric's
// impairments. Every impairment of every link direction owns one stream,
// seeded from (fabric seed, src, dst, plane, impairment kind), so traffic on
// one link or one impairment never shifts the pattern of another. There is no
// global generator anywhere in the driver.
#pragma once

#include <cstdint>

namespace omrc::loopback {

/// SplitMix64 step: a bijective 64-bit mixer, used to derive seeds.
[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t& state) noexcept {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/// xoshiro256** (Blackman & Vigna): 256-bit state, period 2^256 - 1.
class Rng {
public:
    constexpr Rng() noexcept : Rng(0) {}
    /// Seeds the four state words from `seed` through SplitMix64 (never all zero).
    explicit constexpr Rng(std::uint64_t seed) noexcept {
        std::uint64_t sm = seed;
        for (auto& w : s_) w = splitmix64(sm);
    }

    /// Stream for one impairment `kind` of the link direction (src → dst, plane).
    [[nodiscard]] static constexpr Rng for_link(std::uint64_t fabric_seed, std::uint32_t src, std::uint32_t dst,
                                                std::uint32_t plane, std::uint32_t kind) noexcept {
        std::uint64_t sm = fabric_seed;
        std::uint64_t h = splitmix64(sm);
        for (std::uint64_t v : {std::uint64_t{src}, std::uint64_t{dst}, std::uint64_t{plane}, std::uint64_t{kind}}) {
            sm = h ^ v;
            h = splitmix64(sm);
        }
        return Rng(h);
    }

    constexpr std::uint64_t next() noexcept {
        const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    /// Uniform in [0, 1) with 53 bits of resolution.
    double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

    /// True with probability p (p ≤ 0: never, p ≥ 1: always). Draws exactly one value.
    bool bernoulli(double p) noexcept { return uniform() < p; }

    /// Uniform integer in [0, bound] inclusive (multiply-shift; bias ≤ bound / 2^64).
    std::uint64_t below_or_equal(std::uint64_t bound) noexcept {
        if (bound == UINT64_MAX) return next();
        return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * (bound + 1)) >> 64);
    }

private:
    static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    std::uint64_t s_[4]{};
};

}  // namespace omrc::loopback
