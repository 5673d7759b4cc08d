// SPDX-License-Identifier: BSD-3-Clause
#include "driver/registry.hpp"

#include <cerrno>
#include <map>
#include <mutex>

namespace omrc::driver {

namespace {

struct Registry {
    std::mutex mutex;
    std::map<std::string, DriverInfo, std::less<>> drivers;  // guarded by mutex; DriverInfo::name points into the key
};

Registry& registry() {
    static Registry r;
    return r;
}

}  // namespace

int register_driver(const DriverInfo& info) {
    if (info.factory == nullptr || info.name.empty()) return EINVAL;
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const auto [it, added] = r.drivers.emplace(std::string(info.name), info);
    if (!added) return it->second.factory == info.factory ? 0 : EEXIST;
    it->second.name = it->first;
    return 0;
}

std::optional<DriverInfo> find_driver(std::string_view name) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.drivers.find(name);
    if (it == r.drivers.end()) return std::nullopt;
    return it->second;
}

std::vector<std::string> driver_names() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    std::vector<std::string> names;
    for (const auto& [name, info] : r.drivers) names.push_back(name);
    return names;
}

}  // namespace omrc::driver
