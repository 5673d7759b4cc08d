// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include "support/hex.hpp"
#include "wire/srh.hpp"

using namespace omrc::wire;
using omrc::test::hex;

namespace {
const char* kTwoSegments =
    "29 04 04 01 01 00 00 00"
    " fcbb0000100710080000000000000000"   // segments[0]: last container
    " fcbb0000100410011006100310021001";  // segments[1]: first container
}

TEST_CASE("SrhHdr::encode__golden", "[unit][wire]") {
    SrhHdr h;
    h.num_segments = 2;
    h.last_entry = 1;
    h.segments_left = 1;
    const auto b = hex(kTwoSegments);
    std::copy_n(b.begin() + 8, 16, h.segments[0].begin());
    std::copy_n(b.begin() + 24, 16, h.segments[1].begin());
    std::vector<std::uint8_t> out(h.wire_size());
    REQUIRE(h.encode(out) == WireError::ok);
    CHECK(out == b);
}

TEST_CASE("SrhHdr::decode__basics", "[unit][wire]") {
    const auto b = hex(kTwoSegments);
    SrhHdr h;
    std::size_t used = 0;
    REQUIRE(SrhHdr::decode(b, h, used) == WireError::ok);
    CHECK(used == 40);
    CHECK(h.num_segments == 2);
    CHECK(h.segments_left == 1);
    CHECK(h.next_header == kNextHeaderIpv6);
    CHECK(h.segments[1][5] == 0x04);
}

TEST_CASE("SrhHdr::decode__truncation_at_every_offset", "[unit][wire]") {
    const auto b = hex(kTwoSegments);
    SrhHdr h;
    std::size_t used = 0;
    for (std::size_t n = 0; n < b.size(); ++n)
        CHECK(SrhHdr::decode(std::span(b).first(n), h, used) == WireError::truncated_srh);
}

TEST_CASE("SrhHdr::decode__bogus_fields", "[unit][wire]") {
    SrhHdr h;
    std::size_t used = 0;
    auto b = hex(kTwoSegments);
    SECTION("wrong routing type") {
        b[2] = 3;
        CHECK(SrhHdr::decode(b, h, used) == WireError::bad_srh);
    }
    SECTION("segments left beyond last entry") {
        b[3] = 2;
        CHECK(SrhHdr::decode(b, h, used) == WireError::bad_srh);
    }
    SECTION("last entry beyond the header length") {
        b[4] = 2;
        b[3] = 0;
        CHECK(SrhHdr::decode(b, h, used) == WireError::bad_srh);
    }
    SECTION("last entry beyond what we carry") {
        b[4] = 200;
        b[1] = 255;
        b.resize(8 + 255 * 8);
        CHECK(SrhHdr::decode(b, h, used) == WireError::bad_srh);
    }
    SECTION("hdr ext len past the buffer") {
        b[1] = 6;
        CHECK(SrhHdr::decode(b, h, used) == WireError::truncated_srh);
    }
    SECTION("TLV bytes after the list are skipped") {
        b[1] = 5;
        b.insert(b.end(), 8, 0);
        REQUIRE(SrhHdr::decode(b, h, used) == WireError::ok);
        CHECK(used == 48);
    }
}

TEST_CASE("SrhHdr::encode__rejects_inconsistent", "[unit][wire]") {
    SrhHdr h;
    std::uint8_t out[200];
    CHECK(h.encode(out) == WireError::bad_srh);  // zero segments
    h.num_segments = 2;
    h.last_entry = 0;
    CHECK(h.encode(out) == WireError::bad_srh);
    h.last_entry = 1;
    h.segments_left = 1;
    CHECK(h.encode(std::span(out).first(39)) == WireError::buffer_too_small);
    CHECK(h.encode(out) == WireError::ok);
}
