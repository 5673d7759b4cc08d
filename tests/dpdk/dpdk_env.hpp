// SPDX-License-Identifier: BSD-3-Clause
// What the DPDK tests of one process share: the EAL arguments (the EAL is
// process-wide; every port is hot-plugged by the device that uses it), and
// kernel tap interfaces wired together by tc (a cable per pair).
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>

namespace omrc::test {

/// The tests' EAL arguments, and $OMRC_TEST_EAL_EXTRA after them (run_tap.sh
/// runs the zero-copy cases again with --iova-mode=pa).
inline std::string dpdk_eal_args() {
    std::string args = "--no-huge -m 2048 --no-pci --log-level=*:warning";
    if (const char* extra = std::getenv("OMRC_TEST_EAL_EXTRA"); extra != nullptr && *extra != 0) args += std::string(" ") + extra;
    return args;
}

inline int dpdk_sh(const std::string& cmd) {
    const int rc = std::system(cmd.c_str());
    INFO(cmd);
    CHECK(rc == 0);
    return rc;
}

/// Interface name of tap `n` of this process (≤ 15 characters).
inline std::string tap_iface(const std::string& tag, unsigned n) {
    return "ot" + std::to_string(::getpid() % 100000) + tag + std::to_string(n);
}

/// The kernel side of tap `from` redirected to the egress of tap `to` and
/// back: frames one DPDK port sends arrive at the other.
inline void wire_taps(const std::string& a, const std::string& b) {
    for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
        dpdk_sh("ip link set " + from + " up");
        dpdk_sh("tc qdisc add dev " + from + " ingress");
        dpdk_sh("tc filter add dev " + from + " parent ffff: protocol all u32 match u32 0 0 action mirred egress redirect dev " + to);
    }
}

}  // namespace omrc::test
