// SPDX-License-Identifier: BSD-3-Clause
// DeviceOptions::args of the udp driver.
#include <arpa/inet.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <string_view>

#include "drivers/udp/udp.hpp"

namespace omrc::udp {

namespace {

bool parse_u64(std::string_view s, std::uint64_t& out) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && end == s.data() + s.size() && !s.empty();
}

bool parse_ipv6(std::string_view s, wire::Ipv6Addr& out) {
    if (s.empty() || s.size() >= INET6_ADDRSTRLEN) return false;
    char buf[INET6_ADDRSTRLEN] = {};
    std::memcpy(buf, s.data(), s.size());
    return inet_pton(AF_INET6, buf, out.data()) == 1;
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
            if (rest.front() != ':' || !parse_u64(rest.substr(1), port) || port > 65535) return false;
            e.base_port = static_cast<std::uint16_t>(port);
        }
    } else if (!parse_ipv6(s, e.addr)) {
        return false;
    }
    out = e;
    return true;
}

namespace {

/// Raw (SRv6) mode: ifaces=IF[,IF...], local=[ipv6] (address only).
int parse_raw_args(const std::map<std::string, std::string, std::less<>>& args, std::uint32_t device_planes,
                   UdpConfig& out, std::string& error) {
    UdpConfig c;
    c.rx_depth = 32;  // one socket per plane: more receives posted on it
    PlaneEndpoint local;
    bool have_local = false;
    for (const auto& [key, value] : args) {
        if (key == "ifaces") {
            std::string_view rest = value;
            while (true) {
                const std::size_t comma = rest.find(',');
                const std::string_view name = rest.substr(0, comma);
                if (name.empty() || name.size() >= 16 || name.find('/') != std::string_view::npos) {
                    error = fmt::format("ifaces: '{}' is not an interface name", name);
                    return EINVAL;
                }
                c.ifaces.emplace_back(name);
                if (comma == std::string_view::npos) break;
                rest = rest.substr(comma + 1);
            }
            continue;
        }
        if (key == "local") {
            if (!parse_endpoint(value, local) || local.base_port != 0) {
                error = fmt::format("local: '{}' must be [ipv6] (no port in srv6 mode)", value);
                return EINVAL;
            }
            have_local = true;
            continue;
        }
        std::uint64_t v = 0;
        if (!parse_u64(value, v) || v > UINT32_MAX) {
            error = fmt::format("{}={} is not an unsigned 32-bit integer", key, value);
            return EINVAL;
        }
        const auto v32 = static_cast<std::uint32_t>(v);
        if (key == "rx_depth") {
            c.rx_depth = v32;
        } else if (key == "tx_slots") {
            c.tx_slots = v32;
        } else if (key == "ring_entries") {
            c.ring_entries = v32;
        } else if (key == "sock_buf_bytes") {
            c.sock_buf_bytes = v32;
        } else if (key == "link_poll_us") {
            c.link_poll_us = v32;
        } else {
            error = fmt::format("unknown option {} in srv6 mode (ifaces, local, rx_depth, tx_slots, ring_entries, "
                                "sock_buf_bytes, link_poll_us)",
                                key);
            return EINVAL;
        }
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
    static constexpr wire::Ipv6Addr kUnspecified{};
    if (have_local && local.addr == kUnspecified) {
        error = "local: the wildcard address :: cannot be a device address";
        return EINVAL;
    }
    if (c.rx_depth < 1 || c.rx_depth > 256) {
        error = "rx_depth must be 1..256 in srv6 mode";
        return EINVAL;
    }
    if (c.tx_slots < 16 || c.tx_slots > 65536) {
        error = "tx_slots must be 16..65536";
        return EINVAL;
    }
    if (c.ring_entries > 32768) {
        error = "ring_entries must be ≤ 32768";
        return EINVAL;
    }
    // One entry per interface; the address is the same for all (all zero: unset).
    c.planes.assign(c.ifaces.size(), PlaneEndpoint{have_local ? local.addr : wire::Ipv6Addr{}, 0});
    out = std::move(c);
    return 0;
}

}  // namespace

int parse_args(const std::map<std::string, std::string, std::less<>>& args, std::uint32_t device_planes,
               UdpConfig& out, std::string& error, bool raw) {
    if (raw) return parse_raw_args(args, device_planes, out, error);
    UdpConfig c;
    std::vector<PlaneEndpoint> local;
    std::uint64_t planes = 0;
    for (const auto& [key, value] : args) {
        if (key == "ifaces") {
            error = "ifaces is for frame_mode srv6 (raw sockets) only";
            return EINVAL;
        }
        if (key == "local") {
            std::string_view rest = value;
            while (true) {
                const std::size_t comma = rest.find(',');
                PlaneEndpoint e;
                if (!parse_endpoint(rest.substr(0, comma), e)) {
                    error = fmt::format("local: '{}' is not [ipv6]:port or [ipv6]", rest.substr(0, comma));
                    return EINVAL;
                }
                local.push_back(e);
                if (comma == std::string_view::npos) break;
                rest = rest.substr(comma + 1);
            }
            continue;
        }
        std::uint64_t v = 0;
        if (!parse_u64(value, v) || v > UINT32_MAX) {
            error = fmt::format("{}={} is not an unsigned 32-bit integer", key, value);
            return EINVAL;
        }
        const auto v32 = static_cast<std::uint32_t>(v);
        if (key == "planes") {
            planes = v;
        } else if (key == "rx_depth") {
            c.rx_depth = v32;
        } else if (key == "tx_slots") {
            c.tx_slots = v32;
        } else if (key == "ring_entries") {
            c.ring_entries = v32;
        } else if (key == "sock_buf_bytes") {
            c.sock_buf_bytes = v32;
        } else if (key == "link_probe_ms") {
            c.link_probe_ms = v32;
        } else {
            error = fmt::format("unknown option {} (local, planes, rx_depth, tx_slots, ring_entries, "
                                "sock_buf_bytes, link_probe_ms)",
                                key);
            return EINVAL;
        }
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
    static constexpr wire::Ipv6Addr kUnspecified{};
    if (local[0].addr == kUnspecified) {
        error = "local: the wildcard address :: cannot be a device address";
        return EINVAL;
    }
    if (c.rx_depth < 1 || c.rx_depth > 64) {
        error = "rx_depth must be 1..64";
        return EINVAL;
    }
    if (c.tx_slots < 16 || c.tx_slots > 65536) {
        error = "tx_slots must be 16..65536";
        return EINVAL;
    }
    if (c.ring_entries > 32768) {
        error = "ring_entries must be ≤ 32768";
        return EINVAL;
    }
    if (c.link_probe_ms < 1) {
        error = "link_probe_ms must be ≥ 1";
        return EINVAL;
    }
    c.planes = std::move(local);
    out = std::move(c);
    return 0;
}

}  // namespace omrc::udp
