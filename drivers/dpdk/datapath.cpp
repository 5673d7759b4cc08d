// SPDX-License-Identifier: BSD-3-Clause
// One queue of a dpdk device (DpdkDriver): receive, transmit, zero-copy
// frames and their release, link events from the ports' shared state. See
// dpdk_driver.hpp.
#include <algorithm>
#include <cstring>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "drivers/dpdk/dpdk_driver.hpp"
#include "drivers/dpdk/iova.hpp"
#include "drivers/dpdk/eal.hpp"
#include "log/log.hpp"
#include "wire/ethernet.hpp"
#include "wire/ipv6.hpp"

namespace omrc::dpdk {

namespace {

/// Linearising buffers: the largest frame (SRv6 data headers, 4096 B of payload, tail) with margin.
constexpr std::size_t kFrameRoom = 4608;
constexpr std::uint16_t kSmallRoom = 192;  ///< small mbufs: headers or a tail
constexpr std::uint8_t kNextHopByHop = 0;
constexpr std::uint8_t kNextIcmpv6 = 58;
/// Payload smaller than this is copied: cheaper than chaining.
constexpr std::size_t kZeroCopyMinBytes = 256;

}  // namespace

DpdkDriver::DpdkDriver(std::shared_ptr<DpdkPorts> ports, std::uint32_t queue) : ports_(std::move(ports)), queue_(queue) {
    const DpdkOptions& o = ports_->options();
    for (auto& port : ports_->ports()) {
        QueuePort qp;
        qp.port = port.get();
        qp.backlog.reserve(o.backlog);
        qp.changes_seen = port->changes.load(std::memory_order_acquire);
        qp.up = port->up.load(std::memory_order_acquire);
        p_.push_back(std::move(qp));
    }
    release_ = std::make_unique<TxReleaseRing>(static_cast<std::uint32_t>(p_.size()) * (o.tx_desc + o.backlog) + 1024);
}

DpdkDriver::~DpdkDriver() {
    for (rte_mbuf* m : rx_held_) rte_pktmbuf_free(m);
    rx_held_.clear();
    for (QueuePort& p : p_) {
        for (std::size_t i = p.backlog_head; i < p.backlog.size(); ++i) rte_pktmbuf_free(p.backlog[i]);
        p.backlog.clear();
    }
    // The ports close with the last queue (DpdkPorts' destructor).
}

int DpdkDriver::numa_node() const { return p_.empty() ? -1 : p_.front().port->socket; }

void DpdkDriver::check_ports() {
    for (std::size_t i = 0; i < p_.size(); ++i) {
        QueuePort& qp = p_[i];
        Port& port = *qp.port;
        // A reset: stop using the port and say so; the alarm resets it once
        // every queue has (ports.cpp).
        const bool pause = port.pause.load(std::memory_order_acquire);
        if (pause && !qp.paused) {
            drop_backlog(qp);
            qp.paused = true;
            port.paused_queues.fetch_or(1u << queue_, std::memory_order_acq_rel);
        } else if (!pause && qp.paused) {
            qp.paused = false;
        }
        const std::uint32_t changes = port.changes.load(std::memory_order_acquire);
        if (changes == qp.changes_seen) continue;
        qp.changes_seen = changes;
        const bool up = port.up.load(std::memory_order_acquire) && !qp.paused;
        if (up == qp.up) continue;
        qp.up = up;
        ++qp.c.link_changes;
        if (!up) drop_backlog(qp);
        link_events_.push_back({static_cast<std::uint8_t>(i), up});
    }
}

const std::uint8_t* DpdkDriver::rx_view(rte_mbuf* m, std::size_t slot, QueuePort& p) {
    if (m->nb_segs == 1) return rte_pktmbuf_mtod(m, const std::uint8_t*);
    std::vector<std::uint8_t>& buf = rx_linear_[slot];
    if (m->pkt_len > buf.size()) {
        ++p.c.rx_oversize;
        return nullptr;
    }
    ++p.c.rx_linearized;
    return static_cast<const std::uint8_t*>(rte_pktmbuf_read(m, 0, m->pkt_len, buf.data()));
}

std::size_t DpdkDriver::rx_burst(std::span<driver::RxFrame> out, std::uint64_t) {
    attach_thread();  // the mempool caches need an lcore (eal.hpp)
    // The views of the previous burst are no longer in use.
    for (rte_mbuf* m : rx_held_) rte_pktmbuf_free(m);
    rx_held_.clear();
    check_ports();
    for (QueuePort& p : p_) flush(p);
    if (rx_linear_.size() < out.size()) rx_linear_.resize(out.size(), std::vector<std::uint8_t>(kFrameRoom));

    constexpr std::size_t kEth = wire::EthHdr::kSize;
    std::size_t n = 0;
    std::array<rte_mbuf*, 64> mbufs;
    const auto q = static_cast<std::uint16_t>(queue_);
    for (std::size_t k = 0; k < p_.size() && n < out.size(); ++k) {
        const std::size_t plane = (rx_next_port_ + k) % p_.size();
        QueuePort& p = p_[plane];
        if (p.paused) continue;
        const auto want = static_cast<std::uint16_t>(std::min<std::size_t>(out.size() - n, mbufs.size()));
        const std::uint16_t got = rte_eth_rx_burst(p.port->id, q, mbufs.data(), want);
        for (std::uint16_t i = 0; i < got; ++i) {
            rte_mbuf* m = mbufs[i];
            rx_held_.push_back(m);
            ++p.c.rx_frames;
            p.c.rx_bytes += m->pkt_len;
            if (m->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_BAD | RTE_MBUF_F_RX_L4_CKSUM_BAD)) ++p.c.rx_cksum_bad_flag;
            if (m->pkt_len < kEth + wire::Ipv6Hdr::kSize) {
                ++p.c.rx_short;
                continue;
            }
            const std::uint8_t* d = rx_view(m, n, p);
            if (d == nullptr) continue;
            if (static_cast<std::uint16_t>(d[12] << 8 | d[13]) != wire::kEthertypeIpv6) {
                ++p.c.rx_not_ipv6;
                continue;
            }
            const std::uint8_t next = d[kEth + 6];
            if (next == kNextIcmpv6 || next == kNextHopByHop) {
                ++p.c.rx_kernel_noise;
                continue;
            }
            if (d[0] & 1) {
                ++p.c.rx_multicast;
                continue;
            }
            if (std::memcmp(d, p.port->mac.data(), 6) != 0) {
                ++p.c.rx_other_mac;
                continue;
            }
            out[n++] = {d, m->pkt_len, static_cast<std::uint8_t>(plane)};
            ++p.c.rx_delivered;
        }
    }
    rx_next_port_ = (rx_next_port_ + 1) % p_.size();
    return n;
}

rte_mbuf* DpdkDriver::build_copy(const wire::GatherFrame& g, QueuePort& p) {
    rte_mbuf* m = rte_pktmbuf_alloc(p.port->pools[queue_]->frames);
    if (m == nullptr) {
        ++p.c.tx_pool_empty;
        return nullptr;
    }
    const std::size_t len = g.size();
    auto* dst = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, static_cast<std::uint16_t>(len)));
    if (dst == nullptr || g.flatten(std::span(dst, len)) != len) {
        rte_pktmbuf_free(m);
        ++p.c.tx_pool_empty;
        return nullptr;
    }
    ++p.c.tx_copied;
    return m;
}

rte_mbuf* DpdkDriver::build(const wire::GatherFrame& g, QueuePort& p, TxReleaseRing::Record& rec) {
    // Small payloads are cheaper to copy than to chain.
    const bool candidate = ports_->options().zero_copy && p.port->chains && !g.payload_in_engine_memory &&
                           g.segment_count > 0 && g.payload_len() >= kZeroCopyMinBytes && g.header_len <= kSmallRoom;
    if (!candidate) return build_copy(g, p);
    // Every segment must lie in memory the driver registered, at a known IOVA.
    thread_local std::vector<Piece> pieces;
    pieces.clear();
    for (std::size_t i = 0; i < g.segment_count; ++i) {
        const MemRegion* r = ports_->find_region(g.segments[i].data, g.segments[i].len);
        if (r == nullptr || !pieces_of(*r, g.segments[i].data, g.segments[i].len, pieces, rec.shinfo.size())) {
            ++p.c.tx_copied_unregistered;
            return build_copy(g, p);
        }
    }
    p.c.tx_split_segments += pieces.size() - g.segment_count;
    const PortPools& pools = *p.port->pools[queue_];
    rte_mbuf* head = rte_pktmbuf_alloc(pools.small);
    rte_mbuf* tail = rte_pktmbuf_alloc(pools.small);
    std::array<rte_mbuf*, TxReleaseRing::kMaxPieces> seg{};
    const bool ok = head != nullptr && tail != nullptr &&
                    rte_pktmbuf_alloc_bulk(pools.ext, seg.data(), static_cast<unsigned>(pieces.size())) == 0;
    if (!ok) {
        rte_pktmbuf_free(head);
        rte_pktmbuf_free(tail);
        ++p.c.tx_pool_empty;
        return nullptr;
    }
    std::memcpy(rte_pktmbuf_append(head, g.header_len), g.header.data(), g.header_len);
    std::memcpy(rte_pktmbuf_append(tail, g.tail_len), g.tail.data(), g.tail_len);
    rte_mbuf* last = head;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        rte_mbuf_ext_shared_info& sh = rec.shinfo[i];
        sh.free_cb = &TxReleaseRing::on_free;
        sh.fcb_opaque = &rec;
        rte_mbuf_ext_refcnt_set(&sh, 1);
        ++rec.pending;
        void* va = const_cast<std::uint8_t*>(pieces[i].va);
        const auto len = static_cast<std::uint16_t>(pieces[i].len);
        rte_pktmbuf_attach_extbuf(seg[i], va, pieces[i].iova, len, &sh);
        seg[i]->data_len = len;
        seg[i]->pkt_len = len;
        last->next = seg[i];
        last = seg[i];
    }
    last->next = tail;
    head->nb_segs = static_cast<std::uint16_t>(pieces.size() + 2);
    head->pkt_len = static_cast<std::uint32_t>(g.size());
    ++p.c.tx_zero_copy;
    return head;
}

void DpdkDriver::drop_backlog(QueuePort& p) {
    // Frames still waiting for a port that went down are lost with it (their
    // payload is released as they are freed).
    for (std::size_t i = p.backlog_head; i < p.backlog.size(); ++i) rte_pktmbuf_free(p.backlog[i]);
    p.c.tx_dropped_link_down += p.backlog.size() - p.backlog_head;
    backlogged_ -= p.backlog.size() - p.backlog_head;
    p.backlog.clear();
    p.backlog_head = 0;
}

void DpdkDriver::flush(QueuePort& p) {
    if (p.paused) return;
    const auto q = static_cast<std::uint16_t>(queue_);
    while (p.backlog_head < p.backlog.size()) {
        const auto n = static_cast<std::uint16_t>(std::min<std::size_t>(p.backlog.size() - p.backlog_head, 512));
        const std::uint16_t sent = rte_eth_tx_burst(p.port->id, q, p.backlog.data() + p.backlog_head, n);
        p.backlog_head += sent;
        backlogged_ -= sent;
        if (sent < n) {
            ++p.c.tx_ring_full;
            break;
        }
    }
    if (p.backlog_head == p.backlog.size()) {
        p.backlog.clear();
        p.backlog_head = 0;
    } else if (p.backlog_head > p.backlog.capacity() / 2) {
        p.backlog.erase(p.backlog.begin(), p.backlog.begin() + static_cast<std::ptrdiff_t>(p.backlog_head));
        p.backlog_head = 0;
    }
}

std::size_t DpdkDriver::tx_burst(std::span<const wire::GatherFrame> frames, std::uint64_t) {
    attach_thread();
    check_ports();
    const std::uint32_t backlog_max = ports_->options().backlog;
    std::size_t accepted = 0;
    std::uint32_t touched = 0;  // ports with new frames
    for (const wire::GatherFrame& g : frames) {
        if (g.plane >= p_.size() || release_->full()) break;
        QueuePort& p = p_[g.plane];
        if (!p.up || p.paused) {  // a dead port: the frame is lost, as on a cable pulled out
            ++p.c.tx_dropped_link_down;
            (void)release_->begin_frame();
            release_->commit_frame();
            ++accepted;
            continue;
        }
        if (g.size() > p.port->max_frame) {
            // The PMD would refuse it forever: it is lost here, counted, and
            // the QP's MTU must come down (see the warning).
            if (p.c.tx_oversize++ == 0)
                log::logger().warn("dpdk: port {} ({}) takes frames of at most {} B; a {} B frame was dropped: "
                                   "use a QP MTU no larger than the device's mtu argument", p.port->id, p.port->name,
                                   p.port->max_frame, g.size());
            (void)release_->begin_frame();
            release_->commit_frame();
            ++accepted;
            continue;
        }
        if (p.backlog.size() - p.backlog_head >= backlog_max) {
            ++p.c.tx_backlog_full;
            break;
        }
        TxReleaseRing::Record& rec = release_->begin_frame();
        rte_mbuf* m = build(g, p, rec);
        if (m == nullptr) break;
        release_->commit_frame();  // a copied frame (nothing pending) is released at once
        p.backlog.push_back(m);
        ++backlogged_;
        ++p.c.tx_frames;
        p.c.tx_bytes += g.size();
        touched |= 1u << g.plane;
        ++accepted;
    }
    for (std::size_t i = 0; i < p_.size(); ++i)
        if ((touched & (1u << i)) || p_[i].backlog_head < p_[i].backlog.size()) flush(p_[i]);
    return accepted;
}

std::uint64_t DpdkDriver::tx_release_count() const {
    // Frames whose payload a NIC still holds: PMDs that free sent mbufs
    // lazily (real NICs) are asked to now; one that cannot clean up on
    // demand gets an empty burst, which frees what it has sent (its free
    // threshold is near its ring size, ports.cpp) — once per pass, and only
    // while the watermark has not moved since the last kick.
    if (release_->released() < release_->accepted()) {
        const auto q = static_cast<std::uint16_t>(queue_);
        for (const QueuePort& p : p_) {
            if (p.paused) continue;
            if (p.port->tx_cleanup) {
                (void)rte_eth_tx_done_cleanup(p.port->id, q, 0);
            } else if (p.port->reclaim_kick && release_->released() == last_kick_released_) {
                (void)rte_eth_tx_burst(p.port->id, q, nullptr, 0);
                ++reclaim_kicks_;
            }
        }
        last_kick_released_ = release_->released();
    }
    return release_->released();
}

std::size_t DpdkDriver::poll_link_events(std::span<driver::LinkEvent> out) {
    check_ports();
    const std::size_t n = std::min(out.size(), link_events_.size());
    std::copy_n(link_events_.begin(), n, out.begin());
    link_events_.erase(link_events_.begin(), link_events_.begin() + static_cast<std::ptrdiff_t>(n));
    return n;
}

bool DpdkDriver::link_up(std::uint32_t plane) const {
    return plane < p_.size() && p_[plane].port->up.load(std::memory_order_acquire) && !p_[plane].paused;
}

std::uint64_t DpdkDriver::next_event_ns() const {
    // Backlogged frames or unreleased payload: poll again at once. Link
    // changes come from the ports' events (checked at every pass), frames
    // by polling: nothing timed.
    if (backlogged_ != 0 || release_->released() < release_->accepted()) return 0;
    return UINT64_MAX;
}

driver::DriverStats DpdkDriver::stats() const {
    driver::DriverStats s{};
    for (const QueuePort& p : p_) {
        s.rx_frames += p.c.rx_delivered;
        s.tx_frames += p.c.tx_frames;
        s.rx_bytes += p.c.rx_bytes;
        s.tx_bytes += p.c.tx_bytes;
        s.tx_dropped_link_down += p.c.tx_dropped_link_down;
        s.tx_dropped_full += p.c.tx_pool_empty + p.c.tx_backlog_full;
        // The PMD's own drops are the port's: counted once, in queue 0's stats.
        rte_eth_stats es{};
        if (queue_ == 0 && rte_eth_stats_get(p.port->id, &es) == 0) s.rx_dropped_full += es.imissed + es.rx_nombuf;
    }
    return s;
}

void DpdkDriver::counters(std::vector<std::pair<std::string, std::uint64_t>>& out) const {
    for (std::size_t i = 0; i < p_.size(); ++i) {
        const QueuePort& p = p_[i];
        const Port& port = *p.port;
        const std::string k = "plane" + std::to_string(i) + ".";
        const PortCounters& c = p.c;
        for (const auto& [name, v] : std::initializer_list<std::pair<const char*, std::uint64_t>>{
                 {"rx_frames", c.rx_frames}, {"rx_delivered", c.rx_delivered}, {"rx_bytes", c.rx_bytes},
                 {"tx_frames", c.tx_frames}, {"tx_bytes", c.tx_bytes}, {"tx_zero_copy", c.tx_zero_copy},
                 {"tx_copied", c.tx_copied}, {"tx_copied_unregistered", c.tx_copied_unregistered},
                 {"tx_split_segments", c.tx_split_segments}, {"tx_pool_empty", c.tx_pool_empty},
                 {"tx_backlog_full", c.tx_backlog_full}, {"tx_ring_full", c.tx_ring_full},
                 {"tx_dropped_link_down", c.tx_dropped_link_down},
                 {"rx_short", c.rx_short},
                 {"rx_not_ipv6", c.rx_not_ipv6}, {"rx_kernel_noise", c.rx_kernel_noise},
                 {"rx_multicast", c.rx_multicast}, {"rx_other_mac", c.rx_other_mac},
                 {"rx_oversize", c.rx_oversize}, {"rx_linearized", c.rx_linearized},
                 {"rx_cksum_bad_flag", c.rx_cksum_bad_flag}, {"link_changes", c.link_changes},
                 {"tx_oversize", c.tx_oversize}, {"max_frame", port.max_frame}, {"mtu", port.mtu},
                 {"numa_node", static_cast<std::uint64_t>(port.socket < 0 ? UINT64_MAX : port.socket)},
                 {"lsc_events", port.lsc_events ? 1u : 0u}, {"tx_done_cleanup", port.tx_cleanup ? 1u : 0u},
                 {"link_query_failures", port.failed_queries.load(std::memory_order_relaxed)},
                 {"resets", port.resets.load(std::memory_order_relaxed)},
                 {"removed", port.removed.load(std::memory_order_relaxed) ? 1u : 0u},
                 {"steering_rules", port.flows.size()}})
            out.emplace_back(k + name, v);
        rte_eth_stats es{};
        if (queue_ == 0 && rte_eth_stats_get(port.id, &es) == 0) {
            out.emplace_back(k + "pmd_imissed", es.imissed);
            out.emplace_back(k + "pmd_ierrors", es.ierrors);
            out.emplace_back(k + "pmd_oerrors", es.oerrors);
            out.emplace_back(k + "pmd_rx_nombuf", es.rx_nombuf);
        }
        out.emplace_back(k + "port_id", port.id);
        out.emplace_back(k + "tx_backlog_now", p.backlog.size() - p.backlog_head);
    }
    out.emplace_back("queue", queue_);
    out.emplace_back("tx_reclaim_kicks", reclaim_kicks_);
    out.emplace_back("tx_released", release_->released());
    out.emplace_back("tx_accepted", release_->accepted());
}

}  // namespace omrc::dpdk
