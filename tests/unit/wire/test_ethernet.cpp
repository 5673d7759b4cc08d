// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include "support/hex.hpp"
#include "wire/ethernet.hpp"

using namespace omrc::wire;
using omrc::test::hex;

TEST_CASE("EthHdr::encode__golden", "[unit][wire]") {
    EthHdr h;
    h.dst = {0x02, 0, 0, 0, 0, 0x02};
    h.src = {0x02, 0, 0, 0, 0, 0x01};
    CHECK(omrc::test::encoded(h) == hex("02 00 00 00 00 02 02 00 00 00 00 01 86 dd"));
}

TEST_CASE("EthHdr::decode__roundtrip_and_truncation", "[unit][wire]") {
    const auto bytes = hex("02 00 00 00 00 02 02 00 00 00 00 01 86 dd");
    EthHdr h;
    REQUIRE(EthHdr::decode(bytes, h) == WireError::ok);
    CHECK(h.ethertype == kEthertypeIpv6);
    CHECK(omrc::test::encoded(h) == bytes);
    for (std::size_t n = 0; n < EthHdr::kSize; ++n)
        CHECK(EthHdr::decode(std::span(bytes).first(n), h) == WireError::truncated_eth);
    std::uint8_t small[13];
    CHECK(h.encode(small) == WireError::buffer_too_small);
}
