// SPDX-License-Identifier: BSD-3-Clause
// The drivers of omrc_dpdk_tests in the conformance suite
// (unit/drivers/conformance.hpp): two dpdk drivers over net_memif pairs
// (links go down when the other side's port stops), and over net_tap ports
// plane by plane wired by tc (links set down and up through the kernel side
// of the taps; needs root). One EAL per process: the suite runs over the
// dpdk driver only in this binary.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <functional>
#include <utility>

#include <rte_ethdev.h>

#include "dpdk/dpdk_env.hpp"
#include "drivers/dpdk/dpdk_driver.hpp"
#include "drivers/dpdk/eal.hpp"
#include "unit/drivers/conformance.hpp"

namespace omrc::test::conformance {

namespace {

std::unique_ptr<dpdk::DpdkDriver> open_tap_driver(const std::string& tag, unsigned first_port, std::uint32_t planes) {
    dpdk::DpdkOptions o;
    o.eal = dpdk_eal_args();
    o.link_poll_ns = 0;  // the shortest alarm period: the suite waits for the driver's view of a link change
    o.mtu = 1024;        // net_tap takes frames of at most 1514 B
    o.rx_desc = o.tx_desc = 256;  // small rings: the suite opens many ports
    o.backlog = 256;
    for (std::uint32_t p = 0; p < planes; ++p) {
        const std::string name = "net_tap" + std::to_string(first_port + p);
        o.vdevs.push_back(name + ",iface=" + tap_iface(tag, first_port + p));
        o.ports.push_back(name);
    }
    return open_driver<dpdk::DpdkDriver>(o);
}

/// Two drivers over net_memif pairs, one pair per plane, on sockets of their own.
std::pair<std::unique_ptr<dpdk::DpdkDriver>, std::unique_ptr<dpdk::DpdkDriver>> open_memif_pair(
    unsigned first_port, std::uint32_t planes) {
    dpdk::DpdkOptions o[2];
    for (int side = 0; side < 2; ++side) {
        o[side].eal = dpdk_eal_args();
        o[side].link_poll_ns = 0;
        o[side].rx_desc = o[side].tx_desc = 256;
        o[side].backlog = 256;
        for (std::uint32_t p = 0; p < planes; ++p) {
            const unsigned n = first_port + 2 * p + static_cast<unsigned>(side);
            const std::string name = "net_memif" + std::to_string(n);
            o[side].vdevs.push_back(name + (side == 0 ? ",role=server" : ",role=client") + ",id=0,bsize=8192,socket=/tmp/omrc-conf-" +
                                    std::to_string(::getpid()) + "-" + std::to_string(first_port + 2 * p) + ".sock");
            o[side].ports.push_back(name);
        }
    }
    auto a = open_driver<dpdk::DpdkDriver>(o[0]);
    auto b = open_driver<dpdk::DpdkDriver>(o[1]);
    return {std::move(a), std::move(b)};
}

/// A conformance pair of two dpdk drivers; planes are separate ports,
/// received round-robin (frames arrive as a multiset).
Pair dpdk_pair(std::unique_ptr<dpdk::DpdkDriver> a, std::unique_ptr<dpdk::DpdkDriver> b, std::uint32_t planes) {
    dpdk::DpdkDriver* d[2] = {a.get(), b.get()};
    Pair p = realtime_pair(std::move(a), std::move(b), planes);
    p.mac = [d0 = d[0], d1 = d[1]](std::uint32_t e, std::uint32_t pl) {
        wire::MacAddr m{};
        const auto& src = (e == 0 ? d0 : d1)->ports()[pl]->mac;
        std::copy(src.begin(), src.end(), m.begin());
        return m;
    };
    return p;
}

/// Waits (≤ 5 s) until every plane of both drivers is up, then drops the events that brought them up.
void wait_all_up(driver::Driver& a, driver::Driver& b, std::uint32_t planes, const std::function<std::uint64_t()>& now) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::vector<driver::RxFrame> none;
    while (std::chrono::steady_clock::now() < until) {
        (void)a.rx_burst(none, now());
        (void)b.rx_burst(none, now());
        bool up = true;
        for (std::uint32_t pl = 0; pl < planes; ++pl) up = up && a.link_up(pl) && b.link_up(pl);
        if (up) break;
    }
    std::vector<driver::LinkEvent> drain(16);
    while (a.poll_link_events(drain) != 0) {}
    while (b.poll_link_events(drain) != 0) {}
}

}  // namespace

std::vector<Factory> conformance_factories() {
    return {
        {"dpdk/net_memif",
         [](std::uint32_t planes) {
             static std::atomic<unsigned> next{0};
             const unsigned base = 200 + 32 * next++;
             auto [a, b] = open_memif_pair(base, planes);
             dpdk::DpdkDriver* d[2] = {a.get(), b.get()};
             Pair p = dpdk_pair(std::move(a), std::move(b), planes);
             // A memif server transmits only into buffers its client has handed
             // back: a frame may wait in the sender's backlog until the peer has
             // polled, so time passing also polls the senders.
             p.advance = [d0 = d[0], d1 = d[1]](std::uint64_t) {
                 (void)d0->tx_burst({}, steady_ns());
                 (void)d1->tx_burst({}, steady_ns());
             };
             // memif has no administrative link state: endpoint e's link on a
             // plane goes down when the other side's port stops, and comes
             // back when it starts and the pair reconnects.
             p.set_link = [d0 = d[0], d1 = d[1]](std::uint32_t e, std::uint32_t pl, bool up) {
                 dpdk::DpdkDriver* self = e == 0 ? d0 : d1;
                 const std::uint16_t other = (e == 0 ? d1 : d0)->ports()[pl]->id;
                 // (On the interrupt thread, as the driver does: memif's
                 // control channel lives there.)
                 const int rc = dpdk::on_interrupt_thread(
                     [&] { return up ? rte_eth_dev_start(other) : rte_eth_dev_stop(other); });
                 REQUIRE(rc == 0);
                 // The driver learns of it off the data path (a link event
                 // of the PMD, or its alarm's poll): wait for its view.
                 const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                 while (std::chrono::steady_clock::now() < until && self->link_up(pl) != up)
                     std::this_thread::sleep_for(std::chrono::microseconds(100));
             };
             wait_all_up(*p.a, *p.b, planes, p.now);
             return p;
         }},
        {"dpdk/net_tap",
         [](std::uint32_t planes) {
             static std::atomic<unsigned> next{0};
             const unsigned base = 100 + 16 * next++;  // fresh taps for every pair
             auto a = open_tap_driver("c", base, planes);
             auto b = open_tap_driver("c", base + 8, planes);
             for (std::uint32_t pl = 0; pl < planes; ++pl)
                 wire_taps(tap_iface("c", base + pl), tap_iface("c", base + 8 + pl));
             dpdk::DpdkDriver* d[2] = {a.get(), b.get()};
             Pair p = dpdk_pair(std::move(a), std::move(b), planes);
             p.set_link = [base, d0 = d[0], d1 = d[1]](std::uint32_t e, std::uint32_t pl, bool up) {
                 dpdk_sh("ip link set " + tap_iface("c", base + 8 * e + pl) + (up ? " up" : " down"));
                 // The tap's link event reaches the driver off the data path: wait for its view.
                 dpdk::DpdkDriver* self = e == 0 ? d0 : d1;
                 const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
                 while (std::chrono::steady_clock::now() < until && self->link_up(pl) != up)
                     std::this_thread::sleep_for(std::chrono::microseconds(100));
             };
             // The kernel side must be up before the suite looks at links.
             wait_all_up(*p.a, *p.b, planes, p.now);
             return p;
         }},
    };
}

}  // namespace omrc::test::conformance
