// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include "support/hex.hpp"
#include "wire/udp.hpp"

using namespace omrc::wire;
using omrc::test::hex;

TEST_CASE("UdpHdr::encode__golden", "[unit][wire]") {
    UdpHdr h;
    h.src_port = 0xC123;
    h.length = 0x40;
    CHECK(omrc::test::encoded(h) == hex("c1 23 12 b7 00 40 00 00"));
}

TEST_CASE("UdpHdr::decode__roundtrip_and_truncation", "[unit][wire]") {
    const auto b = hex("c1 23 12 b7 00 40 ab cd");
    UdpHdr h;
    REQUIRE(UdpHdr::decode(b, h) == WireError::ok);
    CHECK(h.dst_port == kRoceUdpPort);
    CHECK(h.checksum == 0xABCD);
    CHECK(omrc::test::encoded(h) == b);
    for (std::size_t n = 0; n < UdpHdr::kSize; ++n)
        CHECK(UdpHdr::decode(std::span(b).first(n), h) == WireError::truncated_udp);
}
