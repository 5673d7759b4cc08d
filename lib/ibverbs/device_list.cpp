// SPDX-License-Identifier: BSD-3-Clause
// The device list: the devices of the configuration file named by
// OMRC_IBV_CONFIG (else /etc/openmrc/ibverbs.toml), read once per process.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "log/log.hpp"
#include "objects.hpp"
#include "symver.hpp"

namespace omrc::ibv {

namespace {

constexpr const char* kDefaultConfig = "/etc/openmrc/ibverbs.toml";
/// ibdev_path prefix of OpenMRC devices: no such sysfs directory exists, and
/// ibv_read_sysfs_file answers for it (board_id, node_desc, …).
constexpr const char* kSysfsPrefix = "/sys/class/infiniband/";

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 0xcbf29ce484222325ULL) {
    for (const char c : s) h = (h ^ static_cast<std::uint8_t>(c)) * 0x100000001b3ULL;
    return h;
}

void copy_name(char* dst, std::size_t cap, const std::string& src) {
    std::snprintf(dst, cap, "%s", src.c_str());
}

std::vector<DeviceEntry*> load_entries() {
    std::vector<DeviceEntry*> out;
    const char* env = std::getenv("OMRC_IBV_CONFIG");
    const std::string path = env != nullptr && *env != '\0' ? env : kDefaultConfig;
    ConfigFile file;
    std::string error;
    if (const int rc = load_config(path, &file, &error); rc != 0) {
        if (env != nullptr || rc != ENOENT)
            omrc::log::logger().error("ibverbs: no OpenMRC devices: {}", error);
        else
            omrc::log::logger().info("ibverbs: no OpenMRC devices: set OMRC_IBV_CONFIG to a device configuration file ({})",
                                error);
        return out;
    }
    for (std::size_t i = 0; i < file.devices.size(); ++i) {
        auto* e = new DeviceEntry;  // lives for the process, as rdma-core's devices do
        e->config = file.devices[i];
        e->index = static_cast<std::uint32_t>(i);
        e->dev.node_type = IBV_NODE_CA;
        e->dev.transport_type = IBV_TRANSPORT_IB;  // what RoCE devices report
        copy_name(e->dev.name, sizeof e->dev.name, e->config.name);
        copy_name(e->dev.dev_name, sizeof e->dev.dev_name, "uverbs-" + e->config.name);
        copy_name(e->dev.dev_path, sizeof e->dev.dev_path, "/sys/class/infiniband_verbs/uverbs-" + e->config.name);
        copy_name(e->dev.ibdev_path, sizeof e->dev.ibdev_path, kSysfsPrefix + e->config.name);
        // A locally administered EUI-64 from the name: stable across runs.
        e->guid = (fnv1a(e->config.name) & 0x00FFFFFFFFFFFFFFULL) | 0x0200000000000000ULL;
        out.push_back(e);
    }
    omrc::log::logger().info("ibverbs: {} OpenMRC device(s) from {}", out.size(), path);
    return out;
}

DeviceEntry* entry_of(ibv_device* d) {
    for (DeviceEntry* e : device_entries())
        if (&e->dev == d) return e;
    return nullptr;
}

}  // namespace

std::vector<DeviceEntry*>& device_entries() {
    static std::vector<DeviceEntry*> entries = load_entries();
    return entries;
}

}  // namespace omrc::ibv

using namespace omrc::ibv;

OMRC_IBV_DUAL(ibv_get_device_list)
OMRC_IBV_DUAL(ibv_free_device_list)
OMRC_IBV_DUAL(ibv_get_device_name)
OMRC_IBV_DUAL(ibv_get_device_guid)

extern "C" {

ibv_device** omrc_ibv_get_device_list(int* num_devices) {
    const auto& entries = device_entries();
    auto** list = static_cast<ibv_device**>(std::calloc(entries.size() + 1, sizeof(ibv_device*)));
    if (list == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    for (std::size_t i = 0; i < entries.size(); ++i) list[i] = &entries[i]->dev;
    if (num_devices != nullptr) *num_devices = static_cast<int>(entries.size());
    return list;
}

void omrc_ibv_free_device_list(ibv_device** list) { std::free(list); }

const char* omrc_ibv_get_device_name(ibv_device* device) { return device != nullptr ? device->name : nullptr; }

__be64 omrc_ibv_get_device_guid(ibv_device* device) {
    const DeviceEntry* e = device != nullptr ? entry_of(device) : nullptr;
    return e != nullptr ? htobe64(e->guid) : 0;
}

int ibv_get_device_index(ibv_device* device) {
    const DeviceEntry* e = device != nullptr ? entry_of(device) : nullptr;
    return e != nullptr ? static_cast<int>(e->index) : -1;
}

const char* ibv_get_sysfs_path(void) { return "/sys"; }

/// Reads dir/file like rdma-core; for an OpenMRC device's ibdev_path it
/// answers the attributes tools read (ibv_devinfo's board_id) itself.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
    if (dir == nullptr || file == nullptr || buf == nullptr || size == 0) return -1;
    for (DeviceEntry* e : device_entries()) {
        if (std::strcmp(dir, e->dev.ibdev_path) != 0) continue;
        std::string v;
        if (std::strcmp(file, "board_id") == 0) v = "OpenMRC-" + e->config.driver;
        else if (std::strcmp(file, "node_desc") == 0) v = "OpenMRC " + e->config.name;
        else if (std::strcmp(file, "node_type") == 0) v = "1: CA";
        else return -1;
        const int n = std::snprintf(buf, size, "%s", v.c_str());
        return n < static_cast<int>(size) ? n : static_cast<int>(size) - 1;
    }
    std::string path = std::string(dir) + "/" + file;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const ssize_t n = ::read(fd, buf, size);
    ::close(fd);
    if (n < 0) return -1;
    if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = '\0';
    else if (static_cast<size_t>(n) < size) buf[n] = '\0';
    return static_cast<int>(n);
}

}  // extern "C"
