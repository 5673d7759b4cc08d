// SPDX-License-Identifier: BSD-3-Clause
// Internal state of a loopback Fabric (not part of the public API). Who
// touches what (real_time mode; in virtual_clock mode everything runs on one
// thread):
//   Link          – impairment streams, Gilbert–Elliott state and queue state
//                   are owned by the sending queue's thread; `imp` is published
//                   by control calls (release) and read by that thread
//                   (acquire); counters are written by that thread only.
//   Queue         – tx side and rx side are owned by the queue's thread (an
//                   endpoint has FabricConfig::queues of them);
//   Endpoint      – `port_changes` is written by control calls.
//   rings         – ring (src, src queue, dst, dst queue): producer = the
//                   source queue's thread, consumer = the destination queue's.
//   control_mutex – serialises control calls; the data path never takes it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "drivers/loopback/loopback.hpp"
#include "drivers/loopback/rng.hpp"
#include "core/ring.hpp"
#include "drivers/loopback/spsc_ring.hpp"

namespace omrc::loopback {

inline constexpr std::uint32_t kMaxPlanes = 15;
inline constexpr std::uint32_t kMaxEndpoints = 256;

/// A monotonically increasing counter with a single writer: the increment is
/// a relaxed load + store (no locked read-modify-write), readers on other
/// threads see a value that is exact but possibly a little old.
class Counter {
public:
    void add(std::uint64_t n = 1) noexcept {
        v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> v_{0};
};

/// Atomic mirror of LinkCounters (same fields, same meaning).
struct LinkCounterSet {
    Counter delivered, lost_random, lost_burst, duplicated, corrupted, trimmed, blackholed, blackholed_ev, link_down,
        queue_dropped, queue_trimmed, ecn_marked, ring_full, zero_copy;
    [[nodiscard]] LinkCounters snapshot() const noexcept;
};

/// Index of each impairment's random stream within a link.
enum class Stream : std::uint32_t { loss = 0, burst, corrupt, trim, jitter, duplicate, count_ };

/// The wire of one link direction src → dst on one plane, which every
/// queue of src shares (QueueConfig::rate_bps is the port's rate).
struct Wire {
    /// Time the link finishes serializing what it accepted, ns. Advanced
    /// with a compare-and-swap: several queues' threads send on it.
    alignas(64) std::atomic<std::uint64_t> busy_until_ns{0};
};

/// One link direction src → dst on one plane, as one queue of src sends on it.
struct Link {
    std::atomic<const Impairment*> imp{nullptr};  ///< immutable, owned by Impl::configs; null = none
    std::array<Rng, static_cast<std::size_t>(Stream::count_)> rng{};  ///< one stream per impairment kind
    bool burst_bad = false;           ///< Gilbert–Elliott state: true = bad
    Wire* wire = nullptr;             ///< shared by the queues of src (Impl::wires)
    LinkCounterSet counters;
};

/// A frame waiting for its delivery time at the receiver.
struct RxEntry {
    std::uint64_t deliver_ns = 0;  ///< delivery time, ns
    std::uint64_t seq = 0;         ///< tie-break: send order (virtual) or ring drain order (real time)
    std::uint32_t buf = 0;         ///< index into Receiver::bufs
    std::uint32_t len = 0;         ///< frame bytes
    std::uint8_t plane = 0;
};

/// Receive side of one endpoint: buffers, the delivery min-heap and the
/// buffers lent to the caller by the last rx_burst (returned at the next).
struct Receiver {
    struct Buf {
        std::unique_ptr<std::uint8_t[]> own;  ///< virtual_clock: per-buffer storage
        std::uint8_t* data = nullptr;
        std::uint32_t cap = 0;  ///< bytes available at data
    };
    std::unique_ptr<std::uint8_t[]> block;  ///< real_time: rx_pool_frames × max_frame_bytes
    std::vector<Buf> bufs;
    std::vector<std::uint32_t> free;        ///< indices of unused bufs
    std::vector<std::uint32_t> lent;        ///< indices handed out by the last rx_burst
    /// real_time, per source (endpoint, queue): frames the last rx_burst
    /// handed out straight from that source's ring, popped at the next rx_burst.
    std::vector<std::uint32_t> ring_lent;
    std::vector<RxEntry> heap;              ///< min-heap on (deliver_ns, seq)
    std::uint64_t drain_seq = 0;            ///< real_time: next RxEntry::seq
    std::uint32_t drain_start = 0;          ///< real_time: first source ring drained next (round robin)
    /// Buffers taken from `free` and given back to it so far (single writer:
    /// the queue's thread; virtual_clock: the one thread). taken − returned
    /// is the pool's use now, frames in `heap` or `lent`: 0 when nothing
    /// waits and after the queue's driver has gone (EndpointCounters::rx_pool_in_use).
    Counter taken, returned;

    /// A free buffer of at least `len` bytes, or false (real_time pool exhausted).
    bool take(std::uint32_t len, bool can_grow, std::uint32_t& out);
    /// Puts buffer `b` back into the pool.
    void give_back(std::uint32_t b) {
        free.push_back(b);
        returned.add();
    }
    void push(const RxEntry& e);
    [[nodiscard]] std::uint64_t earliest() const noexcept {
        return heap.empty() ? UINT64_MAX : heap.front().deliver_ns;
    }
    RxEntry pop();
};

/// One queue of an endpoint (FabricConfig::queues): its receive side, its
/// driver's counters, its scratch buffer and what it lent. Owned by the
/// thread of the queue's driver.
struct Queue {
    /// Per plane: changes of Endpoint::port_changes already reported by this
    /// queue's poll_link_events (each queue reports every change).
    std::array<std::uint32_t, kMaxPlanes> port_reported{};
    std::vector<std::uint8_t> scratch;  ///< max_frame_bytes: the frame being sent (sender thread)
    Receiver rx;
    Counter rx_frames, rx_bytes, tx_frames, tx_bytes, tx_dropped_link_down, tx_dropped_full;
    Counter unknown_destination, invalid_frames;
    /// real_time: times a frame that had to leave its ring to wait in the
    /// pool found no free buffer (EndpointCounters::rx_pool_empty).
    Counter rx_pool_empty;
    std::uint64_t tx_accepted = 0;  ///< frames accepted by tx_burst so far (driver thread)
    /// real_time zero copy (driver thread): frames whose payload a receiver
    /// may still read, in acceptance order. Every frame accepted before the
    /// oldest of them is released (the contiguous release watermark).
    struct Lent {
        std::uint64_t accept_index = 0;  ///< 0-based position among accepted frames
        const SpscRing* ring = nullptr;
        std::uint64_t seq = 0;           ///< SpscRing::commit() of the frame
        std::uint32_t dst = 0;           ///< the receiving endpoint
    };
    mutable core::Ring<Lent> lent_payloads{1024};
    /// tx_release_count(): the frames accepted before the oldest payload
    /// still lent. Also called by every tx_burst, so the list holds at most
    /// what the rings hold.
    [[nodiscard]] std::uint64_t released() const {
        while (!lent_payloads.empty() && lent_payloads.front().ring->consumed(lent_payloads.front().seq))
            lent_payloads.pop_front();
        return lent_payloads.empty() ? tx_accepted : lent_payloads.front().accept_index;
    }
};

/// One endpoint: its ports and its queues.
struct Endpoint {
    /// Per plane: number of up/down changes so far; even = up. Written by
    /// control calls (release), read by the data path (acquire).
    std::array<std::atomic<std::uint32_t>, kMaxPlanes> port_changes{};
    /// Attached (some driver holds it); cleared when the first of its
    /// queues' drivers goes (the device is closing).
    std::atomic<bool> attached{false};
    std::vector<std::unique_ptr<Queue>> queues;  ///< FabricConfig::queues of them
};

/// A change scheduled at a virtual time.
struct ScheduledChange {
    enum class Kind : std::uint8_t { link, impairment, impairment_all } kind = Kind::link;
    std::uint32_t endpoint_or_src = 0;
    std::uint32_t dst = 0;
    std::uint32_t plane = 0;
    bool up = true;
    Impairment imp{};
};

struct Fabric::Impl {
    explicit Impl(const FabricConfig& c);

    FabricConfig cfg;
    std::vector<std::unique_ptr<Endpoint>> endpoints;
    /// Index link_index(src, src queue, dst, plane): each queue of a sender
    /// has links of its own (its thread owns their state; link_counters()
    /// sums over the sender's queues).
    std::vector<std::unique_ptr<Link>> links;
    std::vector<std::unique_ptr<Wire>> wires;  ///< index (src * endpoints + dst) * planes + plane
    /// real_time: index ring_index(src, src queue, dst, dst queue).
    std::vector<std::unique_ptr<SpscRing>> rings;
    std::mutex control_mutex;
    std::vector<std::unique_ptr<const Impairment>> configs;  ///< every published config (control_mutex)
    std::multimap<std::uint64_t, ScheduledChange> schedule;  ///< virtual_clock: by time, then insertion
    std::uint64_t send_seq = 0;                              ///< virtual_clock: fabric-wide send order

    [[nodiscard]] bool real_time() const noexcept { return cfg.mode == ClockMode::real_time; }
    [[nodiscard]] std::size_t link_index(std::uint32_t src, std::uint32_t sq, std::uint32_t dst,
                                         std::uint32_t plane) const noexcept {
        return ((std::size_t{src} * cfg.queues + sq) * cfg.endpoints + dst) * cfg.planes + plane;
    }
    [[nodiscard]] Link& link(std::uint32_t src, std::uint32_t sq, std::uint32_t dst, std::uint32_t plane) noexcept {
        return *links[link_index(src, sq, dst, plane)];
    }
    [[nodiscard]] const Link& link(std::uint32_t src, std::uint32_t sq, std::uint32_t dst,
                                   std::uint32_t plane) const noexcept {
        return *links[link_index(src, sq, dst, plane)];
    }
    /// Index of a receiver's source: (src, src queue).
    [[nodiscard]] std::size_t source_index(std::uint32_t src, std::uint32_t sq) const noexcept {
        return std::size_t{src} * cfg.queues + sq;
    }
    [[nodiscard]] std::size_t ring_index(std::uint32_t src, std::uint32_t sq, std::uint32_t dst,
                                         std::uint32_t dq) const noexcept {
        return (source_index(src, sq) * cfg.endpoints + dst) * cfg.queues + dq;
    }
    /// Stores `imp` into link (src, dst, plane) of every queue of src.
    void store_impairment(std::uint32_t src, std::uint32_t dst, std::uint32_t plane, const Impairment* imp) noexcept {
        for (std::uint32_t q = 0; q < cfg.queues; ++q) link(src, q, dst, plane).imp.store(imp, std::memory_order_release);
    }
    /// The queue of `dst` that a frame whose headers are `head` goes to (FabricConfig::steering).
    [[nodiscard]] std::uint32_t steer(std::span<const std::uint8_t> head) const noexcept;
    [[nodiscard]] bool port_up(std::uint32_t endpoint, std::uint32_t plane) const noexcept {
        return (endpoints[endpoint]->port_changes[plane].load(std::memory_order_acquire) & 1u) == 0;
    }
    void check_endpoint(std::uint32_t e) const;
    void check_plane(std::uint32_t p) const;
    void require_virtual(const char* what) const;

    // Control (control_mutex held by the caller).
    const Impairment* publish(const Impairment& imp);
    void set_link_locked(std::uint32_t endpoint, std::uint32_t plane, bool up);
    void apply(const ScheduledChange& ch);

    // Data path (datapath.cpp).
    void advance(std::uint64_t now_ns);
    /// Sends one frame; false when it was refused (real_time with
    /// ring_backpressure and a full ring): nothing was counted then.
    bool transmit(std::uint32_t src, std::uint32_t sq, const wire::GatherFrame& gf, std::uint64_t now_ns);
    void release_lent(std::uint32_t endpoint, std::uint32_t q);
    /// real_time: pops every frame waiting in the rings to queue `q` of
    /// `endpoint` (its driver is going: nobody will receive them).
    void drain_rings(std::uint32_t endpoint, std::uint32_t q);
    std::size_t receive(std::uint32_t endpoint, std::uint32_t q, std::span<driver::RxFrame> out, std::uint64_t now_ns);
    [[nodiscard]] std::uint64_t next_delivery_ns(std::uint32_t endpoint, std::uint32_t q) const;
};

}  // namespace omrc::loopback
