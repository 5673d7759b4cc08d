// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <isa-l/crc.h>

#include "support/hex.hpp"
#include "wire/bytes.hpp"
#include "wire/icrc.hpp"

using namespace omrc::wire;
using omrc::test::hex;

namespace {
// IPv6 .. payload of a plain WRITE_ONLY frame; the ICRC below was computed
// independently (Python zlib.crc32 over the masked bytes, docs/PROTOCOL.md §5).
const char* kCovered =
    "66 80 ab cd 00 34 11 40 20010db8000000000000000000000001 20010db8000000000000000000000002"
    " 10 01 12 b7 00 34 00 00"
    " ca 00 ff ff 00 00 00 11 80 00 00 05"
    " 00 00 00 01"
    " 00 00 00 00 00 00 10 00 11 22 33 44 00 00 00 08"
    " 01 02 03 04 05 06 07 08";
constexpr std::uint32_t kIcrc = 0xd54301de;
}  // namespace

TEST_CASE("isa-l crc32_gzip_refl is the IEEE CRC-32", "[unit][wire]") {
    std::uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
    CHECK(crc32_gzip_refl(0, check, sizeof check) == 0xCBF43926u);
}

TEST_CASE("icrc_compute__golden", "[unit][wire]") {
    const auto b = hex(kCovered);
    CHECK(icrc_compute(b) == kIcrc);
}

TEST_CASE("icrc_compute__two_pieces_equal_one", "[unit][wire]") {
    const auto b = hex(kCovered);
    for (std::size_t cut = 60; cut <= b.size(); ++cut)
        CHECK(icrc_compute(std::span(b).first(cut), std::span(b).subspan(cut)) == kIcrc);
}

TEST_CASE("icrc_compute__masked_fields_do_not_count", "[unit][wire]") {
    auto b = hex(kCovered);
    b[0] = 0x6F;   // traffic class high nibble
    b[1] = 0x12;   // traffic class low nibble + flow label
    b[3] = 0x00;   // flow label
    b[7] = 1;      // hop limit
    b[46] = 0xAB;  // UDP checksum
    b[47] = 0xCD;
    b[52] = 0x7E;  // BTH resv8
    CHECK(icrc_compute(b) == kIcrc);
}

TEST_CASE("icrc_verify__detects_every_unmasked_bit_flip", "[unit][wire]") {
    auto b = hex(kCovered);
    b.resize(b.size() + 4);
    store_le32(b.data() + b.size() - 4, kIcrc);
    REQUIRE(icrc_verify(b));
    auto masked = [](std::size_t byte, int bit) {
        if (byte == 0) return bit < 4;  // low nibble of byte 0 = traffic class high nibble
        return byte == 1 || byte == 2 || byte == 3 || byte == 7 || byte == 46 || byte == 47 || byte == 52;
    };
    int flips = 0;
    for (std::size_t byte = 0; byte < b.size(); ++byte) {
        for (int bit = 0; bit < 8; ++bit) {
            b[byte] ^= static_cast<std::uint8_t>(1u << bit);
            if (masked(byte, bit)) {
                CHECK(icrc_verify(b));
            } else {
                ++flips;
                if (icrc_verify(b)) FAIL("bit flip undetected at byte " << byte << " bit " << bit);
            }
            b[byte] ^= static_cast<std::uint8_t>(1u << bit);
        }
    }
    CHECK(flips == 92 * 8 - 60);  // every bit of the 92 covered bytes but the 60 masked ones
}

TEST_CASE("icrc_verify__short_input", "[unit][wire]") {
    std::vector<std::uint8_t> b(63);
    CHECK_FALSE(icrc_verify(b));
    CHECK(icrc_compute(std::span(b).first(59)) == 0);
}
