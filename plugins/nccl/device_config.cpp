// SPDX-License-Identifier: BSD-3-Clause
// Where the plugin's devices come from: a device configuration file
// (include/omrc/config.hpp, docs/CONFIG.md) or, without one, a single device
// described by environment variables (docs/NCCL.md, "Environment").
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "device_table.hpp"

namespace omrc::nccl {

namespace {

const char* env(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
}

/// A decimal number in [lo, hi] from variable `name`; false with *error set otherwise.
bool env_number(const char* name, std::uint64_t lo, std::uint64_t hi, std::uint64_t* out, std::string* error) {
    const char* v = env(name);
    if (v == nullptr) return true;
    const std::string_view s(v);
    std::uint64_t x = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
    if (ec != std::errc{} || end != s.data() + s.size() || x < lo || x > hi) {
        *error = fmt::format("{}='{}': must be a number in {}..{}", name, s, lo, hi);
        return false;
    }
    *out = x;
    return true;
}

int from_file(const char* variable, const std::string& path, [[maybe_unused]] std::vector<DeviceConfig>* out,
              std::string* error) {
#if OMRC_NCCL_HAVE_CONFIG
    ConfigFile file;
    std::string why;
    if (const int rc = load_config(path, &file, &why)) {
        *error = fmt::format("{}: {}", variable, why);
        return rc;
    }
    *out = std::move(file.devices);
    return 0;
#else
    *error = fmt::format(
        "{}={}: this build of the plugin cannot read configuration files (libomrc without "
        "lib/config); use OMRC_NCCL_DRIVER",
        variable, path);
    return ENOTSUP;
#endif
}

}  // namespace

int devices_from_environment(std::vector<DeviceConfig>* out, std::string* error) {
    out->clear();
    for (const char* variable : {"OMRC_NCCL_CONFIG", "OMRC_IBV_CONFIG"})
        if (const char* path = env(variable)) return from_file(variable, path, out, error);

    const char* driver = env("OMRC_NCCL_DRIVER");
    if (driver == nullptr) {
        *error =
            "no device configured: set OMRC_NCCL_CONFIG to a device configuration file (docs/CONFIG.md), "
            "or OMRC_NCCL_DRIVER=loopback|udp";
        return ENODEV;
    }
    const std::string_view name(driver);
    if (name != "loopback" && name != "udp") {
        *error = fmt::format(
            "OMRC_NCCL_DRIVER='{}': must be loopback or udp (other drivers need a configuration "
            "file, OMRC_NCCL_CONFIG)",
            name);
        return EINVAL;
    }
    std::uint64_t planes = 0;
    std::uint64_t timeout_ms = 0;
    if (!env_number("OMRC_NCCL_PLANES", 1, kMaxPlanes, &planes, error) ||
        !env_number("OMRC_NCCL_QP_TIMEOUT_MS", 1, 3'600'000, &timeout_ms, error))
        return EINVAL;
    DeviceConfig d;
    d.name = "omrc0";
    d.driver = std::string(name);
    d.options.planes = static_cast<std::uint32_t>(planes);
    if (timeout_ms != 0) d.qp.timeout_ns = timeout_ms * 1'000'000;
    out->push_back(std::move(d));
    return 0;
}

}  // namespace omrc::nccl
