// SPDX-License-Identifier: BSD-3-Clause
// omrc_device_open_config: a device named by a configuration file
// (include/omrc/config.hpp, omrc::load_config), with the file's QP defaults.
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <string>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "omrc/config.hpp"

using omrc::capi::guarded;

int omrc_device_open_config(const char* path, const char* device_name, struct omrc_device** out, char* err_buf,
                            size_t err_len) {
    if (out != nullptr) *out = nullptr;
    omrc::capi::copy_message("", err_buf, err_len);
    if (path == nullptr || out == nullptr) {
        omrc::capi::copy_message("omrc_device_open_config: path and out must not be NULL", err_buf, err_len);
        return EINVAL;
    }
    std::string why;
    const int rc = guarded("omrc_device_open_config", [&] {
        omrc::ConfigFile file;
        if (const int e = omrc::load_config(path, &file, &why); e != 0) return e;
        const omrc::DeviceConfig* config = nullptr;
        if (device_name != nullptr) {
            config = file.find(device_name);
            if (config == nullptr) {
                why = fmt::format("{}: no device named '{}'", path, device_name);
                return ENOENT;
            }
        } else if (!file.devices.empty()) {
            config = &file.devices.front();
        } else {
            why = fmt::format("{}: no device", path);
            return EINVAL;
        }
        auto handle = std::make_unique<omrc_device>();
        int err = 0;
        handle->dev = omrc::Device::open(config->driver, config->options, &err);
        if (handle->dev == nullptr) {
            if (err == 0) err = EIO;
            why = fmt::format("{}: device '{}': driver '{}' did not open: {}", path, config->name, config->driver,
                              std::strerror(err));
            return err;
        }
        handle->qp_defaults = config->qp;
        *out = handle.release();
        return 0;
    });
    if (rc != 0) {
        if (why.empty()) why = fmt::format("{}: {}", path, std::strerror(rc));
        omrc::capi::copy_message(why, err_buf, err_len);
    }
    return rc;
}
