// SPDX-License-Identifier: BSD-3-Clause
// Simulated NICs: each hosts an unmodified lib/core engine and drives it as
// the loopback driver's virtual-clock mode does — on_rx for every arriving
// frame, on_timer when its next_wakeup() comes, poll_tx whenever its ports
// have room, poll_completions after every call.
//
// Transmit backpressure. A NIC pulls frames from its engine only while fewer
// than planes × nic_queue_pkts_per_port frames wait in its port queues, and
// pulls again each time a port finishes a frame: the engine's window and
// path choice stay in charge, the NIC only paces at line rate.
//
// Receive. The engine needs a whole frame; packets carry header bytes and a
// payload length. The frame is rebuilt in one reusable buffer: header, then
// the payload (the sender's bytes when SimConfig::carry_payload, else the
// buffer's zeros), then pad + ICRC. The buffer is zeroed again where it was
// written, so it is all zeros between frames.
#include <algorithm>
#include <array>
#include <cstring>

#include "drivers/sim/network.hpp"
#include "wire/bth.hpp"
#include "wire/bth_peek.hpp"

namespace omrc::sim {

void Simulator::nic_receive(std::uint32_t nic, std::uint32_t plane, Packet* p) {
    if (p->data && !p->trimmed && cfg_.telemetry_bucket_ps != 0) {
        const std::size_t bucket = now_ / cfg_.telemetry_bucket_ps;
        if (bucket >= delivered_.size()) delivered_.resize(bucket + 1, std::array<std::uint64_t, 16>{});
        delivered_[bucket][plane] += p->payload_bytes;
        if (p->src_nic == cfg_.tracked_src_nic) {
            if (bucket >= tracked_.size()) tracked_.resize(bucket + 1, 0);
            tracked_[bucket] += p->payload_bytes;
        }
    }
    if (cfg_.count_reorder && p->data && !p->trimmed) {
        // Each source port numbers its frames as they start serialising (tag).
        const std::uint64_t key = (std::uint64_t{nics_[p->src_nic].first_port + plane} << 32) | nic;
        auto [it, fresh] = last_order_.try_emplace(key, p->tag);
        if (!fresh) {
            if (p->tag < it->second) ++reorder_at_nic_;
            else it->second = p->tag;
        }
    }
    const wire::GatherFrame& g = p->frame;
    const std::size_t size = p->frame_bytes();
    if (size > rxbuf_.size()) rxbuf_.resize(size, 0);
    std::uint8_t* b = rxbuf_.data();
    std::memcpy(b, g.header.data(), g.header_len);
    std::size_t off = g.header_len;
    if (cfg_.carry_payload) {
        for (std::size_t s = 0; s < g.segment_count; ++s) {
            if (g.segments[s].len) std::memcpy(b + off, g.segments[s].data, g.segments[s].len);
            off += g.segments[s].len;
        }
    } else {
        off += p->payload_bytes;
    }
    std::memcpy(b + off, g.tail.data(), g.tail_len);
    wire::RxFrame rx{b, static_cast<std::uint32_t>(size), static_cast<std::uint8_t>(plane)};
    if (p->telemetry != nullptr && p->telemetry->hops != 0) rx.telemetry = p->telemetry;
    deliver(nics_[nic], rx);
    pool_.put(p);
    std::memset(b, 0, size);
    after_engine(nic);
}

void Simulator::deliver(Nic& n, const wire::RxFrame& rx) {
    if (n.engines.size() == 1) {
        n.engines.front()->on_rx_burst({&rx, 1}, now_ns());
        return;
    }
    // As a device's workers route a frame (runtime/frame_exchange.hpp): its
    // QP's engine; an endpoint response to the engine that asked; an
    // endpoint request to every engine with a QP towards its source, the
    // lowest answering.
    wire::BthPeek b;
    std::size_t owner = 0;
    if (wire::peek_bth({rx.data, rx.len}, b)) {
        if (b.dest_qp != wire::kEndpointQpn) {
            owner = core::qpn_shard(b.dest_qp, n.shard_bits);
        } else if (b.opcode == static_cast<std::uint8_t>(wire::Opcode::ep_response)) {
            owner = core::request_id_shard(b.psn & 0xFFFF, n.shard_bits);
        } else if (b.opcode == static_cast<std::uint8_t>(wire::Opcode::ep_request) &&
                   std::size_t{b.ip_offset} + 24 <= rx.len) {
            wire::Ipv6Addr src;
            std::memcpy(src.data(), rx.data + b.ip_offset + 8, src.size());
            bool answered = false;
            for (auto& e : n.engines) {
                if (!e->has_peer(src)) continue;
                wire::RxFrame copy = rx;
                copy.no_reply = answered;
                e->on_rx_burst({&copy, 1}, now_ns());
                answered = true;
            }
            if (answered) return;
        }
    }
    if (owner >= n.engines.size()) owner = 0;
    n.engines[owner]->on_rx_burst({&rx, 1}, now_ns());
}

core::Engine& Simulator::engine_of(std::uint32_t nic, std::uint32_t qpn) noexcept {
    Nic& n = nics_[nic];
    const std::uint32_t s = core::qpn_shard(qpn, n.shard_bits);
    return *n.engines[s < n.engines.size() ? s : 0];
}

core::Engine& Simulator::place_qp(std::uint32_t nic) noexcept {
    Nic& n = nics_[nic];
    core::Engine& e = *n.engines[n.next_shard % n.engines.size()];
    n.next_shard = (n.next_shard + 1) % static_cast<std::uint32_t>(n.engines.size());
    return e;
}

void Simulator::kick(std::uint32_t nic) { after_engine(nic); }

void Simulator::after_engine(std::uint32_t nic) {
    // A local array: the handler may post work and kick NICs (this one included).
    std::array<core::Completion, 16> wc;
    for (std::size_t s = 0; s < nics_[nic].engines.size(); ++s) {
        core::Engine& eng = *nics_[nic].engines[s];
        for (;;) {
            const std::size_t n = eng.poll_completions(wc);
            for (std::size_t i = 0; i < n; ++i)
                if (on_completion_) on_completion_(nic, wc[i], now_);
            if (n < wc.size()) break;
        }
    }
    pull(nic);
    arm_wake(nic);
}

void Simulator::pull(std::uint32_t nic) {
    Nic& n = nics_[nic];
    const std::uint32_t cap = cfg_.planes * cfg_.nic_queue_pkts_per_port;
    // The engines take turns (one pull each, from where the last turn ended);
    // the NIC stops when its queues are full or no engine has a frame.
    std::size_t idle = 0;
    while (n.queued < cap && idle < n.engines.size()) {
        const std::size_t want = std::min<std::size_t>(cap - n.queued, txbuf_.size());
        core::Engine& eng = *n.engines[n.next_shard % n.engines.size()];
        if (n.engines.size() > 1) n.next_shard = (n.next_shard + 1) % static_cast<std::uint32_t>(n.engines.size());
        const std::size_t got = eng.poll_tx(std::span(txbuf_.data(), want), now_ns());
        idle = got == 0 ? idle + 1 : 0;
        for (std::size_t i = 0; i < got; ++i) {
            const wire::GatherFrame& g = txbuf_[i];
            Packet* p = pool_.get();
            p->frame = g;
            // Echoed INT records travel with the packet, not as a pointer into the engine.
            if (p->telemetry != nullptr) {
                p->telemetry->hops = 0;
                if (g.telemetry != nullptr) *p->telemetry = *g.telemetry;
            }
            p->frame.telemetry = nullptr;
            p->payload_bytes = static_cast<std::uint32_t>(g.payload_len());
            p->src_nic = nic;
            p->sent_ps = now_;
            p->trimmed = false;
            p->cell = false;
            const std::uint8_t* h = g.header.data();
            const std::uint8_t dscp = static_cast<std::uint8_t>(((h[14] & 0x0F) << 2) | (h[15] >> 6));
            p->data = dscp == dscp_data_;
            p->priority = !p->data;
            ++pkts_sent_;
            if (p->data) ++data_pkts_sent_;
            const std::uint32_t idx = n.first_port + std::min<std::uint32_t>(g.plane, cfg_.planes - 1);
            Port& port = ports_[idx];
            if (!port.up) {
                drop_down(port, p);
                continue;
            }
            (p->priority ? port.hi : port.lo).push(p);
            ++n.queued;
            start_tx(idx);
        }
        if (got < want && n.engines.size() == 1) break;
    }
}

core::TimeNs Simulator::next_wakeup(const Nic& n) const noexcept {
    core::TimeNs t = core::kNever;
    for (const auto& e : n.engines) t = std::min(t, e->next_wakeup());
    return t;
}

void Simulator::arm_wake(std::uint32_t nic) {
    Nic& n = nics_[nic];
    const core::TimeNs next = next_wakeup(n);
    if (next == core::kNever) return;
    // An engine never needs to run twice at one instant: a deadline at or
    // before the time it last ran moves to the next nanosecond.
    TimePs t = std::max(from_ns(next), now_);
    if (n.wake_at != kNeverPs && n.wake_at >= now_ && n.wake_at <= t) return;
    n.wake_at = t;
    events_q_.push(t, EventKind::nic_wake, nic);
}

void Simulator::nic_wake(std::uint32_t nic, TimePs at) {
    Nic& n = nics_[nic];
    if (n.wake_at != at) return;  // superseded by an earlier wakeup
    n.wake_at = kNeverPs;
    std::array<core::Completion, 16> wc;
    for (std::size_t s = 0; s < n.engines.size(); ++s) {
        core::Engine& eng = *n.engines[s];
        if (n.engines.size() > 1 && eng.next_wakeup() > now_ns()) continue;  // not due
        eng.on_timer(now_ns());
        for (;;) {
            const std::size_t k = eng.poll_completions(wc);
            for (std::size_t i = 0; i < k; ++i)
                if (on_completion_) on_completion_(nic, wc[i], now_);
            if (k < wc.size()) break;
        }
    }
    pull(nic);
    const core::TimeNs next = next_wakeup(n);
    if (next == core::kNever) return;
    TimePs t = std::max(from_ns(next), now_ + kPsPerNs);
    if (n.wake_at != kNeverPs && n.wake_at >= now_ && n.wake_at <= t) return;
    n.wake_at = t;
    events_q_.push(t, EventKind::nic_wake, nic);
}

}  // namespace omrc::sim
