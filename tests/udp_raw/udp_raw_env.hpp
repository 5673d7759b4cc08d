// SPDX-License-Identifier: BSD-3-Clause
// The veths tests/udp_raw/run_udp_raw.sh created (one pair per plane), and
// helpers to open udp drivers in SRv6 (raw) mode on them and to change and
// observe their link state.
#pragma once

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "driver/args.hpp"
#include "drivers/udp/udp.hpp"

namespace omrc::test {

/// The interfaces of side 0 ("a") or 1 ("b"), in plane order; empty outside the wrapper.
inline std::vector<std::string> raw_ifaces(int side) {
    const char* v = std::getenv(side == 0 ? "OMRC_UDP_RAW_IFACES_A" : "OMRC_UDP_RAW_IFACES_B");
    std::vector<std::string> out;
    if (v == nullptr) return out;
    for (std::string_view name : driver::split(v, ',', driver::Empty::skip)) out.emplace_back(name);
    return out;
}

/// IFF_UP && IFF_RUNNING of an interface, as the driver reads it.
inline bool iface_running(const std::string& name) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    const bool ok = ::ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
    ::close(fd);
    return ok && (ifr.ifr_flags & IFF_UP) != 0 && (ifr.ifr_flags & IFF_RUNNING) != 0;
}

/// `ip link set NAME up|down`, then waits (≤ 5 s) until the interface flags
/// say so. The driver reads the same flags (SIOCGIFFLAGS), so its next flag
/// poll sees the change: at its next call with link_poll_us=0, within
/// link_poll_us otherwise (callers with a period poll the driver until a
/// deadline).
inline bool set_iface(const std::string& name, bool up) {
    const std::string cmd = "ip link set " + name + (up ? " up" : " down");
    if (std::system(cmd.c_str()) != 0) return false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (iface_running(name) != up) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

/// Waits (≤ 5 s) until every interface of both sides is up and running.
inline bool wait_all_running(std::uint32_t planes) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (int side = 0; side < 2; ++side) {
        const auto names = raw_ifaces(side);
        for (std::uint32_t p = 0; p < planes && p < names.size(); ++p)
            while (!iface_running(names[p])) {
                if (std::chrono::steady_clock::now() > until) return false;
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
    }
    return true;
}

/// A udp driver in raw mode on the first `planes` interfaces of `side`.
inline int open_raw_driver(int side, std::uint32_t planes, std::unique_ptr<udp::UdpDriver>& out, std::string& error,
                           std::uint32_t link_poll_us = 0) {
    udp::UdpConfig c;
    const auto names = raw_ifaces(side);
    if (names.size() < planes) {
        error = "run through tests/udp_raw/run_udp_raw.sh (no veths)";
        return ENODEV;
    }
    c.ifaces.assign(names.begin(), names.begin() + planes);
    c.planes.assign(planes, udp::PlaneEndpoint{});
    c.rx_depth = 32;
    c.link_poll_us = link_poll_us;
    return udp::UdpDriver::open(c, out, error);
}

}  // namespace omrc::test
