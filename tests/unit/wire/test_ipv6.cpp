// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <array>
#include <random>

#include "support/hex.hpp"
#include "wire/ipv6.hpp"

using namespace omrc::wire;
using omrc::test::hex;

namespace {
Ipv6Addr addr(std::uint8_t last) {
    Ipv6Addr a{0x20, 0x01, 0x0d, 0xb8};
    a[15] = last;
    return a;
}
}  // namespace

TEST_CASE("Ipv6Hdr::encode__golden", "[unit][wire]") {
    Ipv6Hdr h;
    h.set_dscp(26);
    h.flow_label = 0x0BEEF;
    h.payload_len = 0x30;
    h.next_header = kNextHeaderUdp;
    h.hop_limit = 64;
    h.src = addr(1);
    h.dst = addr(2);
    CHECK(omrc::test::encoded(h) ==
          hex("66 80 be ef 00 30 11 40 20010db8000000000000000000000001 20010db8000000000000000000000002"));
    CHECK(h.dscp() == 26);
    CHECK(h.ecn() == 0);
    h.set_ecn(3);
    CHECK(h.traffic_class == 0x6B);
    CHECK(h.dscp() == 26);
}

TEST_CASE("Ipv6Hdr::encode__flow_label_over_20_bits", "[unit][wire]") {
    Ipv6Hdr h;
    h.flow_label = 0x100000;
    std::uint8_t out[40];
    CHECK(h.encode(out) == WireError::bad_field);
}

TEST_CASE("Ipv6Hdr::decode__bad_version_and_truncation", "[unit][wire]") {
    auto b = hex("66 80 be ef 00 30 11 40 20010db8000000000000000000000001 20010db8000000000000000000000002");
    Ipv6Hdr h;
    for (std::size_t n = 0; n < Ipv6Hdr::kSize; ++n)
        CHECK(Ipv6Hdr::decode(std::span(b).first(n), h) == WireError::truncated_ipv6);
    b[0] = 0x46;
    CHECK(Ipv6Hdr::decode(b, h) == WireError::bad_ip_version);
}

TEST_CASE("Ipv6Hdr::decode__roundtrip_random", "[unit][wire]") {
    std::mt19937_64 rng(42);
    for (int i = 0; i < 1000; ++i) {
        Ipv6Hdr h;
        h.traffic_class = static_cast<std::uint8_t>(rng());
        h.flow_label = static_cast<std::uint32_t>(rng() & 0xFFFFF);
        h.payload_len = static_cast<std::uint16_t>(rng());
        h.next_header = static_cast<std::uint8_t>(rng());
        h.hop_limit = static_cast<std::uint8_t>(rng());
        for (auto& b : h.src) b = static_cast<std::uint8_t>(rng());
        for (auto& b : h.dst) b = static_cast<std::uint8_t>(rng());
        Ipv6Hdr d;
        REQUIRE(Ipv6Hdr::decode(omrc::test::encoded(h), d) == WireError::ok);
        REQUIRE(d == h);
    }
}

TEST_CASE("Ipv6Hdr::store_traffic_class__in_place_edits_keep_the_other_fields", "[unit][wire]") {
    Ipv6Hdr h;
    h.traffic_class = 0xA6;  // DSCP 41, ECN 2 (ECT(0))
    h.flow_label = 0xFEDCB;
    h.payload_len = 64;
    std::array<std::uint8_t, Ipv6Hdr::kSize> b{};
    REQUIRE(h.encode(b) == WireError::ok);
    CHECK(Ipv6Hdr::load_traffic_class(b.data()) == 0xA6);
    Ipv6Hdr::store_dscp(b.data(), 0x12);
    CHECK(Ipv6Hdr::load_traffic_class(b.data()) == ((0x12 << 2) | 2));
    CHECK(Ipv6Hdr::mark_ce(b.data()));
    CHECK((Ipv6Hdr::load_traffic_class(b.data()) & 3) == Ipv6Hdr::kEcnCe);
    Ipv6Hdr back;
    REQUIRE(Ipv6Hdr::decode(b, back) == WireError::ok);
    CHECK(back.dscp() == 0x12);
    CHECK(back.flow_label == 0xFEDCB);  // the nibble beside the traffic class is untouched
    CHECK(back.payload_len == 64);
    // Not ECN-capable: a switch leaves it unmarked.
    Ipv6Hdr::store_ecn(b.data(), Ipv6Hdr::kEcnNotEct);
    CHECK_FALSE(Ipv6Hdr::mark_ce(b.data()));
    CHECK((Ipv6Hdr::load_traffic_class(b.data()) & 3) == Ipv6Hdr::kEcnNotEct);
}
