// SPDX-License-Identifier: BSD-3-Clause
// routing = ddc: a distributed disaggregated chassis per plane (ddc.hpp).
//
// A data frame from a host (plain frames, like ecmp mode):
//   ingress T0: VOQ (ingress T0, destination host port); drop-tail at
//     voq_limit_bytes, CE above voq_ecn_bytes. A VOQ with packets and no
//     credit asks its egress port's scheduler (ctrl_delay later).
//   egress scheduler: one credit of credit_bytes per credit_bytes at the
//     port's line rate, round robin over the VOQs asking; the credit reaches
//     the VOQ ctrl_delay later. A VOQ sends head packets while its balance
//     is positive (a packet may take it negative: deficit round robin); an
//     idle VOQ keeps at most one credit and then tells the scheduler to stop.
//   cells: a credited packet of W wire bytes becomes ⌈W / cell_bytes⌉ cells,
//     each sent on the next T1 (round robin per ingress and egress T0) whose
//     T0→T1 and T1→egress T0 links are up: a dead T1 or link is skipped from
//     the next cell on (DDC's reachability tables, here exact and at once).
//     T1s forward cells to the egress T0 with no other logic.
//   egress T0: counts the packet's cells in; releases each VOQ's packets to
//     the host port in the order the VOQ sent them. A lost cell (link down
//     under it, dead switch, full T1 queue, no live T1) loses the packet: it
//     blocks its VOQ's release for reassembly_timeout, then is skipped (the
//     engine retransmits, on its own timers).
// Same-T0 traffic takes the same VOQ and credit path with no cells and no
// control delay. Control frames (SACKs, NACKs: the priority class) are not
// credited: they take ECMP over the T1s that reach their egress T0.
//
// Simplified: requests, credits and stop messages are not simulated frames:
// they arrive ctrl_delay later and are never lost or queued. There is one
// traffic class. The scheduler grants at line rate whatever the fabric's
// state: a fabric short of capacity (a lost T1 at full load) queues cells at
// the ingress T0's uplinks, where the uplink queue limit applies.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "drivers/sim/ddc.hpp"
#include "wire/bytes.hpp"
#include "wire/ev.hpp"
#include "wire/ipv6.hpp"
#include "wire/udp.hpp"

namespace omrc::sim {

namespace {

constexpr std::size_t kEth = 14;
constexpr std::size_t kIp = 40;

}  // namespace

std::string DdcConfig::validate() const {
    if (cell_bytes < 64 || cell_bytes > 16384) return fmt::format("cell_bytes must be 64..16384, got {}", cell_bytes);
    if (cell_header_bytes > 256) return fmt::format("cell_header_bytes must be 0..256, got {}", cell_header_bytes);
    if (credit_bytes < 256 || credit_bytes > (1u << 20))
        return fmt::format("credit_bytes must be 256..1048576, got {}", credit_bytes);
    if (voq_limit_bytes < 16384) return fmt::format("voq_limit must hold a 16 KB frame, got {} B", voq_limit_bytes);
    if (reassembly_timeout_ps == 0) return "reassembly_timeout must be > 0";
    return {};
}

DdcStats Simulator::ddc_stats() const noexcept {
    if (ddc_ == nullptr) return {};
    DdcStats s = ddc_->stats;
    s.voqs = static_cast<std::uint32_t>(ddc_->voqs.size());
    return s;
}

void Simulator::ddc_setup() {
    if (dims_.k != 0 || dims_.t0 == 0 || dims_.t1 == 0)
        throw std::invalid_argument("sim: routing ddc needs a two-tier fabric (clos or leaf_spine)");
    auto st = std::make_unique<DdcState>();
    st->cfg = cfg_.ddc;
    const std::uint32_t planes = cfg_.planes, hosts = dims_.t0 * dims_.hosts_per_t0;
    // The fabric link: plane 0's T0 0 → T1 0.
    const LinkConfig& fabric = links_[ports_[switch_port(dims_.first_switch, dims_.hosts_per_t0)].link];
    st->ctrl_ps = st->cfg.ctrl_delay_ps != 0
                      ? st->cfg.ctrl_delay_ps
                      : 2 * (serialization_ps(64, fabric.rate_bps) + fabric.delay_ps + cfg_.switch_latency_ps);
    st->ports.resize(std::size_t{planes} * hosts);
    for (std::uint32_t p = 0; p < planes; ++p)
        for (std::uint32_t h = 0; h < hosts; ++h) {
            const std::uint32_t t0 = dims_.first_switch + p * (dims_.t0 + dims_.t1) + h / dims_.hosts_per_t0;
            const LinkConfig& l = links_[ports_[switch_port(t0, h % dims_.hosts_per_t0)].link];
            st->ports[std::size_t{p} * hosts + h].interval_ps = serialization_ps(st->cfg.credit_bytes, l.rate_bps);
        }
    st->spray.resize(std::size_t{planes} * dims_.t0 * dims_.t0);
    for (std::size_t i = 0; i < st->spray.size(); ++i)  // decorrelate the ingress T0s' rotations
        st->spray[i] = static_cast<std::uint32_t>((i / dims_.t0 + i % dims_.t0) % dims_.t1);
    st->held.assign(switches_.size(), 0);
    ddc_ = std::move(st);
}

std::uint32_t Simulator::ddc_route_control(const Switch& s, Packet& p) {
    const std::uint8_t* h = p.frame.header.data();
    if (p.frame.header_len < kEth + kIp + wire::UdpHdr::kSize || h[kEth + 6] != wire::kNextHeaderUdp) return kNone;
    const std::uint32_t dst = wire::load_be32(h + kEth + 24 + 12);
    const std::uint32_t d = dst / dims_.hosts_per_t0;
    if (d >= dims_.t0) return kNone;
    if (s.tier == Tier::t1) return d;
    if (s.tier != Tier::t0) return kNone;
    if (s.index == d) return dst % dims_.hosts_per_t0;
    const std::uint32_t ev = wire::ev_from_wire(wire::load_be16(h + kEth + kIp), wire::load_be32(h + kEth) & 0xFFFFFu);
    const std::uint32_t first = pick_up(s, dims_.hosts_per_t0, dims_.t1, ev) - dims_.hosts_per_t0;
    const std::uint32_t t1_base = dims_.first_switch + s.plane * (dims_.t0 + dims_.t1) + dims_.t0;
    for (std::uint32_t k = 0; k < dims_.t1; ++k) {
        const std::uint32_t j = (first + k) % dims_.t1;
        if (ports_[s.first_port + dims_.hosts_per_t0 + j].up && ports_[switch_port(t1_base + j, d)].up)
            return dims_.hosts_per_t0 + j;
    }
    return dims_.hosts_per_t0 + first;
}

void Simulator::ddc_ingress(Switch& s, std::uint32_t in_port, Packet* p) {
    DdcState& st = *ddc_;
    std::uint8_t* h = p->frame.header.data();
    // The whole chassis is one hop.
    if (p->frame.header_len < kEth + kIp + wire::UdpHdr::kSize || h[kEth + 6] != wire::kNextHeaderUdp || h[kEth + 7] <= 1) {
        ++s.no_route;
        return drop(p);
    }
    --h[kEth + 7];
    const std::uint32_t dst = wire::load_be32(h + kEth + 24 + 12);
    const std::uint32_t d = dst / dims_.hosts_per_t0;
    if (d >= dims_.t0) {
        ++s.no_route;
        return drop(p);
    }
    const std::uint32_t sw = ports_[in_port].owner;
    const std::uint64_t key = (std::uint64_t{sw} << 32) | dst;
    auto [it, fresh] = st.voq_index.try_emplace(key, static_cast<std::uint32_t>(st.voqs.size()));
    if (fresh) {
        DdcVoq v;
        v.ingress_sw = sw;
        v.egress_t0 = d;
        v.egress_sw = dims_.first_switch + s.plane * (dims_.t0 + dims_.t1) + d;
        v.egress_local = dst % dims_.hosts_per_t0;
        v.local = v.egress_sw == sw;
        v.sched = s.plane * dims_.t0 * dims_.hosts_per_t0 + dst;
        st.voqs.push_back(v);
    }
    const std::uint32_t vi = it->second;
    DdcVoq& v = st.voqs[vi];
    const std::uint32_t bytes = p->frame_bytes();
    if (v.q.bytes + bytes > st.cfg.voq_limit_bytes) {
        ++st.stats.voq_drops;
        return drop(p);
    }
    if (v.q.bytes > st.cfg.voq_ecn_bytes && wire::Ipv6Hdr::mark_ce(h + wire::EthHdr::kSize)) ++st.stats.voq_ecn_marks;
    v.q.push(p);
    if (now_ >= cfg_.queue_peak_from_ps) st.stats.voq_peak_bytes = std::max(st.stats.voq_peak_bytes, v.q.bytes);
    ddc_drain(vi);
    DdcVoq& w = st.voqs[vi];
    if (!w.q.empty() && !w.requested) {
        w.requested = true;
        events_q_.push(now_ + (w.local ? 0 : st.ctrl_ps), EventKind::ddc_status, vi, nullptr, 1);
    }
}

void Simulator::ddc_drain(std::uint32_t vi) {
    DdcState& st = *ddc_;
    while (!st.voqs[vi].q.empty() && st.voqs[vi].balance > 0) {
        Packet* p = st.voqs[vi].q.pop();
        st.voqs[vi].balance -= static_cast<std::int64_t>(p->frame_bytes() + cfg_.wire_overhead_bytes);
        ddc_send(vi, p);
    }
}

void Simulator::ddc_send(std::uint32_t vi, Packet* p) {
    DdcState& st = *ddc_;
    const DdcVoq v = st.voqs[vi];  // a copy: cell losses below may touch the records, never the VOQs
    if (v.local) {
        ++st.stats.local_packets;
        return enqueue(switch_port(v.egress_sw, v.egress_local), p);
    }
    const std::uint32_t wire_bytes = p->frame_bytes() + cfg_.wire_overhead_bytes;
    const std::uint32_t n = (wire_bytes + st.cfg.cell_bytes - 1) / st.cfg.cell_bytes;
    const std::uint32_t ri = st.new_record();
    {
        DdcRecord& r = st.records[ri];
        r.pkt = p;
        r.voq = vi;
        r.cells_out = static_cast<std::uint16_t>(n);
    }
    DdcVoq& vs = st.voqs[vi];
    if (vs.tail != kNone) st.records[vs.tail].next = ri;
    else vs.head = ri;
    vs.tail = ri;
    ++st.stats.packets;
    const Switch& in = switches_[v.ingress_sw];
    const std::uint32_t plane = in.plane;
    const std::uint32_t t1_base = dims_.first_switch + plane * (dims_.t0 + dims_.t1) + dims_.t0;
    std::uint32_t& rr = st.spray[(std::size_t{plane} * dims_.t0 + in.index) * dims_.t0 + v.egress_t0];
    const std::uint32_t src_nic = p->src_nic;
    for (std::uint32_t c = 0; c < n; ++c) {
        Packet* cell = pool_.get();
        cell->frame.header_len = 0;
        cell->frame.tail_len = 0;
        cell->frame.segment_count = 0;
        cell->payload_bytes = std::min(st.cfg.cell_bytes, wire_bytes - c * st.cfg.cell_bytes) + st.cfg.cell_header_bytes;
        cell->cell = true;
        cell->data = cell->priority = cell->trimmed = false;
        cell->tag = ri;
        cell->src_nic = src_nic;
        cell->sent_ps = now_;
        if (cell->telemetry != nullptr) cell->telemetry->hops = 0;
        ++st.stats.cells;
        std::uint32_t up = kNone;
        for (std::uint32_t k = 0; k < dims_.t1; ++k) {
            const std::uint32_t j = (rr + k) % dims_.t1;
            if (ports_[in.first_port + dims_.hosts_per_t0 + j].up && ports_[switch_port(t1_base + j, v.egress_t0)].up) {
                up = dims_.hosts_per_t0 + j;
                rr = (j + 1) % dims_.t1;
                break;
            }
        }
        if (up == kNone) drop(cell);  // no T1 reaches the egress T0
        else enqueue(in.first_port + up, cell);
    }
}

void Simulator::ddc_cell_arrive(Switch& s, Packet* cell) {
    DdcState& st = *ddc_;
    const std::uint32_t ri = cell->tag;
    if (s.tier == Tier::t1) return enqueue(s.first_port + st.voqs[st.records[ri].voq].egress_t0, cell);
    pool_.put(cell);
    DdcRecord& r = st.records[ri];
    --r.cells_out;
    if (r.lost) {
        if (r.released && r.cells_out == 0) st.free(ri);
        return;
    }
    if (r.cells_out != 0) return;
    const DdcVoq& v = st.voqs[r.voq];
    std::uint64_t& held = st.held[v.egress_sw];
    held += r.pkt->frame_bytes();
    st.stats.reassembly_peak_bytes = std::max(st.stats.reassembly_peak_bytes, held);
    ddc_release(r.voq);
}

void Simulator::ddc_cell_lost(Packet* cell) {
    DdcState& st = *ddc_;
    ++st.stats.cells_lost;
    const std::uint32_t ri = cell->tag;
    DdcRecord& r = st.records[ri];
    --r.cells_out;
    if (r.lost) {
        if (r.released && r.cells_out == 0) st.free(ri);
        return;
    }
    r.lost = true;
    ++st.stats.packets_lost;
    pool_.put(r.pkt);
    r.pkt = nullptr;
    schedule(now_ + st.cfg.reassembly_timeout_ps, [this, ri] {
        ddc_->records[ri].skippable = true;
        ddc_release(ddc_->records[ri].voq);
    });
}

void Simulator::ddc_release(std::uint32_t vi) {
    DdcState& st = *ddc_;
    for (;;) {
        DdcVoq& v = st.voqs[vi];
        if (v.head == kNone) return;
        const std::uint32_t ri = v.head;
        DdcRecord& r = st.records[ri];
        const bool complete = !r.lost && r.cells_out == 0;
        if (!complete && !(r.lost && r.skippable)) return;
        v.head = r.next;
        if (v.head == kNone) v.tail = kNone;
        r.released = true;
        if (complete) {
            Packet* p = r.pkt;
            st.held[v.egress_sw] -= p->frame_bytes();
            const std::uint32_t port = switch_port(v.egress_sw, v.egress_local);
            st.free(ri);
            enqueue(port, p);
        } else if (r.cells_out == 0) {
            st.free(ri);
        }
    }
}

void Simulator::ddc_tick(std::uint32_t pi) {
    DdcState& st = *ddc_;
    DdcPort& dp = st.ports[pi];
    dp.ticking = false;
    if (dp.ring.empty()) return;
    if (dp.next >= dp.ring.size()) dp.next = 0;
    const std::uint32_t vi = dp.ring[dp.next++];
    ++st.stats.credits;
    events_q_.push(now_ + (st.voqs[vi].local ? 0 : st.ctrl_ps), EventKind::ddc_credit, vi);
    dp.next_tick_ps = now_ + dp.interval_ps;
    dp.ticking = true;
    events_q_.push(dp.next_tick_ps, EventKind::ddc_tick, pi);
}

void Simulator::ddc_credit(std::uint32_t vi) {
    DdcState& st = *ddc_;
    if (!switches_[st.voqs[vi].ingress_sw].alive) return;  // lost with its T0
    st.voqs[vi].balance += st.cfg.credit_bytes;
    ddc_drain(vi);
    DdcVoq& v = st.voqs[vi];
    const auto credit = static_cast<std::int64_t>(st.cfg.credit_bytes);
    if (v.q.empty() && v.balance >= credit) {
        // Idle with a whole credit in hand: keep one for the next packet, stop asking.
        v.balance = credit;
        if (v.requested) {
            v.requested = false;
            events_q_.push(now_ + (v.local ? 0 : st.ctrl_ps), EventKind::ddc_status, vi, nullptr, 0);
        }
    }
}

void Simulator::ddc_status(std::uint32_t vi, bool on) {
    DdcState& st = *ddc_;
    DdcVoq& v = st.voqs[vi];
    DdcPort& dp = st.ports[v.sched];
    if (on) {
        if (!v.in_ring) {
            v.in_ring = true;
            dp.ring.push_back(vi);
        }
        if (!dp.ticking) {
            dp.ticking = true;
            events_q_.push(std::max(now_, dp.next_tick_ps), EventKind::ddc_tick, v.sched);
        }
        return;
    }
    if (!v.in_ring) return;
    v.in_ring = false;
    const auto at = static_cast<std::uint32_t>(std::find(dp.ring.begin(), dp.ring.end(), vi) - dp.ring.begin());
    dp.ring.erase(dp.ring.begin() + at);
    if (at < dp.next) --dp.next;
}

void Simulator::ddc_switch_down(std::uint32_t sw) {
    // A dead T0's VOQs lose their packets and their credit; its egress side's
    // records lose their cells as they arrive (dropped at the dead switch).
    DdcState& st = *ddc_;
    for (std::uint32_t vi = 0; vi < st.voqs.size(); ++vi) {
        DdcVoq& v = st.voqs[vi];
        if (v.ingress_sw != sw) continue;
        while (!v.q.empty()) {
            ++st.stats.voq_drops;
            drop(v.q.pop());
        }
        v.balance = 0;
        if (v.requested) {
            v.requested = false;
            events_q_.push(now_ + (v.local ? 0 : st.ctrl_ps), EventKind::ddc_status, vi, nullptr, 0);
        }
    }
}

}  // namespace omrc::sim
