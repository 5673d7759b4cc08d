// SPDX-License-Identifier: BSD-3-Clause
// "dpdk": DeviceOptions::args → DpdkOptions → a DpdkDriver, registered by
// omrc::dpdk::register_driver() (include/omrc/dpdk.hpp, which describes the
// arguments; so does docs/DRIVERS.md).
#include <algorithm>
#include <cerrno>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "driver/args.hpp"
#include "driver/registry.hpp"
#include "drivers/dpdk/dpdk_driver.hpp"
#include "omrc/dpdk.hpp"

namespace omrc::dpdk {

namespace {

constexpr driver::ArgKey kKeys[] = {{"eal"},     {"vdevs"},   {"ports"},        {"rx_desc"}, {"tx_desc"},
                                    {"mbufs"},   {"zero_copy"}, {"backlog"},     {"link_poll_us"}, {"icrc"},
                                    {"telemetry"}, {"mtu"},     {"steering"}};

int parse_options(const DeviceOptions& options, DpdkOptions& out, std::string& error) {
    driver::ArgReader a(options.args, kKeys);
    std::uint64_t link_poll_us = out.link_poll_ns / 1000;
    // vdevs are separated by ';': a vdev's own arguments use commas.
    a.text("eal", out.eal)
        .list("vdevs", out.vdevs, ';')
        .list("ports", out.ports)
        .number("rx_desc", out.rx_desc, 64, 16384)
        .number("tx_desc", out.tx_desc, 64, 16384)
        .number("mbufs", out.mbufs, 1024)
        .flag("zero_copy", out.zero_copy)
        .flag("telemetry", out.telemetry)
        .number("link_poll_us", link_poll_us, 0, 10'000'000)
        .number("backlog", out.backlog, 32, 65536)
        .choice("icrc", out.icrc,
                {{"auto", IcrcChoice::automatic}, {"software", IcrcChoice::software}, {"none", IcrcChoice::none}})
        .number("mtu", out.mtu, 256, 4096)
        .choice("steering", out.steer_by_qpn, {{"qpn", true}, {"spread", false}});
    if (!a.ok()) {
        error = a.error();
        return EINVAL;
    }
    out.link_poll_ns = link_poll_us * 1000;
    return 0;
}

int make_dpdk_driver(const DeviceOptions& options, driver::AttachedDriver& out, std::string& error) noexcept {
    DpdkOptions o;
    if (const int e = parse_options(options, o, error); e != 0) return e;
    o.queues = options.workers;  // a queue pair per worker on every port
    std::shared_ptr<DpdkPorts> shared;
    if (const int e = DpdkPorts::open(o, shared, error); e != 0) return e;
    const auto& ports = shared->ports();
    for (std::size_t i = 0; i < ports.size(); ++i)
        std::copy(ports[i]->mac.begin(), ports[i]->mac.end(), out.macs[i].begin());
    // fd6d:7263:0:d9d::<MAC of plane 0>: a unique-local default address.
    out.default_addr = {0xfd, 0x6d, 0x72, 0x63, 0x00, 0x00, 0x0d, 0x9d};
    std::copy(ports[0]->mac.begin(), ports[0]->mac.end(), out.default_addr.begin() + 10);
    for (std::uint32_t q = 0; q < o.queues; ++q) out.queues.push_back(std::make_unique<DpdkDriver>(shared, q));
    return 0;
}

}  // namespace

int register_driver() { return driver::register_driver({.name = "dpdk", .factory = &make_dpdk_driver, .arg_keys = kKeys}); }

// The library registers its driver when it is loaded, as DPDK's own drivers
// do: a program or library that links libomrc_dpdk (libibverbs.so.1 does
// where DPDK was found) opens and configures "dpdk" devices without naming
// the driver. Calling register_driver() again is harmless.
[[gnu::constructor]] static void register_on_load() { (void)register_driver(); }

}  // namespace omrc::dpdk
