// SPDX-License-Identifier: BSD-3-Clause
// Opening the configured devices once per process, and the keep-alive
// progress thread (device_table.hpp).
#include "device_table.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "cm_setup.hpp"
#include "log.hpp"
#include "socket.hpp"

namespace omrc::nccl {

namespace {

std::uint64_t steady_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

/// The keep-alive thread: progresses every device nobody progressed within
/// one period. Stopped (and joined) when the process exits, before the
/// libraries it uses go away.
class KeepAlive {
public:
    KeepAlive(std::vector<NetDevice*> devices, std::uint64_t period_ns)
        : devices_(std::move(devices)), period_ns_(period_ns), thread_([this] { run(); }) {}
    ~KeepAlive() {
        {
            const std::lock_guard lock(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    KeepAlive(const KeepAlive&) = delete;
    KeepAlive& operator=(const KeepAlive&) = delete;

private:
    void run() {
        std::unique_lock lock(mu_);
        while (!cv_.wait_for(lock, std::chrono::nanoseconds(period_ns_), [this] { return stop_; })) {
            const std::uint64_t now = steady_ns();
            for (NetDevice* d : devices_) {
                if (now - d->last_progress_ns.load(std::memory_order_relaxed) < period_ns_) continue;
                // Whoever holds the mutex is progressing the device anyway.
                std::unique_lock dev_lock(d->mu, std::try_to_lock);
                if (!dev_lock.owns_lock()) continue;
                for (int pass = 0; pass < 8 && d->progress_locked() != 0; ++pass) {
                }
            }
        }
    }

    std::vector<NetDevice*> devices_;
    std::uint64_t period_ns_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;  ///< last: starts once the members above exist
};

std::unique_ptr<KeepAlive>& keepalive_holder() {
    // A function-local static: created after libomrc and spdlog were loaded,
    // so destroyed (the thread joined) before them at exit.
    static std::unique_ptr<KeepAlive> holder;
    return holder;
}

/// OMRC_NCCL_PROGRESS_US: the keep-alive period (0: no thread).
std::uint64_t keepalive_period_ns() {
    std::uint64_t us = 1000;
    if (const char* v = std::getenv("OMRC_NCCL_PROGRESS_US"); v != nullptr && *v != '\0') {
        char* end = nullptr;
        const unsigned long long x = std::strtoull(v, &end, 10);
        if (end != nullptr && *end == '\0' && x <= 1'000'000)
            us = x;
        else
            log_line(Level::warn, fmt::format("OMRC_NCCL_PROGRESS_US='{}' is no number of microseconds up to "
                                              "1000000; using {}",
                                              v, us));
    }
    return us * 1000;
}

}  // namespace

std::size_t NetDevice::progress_locked() {
    const std::size_t n = device->progress();
    route_cm_events(*this);
    last_progress_ns.store(steady_ns(), std::memory_order_relaxed);
    return n;
}

DeviceTable& DeviceTable::instance() {
    // Never destroyed (device_table.hpp, "Lifetime").
    static DeviceTable* table = new DeviceTable();
    return *table;
}

int DeviceTable::preset(std::vector<DeviceConfig> devices) {
    const std::lock_guard lock(mu_);
    if (initialized_) return EBUSY;
    preset_ = std::move(devices);
    have_preset_ = true;
    return 0;
}

ncclResult_t DeviceTable::init() {
    const std::lock_guard lock(mu_);
    if (initialized_) return init_result_;
    initialized_ = true;
    std::vector<DeviceConfig> configs;
    if (have_preset_) {
        configs = std::move(preset_);
    } else {
        std::string error;
        if (devices_from_environment(&configs, &error) != 0) {
            init_result_ = fail(ncclSystemError, "{}", error);
            return init_result_;
        }
    }
    init_result_ = open_all(std::move(configs));
    if (init_result_ == ncclSuccess) start_keepalive();
    return init_result_;
}

ncclResult_t DeviceTable::open_all(std::vector<DeviceConfig> configs) {
    if (configs.empty()) return fail(ncclSystemError, "the configuration has no device");
    std::vector<std::unique_ptr<NetDevice>> opened;
    for (DeviceConfig& cfg : configs) {
        auto d = std::make_unique<NetDevice>();
        d->index = static_cast<int>(opened.size());
        d->config = std::move(cfg);
        int err = 0;
        d->device = Device::open(d->config.driver, d->config.options, &err);
        if (!d->device)
            return fail(ncclSystemError, "device {} ({} driver) does not open: {} (the omrc log says why)",
                        d->config.name, d->config.driver, std::strerror(err));
        d->pd = d->device->alloc_pd(&err);
        if (!d->pd) return fail(ncclSystemError, "device {}: alloc_pd: {}", d->config.name, std::strerror(err));
        d->planes = d->device->planes();
        std::string error;
        if (listen_ip_for(d->config.driver, d->device->address().addr, &d->listen_ip, &error) != 0)
            return fail(ncclSystemError, "device {}: {}", d->config.name, error);
        log_line(Level::info, fmt::format("device {}: {} driver, {} planes, connections through {}", d->config.name,
                                          d->config.driver, d->planes, d->listen_ip));
        opened.push_back(std::move(d));
    }
    devices_ = std::move(opened);
    count_.store(static_cast<int>(devices_.size()), std::memory_order_release);
    return ncclSuccess;
}

void DeviceTable::start_keepalive() {
    const std::uint64_t period = keepalive_period_ns();
    if (period == 0) return;
    std::vector<NetDevice*> devices;
    for (const auto& d : devices_) devices.push_back(d.get());
    keepalive_holder() = std::make_unique<KeepAlive>(std::move(devices), period);
}

int DeviceTable::count() const noexcept { return count_.load(std::memory_order_acquire); }

NetDevice* DeviceTable::at(int dev) const noexcept {
    if (dev < 0 || dev >= count()) return nullptr;
    return devices_[static_cast<std::size_t>(dev)].get();
}

}  // namespace omrc::nccl
