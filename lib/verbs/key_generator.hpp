// SPDX-License-Identifier: BSD-3-Clause
// Random 32-bit keys (rkeys, lkeys) from a ChaCha20 keystream (RFC 8439).
// rkeys are the only thing between a peer and our registered memory, so they
// come from a cryptographic generator, not from the engine's fast Rng:
// knowing earlier keys does not help to guess the next one.
#pragma once

#include <array>
#include <cstdint>

namespace omrc::verbs {

class KeyGenerator {
public:
    using Key = std::array<std::uint32_t, 8>;     ///< 256-bit ChaCha20 key, little-endian words
    using Nonce = std::array<std::uint32_t, 3>;   ///< 96-bit nonce
    using Block = std::array<std::uint32_t, 16>;

    explicit KeyGenerator(const Key& key) noexcept : key_(key) {}
    /// Deterministic generator (tests, simulation): the key is expanded from `seed`.
    [[nodiscard]] static KeyGenerator from_seed(std::uint64_t seed) noexcept;
    /// Generator keyed with 256 bits from std::random_device.
    [[nodiscard]] static KeyGenerator from_entropy();

    /// Next 32 bits of the keystream.
    std::uint32_t next_u32() noexcept;

    /// The ChaCha20 block function (RFC 8439 §2.3): 16 output words.
    static void block(const Key& key, std::uint32_t counter, const Nonce& nonce, Block& out) noexcept;

private:
    Key key_;
    Nonce nonce_{};
    std::uint32_t counter_ = 0;
    Block buf_{};
    unsigned pos_ = 16;  ///< next unused word of buf_ (16 = empty)
};

}  // namespace omrc::verbs
