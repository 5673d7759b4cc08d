// SPDX-License-Identifier: BSD-3-Clause
// The driver conformance suite (test_conformance.cpp): the same checks run
// against every driver through the private driver interface, in the manner
// of DPDK's virtual_pmd. The suite asks each test binary for its drivers
// through conformance_factories(), which one small file per binary defines:
//   omrc_tests          unit/drivers/conformance_builtin.cpp  loopback (both clock modes), udp plain on ::1
//   omrc_dpdk_tests     dpdk/conformance_dpdk.cpp             dpdk over net_memif and net_tap (one EAL per process)
//   omrc_udp_raw_tests  udp_raw/conformance_udp_raw.cpp       udp srv6 mode over veths (root)
// A new driver adds a factory to the file of the binary that can run it.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "driver/driver.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv6.hpp"

namespace omrc::test::conformance {

/// Two endpoints of one driver type, with a clock and a way to wait for frames.
struct Pair {
    std::shared_ptr<void> keepalive;  ///< what the drivers refer to (a loopback fabric)
    std::unique_ptr<driver::Driver> a, b;
    std::function<std::uint64_t()> now;
    std::function<void(std::uint64_t)> advance;  ///< moves time forward by at least this many ns
    std::uint32_t planes = 0;
    std::function<wire::MacAddr(std::uint32_t, std::uint32_t)> mac;
    /// Administrative link state of (endpoint, plane).
    std::function<void(std::uint32_t, std::uint32_t, bool)> set_link;
    /// The IPv6 address of an endpoint; empty: frames keep the samples' addresses.
    std::function<wire::Ipv6Addr(std::uint32_t)> ip;
    bool ordered = true;     ///< frames of one sender arrive in send order (else: as a multiset)
    bool plain_only = false; ///< carries plain frames only (udp)
};

struct Factory {
    const char* name;
    std::function<Pair(std::uint32_t planes)> make;
};

/// The drivers this test binary runs the suite over (one definition per binary).
std::vector<Factory> conformance_factories();

/// The real clock, in ns (drivers that run on it).
inline std::uint64_t steady_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

/// D::open(config, out, error) — every driver's open has that shape — or
/// the test fails with the driver's message.
template <class D, class Config>
std::unique_ptr<D> open_driver(const Config& config) {
    std::unique_ptr<D> d;
    std::string error;
    const int rc = D::open(config, d, error);
    INFO(error);
    REQUIRE(rc == 0);
    return d;
}

/// Two drivers on the real clock: time passes by itself, and frames of
/// separate ports or sockets arrive as a multiset. The caller sets mac,
/// set_link and whatever else differs.
inline Pair realtime_pair(std::unique_ptr<driver::Driver> a, std::unique_ptr<driver::Driver> b, std::uint32_t planes) {
    Pair p;
    p.a = std::move(a);
    p.b = std::move(b);
    p.now = steady_ns;
    p.advance = [](std::uint64_t) {};
    p.planes = planes;
    p.ordered = false;
    return p;
}

}  // namespace omrc::test::conformance
