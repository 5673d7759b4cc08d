// SPDX-License-Identifier: BSD-3-Clause
#include "driver/registry.hpp"

#include <cerrno>
#include <map>
#include <mutex>

namespace omrc::driver {

namespace {

struct Registry {
    std::mutex mutex;
    std::map<std::string, DriverFactory, std::less<>> factories;  // guarded by mutex
};

Registry& registry() {
    static Registry r;
    return r;
}

}  // namespace

int register_driver(std::string name, DriverFactory factory) {
    if (factory == nullptr || name.empty()) return EINVAL;
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const auto [it, added] = r.factories.emplace(std::move(name), factory);
    return added || it->second == factory ? 0 : EEXIST;
}

DriverFactory find_driver(std::string_view name) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.factories.find(name);
    return it == r.factories.end() ? nullptr : it->second;
}

std::vector<std::string> driver_names() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    std::vector<std::string> names;
    for (const auto& [name, factory] : r.factories) names.push_back(name);
    return names;
}

}  // namespace omrc::driver
