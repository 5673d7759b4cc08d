// SPDX-License-Identifier: BSD-3-Clause
// A conformance pair of two open udp drivers (either frame mode): what the
// plain factory (conformance_builtin.cpp) and the srv6 one
// (udp_raw/conformance_udp_raw.cpp) share.
#pragma once

#include <memory>

#include "drivers/udp/udp.hpp"
#include "unit/drivers/conformance.hpp"

namespace omrc::test::conformance {

/// Sockets are reaped in any order (plain mode: one socket per port; srv6:
/// one per plane): frames arrive as a multiset.
inline Pair udp_pair(std::unique_ptr<udp::UdpDriver> a, std::unique_ptr<udp::UdpDriver> b, std::uint32_t planes) {
    udp::UdpDriver* d[2] = {a.get(), b.get()};
    Pair p = realtime_pair(std::move(a), std::move(b), planes);
    p.mac = [d0 = d[0], d1 = d[1]](std::uint32_t e, std::uint32_t pl) { return (e == 0 ? d0 : d1)->macs()[pl]; };
    return p;
}

}  // namespace omrc::test::conformance
