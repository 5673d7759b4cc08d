// SPDX-License-Identifier: BSD-3-Clause
// Device configuration files: the one way every OpenMRC front end (omrc-perf
// --config, the libibverbs-compatible library, the NCCL plugin) names a
// device. A file is TOML (docs/CONFIG.md) and holds one or more devices; each
// yields the driver to open, its DeviceOptions and the QP attributes that
// front ends which cannot pass them (ibverbs programs, NCCL) apply to every
// QP of that device.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "omrc/verbs.hpp"

namespace omrc {

/// QP attributes a configuration applies to every QP of its device, beyond
/// what the front end's own calls set (ibv_modify_qp knows nothing of planes
/// or EVs). Defaults are QpAttr's.
struct QpDefaults {
    PathPolicy path_policy = PathPolicy::adaptive;
    std::uint32_t evs = 128;         ///< QpAttr::evs
    std::uint32_t backup_evs = 32;   ///< QpAttr::backup_evs
    /// Payload per packet, bytes (QpAttr::mtu_bytes); 0 = the front end's
    /// choice (ibverbs: the path MTU the program asks for).
    std::uint32_t mtu_bytes = 0;
    std::uint32_t mpr = 8;           ///< QpAttr::mpr
    std::uint64_t timeout_ns = 4'000'000;  ///< QpAttr::timeout_ns (0 = the front end's)
    std::uint32_t retry_cnt = 7;     ///< QpAttr::retry_cnt
    CcConfig cc{};                   ///< QpAttr::cc
};

/// One device of a configuration file.
struct DeviceConfig {
    std::string name;        ///< "omrc0", …: unique within the file
    std::string driver;      ///< a name Device::drivers() lists (or "dpdk")
    DeviceOptions options;   ///< args, planes, frame_mode, fabric, local_host, seed, timers …
    QpDefaults qp;
};

/// A parsed configuration file.
struct ConfigFile {
    std::string source;                ///< the path (or the name given to parse_config)
    std::vector<DeviceConfig> devices; ///< in file order; at least one
    /// The device of that name, or nullptr.
    [[nodiscard]] const DeviceConfig* find(std::string_view name) const noexcept;
};

/// Parses TOML text. Returns 0, or EINVAL with *error saying where and what
/// ("FILE:LINE:COL: ..." for TOML syntax, "FILE: device 'omrc0'.qp.evs: ..."
/// for a bad value, an unknown key, a missing driver or a duplicate name).
/// Nothing is opened or checked against the drivers here.
int parse_config(std::string_view text, std::string_view source_name, ConfigFile* out, std::string* error);

/// Reads and parses a file. ENOENT/EACCES/EIO when it cannot be read (with
/// *error naming the path), else as parse_config.
int load_config(const std::string& path, ConfigFile* out, std::string* error);

}  // namespace omrc
