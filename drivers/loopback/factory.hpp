// SPDX-License-Identifier: BSD-3-Clause
// The "loopback" driver's registration (factory.cpp): a device on an endpoint
// of an in-process loopback::Fabric. Arguments: include/omrc/verbs.hpp
// (DeviceOptions::args) and docs/DRIVERS.md.
#pragma once

namespace omrc::loopback {

/// Makes "loopback" available to omrc::Device::open(). Idempotent and
/// thread-safe; returns 0. Called by drivers/builtin.cpp.
int register_driver();

}  // namespace omrc::loopback
