// SPDX-License-Identifier: BSD-3-Clause
// The C API's device: options, open and close, progress, address, stats,
// the driver list and the library version.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <memory>
#include <string>

#include "capi/boundary.hpp"
#include "capi/convert.hpp"
#include "capi/handles.hpp"
#include "log/log.hpp"
#include "omrc/version.hpp"

using omrc::capi::guarded;

void omrc_device_options_init(struct omrc_device_options* o) {
    if (o == nullptr) return;
    (void)guarded("omrc_device_options_init", [&] {
        const omrc::DeviceOptions d;
        omrc_device_options c{};
        c.planes = d.planes;
        std::copy(d.local_addr.begin(), d.local_addr.end(), c.local_addr);
        c.frame_mode = static_cast<omrc_frame_mode>(d.frame_mode);
        c.fabric = {d.fabric.usid_block, d.fabric.planes, d.fabric.t0_per_plane, d.fabric.t1_per_plane,
                    d.fabric.hosts_per_t0};
        c.local_host = d.local_host;
        c.seed = d.seed;
        c.compute_icrc = d.compute_icrc;
        c.verify_icrc = d.verify_icrc;
        c.ack_every_pkts = d.ack_every_pkts;
        c.ack_delay_ns = d.ack_delay_ns;
        c.ev_timeout_ns = d.ev_timeout_ns;
        c.min_ev_timeout_ns = d.min_ev_timeout_ns;
        c.probe_interval_ns = d.probe_interval_ns;
        c.probe_successes_to_restore = d.probe_successes_to_restore;
        c.ev_track_depth = d.ev_track_depth;
        c.port_status_repeat_ns = d.port_status_repeat_ns;
        c.max_qps = d.max_qps;
        c.rx_burst_frames = d.rx_burst_frames;
        c.tx_burst_frames = d.tx_burst_frames;
        c.workers = d.workers;
        c.worker_threads = static_cast<omrc_worker_threads>(d.worker_threads);
        c.worker_spin_ns = d.worker_spin_ns;
        c.worker_yield_ns = d.worker_yield_ns;
        c.worker_sleep_ns = d.worker_sleep_ns;
        c.key_select = d.security.key_select;
        c.replay_window = d.security.replay_window;
        c.security_encryption = OMRC_ENCRYPTION_OFF;
        *o = c;
        return 0;
    });
}

void omrc_qp_defaults_init(struct omrc_qp_defaults* d) {
    if (d != nullptr) *d = omrc::capi::to_c(omrc::QpDefaults{});
}

int omrc_device_open(const char* driver, const struct omrc_device_options* options, struct omrc_device** out) {
    if (out != nullptr) *out = nullptr;
    if (driver == nullptr || out == nullptr) return EINVAL;
    return guarded("omrc_device_open", [&] {
        omrc::DeviceOptions o;
        if (options != nullptr) {
            std::string why;
            if (const int rc = omrc::capi::from_c(*options, o, why); rc != 0) {
                omrc::log::logger().error("omrc_device_open: device options: {}", why);
                return rc;
            }
        }
        auto handle = std::make_unique<omrc_device>();
        int err = 0;
        handle->dev = omrc::Device::open(driver, o, &err);
        if (handle->dev == nullptr) return err != 0 ? err : EIO;
        *out = handle.release();
        return 0;
    });
}

int omrc_device_close(struct omrc_device* dev) {
    if (dev == nullptr) return EINVAL;
    if (dev->live_pds != 0 || dev->live_cqs != 0) {
        (void)guarded("omrc_device_close", [&] {
            omrc::log::logger().error("omrc_device_close: {} pd(s) and {} cq(s) of the device are still alive",
                                      dev->live_pds, dev->live_cqs);
            return 0;
        });
        return EBUSY;
    }
    return guarded("omrc_device_close", [&] {
        delete dev;
        return 0;
    });
}

int omrc_device_progress(struct omrc_device* dev) {
    if (dev == nullptr) return -EINVAL;
    std::size_t work = 0;
    if (const int rc = guarded("omrc_device_progress", [&] {
            work = dev->dev->progress();
            return 0;
        });
        rc != 0)
        return -rc;
    return work > INT_MAX ? INT_MAX : static_cast<int>(work);
}

uint64_t omrc_device_next_wakeup_ns(const struct omrc_device* dev) {
    if (dev == nullptr) return UINT64_MAX;
    std::uint64_t at = UINT64_MAX;
    (void)guarded("omrc_device_next_wakeup_ns", [&] {
        at = dev->dev->next_wakeup_ns();
        return 0;
    });
    return at;
}

uint64_t omrc_device_now_ns(const struct omrc_device* dev) {
    if (dev == nullptr) return 0;
    std::uint64_t now = 0;
    (void)guarded("omrc_device_now_ns", [&] {
        now = dev->dev->now_ns();
        return 0;
    });
    return now;
}

int omrc_device_get_address(const struct omrc_device* dev, struct omrc_device_address* out) {
    if (dev == nullptr || out == nullptr) return EINVAL;
    *out = omrc::capi::to_c(dev->dev->address());
    return 0;
}

uint32_t omrc_device_planes(const struct omrc_device* dev) { return dev == nullptr ? 0 : dev->dev->planes(); }

uint32_t omrc_device_workers(const struct omrc_device* dev) { return dev == nullptr ? 0 : dev->dev->workers(); }

bool omrc_device_worker_threads(const struct omrc_device* dev) {
    return dev != nullptr && dev->dev->worker_threads();
}

int omrc_device_qp_defaults(const struct omrc_device* dev, struct omrc_qp_defaults* out) {
    if (dev == nullptr || out == nullptr) return EINVAL;
    *out = omrc::capi::to_c(dev->qp_defaults);
    return 0;
}

int omrc_device_stats_json(const struct omrc_device* dev, char* buf, size_t len, size_t* needed) {
    if (dev == nullptr) return EINVAL;
    return guarded("omrc_device_stats_json",
                   [&] { return omrc::capi::copy_out(dev->dev->stats_json(), buf, len, needed); });
}

int omrc_drivers(char* buf, size_t len, size_t* needed) {
    return guarded("omrc_drivers", [&] {
        std::string names;
        for (const std::string& name : omrc::Device::drivers()) {
            if (!names.empty()) names += ',';
            names += name;
        }
        return omrc::capi::copy_out(names, buf, len, needed);
    });
}

const char* omrc_version(void) { return omrc::version(); }
