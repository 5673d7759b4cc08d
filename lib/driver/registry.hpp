// SPDX-License-Identifier: BSD-3-Clause
// The driver registry: driver name → factory. Device::open() looks the name
// up here, so every driver lives in one binary and is chosen at run time.
//
// A driver registers itself from its own directory (drivers/<name>/), the
// way DPDK PMDs and rdma-core providers do: it defines a factory and a
// register_driver() that adds it under its name. Nothing in lib/ names a
// driver. The drivers built into libomrc are composed in one file,
// drivers/builtin.cpp, which defines register_builtin_drivers(); a driver in
// a library of its own (drivers/dpdk, libomrc_dpdk) is registered by the
// application before its first open().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "driver/driver.hpp"
#include "omrc/verbs.hpp"
#include "wire/ipv6.hpp"

namespace omrc::driver {

/// What a factory hands back: the driver of one endpoint and how that
/// endpoint is addressed.
struct AttachedDriver {
    /// Whatever the driver needs kept alive (e.g. a private loopback fabric).
    /// Declared first: destroyed after `driver`.
    std::shared_ptr<void> keepalive;
    std::unique_ptr<Driver> driver;
    core::PlaneMacs macs{};          ///< our MAC on each plane
    wire::Ipv6Addr default_addr{};   ///< used when DeviceOptions::local_addr is all zero
};

/// The one open contract of every driver: builds the driver of one endpoint
/// from the options (args, driver_context, planes, frame_mode, local_addr).
/// Returns 0 with `out` filled, or an errno with `error` saying in words what
/// was wrong (the runtime logs it once as "<driver>: <error>" and hands the
/// errno to Device::open's caller):
///   EINVAL  bad arguments (driver::ArgReader's messages) or options
///   EBUSY   an endpoint or port that another device holds
///   ENODEV  no such port, interface or device
///   EPERM   a privilege the driver needs is missing
///   ENOMEM  out of memory or buffers
///   or the errno of the system call that failed.
/// noexcept: no exception crosses the contract; a factory catches what the
/// code it calls may throw.
using DriverFactory = int (*)(const DeviceOptions& options, AttachedDriver& out, std::string& error) noexcept;

/// Adds a driver. Returns 0 (also when `factory` is registered under `name`
/// already: a driver's own register_driver() may run any number of times),
/// EEXIST when another factory holds the name, EINVAL for an empty name or
/// a null factory. Thread-safe.
int register_driver(std::string name, DriverFactory factory);
/// The factory of `name`, or nullptr. Thread-safe.
[[nodiscard]] DriverFactory find_driver(std::string_view name);
/// Registered names, sorted. Thread-safe.
[[nodiscard]] std::vector<std::string> driver_names();

/// Registers the drivers built into libomrc (loopback, udp). Idempotent and
/// thread-safe. Defined by drivers/builtin.cpp, not by this library: the
/// runtime, which sits above the drivers, calls it before it looks a name up.
void register_builtin_drivers();

}  // namespace omrc::driver
