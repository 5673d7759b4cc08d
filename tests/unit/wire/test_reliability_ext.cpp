// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <random>

#include "support/hex.hpp"
#include "wire/reliability_ext.hpp"

using namespace omrc::wire;
using omrc::test::hex;

namespace {
template <class H>
void check_roundtrip_and_truncation(const H& h, const std::vector<std::uint8_t>& golden) {
    CHECK(omrc::test::to_hex(omrc::test::encoded(h)) == omrc::test::to_hex(golden));
    H d;
    REQUIRE(H::decode(golden, d) == WireError::ok);
    CHECK(d == h);
    for (std::size_t n = 0; n < H::kSize; ++n) CHECK(H::decode(std::span(golden).first(n), d) == WireError::truncated_ext);
}
}  // namespace

TEST_CASE("SethHdr golden", "[unit][wire]") {
    SethHdr h;
    h.skip = SackSkip::always_skip;
    h.flags = kSackFlagProbeResponse;
    h.ack_psn_offset = -2;
    h.ev = 0x12345678;
    h.src_conn_id = 0x1111;
    h.dst_conn_id = 0x2222;
    h.cack_psn = 0xFFFFFE;
    h.cc_type = 1;
    h.cc_flags = 2;
    h.mpr = 8;
    h.sack_offset = 1;
    h.bitmap = 0x8000000000000001ull;
    check_roundtrip_and_truncation(
        h, hex("a0 00 ff fe 12 34 56 78 11 11 22 22 00 ff ff fe 12 08 00 01 80 00 00 00 00 00 00 01"));
}

TEST_CASE("SethHdr::decode__reserved_skip_value", "[unit][wire]") {
    auto b = hex("c0 00 ff fe 12 34 56 78 11 11 22 22 00 ff ff fe 12 08 00 01 80 00 00 00 00 00 00 01");
    SethHdr h;
    CHECK(SethHdr::decode(b, h) == WireError::bad_field);
}

TEST_CASE("SethHdr::encode__out_of_range", "[unit][wire]") {
    std::uint8_t out[28];
    SethHdr h;
    h.cack_psn = 0x1000000;
    CHECK(h.encode(out) == WireError::bad_field);
    h.cack_psn = 0;
    h.flags = 0x4000;  // would overlap M
    CHECK(h.encode(out) == WireError::bad_field);
}

TEST_CASE("CcStateHdr golden", "[unit][wire]") {
    CcStateHdr h;
    h.ts_echo = 0xBEEF;
    h.ooo_count = 0x1234;
    h.restore_cwnd = true;
    h.penalty = 100;
    h.rcvd_bytes = 0x0A0B0C;
    check_roundtrip_and_truncation(h, hex("be ef 24 69 c8 0a 0b 0c"));
    h.penalty = 128;
    std::uint8_t out[8];
    CHECK(h.encode(out) == WireError::bad_field);
}

TEST_CASE("NethHdr golden", "[unit][wire]") {
    NethHdr h;
    h.reason = static_cast<std::uint8_t>(NackReason::trimmed);
    h.ts_echo = 0x0102;
    h.ev = 0xA0B0C0D0;
    h.src_conn_id = 1;
    h.dst_conn_id = 2;
    h.nack_psn = 0x10;
    h.cack_psn = 0x0F;
    check_roundtrip_and_truncation(h, hex("01 00 01 02 a0 b0 c0 d0 00 01 00 02 00 00 00 10 00 00 00 0f"));
}

TEST_CASE("PethHdr golden", "[unit][wire]") {
    PethHdr h;
    h.probe_id = 0x01020304;
    h.ev = 0x10010000;
    h.src_conn_id = 0x0a0b;
    h.dst_conn_id = 0x0c0d;
    h.tx_timestamp = 0x7fff;
    check_roundtrip_and_truncation(h, hex("01 02 03 04 10 01 00 00 0a 0b 0c 0d 7f ff 00 00"));
}

TEST_CASE("SethHdr::decode__roundtrip_random", "[unit][wire]") {
    std::mt19937_64 rng(99);
    for (int i = 0; i < 2000; ++i) {
        SethHdr h;
        h.skip = static_cast<SackSkip>(rng() % 3);
        h.flags = static_cast<std::uint16_t>(rng() & 0x3FFF);
        h.ack_psn_offset = static_cast<std::int16_t>(rng());
        h.ev = static_cast<std::uint32_t>(rng());
        h.src_conn_id = static_cast<std::uint16_t>(rng());
        h.dst_conn_id = static_cast<std::uint16_t>(rng());
        h.cack_psn = rng() & 0xFFFFFF;
        h.cc_type = rng() & 15;
        h.cc_flags = rng() & 15;
        h.mpr = static_cast<std::uint8_t>(rng());
        h.sack_offset = static_cast<std::int16_t>(rng());
        h.bitmap = rng();
        SethHdr d;
        REQUIRE(SethHdr::decode(omrc::test::encoded(h), d) == WireError::ok);
        REQUIRE(d == h);
    }
}
