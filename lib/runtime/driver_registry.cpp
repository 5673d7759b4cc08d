// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/driver_registry.hpp"

#include <cerrno>
#include <map>
#include <mutex>

namespace omrc::runtime {

namespace {

struct Registry {
    std::mutex mutex;
    std::map<std::string, DriverFactory, std::less<>> factories{{"loopback", &make_loopback_driver},
                                                                {"udp", &make_udp_driver}};
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
    return r.factories.emplace(std::move(name), factory).second ? 0 : EEXIST;
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

}  // namespace omrc::runtime
