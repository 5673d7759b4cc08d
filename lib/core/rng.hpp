// SPDX-License-Identifier: BSD-3-Clause
// The engine's own seeded generator (xoshiro256**, seeded by splitmix64).
// Each engine instance owns one; nothing reads a global RNG.
#pragma once

#include <cstdint>

namespace omrc::core {

class Rng {
public:
    explicit Rng(std::uint64_t seed) noexcept {
        for (auto& w : s_) {
            seed += 0x9E3779B97F4A7C15ull;
            std::uint64_t z = seed;
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            w = z ^ (z >> 31);
        }
    }
    std::uint64_t next() noexcept {
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
    /// Uniform in [0, bound) (bound > 0), without modulo bias worth caring about at 64 bits.
    std::uint64_t below(std::uint64_t bound) noexcept {
        return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
    }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    std::uint64_t s_[4];
};

}  // namespace omrc::core
