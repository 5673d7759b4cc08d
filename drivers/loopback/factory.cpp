// SPDX-License-Identifier: BSD-3-Clause
// "loopback": attaches a device to an endpoint of an in-process
// loopback::Fabric — the caller's (DeviceOptions::driver_context) or a
// private one the device keeps alive.
#include "drivers/loopback/factory.hpp"

#include <any>
#include <cerrno>
#include <fmt/format.h>
#include <stdexcept>
#include <string>

#include "driver/args.hpp"
#include "driver/registry.hpp"
#include "drivers/loopback/loopback.hpp"

namespace omrc::loopback {

namespace {

constexpr driver::ArgKey kKeys[] = {{"endpoint"}, {"endpoints"}, {"planes"}, {"link_delay_ns"}, {"steering"}};

int make_loopback_driver(const DeviceOptions& options, driver::AttachedDriver& out, std::string& error) noexcept {
    std::uint32_t endpoint = 0;
    FabricConfig fc{};
    fc.endpoints = 1;
    fc.planes = options.planes != 0 ? options.planes : 8;
    fc.mode = ClockMode::virtual_clock;
    // The fabric checks its own ranges (FabricConfig): here only the types.
    driver::ArgReader args(options.args, kKeys);
    // steering: qpn (each frame to its QP's worker, a flow rule's job) or
    // spread (RSS on the entropy: the runtime hands frames over).
    args.number("endpoint", endpoint)
        .number("endpoints", fc.endpoints)
        .number("planes", fc.planes)
        .number("link_delay_ns", fc.link_delay_ns)
        .choice("steering", fc.steering, {{"qpn", QueueSteering::by_qpn}, {"spread", QueueSteering::spread}});
    if (!args.ok()) {
        error = args.error();
        return EINVAL;
    }
    fc.queues = options.workers;
    // Worker threads drive their queues at once: a real-time fabric, whose
    // queues are each one thread's (a virtual-clock one is one thread's in all).
    const bool threaded = uses_worker_threads(options);
    if (threaded) {
        fc.mode = ClockMode::real_time;
        fc.ring_backpressure = true;  // a full ring holds the sender back, as a NIC's queue does
    }
    const bool private_args =
        args.has("endpoints") || args.has("planes") || args.has("link_delay_ns") || args.has("steering");

    // Fabric's own API throws (a test harness wants that); the open contract
    // does not: every exception it documents ends here as an errno.
    Fabric* fabric = nullptr;
    if (options.driver_context.has_value()) {
        const auto* given = std::any_cast<Fabric*>(&options.driver_context);
        if (given == nullptr || *given == nullptr) {
            error = "driver_context must hold a non-null omrc::loopback::Fabric*";
            return EINVAL;
        }
        if (private_args) {
            error = "endpoints/planes/link_delay_ns/steering describe a private fabric; they do not apply to the "
                    "given driver_context";
            return EINVAL;
        }
        fabric = *given;
        if (threaded && fabric->config().mode == ClockMode::virtual_clock) {
            error = "worker threads on a virtual-clock fabric, which one thread drives: worker_threads = none "
                    "(or a real-time fabric)";
            return EINVAL;
        }
        if (fabric->config().queues != options.workers) {
            error = fmt::format("workers={}: the given fabric has {} queues per endpoint (FabricConfig::queues)",
                                options.workers, fabric->config().queues);
            return EINVAL;
        }
    } else {
        try {
            auto owned = std::make_shared<Fabric>(fc);
            fabric = owned.get();
            out.keepalive = std::move(owned);
        } catch (const std::invalid_argument& e) {
            error = e.what();
            return EINVAL;
        }
    }
    try {
        out.queues = fabric->attach_queues(endpoint);
    } catch (const std::out_of_range&) {
        error = fmt::format("endpoint {} does not exist (the fabric has {})", endpoint, fabric->config().endpoints);
        return EINVAL;
    } catch (const std::logic_error&) {
        error = fmt::format("endpoint {} is already attached", endpoint);
        return EBUSY;
    }
    for (std::uint32_t p = 0; p < core::kMaxPlanes; ++p) out.macs[p] = Fabric::mac(endpoint, p);
    // fd6d:7263::1:<endpoint>: a unique-local address per endpoint of a
    // fabric. The interface id is never zero (endpoint 0 included): verbs
    // software (rdma-core's tests) takes a GID with a zero interface id for
    // an empty table slot.
    out.default_addr = {0xfd, 0x6d, 0x72, 0x63};
    out.default_addr[13] = 1;
    out.default_addr[14] = static_cast<std::uint8_t>(endpoint >> 8);
    out.default_addr[15] = static_cast<std::uint8_t>(endpoint);
    return 0;
}

// A device on a private fabric (the only kind a configuration file opens)
// reaches only itself: LID 0, and the peer's MACs are the device's own.
bool encode_lid(const DeviceAddress&, std::uint16_t& lid, std::string&) {
    lid = 0;
    return true;
}

void decode_lid(std::uint16_t, const DeviceAddress& local, DeviceAddress& peer) { peer.macs = local.macs; }

constexpr driver::LidCodec kLidCodec{&encode_lid, &decode_lid};

}  // namespace

int register_driver() {
    return driver::register_driver({.name = "loopback", .factory = &make_loopback_driver, .arg_keys = kKeys,
                                    .lid_codec = &kLidCodec});
}

}  // namespace omrc::loopback
