// SPDX-License-Identifier: BSD-3-Clause
// "udp": a device over kernel UDP sockets driven by io_uring
// (drivers/udp/udp.hpp; arguments in docs/DRIVERS.md).
#include "drivers/udp/factory.hpp"

#include <cerrno>
#include <fmt/format.h>
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
    // One socket set and ring per worker (steering.cpp): queue 0 picks the
    // ports, the others bind the same ones.
    cfg.queues = options.workers;
    for (std::uint32_t q = 0; q < options.workers; ++q) {
        cfg.queue = q;
        std::unique_ptr<UdpDriver> drv;
        if (const int rc = UdpDriver::open(cfg, drv, error); rc != 0) {
            if (q > 0) error = fmt::format("worker {}: {}", q, error);
            return rc;
        }
        if (q == 0) {
            out.macs = drv->macs();
            out.default_addr = drv->address();
            if (!raw)
                for (std::uint32_t p = 0; p < cfg.planes.size(); ++p) cfg.planes[p].base_port = drv->base_port(p);
            if (raw)
                log::logger().info("udp: srv6 mode, {} planes over raw sockets", drv->planes());
            else
                log::logger().info("udp: {} planes, first port {}", drv->planes(), drv->base_port(0));
        }
        out.queues.push_back(std::move(drv));
    }
    return 0;
}

// Plain mode's address in a LID: each plane's MAC carries the base UDP port
// of its 16-port block (plane_mac); a device whose planes use consecutive
// blocks is named by plane 0's block number, and a peer rebuilds every
// plane's MAC from it.
bool encode_lid(const DeviceAddress& a, std::uint16_t& lid, std::string& why) {
    std::uint16_t base0 = 0;
    if (a.planes == 0 || !mac_base_port(a.macs[0], base0)) {
        why = "udp device without a port block on plane 0";
        return false;
    }
    for (std::uint32_t p = 1; p < a.planes; ++p) {
        std::uint16_t base = 0;
        if (!mac_base_port(a.macs[p], base) || base != base0 + p * kSocketsPerPlane) {
            why = fmt::format("udp port blocks are not consecutive (plane 0 at {}, plane {} at {}): peers learn only "
                              "plane 0's block from the LID; give one local=[addr]:port entry for all planes",
                              base0, p, base);
            return false;
        }
    }
    lid = static_cast<std::uint16_t>(base0 / kSocketsPerPlane);
    return true;
}

void decode_lid(std::uint16_t lid, const DeviceAddress& local, DeviceAddress& peer) {
    const std::uint32_t base0 = std::uint32_t{lid} * kSocketsPerPlane;
    for (std::uint32_t p = 0; p < local.planes && p < kMaxPlanes; ++p)
        peer.macs[p] = plane_mac(static_cast<std::uint16_t>(base0 + p * kSocketsPerPlane), p);
}

constexpr driver::LidCodec kLidCodec{&encode_lid, &decode_lid};

}  // namespace

int register_driver() {
    return driver::register_driver({.name = "udp", .factory = &make_udp_driver, .arg_keys = arg_keys(),
                                    .lid_codec = &kLidCodec});
}

}  // namespace omrc::udp
