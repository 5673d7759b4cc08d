// SPDX-License-Identifier: BSD-3-Clause
// Devices of the dpdk driver over net_memif pairs, for the tests of one
// process (test_dpdk.cpp, test_dpdk_telemetry.cpp): plane p of side 0 and
// plane p of side 1 are a memif server and client joined by a socket.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "dpdk/dpdk_env.hpp"
#include "omrc/dpdk.hpp"
#include "omrc/omrc.hpp"

namespace omrc::test {

/// Planes of the memif devices.
inline constexpr std::uint32_t kMemifPlanes = 2;

/// The memif vdevs of one side: plane p joins net_memif(base+2p) (server)
/// and net_memif(base+2p+1) (client) over a socket of its own. Every test
/// takes fresh ports (its own base): a memif pair that was stopped does not
/// always reconnect in DPDK 22.11.
inline std::string memif_vdevs(int side, int base) {
    const std::string dir = "/tmp/omrc-dpdk-test-" + std::to_string(::getpid());
    std::string v;
    for (std::uint32_t p = 0; p < kMemifPlanes; ++p) {
        const int pair = base + 2 * static_cast<int>(p);
        v += (p ? ";" : "") + std::string("net_memif") + std::to_string(pair + side) +
             (side == 0 ? ",role=server" : ",role=client") + ",id=0,bsize=8192,socket=" + dir + "-" +
             std::to_string(pair) + ".sock";
    }
    return v;
}

inline std::string memif_ports(int side, int base) {
    std::string s;
    for (std::uint32_t p = 0; p < kMemifPlanes; ++p)
        s += (p ? "," : "") + std::string("net_memif") + std::to_string(base + 2 * static_cast<int>(p) + side);
    return s;
}

/// A dpdk device on `ports`, with `extra` driver arguments ("eal" defaults
/// to dpdk_eal_args()) and the other options from `o`.
inline std::unique_ptr<Device> open_dpdk(const std::string& ports, std::uint64_t seed,
                                         std::map<std::string, std::string, std::less<>> extra = {},
                                         DeviceOptions o = {}) {
    REQUIRE(dpdk::register_driver() == 0);
    o.args = std::move(extra);
    if (!o.args.count("eal")) o.args["eal"] = dpdk_eal_args();
    o.args["ports"] = ports;
    o.seed = seed;
    int err = -1;
    auto dev = Device::open("dpdk", o, &err);
    REQUIRE(err == 0);
    REQUIRE(dev != nullptr);
    return dev;
}

/// Progresses both devices until every plane of both is up (memif connects
/// in the background).
inline bool wait_links(Device& a, Device& b) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
        a.progress();
        b.progress();
        const auto ja = nlohmann::json::parse(a.stats_json()), jb = nlohmann::json::parse(b.stats_json());
        bool up = true;
        for (const auto& l : ja["driver"]["link_up"]) up = up && l.get<bool>();
        for (const auto& l : jb["driver"]["link_up"]) up = up && l.get<bool>();
        if (up) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}

}  // namespace omrc::test
