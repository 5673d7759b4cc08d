// SPDX-License-Identifier: BSD-3-Clause
// "udp": a device over kernel UDP sockets driven by io_uring
// (drivers/udp/udp.hpp; arguments in docs/DRIVERS.md).
#include "drivers/udp/factory.hpp"

#include <cerrno>
#include <string>

#include "driver/registry.hpp"
#include "drivers/udp/udp.hpp"
#include "log/log.hpp"

namespace omrc::udp {

namespace {

int make_udp_driver(const DeviceOptions& options, driver::AttachedDriver& out, std::string& error) noexcept {
    if (options.driver_context.has_value()) {
        error = "driver_context is not used by this driver; leave it empty";
        return EINVAL;
    }
    // srv6: whole Ethernet frames through one AF_PACKET socket per interface
    // (`ifaces`); plain: UDP datagrams.
    const bool raw = options.frame_mode == FrameMode::srv6;
    UdpConfig cfg;
    if (const int rc = parse_args(options.args, options.planes, cfg, error, raw); rc != 0) return rc;
    static constexpr Ipv6Addr kUnset{};
    if (raw) {
        // The frame carries the engine's addresses as they are: `local` and
        // DeviceOptions::local_addr are two ways to name it and must agree.
        if (options.local_addr != kUnset && cfg.planes[0].addr != kUnset && options.local_addr != cfg.planes[0].addr) {
            error = "DeviceOptions::local_addr and `local` differ";
            return EINVAL;
        }
        if (options.local_addr != kUnset)
            for (auto& e : cfg.planes) e.addr = options.local_addr;
    } else if (options.local_addr != kUnset && options.local_addr != cfg.planes[0].addr) {
        // The receiver rebuilds the IPv6 source from the datagram's source,
        // and the ICRC covers it: the engine must use the sockets' address.
        error = "DeviceOptions::local_addr must be the address of `local` (or left unset)";
        return EINVAL;
    }
    std::unique_ptr<UdpDriver> drv;
    if (const int rc = UdpDriver::open(cfg, drv, error); rc != 0) return rc;
    out.macs = drv->macs();
    out.default_addr = drv->address();
    if (raw)
        log::logger().info("udp: srv6 mode, {} planes over raw sockets", drv->planes());
    else
        log::logger().info("udp: {} planes, first port {}", drv->planes(), drv->base_port(0));
    out.driver = std::move(drv);
    return 0;
}

}  // namespace

int register_driver() { return driver::register_driver("udp", &make_udp_driver); }

}  // namespace omrc::udp
