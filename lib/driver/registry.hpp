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
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "driver/args.hpp"
#include "driver/driver.hpp"
#include "omrc/verbs.hpp"
#include "wire/ipv6.hpp"

namespace omrc::driver {

/// What a factory hands back: the queues of one endpoint and how that
/// endpoint is addressed.
struct AttachedDriver {
    /// Whatever the driver needs kept alive (e.g. a private loopback fabric).
    /// Declared first: destroyed after the queues.
    std::shared_ptr<void> keepalive;
    /// One queue per worker (DeviceOptions::workers of them, queue w for
    /// worker w; see Driver). Destroyed in reverse order.
    std::vector<std::unique_ptr<Driver>> queues;
    core::PlaneMacs macs{};          ///< our MAC on each plane
    wire::Ipv6Addr default_addr{};   ///< used when DeviceOptions::local_addr is all zero
};

/// The one open contract of every driver: builds the driver of one endpoint
/// from the options (args, driver_context, planes, frame_mode, local_addr,
/// workers: exactly that many queues, or EINVAL saying how many it can).
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

/// How a driver's plain-frame-mode address travels in what an ibverbs
/// program exchanges with its peer: the GID carries the IPv6 address, a
/// 16-bit LID the rest (lib/ibverbs, docs/IBVERBS.md). A driver whose peers
/// need more than the IPv6 address (e.g. per-plane MACs) and can pack it in a
/// LID provides one; without one the LID is 0 and the peer's MACs come from
/// the local device's next_hop_macs. (srv6 frame mode needs no codec: the
/// LID is the host index in the fabric, whatever the driver.)
struct LidCodec {
    /// The LID of a device whose address is `a`; false with `why` in words
    /// when peers cannot rebuild the address from GID and LID.
    bool (*encode)(const DeviceAddress& a, std::uint16_t& lid, std::string& why) = nullptr;
    /// The per-plane MACs of a peer whose LID is `lid` into `peer`
    /// (peer.planes is set), seen from a local device whose address is `local`.
    void (*decode)(std::uint16_t lid, const DeviceAddress& local, DeviceAddress& peer) = nullptr;
};

/// What a driver registers: everything the layers above need to know about
/// it, so that none of them names it (docs/ARCHITECTURE.md, "Adding a driver").
struct DriverInfo {
    std::string_view name;             ///< Device::open's name; non-empty
    DriverFactory factory = nullptr;   ///< non-null
    /// The DeviceOptions::args keys the factory accepts (its ArgReader table);
    /// configuration files reject any other key when they are read. Static storage.
    std::span<const ArgKey> arg_keys{};
    const LidCodec* lid_codec = nullptr;  ///< null: LID 0 in plain mode (static storage)
};

/// Adds a driver. Returns 0 (also when the same factory is registered under
/// `info.name` already: a driver's own register_driver() may run any number
/// of times), EEXIST when another factory holds the name, EINVAL for an
/// empty name or a null factory. Thread-safe.
int register_driver(const DriverInfo& info);
/// The registration of `name`, or nullopt. Thread-safe.
[[nodiscard]] std::optional<DriverInfo> find_driver(std::string_view name);
/// Registered names, sorted. Thread-safe.
[[nodiscard]] std::vector<std::string> driver_names();

/// Registers the drivers built into libomrc (loopback, udp). Idempotent and
/// thread-safe. Defined by drivers/builtin.cpp, not by this library: the
/// runtime, which sits above the drivers, calls it before it looks a name up.
void register_builtin_drivers();

}  // namespace omrc::driver
