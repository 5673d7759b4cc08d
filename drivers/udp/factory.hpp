// SPDX-License-Identifier: BSD-3-Clause
// The "udp" driver's registration (factory.cpp): a device over kernel UDP
// sockets (plain frame mode) or raw AF_PACKET sockets (srv6 frame mode).
// Arguments: drivers/udp/udp.hpp (parse_args) and docs/DRIVERS.md.
#pragma once

namespace omrc::udp {

/// Makes "udp" available to omrc::Device::open(). Idempotent and
/// thread-safe; returns 0. Called by drivers/builtin.cpp.
int register_driver();

}  // namespace omrc::udp
