// SPDX-License-Identifier: BSD-3-Clause
// verbs/key_generator: the ChaCha20 block function against RFC 8439, and the
// keystream's determinism and independence per seed.
#include <catch2/catch.hpp>

#include <set>

#include "verbs/key_generator.hpp"

using omrc::verbs::KeyGenerator;

TEST_CASE("block__rfc8439_2_3_2", "[unit][verbs]") {
    KeyGenerator::Key key{};
    for (std::uint32_t i = 0; i < 8; ++i) {
        const std::uint32_t b = 4 * i;
        key[i] = b | (b + 1) << 8 | (b + 2) << 16 | (b + 3) << 24;  // bytes 00 01 02 .. 1f
    }
    const KeyGenerator::Nonce nonce{0x09000000, 0x4a000000, 0x00000000};
    KeyGenerator::Block out{};
    KeyGenerator::block(key, 1, nonce, out);
    const KeyGenerator::Block expected{0xe4e7f110, 0x15593bd1, 0x1fdd0f50, 0xc47120a3, 0xc7f4d1c7, 0x0368c033,
                                       0x9aaa2204, 0x4e6cd4c3, 0x466482d2, 0x09aa9f07, 0x05d7c214, 0xa2028bd9,
                                       0xd19c12b5, 0xb94e16de, 0xe883d0cb, 0x4e3c50a2};
    CHECK(out == expected);
}

TEST_CASE("from_seed__deterministic_per_seed", "[unit][verbs]") {
    auto a = KeyGenerator::from_seed(7), b = KeyGenerator::from_seed(7), c = KeyGenerator::from_seed(8);
    bool differs = false;
    for (int i = 0; i < 64; ++i) {
        const std::uint32_t x = a.next_u32();
        CHECK(x == b.next_u32());
        differs |= x != c.next_u32();
    }
    CHECK(differs);
}

TEST_CASE("next_u32__crosses_blocks_without_repeating", "[unit][verbs]") {
    auto g = KeyGenerator::from_seed(1);
    std::set<std::uint32_t> seen;
    for (int i = 0; i < 16 * 64; ++i) seen.insert(g.next_u32());
    CHECK(seen.size() >= 16 * 64 - 1);  // a 32-bit collision among 1024 draws is possible, not two
}

TEST_CASE("from_entropy__two_generators_differ", "[unit][verbs]") {
    auto a = KeyGenerator::from_entropy(), b = KeyGenerator::from_entropy();
    bool differs = false;
    for (int i = 0; i < 4; ++i) differs |= a.next_u32() != b.next_u32();
    CHECK(differs);
}
