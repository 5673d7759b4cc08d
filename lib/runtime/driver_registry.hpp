// SPDX-License-Identifier: BSD-3-Clause
// Runtime driver registry: driver name → factory. Device::open() looks the
// name up here, so every driver lives in one binary and is chosen at run
// time. Built-in drivers (loopback, udp) are present from the start; a driver
// library adds itself with register_driver() before the first open().
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

namespace omrc::runtime {

/// What a factory hands back: the driver of one endpoint and how that
/// endpoint is addressed.
struct AttachedDriver {
    /// Whatever the driver needs kept alive (e.g. a private loopback fabric).
    /// Declared first: destroyed after `driver`.
    std::shared_ptr<void> keepalive;
    std::unique_ptr<driver::Driver> driver;
    core::PlaneMacs macs{};          ///< our MAC on each plane
    wire::Ipv6Addr default_addr{};   ///< used when DeviceOptions::local_addr is all zero
};

/// Builds a driver from the options (args, driver_context, planes). Returns
/// 0, or an errno (EINVAL bad options, EBUSY endpoint taken, ...).
using DriverFactory = int (*)(const DeviceOptions& options, AttachedDriver& out);

/// Adds a driver. Returns 0, or EEXIST when the name is taken. Thread-safe.
int register_driver(std::string name, DriverFactory factory);
/// The factory of `name`, or nullptr. Thread-safe.
[[nodiscard]] DriverFactory find_driver(std::string_view name);
/// Registered names, sorted. Thread-safe.
[[nodiscard]] std::vector<std::string> driver_names();

/// Built-in: the in-process loopback driver (driver_loopback.cpp).
int make_loopback_driver(const DeviceOptions& options, AttachedDriver& out);
/// Built-in: kernel UDP sockets driven by io_uring (driver_udp.cpp).
int make_udp_driver(const DeviceOptions& options, AttachedDriver& out);

}  // namespace omrc::runtime
