// SPDX-License-Identifier: BSD-3-Clause
// The project's seeded generator: xoshiro256** seeded through SplitMix64.
// Each engine instance (and each loopback impairment stream) owns one;
// nothing reads a global RNG.
#pragma once

#include <cstdint>

namespace omrc::core {

/// SplitMix64 step: a bijective 64-bit mixer, used to derive seeds.
[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t& state) noexcept {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/// xoshiro256** (Blackman & Vigna): 256-bit state, period 2^256 − 1.
class Rng {
public:
    constexpr Rng() noexcept : Rng(0) {}
    /// Seeds the four state words from `seed` through SplitMix64 (never all zero).
    explicit constexpr Rng(std::uint64_t seed) noexcept {
        std::uint64_t sm = seed;
        for (auto& w : s_) w = splitmix64(sm);
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
    std::uint32_t next_u32() noexcept { return static_cast<std::uint32_t>(next() >> 32); }
    /// Uniform in [0, bound) (bound > 0), multiply-shift (bias ≤ bound / 2^64).
    std::uint64_t below(std::uint64_t bound) noexcept {
        return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
    }
    /// Uniform integer in [0, bound] inclusive.
    std::uint64_t below_or_equal(std::uint64_t bound) noexcept { return bound == UINT64_MAX ? next() : below(bound + 1); }
    /// Uniform in [0, 1) with 53 bits of resolution.
    double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    /// True with probability p (p ≤ 0: never, p ≥ 1: always). Draws exactly one value.
    bool bernoulli(double p) noexcept { return uniform() < p; }

private:
    static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    std::uint64_t s_[4]{};
};

}  // namespace omrc::core
