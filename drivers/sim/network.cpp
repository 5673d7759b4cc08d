// SPDX-License-Identifier: BSD-3-Clause
// Simulator: building, the event loop, links and output queues, failures.
// Forwarding is in forwarding.cpp, NICs in nic.cpp.
#include "drivers/sim/network.hpp"

#include <algorithm>
#include <stdexcept>

#include "drivers/sim/ddc.hpp"

namespace omrc::sim {

const char* to_string(Tier t) noexcept {
    switch (t) {
        case Tier::t0: return "t0";
        case Tier::t1: return "t1";
        case Tier::edge: return "edge";
        case Tier::agg: return "agg";
        case Tier::core: return "core";
    }
    return "unknown";
}

const char* to_string(RoutingMode m) noexcept {
    switch (m) {
        case RoutingMode::usid: return "usid";
        case RoutingMode::ecmp: return "ecmp";
        case RoutingMode::ddc: return "ddc";
        case RoutingMode::ev_path: return "ev_path";
    }
    return "unknown";
}

Simulator::Simulator(const SimConfig& cfg) : cfg_(cfg) {
    if (cfg_.planes == 0 || cfg_.planes > core::kMaxPlanes) throw std::invalid_argument("sim: planes must be 1..15");
    if (cfg_.routing == RoutingMode::ddc) {
        const std::string e = cfg_.ddc.validate();
        if (!e.empty()) throw std::invalid_argument("sim: ddc: " + e);
        cfg_.count_reorder = true;
    }
    txbuf_.resize(32);
    wcbuf_.resize(32);
    rxbuf_.assign(16384, 0);
    if (cfg_.int_telemetry) pool_.enable_telemetry();
}

Simulator::~Simulator() = default;

void Simulator::set_routing_dims(const RoutingDims& d) {
    dims_ = d;
    if (cfg_.routing == RoutingMode::ddc) ddc_setup();
}

std::uint16_t Simulator::add_link_config(const LinkConfig& l) {
    if (l.rate_bps < 1'000'000'000) throw std::invalid_argument("sim: link rate below 1 Gb/s");
    links_.push_back(l);
    return static_cast<std::uint16_t>(links_.size() - 1);
}

std::uint8_t Simulator::add_queue_config(const QueueConfig& q) {
    if (queues_.size() >= 255) throw std::length_error("sim: too many queue configs");
    queues_.push_back(q);
    return static_cast<std::uint8_t>(queues_.size() - 1);
}

void Simulator::reserve(std::size_t nics, std::size_t switches, std::size_t ports) {
    nics_.reserve(nics);
    switches_.reserve(switches);
    ports_.reserve(ports);
}

std::uint32_t Simulator::add_switch(Tier tier, std::uint8_t plane, std::uint32_t index, std::uint32_t pod,
                                    std::uint16_t usid, std::uint32_t ports, std::uint8_t queue) {
    Switch s;
    s.tier = tier;
    s.plane = plane;
    s.index = index;
    s.pod = pod;
    s.usid = usid;
    s.first_port = static_cast<std::uint32_t>(ports_.size());
    s.ports = ports;
    const auto id = static_cast<std::uint32_t>(switches_.size());
    switches_.push_back(s);
    Port p;
    p.owner = id;
    p.queue = queue;
    ports_.resize(ports_.size() + ports, p);
    return id;
}

std::uint32_t Simulator::add_nic(std::uint32_t host, const core::EngineConfig& ecfg, core::PlacementTarget* memory) {
    Nic n;
    n.host = host;
    n.first_port = static_cast<std::uint32_t>(ports_.size());
    const std::uint32_t workers = std::clamp<std::uint32_t>(cfg_.workers, 1, 1u << core::kMaxShardBits);
    n.shard_bits = core::shard_bits_for(workers);
    for (std::uint32_t w = 0; w < workers; ++w) {
        core::EngineConfig c = ecfg;
        c.shard = w;
        c.shard_bits = n.shard_bits;
        c.seed = ecfg.seed + w;  // engine 0 draws what a one-worker NIC draws
        n.engines.push_back(std::make_unique<core::Engine>(c, memory));
    }
    dscp_data_ = ecfg.dscp_data;
    const auto id = static_cast<std::uint32_t>(nics_.size());
    nics_.push_back(std::move(n));
    for (std::uint32_t pl = 0; pl < cfg_.planes; ++pl) {
        Port p;
        p.owner = id;
        p.nic_side = true;
        p.local = static_cast<std::uint8_t>(pl);
        ports_.push_back(p);
    }
    return id;
}

void Simulator::connect(std::uint32_t a, std::uint32_t b, std::uint16_t link) {
    Port& pa = ports_.at(a);
    Port& pb = ports_.at(b);
    if (pa.peer != kNone || pb.peer != kNone) throw std::logic_error("sim: port already connected");
    pa.peer = b;
    pb.peer = a;
    pa.link = pb.link = link;
    pa.peer_is_switch = !pb.nic_side;
    pb.peer_is_switch = !pa.nic_side;
    pa.last_hop = !pa.nic_side && pb.nic_side;
    pb.last_hop = !pb.nic_side && pa.nic_side;
}

void Simulator::schedule(TimePs at, std::function<void()> fn) {
    std::uint32_t slot;
    if (!free_calls_.empty()) {
        slot = free_calls_.back();
        free_calls_.pop_back();
        calls_[slot] = std::move(fn);
    } else {
        slot = static_cast<std::uint32_t>(calls_.size());
        calls_.push_back(std::move(fn));
    }
    events_q_.push(at < now_ ? now_ : at, EventKind::call, slot);
}

bool Simulator::run(TimePs until) {
    stop_ = false;
    while (!events_q_.empty()) {
        if (events_q_.top().at > until) {
            now_ = until;
            return false;
        }
        const Event e = events_q_.pop();
        now_ = e.at;
        ++events_;
        dispatch(e);
        if (stop_) return true;
    }
    return true;
}

void Simulator::dispatch(const Event& e) {
    switch (e.kind()) {
        case EventKind::tx_done: {
            // Several tx_done events may be pending for one port; only the
            // clock decides whether its frame is done.
            Port& p = ports_[e.target];
            if (e.at != p.tx_event_ps) break;  // stale
            p.tx_event_ps = kNeverPs;
            if (now_ >= p.busy_until_ps) p.busy = false;
            start_tx(e.target);
            if (p.nic_side) pull(p.owner);
            break;
        }
        case EventKind::arrive: arrive(e.target, e.pkt, e.aux()); break;
        case EventKind::nic_wake: nic_wake(e.target, e.at); break;
        case EventKind::call: {
            std::function<void()> fn = std::move(calls_[e.target]);
            calls_[e.target] = nullptr;
            free_calls_.push_back(e.target);
            fn();
            break;
        }
        case EventKind::ddc_tick: ddc_tick(e.target); break;
        case EventKind::ddc_credit: ddc_credit(e.target); break;
        case EventKind::ddc_status: ddc_status(e.target, e.aux() != 0); break;
    }
}

void Simulator::start_tx(std::uint32_t idx) {
    // A switch port schedules its tx_done only when a frame is waiting behind
    // the one on the wire (an idle link needs no event to become free: busy
    // ends at busy_until_ps). NIC ports always get one: it is their cue to
    // pull more frames from the engine. This removes about a third of all
    // events on a lightly queued fabric.
    Port& port = ports_[idx];
    if (port.busy) {
        if (now_ < port.busy_until_ps) {
            if (port.tx_event_ps != port.busy_until_ps) {
                port.tx_event_ps = port.busy_until_ps;
                events_q_.push(port.busy_until_ps, EventKind::tx_done, idx);
            }
            return;
        }
        port.busy = false;
    }
    for (;;) {
        Packet* p;
        if (!port.hi.empty()) p = port.hi.pop();
        else if (!port.lo.empty()) p = port.lo.pop();
        else return;
        if (port.nic_side) --nics_[port.owner].queued;
        if (!port.up || port.peer == kNone) {
            drop_down(port, p);
            continue;
        }
        const LinkConfig& l = links_[port.link];
        const std::uint32_t bytes = p->frame_bytes();
        // A cell's size already includes its share of the packet's wire overhead (ddc.cpp).
        const TimePs ser = serialization_ps(bytes + (p->cell ? 0 : cfg_.wire_overhead_bytes), l.rate_bps);
        port.busy = true;
        port.busy_until_ps = now_ + ser;
        port.tx_bytes += bytes;
        ++port.tx_pkts;
        if (port.nic_side) p->tag = static_cast<std::uint32_t>(port.tx_pkts);
        if (p->telemetry != nullptr && p->data && !port.nic_side && p->telemetry->hops < wire::kMaxIntHops) {
            // HPCC's record, stamped as the packet leaves the egress.
            wire::IntHop& h = p->telemetry->hop[p->telemetry->hops++];
            h.port_id = idx;
            h.qlen_bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(port.lo.bytes + port.hi.bytes, UINT32_MAX));
            h.tx_bytes = port.tx_bytes;
            h.ts_ns = to_ns(now_);
            h.rate_bps = l.rate_bps;
        }
        if (port.nic_side || !port.hi.empty() || !port.lo.empty()) {
            port.tx_event_ps = now_ + ser;
            events_q_.push(now_ + ser, EventKind::tx_done, idx);
        }
        const TimePs lat = port.peer_is_switch ? cfg_.switch_latency_ps : 0;
        events_q_.push(now_ + ser + l.delay_ps + lat, EventKind::arrive, port.peer, p, port.epoch & 0xFFFFFF);
        return;
    }
}

void Simulator::drop_down(Port& port, Packet* p) {
    ++port.drops;
    ++port.down_drops;
    if (p->data || p->cell) {
        port.last_down_drop_ps = now_;  // data (and DDC cells) only: probes keep testing dead paths by design
        if (cfg_.log_down_drops) down_log_.emplace_back(now_, static_cast<std::uint32_t>(&port - ports_.data()));
    }
    drop(p);
}

void Simulator::enqueue(std::uint32_t idx, Packet* p) {
    Port& port = ports_[idx];
    if (!port.up) return drop_down(port, p);
    const QueueConfig& q = queues_[port.queue];
    const std::uint32_t bytes = p->frame_bytes();
    if (p->priority) {
        if (port.hi.bytes + bytes > q.priority_limit_bytes) {
            ++port.drops;
            return drop(p);
        }
        port.hi.push(p);
    } else if (port.lo.bytes + bytes > q.limit_bytes) {
        if (!q.trim || p->cell) {  // cells have no header to keep: dropped
            ++port.drops;
            return drop(p);
        }
        trim(*p, q, port.last_hop);
        ++port.trims;
        if (port.hi.bytes + p->frame_bytes() > q.priority_limit_bytes) {
            ++port.drops;
            return drop(p);
        }
        port.hi.push(p);
    } else {
        if ((!port.last_hop || q.ecn_last_hop) && port.lo.bytes > q.ecn_threshold_bytes && !p->cell) {
            // ECN = CE in the first IPv6 header (the outer one in srv6 mode) when ECN-capable.
            if (wire::Ipv6Hdr::mark_ce(p->frame.header.data() + wire::EthHdr::kSize)) ++port.ecn_marks;
        }
        port.lo.push(p);
        if (now_ >= cfg_.queue_peak_from_ps) port.peak_lo_bytes = std::max(port.peak_lo_bytes, port.lo.bytes);
    }
    start_tx(idx);
}

void Simulator::arrive(std::uint32_t idx, Packet* p, std::uint32_t epoch) {
    Port& port = ports_[idx];
    if (!port.up || (port.epoch & 0xFFFFFF) != epoch) return drop_down(ports_[port.peer], p);
    if (port.nic_side) return nic_receive(port.owner, port.local, p);
    Switch& s = switches_[port.owner];
    if (!s.alive) {
        ++s.dropped_dead;
        return drop(p);
    }
    if (ddc_ != nullptr) {
        if (p->cell) return ddc_cell_arrive(s, p);
        if (port.last_hop && !p->priority) return ddc_ingress(s, idx, p);
    }
    const std::uint32_t out = route(s, *p);
    if (out == kNone) {
        ++s.no_route;
        return drop(p);
    }
    enqueue(s.first_port + out, p);
}

void Simulator::flush(Port& port) {
    while (!port.hi.empty()) {
        Packet* p = port.hi.pop();
        if (port.nic_side) --nics_[port.owner].queued;
        drop_down(port, p);
    }
    while (!port.lo.empty()) {
        Packet* p = port.lo.pop();
        if (port.nic_side) --nics_[port.owner].queued;
        drop_down(port, p);
    }
}

void Simulator::set_link(std::uint32_t idx, bool up) {
    Port& a = ports_.at(idx);
    if (a.peer == kNone) return;
    Port& b = ports_[a.peer];
    if (a.up == up && b.up == up) return;
    a.up = b.up = up;
    if (!up) {
        ++a.epoch;
        ++b.epoch;
        flush(a);
        flush(b);
    } else {
        start_tx(idx);
        start_tx(a.peer);
    }
}

void Simulator::set_switch(std::uint32_t sw, bool alive) {
    Switch& s = switches_.at(sw);
    if (s.alive == alive) return;
    s.alive = alive;
    if (!alive && ddc_ != nullptr) ddc_switch_down(sw);
    for (std::uint32_t i = 0; i < s.ports; ++i) {
        const std::uint32_t idx = s.first_port + i;
        const Port& p = ports_[idx];
        if (p.peer == kNone) continue;
        // A dead switch's links are down at both ends; a returning switch
        // brings up only links whose far end is alive.
        bool far_alive = true;
        if (!ports_[p.peer].nic_side) far_alive = switches_[ports_[p.peer].owner].alive;
        set_link(idx, alive && far_alive);
    }
}

void Simulator::set_nic_port(std::uint32_t nic, std::uint32_t plane, bool up) {
    set_link(nic_port(nic, plane), up);
    for (auto& e : nics_[nic].engines) e->submit(core::CmdLinkChange{plane, up}, now_ns());
    after_engine(nic);
}

}  // namespace omrc::sim
