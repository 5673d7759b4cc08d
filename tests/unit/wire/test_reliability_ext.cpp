// SPDX-License-Identifier: BSD-3-Clause
// SETH, CC_STATE, NETH, PETH codecs: round trips, truncation at every
// length, out-of-range fields. The byte layouts themselves are pinned by
// hand-written vectors in test_mrc_wire_golden.cpp.
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

TEST_CASE("SethHdr::encode__every_field", "[unit][wire]") {
    SethHdr h;
    h.skip = SackSkip::always_skip;
    h.probe_response = true;
    h.ack_psn_offset = -2;
    h.ev = 0x12345678;
    h.src_conn_id = 0x1111;
    h.dst_conn_id = 0x2222;
    h.cack_psn = 0xFFFFFE;
    h.cc_type = 1;
    h.cc_flags = 2;
    h.mpr = 8;
    h.sack_offset = 1;
    h.bitmap = 0x8000000000000003ull;
    check_roundtrip_and_truncation(
        h, hex("00 42 ff fe 12 34 56 78 11 11 22 22 00 ff ff fe 12 08 00 01 80 00 00 00 00 00 00 03"));
}

TEST_CASE("SethHdr::decode__reserved_bits_are_ignored", "[unit][wire]") {
    // type|nh, the reserved bits of byte 1 and byte 12 set: read past, not rejected.
    auto b = hex("f0 9d 00 00 00 00 00 00 00 00 00 00 ff 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
    SethHdr h;
    REQUIRE(SethHdr::decode(b, h) == WireError::ok);
    CHECK(h.skip == SackSkip::none);
    CHECK_FALSE(h.probe_response);
    CHECK(h.cack_psn == 0);
}

TEST_CASE("SethHdr::encode__out_of_range", "[unit][wire]") {
    std::uint8_t out[28];
    SethHdr h;
    h.cack_psn = 0x1000000;
    CHECK(h.encode(out) == WireError::bad_field);
    h.cack_psn = 0;
    h.skip = static_cast<SackSkip>(3);
    CHECK(h.encode(out) == WireError::bad_field);
    h.skip = SackSkip::none;
    h.cc_type = 16;
    CHECK(h.encode(out) == WireError::bad_field);
}

TEST_CASE("CcStateHdr::encode__every_field", "[unit][wire]") {
    CcStateHdr h;
    h.ts_echo = 0xBEEF;
    h.ooo_count = 0x7234;
    h.restore_cwnd = true;
    h.penalty = 100;
    h.rcvd_bytes = 0x0A0B0C;
    check_roundtrip_and_truncation(h, hex("be ef 72 34 e4 0a 0b 0c"));
    h.penalty = 128;
    std::uint8_t out[8];
    CHECK(h.encode(out) == WireError::bad_field);
    h.penalty = 0;
    h.ooo_count = 0x8000;
    CHECK(h.encode(out) == WireError::bad_field);
    // The reserved bit above ooo_count is ignored.
    CcStateHdr d;
    REQUIRE(CcStateHdr::decode(hex("00 00 80 01 00 00 00 00"), d) == WireError::ok);
    CHECK(d.ooo_count == 1);
}

TEST_CASE("NethHdr::encode__every_field", "[unit][wire]") {
    NethHdr h;
    h.reason = static_cast<std::uint8_t>(NackReason::psn_oor_window);
    h.vendor = 0x77;
    h.ev = 0xA0B0C0D0;
    h.src_conn_id = 1;
    h.dst_conn_id = 2;
    h.nack_psn = 0x10;
    h.cc_type = 2;
    h.cc_flags = 1;
    h.ts_echo = 0x0102;
    check_roundtrip_and_truncation(h, hex("00 00 0b 77 a0 b0 c0 d0 00 01 00 02 00 00 00 10 21 00 01 02"));
    std::uint8_t out[20];
    h.nack_psn = 0x1000000;
    CHECK(h.encode(out) == WireError::bad_field);
}

TEST_CASE("PethHdr::encode__every_field", "[unit][wire]") {
    PethHdr h;
    h.vendor = 0x09;
    h.probe_id = 0x0304;
    h.src_conn_id = 0x0a0b;
    h.dst_conn_id = 0x0c0d;
    h.tx_timestamp = 0x7fff;
    h.tsr = true;
    h.ftype = 1;
    check_roundtrip_and_truncation(h, hex("00 00 00 09 03 04 00 00 0a 0b 0c 0d 7f ff 80 01"));
    std::uint8_t out[16];
    h.ftype = 16;
    CHECK(h.encode(out) == WireError::bad_field);
}

TEST_CASE("SethHdr::decode__roundtrip_random", "[unit][wire]") {
    std::mt19937_64 rng(99);
    for (int i = 0; i < 2000; ++i) {
        SethHdr h;
        h.skip = static_cast<SackSkip>(rng() % 3);
        h.probe_response = (rng() & 1) != 0;
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
