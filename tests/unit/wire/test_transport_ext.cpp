// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include "support/hex.hpp"
#include "wire/transport_ext.hpp"

using namespace omrc::wire;
using omrc::test::hex;

namespace {
template <class H>
void check_roundtrip_and_truncation(const H& h, const std::vector<std::uint8_t>& golden) {
    CHECK(omrc::test::encoded(h) == golden);
    H d;
    REQUIRE(H::decode(golden, d) == WireError::ok);
    CHECK(d == h);
    for (std::size_t n = 0; n < H::kSize; ++n) CHECK(H::decode(std::span(golden).first(n), d) == WireError::truncated_ext);
    std::vector<std::uint8_t> small(H::kSize - 1);
    CHECK(h.encode(small) == WireError::buffer_too_small);
}
}  // namespace

TEST_CASE("MethHdr golden", "[unit][wire]") {
    check_roundtrip_and_truncation(MethHdr{0x0102, 0x0304}, hex("01 02 03 04"));
}

TEST_CASE("TsethHdr golden", "[unit][wire]") {
    TsethHdr h;
    h.tx_timestamp = 0x1234;
    h.tsr = true;
    h.type = 3;
    check_roundtrip_and_truncation(h, hex("12 34 80 03"));
}

TEST_CASE("RethHdr golden", "[unit][wire]") {
    check_roundtrip_and_truncation(RethHdr{0x0011223344556677ull, 0x89abcdef, 0x00100000},
                                   hex("00 11 22 33 44 55 66 77 89 ab cd ef 00 10 00 00"));
}

TEST_CASE("ImmDtHdr golden", "[unit][wire]") {
    check_roundtrip_and_truncation(ImmDtHdr{0xdeadbeef}, hex("de ad be ef"));
}

TEST_CASE("AethHdr golden", "[unit][wire]") {
    check_roundtrip_and_truncation(AethHdr{static_cast<std::uint8_t>(AethSyndrome::nak_remote_access), 0x000102},
                                   hex("62 00 01 02"));
    AethHdr h{0, 0x1000000};
    std::uint8_t out[4];
    CHECK(h.encode(out) == WireError::bad_field);
}
