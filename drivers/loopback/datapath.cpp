// SPDX-License-Identifier: BSD-3-Clause
// The per-frame path of the loopback fabric: the driver class, the transmit
// pipeline (routing, port state, impairments, output queue, delay) and the
// receive side (rings → delivery heap → rx_burst). No lock is taken here.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "drivers/loopback/fabric_impl.hpp"
#include "drivers/loopback/frame_edit.hpp"

namespace omrc::loopback {

namespace {

constexpr std::uint8_t kEcnCe = 3;
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

void Fabric::Impl::advance(std::uint64_t now_ns) {
    if (schedule.empty() || schedule.begin()->first > now_ns) return;
    const std::lock_guard lock(control_mutex);
    while (!schedule.empty() && schedule.begin()->first <= now_ns) {
        apply(schedule.begin()->second);
        schedule.erase(schedule.begin());
    }
}

void Fabric::Impl::deliver(Link& l, std::uint32_t src, std::uint32_t dst, std::uint8_t plane,
                           std::span<const std::uint8_t> frame, std::uint64_t deliver_ns, bool duplicate) {
    bool ok = true;
    if (real_time()) {
        ok = rings[std::size_t{src} * cfg.endpoints + dst]->try_push(deliver_ns, plane, frame);
    } else {
        Receiver& rx = endpoints[dst]->rx;
        std::uint32_t b = 0;
        rx.take(static_cast<std::uint32_t>(frame.size()), true, b);
        std::copy(frame.begin(), frame.end(), rx.bufs[b].data);
        rx.push(RxEntry{deliver_ns, send_seq++, b, static_cast<std::uint32_t>(frame.size()), plane});
    }
    if (!ok) {
        l.counters.ring_full.add();
        endpoints[src]->tx_dropped_full.add();
    } else if (duplicate) {
        l.counters.duplicated.add();
    } else {
        l.counters.delivered.add();
    }
}

void Fabric::Impl::transmit(std::uint32_t src, const wire::GatherFrame& gf, std::uint64_t now_ns) {
    Endpoint& ep = *endpoints[src];
    // A malformed gather list (counts beyond its arrays) is rejected before size() reads it.
    const bool well_formed = gf.header_len <= gf.header.size() && gf.segment_count <= gf.segments.size() &&
                             gf.tail_len <= gf.tail.size();
    std::size_t len = well_formed ? gf.size() : 0;
    if (!well_formed || gf.plane >= cfg.planes || len == 0 || len > cfg.max_frame_bytes) {
        ep.invalid_frames.add();
        return;
    }
    std::span<std::uint8_t> f(ep.scratch.data(), len);
    copy_frame(gf, f);
    const std::uint8_t plane = gf.plane;
    const bool src_up = port_up(src, plane);
    if (src_up) {
        ep.tx_frames.add();
        ep.tx_bytes.add(len);
    } else {
        ep.tx_dropped_link_down.add();
    }
    const int routed = route(f, plane, cfg.endpoints);
    if (routed < 0) {
        if (src_up) ep.unknown_destination.add();
        return;
    }
    const auto dst = static_cast<std::uint32_t>(routed);
    Link& l = link(src, dst, plane);
    LinkCounterSet& c = l.counters;
    // A detached endpoint is a NIC that is gone: like a port that is down.
    if (!src_up || !port_up(dst, plane) || !endpoints[dst]->attached.load(std::memory_order_acquire)) {
        c.link_down.add();
        return;
    }

    const FrameInfo fi = inspect_frame(f);
    auto rng = [&l](Stream s) -> Rng& { return l.rng[static_cast<std::size_t>(s)]; };
    std::uint64_t extra_delay_ns = 0;
    bool duplicate = false;
    std::uint64_t duplicate_delay_ns = 0;
    if (const Impairment* imp = l.imp.load(std::memory_order_acquire)) {
        if (selected(imp->blackhole_select, fi)) {
            if (imp->blackhole) {
                c.blackholed.add();
                return;
            }
            if (fi.has_udp && std::binary_search(imp->blackhole_evs.begin(), imp->blackhole_evs.end(), fi.ev)) {
                c.blackholed_ev.add();
                return;
            }
        }
        if (imp->loss.rate > 0 && selected(imp->loss.select, fi) && rng(Stream::loss).bernoulli(imp->loss.rate)) {
            c.lost_random.add();
            return;
        }
        const BurstLoss& ge = imp->burst_loss;
        if (ge.enabled() && selected(ge.select, fi)) {
            Rng& r = rng(Stream::burst);
            l.burst_bad = l.burst_bad ? !r.bernoulli(ge.p_bad_to_good) : r.bernoulli(ge.p_good_to_bad);
            if (r.bernoulli(l.burst_bad ? ge.loss_bad : ge.loss_good)) {
                c.lost_burst.add();
                return;
            }
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
        const std::uint64_t backlog =
            l.busy_until_ns > now_ns ? backlog_bytes(l.busy_until_ns - now_ns, q.rate_bps) : 0;
        bool bypass = false;  // trimmed header: priority, does not wait behind the backlog
        if (backlog > q.limit_bytes || q.limit_bytes - backlog < len) {
            if (q.overflow != OverflowPolicy::trim || !fi.is_data) {
                c.queue_dropped.add();
                return;
            }
            len = trimmed_length(fi, len, q.trim_bytes);
            f = f.first(len);
            set_first_dscp(f, q.trimmed_dscp);
            c.queue_trimmed.add();
            bypass = true;
        }
        if (!bypass && backlog > q.ecn_threshold_bytes && fi.has_ipv6) {
            set_first_ecn(f, kEcnCe);
            c.ecn_marked.add();
        }
        const std::uint64_t ser = serialization_ns(len, q.rate_bps);
        if (bypass) {
            depart_ns = now_ns + ser;
        } else {
            depart_ns = std::max(now_ns, l.busy_until_ns) + ser;
            l.busy_until_ns = depart_ns;
        }
    }
    const std::uint64_t deliver_ns = depart_ns + cfg.link_delay_ns + extra_delay_ns;
    deliver(l, src, dst, plane, f, deliver_ns, false);
    if (duplicate) deliver(l, src, dst, plane, f, deliver_ns + duplicate_delay_ns, true);
}

std::size_t Fabric::Impl::receive(std::uint32_t endpoint, std::span<driver::RxFrame> out, std::uint64_t now_ns) {
    Endpoint& ep = *endpoints[endpoint];
    Receiver& rx = ep.rx;
    for (std::uint32_t b : rx.lent) rx.free.push_back(b);
    rx.lent.clear();
    if (real_time()) {
        const std::uint32_t n = cfg.endpoints;
        for (std::uint32_t k = 0; k < n && !rx.free.empty(); ++k) {
            const std::uint32_t src = (rx.drain_start + k) % n;
            SpscRing& ring = *rings[std::size_t{src} * n + endpoint];
            SpscRing::View v;
            std::uint32_t b = 0;
            while (ring.peek(v) && rx.take(static_cast<std::uint32_t>(v.bytes.size()), false, b)) {
                std::copy(v.bytes.begin(), v.bytes.end(), rx.bufs[b].data);
                rx.push(RxEntry{v.deliver_ns, rx.drain_seq++, b, static_cast<std::uint32_t>(v.bytes.size()), v.plane});
                ring.pop();
            }
        }
        rx.drain_start = (rx.drain_start + 1) % n;
    }
    std::size_t count = 0;
    while (count < out.size() && !rx.heap.empty() && rx.heap.front().deliver_ns <= now_ns) {
        const RxEntry e = rx.pop();
        out[count++] = driver::RxFrame{rx.bufs[e.buf].data, e.len, e.plane};
        rx.lent.push_back(e.buf);
        ep.rx_frames.add();
        ep.rx_bytes.add(e.len);
    }
    return count;
}

std::uint64_t Fabric::Impl::next_delivery_ns(std::uint32_t endpoint) const {
    std::uint64_t t = endpoints[endpoint]->rx.earliest();
    if (real_time()) {
        const std::uint32_t n = cfg.endpoints;
        SpscRing::View v;
        for (std::uint32_t src = 0; src < n; ++src)
            if (rings[std::size_t{src} * n + endpoint]->peek(v)) t = std::min(t, v.deliver_ns);
    } else if (!schedule.empty()) {
        t = std::min(t, schedule.begin()->first);
    }
    return t;
}

// ---- the driver ----

namespace {

class LoopbackDriver final : public driver::Driver {
public:
    LoopbackDriver(Fabric::Impl& fabric, std::uint32_t endpoint) : f_(fabric), e_(endpoint) {}
    ~LoopbackDriver() override {
        Endpoint& ep = *f_.endpoints[e_];
        ep.attached.store(false, std::memory_order_release);
        if (!f_.real_time()) {
            // Frames still on their way to this endpoint have no receiver any more.
            Receiver& rx = ep.rx;
            for (const RxEntry& e : rx.heap) rx.free.push_back(e.buf);
            for (std::uint32_t b : rx.lent) rx.free.push_back(b);
            rx.heap.clear();
            rx.lent.clear();
        }
    }
    LoopbackDriver(const LoopbackDriver&) = delete;
    LoopbackDriver& operator=(const LoopbackDriver&) = delete;

    [[nodiscard]] std::string name() const override { return "loopback"; }
    [[nodiscard]] std::uint32_t planes() const override { return f_.cfg.planes; }

    std::size_t rx_burst(std::span<driver::RxFrame> out, std::uint64_t now_ns) override {
        if (!f_.real_time()) f_.advance(now_ns);
        return f_.receive(e_, out, now_ns);
    }

    std::size_t tx_burst(std::span<const wire::GatherFrame> frames, std::uint64_t now_ns) override {
        if (!f_.real_time()) f_.advance(now_ns);
        for (const wire::GatherFrame& gf : frames) f_.transmit(e_, gf, now_ns);
        f_.endpoints[e_]->tx_released += frames.size();
        return frames.size();
    }

    [[nodiscard]] std::uint64_t tx_release_count() const override { return f_.endpoints[e_]->tx_released; }

    std::size_t poll_link_events(std::span<driver::LinkEvent> out) override {
        Endpoint& ep = *f_.endpoints[e_];
        std::size_t n = 0;
        for (std::uint32_t p = 0; p < f_.cfg.planes; ++p) {
            const std::uint32_t changes = ep.port_changes[p].load(std::memory_order_acquire);
            while (ep.port_reported[p] != changes && n < out.size()) {
                ++ep.port_reported[p];
                out[n++] = driver::LinkEvent{static_cast<std::uint8_t>(p), (ep.port_reported[p] & 1u) == 0};
            }
        }
        return n;
    }

    [[nodiscard]] bool link_up(std::uint32_t plane) const override {
        return plane < f_.cfg.planes && f_.port_up(e_, plane);
    }

    [[nodiscard]] std::uint64_t next_event_ns() const override { return f_.next_delivery_ns(e_); }

    [[nodiscard]] driver::DriverStats stats() const override {
        const Endpoint& ep = *f_.endpoints[e_];
        driver::DriverStats s;
        s.rx_frames = ep.rx_frames.get();
        s.rx_bytes = ep.rx_bytes.get();
        s.tx_frames = ep.tx_frames.get();
        s.tx_bytes = ep.tx_bytes.get();
        s.tx_dropped_link_down = ep.tx_dropped_link_down.get();
        s.tx_dropped_full = ep.tx_dropped_full.get();
        return s;
    }

private:
    Fabric::Impl& f_;
    const std::uint32_t e_;
};

}  // namespace

std::unique_ptr<driver::Driver> Fabric::attach(std::uint32_t endpoint) {
    impl_->check_endpoint(endpoint);
    const std::lock_guard lock(impl_->control_mutex);
    if (impl_->endpoints[endpoint]->attached.exchange(true, std::memory_order_acq_rel))
        throw std::logic_error("loopback: endpoint " + std::to_string(endpoint) + " is already attached");
    return std::make_unique<LoopbackDriver>(*impl_, endpoint);
}

}  // namespace omrc::loopback
