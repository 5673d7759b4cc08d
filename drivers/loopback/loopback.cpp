// SPDX-License-Identifier: BSD-3-Clause
// Fabric construction, control operations, scheduling and counters. The
// per-frame path is in datapath.cpp.
#include "drivers/loopback/loopback.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "drivers/loopback/fabric_impl.hpp"

namespace omrc::loopback {

LinkCounters& LinkCounters::operator+=(const LinkCounters& o) noexcept {
    delivered += o.delivered;
    lost_random += o.lost_random;
    lost_burst += o.lost_burst;
    duplicated += o.duplicated;
    corrupted += o.corrupted;
    trimmed += o.trimmed;
    blackholed += o.blackholed;
    blackholed_ev += o.blackholed_ev;
    link_down += o.link_down;
    queue_dropped += o.queue_dropped;
    queue_trimmed += o.queue_trimmed;
    ecn_marked += o.ecn_marked;
    ring_full += o.ring_full;
    zero_copy += o.zero_copy;
    return *this;
}

LinkCounters LinkCounterSet::snapshot() const noexcept {
    LinkCounters c;
    c.delivered = delivered.get();
    c.lost_random = lost_random.get();
    c.lost_burst = lost_burst.get();
    c.duplicated = duplicated.get();
    c.corrupted = corrupted.get();
    c.trimmed = trimmed.get();
    c.blackholed = blackholed.get();
    c.blackholed_ev = blackholed_ev.get();
    c.link_down = link_down.get();
    c.queue_dropped = queue_dropped.get();
    c.queue_trimmed = queue_trimmed.get();
    c.ecn_marked = ecn_marked.get();
    c.ring_full = ring_full.get();
    c.zero_copy = zero_copy.get();
    return c;
}

namespace {

void validate(const FabricConfig& c) {
    auto fail = [](const std::string& what) { throw std::invalid_argument("loopback::FabricConfig: " + what); };
    if (c.endpoints == 0 || c.endpoints > kMaxEndpoints) fail("endpoints must be 1..256");
    if (c.planes == 0 || c.planes > kMaxPlanes) fail("planes must be 1..15");
    if (c.max_frame_bytes < 64 || c.max_frame_bytes > 65536) fail("max_frame_bytes must be 64..65536");
    if (c.queues == 0 || c.queues > 16) fail("queues must be 1..16");
    if (c.steering != QueueSteering::by_qpn && c.steering != QueueSteering::spread) fail("unknown steering");
    if (c.mode == ClockMode::real_time) {
        if (c.ring_slots == 0 || (c.ring_slots & (c.ring_slots - 1)) != 0) fail("ring_slots must be a power of two");
        if (c.rx_pool_frames == 0) fail("rx_pool_frames must be at least 1");
    }
}

}  // namespace

Fabric::Impl::Impl(const FabricConfig& c) : cfg(c) {
    validate(cfg);
    const std::uint32_t n = cfg.endpoints;
    const std::uint32_t nq = cfg.queues;
    // real_time: the ring slots and receive pool of one queue are shared out
    // among several (at least 64 each), so that memory does not grow with them.
    const std::uint32_t ring_slots = nq == 1 ? cfg.ring_slots : std::max<std::uint32_t>(64, cfg.ring_slots / nq);
    const std::uint32_t pool = nq == 1 ? cfg.rx_pool_frames : std::max<std::uint32_t>(64, cfg.rx_pool_frames / nq);
    endpoints.reserve(n);
    for (std::uint32_t e = 0; e < n; ++e) {
        auto ep = std::make_unique<Endpoint>();
        for (std::uint32_t q = 0; q < nq; ++q) {
            auto qs = std::make_unique<Queue>();
            qs->scratch.resize(cfg.max_frame_bytes);
            Receiver& rx = qs->rx;
            if (real_time()) {
                rx.ring_lent.assign(std::size_t{n} * nq, 0);
                // Everything the data path needs is allocated here, never later.
                rx.block = std::make_unique_for_overwrite<std::uint8_t[]>(std::size_t{pool} * cfg.max_frame_bytes);
                rx.bufs.resize(pool);
                rx.free.reserve(pool);
                rx.lent.reserve(pool);
                rx.heap.reserve(pool);
                for (std::uint32_t i = 0; i < pool; ++i) {
                    rx.bufs[i].data = rx.block.get() + std::size_t{i} * cfg.max_frame_bytes;
                    rx.bufs[i].cap = cfg.max_frame_bytes;
                    rx.free.push_back(pool - 1 - i);
                }
            }
            ep->queues.push_back(std::move(qs));
        }
        endpoints.push_back(std::move(ep));
    }
    wires.reserve(std::size_t{n} * n * cfg.planes);
    for (std::size_t i = 0; i < std::size_t{n} * n * cfg.planes; ++i) wires.push_back(std::make_unique<Wire>());
    links.reserve(std::size_t{n} * nq * n * cfg.planes);
    for (std::uint32_t s = 0; s < n; ++s)
        for (std::uint32_t q = 0; q < nq; ++q)
            for (std::uint32_t d = 0; d < n; ++d)
                for (std::uint32_t p = 0; p < cfg.planes; ++p) {
                    auto l = std::make_unique<Link>();
                    // Queue 0 draws what a one-queue fabric draws.
                    std::uint64_t state = cfg.seed + q;
                    const std::uint64_t seed = q == 0 ? cfg.seed : core::splitmix64(state);
                    for (std::uint32_t k = 0; k < l->rng.size(); ++k) l->rng[k] = link_rng(seed, s, d, p, k);
                    l->wire = wires[(std::size_t{s} * n + d) * cfg.planes + p].get();
                    links.push_back(std::move(l));
                }
    if (real_time()) {
        const std::size_t count = std::size_t{n} * nq * n * nq;
        rings.reserve(count);
        for (std::size_t i = 0; i < count; ++i)
            rings.push_back(std::make_unique<SpscRing>(ring_slots, cfg.max_frame_bytes));
    }
}

void Fabric::Impl::check_endpoint(std::uint32_t e) const {
    if (e >= cfg.endpoints) throw std::out_of_range("loopback: endpoint " + std::to_string(e) + " out of range");
}

void Fabric::Impl::check_plane(std::uint32_t p) const {
    if (p >= cfg.planes) throw std::out_of_range("loopback: plane " + std::to_string(p) + " out of range");
}

void Fabric::Impl::require_virtual(const char* what) const {
    if (real_time()) throw std::logic_error(std::string("loopback: ") + what + " needs ClockMode::virtual_clock");
}

const Impairment* Fabric::Impl::publish(const Impairment& imp) {
    auto copy = std::make_unique<Impairment>(imp);
    std::sort(copy->blackhole_evs.begin(), copy->blackhole_evs.end());
    copy->blackhole_evs.erase(std::unique(copy->blackhole_evs.begin(), copy->blackhole_evs.end()),
                              copy->blackhole_evs.end());
    // Readers may hold the old config for the rest of a frame: old configs
    // stay alive until the fabric is destroyed.
    configs.push_back(std::move(copy));
    return configs.back().get();
}

void Fabric::Impl::set_link_locked(std::uint32_t endpoint, std::uint32_t plane, bool up) {
    auto& changes = endpoints[endpoint]->port_changes[plane];
    const bool is_up = (changes.load(std::memory_order_relaxed) & 1u) == 0;
    if (is_up != up) changes.fetch_add(1, std::memory_order_release);
}

void Fabric::Impl::apply(const ScheduledChange& ch) {
    switch (ch.kind) {
        case ScheduledChange::Kind::link:
            set_link_locked(ch.endpoint_or_src, ch.plane, ch.up);
            break;
        case ScheduledChange::Kind::impairment:
            store_impairment(ch.endpoint_or_src, ch.dst, ch.plane, publish(ch.imp));
            break;
        case ScheduledChange::Kind::impairment_all: {
            const Impairment* p = publish(ch.imp);
            for (auto& l : links) l->imp.store(p, std::memory_order_release);
            break;
        }
    }
}

// ---- Fabric ----

Fabric::Fabric(const FabricConfig& config) : impl_(std::make_unique<Impl>(config)) {}
Fabric::~Fabric() = default;

const FabricConfig& Fabric::config() const noexcept { return impl_->cfg; }

void Fabric::set_impairment(std::uint32_t src, std::uint32_t dst, std::uint32_t plane, const Impairment& imp) {
    impl_->check_endpoint(src);
    impl_->check_endpoint(dst);
    impl_->check_plane(plane);
    const std::lock_guard lock(impl_->control_mutex);
    impl_->store_impairment(src, dst, plane, impl_->publish(imp));
}

void Fabric::set_impairment(std::uint32_t src, std::uint32_t dst, const Impairment& imp) {
    impl_->check_endpoint(src);
    impl_->check_endpoint(dst);
    const std::lock_guard lock(impl_->control_mutex);
    const Impairment* p = impl_->publish(imp);
    for (std::uint32_t plane = 0; plane < impl_->cfg.planes; ++plane) impl_->store_impairment(src, dst, plane, p);
}

void Fabric::set_impairment_all(const Impairment& imp) {
    const std::lock_guard lock(impl_->control_mutex);
    impl_->apply(ScheduledChange{ScheduledChange::Kind::impairment_all, 0, 0, 0, true, imp});
}

void Fabric::set_link(std::uint32_t endpoint, std::uint32_t plane, bool up) {
    impl_->check_endpoint(endpoint);
    impl_->check_plane(plane);
    const std::lock_guard lock(impl_->control_mutex);
    impl_->set_link_locked(endpoint, plane, up);
}

bool Fabric::link_up(std::uint32_t endpoint, std::uint32_t plane) const {
    impl_->check_endpoint(endpoint);
    impl_->check_plane(plane);
    return impl_->port_up(endpoint, plane);
}

void Fabric::schedule_link(std::uint64_t at_ns, std::uint32_t endpoint, std::uint32_t plane, bool up) {
    impl_->require_virtual("schedule_link");
    impl_->check_endpoint(endpoint);
    impl_->check_plane(plane);
    impl_->schedule.emplace(at_ns, ScheduledChange{ScheduledChange::Kind::link, endpoint, 0, plane, up, {}});
}

void Fabric::schedule_impairment(std::uint64_t at_ns, std::uint32_t src, std::uint32_t dst, std::uint32_t plane,
                                 const Impairment& imp) {
    impl_->require_virtual("schedule_impairment");
    impl_->check_endpoint(src);
    impl_->check_endpoint(dst);
    impl_->check_plane(plane);
    impl_->schedule.emplace(at_ns, ScheduledChange{ScheduledChange::Kind::impairment, src, dst, plane, true, imp});
}

void Fabric::schedule_impairment_all(std::uint64_t at_ns, const Impairment& imp) {
    impl_->require_virtual("schedule_impairment_all");
    impl_->schedule.emplace(at_ns, ScheduledChange{ScheduledChange::Kind::impairment_all, 0, 0, 0, true, imp});
}

void Fabric::advance(std::uint64_t now_ns) {
    impl_->require_virtual("advance");
    impl_->advance(now_ns);
}

std::uint64_t Fabric::next_event_ns() const {
    impl_->require_virtual("next_event_ns");
    std::uint64_t t = impl_->schedule.empty() ? UINT64_MAX : impl_->schedule.begin()->first;
    for (std::uint32_t e = 0; e < impl_->cfg.endpoints; ++e)
        if (impl_->endpoints[e]->attached.load(std::memory_order_acquire))
            for (const auto& q : impl_->endpoints[e]->queues) t = std::min(t, q->rx.earliest());
    return t;
}

LinkCounters Fabric::link_counters(std::uint32_t src, std::uint32_t dst, std::uint32_t plane) const {
    impl_->check_endpoint(src);
    impl_->check_endpoint(dst);
    impl_->check_plane(plane);
    LinkCounters c;
    for (std::uint32_t q = 0; q < impl_->cfg.queues; ++q) c += impl_->link(src, q, dst, plane).counters.snapshot();
    return c;
}

EndpointCounters Fabric::endpoint_counters(std::uint32_t endpoint) const {
    impl_->check_endpoint(endpoint);
    EndpointCounters c;
    for (std::uint32_t peer = 0; peer < impl_->cfg.endpoints; ++peer)
        for (std::uint32_t p = 0; p < impl_->cfg.planes; ++p) {
            c.sent += link_counters(endpoint, peer, p);
            c.received += link_counters(peer, endpoint, p);
        }
    for (const auto& q : impl_->endpoints[endpoint]->queues) {
        c.unknown_destination += q->unknown_destination.get();
        c.invalid_frames += q->invalid_frames.get();
        c.driver.rx_frames += q->rx_frames.get();
        c.driver.rx_bytes += q->rx_bytes.get();
        c.driver.tx_frames += q->tx_frames.get();
        c.driver.tx_bytes += q->tx_bytes.get();
        c.driver.tx_dropped_link_down += q->tx_dropped_link_down.get();
        c.driver.tx_dropped_full += q->tx_dropped_full.get();
        c.rx_pool_empty += q->rx_pool_empty.get();
        const std::uint64_t returned = q->rx.returned.get();  // first: taken can only have grown since
        c.rx_pool_in_use += q->rx.taken.get() - returned;
    }
    if (impl_->real_time())
        for (std::uint32_t dq = 0; dq < impl_->cfg.queues; ++dq)
            for (std::uint32_t src = 0; src < impl_->cfg.endpoints; ++src)
                for (std::uint32_t sq = 0; sq < impl_->cfg.queues; ++sq)
                    c.rx_ring_frames += impl_->rings[impl_->ring_index(src, sq, endpoint, dq)]->size();
    return c;
}

}  // namespace omrc::loopback
