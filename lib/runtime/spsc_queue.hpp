// SPDX-License-Identifier: BSD-3-Clause
// A lock-free single-producer / single-consumer queue of fixed-size entries,
// all preallocated: what the threads of a device pass to each other (work
// requests to a worker, completions back, frames between workers). One
// thread produces (try_push, or reserve + commit to fill an entry in place),
// one consumes (front + pop). Indices are free-running 64-bit counters; the
// producer publishes with a release store of head_, the consumer frees with
// a release store of tail_, and each side caches the other's index so that
// it touches the shared line only when its cached view says full or empty.
//
// A role may move to another thread when the program orders the move (a
// parked worker's queue drained by the thread that parked it: the park's
// acquire/release hand-over covers the cached indices too).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>

namespace omrc::runtime {

template <typename T>
class SpscQueue {
public:
    /// `capacity` must be a power of two ≥ 1.
    explicit SpscQueue(std::uint32_t capacity)
        : mask_(capacity - 1), slots_(std::make_unique_for_overwrite<T[]>(capacity)) {
        if (capacity == 0 || (capacity & (capacity - 1)) != 0)
            throw std::invalid_argument("SpscQueue: capacity must be a power of two");
    }
    SpscQueue(const SpscQueue&) = delete;
    SpscQueue& operator=(const SpscQueue&) = delete;

    [[nodiscard]] std::uint32_t capacity() const noexcept { return static_cast<std::uint32_t>(mask_ + 1); }

    /// Producer: the next free entry to fill in place, or null when full. It
    /// is published by commit(); an entry reserved and not committed is
    /// handed out again by the next reserve().
    [[nodiscard]] T* reserve() noexcept {
        const std::uint64_t h = head_.load(std::memory_order_relaxed);
        if (h - cached_tail_ > mask_) {
            cached_tail_ = tail_.load(std::memory_order_acquire);
            if (h - cached_tail_ > mask_) return nullptr;
        }
        return &slots_[h & mask_];
    }
    /// Producer: publishes the entry reserve() returned.
    void commit() noexcept { head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
    /// Producer: copies `v` in; false when full.
    bool try_push(const T& v) noexcept {
        T* slot = reserve();
        if (slot == nullptr) return false;
        *slot = v;
        commit();
        return true;
    }

    /// Consumer: the k-th unread entry (0 = the oldest), or null when fewer
    /// are published. Valid until it is popped.
    [[nodiscard]] T* peek(std::uint64_t k = 0) noexcept {
        const std::uint64_t t = tail_.load(std::memory_order_relaxed) + k;
        if (t >= cached_head_) {
            cached_head_ = head_.load(std::memory_order_acquire);
            if (t >= cached_head_) return nullptr;
        }
        return &slots_[t & mask_];
    }
    /// Consumer: the oldest entry, or null when empty.
    [[nodiscard]] T* front() noexcept { return peek(0); }
    /// Consumer: frees the `n` oldest entries (n ≤ entries published).
    void pop(std::uint64_t n = 1) noexcept {
        tail_.store(tail_.load(std::memory_order_relaxed) + n, std::memory_order_release);
    }

    /// Either side: entries published and not popped (exact for the
    /// consumer, a bound for the producer and for other readers).
    [[nodiscard]] std::uint64_t size() const noexcept {
        return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire);
    }
    [[nodiscard]] bool empty() const noexcept { return size() == 0; }

private:
    static constexpr std::size_t kLine = 64;
    const std::uint64_t mask_;
    std::unique_ptr<T[]> slots_;
    alignas(kLine) std::atomic<std::uint64_t> head_{0};  ///< next entry to fill (producer writes)
    std::uint64_t cached_tail_ = 0;                      ///< producer's last view of tail_
    alignas(kLine) std::atomic<std::uint64_t> tail_{0};  ///< next entry to read (consumer writes)
    std::uint64_t cached_head_ = 0;                      ///< consumer's last view of head_
};

}  // namespace omrc::runtime
