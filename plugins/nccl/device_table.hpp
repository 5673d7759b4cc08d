// SPDX-License-Identifier: BSD-3-Clause
// The plugin's devices: one NCCL device per OpenMRC device of the
// configuration (device_config.cpp says where it comes from), each opened
// once per process with its protection domain, a mutex and the address its
// connection listeners bind to.
//
// Threads. NCCL calls the plugin from several threads (its proxy thread,
// the threads that set communicators up), and comms of one device may be
// used from different threads at once, while an OpenMRC Device is used by
// one thread at a time (verbs.hpp). So every use of a device and of
// everything on it — its PD, MRs, CQs, QPs, the comms' state — happens under
// NetDevice::mu.
//
// Progress. Nothing in OpenMRC runs in the background: frames move only in
// Device::progress(). The plugin progresses a device in isend, irecv and test
// (NCCL calls test in a loop while it waits), and a keep-alive thread
// progresses every device nobody has progressed for a while (default 1 ms,
// OMRC_NCCL_PROGRESS_US), so that a rank that has nothing left to wait for
// still acknowledges its peer's last packets, as a NIC would on its own.
//
// Lifetime. The table lives until the process ends (NCCL never says when it
// is done with a plugin, and MRs NCCL never deregistered would keep a
// Device from closing); only the keep-alive thread is stopped at exit.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl_net_abi.h"
#include "omrc/config.hpp"
#include "omrc/verbs.hpp"

namespace omrc::nccl {

/// Receives one irecv may group (its n), and so the CTS entries of a slot.
inline constexpr int kMaxRecvs = 8;
/// Largest message: the sizes of v8's int arguments and the 31 bits the
/// immediate of a single receive carries.
inline constexpr std::size_t kMaxMessageBytes = 0x7fffffff;

struct NetDevice {
    int index = 0;
    DeviceConfig config;  ///< name, driver, DeviceOptions, QP defaults
    std::unique_ptr<Device> device;
    std::unique_ptr<Pd> pd;
    std::mutex mu;          ///< see Threads above
    std::string listen_ip;  ///< numeric IPv4/IPv6 address the listeners bind to
    std::uint32_t planes = 0;
    /// steady-clock ns of the last progress() (read by the keep-alive thread).
    std::atomic<std::uint64_t> last_progress_ns{0};
    /// Connection-manager events waiting for their taker (cm_setup.hpp), mu
    /// held: by connection (comms and connections being set up) and the
    /// connect requests by service (listeners).
    std::map<std::uint32_t, std::deque<CmEvent>> cm_by_id;
    std::map<std::uint64_t, std::deque<CmEvent>> cm_requests;

    /// One progress pass (and the CM events it raised filed); mu held.
    std::size_t progress_locked();
};

/// The process's devices. Every function is thread-safe.
class DeviceTable {
public:
    static DeviceTable& instance();

    /// Reads the configuration and opens every device, once; later calls
    /// return the first call's result. ncclSystemError (no configuration, a
    /// bad file, a device that does not open) with the reason logged.
    ncclResult_t init();
    /// Test hook (not exported from the plugin: tests that link the plugin's
    /// objects use it): the devices to open instead of the configuration,
    /// given before the first init(). EBUSY when init() already ran.
    int preset(std::vector<DeviceConfig> devices);

    /// Devices opened (0 before init()).
    [[nodiscard]] int count() const noexcept;
    /// Device `dev`, or nullptr when dev is out of range or init() failed.
    [[nodiscard]] NetDevice* at(int dev) const noexcept;

    DeviceTable(const DeviceTable&) = delete;
    DeviceTable& operator=(const DeviceTable&) = delete;

private:
    DeviceTable() = default;
    ~DeviceTable() = default;
    ncclResult_t open_all(std::vector<DeviceConfig> configs);
    void start_keepalive();

    std::mutex mu_;
    bool initialized_ = false;
    ncclResult_t init_result_ = ncclSuccess;
    std::vector<DeviceConfig> preset_;
    bool have_preset_ = false;
    std::vector<std::unique_ptr<NetDevice>> devices_;
    std::atomic<int> count_{0};
};

/// The configured devices (device_config.cpp): the file named by
/// OMRC_NCCL_CONFIG, else OMRC_IBV_CONFIG; else one device from
/// OMRC_NCCL_DRIVER (loopback or udp) with OMRC_NCCL_PLANES planes and
/// OMRC_NCCL_QP_TIMEOUT_MS. 0, or an errno with *error saying why.
int devices_from_environment(std::vector<DeviceConfig>* out, std::string* error);

}  // namespace omrc::nccl
