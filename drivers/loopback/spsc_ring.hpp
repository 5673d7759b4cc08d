// SPDX-License-Identifier: BSD-3-Clause
// Lock-free single-producer / single-consumer ring of fixed-size frame slots,
// all preallocated. One producer thread calls reserve()/commit() (the frame
// is written straight into its slot) or try_push(); one consumer thread
// calls peek_at()/pop() and may read several unread slots in place before
// popping them. Indices are free-running 64-bit counters (never wrap in
// practice); the producer publishes a slot with a release store of `head_`,
// the consumer frees it with a release store of `tail_`; each side reads the
// other's index with acquire and caches it to avoid touching the shared line.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

namespace omrc::loopback {

class SpscRing {
public:
    /// A frame in a slot; `bytes` stays valid until pop().
    struct View {
        std::uint64_t deliver_ns = 0;  ///< delivery time stamped by the sender, ns (sender's clock)
        std::uint8_t plane = 0;
        std::span<const std::uint8_t> bytes{};
        /// Zero copy: the payload stayed in the sender's memory; the frame
        /// is bytes[0, split) + payload + bytes[split, ...) (RxFrame's
        /// header split). Empty for a frame copied whole into its slot.
        std::span<const std::uint8_t> payload{};
        std::uint16_t split = 0;
    };
    /// Zero copy: where a committed frame's payload lies.
    struct External {
        const std::uint8_t* data = nullptr;
        std::uint32_t len = 0;
        std::uint16_t split = 0;  ///< slot bytes before the payload
    };

    /// `slots` must be a power of two ≥ 1; `slot_bytes` is the largest frame.
    SpscRing(std::uint32_t slots, std::uint32_t slot_bytes)
        : mask_(slots - 1), slot_bytes_(slot_bytes), meta_(slots),
          data_(std::make_unique_for_overwrite<std::uint8_t[]>(std::size_t{slots} * slot_bytes)) {
        if (slots == 0 || (slots & (slots - 1)) != 0)
            throw std::invalid_argument("SpscRing: slots must be a power of two");
    }
    SpscRing(const SpscRing&) = delete;
    SpscRing& operator=(const SpscRing&) = delete;

    [[nodiscard]] std::uint32_t capacity() const noexcept { return mask_ + 1; }
    [[nodiscard]] std::uint32_t slot_bytes() const noexcept { return slot_bytes_; }

    /// Producer: the next free slot (slot_bytes() writable bytes), or null
    /// when the ring is full. The slot is published only by commit(); a
    /// reserved slot that is not committed is simply reused by the next
    /// reserve() (dropping a frame after copying it costs nothing).
    [[nodiscard]] std::uint8_t* reserve() noexcept {
        const std::uint64_t h = head_.load(std::memory_order_relaxed);
        if (h - cached_tail_ > mask_) {
            cached_tail_ = tail_.load(std::memory_order_acquire);
            if (h - cached_tail_ > mask_) return nullptr;
        }
        return &data_[(h & mask_) * slot_bytes_];
    }

    /// Producer: publishes the slot reserve() returned, holding `len` bytes
    /// (and, zero copy, a payload elsewhere). Returns the frame's sequence
    /// number (see consumed()). Tracks whether the frame is delivered
    /// earlier than a frame committed before it (see time_ordered_after()).
    std::uint64_t commit(std::uint64_t deliver_ns, std::uint8_t plane, std::uint32_t len,
                         const External& ext) noexcept {
        const std::uint64_t h = head_.load(std::memory_order_relaxed);
        if (deliver_ns < max_deliver_ns_) last_overtaker_ = h + 1;
        else max_deliver_ns_ = deliver_ns;
        meta_[h & mask_] = Meta{deliver_ns, last_overtaker_, ext.data, len, ext.len, ext.split, plane};
        head_.store(h + 1, std::memory_order_release);
        return h;
    }

    std::uint64_t commit(std::uint64_t deliver_ns, std::uint8_t plane, std::uint32_t len) noexcept {
        return commit(deliver_ns, plane, len, External{nullptr, 0, 0});
    }

    /// Producer: true once the consumer has popped frame `seq` (a value
    /// commit() returned): it reads neither its slot nor its payload again.
    [[nodiscard]] bool consumed(std::uint64_t seq) const noexcept {
        return tail_.load(std::memory_order_acquire) > seq;
    }

    /// Producer: copies `bytes` (≤ slot_bytes()) into the next slot. False when full.
    bool try_push(std::uint64_t deliver_ns, std::uint8_t plane, std::span<const std::uint8_t> bytes) noexcept {
        std::uint8_t* slot = reserve();
        if (slot == nullptr) return false;
        if (!bytes.empty()) std::memcpy(slot, bytes.data(), bytes.size());
        commit(deliver_ns, plane, static_cast<std::uint32_t>(bytes.size()));
        return true;
    }

    /// Consumer: the k-th unread frame (0 = oldest), if published.
    bool peek_at(std::uint64_t k, View& out) const noexcept {
        const std::uint64_t t = tail_.load(std::memory_order_relaxed) + k;
        if (t >= cached_head_) {
            cached_head_ = head_.load(std::memory_order_acquire);
            if (t >= cached_head_) return false;
        }
        const std::size_t i = t & mask_;
        out.deliver_ns = meta_[i].deliver_ns;
        out.plane = meta_[i].plane;
        out.bytes = {&data_[i * slot_bytes_], meta_[i].len};
        out.payload = {meta_[i].payload, meta_[i].payload_len};
        out.split = meta_[i].split;
        return true;
    }

    /// Consumer: the oldest frame, if any.
    bool peek(View& out) const noexcept { return peek_at(0, out); }

    /// Consumer: true when no published frame after the k-th unread one is
    /// delivered earlier than some frame before it, so if the k-th is not
    /// due yet, none after it is (the common case of a constant link delay:
    /// the receiver can leave the frames where they are). Call after a
    /// peek_at() that succeeded; judged on the frames published at that time.
    [[nodiscard]] bool time_ordered_after(std::uint64_t k) const noexcept {
        const std::uint64_t t = tail_.load(std::memory_order_relaxed) + k;
        return meta_[(cached_head_ - 1) & mask_].last_overtaker <= t + 1;
    }

    /// Frames published and not yet popped. Any thread: two acquire loads
    /// (tail first, so never negative), a little old while the ring is in use.
    [[nodiscard]] std::uint64_t size() const noexcept {
        const std::uint64_t t = tail_.load(std::memory_order_acquire);
        return head_.load(std::memory_order_acquire) - t;
    }

    /// Consumer: releases the `n` oldest frames (n ≤ frames published).
    void pop(std::uint64_t n = 1) noexcept {
        tail_.store(tail_.load(std::memory_order_relaxed) + n, std::memory_order_release);
    }

private:
    struct Meta {
        std::uint64_t deliver_ns = 0;
        /// 1 + index of the latest frame, up to this one, delivered earlier
        /// than a frame committed before it; 0 = none so far.
        std::uint64_t last_overtaker = 0;
        const std::uint8_t* payload = nullptr;  ///< zero copy: payload in the sender's memory
        std::uint32_t len = 0;                  ///< bytes in the slot
        std::uint32_t payload_len = 0;
        std::uint16_t split = 0;
        std::uint8_t plane = 0;
    };
    static constexpr std::size_t kLine = 64;

    const std::uint64_t mask_;       ///< slots - 1
    const std::uint32_t slot_bytes_; ///< bytes per slot
    std::vector<Meta> meta_;         ///< per slot: written by the producer before publishing
    std::unique_ptr<std::uint8_t[]> data_;  ///< slots × slot_bytes_, slot i at i * slot_bytes_
    alignas(kLine) std::atomic<std::uint64_t> head_{0};  ///< next slot to fill (producer writes)
    std::uint64_t cached_tail_ = 0;                      ///< producer's last view of tail_
    std::uint64_t max_deliver_ns_ = 0;                   ///< producer: latest delivery time committed, ns
    std::uint64_t last_overtaker_ = 0;                   ///< producer: see Meta::last_overtaker
    alignas(kLine) std::atomic<std::uint64_t> tail_{0};  ///< next slot to read (consumer writes)
    mutable std::uint64_t cached_head_ = 0;              ///< consumer's last view of head_
};

}  // namespace omrc::loopback
