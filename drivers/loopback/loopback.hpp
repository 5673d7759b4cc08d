// SPDX-License-Identifier: BSD-3-Clause
// In-process loopback fabric with deterministic impairments.
//
// A Fabric connects N endpoints; every endpoint has one NIC port per plane and
// there is one link per plane between every (ordered) pair of endpoints,
// itself included. Each endpoint gets a driver::Driver from attach(). A frame
// sent on plane p goes to the endpoint whose MAC on plane p (mac()) equals
// the frame's Ethernet destination; anything else is dropped and counted.
// The driver copies frames, so it releases them at once.
//
// Every link direction (src → dst, plane) has an Impairment (impairment.hpp)
// and an output queue (QueueConfig). A frame's path through a link:
//   ports up? → impairments 1..6 → output queue (rate, limit, ECN) →
//   delivery at depart + link_delay_ns + delay.extra_ns + jitter →
//   optional duplicate at that time + duplicate.extra_delay_ns.
// Port state is checked when the frame is sent; frames already in flight
// when a port goes down are still delivered.
//
// Time. Every driver call carries the caller's `now_ns`; the fabric itself
// never reads a clock.
//  * ClockMode::virtual_clock — fully deterministic, single-threaded: the
//    fabric, all drivers and all control calls are used from one thread.
//    tx_burst stamps each frame with its delivery time; rx_burst(now) returns
//    the endpoint's frames whose delivery time ≤ now, in delivery-time order,
//    ties in send order (fabric-wide). next_event_ns() (per driver and per
//    fabric) gives the earliest pending delivery or scheduled change, so a
//    harness can jump time. Link and impairment changes can be scheduled at
//    a virtual time; they are applied by advance(now), which every
//    tx_burst/rx_burst calls first with its own now_ns.
//  * ClockMode::real_time — one application thread per endpoint; the fabric
//    creates no threads. Frames travel through a lock-free SPSC ring per
//    (src, dst) endpoint pair with preallocated slots of max_frame_bytes.
//    The sender gathers each frame straight into its ring slot and applies
//    the impairments there (one copy); a full ring drops the frame (counted
//    ring_full and DriverStats::tx_dropped_full) or, with ring_backpressure,
//    refuses it: tx_burst then accepts a prefix, as a NIC with a full
//    transmit queue does. The receiver hands frames that are due out as
//    views into the ring slots (no copy) and frees the slots at its next
//    rx_burst. A frame not due yet stays in its ring unless a later frame of
//    the same ring would be due before it (jitter, a delay change): then it
//    moves into a preallocated pool of rx_pool_frames buffers ordered by a
//    min-heap on delivery time (a second copy, only on that path). When the
//    pool is full frames stay in the rings (backpressure; counted
//    EndpointCounters::rx_pool_empty), so DriverStats::rx_dropped_full
//    stays 0. A driver that goes gives its pool buffers back and empties
//    the rings to it: a frame sent to a closed device never reaches the
//    next one attached there. now_ns must come from one clock shared by all
//    threads (e.g. steady_clock).
//
// Threads (real_time). Driver e's methods are called only by endpoint e's
// thread (one thread per queue of it: FabricConfig::queues). The data path takes no lock: link state (impairment streams,
// Gilbert–Elliott state, queue) belongs to the sending endpoint's thread,
// impairment configs are published through an atomic pointer to an immutable
// copy (kept until the fabric is destroyed), port state is an atomic change
// counter. set_impairment*, set_link, link_up and the counter getters may be
// called from any thread (control calls serialise on a mutex that the data
// path never takes; counters are relaxed atomic snapshots, each field exact
// but fields not mutually consistent while traffic runs). The schedule_*
// calls, advance() and Fabric::next_event_ns() are virtual_clock only
// (std::logic_error otherwise).
//
// Ownership. attach() returns a driver that refers to the fabric: the fabric
// must outlive it. One driver per endpoint at a time (a second attach of an
// attached endpoint throws std::logic_error; destroying the driver detaches).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "driver/driver.hpp"
#include "drivers/loopback/impairment.hpp"
#include "wire/ethernet.hpp"
#include "wire/frame.hpp"

namespace omrc::loopback {

enum class ClockMode : std::uint8_t { virtual_clock = 0, real_time = 1 };

/// What a full output queue does with an arriving frame.
enum class OverflowPolicy : std::uint8_t {
    drop_tail = 0,  ///< drop it (counted queue_dropped)
    trim = 1,       ///< data frames: cut and re-mark (counted queue_trimmed); control frames: drop
};

/// The output queue of every link direction. With rate_bps = 0 the link is
/// infinitely fast: no serialization delay, no backlog, no limit, no ECN.
/// Backlog = bytes the link has not finished serializing when a frame
/// arrives (the frame on the wire counts with its unsent part).
struct QueueConfig {
    std::uint64_t rate_bps = 0;              ///< link rate, bits/s; 0 = infinite
    std::uint64_t limit_bytes = UINT64_MAX;  ///< a frame that would take the backlog above this overflows
    OverflowPolicy overflow = OverflowPolicy::drop_tail;
    /// trim policy: bytes kept (0 = through BTH + METH; raised to that
    /// minimum). The trimmed header skips the queue (priority, as in NDP/MRC
    /// switches): it departs after its own serialization time.
    std::uint32_t trim_bytes = 0;
    std::uint8_t trimmed_dscp = wire::kDscpTrimmed;  ///< DSCP written into the first IPv6 header when trimming
    /// Frames that find a backlog > this many bytes get ECN = CE (3) in the
    /// first IPv6 header's traffic class. UINT64_MAX = never mark.
    std::uint64_t ecn_threshold_bytes = UINT64_MAX;
};

/// How an endpoint with several queues (FabricConfig::queues) receives.
enum class QueueSteering : std::uint8_t {
    /// A frame goes to the queue of the worker its BTH.DestQP names (the
    /// QPN's shard bits, for `queues` shards), endpoint messages to queue 0:
    /// what a NIC does with a flow rule per worker.
    by_qpn = 0,
    /// A frame goes to queue hash(UDP source port, flow label) % queues: RSS
    /// on the entropy, so one QP's packets land on every queue.
    spread = 1,
};

struct FabricConfig {
    std::uint32_t endpoints = 2;     ///< 1..256 (the endpoint is one MAC byte)
    std::uint32_t planes = 1;        ///< 1..15
    /// Receive and transmit queues of every endpoint, 1..16: a device with
    /// N workers attaches N (attach_queues). Each queue is driven by its own
    /// thread in real_time mode and has links of its own (impairment streams
    /// and output queue state; link_counters() sums them): queue 0's random
    /// streams are those of a one-queue fabric.
    std::uint32_t queues = 1;
    QueueSteering steering = QueueSteering::by_qpn;
    std::uint64_t seed = 1;          ///< root of every impairment's random stream
    ClockMode mode = ClockMode::virtual_clock;
    std::uint64_t link_delay_ns = 1000;   ///< one-way propagation delay of every link, ns
    QueueConfig queue{};
    std::uint32_t max_frame_bytes = 9216; ///< larger frames are dropped (invalid_frames); 64..65536
    std::uint32_t ring_slots = 1024;      ///< real_time: slots per (src, dst) ring; power of two
    std::uint32_t rx_pool_frames = 1024;  ///< real_time: frames a receiver holds ahead of delivery; ≥ 1
    /// real_time: a full ring refuses frames (tx_burst accepts a prefix)
    /// instead of dropping them.
    bool ring_backpressure = false;
    /// real_time: frames whose payload is one piece of registered memory
    /// (≥ zero_copy_min_bytes, not an inline copy) on links without
    /// impairments or a queue model travel without their payload: the ring
    /// slot holds headers, pad and ICRC, the receiver gets the payload as a
    /// header split (RxFrame::payload) pointing into the sender's memory —
    /// one copy in all, the receiver's placement, as a NIC's DMA would do.
    /// tx_release_count() then passes such a frame only once the receiver
    /// has popped it. Other frames are copied whole.
    bool zero_copy = false;
    std::uint32_t zero_copy_min_bytes = 512;
};

/// Counters of one link direction (src → dst, plane). Every frame that
/// reaches a link is counted by exactly one of delivered / blackholed /
/// blackholed_ev / lost_random / lost_burst / link_down / queue_dropped /
/// ring_full; a duplicate adds one to duplicated (or ring_full).
struct LinkCounters {
    std::uint64_t delivered = 0;      ///< passed the link (queued for the receiver)
    std::uint64_t lost_random = 0;
    std::uint64_t lost_burst = 0;     ///< Gilbert–Elliott
    std::uint64_t duplicated = 0;     ///< extra copies queued for the receiver
    std::uint64_t corrupted = 0;      ///< one bit flipped (still delivered)
    std::uint64_t trimmed = 0;        ///< trimmed by the Trim impairment (still delivered)
    std::uint64_t blackholed = 0;     ///< whole-link blackhole
    std::uint64_t blackholed_ev = 0;  ///< EV blackhole
    std::uint64_t link_down = 0;      ///< source or destination port down
    std::uint64_t queue_dropped = 0;  ///< output queue overflow, dropped
    std::uint64_t queue_trimmed = 0;  ///< output queue overflow, trimmed (still delivered)
    std::uint64_t ecn_marked = 0;     ///< ECN set to CE by the output queue
    std::uint64_t ring_full = 0;      ///< real_time: the (src, dst) ring had no free slot
    std::uint64_t zero_copy = 0;      ///< real_time zero copy: delivered with the payload left in place (in delivered too)
    LinkCounters& operator+=(const LinkCounters& o) noexcept;
};

/// Per-endpoint view: sums over its outgoing and incoming links, the drops
/// that happen before a link is known, and its driver's DriverStats.
struct EndpointCounters {
    LinkCounters sent{};                    ///< sum over links src = endpoint
    LinkCounters received{};                ///< sum over links dst = endpoint
    std::uint64_t unknown_destination = 0;  ///< Ethernet destination is no endpoint's MAC on that plane
    std::uint64_t invalid_frames = 0;       ///< plane ≥ planes, empty, or larger than max_frame_bytes
    /// real_time: times a frame that had to leave its ring to wait for its
    /// delivery time (a later frame of its ring may be due first) found the
    /// receive pool (rx_pool_frames) empty. The frame stays in its ring,
    /// which backs up: a full ring then drops (ring_full) or, with
    /// ring_backpressure, refuses the sender's frames. Nothing is dropped here.
    std::uint64_t rx_pool_empty = 0;
    /// Receive buffers in use now: frames waiting in the pool for their
    /// delivery time and frames lent by the last rx_burst. 0 while idle and
    /// once the endpoint's drivers are gone (their frames go back).
    std::uint64_t rx_pool_in_use = 0;
    /// real_time: frames waiting in the rings to the endpoint (sent, not yet
    /// received). 0 once the endpoint's drivers are gone (the rings are emptied).
    std::uint64_t rx_ring_frames = 0;
    driver::DriverStats driver{};
};

class Fabric {
public:
    /// Throws std::invalid_argument when the config is out of range.
    explicit Fabric(const FabricConfig& config);
    ~Fabric();
    Fabric(const Fabric&) = delete;
    Fabric& operator=(const Fabric&) = delete;

    /// 02:6d:72:63:PP:EE — PP = plane, EE = endpoint (both taken mod 256).
    [[nodiscard]] static constexpr wire::MacAddr mac(std::uint32_t endpoint, std::uint32_t plane) noexcept {
        return {0x02, 0x6d, 0x72, 0x63, static_cast<std::uint8_t>(plane), static_cast<std::uint8_t>(endpoint)};
    }

    [[nodiscard]] const FabricConfig& config() const noexcept;

    /// The driver of `endpoint` (see Ownership above) on a fabric of one
    /// queue per endpoint. Throws std::out_of_range or std::logic_error
    /// (already attached, or config().queues > 1).
    [[nodiscard]] std::unique_ptr<driver::Driver> attach(std::uint32_t endpoint);
    /// One driver per queue of `endpoint` (config().queues of them, queue q
    /// at index q). The endpoint stays attached until the first of them goes.
    [[nodiscard]] std::vector<std::unique_ptr<driver::Driver>> attach_queues(std::uint32_t endpoint);

    /// Replaces the impairment of one link direction, of every plane of one
    /// direction, or of every link direction. Takes effect for the next frame
    /// sent. Random streams and Gilbert–Elliott state carry on.
    void set_impairment(std::uint32_t src, std::uint32_t dst, std::uint32_t plane, const Impairment& imp);
    void set_impairment(std::uint32_t src, std::uint32_t dst, const Impairment& imp);
    void set_impairment_all(const Impairment& imp);

    /// Port (endpoint, plane) up or down. A change is reported once by the
    /// endpoint's driver through poll_link_events().
    void set_link(std::uint32_t endpoint, std::uint32_t plane, bool up);
    [[nodiscard]] bool link_up(std::uint32_t endpoint, std::uint32_t plane) const;

    /// virtual_clock only: changes applied once virtual time reaches at_ns
    /// (by advance(); equal times in the order scheduled).
    void schedule_link(std::uint64_t at_ns, std::uint32_t endpoint, std::uint32_t plane, bool up);
    void schedule_impairment(std::uint64_t at_ns, std::uint32_t src, std::uint32_t dst, std::uint32_t plane,
                             const Impairment& imp);
    void schedule_impairment_all(std::uint64_t at_ns, const Impairment& imp);
    /// virtual_clock only: applies every scheduled change with at_ns ≤ now_ns.
    void advance(std::uint64_t now_ns);
    /// virtual_clock only: earliest pending delivery (any endpoint) or
    /// scheduled change; UINT64_MAX when nothing is pending.
    [[nodiscard]] std::uint64_t next_event_ns() const;

    [[nodiscard]] LinkCounters link_counters(std::uint32_t src, std::uint32_t dst, std::uint32_t plane) const;
    [[nodiscard]] EndpointCounters endpoint_counters(std::uint32_t endpoint) const;

    struct Impl;  ///< defined in fabric_impl.hpp (drivers use it)

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace omrc::loopback
