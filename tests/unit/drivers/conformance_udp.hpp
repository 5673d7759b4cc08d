// SPDX-License-Identifier: BSD-3-Clause
// A conformance pair of two open udp drivers (either frame mode): what the
// plain factory (conformance_builtin.cpp) and the srv6 one
// (udp_raw/conformance_udp_raw.cpp) share.
#pragma once

#include <memory>

#include "drivers/udp/udp.hpp"
#include "unit/drivers/conformance.hpp"

namespace omrc::test::conformance {

/// Sockets of one plane are reaped in any order (plain mode: one socket per
/// port; srv6: one per plane): frames arrive as a multiset.
inline Pair udp_pair(std::unique_ptr<udp::UdpDriver> a, std::unique_ptr<udp::UdpDriver> b, std::uint32_t planes) {
    Pair p;
    udp::UdpDriver* d[2] = {a.get(), b.get()};
    p.a = std::move(a);
    p.b = std::move(b);
    p.now = steady_ns;
    p.advance = [](std::uint64_t) {};
    p.planes = planes;
    p.mac = [d0 = d[0], d1 = d[1]](std::uint32_t e, std::uint32_t pl) { return (e == 0 ? d0 : d1)->macs()[pl]; };
    p.ordered = false;
    return p;
}

}  // namespace omrc::test::conformance
