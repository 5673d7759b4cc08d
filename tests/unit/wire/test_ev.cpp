// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <random>

#include "wire/ev.hpp"

using namespace omrc::wire;

TEST_CASE("ev packing__golden", "[unit][wire]") {
    CHECK(ev_to_udp_sport(0x1234ABCD) == 0x1234);
    CHECK(ev_to_flow_label(0x1234ABCD) == 0x0ABCD);
    CHECK(ev_from_wire(0x1234, 0xFABCD) == 0x1234ABCD);  // top flow-label nibble ignored
}

TEST_CASE("ev packing__roundtrip_random", "[unit][wire]") {
    std::mt19937 rng(3);
    for (int i = 0; i < 10000; ++i) {
        const std::uint32_t ev = rng();
        REQUIRE(ev_from_wire(ev_to_udp_sport(ev), ev_to_flow_label(ev)) == ev);
        REQUIRE(ev_to_flow_label(ev) <= 0xFFFFF);
    }
}
