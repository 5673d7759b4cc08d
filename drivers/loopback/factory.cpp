// SPDX-License-Identifier: BSD-3-Clause
// "loopback": attaches a device to an endpoint of an in-process
// loopback::Fabric — the caller's (DeviceOptions::driver_context) or a
// private one the device keeps alive.
#include "drivers/loopback/factory.hpp"

#include <any>
#include <cerrno>
#include <charconv>
#include <mutex>
#include <stdexcept>
#include <string_view>

#include "driver/registry.hpp"
#include "drivers/loopback/loopback.hpp"
#include "log/log.hpp"

namespace omrc::loopback {

namespace {

bool parse_u64(std::string_view s, std::uint64_t& out) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && end == s.data() + s.size() && !s.empty();
}

int make_loopback_driver(const DeviceOptions& options, driver::AttachedDriver& out) {
    std::uint64_t endpoint = 0;
    FabricConfig fc{};
    fc.endpoints = 1;
    fc.planes = options.planes != 0 ? options.planes : 8;
    fc.mode = ClockMode::virtual_clock;
    bool private_args = false;
    for (const auto& [key, value] : options.args) {
        if (key != "endpoint" && key != "endpoints" && key != "planes" && key != "link_delay_ns") {
            log::logger().error("loopback: unknown option {}", key);
            return EINVAL;
        }
        std::uint64_t v = 0;
        if (!parse_u64(value, v)) {
            log::logger().error("loopback: option {}={} is not an unsigned integer", key, value);
            return EINVAL;
        }
        if (key == "endpoint") {
            endpoint = v;
        } else if (key == "endpoints" || key == "planes") {
            if (v > UINT32_MAX) return EINVAL;
            (key == "endpoints" ? fc.endpoints : fc.planes) = static_cast<std::uint32_t>(v);
            private_args = true;
        } else {  // link_delay_ns
            fc.link_delay_ns = v;
            private_args = true;
        }
    }
    if (endpoint > UINT32_MAX) return EINVAL;

    Fabric* fabric = nullptr;
    if (options.driver_context.has_value()) {
        const auto* given = std::any_cast<Fabric*>(&options.driver_context);
        if (given == nullptr || *given == nullptr) {
            log::logger().error("loopback: driver_context must hold a non-null omrc::loopback::Fabric*");
            return EINVAL;
        }
        if (private_args) {
            log::logger().error("loopback: endpoints/planes/link_delay_ns describe a private fabric; "
                                "they do not apply to the given driver_context");
            return EINVAL;
        }
        fabric = *given;
    } else {
        try {
            auto owned = std::make_shared<Fabric>(fc);
            fabric = owned.get();
            out.keepalive = std::move(owned);
        } catch (const std::invalid_argument& e) {
            log::logger().error("loopback: {}", e.what());
            return EINVAL;
        }
    }
    try {
        out.driver = fabric->attach(static_cast<std::uint32_t>(endpoint));
    } catch (const std::out_of_range&) {
        log::logger().error("loopback: endpoint {} does not exist", endpoint);
        return EINVAL;
    } catch (const std::logic_error&) {
        log::logger().error("loopback: endpoint {} is already attached", endpoint);
        return EBUSY;
    }
    for (std::uint32_t p = 0; p < core::kMaxPlanes; ++p)
        out.macs[p] = Fabric::mac(static_cast<std::uint32_t>(endpoint), p);
    // fd6d:7263::<endpoint>: a unique-local address per endpoint of a fabric.
    out.default_addr = {0xfd, 0x6d, 0x72, 0x63};
    out.default_addr[14] = static_cast<std::uint8_t>(endpoint >> 8);
    out.default_addr[15] = static_cast<std::uint8_t>(endpoint);
    return 0;
}

}  // namespace

int register_driver() {
    static std::once_flag once;
    std::call_once(once, [] { (void)driver::register_driver("loopback", &make_loopback_driver); });
    return 0;
}

}  // namespace omrc::loopback
