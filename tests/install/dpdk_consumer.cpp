// SPDX-License-Identifier: BSD-3-Clause
// An application of the installed DPDK driver: links libomrc_dpdk and
// libomrc, registers the driver and opens a device on a memif port.
#include <omrc/dpdk.hpp>
#include <omrc/omrc.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>

int main() {
    omrc::dpdk::register_driver();
    omrc::DeviceOptions o;
    o.args["eal"] = "--no-huge -m 256 --no-pci --log-level=*:error";
    o.args["vdevs"] = "net_memif0,role=server,socket=/tmp/omrc-install-" + std::to_string(::getpid()) + ".sock";
    int err = -1;
    auto dev = omrc::Device::open("dpdk", o, &err);
    if (!dev) {
        std::fprintf(stderr, "dpdk consumer: Device::open failed: %d\n", err);
        return 1;
    }
    std::printf("dpdk consumer: device with %u plane(s)\n", dev->planes());
    return dev->planes() == 1 ? 0 : 1;
}
