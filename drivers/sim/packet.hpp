// SPDX-License-Identifier: BSD-3-Clause
// A simulated packet: the frame's real header bytes (switches parse and
// rewrite them) plus its payload *length*. Payload bytes are not carried:
// the segments keep the sender's pointers only so that a NIC with a memory
// model can hand the receiving engine the real bytes; without one the
// receiver sees zeros. Packets come from a pool with an intrusive free list,
// so the data path never calls the allocator once the pool has grown.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "drivers/sim/sim_time.hpp"
#include "wire/gather_frame.hpp"
#include "wire/int_telemetry.hpp"

namespace omrc::sim {

struct Packet {
    wire::GatherFrame frame;       ///< header bytes, payload segments (pointers + lengths), pad + ICRC tail
    Packet* next = nullptr;        ///< intrusive link: output-queue FIFO or pool free list
    TimePs sent_ps = 0;            ///< when the source NIC handed it to its port
    std::uint32_t src_nic = 0;
    std::uint32_t payload_bytes = 0;  ///< cached frame.payload_len()
    bool priority = false;         ///< control or trimmed: served before data at every queue
    bool data = false;             ///< a data packet (DSCP = data) at the source
    bool trimmed = false;          ///< cut by a switch
    bool cell = false;             ///< routing ddc: a cell of a packet held at the egress T0 (no frame bytes)
    /// Frames from a NIC: the source port's frame count when this one
    /// started serialising there (reorder counting). Cells: their packet's
    /// reassembly record (ddc.cpp). In the padding before `telemetry`.
    std::uint32_t tag = 0;
    /// INT (SimConfig::int_telemetry; null otherwise): a data packet's
    /// records, one per switch egress it left; a SACK's, the ones its engine
    /// echoed. Not in the frame bytes (docs/PROTOCOL.md "INT telemetry").
    /// Out of line, in the pool's own chunks: a simulation without INT does
    /// not carry ~170 bytes more per packet.
    wire::IntStack* telemetry = nullptr;

    [[nodiscard]] std::uint32_t frame_bytes() const noexcept {
        return frame.header_len + payload_bytes + frame.tail_len;
    }
};

/// Frees nothing until destroyed; grows in chunks of kChunk packets.
class PacketPool {
public:
    static constexpr std::size_t kChunk = 4096;

    Packet* get() {
        if (free_ == nullptr) grow();
        Packet* p = free_;
        free_ = p->next;
        p->next = nullptr;
        ++live_;
        return p;
    }
    void put(Packet* p) noexcept {
        p->next = free_;
        free_ = p;
        --live_;
    }
    [[nodiscard]] std::size_t live() const noexcept { return live_; }
    [[nodiscard]] std::size_t allocated() const noexcept { return chunks_.size() * kChunk; }

    /// Every packet gets INT records (call before the first get()).
    void enable_telemetry() noexcept { telemetry_ = true; }

private:
    void grow() {
        chunks_.push_back(std::make_unique<Packet[]>(kChunk));
        Packet* c = chunks_.back().get();
        wire::IntStack* t = nullptr;
        if (telemetry_) {
            stacks_.push_back(std::make_unique<wire::IntStack[]>(kChunk));
            t = stacks_.back().get();
        }
        for (std::size_t i = 0; i < kChunk; ++i) {
            c[i].next = free_;
            c[i].telemetry = t != nullptr ? &t[i] : nullptr;
            free_ = &c[i];
        }
    }
    std::vector<std::unique_ptr<Packet[]>> chunks_;
    std::vector<std::unique_ptr<wire::IntStack[]>> stacks_;  ///< parallel to chunks_ when telemetry_
    bool telemetry_ = false;
    Packet* free_ = nullptr;
    std::size_t live_ = 0;
};

/// FIFO of packets through their `next` links.
struct PacketFifo {
    Packet* head = nullptr;
    Packet* tail = nullptr;
    std::uint64_t bytes = 0;   ///< sum of frame_bytes() of the queued packets
    std::uint32_t count = 0;

    [[nodiscard]] bool empty() const noexcept { return head == nullptr; }
    void push(Packet* p) noexcept {
        p->next = nullptr;
        if (tail) tail->next = p;
        else head = p;
        tail = p;
        bytes += p->frame_bytes();
        ++count;
    }
    Packet* pop() noexcept {
        Packet* p = head;
        head = p->next;
        if (head == nullptr) tail = nullptr;
        bytes -= p->frame_bytes();
        --count;
        p->next = nullptr;
        return p;
    }
};

}  // namespace omrc::sim
