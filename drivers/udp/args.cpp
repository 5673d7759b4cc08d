// SPDX-License-Identifier: BSD-3-Clause
// DeviceOptions::args of the udp driver: one table of keys for both frame
// modes, read with driver::ArgReader.
#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <string_view>

#include "driver/args.hpp"
#include "drivers/udp/udp.hpp"

namespace omrc::udp {

namespace {

bool parse_ipv6(std::string_view s, wire::Ipv6Addr& out) {
    if (s.empty() || s.size() >= INET6_ADDRSTRLEN) return false;
    char buf[INET6_ADDRSTRLEN] = {};
    std::memcpy(buf, s.data(), s.size());
    return inet_pton(AF_INET6, buf, out.data()) == 1;
}

// The frame modes, as ArgKey::modes bits.
constexpr std::uint32_t kPlain = 1u << 0;  ///< UDP datagrams over kernel sockets
constexpr std::uint32_t kSrv6 = 1u << 1;   ///< whole Ethernet frames over AF_PACKET sockets
constexpr std::uint32_t kBoth = kPlain | kSrv6;

constexpr driver::ArgKey kKeys[] = {
    {"local", kBoth},         {"planes", kPlain},         {"ifaces", kSrv6},
    {"rx_depth", kBoth},      {"tx_slots", kBoth},        {"ring_entries", kBoth},
    {"sock_buf_bytes", kBoth}, {"link_probe_ms", kPlain}, {"link_poll_us", kSrv6},
    {"steering", kBoth},
};

constexpr wire::Ipv6Addr kUnspecified{};

/// srv6 mode: ifaces=IF[,IF...] (one per plane), local=[ipv6] (the address only).
int finish_srv6(driver::ArgReader& args, std::uint32_t device_planes, UdpConfig& c, std::string& error) {
    args.list("ifaces", c.ifaces, ',', driver::Empty::keep);
    PlaneEndpoint local;
    if (const std::string* v = args.find("local"); v != nullptr && (!parse_endpoint(*v, local) || local.base_port != 0))
        args.fail(fmt::format("local: '{}' must be [ipv6] (no port in srv6 mode)", *v));
    for (const std::string& name : c.ifaces)
        if (name.size() >= 16 || name.find('/') != std::string::npos)
            args.fail(fmt::format("ifaces: '{}' is not an interface name", name));
    if (!args.ok()) {
        error = args.error();
        return EINVAL;
    }
    if (c.ifaces.empty()) {
        error = "srv6 frame mode needs ifaces=IF[,IF...] (one network interface per plane)";
        return EINVAL;
    }
    if (c.ifaces.size() > core::kMaxPlanes) {
        error = fmt::format("ifaces: {} interfaces exceed {} planes", c.ifaces.size(), core::kMaxPlanes);
        return EINVAL;
    }
    if (device_planes != 0 && device_planes > c.ifaces.size()) {
        error = fmt::format("ifaces has {} entries for {} planes", c.ifaces.size(), device_planes);
        return EINVAL;
    }
    for (std::size_t p = 0; p < c.ifaces.size(); ++p)
        for (std::size_t q = 0; q < p; ++q)
            if (c.ifaces[p] == c.ifaces[q]) {
                error = fmt::format("ifaces: planes {} and {} use the same interface {}", q, p, c.ifaces[p]);
                return EINVAL;
            }
    if (args.has("local") && local.addr == kUnspecified) {
        error = "local: the wildcard address :: cannot be a device address";
        return EINVAL;
    }
    // One entry per interface; the address is the same for all (all zero: unset).
    c.planes.assign(c.ifaces.size(), PlaneEndpoint{local.addr, 0});
    return 0;
}

/// plain mode: local=ADDR[,ADDR...] and planes=N.
int finish_plain(driver::ArgReader& args, std::uint32_t device_planes, UdpConfig& c, std::string& error) {
    std::vector<PlaneEndpoint> local;
    if (const std::string* v = args.find("local"))
        for (std::string_view item : driver::split(*v)) {
            PlaneEndpoint e;
            if (!parse_endpoint(item, e)) {
                args.fail(fmt::format("local: '{}' is not [ipv6]:port or [ipv6]", item));
                break;
            }
            local.push_back(e);
        }
    std::uint64_t planes = 0;
    args.number("planes", planes);
    if (!args.ok()) {
        error = args.error();
        return EINVAL;
    }
    if (local.empty()) local.push_back(PlaneEndpoint{wire::Ipv6Addr{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 0});
    if (planes == 0) planes = device_planes;
    if (planes == 0) planes = local.size();
    if (planes > core::kMaxPlanes) {
        error = fmt::format("planes={} exceeds {}", planes, core::kMaxPlanes);
        return EINVAL;
    }
    if (local.size() == 1 && planes > 1) {
        // One entry for all planes: consecutive blocks (or all picked).
        for (std::uint64_t p = 1; p < planes; ++p) {
            PlaneEndpoint e = local[0];
            if (e.base_port != 0) {
                const std::uint64_t port = e.base_port + p * kSocketsPerPlane;
                if (port + kSocketsPerPlane > 65536) {
                    error = fmt::format("local: {} planes of {} ports from {} run past port 65535", planes,
                                        kSocketsPerPlane, e.base_port);
                    return EINVAL;
                }
                e.base_port = static_cast<std::uint16_t>(port);
            }
            local.push_back(e);
        }
    }
    if (local.size() < planes) {
        error = fmt::format("local has {} entries for {} planes", local.size(), planes);
        return EINVAL;
    }
    local.resize(planes);
    for (std::size_t p = 0; p < local.size(); ++p) {
        if (local[p].addr != local[0].addr) {
            error = "local: every plane must use the same address (planes differ by port; docs/DRIVERS.md)";
            return EINVAL;
        }
        if (local[p].base_port % kSocketsPerPlane != 0 ||
            std::uint32_t{local[p].base_port} + kSocketsPerPlane > 65536) {
            error = fmt::format("local: plane {} port {} must be a multiple of {} (a block of {} ports)", p,
                                local[p].base_port, kSocketsPerPlane, kSocketsPerPlane);
            return EINVAL;
        }
        for (std::size_t q = 0; q < p; ++q)
            if (local[p].base_port != 0 && local[p].base_port == local[q].base_port) {
                error = fmt::format("local: planes {} and {} use the same ports", q, p);
                return EINVAL;
            }
    }
    if (local[0].addr == kUnspecified) {
        error = "local: the wildcard address :: cannot be a device address";
        return EINVAL;
    }
    c.planes = std::move(local);
    return 0;
}

}  // namespace

bool parse_endpoint(std::string_view s, PlaneEndpoint& out) {
    PlaneEndpoint e;
    if (!s.empty() && s.front() == '[') {
        const std::size_t close = s.find(']');
        if (close == std::string_view::npos || !parse_ipv6(s.substr(1, close - 1), e.addr)) return false;
        const std::string_view rest = s.substr(close + 1);
        if (!rest.empty()) {
            std::uint64_t port = 0;
            if (rest.front() != ':' || !driver::parse_uint(rest.substr(1), port) || port > 65535) return false;
            e.base_port = static_cast<std::uint16_t>(port);
        }
    } else if (!parse_ipv6(s, e.addr)) {
        return false;
    }
    out = e;
    return true;
}

std::span<const driver::ArgKey> arg_keys() noexcept { return kKeys; }

int parse_args(const std::map<std::string, std::string, std::less<>>& args, std::uint32_t device_planes,
               UdpConfig& out, std::string& error, bool raw) {
    UdpConfig c;
    // srv6 mode has one socket per plane (plain: kSocketsPerPlane): it posts
    // more receives on it.
    if (raw) c.rx_depth = 32;
    driver::ArgReader a(args, kKeys, raw ? kSrv6 : kPlain, raw ? "srv6 frame" : "plain frame");
    a.number("rx_depth", c.rx_depth, 1, raw ? 256 : 64)
        .number("tx_slots", c.tx_slots, 16, 65536)
        .number("ring_entries", c.ring_entries, 0, 32768)
        .number("sock_buf_bytes", c.sock_buf_bytes)
        .number("link_probe_ms", c.link_probe_ms, 1)
        .number("link_poll_us", c.link_poll_us)
        .choice("steering", c.spread, {{"qpn", false}, {"spread", true}});
    if (const int rc = raw ? finish_srv6(a, device_planes, c, error) : finish_plain(a, device_planes, c, error))
        return rc;
    out = std::move(c);
    return 0;
}

}  // namespace omrc::udp
