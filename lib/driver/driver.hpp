// SPDX-License-Identifier: BSD-3-Clause
// The private driver interface (never installed). A driver owns its packet
// buffers and its threads, if any. The runtime calls it once per burst, never
// per packet. Control operations have "not supported" defaults so a driver
// implements only what it can.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "wire/gather_frame.hpp"
#include "wire/rx_frame.hpp"

namespace omrc::driver {

/// A received frame: a view into driver-owned memory, valid until the next
/// rx_burst() call on the same driver (the runtime processes a burst fully
/// before asking for the next one). The engine takes bursts of these as they are.
using RxFrame = wire::RxFrame;

/// Per-driver counters. Every frame a driver drops is counted by reason.
struct DriverStats {
    std::uint64_t rx_frames = 0;
    std::uint64_t tx_frames = 0;
    std::uint64_t rx_bytes = 0;
    std::uint64_t tx_bytes = 0;
    std::uint64_t tx_dropped_link_down = 0;  ///< sent on a plane whose link was down
    std::uint64_t tx_dropped_full = 0;       ///< no room in the transmit ring / pool
    std::uint64_t rx_dropped_full = 0;       ///< receive ring overflow
};

/// Link-state change reported by poll_link_events().
struct LinkEvent {
    std::uint8_t plane = 0;
    bool up = true;
};

enum class DriverStatus : int { ok = 0, not_supported = 95 /* EOPNOTSUPP */ };

/// Who looks after the RoCEv2 ICRC of the frames a driver carries.
enum class IcrcHandling : std::uint8_t {
    /// The engine computes it on send and verifies it on receive (the
    /// default: frames cross kernels, wires and switches that can corrupt
    /// them, and peers that check it).
    software,
    /// The medium cannot corrupt a frame and both ends are OpenMRC drivers
    /// that say so (DPDK net_memif: shared memory between two processes):
    /// the ICRC field is sent as zero and not checked. Both ends must agree;
    /// a software peer drops such frames (counted as bad ICRC).
    not_needed,
};

[[nodiscard]] constexpr const char* to_string(IcrcHandling h) noexcept {
    return h == IcrcHandling::software ? "software" : "not_needed";
}

/// How a driver with several queues (one per worker of the device,
/// DeviceOptions::workers) spreads received frames over them.
enum class Steering : std::uint8_t {
    /// One queue: every frame arrives there.
    single,
    /// Each frame arrives on the queue of the worker that owns it: its
    /// DestQP names the worker (core::qpn_shard), endpoint messages go to
    /// queue 0. The runtime still routes every frame (a frame the medium
    /// misdelivers, endpoint requests for the other workers) but rarely has
    /// to hand one over.
    by_qpn,
    /// Frames arrive on any queue (RSS, a hash, a fan-out): the runtime hands
    /// each frame of another worker's QP to it (runtime/frame_exchange.hpp).
    spread,
};

[[nodiscard]] constexpr const char* to_string(Steering s) noexcept {
    switch (s) {
        case Steering::single: return "single";
        case Steering::by_qpn: return "by_qpn";
        case Steering::spread: return "spread";
    }
    return "unknown";
}

/// A queue's steering and how it is done ("rte_flow", "reuseport_cbpf",
/// "fabric", "rss", ...), shown in the device's stats.
struct SteeringInfo {
    Steering kind = Steering::single;
    std::string method = "none";
};

/// Each Driver object is one queue of a driver: with DeviceOptions::workers
/// = N the factory opens N of them (queue w of every port belongs to worker
/// w) and each is driven by its worker's thread only, never two at once by
/// one thread's calls into another's state. Queues of one driver share the
/// ports: link state, port counters and the port's own settings.
class Driver {
public:
    virtual ~Driver() = default;
    [[nodiscard]] virtual std::string name() const = 0;
    [[nodiscard]] virtual std::uint32_t planes() const = 0;

    /// Up to out.size() received frames from any plane. `now_ns` is the
    /// caller's clock (virtual in simulation, real otherwise).
    virtual std::size_t rx_burst(std::span<RxFrame> out, std::uint64_t now_ns) = 0;

    /// Queues frames for transmission; returns how many were accepted (a
    /// prefix of `frames`). Accepted frames' payload segments may be read
    /// until tx_release_count() says they were released.
    virtual std::size_t tx_burst(std::span<const wire::GatherFrame> frames, std::uint64_t now_ns) = 0;

    /// Release watermark: the first tx_release_count() frames accepted by
    /// tx_burst (in acceptance order, counted since the driver was created)
    /// no longer reference their payload memory. It is a contiguous prefix:
    /// a driver whose frames complete out of order (several ports) advances
    /// it only past frames that are all released. Copying drivers release
    /// at once. The runtime holds a send WR's completion until the
    /// watermark passes every frame accepted before the WR was acknowledged.
    [[nodiscard]] virtual std::uint64_t tx_release_count() const = 0;

    /// Link state changes since the last call (at most out.size()).
    virtual std::size_t poll_link_events(std::span<LinkEvent> out) { (void)out; return 0; }

    /// Current link state of a plane.
    [[nodiscard]] virtual bool link_up(std::uint32_t plane) const { (void)plane; return true; }

    /// Earliest time the driver has something to deliver (virtual-clock
    /// drivers); UINT64_MAX when idle or not applicable.
    [[nodiscard]] virtual std::uint64_t next_event_ns() const { return UINT64_MAX; }

    [[nodiscard]] virtual DriverStats stats() const { return {}; }

    /// How the ICRC of this driver's frames is handled (fixed once the
    /// driver is open). The device turns the engine's software ICRC off
    /// where the driver says it is not needed.
    [[nodiscard]] virtual IcrcHandling icrc() const { return IcrcHandling::software; }

    /// Driver-specific counters (per port, drops by reason, ...), as
    /// name/value pairs appended to `out`; shown under "counters" in
    /// Device::stats_json().
    virtual void counters(std::vector<std::pair<std::string, std::uint64_t>>& out) const { (void)out; }

    /// Stats for readers outside the owning thread (the DPDK driver's
    /// telemetry commands). stats_wanted(): someone asked since the last
    /// publish_stats() — one relaxed atomic load, checked by the runtime on
    /// every progress pass. publish_stats(): the owning thread's answer, the
    /// device's stats document (Device::stats_json(), a JSON object). The
    /// driver keeps the newest snapshot for its readers; it must not block
    /// the caller for longer than a mutex hand-over.
    [[nodiscard]] virtual bool stats_wanted() const { return false; }
    virtual void publish_stats(std::string json) { (void)json; }

    /// Memory the application registered (an MR) or deregistered. A driver
    /// that hands payload to a NIC by DMA maps it here, before any frame can
    /// reference it, and unmaps it once no frame it holds references it.
    /// Called on queue 0 only (memory is the device's), on the program's
    /// thread while every worker is parked. 0, or an errno: the registration
    /// stands and the driver copies frames from that memory instead.
    virtual int register_memory(const void* addr, std::size_t len) {
        (void)addr, (void)len;
        return 0;
    }
    virtual void unregister_memory(const void* addr, std::size_t len) { (void)addr, (void)len; }

    /// How received frames reach this queue (the same for every queue of a driver).
    [[nodiscard]] virtual SteeringInfo steering() const { return {}; }
    /// The NUMA node of the driver's first port (where its workers belong
    /// when DeviceOptions::cpus names none), -1 when unknown or irrelevant.
    [[nodiscard]] virtual int numa_node() const { return -1; }
};

}  // namespace omrc::driver
