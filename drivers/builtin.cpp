// SPDX-License-Identifier: BSD-3-Clause
// The drivers built into libomrc: the one place that names them. A driver
// that lives in this library adds its registration here (and its directory
// to drivers/CMakeLists.txt and meson.build); a driver in a library of its
// own (drivers/dpdk) is registered by the application instead.
#include "driver/registry.hpp"
#include "drivers/loopback/factory.hpp"
#include "drivers/udp/factory.hpp"

namespace omrc::driver {

void register_builtin_drivers() {
    (void)loopback::register_driver();
    (void)udp::register_driver();
}

}  // namespace omrc::driver
