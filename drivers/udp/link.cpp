// SPDX-License-Identifier: BSD-3-Clause
// The udp driver's link state. A plane is up while it is administratively
// up (set_admin_link, any thread) and operationally up: plain mode takes a
// plane down on an error of its sockets and brings it back when a
// zero-length self-probe from its first socket arrives; srv6 mode follows
// the interface's IFF_UP and IFF_RUNNING, polled every link_poll_us.
#include <net/if.h>
#include <sys/ioctl.h>

#include "drivers/udp/udp_impl.hpp"

namespace omrc::udp {

void UdpDriver::Impl::plane_down(std::uint32_t p, int err) {
    if (raw) return;  // raw mode: the interface flags decide (poll_iface_flags)
    if (!planes[p].oper_up) return;
    planes[p].oper_up = false;
    log::logger().warn("udp: plane {} down: {}", p, std::strerror(err));
}

void UdpDriver::Impl::plane_up(std::uint32_t p) {
    if (planes[p].oper_up) return;
    planes[p].oper_up = true;
    for (std::uint32_t i : planes[p].parked) rearm.push_back(i);
    planes[p].parked.clear();
    log::logger().info("udp: plane {} up", p);
}

bool UdpDriver::Impl::read_iface_up(std::uint32_t p) {
    ++c.link_polls;
    ifreq ifr{};
    const std::string& name = planes[p].iface;
    std::memcpy(ifr.ifr_name, name.data(), std::min(name.size(), std::size_t{IFNAMSIZ - 1}));
    if (::ioctl(sockets[p].fd, SIOCGIFFLAGS, &ifr) != 0) return false;  // ENODEV: the interface is gone
    const auto flags = static_cast<unsigned>(static_cast<unsigned short>(ifr.ifr_flags));
    return (flags & IFF_UP) != 0 && (flags & IFF_RUNNING) != 0;
}

void UdpDriver::Impl::poll_iface_flags(std::uint64_t now_ns) {
    if (link_polled && now_ns - last_link_poll_ns < std::uint64_t{cfg.link_poll_us} * 1000) return;
    link_polled = true;
    last_link_poll_ns = now_ns;
    for (std::uint32_t p = 0; p < planes.size(); ++p) {
        Plane& pl = planes[p];
        const bool now_up = read_iface_up(p);
        // Frames the kernel dropped on a full socket buffer (read and reset).
        tpacket_stats st{};
        socklen_t st_len = sizeof st;
        if (::getsockopt(sockets[p].fd, SOL_PACKET, PACKET_STATISTICS, &st, &st_len) == 0)
            c.rx_socket_overflow += st.tp_drops;
        if (now_up != pl.oper_up) {
            pl.oper_up = now_up;
            log::logger().info("udp: plane {} ({}) {}", p, pl.iface, now_up ? "up" : "down");
        }
        // Receives parked after a socket error (ENETDOWN when the interface
        // went down) are posted again while the interface is up.
        if (now_up) {
            for (std::uint32_t i : pl.parked) rearm.push_back(i);
            pl.parked.clear();
        }
    }
}

void UdpDriver::Impl::probe_links(std::uint64_t now_ns) {
    if (raw) return poll_iface_flags(now_ns);
    const std::uint64_t period_ns = std::uint64_t{cfg.link_probe_ms} * 1'000'000;
    for (std::uint32_t p = 0; p < planes.size(); ++p) {
        Plane& pl = planes[p];
        if (pl.oper_up || pl.probe_inflight || now_ns - pl.last_probe_ns < period_ns) continue;
        pl.last_probe_ns = now_ns;
        // Give the parked receives another chance: the probe must be received.
        for (std::uint32_t i : pl.parked) rearm.push_back(i);
        pl.parked.clear();
        io_uring_sqe* s = sqe();
        if (s == nullptr) continue;
        pl.probe_to = {};
        pl.probe_to.sin6_family = AF_INET6;
        std::memcpy(&pl.probe_to.sin6_addr, addr.data(), 16);
        pl.probe_to.sin6_port = htons(pl.base_port);
        pl.probe_msg = {};
        pl.probe_msg.msg_name = &pl.probe_to;
        pl.probe_msg.msg_namelen = sizeof(pl.probe_to);
        if (cfg.queues > 1) {
            // The port's group steers a probe by its one byte: back to this queue.
            pl.probe_byte = static_cast<std::uint8_t>(cfg.queue);
            pl.probe_iov = {&pl.probe_byte, 1};
            pl.probe_msg.msg_iov = &pl.probe_iov;
            pl.probe_msg.msg_iovlen = 1;
        }
        io_uring_prep_sendmsg(s, sockets[p * kSocketsPerPlane].fd, &pl.probe_msg, 0);
        io_uring_sqe_set_data64(s, tag(kKindProbe, p));
        ++inflight;
        pl.probe_inflight = true;
    }
}

void UdpDriver::Impl::update_link_events() {
    for (std::uint32_t p = 0; p < planes.size(); ++p) {
        const bool now_up = up(p);
        if (now_up == planes[p].reported_up) continue;
        planes[p].reported_up = now_up;
        ++c.link_changes;
        if (events.size() < 4 * core::kMaxPlanes) events.push_back({static_cast<std::uint8_t>(p), now_up});
    }
}

std::size_t UdpDriver::poll_link_events(std::span<driver::LinkEvent> out) {
    Impl& d = *impl_;
    std::size_t n = 0;
    while (n < out.size() && !d.events.empty()) {
        out[n++] = d.events.front();
        d.events.pop_front();
    }
    return n;
}

bool UdpDriver::link_up(std::uint32_t plane) const { return plane < impl_->planes.size() && impl_->up(plane); }

void UdpDriver::set_admin_link(std::uint32_t plane, bool up) {
    if (plane < impl_->planes.size()) impl_->admin_up[plane].store(up, std::memory_order_relaxed);
}

}  // namespace omrc::udp
