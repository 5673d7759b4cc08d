// SPDX-License-Identifier: BSD-3-Clause
// The drivers of omrc_tests in the conformance suite (conformance.hpp): the
// loopback driver in virtual-clock and real-time mode, udp in plain mode on ::1.
#include <catch2/catch.hpp>

#include "drivers/loopback/loopback.hpp"
#include "unit/drivers/conformance.hpp"
#include "unit/drivers/conformance_udp.hpp"

namespace omrc::test::conformance {

namespace {

Pair loopback_pair(std::uint32_t planes, loopback::ClockMode mode) {
    Pair p;
    loopback::FabricConfig c;
    c.endpoints = 2;
    c.planes = planes;
    c.mode = mode;
    if (mode == loopback::ClockMode::real_time) {
        c.link_delay_ns = 0;
        c.ring_slots = 256;
        c.rx_pool_frames = 256;
    }
    auto fabric = std::make_shared<loopback::Fabric>(c);
    p.keepalive = fabric;
    p.a = fabric->attach(0);
    p.b = fabric->attach(1);
    p.set_link = [f = fabric.get()](std::uint32_t e, std::uint32_t pl, bool up) { f->set_link(e, pl, up); };
    if (mode == loopback::ClockMode::virtual_clock) {
        auto t = std::make_shared<std::uint64_t>(1'000'000);
        p.now = [t] { return *t; };
        p.advance = [t](std::uint64_t ns) { *t += ns; };
    } else {
        p.now = steady_ns;
        p.advance = [](std::uint64_t) {};
    }
    p.planes = planes;
    p.mac = [](std::uint32_t e, std::uint32_t pl) { return loopback::Fabric::mac(e, pl); };
    return p;
}

}  // namespace

std::vector<Factory> conformance_factories() {
    return {
        {"loopback/virtual_clock", [](std::uint32_t planes) { return loopback_pair(planes, loopback::ClockMode::virtual_clock); }},
        {"loopback/real_time", [](std::uint32_t planes) { return loopback_pair(planes, loopback::ClockMode::real_time); }},
        {"udp/plain",
         [](std::uint32_t planes) {
             udp::UdpConfig c;
             c.planes.assign(planes, udp::PlaneEndpoint{wire::Ipv6Addr{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 0});
             auto a = open_driver<udp::UdpDriver>(c);
             auto b = open_driver<udp::UdpDriver>(c);
             udp::UdpDriver* d[2] = {a.get(), b.get()};
             Pair p = udp_pair(std::move(a), std::move(b), planes);
             p.set_link = [d0 = d[0], d1 = d[1]](std::uint32_t e, std::uint32_t pl, bool up) {
                 (e == 0 ? d0 : d1)->set_admin_link(pl, up);
             };
             p.ip = [d0 = d[0], d1 = d[1]](std::uint32_t e) { return (e == 0 ? d0 : d1)->address(); };
             p.plain_only = true;
             return p;
         }},
    };
}

}  // namespace omrc::test::conformance
