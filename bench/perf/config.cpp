// SPDX-License-Identifier: BSD-3-Clause
// omrc-perf --config FILE [--device NAME]: the device's driver, DeviceOptions
// and QP attributes from a device configuration file (docs/CONFIG.md); what
// the command line gives explicitly wins.
#include <fmt/format.h>

#include <vector>

#include "omrc/config.hpp"
#include "perf.hpp"

namespace omrc::perf {

std::string apply_config(const std::string& file, const std::string& device, const GivenOnCommandLine& given,
                         Options& o) {
    ConfigFile cfg;
    std::string error;
    if (load_config(file, &cfg, &error) != 0) return error;
    const DeviceConfig* d = device.empty() ? &cfg.devices.front() : cfg.find(device);
    if (d == nullptr) {
        std::vector<std::string> names;
        for (const DeviceConfig& c : cfg.devices) names.push_back(c.name);
        return fmt::format("{}: no device '{}' (its devices: {})", file, device, fmt::join(names, ", "));
    }
    o.config = file;
    o.device = d->name;
    o.device_options = d->options;
    if (!given.driver) o.driver = d->driver;
    if (!given.planes) o.planes = d->options.planes;
    if (!given.policy) o.policy = to_string(d->qp.path_policy);
    if (!given.evs) o.evs = d->qp.evs;
    if (!given.mtu && d->qp.mtu_bytes != 0) o.mtu = d->qp.mtu_bytes;
    o.backup_evs = d->qp.backup_evs;
    o.mpr = d->qp.mpr;
    o.cc = d->qp.cc;
    return {};
}

}  // namespace omrc::perf
