// SPDX-License-Identifier: BSD-3-Clause
// Frames between the workers of one device (docs/ARCHITECTURE.md,
// "Workers"). Each worker owns an engine shard (a range of QPNs) and its own
// receive queue on every port. A port that cannot steer each frame to the
// queue of the worker owning its destination QP (or steers only some of
// them) delivers frames to the wrong worker; that worker hands them to the
// owner here, copied into a lock-free ring per (from, to) pair.
//
// Who owns a frame (route()), from its BTH (wire::peek_bth):
//   a QP's frame              the shard its DestQP names (core::qpn_shard)
//   an endpoint response      the shard its request id names (the requester,
//                             core::request_id_shard)
//   an endpoint request       the lowest worker with a QP towards the
//                             request's source (it answers); every other
//                             worker with one gets a copy it acts on but does
//                             not answer (RxFrame::no_reply): port status
//                             and path alarms concern all of them
//   anything else             the worker that received it (its engine's
//                             parser counts what is wrong with it)
// The peer table behind the endpoint rule is kept by the verbs layer
// (add_peer/remove_peer when a QP's peer is set or the QP goes) under a
// mutex that only endpoint requests, a rare frame, take on the data path.
//
// Threads: route() and hand_over(from, ...) on worker `from`'s thread;
// drain(to, ...) on worker `to`'s thread; stats(w) on worker w's thread or
// while it is parked; add_peer/remove_peer from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "core/config.hpp"
#include "runtime/spsc_queue.hpp"
#include "wire/ipv6.hpp"
#include "wire/rx_frame.hpp"

namespace omrc::runtime {

/// Largest frame a worker hands to another (an MTU 4096 frame with SRv6
/// headers and an SRH is about 4.3 KB); larger ones are dropped and counted.
inline constexpr std::uint32_t kExchangeFrameBytes = 4608;

/// Per worker, written by its own thread.
struct ExchangeStats {
    std::uint64_t rx_own = 0;             ///< frames its queues delivered for its own engine
    std::uint64_t rx_foreign = 0;         ///< frames its queues delivered for another worker's engine (handed over)
    std::uint64_t handed_in = 0;          ///< frames other workers handed to it
    std::uint64_t endpoint_copies = 0;    ///< copies of endpoint requests it sent to observing workers
    std::uint64_t dropped_ring_full = 0;  ///< frames not handed over: the owner's ring was full
    std::uint64_t dropped_too_large = 0;  ///< frames not handed over: longer than kExchangeFrameBytes (or a malformed header split)
};

/// Where a received frame goes.
struct FrameRoute {
    std::uint32_t owner = 0;          ///< worker whose engine takes it (and answers it)
    std::uint32_t observer_mask = 0;  ///< endpoint requests: further workers that get a no-reply copy
};

class FrameExchange {
public:
    /// `workers` ≤ 2^core::kMaxShardBits; `ring_slots` per (from, to) pair, a power of two.
    FrameExchange(std::uint32_t workers, std::uint32_t ring_slots = 512);

    [[nodiscard]] std::uint32_t workers() const noexcept { return workers_; }
    [[nodiscard]] std::uint32_t shard_bits() const noexcept { return shard_bits_; }

    /// Worker `w` has (one more) QP whose peer is `peer` / one less.
    void add_peer(const wire::Ipv6Addr& peer, std::uint32_t w);
    void remove_peer(const wire::Ipv6Addr& peer, std::uint32_t w);

    /// Where a frame received by worker `self` goes (see the header).
    [[nodiscard]] FrameRoute route(const wire::RxFrame& f, std::uint32_t self) const;

    /// Copies `f` into `to`'s ring from `from`; false (counted in from's
    /// stats) when it does not fit or the ring is full.
    bool hand_over(std::uint32_t from, std::uint32_t to, const wire::RxFrame& f, bool no_reply);

    /// Worker `to`: up to `max` frames handed to it, as views valid until
    /// `fn` returns, in bursts of at most `views.size()`; returns the count.
    /// `fn(std::span<const wire::RxFrame>)`.
    template <typename Fn>
    std::size_t drain(std::uint32_t to, std::span<wire::RxFrame> views, std::size_t max, Fn&& fn);

    /// True when some worker handed `to` a frame it has not drained yet.
    [[nodiscard]] bool has_inbound(std::uint32_t to) const noexcept;

    /// Worker `w` delivered `n` frames of its own queues to its own engine.
    void note_own(std::uint32_t w, std::uint64_t n) noexcept { stats_[w].rx_own += n; }

    [[nodiscard]] const ExchangeStats& stats(std::uint32_t w) const noexcept { return stats_[w]; }

private:
    /// Left uninitialised until used (no default member initialisers): a
    /// ring's pages are touched only as frames fill them.
    struct Slot {
        std::uint32_t len;
        std::uint8_t plane;
        bool no_reply;
        std::uint8_t bytes[kExchangeFrameBytes];
    };
    using Ring = SpscQueue<Slot>;
    [[nodiscard]] Ring& ring(std::uint32_t from, std::uint32_t to) const noexcept {
        return *rings_[std::size_t{from} * workers_ + to];
    }
    /// The answering worker and the observers of an endpoint request from `peer`.
    [[nodiscard]] FrameRoute endpoint_route(const std::uint8_t* peer, std::uint32_t self) const;

    std::uint32_t workers_;
    std::uint32_t shard_bits_;
    std::vector<std::unique_ptr<Ring>> rings_;  ///< from × to (the diagonal unused)
    std::vector<ExchangeStats> stats_;          ///< per worker
    mutable std::mutex peers_mutex_;
    /// Per peer address: how many QPs each worker has towards it (peers_mutex_).
    std::map<wire::Ipv6Addr, std::array<std::uint32_t, 1u << core::kMaxShardBits>> peers_;
};

template <typename Fn>
std::size_t FrameExchange::drain(std::uint32_t to, std::span<wire::RxFrame> views, std::size_t max, Fn&& fn) {
    std::size_t total = 0;
    for (std::uint32_t from = 0; from < workers_ && total < max; ++from) {
        if (from == to) continue;
        Ring& r = ring(from, to);
        while (total < max) {
            // A burst of views into the oldest slots, popped once fn is done.
            const std::size_t want = std::min(views.size(), max - total);
            std::size_t n = 0;
            for (const Slot* s = nullptr; n < want && (s = r.peek(n)) != nullptr; ++n) {
                wire::RxFrame& v = views[n];
                v = {};
                v.data = s->bytes;
                v.len = s->len;
                v.plane = s->plane;
                v.no_reply = s->no_reply;
            }
            if (n == 0) break;
            fn(std::span<const wire::RxFrame>(views.data(), n));
            r.pop(n);
            total += n;
            stats_[to].handed_in += n;
        }
    }
    return total;
}

}  // namespace omrc::runtime
