// SPDX-License-Identifier: BSD-3-Clause
#include "verbs/key_generator.hpp"

#include <bit>
#include <random>

namespace omrc::verbs {

namespace {

void quarter_round(KeyGenerator::Block& x, int a, int b, int c, int d) noexcept {
    x[a] += x[b]; x[d] = std::rotl(x[d] ^ x[a], 16);
    x[c] += x[d]; x[b] = std::rotl(x[b] ^ x[c], 12);
    x[a] += x[b]; x[d] = std::rotl(x[d] ^ x[a], 8);
    x[c] += x[d]; x[b] = std::rotl(x[b] ^ x[c], 7);
}

std::uint64_t splitmix64(std::uint64_t& s) noexcept {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace

void KeyGenerator::block(const Key& key, std::uint32_t counter, const Nonce& nonce, Block& out) noexcept {
    const Block in{0x61707865, 0x3320646e, 0x79622d32, 0x6b206574,  // "expand 32-byte k"
                   key[0],     key[1],     key[2],     key[3],
                   key[4],     key[5],     key[6],     key[7],
                   counter,    nonce[0],   nonce[1],   nonce[2]};
    out = in;
    for (int i = 0; i < 10; ++i) {
        quarter_round(out, 0, 4, 8, 12);
        quarter_round(out, 1, 5, 9, 13);
        quarter_round(out, 2, 6, 10, 14);
        quarter_round(out, 3, 7, 11, 15);
        quarter_round(out, 0, 5, 10, 15);
        quarter_round(out, 1, 6, 11, 12);
        quarter_round(out, 2, 7, 8, 13);
        quarter_round(out, 3, 4, 9, 14);
    }
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += in[i];
}

KeyGenerator KeyGenerator::from_seed(std::uint64_t seed) noexcept {
    Key k{};
    std::uint64_t s = seed ^ 0x6f6d72632d6b6579ull;  // "omrc-key": independent of the engine's stream
    for (std::size_t i = 0; i < k.size(); i += 2) {
        const std::uint64_t v = splitmix64(s);
        k[i] = static_cast<std::uint32_t>(v);
        k[i + 1] = static_cast<std::uint32_t>(v >> 32);
    }
    return KeyGenerator(k);
}

KeyGenerator KeyGenerator::from_entropy() {
    std::random_device rd;
    Key k{};
    for (auto& w : k) w = static_cast<std::uint32_t>(rd());
    return KeyGenerator(k);
}

std::uint32_t KeyGenerator::next_u32() noexcept {
    if (pos_ == buf_.size()) {
        block(key_, counter_, nonce_, buf_);
        // 2^32 blocks per nonce; then the nonce moves on (never in practice).
        if (++counter_ == 0) ++nonce_[0];
        pos_ = 0;
    }
    return buf_[pos_++];
}

}  // namespace omrc::verbs
