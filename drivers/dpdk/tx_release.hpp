// SPDX-License-Identifier: BSD-3-Clause
// Release tracking for zero-copy transmit. Every accepted frame gets a
// record in a ring, indexed by its acceptance sequence. A frame whose
// payload is attached to mbufs as external buffers stays pending until DPDK
// frees the last of those mbufs (the shared-info free callback); a copied
// frame is released at once. The watermark is the contiguous prefix of
// released frames: Driver::tx_release_count().
//
// Threads: the queue's (its worker's) thread. DPDK frees transmitted mbufs
// from the thread that calls rte_eth_tx_burst / rte_eth_tx_done_cleanup,
// i.e. ours: each queue has its own ring.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <rte_mbuf.h>

#include "wire/gather_frame.hpp"

namespace omrc::dpdk {

class TxReleaseRing {
public:
    /// Payload pieces of one frame: its segments, each split at most once
    /// where its pages are not contiguous in IOVA (a frame needing more is copied).
    static constexpr std::size_t kMaxPieces = 2 * wire::GatherFrame::kMaxSegments;
    struct Record {
        TxReleaseRing* ring = nullptr;
        std::uint32_t pending = 0;  ///< external buffers not yet freed by DPDK
        /// One shared-info block per payload piece (DPDK keeps a pointer).
        std::array<rte_mbuf_ext_shared_info, kMaxPieces> shinfo{};
    };

    /// `capacity` frames may be outstanding (rounded up to a power of two).
    explicit TxReleaseRing(std::uint32_t capacity) {
        std::uint32_t n = 1;
        while (n < capacity) n <<= 1;
        records_.resize(n);
        mask_ = n - 1;
        for (Record& r : records_) r.ring = this;
    }

    /// Room for one more outstanding frame?
    [[nodiscard]] bool full() const noexcept { return accepted_ - released_ > mask_; }
    /// Starts the record of the next accepted frame.
    Record& begin_frame() noexcept {
        Record& r = records_[accepted_ & mask_];
        r.pending = 0;
        return r;
    }
    /// The frame begun last is accepted; advances the watermark if it held nothing.
    void commit_frame() noexcept {
        ++accepted_;
        advance();
    }
    /// The DPDK free callback of an external buffer (opaque = Record*).
    static void on_free(void* addr, void* opaque) noexcept {
        (void)addr;
        auto* r = static_cast<Record*>(opaque);
        if (--r->pending == 0) r->ring->advance();
    }

    [[nodiscard]] std::uint64_t released() const noexcept { return released_; }
    [[nodiscard]] std::uint64_t accepted() const noexcept { return accepted_; }

private:
    void advance() noexcept {
        while (released_ < accepted_ && records_[released_ & mask_].pending == 0) ++released_;
    }

    std::vector<Record> records_;
    std::uint64_t mask_ = 0;
    std::uint64_t accepted_ = 0;  ///< frames accepted so far
    std::uint64_t released_ = 0;  ///< watermark: frames [0, released_) hold no payload memory
};

}  // namespace omrc::dpdk
