// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include "support/hex.hpp"
#include "wire/endpoint_ext.hpp"

using namespace omrc::wire;
using omrc::test::hex;

TEST_CASE("ErthHdr golden", "[unit][wire]") {
    ErthHdr h;
    h.op = ErthOp::port_status_update;
    h.port_status_mask = 0xFE;
    h.seq = 7;
    const auto golden = hex("00 00 00 00 00 00 00 fe 00 00 00 00 00 00 00 07");
    CHECK(omrc::test::encoded(h) == golden);
    ErthHdr d;
    REQUIRE(ErthHdr::decode(golden, d) == WireError::ok);
    CHECK(d == h);
    for (std::size_t n = 0; n < ErthHdr::kSize; ++n)
        CHECK(ErthHdr::decode(std::span(golden).first(n), d) == WireError::truncated_ext);
}

TEST_CASE("ErthHdr::decode__unknown_op", "[unit][wire]") {
    auto b = hex("02 00 00 00 00 00 00 fe 00 00 00 00 00 00 00 07");
    ErthHdr d;
    CHECK(ErthHdr::decode(b, d) == WireError::bad_field);
    b[0] = 1;
    REQUIRE(ErthHdr::decode(b, d) == WireError::ok);
    CHECK(d.op == ErthOp::ev_probe);
}
