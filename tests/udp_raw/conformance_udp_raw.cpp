// SPDX-License-Identifier: BSD-3-Clause
// The driver of omrc_udp_raw_tests in the conformance suite
// (unit/drivers/conformance.hpp): the udp driver's srv6 (raw socket) mode,
// two drivers on the ends of one veth pair per plane
// (tests/udp_raw/run_udp_raw.sh), links set down and up through A's veths.
// Needs root.
#include <catch2/catch.hpp>

#include "udp_raw/udp_raw_env.hpp"
#include "unit/drivers/conformance.hpp"
#include "unit/drivers/conformance_udp.hpp"

namespace omrc::test::conformance {

std::vector<Factory> conformance_factories() {
    return {
        {"udp/srv6_raw",
         [](std::uint32_t planes) {
             REQUIRE(wait_all_running(planes));
             std::unique_ptr<udp::UdpDriver> a, b;
             std::string error;
             INFO(error);
             // link_poll_us=0: the suite expects a link change at the next call.
             REQUIRE(open_raw_driver(0, planes, a, error) == 0);
             REQUIRE(open_raw_driver(1, planes, b, error) == 0);
             Pair p = udp_pair(std::move(a), std::move(b), planes);
             p.set_link = [](std::uint32_t e, std::uint32_t pl, bool up) {
                 REQUIRE(set_iface(raw_ifaces(static_cast<int>(e))[pl], up));
             };
             return p;
         }},
    };
}

}  // namespace omrc::test::conformance
