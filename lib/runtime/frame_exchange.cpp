// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/frame_exchange.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "wire/bth.hpp"
#include "wire/bth_peek.hpp"

namespace omrc::runtime {

FrameExchange::FrameExchange(std::uint32_t workers, std::uint32_t ring_slots)
    : workers_(workers), shard_bits_(core::shard_bits_for(workers)), stats_(workers) {
    if (workers == 0 || shard_bits_ > core::kMaxShardBits)
        throw std::invalid_argument("FrameExchange: 1 .. 2^kMaxShardBits workers");
    rings_.resize(std::size_t{workers} * workers);
    for (std::uint32_t from = 0; from < workers; ++from)
        for (std::uint32_t to = 0; to < workers; ++to)
            if (from != to) rings_[std::size_t{from} * workers + to] = std::make_unique<Ring>(ring_slots);
}

void FrameExchange::add_peer(const wire::Ipv6Addr& peer, std::uint32_t w) {
    if (w >= workers_) return;
    std::lock_guard lock(peers_mutex_);
    ++peers_[peer][w];
}

void FrameExchange::remove_peer(const wire::Ipv6Addr& peer, std::uint32_t w) {
    if (w >= workers_) return;
    std::lock_guard lock(peers_mutex_);
    auto it = peers_.find(peer);
    if (it == peers_.end() || it->second[w] == 0) return;
    --it->second[w];
    if (std::all_of(it->second.begin(), it->second.end(), [](std::uint32_t n) { return n == 0; })) peers_.erase(it);
}

FrameRoute FrameExchange::endpoint_route(const std::uint8_t* peer, std::uint32_t self) const {
    wire::Ipv6Addr a;
    std::memcpy(a.data(), peer, a.size());
    std::lock_guard lock(peers_mutex_);
    auto it = peers_.find(a);
    if (it == peers_.end()) return {self, 0};  // no QP towards it: its engine drops it (wrong_source)
    FrameRoute r{workers_, 0};
    for (std::uint32_t w = 0; w < workers_; ++w) {
        if (it->second[w] == 0) continue;
        if (r.owner == workers_) r.owner = w;
        else r.observer_mask |= 1u << w;
    }
    return r;
}

FrameRoute FrameExchange::route(const wire::RxFrame& f, std::uint32_t self) const {
    wire::BthPeek b;
    if (!wire::peek_bth({f.data, f.len}, b)) return {self, 0};
    std::uint32_t owner = self;
    if (b.dest_qp != wire::kEndpointQpn) {
        owner = core::qpn_shard(b.dest_qp, shard_bits_);
    } else if (b.opcode == static_cast<std::uint8_t>(wire::Opcode::ep_response)) {
        owner = core::request_id_shard(b.psn & 0xFFFF, shard_bits_);
    } else if (b.opcode == static_cast<std::uint8_t>(wire::Opcode::ep_request)) {
        if (std::size_t{b.ip_offset} + 24 > f.len) return {self, 0};
        return endpoint_route(f.data + b.ip_offset + 8, self);
    }
    return {owner < workers_ ? owner : self, 0};
}

bool FrameExchange::hand_over(std::uint32_t from, std::uint32_t to, const wire::RxFrame& f, bool no_reply) {
    ExchangeStats& st = stats_[from];
    const std::uint32_t len = f.frame_len();
    if (len > kExchangeFrameBytes || (f.payload != nullptr && f.split > f.len)) {
        ++st.dropped_too_large;
        return false;
    }
    Slot* s = ring(from, to).reserve();
    if (s == nullptr) {
        ++st.dropped_ring_full;
        return false;
    }
    if (f.payload == nullptr) {
        std::memcpy(s->bytes, f.data, f.len);
    } else {  // a header-split frame travels whole
        std::memcpy(s->bytes, f.data, f.split);
        std::memcpy(s->bytes + f.split, f.payload, f.payload_len);
        std::memcpy(s->bytes + f.split + f.payload_len, f.data + f.split, f.len - f.split);
    }
    s->len = len;
    s->plane = f.plane;
    s->no_reply = no_reply;
    ring(from, to).commit();
    if (no_reply) ++st.endpoint_copies;
    else ++st.rx_foreign;
    return true;
}

bool FrameExchange::has_inbound(std::uint32_t to) const noexcept {
    for (std::uint32_t from = 0; from < workers_; ++from)
        if (from != to && !ring(from, to).empty()) return true;
    return false;
}

}  // namespace omrc::runtime
