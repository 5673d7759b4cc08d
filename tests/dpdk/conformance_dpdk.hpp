// SPDX-License-Identifier: BSD-3-Clause
// Conformance-suite factories for the dpdk driver (included by
// tests/unit/drivers/test_conformance.cpp when built into the DPDK test
// binary): two drivers over net_tap ports, plane by plane wired by tc, links
// set down and up through the kernel side of A's taps. Needs root.
#pragma once

#include <atomic>
#include <stdexcept>

#include "dpdk/dpdk_env.hpp"
#include "drivers/dpdk/dpdk_driver.hpp"

namespace omrc::test {

inline std::unique_ptr<dpdk::DpdkDriver> open_tap_driver(const std::string& tag, unsigned first_port, std::uint32_t planes) {
    dpdk::DpdkOptions o;
    o.eal = dpdk_eal_args();
    o.link_poll_ns = 0;  // the suite expects a link change at the next call
    o.rx_desc = o.tx_desc = 256;  // small rings: the suite opens many ports
    o.backlog = 256;
    for (std::uint32_t p = 0; p < planes; ++p) {
        const std::string name = "net_tap" + std::to_string(first_port + p);
        o.vdevs.push_back(name + ",iface=" + tap_iface(tag, first_port + p));
        o.ports.push_back(name);
    }
    return std::make_unique<dpdk::DpdkDriver>(o);
}

}  // namespace omrc::test

namespace {

std::vector<Factory> dpdk_factories() {
    return {
        {"dpdk/net_tap",
         [](std::uint32_t planes) {
             static std::atomic<unsigned> next{0};
             const unsigned base = 100 + 16 * next++;  // fresh taps for every pair
             Pair p;
             auto a = omrc::test::open_tap_driver("c", base, planes);
             auto b = omrc::test::open_tap_driver("c", base + 8, planes);
             for (std::uint32_t pl = 0; pl < planes; ++pl)
                 omrc::test::wire_taps(omrc::test::tap_iface("c", base + pl), omrc::test::tap_iface("c", base + 8 + pl));
             dpdk::DpdkDriver* d[2] = {a.get(), b.get()};
             p.a = std::move(a);
             p.b = std::move(b);
             p.now = steady_ns;
             p.advance = [](std::uint64_t) {};
             p.planes = planes;
             p.mac = [d0 = d[0], d1 = d[1]](std::uint32_t e, std::uint32_t pl) {
                 wire::MacAddr m{};
                 const auto& src = (e == 0 ? d0 : d1)->ports()[pl].mac;
                 std::copy(src.begin(), src.end(), m.begin());
                 return m;
             };
             p.set_link = [base](std::uint32_t e, std::uint32_t pl, bool up) {
                 omrc::test::dpdk_sh("ip link set " + omrc::test::tap_iface("c", base + 8 * e + pl) + (up ? " up" : " down"));
             };
             p.ordered = false;  // planes are separate ports, received round-robin
             // The kernel side must be up before the suite looks at links.
             const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
             std::vector<driver::RxFrame> none;
             while (std::chrono::steady_clock::now() < until) {
                 (void)p.a->rx_burst(none, p.now());
                 (void)p.b->rx_burst(none, p.now());
                 bool up = true;
                 for (std::uint32_t pl = 0; pl < planes; ++pl) up = up && p.a->link_up(pl) && p.b->link_up(pl);
                 if (up) break;
             }
             std::vector<driver::LinkEvent> drain(16);
             while (p.a->poll_link_events(drain) != 0) {}
             while (p.b->poll_link_events(drain) != 0) {}
             return p;
         }},
    };
}

}  // namespace
