// SPDX-License-Identifier: BSD-3-Clause
// ERTH and EETH codecs: round trips, truncation, unknown ops kept as they
// arrive (the engine never acts on them). Layouts are pinned by
// test_mrc_wire_golden.cpp.
#include <algorithm>

#include <catch2/catch.hpp>

#include "support/hex.hpp"
#include "wire/endpoint_ext.hpp"

using namespace omrc::wire;
using omrc::test::hex;

TEST_CASE("ErthHdr::encode__every_field", "[unit][wire]") {
    ErthHdr h;
    h.op = ErthOp::ev_probe;
    h.vendor = 0x05;
    h.port_status_mask = 0xFE;
    h.tx_timestamp = 0x1234;
    h.tsr = true;
    h.ftype = 1;
    const auto golden = hex("00 01 00 05 00 00 00 fe 00 00 00 00 12 34 80 01");
    CHECK(omrc::test::encoded(h) == golden);
    ErthHdr d;
    REQUIRE(ErthHdr::decode(golden, d) == WireError::ok);
    CHECK(d == h);
    for (std::size_t n = 0; n < ErthHdr::kSize; ++n)
        CHECK(ErthHdr::decode(std::span(golden).first(n), d) == WireError::truncated_ext);
}

TEST_CASE("ErthHdr::encode__path_alarm_names_its_plane_and_t1_in_bytes_8_to_11", "[unit][wire]") {
    // OpenMRC's PATH_ALARM (op 2, docs/PROTOCOL.md §11.5): T1 index at 8..9,
    // plane at 10, 11 reserved; the bytes MRC reserves and every other op
    // leaves zero.
    ErthHdr h;
    h.op = ErthOp::path_alarm;
    h.alarm_t1 = 0x0123;
    h.alarm_plane = 5;
    h.tx_timestamp = 0x0D0D;
    h.ftype = 1;
    const auto golden = hex("00 02 00 00 00 00 00 00 01 23 05 00 0d 0d 00 01");
    CHECK(omrc::test::encoded(h) == golden);
    ErthHdr d;
    REQUIRE(ErthHdr::decode(golden, d) == WireError::ok);
    CHECK(d == h);
    ErthHdr p;
    p.op = ErthOp::port_status_update;
    p.port_status_mask = 0xFE;
    const auto bytes = omrc::test::encoded(p);
    CHECK(std::all_of(bytes.begin() + 8, bytes.begin() + 12, [](std::uint8_t x) { return x == 0; }));
}

TEST_CASE("ErthHdr::decode__unknown_op_is_kept_not_rejected", "[unit][wire]") {
    auto b = hex("00 03 00 00 00 00 00 fe 00 00 00 00 00 00 00 01");
    ErthHdr d;
    REQUIRE(ErthHdr::decode(b, d) == WireError::ok);
    CHECK(static_cast<int>(d.op) == 3);
    CHECK(d.op != ErthOp::port_status_update);
    b[1] = 0xFD;  // reserved bits around the op
    REQUIRE(ErthHdr::decode(b, d) == WireError::ok);
    CHECK(d.op == ErthOp::ev_probe);
}

TEST_CASE("EethHdr::encode__op_and_reflected_timestamp", "[unit][wire]") {
    EethHdr h{ErthOp::port_status_update, 0xABCD};
    std::vector<std::uint8_t> out(EethHdr::kSize);
    REQUIRE(h.encode(out) == WireError::ok);
    CHECK(out[1] == 0x00);
    CHECK(out[28] == 0xAB);
    CHECK(out[29] == 0xCD);
    h.op = ErthOp::ev_probe;
    REQUIRE(h.encode(out) == WireError::ok);
    CHECK(out[1] == (1u << mrc::kEethOpShift));
    EethHdr d;
    REQUIRE(EethHdr::decode(out, d) == WireError::ok);
    CHECK(d == h);
    for (std::size_t n = 0; n < EethHdr::kSize; ++n) CHECK(EethHdr::decode(std::span(out).first(n), d) == WireError::truncated_ext);
}
