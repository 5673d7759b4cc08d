// SPDX-License-Identifier: BSD-3-Clause
// "dpdk": DeviceOptions::args → DpdkOptions → a DpdkDriver, registered by
// omrc::dpdk::register_driver() (include/omrc/dpdk.hpp). The arguments are
// described there and in docs/DRIVERS.md.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <mutex>
#include <string>
#include <vector>

#include "driver/registry.hpp"
#include "drivers/dpdk/dpdk_driver.hpp"
#include "log/log.hpp"
#include "omrc/dpdk.hpp"

namespace omrc::dpdk {

namespace {

bool parse_u32(std::string_view s, std::uint32_t& out) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc{} && end == s.data() + s.size() && !s.empty();
}

std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!item.empty()) out.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

/// Parses DeviceOptions::args. Returns 0 or EINVAL (logged).
int parse_options(const DeviceOptions& options, DpdkOptions& out) {
    for (const auto& [key, value] : options.args) {
        std::uint32_t v = 0;
        if (key == "eal") {
            out.eal = value;
        } else if (key == "ports") {
            out.ports = split_commas(value);
        } else if (key == "vdevs") {
            std::size_t start = 0;
            while (start <= value.size()) {
                const std::size_t semi = value.find(';', start);
                std::string item = value.substr(start, semi == std::string::npos ? std::string::npos : semi - start);
                if (!item.empty()) out.vdevs.push_back(std::move(item));
                if (semi == std::string::npos) break;
                start = semi + 1;
            }
        } else if (key == "rx_desc" || key == "tx_desc") {
            if (!parse_u32(value, v) || v < 64 || v > 16384) {
                log::logger().error("dpdk: {}={} must be 64..16384", key, value);
                return EINVAL;
            }
            (key == "rx_desc" ? out.rx_desc : out.tx_desc) = static_cast<std::uint16_t>(v);
        } else if (key == "mbufs") {
            if (!parse_u32(value, v) || v < 1024) {
                log::logger().error("dpdk: mbufs={} must be ≥ 1024", value);
                return EINVAL;
            }
            out.mbufs = v;
        } else if (key == "zero_copy") {
            if (value != "0" && value != "1") {
                log::logger().error("dpdk: zero_copy={} must be 0 or 1", value);
                return EINVAL;
            }
            out.zero_copy = value == "1";
        } else if (key == "link_poll_us") {
            if (!parse_u32(value, v) || v > 10'000'000) {
                log::logger().error("dpdk: link_poll_us={} must be 0..10000000", value);
                return EINVAL;
            }
            out.link_poll_ns = std::uint64_t{v} * 1000;
        } else if (key == "icrc") {
            if (value == "auto") out.icrc = IcrcChoice::automatic;
            else if (value == "software") out.icrc = IcrcChoice::software;
            else if (value == "none") out.icrc = IcrcChoice::none;
            else {
                log::logger().error("dpdk: icrc={} must be auto, software or none", value);
                return EINVAL;
            }
        } else if (key == "backlog") {
            if (!parse_u32(value, v) || v < 32 || v > 65536) {
                log::logger().error("dpdk: backlog={} must be 32..65536", value);
                return EINVAL;
            }
            out.backlog = v;
        } else {
            log::logger().error("dpdk: unknown option {} (eal, vdevs, ports, rx_desc, tx_desc, mbufs, zero_copy, backlog, link_poll_us, icrc)",
                                    key);
            return EINVAL;
        }
    }
    return 0;
}

int make_dpdk_driver(const DeviceOptions& options, driver::AttachedDriver& out) {
    DpdkOptions o;
    if (const int e = parse_options(options, o); e != 0) return e;
    std::unique_ptr<DpdkDriver> drv;
    try {
        drv = std::make_unique<DpdkDriver>(o);
    } catch (const std::exception& e) {
        log::logger().error("dpdk: {}", e.what());
        return ENODEV;
    }
    const auto& ports = drv->ports();
    for (std::size_t i = 0; i < ports.size(); ++i) std::copy(ports[i].mac.begin(), ports[i].mac.end(), out.macs[i].begin());
    // fd6d:7263:0:d9d::<MAC of plane 0>: a unique-local default address.
    out.default_addr = {0xfd, 0x6d, 0x72, 0x63, 0x00, 0x00, 0x0d, 0x9d};
    std::copy(ports[0].mac.begin(), ports[0].mac.end(), out.default_addr.begin() + 10);
    out.driver = std::move(drv);
    return 0;
}

}  // namespace

int register_driver() {
    static std::once_flag once;
    std::call_once(once, [] { (void)driver::register_driver("dpdk", &make_dpdk_driver); });
    return 0;
}

}  // namespace omrc::dpdk
