// SPDX-License-Identifier: BSD-3-Clause
// Conformance-suite factory for the udp driver's SRv6 (raw socket) mode
// (included by tests/unit/drivers/test_conformance.cpp when built into
// omrc_udp_raw_tests with OMRC_CONFORMANCE_UDP_RAW): two drivers on the ends
// of one veth pair per plane (tests/udp_raw/run_udp_raw.sh), links set down
// and up through A's veths. Needs root.
#pragma once

#include "udp_raw/udp_raw_env.hpp"

namespace {

std::vector<Factory> udp_raw_factories() {
    return {
        {"udp/srv6_raw",
         [](std::uint32_t planes) {
             Pair p;
             REQUIRE(omrc::test::wait_all_running(planes));
             std::unique_ptr<udp::UdpDriver> a, b;
             std::string error;
             INFO(error);
             // link_poll_us=0: the suite expects a link change at the next call.
             REQUIRE(omrc::test::open_raw_driver(0, planes, a, error) == 0);
             REQUIRE(omrc::test::open_raw_driver(1, planes, b, error) == 0);
             udp::UdpDriver* d[2] = {a.get(), b.get()};
             p.a = std::move(a);
             p.b = std::move(b);
             p.now = steady_ns;
             p.advance = [](std::uint64_t) {};
             p.planes = planes;
             p.mac = [d0 = d[0], d1 = d[1]](std::uint32_t e, std::uint32_t pl) { return (e == 0 ? d0 : d1)->macs()[pl]; };
             p.set_link = [](std::uint32_t e, std::uint32_t pl, bool up) {
                 REQUIRE(omrc::test::set_iface(omrc::test::raw_ifaces(static_cast<int>(e))[pl], up));
             };
             p.ordered = false;  // planes are separate sockets, completions reaped in any order
             return p;
         }},
    };
}

}  // namespace
