// SPDX-License-Identifier: BSD-3-Clause
// The udp driver's data path: one io_uring, receive slots kept posted on
// every socket, send slots filled from the engine's gather frames
// (drivers/udp/udp.hpp describes the design).
#include <netinet/in.h>

#include "drivers/udp/udp_impl.hpp"
#include "wire/psp.hpp"

namespace omrc::udp {

io_uring_sqe* UdpDriver::Impl::sqe() {
    io_uring_sqe* s = io_uring_get_sqe(&ring);
    if (s == nullptr) {
        submit();
        s = io_uring_get_sqe(&ring);
    }
    return s;
}

void UdpDriver::Impl::submit() {
    ++c.submits;
    const int rc = io_uring_submit(&ring);
    if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR)
        log::logger().error("udp: io_uring_submit: {}", std::strerror(-rc));
}

bool UdpDriver::Impl::arm_rx(std::uint32_t i) {
    io_uring_sqe* s = sqe();
    if (s == nullptr) return false;
    RxSlot& r = rx[i];
    r.msg = {};
    if (raw) {  // the whole Ethernet frame, no ancillary data
        r.iov = {r.buf, kRawMaxFrameBytes};
        r.msg.msg_name = &r.from_ll;
        r.msg.msg_namelen = sizeof(r.from_ll);
    } else {
        r.iov = {r.buf + kPlainHeaderBytes, kMaxDatagramBytes};
        r.msg.msg_name = &r.from;
        r.msg.msg_namelen = sizeof(r.from);
        r.msg.msg_control = r.control;
        r.msg.msg_controllen = sizeof(r.control);
    }
    r.msg.msg_iov = &r.iov;
    r.msg.msg_iovlen = 1;
    io_uring_prep_recvmsg(s, sockets[r.socket].fd, &r.msg, 0);
    io_uring_sqe_set_data64(s, tag(kKindRx, i));
    ++inflight;
    return true;
}

void UdpDriver::Impl::rearm_pending() {
    std::size_t k = 0;
    for (; k < rearm.size(); ++k)
        if (!arm_rx(rearm[k])) break;
    rearm.erase(rearm.begin(), rearm.begin() + static_cast<std::ptrdiff_t>(k));
}

void UdpDriver::Impl::reap() {
    if (IO_URING_READ_ONCE(*ring.sq.kflags) & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) {
        if (IO_URING_READ_ONCE(*ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW) ++c.cq_overflow;
        (void)io_uring_get_events(&ring);
    }
    io_uring_cqe* cqes[64];
    for (;;) {
        const unsigned n = io_uring_peek_batch_cqe(&ring, cqes, 64);
        if (n == 0) break;
        for (unsigned k = 0; k < n; ++k) {
            const std::uint64_t data = io_uring_cqe_get_data64(cqes[k]);
            const int res = cqes[k]->res;
            const auto index = static_cast<std::uint32_t>(data & ((1ull << 56) - 1));
            if ((data >> 56) != kKindCancel) --inflight;
            switch (data >> 56) {
                case kKindRx: on_rx(index, res); break;
                case kKindTx: on_tx(index, res); break;
                case kKindProbe:
                    planes[index].probe_inflight = false;
                    if (res < 0 && res != -EAGAIN) plane_down(index, -res);
                    break;
                default: break;
            }
        }
        io_uring_cq_advance(&ring, n);
        if (n < 64) break;
    }
}

void UdpDriver::Impl::on_rx(std::uint32_t i, int res) {
    RxSlot& r = rx[i];
    const std::uint32_t p = sockets[r.socket].plane;
    if (res < 0) return on_rx_error(i, p, -res);
    const std::uint32_t len = raw ? accept_raw(r, p, res) : accept_plain(r, p, res);
    if (len == 0) {
        rearm.push_back(i);
        return;
    }
    r.len = len;
    ready.push_back(i);
}

void UdpDriver::Impl::on_rx_error(std::uint32_t i, std::uint32_t p, int err) {
    // ECONNREFUSED: an ICMP port unreachable for an earlier send (plain sockets only).
    if (err == EINTR || err == EAGAIN || err == ECANCELED || (!raw && err == ECONNREFUSED)) {
        rearm.push_back(i);
        return;
    }
    ++c.rx_errors;
    if (raw || socket_level_error(err)) {
        plane_down(p, err);  // plain only; srv6: the interface flags decide, and re-post parked slots
        planes[p].parked.push_back(i);
    } else {
        rearm.push_back(i);
    }
}

std::uint32_t UdpDriver::Impl::accept_plain(RxSlot& r, std::uint32_t p, int res) {
    const Socket& s = sockets[r.socket];
    RxMeta m;
    m.plane = p;
    m.local_mac = planes[p].mac;
    m.dst_port = s.port;
    bool have_dst = false;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&r.msg); cm != nullptr; cm = CMSG_NXTHDR(&r.msg, cm)) {
        const std::uint8_t* data = CMSG_DATA(cm);
        const std::size_t len = cm->cmsg_len - CMSG_LEN(0);
        if (cm->cmsg_level == IPPROTO_IPV6) {
            if (cm->cmsg_type == IPV6_PKTINFO && len >= sizeof(in6_pktinfo)) {
                in6_pktinfo pi;
                std::memcpy(&pi, data, sizeof pi);
                std::memcpy(m.dst.data(), &pi.ipi6_addr, 16);
                have_dst = true;
            } else if (cm->cmsg_type == IPV6_TCLASS && len >= sizeof(int)) {
                int v = 0;
                std::memcpy(&v, data, sizeof v);
                m.traffic_class = static_cast<std::uint8_t>(v);
            } else if (cm->cmsg_type == IPV6_HOPLIMIT && len >= sizeof(int)) {
                int v = 0;
                std::memcpy(&v, data, sizeof v);
                m.hop_limit = static_cast<std::uint8_t>(v);
            } else if (cm->cmsg_type == IPV6_FLOWINFO && len >= sizeof(std::uint32_t)) {
                std::uint32_t v = 0;
                std::memcpy(&v, data, sizeof v);
                m.flow_label = ntohl(v) & 0xFFFFFu;
            }
        } else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL && len >= sizeof(std::uint32_t)) {
            std::uint32_t v = 0;
            std::memcpy(&v, data, sizeof v);
            c.rx_socket_overflow += v - sockets[r.socket].overflow_seen;  // wraps like the kernel's counter
            sockets[r.socket].overflow_seen = v;
        }
    }
    if (r.msg.msg_flags & MSG_TRUNC) return dropped(c.rx_truncated);
    if (r.msg.msg_flags & MSG_CTRUNC) return dropped(c.rx_ctrl_truncated);
    if (r.msg.msg_namelen < sizeof(sockaddr_in6) || r.from.sin6_family != AF_INET6) return dropped(c.rx_bad_family);
    std::memcpy(m.src.data(), &r.from.sin6_addr, 16);
    m.src_port = ntohs(r.from.sin6_port);
    // A self-probe: empty, or (workers) one byte naming this queue.
    const bool probe_shape = res == 0 || (cfg.queues > 1 && res == 1 && r.buf[kPlainHeaderBytes] == cfg.queue);
    if (probe_shape && m.src == addr && m.src_port == planes[p].base_port) {
        ++c.rx_self_probes;
        plane_up(p);
        return 0;
    }
    if (static_cast<std::size_t>(res) < kMinDatagramBytes) return dropped(c.rx_short);
    if (!have_dst) return dropped(c.rx_no_pktinfo);
    if (!admin_up[p].load(std::memory_order_relaxed)) return dropped(c.rx_link_down);
    // A sealed frame (PSP, docs/PROTOCOL.md §12) was sent to PSP's port 1000.
    const bool sealed = wire::is_psp_payload({r.buf + kPlainHeaderBytes, static_cast<std::size_t>(res)});
    write_rx_headers(std::span<std::uint8_t, kPlainHeaderBytes>(r.buf, kPlainHeaderBytes), m,
                     static_cast<std::size_t>(res), sealed);
    return static_cast<std::uint32_t>(kPlainHeaderBytes + static_cast<std::size_t>(res));
}

std::uint32_t UdpDriver::Impl::accept_raw(RxSlot& r, std::uint32_t p, int res) {
    if (r.msg.msg_flags & MSG_TRUNC) return dropped(c.rx_truncated);
    const auto len = static_cast<std::size_t>(res);
    if (r.msg.msg_namelen >= sizeof(sockaddr_ll) && r.from_ll.sll_pkttype == PACKET_OUTGOING)
        return dropped(c.rx_outgoing);
    if (len < kEthIpv6Bytes) return dropped(c.rx_short);
    const std::uint8_t* f = r.buf;
    if (f[12] != 0x86 || f[13] != 0xDD || (f[14] >> 4) != 6) return dropped(c.rx_not_ipv6);
    if (f[0] & 1) return dropped(c.rx_multicast);  // group bit: multicast and broadcast
    if (!std::equal(f, f + 6, planes[p].mac.begin())) return dropped(c.rx_other_mac);
    // Outer next header: ICMPv6 (neighbour discovery, errors) or hop-by-hop (MLD).
    if (f[20] == 58 || f[20] == 0) return dropped(c.rx_kernel_noise);
    if (len < kEthIpv6Bytes + 8 + kMinDatagramBytes) return dropped(c.rx_short);
    if (!admin_up[p].load(std::memory_order_relaxed)) return dropped(c.rx_link_down);
    return static_cast<std::uint32_t>(len);
}

void UdpDriver::Impl::on_tx(std::uint32_t i, int res) {
    tx_free.push_back(i);
    if (res >= 0) return;
    const int e = -res;
    switch (e) {
        case ENETUNREACH:
        case EHOSTUNREACH:
        case EHOSTDOWN: ++c.tx_err_unreachable; return;
        case ECONNREFUSED: ++c.tx_err_refused; return;
        case ENOBUFS:
        case EAGAIN:
        case ENOMEM: ++c.tx_err_nobufs; return;
        case EPERM:
        case EACCES: ++c.tx_err_perm; return;
        case EMSGSIZE: ++c.tx_err_msgsize; return;
        default: break;
    }
    if (socket_level_error(e)) {
        ++c.tx_err_socket;
        plane_down(tx[i].plane, e);
    } else {
        ++c.tx_err_other;
    }
}

bool UdpDriver::Impl::tx_drop(const wire::GatherFrame& g, TxMeta& m) {
    if (g.plane >= planes.size()) return counted(c.tx_bad_plane);
    if (!up(g.plane)) return counted(c.tx_link_down);
    if (raw) {  // the engine's Ethernet frame goes out as it is
        if (g.size() < kEthIpv6Bytes || g.header_len < kEthIpv6Bytes || g.header[12] != 0x86 || g.header[13] != 0xDD)
            return counted(c.tx_bad_frame);
        if (g.size() > kRawMaxFrameBytes) return counted(c.tx_too_large);
        return false;
    }
    switch (parse_tx(g, m)) {
        case TxParse::ok: break;
        case TxParse::bad_frame: return counted(c.tx_bad_frame);
        case TxParse::bad_peer_mac: return counted(c.tx_bad_peer_mac);
        case TxParse::ev_plane: return counted(c.tx_ev_plane);
    }
    if (m.src != addr) return counted(c.tx_bad_source);
    const std::size_t dgram = g.size() >= kPlainHeaderBytes ? g.size() - kPlainHeaderBytes : 0;
    if (dgram > kMaxDatagramBytes) return counted(c.tx_too_large);
    return false;
}

int UdpDriver::Impl::fill_raw(TxSlot& t, const wire::GatherFrame& g) {
    std::uint8_t* out = t.buf;
    std::memcpy(out, g.header.data(), g.header_len);
    out += g.header_len;
    for (std::size_t k = 0; k < g.segment_count; ++k) {
        if (g.segments[k].len != 0) std::memcpy(out, g.segments[k].data, g.segments[k].len);
        out += g.segments[k].len;
    }
    std::memcpy(out, g.tail.data(), g.tail_len);
    t.iov = {t.buf, g.size()};
    t.msg = {};  // no address: the socket is bound to the plane's interface
    t.msg.msg_iov = &t.iov;
    t.msg.msg_iovlen = 1;
    return sockets[g.plane].fd;
}

int UdpDriver::Impl::fill_plain(TxSlot& t, const wire::GatherFrame& g, const TxMeta& m) {
    const std::size_t n = copy_udp_payload(g, std::span(t.buf, kMaxDatagramBytes));
    t.iov = {t.buf, n};
    t.to = {};
    t.to.sin6_family = AF_INET6;
    t.to.sin6_port = htons(m.dst_port);
    t.to.sin6_flowinfo = htonl(m.flow_label);
    std::memcpy(&t.to.sin6_addr, m.dst.data(), 16);
    t.msg = {};
    t.msg.msg_name = &t.to;
    t.msg.msg_namelen = sizeof(t.to);
    t.msg.msg_iov = &t.iov;
    t.msg.msg_iovlen = 1;
    t.msg.msg_control = t.control;
    t.msg.msg_controllen = sizeof(t.control);
    cmsghdr* cm = CMSG_FIRSTHDR(&t.msg);
    const int tclass = m.traffic_class, hops = m.hop_limit;
    cm->cmsg_level = IPPROTO_IPV6;
    cm->cmsg_type = IPV6_TCLASS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &tclass, sizeof(int));
    cm = CMSG_NXTHDR(&t.msg, cm);
    cm->cmsg_level = IPPROTO_IPV6;
    cm->cmsg_type = IPV6_HOPLIMIT;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cm), &hops, sizeof(int));
    // The source port (the socket of the block) carries EV bits.
    return sockets[g.plane * kSocketsPerPlane + m.src_index].fd;
}

// ---------------------------------------------------------------------------

std::size_t UdpDriver::rx_burst(std::span<driver::RxFrame> out, std::uint64_t now_ns) {
    Impl& d = *impl_;
    // The frames of the last burst are no longer referenced: post their buffers again.
    d.rearm.insert(d.rearm.end(), d.delivered.begin(), d.delivered.end());
    d.delivered.clear();
    d.reap();
    d.probe_links(now_ns);
    d.rearm_pending();
    if (io_uring_sq_ready(&d.ring) > 0) {
        d.submit();
        d.reap();  // receives that found data at once completed during submit
    }
    d.update_link_events();
    std::size_t n = 0;
    while (n < out.size() && !d.ready.empty()) {
        const std::uint32_t i = d.ready.front();
        d.ready.pop_front();
        const RxSlot& r = d.rx[i];
        out[n++] = {r.buf, r.len, static_cast<std::uint8_t>(d.sockets[r.socket].plane)};
        ++d.c.rx_frames;
        d.c.rx_bytes += r.len;
        d.delivered.push_back(i);
    }
    return n;
}

std::size_t UdpDriver::tx_burst(std::span<const wire::GatherFrame> frames, std::uint64_t) {
    Impl& d = *impl_;
    d.reap();
    std::size_t accepted = 0, queued = 0;
    for (const wire::GatherFrame& g : frames) {
        TxMeta m;
        // Checks first: a frame dropped here is accepted (consumed) and counted.
        if (!d.tx_drop(g, m)) {
            // No send slot or no submission entry: refuse the rest of the burst.
            if (d.tx_free.empty()) break;
            io_uring_sqe* s = d.sqe();
            if (s == nullptr) break;
            const std::uint32_t i = d.tx_free.back();
            d.tx_free.pop_back();
            TxSlot& t = d.tx[i];
            t.plane = g.plane;
            const int fd = d.raw ? d.fill_raw(t, g) : d.fill_plain(t, g, m);
            io_uring_prep_sendmsg(s, fd, &t.msg, 0);
            io_uring_sqe_set_data64(s, tag(kKindTx, i));
            ++d.inflight;
            ++queued;
            ++d.c.tx_frames;
            d.c.tx_bytes += g.size();
        }
        ++accepted;
    }
    if (accepted < frames.size()) ++d.c.tx_backpressure;
    if (queued > 0 || io_uring_sq_ready(&d.ring) > 0) d.submit();
    d.released += accepted;  // the payload was copied: nothing is referenced any more
    return accepted;
}

std::uint64_t UdpDriver::tx_release_count() const { return impl_->released; }

}  // namespace omrc::udp
