// SPDX-License-Identifier: BSD-3-Clause
// The per-frame path of the loopback fabric: the driver class, the transmit
// pipeline (routing, port state, impairments, output queue, delay) and the
// receive side (ring slots or the delivery heap → rx_burst). No lock is
// taken here.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "drivers/loopback/fabric_impl.hpp"
#include "core/config.hpp"
#include "drivers/loopback/frame_edit.hpp"
#include "wire/bth.hpp"

namespace omrc::loopback {

namespace {

constexpr std::uint64_t kNsPerSecond = 1'000'000'000;

bool later(const RxEntry& a, const RxEntry& b) noexcept {
    return a.deliver_ns != b.deliver_ns ? a.deliver_ns > b.deliver_ns : a.seq > b.seq;
}

/// The endpoint a frame sent on `plane` is for, or -1.
int route(std::span<const std::uint8_t> f, std::uint32_t plane, std::uint32_t endpoints) noexcept {
    if (f.size() < wire::EthHdr::kSize) return -1;
    const wire::MacAddr want = Fabric::mac(0, plane);
    for (std::size_t i = 0; i < 5; ++i)
        if (f[i] != want[i]) return -1;
    return f[5] < endpoints ? f[5] : -1;
}

/// GatherFrame::flatten with memcpy per piece (out.size() == gf.size()).
void copy_frame(const wire::GatherFrame& gf, std::span<std::uint8_t> out) noexcept {
    std::uint8_t* p = out.data();
    std::memcpy(p, gf.header.data(), gf.header_len);
    p += gf.header_len;
    for (std::size_t s = 0; s < gf.segment_count; ++s) {
        if (gf.segments[s].len == 0) continue;
        std::memcpy(p, gf.segments[s].data, gf.segments[s].len);
        p += gf.segments[s].len;
    }
    std::memcpy(p, gf.tail.data(), gf.tail_len);
}

/// Serialization time of `bytes` at `rate_bps` (> 0), rounded up, ns.
std::uint64_t serialization_ns(std::size_t bytes, std::uint64_t rate_bps) noexcept {
    const unsigned __int128 bits_ns = static_cast<unsigned __int128>(bytes) * 8 * kNsPerSecond;
    return static_cast<std::uint64_t>((bits_ns + rate_bps - 1) / rate_bps);
}

/// Bytes still to serialize `ahead_ns` before the link is idle (rounded down).
std::uint64_t backlog_bytes(std::uint64_t ahead_ns, std::uint64_t rate_bps) noexcept {
    const unsigned __int128 bits = static_cast<unsigned __int128>(ahead_ns) * rate_bps / kNsPerSecond;
    return static_cast<std::uint64_t>(bits / 8);
}

}  // namespace

// ---- Receiver ----

bool Receiver::take(std::uint32_t len, bool can_grow, std::uint32_t& out) {
    if (free.empty()) {
        if (!can_grow) return false;
        bufs.emplace_back();
        free.push_back(static_cast<std::uint32_t>(bufs.size() - 1));
    }
    out = free.back();
    free.pop_back();
    taken.add();
    Buf& b = bufs[out];
    if (b.cap < len) {  // virtual_clock only: real_time buffers hold max_frame_bytes
        b.cap = std::max<std::uint32_t>(len, 256);
        b.own = std::make_unique_for_overwrite<std::uint8_t[]>(b.cap);
        b.data = b.own.get();
    }
    return true;
}

void Receiver::push(const RxEntry& e) {
    heap.push_back(e);
    std::push_heap(heap.begin(), heap.end(), later);
}

RxEntry Receiver::pop() {
    std::pop_heap(heap.begin(), heap.end(), later);
    const RxEntry e = heap.back();
    heap.pop_back();
    return e;
}

// ---- Fabric::Impl data path ----

std::uint32_t Fabric::Impl::steer(std::span<const std::uint8_t> head) const noexcept {
    if (cfg.queues == 1) return 0;
    const FrameInfo fi = inspect_frame(head);
    if (!fi.has_udp) return 0;
    if (cfg.steering == QueueSteering::spread) {
        // RSS over the entropy: the UDP source port and the flow label.
        std::uint64_t h = fi.ev * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
        return static_cast<std::uint32_t>(h % cfg.queues);
    }
    if (!fi.has_bth || head.size() < std::size_t{fi.bth_offset} + 8u) return 0;
    const std::uint32_t dest_qp = static_cast<std::uint32_t>(head[fi.bth_offset + 5]) << 16 |
                                  static_cast<std::uint32_t>(head[fi.bth_offset + 6]) << 8 | head[fi.bth_offset + 7];
    if (dest_qp == wire::kEndpointQpn) return 0;
    const std::uint32_t q = core::qpn_shard(dest_qp, core::shard_bits_for(cfg.queues));
    return q < cfg.queues ? q : 0;
}

void Fabric::Impl::advance(std::uint64_t now_ns) {
    if (schedule.empty() || schedule.begin()->first > now_ns) return;
    const std::lock_guard lock(control_mutex);
    while (!schedule.empty() && schedule.begin()->first <= now_ns) {
        apply(schedule.begin()->second);
        schedule.erase(schedule.begin());
    }
}

bool Fabric::Impl::transmit(std::uint32_t src, std::uint32_t sq, const wire::GatherFrame& gf, std::uint64_t now_ns) {
    Queue& ep = *endpoints[src]->queues[sq];
    // A malformed gather list (counts beyond its arrays) is rejected before size() reads it.
    const bool well_formed = gf.header_len <= gf.header.size() && gf.segment_count <= gf.segments.size() &&
                             gf.tail_len <= gf.tail.size();
    std::size_t len = well_formed ? gf.size() : 0;
    if (!well_formed || gf.plane >= cfg.planes || len == 0 || len > cfg.max_frame_bytes) {
        ep.invalid_frames.add();
        return true;
    }
    const std::uint8_t plane = gf.plane;
    // The destination comes from the Ethernet header, before any copy.
    std::span<const std::uint8_t> head(gf.header.data(), gf.header_len);
    if (head.size() < wire::EthHdr::kSize) {
        copy_frame(gf, {ep.scratch.data(), len});
        head = {ep.scratch.data(), len};
    }
    const int routed = route(head, plane, cfg.endpoints);
    const bool src_up = port_up(src, plane);
    // The receiving queue (FabricConfig::steering), from the headers.
    const std::uint32_t dq = routed >= 0 ? steer(head) : 0;
    SpscRing* ring = nullptr;
    std::uint8_t* slot = nullptr;
    if (routed >= 0 && real_time()) {
        ring = rings[ring_index(src, sq, static_cast<std::uint32_t>(routed), dq)].get();
        slot = ring->reserve();
        if (slot == nullptr && cfg.ring_backpressure) return false;
    }
    if (src_up) {
        ep.tx_frames.add();
        ep.tx_bytes.add(len);
    } else {
        ep.tx_dropped_link_down.add();
    }
    if (routed < 0) {
        if (src_up) ep.unknown_destination.add();
        return true;
    }
    const auto dst = static_cast<std::uint32_t>(routed);
    Link& l = link(src, sq, dst, plane);
    LinkCounterSet& c = l.counters;
    // A detached endpoint is a NIC that is gone: like a port that is down.
    if (!src_up || !port_up(dst, plane) || !endpoints[dst]->attached.load(std::memory_order_acquire)) {
        c.link_down.add();
        return true;
    }
    Receiver& rx = endpoints[dst]->queues[dq]->rx;  // touched here in virtual_clock mode only (one thread)
    std::uint32_t buf = 0;
    if (real_time()) {
        if (slot == nullptr) {
            c.ring_full.add();
            ep.tx_dropped_full.add();
            return true;
        }
        // Zero copy: nothing on this link touches the frame, so the payload
        // stays where it is and only headers and tail go into the slot.
        if (cfg.zero_copy && gf.segment_count == 1 && !gf.payload_in_engine_memory &&
            gf.segments[0].len >= cfg.zero_copy_min_bytes && cfg.queue.rate_bps == 0 &&
            l.imp.load(std::memory_order_acquire) == nullptr) {
            std::memcpy(slot, gf.header.data(), gf.header_len);
            std::memcpy(slot + gf.header_len, gf.tail.data(), gf.tail_len);
            const SpscRing::External ext{gf.segments[0].data, gf.segments[0].len, gf.header_len};
            const std::uint64_t seq = ring->commit(now_ns + cfg.link_delay_ns, plane,
                                                   static_cast<std::uint32_t>(gf.header_len + gf.tail_len), ext);
            ep.lent_payloads.push_back({ep.tx_accepted, ring, seq, dst});
            c.delivered.add();
            c.zero_copy.add();
            return true;
        }
    } else {
        rx.take(static_cast<std::uint32_t>(len), true, buf);
        slot = rx.bufs[buf].data;
    }
    // The one copy: gathered straight into the ring slot (or receive buffer)
    // and impaired in place. A frame dropped below is simply not published.
    std::span<std::uint8_t> f(slot, len);
    copy_frame(gf, f);
    auto drop = [&](Counter& why) {
        why.add();
        if (!real_time()) rx.give_back(buf);
        return true;
    };

    const FrameInfo fi = inspect_frame(f);
    auto rng = [&l](Stream s) -> Rng& { return l.rng[static_cast<std::size_t>(s)]; };
    std::uint64_t extra_delay_ns = 0;
    bool duplicate = false;
    std::uint64_t duplicate_delay_ns = 0;
    if (const Impairment* imp = l.imp.load(std::memory_order_acquire)) {
        if (selected(imp->blackhole_select, fi)) {
            if (imp->blackhole) return drop(c.blackholed);
            if (fi.has_udp && std::binary_search(imp->blackhole_evs.begin(), imp->blackhole_evs.end(), fi.ev))
                return drop(c.blackholed_ev);
            if (fi.has_udp && imp->blackhole_t1.t1_count != 0 &&
                ((fi.ev >> 16) & 0xFFF) % imp->blackhole_t1.t1_count == imp->blackhole_t1.t1)
                return drop(c.blackholed_ev);
        }
        if (imp->loss.rate > 0 && selected(imp->loss.select, fi) && rng(Stream::loss).bernoulli(imp->loss.rate))
            return drop(c.lost_random);
        const BurstLoss& ge = imp->burst_loss;
        if (ge.enabled() && selected(ge.select, fi)) {
            Rng& r = rng(Stream::burst);
            l.burst_bad = l.burst_bad ? !r.bernoulli(ge.p_bad_to_good) : r.bernoulli(ge.p_good_to_bad);
            if (r.bernoulli(l.burst_bad ? ge.loss_bad : ge.loss_good)) return drop(c.lost_burst);
        }
        if (imp->corrupt.rate > 0 && selected(imp->corrupt.select, fi) &&
            rng(Stream::corrupt).bernoulli(imp->corrupt.rate)) {
            flip_random_bit(f, fi, imp->corrupt.anywhere, rng(Stream::corrupt));
            c.corrupted.add();
        }
        if (imp->trim.rate > 0 && fi.is_data && rng(Stream::trim).bernoulli(imp->trim.rate)) {
            len = trimmed_length(fi, len, imp->trim.size_bytes);
            f = f.first(len);
            set_first_dscp(f, imp->trim.dscp);
            c.trimmed.add();
        }
        if (selected(imp->delay.select, fi)) {
            extra_delay_ns = imp->delay.extra_ns;
            if (imp->delay.jitter_ns > 0) extra_delay_ns += rng(Stream::jitter).below_or_equal(imp->delay.jitter_ns);
        }
        if (imp->duplicate.rate > 0 && selected(imp->duplicate.select, fi) &&
            rng(Stream::duplicate).bernoulli(imp->duplicate.rate)) {
            duplicate = true;
            duplicate_delay_ns = imp->duplicate.extra_delay_ns;
        }
    }

    std::uint64_t depart_ns = now_ns;
    const QueueConfig& q = cfg.queue;
    if (q.rate_bps > 0) {
        std::atomic<std::uint64_t>& busy_until = l.wire->busy_until_ns;
        std::uint64_t busy = busy_until.load(std::memory_order_acquire);
        const std::uint64_t backlog = busy > now_ns ? backlog_bytes(busy - now_ns, q.rate_bps) : 0;
        bool bypass = false;  // trimmed header: priority, does not wait behind the backlog
        if (backlog > q.limit_bytes || q.limit_bytes - backlog < len) {
            if (q.overflow != OverflowPolicy::trim || !fi.is_data) return drop(c.queue_dropped);
            len = trimmed_length(fi, len, q.trim_bytes);
            f = f.first(len);
            set_first_dscp(f, q.trimmed_dscp);
            c.queue_trimmed.add();
            bypass = true;
        }
        if (!bypass && backlog > q.ecn_threshold_bytes && fi.has_ipv6) {
            set_first_ecn(f, wire::Ipv6Hdr::kEcnCe);
            c.ecn_marked.add();
        }
        const std::uint64_t ser = serialization_ns(len, q.rate_bps);
        if (bypass) {
            depart_ns = now_ns + ser;
        } else {
            // Another queue of this endpoint may have sent meanwhile: depart
            // after whatever the wire holds by the time we take our turn.
            do {
                depart_ns = std::max(now_ns, busy) + ser;
            } while (!busy_until.compare_exchange_weak(busy, depart_ns, std::memory_order_acq_rel,
                                                       std::memory_order_acquire));
        }
    }
    const std::uint64_t deliver_ns = depart_ns + cfg.link_delay_ns + extra_delay_ns;
    const auto flen = static_cast<std::uint32_t>(len);
    if (real_time()) {
        ring->commit(deliver_ns, plane, flen);
    } else {
        rx.push(RxEntry{deliver_ns, send_seq++, buf, flen, plane});
    }
    c.delivered.add();
    if (!duplicate) return true;
    // The copy comes from the frame just queued: only the sender writes ring
    // slots, so its bytes stay as they are even once it has been received.
    std::uint8_t* dup = nullptr;
    std::uint32_t dup_buf = 0;
    if (real_time()) {
        dup = ring->reserve();
    } else {
        rx.take(flen, true, dup_buf);
        dup = rx.bufs[dup_buf].data;
    }
    if (dup == nullptr) {
        c.ring_full.add();
        ep.tx_dropped_full.add();
        return true;
    }
    std::memcpy(dup, f.data(), flen);
    if (real_time()) {
        ring->commit(deliver_ns + duplicate_delay_ns, plane, flen);
    } else {
        rx.push(RxEntry{deliver_ns + duplicate_delay_ns, send_seq++, dup_buf, flen, plane});
    }
    c.duplicated.add();
    return true;
}

void Fabric::Impl::release_lent(std::uint32_t endpoint, std::uint32_t q) {
    Receiver& rx = endpoints[endpoint]->queues[q]->rx;
    for (std::uint32_t b : rx.lent) rx.give_back(b);
    rx.lent.clear();
    if (!real_time()) return;  // no rings
    for (std::uint32_t src = 0; src < cfg.endpoints; ++src)
        for (std::uint32_t sq = 0; sq < cfg.queues; ++sq) {
            std::uint32_t& lent = rx.ring_lent[source_index(src, sq)];
            if (lent == 0) continue;
            rings[ring_index(src, sq, endpoint, q)]->pop(lent);
            lent = 0;
        }
}

void Fabric::Impl::drain_rings(std::uint32_t endpoint, std::uint32_t q) {
    for (std::uint32_t src = 0; src < cfg.endpoints; ++src)
        for (std::uint32_t sq = 0; sq < cfg.queues; ++sq) {
            SpscRing& ring = *rings[ring_index(src, sq, endpoint, q)];
            ring.pop(ring.size());
        }
}

std::size_t Fabric::Impl::receive(std::uint32_t endpoint, std::uint32_t q, std::span<driver::RxFrame> out,
                                  std::uint64_t now_ns) {
    Queue& ep = *endpoints[endpoint]->queues[q];
    Receiver& rx = ep.rx;
    release_lent(endpoint, q);
    std::size_t count = 0;
    auto emit = [&](const std::uint8_t* data, std::uint32_t len, std::uint8_t plane,
                    std::span<const std::uint8_t> payload = {}, std::uint16_t split = 0) {
        out[count++] = driver::RxFrame{data, len, plane, payload.empty() ? nullptr : payload.data(),
                                       static_cast<std::uint32_t>(payload.size()), split};
        ep.rx_frames.add();
        ep.rx_bytes.add(len + payload.size());
    };
    auto emit_due_from_pool = [&] {
        while (count < out.size() && !rx.heap.empty() && rx.heap.front().deliver_ns <= now_ns) {
            const RxEntry e = rx.pop();
            emit(rx.bufs[e.buf].data, e.len, e.plane);
            rx.lent.push_back(e.buf);
        }
    };
    emit_due_from_pool();  // parked frames left their rings earlier: they go first
    if (!real_time()) return count;
    const std::uint32_t n = cfg.endpoints * cfg.queues;  // sources: (endpoint, queue)
    for (std::uint32_t k = 0; k < n; ++k) {
        const std::uint32_t source = (rx.drain_start + k) % n;
        SpscRing& ring = *rings[ring_index(source / cfg.queues, source % cfg.queues, endpoint, q)];
        std::uint32_t lent = 0;  // frames handed out in place from this ring
        SpscRing::View v;
        while (ring.peek_at(lent, v)) {
            if (v.deliver_ns <= now_ns) {
                if (count == out.size()) break;
                emit(v.bytes.data(), static_cast<std::uint32_t>(v.bytes.size()), v.plane, v.payload, v.split);
                ++lent;
                continue;
            }
            // Not due. Behind frames already lent, or with nothing behind it
            // that could be due earlier, it waits in the ring.
            if (lent > 0 || ring.time_ordered_after(0)) break;
            // A later frame may overtake it: park it in the pool, whole (a
            // zero-copy payload is copied in: popping the slot releases it).
            const std::size_t whole = v.bytes.size() + v.payload.size();
            std::uint32_t b = 0;
            if (!rx.take(static_cast<std::uint32_t>(whole), false, b)) {
                ep.rx_pool_empty.add();  // it waits in its ring, which backs up
                break;
            }
            std::uint8_t* to = rx.bufs[b].data;
            if (v.payload.empty()) {
                std::copy(v.bytes.begin(), v.bytes.end(), to);
            } else {
                std::copy_n(v.bytes.begin(), v.split, to);
                std::copy(v.payload.begin(), v.payload.end(), to + v.split);
                std::copy(v.bytes.begin() + v.split, v.bytes.end(), to + v.split + v.payload.size());
            }
            rx.push(RxEntry{v.deliver_ns, rx.drain_seq++, b, static_cast<std::uint32_t>(whole), v.plane});
            ring.pop();
        }
        rx.ring_lent[source] = lent;
    }
    rx.drain_start = (rx.drain_start + 1) % n;
    return count;
}

std::uint64_t Fabric::Impl::next_delivery_ns(std::uint32_t endpoint, std::uint32_t q) const {
    const Receiver& rx = endpoints[endpoint]->queues[q]->rx;
    std::uint64_t t = rx.earliest();
    if (real_time()) {
        SpscRing::View v;
        for (std::uint32_t src = 0; src < cfg.endpoints; ++src)  // frames already handed out do not count
            for (std::uint32_t sq = 0; sq < cfg.queues; ++sq)
                if (rings[ring_index(src, sq, endpoint, q)]->peek_at(rx.ring_lent[source_index(src, sq)], v))
                    t = std::min(t, v.deliver_ns);
    } else if (!schedule.empty()) {
        t = std::min(t, schedule.begin()->first);
    }
    return t;
}

// ---- the driver ----

namespace {

class LoopbackDriver final : public driver::Driver {
public:
    LoopbackDriver(Fabric::Impl& fabric, std::uint32_t endpoint, std::uint32_t queue)
        : f_(fabric), e_(endpoint), q_(queue) {}
    ~LoopbackDriver() override {
        f_.endpoints[e_]->attached.store(false, std::memory_order_release);
        Queue& ep = queue();
        f_.release_lent(e_, q_);
        // Zero copy: a receiver may still read payloads this queue lent it,
        // in memory its owner frees once the device is gone. Wait until each
        // is popped or its receiver has detached too, at most a second.
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (!ep.lent_payloads.empty()) {
            const Queue::Lent& l = ep.lent_payloads.front();
            if (l.ring->consumed(l.seq) || !f_.endpoints[l.dst]->attached.load(std::memory_order_acquire)) {
                ep.lent_payloads.pop_front();
            } else if (std::chrono::steady_clock::now() > give_up) {
                ep.lent_payloads.clear();  // the receiver stopped polling for good
                break;
            } else {
                std::this_thread::yield();
            }
        }
        // Frames still on their way to this queue have no receiver any more:
        // their buffers go back to the pool and (real_time) the rings to the
        // queue are emptied, so the pool and the rings are back at their
        // baseline (fault-matrix row 22) and a device attached later never
        // gets a frame sent to this one. (A sender's transmit() sees the
        // endpoint detached and commits nothing more.)
        Receiver& rx = ep.rx;
        for (const RxEntry& e : rx.heap) rx.give_back(e.buf);
        rx.heap.clear();
        if (f_.real_time()) f_.drain_rings(e_, q_);
    }
    LoopbackDriver(const LoopbackDriver&) = delete;
    LoopbackDriver& operator=(const LoopbackDriver&) = delete;

    [[nodiscard]] std::string name() const override { return "loopback"; }
    [[nodiscard]] std::uint32_t planes() const override { return f_.cfg.planes; }

    std::size_t rx_burst(std::span<driver::RxFrame> out, std::uint64_t now_ns) override {
        if (!f_.real_time()) f_.advance(now_ns);
        return f_.receive(e_, q_, out, now_ns);
    }

    std::size_t tx_burst(std::span<const wire::GatherFrame> frames, std::uint64_t now_ns) override {
        if (!f_.real_time()) f_.advance(now_ns);
        Queue& ep = queue();
        (void)ep.released();  // forgets payloads the receivers are done with (bounded by the rings)
        std::size_t accepted = 0;
        while (accepted < frames.size() && f_.transmit(e_, q_, frames[accepted], now_ns)) {
            ++accepted;
            ++ep.tx_accepted;
        }
        return accepted;
    }

    [[nodiscard]] std::uint64_t tx_release_count() const override { return queue().released(); }

    std::size_t poll_link_events(std::span<driver::LinkEvent> out) override {
        const Endpoint& ep = *f_.endpoints[e_];
        Queue& qs = queue();
        std::size_t n = 0;
        for (std::uint32_t p = 0; p < f_.cfg.planes; ++p) {
            const std::uint32_t changes = ep.port_changes[p].load(std::memory_order_acquire);
            while (qs.port_reported[p] != changes && n < out.size()) {
                ++qs.port_reported[p];
                out[n++] = driver::LinkEvent{static_cast<std::uint8_t>(p), (qs.port_reported[p] & 1u) == 0};
            }
        }
        return n;
    }

    [[nodiscard]] bool link_up(std::uint32_t plane) const override {
        return plane < f_.cfg.planes && f_.port_up(e_, plane);
    }

    [[nodiscard]] std::uint64_t next_event_ns() const override { return f_.next_delivery_ns(e_, q_); }

    [[nodiscard]] driver::DriverStats stats() const override {
        const Queue& ep = queue();
        driver::DriverStats s;
        s.rx_frames = ep.rx_frames.get();
        s.rx_bytes = ep.rx_bytes.get();
        s.tx_frames = ep.tx_frames.get();
        s.tx_bytes = ep.tx_bytes.get();
        s.tx_dropped_link_down = ep.tx_dropped_link_down.get();
        s.tx_dropped_full = ep.tx_dropped_full.get();
        return s;
    }

    [[nodiscard]] driver::SteeringInfo steering() const override {
        if (f_.cfg.queues == 1) return {};
        return f_.cfg.steering == QueueSteering::by_qpn ? driver::SteeringInfo{driver::Steering::by_qpn, "fabric"}
                                                         : driver::SteeringInfo{driver::Steering::spread, "rss"};
    }

private:
    [[nodiscard]] Queue& queue() const { return *f_.endpoints[e_]->queues[q_]; }

    Fabric::Impl& f_;
    const std::uint32_t e_;
    const std::uint32_t q_;
};

}  // namespace

std::unique_ptr<driver::Driver> Fabric::attach(std::uint32_t endpoint) {
    if (impl_->cfg.queues != 1)
        throw std::logic_error("loopback: a fabric of " + std::to_string(impl_->cfg.queues) +
                               " queues per endpoint: attach_queues()");
    return std::move(attach_queues(endpoint).front());
}

std::vector<std::unique_ptr<driver::Driver>> Fabric::attach_queues(std::uint32_t endpoint) {
    impl_->check_endpoint(endpoint);
    const std::lock_guard lock(impl_->control_mutex);
    if (impl_->endpoints[endpoint]->attached.exchange(true, std::memory_order_acq_rel))
        throw std::logic_error("loopback: endpoint " + std::to_string(endpoint) + " is already attached");
    std::vector<std::unique_ptr<driver::Driver>> out;
    for (std::uint32_t q = 0; q < impl_->cfg.queues; ++q) out.push_back(std::make_unique<LoopbackDriver>(*impl_, endpoint, q));
    return out;
}

}  // namespace omrc::loopback
