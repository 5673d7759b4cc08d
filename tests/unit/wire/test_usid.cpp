// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include "support/hex.hpp"
#include "wire/usid.hpp"

using namespace omrc::wire;
using omrc::test::hex;

namespace {
std::vector<std::uint8_t> v(const Ipv6Addr& a) { return {a.begin(), a.end()}; }
}  // namespace

TEST_CASE("usid_container_build__golden", "[unit][wire]") {
    Ipv6Addr da;
    const std::uint16_t path[] = {0x1004, 0x1001, 0x1006};
    REQUIRE(usid_container_build(0xFCBB0000, path, da) == WireError::ok);
    CHECK(v(da) == hex("fcbb0000 1004 1001 1006 0000 0000 0000"));
    const std::uint16_t six[] = {1, 2, 3, 4, 5, 6};
    REQUIRE(usid_container_build(0xFCBB0000, six, da) == WireError::ok);
    CHECK(v(da) == hex("fcbb0000 0001 0002 0003 0004 0005 0006"));
    REQUIRE(usid_container_build(0xFCBB0000, {}, da) == WireError::ok);
    CHECK(v(da) == hex("fcbb0000 0000 0000 0000 0000 0000 0000"));
}

TEST_CASE("usid_container_build__rejects", "[unit][wire]") {
    Ipv6Addr da;
    const std::uint16_t seven[] = {1, 2, 3, 4, 5, 6, 7};
    CHECK(usid_container_build(0xFCBB0000, seven, da) == WireError::usid_too_many);
    const std::uint16_t zero[] = {0x1004, 0, 0x1006};
    CHECK(usid_container_build(0xFCBB0000, zero, da) == WireError::usid_zero);
}

TEST_CASE("usid_container_parse__basics_and_garbage_after_end", "[unit][wire]") {
    Ipv6Addr da;
    const auto b = hex("fcbb0000 1004 1001 1006 0000 0000 0000");
    std::copy(b.begin(), b.end(), da.begin());
    UsidContainer c;
    REQUIRE(usid_container_parse(da, c) == WireError::ok);
    CHECK(c.block == 0xFCBB0000);
    CHECK(c.count == 3);
    CHECK(c.usids[2] == 0x1006);
    da[13] = 1;  // a nonzero uSID after the end marker
    CHECK(usid_container_parse(da, c) == WireError::bad_field);
}

TEST_CASE("usid_un_process__shift_golden", "[unit][wire]") {
    Ipv6Addr da;
    const std::uint16_t path[] = {0x1004, 0x1001, 0x1006};
    REQUIRE(usid_container_build(0xFCBB0000, path, da) == WireError::ok);
    UnAction a;
    REQUIRE(usid_un_process(da, nullptr, 0xFCBB0000, 0x1004, a) == WireError::ok);
    CHECK(a == UnAction::shifted);
    CHECK(v(da) == hex("fcbb0000 1001 1006 0000 0000 0000 0000"));
    CHECK(usid_un_process(da, nullptr, 0xFCBB0000, 0x1004, a) == WireError::usid_no_match);
    CHECK(usid_un_process(da, nullptr, 0xFCBB0001, 0x1001, a) == WireError::usid_no_match);
    REQUIRE(usid_un_process(da, nullptr, 0xFCBB0000, 0x1001, a) == WireError::ok);
    CHECK(v(da) == hex("fcbb0000 1006 0000 0000 0000 0000 0000"));
    REQUIRE(usid_un_process(da, nullptr, 0xFCBB0000, 0x1006, a) == WireError::ok);
    CHECK(a == UnAction::end_of_path);
}

TEST_CASE("usid_un_process__full_container_shifts_in_zero", "[unit][wire]") {
    Ipv6Addr da;
    const std::uint16_t six[] = {1, 2, 3, 4, 5, 6};
    REQUIRE(usid_container_build(0xFCBB0000, six, da) == WireError::ok);
    UnAction a;
    REQUIRE(usid_un_process(da, nullptr, 0xFCBB0000, 1, a) == WireError::ok);
    CHECK(v(da) == hex("fcbb0000 0002 0003 0004 0005 0006 0000"));
}

TEST_CASE("usid_path_encode__long_path_uses_srh", "[unit][wire]") {
    const std::uint16_t path[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    Ipv6Addr da;
    SrhHdr srh;
    bool needed = false;
    REQUIRE(usid_path_encode(0xFCBB0000, path, da, srh, needed) == WireError::ok);
    REQUIRE(needed);
    CHECK(srh.num_segments == 2);
    CHECK(srh.segments_left == 1);
    CHECK(v(srh.segments[1]) == hex("fcbb0000 0001 0002 0003 0004 0005 0006"));
    CHECK(v(srh.segments[0]) == hex("fcbb0000 0007 0008 0009 0000 0000 0000"));
    CHECK(da == srh.segments[1]);
    // Walk the whole path as nine uN nodes would.
    UnAction a = UnAction::shifted;
    for (std::uint16_t node = 1; node <= 9; ++node) {
        REQUIRE(usid_un_process(da, &srh, 0xFCBB0000, node, a) == WireError::ok);
        if (node == 6) CHECK(a == UnAction::next_segment);
        else if (node == 9) CHECK(a == UnAction::end_of_path);
        else CHECK(a == UnAction::shifted);
    }
    CHECK(srh.segments_left == 0);
}

TEST_CASE("usid_path_encode__short_path_needs_no_srh", "[unit][wire]") {
    const std::uint16_t path[] = {0x1004, 0x1001};
    Ipv6Addr da;
    SrhHdr srh;
    bool needed = true;
    REQUIRE(usid_path_encode(0xFCBB0000, path, da, srh, needed) == WireError::ok);
    CHECK_FALSE(needed);
    CHECK(v(da) == hex("fcbb0000 1004 1001 0000 0000 0000 0000"));
    CHECK(usid_path_encode(0xFCBB0000, {}, da, srh, needed) == WireError::bad_field);
    std::vector<std::uint16_t> huge(6 * 9, 1);
    CHECK(usid_path_encode(0xFCBB0000, huge, da, srh, needed) == WireError::usid_too_many);
}
