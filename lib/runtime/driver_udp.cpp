// SPDX-License-Identifier: BSD-3-Clause
// "udp": a device over kernel UDP sockets driven by io_uring
// (drivers/udp/udp.hpp; arguments in docs/DRIVERS.md).
#include <cerrno>
#include <string>

#include "drivers/udp/udp.hpp"
#include "runtime/driver_registry.hpp"
#include "runtime/log.hpp"

namespace omrc::runtime {

int make_udp_driver(const DeviceOptions& options, AttachedDriver& out) {
    if (options.driver_context.has_value()) {
        logger().error("udp: driver_context is not used by this driver; leave it empty");
        return EINVAL;
    }
    // srv6: whole Ethernet frames through one AF_PACKET socket per interface
    // (`ifaces`); plain: UDP datagrams.
    const bool raw = options.frame_mode == FrameMode::srv6;
    udp::UdpConfig cfg;
    std::string error;
    if (const int rc = udp::parse_args(options.args, options.planes, cfg, error, raw); rc != 0) {
        logger().error("udp: {}", error);
        return rc;
    }
    static constexpr Ipv6Addr kUnset{};
    if (raw) {
        // The frame carries the engine's addresses as they are: `local` and
        // DeviceOptions::local_addr are two ways to name it and must agree.
        if (options.local_addr != kUnset && cfg.planes[0].addr != kUnset && options.local_addr != cfg.planes[0].addr) {
            logger().error("udp: DeviceOptions::local_addr and `local` differ");
            return EINVAL;
        }
        if (options.local_addr != kUnset)
            for (auto& e : cfg.planes) e.addr = options.local_addr;
    } else if (options.local_addr != kUnset && options.local_addr != cfg.planes[0].addr) {
        // The receiver rebuilds the IPv6 source from the datagram's source,
        // and the ICRC covers it: the engine must use the sockets' address.
        logger().error("udp: DeviceOptions::local_addr must be the address of `local` (or left unset)");
        return EINVAL;
    }
    std::unique_ptr<udp::UdpDriver> drv;
    if (const int rc = udp::UdpDriver::open(cfg, drv, error); rc != 0) {
        logger().error("udp: {}", error);
        return rc;
    }
    out.macs = drv->macs();
    out.default_addr = drv->address();
    if (raw)
        logger().info("udp: srv6 mode, {} planes over raw sockets", drv->planes());
    else
        logger().info("udp: {} planes, first port {}", drv->planes(), drv->base_port(0));
    out.driver = std::move(drv);
    return 0;
}

}  // namespace omrc::runtime
