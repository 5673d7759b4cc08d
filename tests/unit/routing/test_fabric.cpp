// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <random>

#include "routing/fabric.hpp"
#include "support/hex.hpp"
#include "wire/usid.hpp"

using namespace omrc;
using namespace omrc::routing;
using omrc::test::hex;

namespace {
std::vector<std::uint8_t> v(const wire::Ipv6Addr& a) { return {a.begin(), a.end()}; }
}  // namespace

TEST_CASE("make_usid__layout", "[unit][routing]") {
    CHECK(make_usid(0, UsidRole::t0, 4) == 0x1404);
    CHECK(make_usid(7, UsidRole::t1, 0x3FF) == 0x8BFF);
    CHECK(make_usid(0, UsidRole::host_port, 0) == 0x1000);  // never the 0x0000 end marker
}

TEST_CASE("make_ev__layout", "[unit][routing]") {
    const std::uint32_t ev = make_ev(3, 0x123, 0xBEEF);
    CHECK(ev == 0x4123BEEF);
    CHECK(ev_plane(ev) == 3);
    CHECK(ev_path(ev) == 0x123);
    CHECK(ev_valid(ev, 8));
    CHECK_FALSE(ev_valid(ev, 3));
    CHECK_FALSE(ev_valid(0x0000BEEF, 8));
}

TEST_CASE("FabricDesc::validate", "[unit][routing]") {
    FabricDesc f;
    CHECK(f.validate().empty());
    CHECK(f.hosts() == 131072);
    f.planes = 16;
    CHECK_FALSE(f.validate().empty());
    f.planes = 8;
    f.t1_per_plane = 0;
    CHECK_FALSE(f.validate().empty());
    f.t1_per_plane = 2000;
    CHECK_FALSE(f.validate().empty());
}

TEST_CASE("UsidTemplate::apply__golden_cross_t1", "[unit][routing]") {
    FabricDesc f;  // 131,072 hosts, 256 per T0
    UsidTemplate t;
    // host 1029 = T0 4 port 5; host 1538 = T0 6 port 2.
    REQUIRE(UsidTemplate::make(f, 1029, 1538, t) == wire::WireError::ok);
    CHECK(t.crosses_t1());
    CHECK(t.hops() == 4);
    // plane 0, T1 1
    CHECK(v(t.apply(make_ev(0, 1, 0x1234))) == hex("fcbb0000 1404 1801 1406 1002 0000 0000"));
    // plane 7, T1 255; path bits above the T1 count wrap
    CHECK(v(t.apply(make_ev(7, 255, 0))) == hex("fcbb0000 8404 88ff 8406 8002 0000 0000"));
    CHECK(v(t.apply(make_ev(7, 256 + 3, 0))) == hex("fcbb0000 8404 8803 8406 8002 0000 0000"));
}

TEST_CASE("UsidTemplate::apply__same_t0_skips_t1", "[unit][routing]") {
    FabricDesc f;
    UsidTemplate t;
    REQUIRE(UsidTemplate::make(f, 1029, 1030, t) == wire::WireError::ok);
    CHECK_FALSE(t.crosses_t1());
    CHECK(v(t.apply(make_ev(2, 77, 0))) == hex("fcbb0000 3404 3006 0000 0000 0000 0000"));
}

TEST_CASE("UsidTemplate::make__rejects", "[unit][routing]") {
    FabricDesc f;
    UsidTemplate t;
    CHECK(UsidTemplate::make(f, 0, f.hosts(), t) == wire::WireError::bad_field);
    f.planes = 0;
    CHECK(UsidTemplate::make(f, 0, 1, t) == wire::WireError::bad_field);
}

TEST_CASE("UsidTemplate::apply__every_path_walks_to_the_right_nic", "[unit][routing]") {
    // Property: for random host pairs and EVs, the switches named in the DA,
    // each doing uN shift-and-forward with its own uSID, deliver the packet to
    // the destination NIC's address on the EV's plane, through the EV's T1.
    FabricDesc f;
    f.planes = 4;
    f.t0_per_plane = 16;
    f.t1_per_plane = 8;
    f.hosts_per_t0 = 8;
    std::mt19937 rng(11);
    for (int i = 0; i < 2000; ++i) {
        const std::uint32_t src = rng() % f.hosts(), dst = rng() % f.hosts();
        const std::uint32_t plane = rng() % f.planes, path = rng() & 0xFFF;
        UsidTemplate t;
        REQUIRE(UsidTemplate::make(f, src, dst, t) == wire::WireError::ok);
        wire::Ipv6Addr da = t.apply(make_ev(plane, path, static_cast<std::uint16_t>(rng())));
        std::vector<std::uint16_t> hops = {make_usid(plane, UsidRole::t0, f.t0_of(src))};
        if (f.t0_of(src) != f.t0_of(dst)) {
            hops.push_back(make_usid(plane, UsidRole::t1, path % f.t1_per_plane));
            hops.push_back(make_usid(plane, UsidRole::t0, f.t0_of(dst)));
        }
        for (std::uint16_t hop : hops) {
            wire::UnAction a;
            REQUIRE(wire::usid_un_process(da, nullptr, f.usid_block, hop, a) == wire::WireError::ok);
            REQUIRE(a == wire::UnAction::shifted);
        }
        REQUIRE(da == nic_usid_address(f, dst, plane));
    }
}
