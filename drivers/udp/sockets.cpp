// SPDX-License-Identifier: BSD-3-Clause
// The udp driver's sockets, ring and slots: opening (plain: blocks of
// kSocketsPerPlane UDP sockets per plane; srv6: one AF_PACKET socket per
// interface) and closing.
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <random>

#include "drivers/udp/udp_impl.hpp"

namespace omrc::udp {

namespace {

std::uint32_t next_pow2(std::uint32_t v) {
    std::uint32_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

/// SO_RCVBUF and SO_SNDBUF of `bytes`: larger buffers absorb bursts; root
/// may exceed net.core.[rw]mem_max (the FORCE options), others get the cap.
void set_buffers(int fd, int bytes) {
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
        (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
        (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
}

}  // namespace

UdpDriver::Impl::~Impl() {
    if (ring_ok) {
        // The kernel may still write into receive buffers of posted
        // requests: cancel them all and wait for their completions
        // before the buffers are freed.
        if (io_uring_sqe* s = sqe()) {
            io_uring_prep_cancel64(s, 0, IORING_ASYNC_CANCEL_ANY);
            io_uring_sqe_set_data64(s, tag(kKindCancel, 0));
        }
        submit();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (inflight > 0 && std::chrono::steady_clock::now() < deadline) {
            __kernel_timespec ts{0, 10'000'000};
            io_uring_cqe* cqe = nullptr;
            if (io_uring_wait_cqe_timeout(&ring, &cqe, &ts) == 0 && cqe != nullptr) {
                if ((io_uring_cqe_get_data64(cqe) >> 56) != kKindCancel) --inflight;
                io_uring_cqe_seen(&ring, cqe);
            }
        }
        if (inflight > 0) log::logger().error("udp: {} requests still in flight at close", inflight);
        io_uring_queue_exit(&ring);
    }
    for (Socket& s : sockets)
        if (s.fd >= 0) ::close(s.fd);
    std::free(rx_mem);
    std::free(tx_mem);
}

int UdpDriver::Impl::open_plane_sockets(std::uint32_t p, std::uint16_t base, std::string& error) {
    const int one = 1, zero = 0;
    const int buf = static_cast<int>(std::min<std::uint32_t>(cfg.sock_buf_bytes, INT32_MAX / 2));
    for (std::uint32_t i = 0; i < kSocketsPerPlane; ++i) {
        Socket& s = sockets[p * kSocketsPerPlane + i];
        s.plane = p;
        s.port = static_cast<std::uint16_t>(base + i);
        s.fd = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s.fd < 0) {
            error = fmt::format("socket: {}", std::strerror(errno));
            return errno;
        }
        struct Opt {
            int level, name;
            const int* value;
            const char* what;
        };
        const Opt opts[] = {
            {IPPROTO_IPV6, IPV6_V6ONLY, &one, "IPV6_V6ONLY"},
            {IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, "IPV6_RECVPKTINFO"},
            {IPPROTO_IPV6, IPV6_RECVTCLASS, &one, "IPV6_RECVTCLASS"},
            {IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, "IPV6_RECVHOPLIMIT"},
            {IPPROTO_IPV6, IPV6_FLOWINFO, &one, "IPV6_FLOWINFO"},
            {IPPROTO_IPV6, IPV6_FLOWINFO_SEND, &one, "IPV6_FLOWINFO_SEND"},
            // A zero flow label must stay zero: it carries EV bits.
            {IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, &zero, "IPV6_AUTOFLOWLABEL"},
            {SOL_SOCKET, SO_RXQ_OVFL, &one, "SO_RXQ_OVFL"},
        };
        for (const Opt& o : opts)
            if (::setsockopt(s.fd, o.level, o.name, o.value, sizeof(int)) != 0) {
                error = fmt::format("setsockopt {}: {}", o.what, std::strerror(errno));
                return errno;
            }
        set_buffers(s.fd, buf);
        // Workers: the queues' sockets of a port form one SO_REUSEPORT group
        // (steering.cpp), joined in queue order.
        if (cfg.queues > 1 && ::setsockopt(s.fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
            error = fmt::format("setsockopt SO_REUSEPORT: {}", std::strerror(errno));
            return errno;
        }
        sockaddr_in6 sa{};
        sa.sin6_family = AF_INET6;
        std::memcpy(&sa.sin6_addr, addr.data(), 16);
        sa.sin6_port = htons(s.port);
        if (::bind(s.fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) {
            const int e = errno;
            error = fmt::format("bind port {}: {}", s.port, std::strerror(e));
            return e;
        }
    }
    return 0;
}

int UdpDriver::Impl::open_sockets(std::string& error) {
    sockets.assign(planes.size() * kSocketsPerPlane, Socket{});
    std::random_device rd;
    std::uniform_int_distribution<std::uint32_t> pick(20000 / kSocketsPerPlane, 60000 / kSocketsPerPlane);
    for (std::uint32_t p = 0; p < planes.size(); ++p) {
        const std::uint16_t given = cfg.planes[p].base_port;
        int rc = 0;
        for (int attempt = 0; attempt < 64; ++attempt) {
            const auto base = given != 0 ? given : static_cast<std::uint16_t>(pick(rd) * kSocketsPerPlane);
            rc = open_plane_sockets(p, base, error);
            if (rc == 0) {
                planes[p].base_port = base;
                break;
            }
            for (std::uint32_t i = 0; i < kSocketsPerPlane; ++i) {
                Socket& s = sockets[p * kSocketsPerPlane + i];
                if (s.fd >= 0) ::close(s.fd);
                s.fd = -1;
            }
            if (given != 0 || rc != EADDRINUSE) break;
        }
        if (rc != 0) {
            error = fmt::format("plane {}: {}", p, error);
            // A port another socket holds: the open contract's EBUSY (driver/registry.hpp).
            return rc == EADDRINUSE ? EBUSY : rc;
        }
        planes[p].mac = plane_mac(planes[p].base_port, p);
    }
    return 0;
}

int UdpDriver::Impl::open_raw_sockets(std::string& error) {
    const int one = 1;
    const int buf = static_cast<int>(std::min<std::uint32_t>(cfg.sock_buf_bytes, INT32_MAX / 2));
    sockets.assign(planes.size(), Socket{});
    ignore_outgoing = true;
    for (std::uint32_t p = 0; p < planes.size(); ++p) {
        Socket& s = sockets[p];
        Plane& pl = planes[p];
        s.plane = p;
        pl.iface = cfg.ifaces[p];
        s.fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_IPV6));
        if (s.fd < 0) {
            const int e = errno;
            if (e == EPERM || e == EACCES) {
                error = "srv6 mode needs CAP_NET_RAW for its AF_PACKET sockets (run as root or grant "
                        "cap_net_raw)";
                return EPERM;
            }
            error = fmt::format("socket(AF_PACKET): {}", std::strerror(e));
            return e;
        }
        s.ifindex = static_cast<int>(::if_nametoindex(pl.iface.c_str()));
        if (s.ifindex == 0) {
            error = fmt::format("plane {}: no interface {}", p, pl.iface);
            return ENODEV;
        }
        ifreq ifr{};
        std::memcpy(ifr.ifr_name, pl.iface.data(), std::min(pl.iface.size(), std::size_t{IFNAMSIZ - 1}));
        if (::ioctl(s.fd, SIOCGIFHWADDR, &ifr) != 0) {
            const int e = errno;
            error = fmt::format("plane {}: SIOCGIFHWADDR {}: {}", p, pl.iface, std::strerror(e));
            return e;
        }
        if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
            error = fmt::format("plane {}: {} is not an Ethernet interface", p, pl.iface);
            return EINVAL;
        }
        std::memcpy(pl.mac.data(), ifr.ifr_hwaddr.sa_data, 6);
        // Our own sends are not received (kernel ≥ 4.20; else dropped by pkttype).
        if (::setsockopt(s.fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) != 0) ignore_outgoing = false;
        set_buffers(s.fd, buf);
        sockaddr_ll ll{};
        ll.sll_family = AF_PACKET;
        ll.sll_protocol = htons(ETH_P_IPV6);
        ll.sll_ifindex = s.ifindex;
        if (::bind(s.fd, reinterpret_cast<const sockaddr*>(&ll), sizeof ll) != 0) {
            const int e = errno;
            error = fmt::format("plane {}: bind to {}: {}", p, pl.iface, std::strerror(e));
            return e;
        }
        if (cfg.queues > 1)
            if (const int e = join_fanout(s, error); e != 0) return e;
        pl.oper_up = pl.reported_up = read_iface_up(p);
        if (!pl.oper_up) log::logger().warn("udp: plane {} ({}) is down at open", p, pl.iface);
    }
    if (!ignore_outgoing) log::logger().info("udp: no PACKET_IGNORE_OUTGOING; own sends are dropped by type");
    return 0;
}

int UdpDriver::Impl::open_ring(std::string& error) {
    const auto rx_slots = static_cast<std::uint32_t>(sockets.size() * cfg.rx_depth);
    io_uring_params params{};
    params.flags = IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
    // Every request in flight can complete at once: size the CQ for all of them.
    params.cq_entries = next_pow2(rx_slots + cfg.tx_slots + static_cast<std::uint32_t>(planes.size()) + 16);
    const std::uint32_t sq = cfg.ring_entries != 0 ? cfg.ring_entries : std::min<std::uint32_t>(1024, next_pow2(cfg.tx_slots));
    int rc = io_uring_queue_init_params(sq, &ring, &params);
    if (rc == -EINVAL) {  // kernels before 5.19: no cooperative task running
        params = {};
        params.flags = IORING_SETUP_CQSIZE;
        params.cq_entries = next_pow2(rx_slots + cfg.tx_slots + static_cast<std::uint32_t>(planes.size()) + 16);
        rc = io_uring_queue_init_params(sq, &ring, &params);
    }
    if (rc < 0) {
        error = fmt::format("io_uring_queue_init: {}", std::strerror(-rc));
        return -rc;
    }
    ring_ok = true;

    rx_mem = static_cast<std::uint8_t*>(std::aligned_alloc(64, std::size_t{rx_slots} * kSlotBytes));
    tx_mem = static_cast<std::uint8_t*>(std::aligned_alloc(64, std::size_t{cfg.tx_slots} * kSlotBytes));
    if (rx_mem == nullptr || tx_mem == nullptr) {
        error = "out of memory for buffers";
        return ENOMEM;
    }
    rx.resize(rx_slots);
    for (std::uint32_t i = 0; i < rx_slots; ++i) {
        rx[i].buf = rx_mem + std::size_t{i} * kSlotBytes;
        rx[i].socket = i / cfg.rx_depth;
        rearm.push_back(i);
    }
    tx.resize(cfg.tx_slots);
    tx_free.reserve(cfg.tx_slots);
    for (std::uint32_t i = 0; i < cfg.tx_slots; ++i) {
        tx[i].buf = tx_mem + std::size_t{i} * kSlotBytes;
        tx_free.push_back(cfg.tx_slots - 1 - i);
    }
    rearm_pending();
    submit();
    return 0;
}

UdpDriver::UdpDriver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
UdpDriver::~UdpDriver() = default;

int UdpDriver::open(const UdpConfig& config, std::unique_ptr<UdpDriver>& out, std::string& error) {
    if (config.planes.empty() || config.planes.size() > core::kMaxPlanes) {
        error = "1..15 planes";
        return EINVAL;
    }
    if (config.queues == 0 || config.queues > 16 || config.queue >= config.queues) {
        error = "queue must be below queues, 1..16 queues";
        return EINVAL;
    }
    auto impl = std::make_unique<Impl>();
    impl->cfg = config;
    impl->addr = config.planes[0].addr;
    impl->planes.resize(config.planes.size());
    for (auto& a : impl->admin_up) a.store(true, std::memory_order_relaxed);
    impl->raw = config.raw();
    if (impl->raw) {
        if (config.ifaces.size() != config.planes.size()) {
            error = "one interface per plane";
            return EINVAL;
        }
        if (int rc = impl->open_raw_sockets(error)) return rc;
        static constexpr wire::Ipv6Addr kUnset{};
        if (impl->addr == kUnset) {
            // No address given: a ULA from plane 0's MAC, fd00::<mac>.
            impl->addr = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0};
            std::copy(impl->planes[0].mac.begin(), impl->planes[0].mac.end(), impl->addr.begin() + 10);
        }
    } else if (int rc = impl->open_sockets(error)) {
        return rc;
    }
    if (int rc = impl->attach_steering(error)) return rc;
    if (int rc = impl->open_ring(error)) return rc;
    out.reset(new UdpDriver(std::move(impl)));
    return 0;
}

}  // namespace omrc::udp
