// SPDX-License-Identifier: BSD-3-Clause
// The udp driver's data path: sockets, one io_uring, receive and send slots.
#include <liburing.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <random>

#include "drivers/udp/udp.hpp"
#include "log/log.hpp"

// Linux IPv6 options glibc does not declare (linux/in6.h values, stable ABI).
#ifndef IPV6_FLOWINFO
#define IPV6_FLOWINFO 11
#endif
#ifndef IPV6_FLOWINFO_SEND
#define IPV6_FLOWINFO_SEND 33
#endif
#ifndef IPV6_AUTOFLOWLABEL
#define IPV6_AUTOFLOWLABEL 70
#endif
#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23  // linux/if_packet.h, kernel 4.20
#endif

namespace omrc::udp {

namespace {

constexpr std::size_t kSlotBytes = kPlainHeaderBytes + kMaxDatagramBytes + 2;  // 4608: 64-byte multiple
static_assert(kSlotBytes % 64 == 0);
static_assert(kRawMaxFrameBytes <= kSlotBytes);
constexpr std::size_t kEthIpv6Bytes = 14 + 40;
// pktinfo + tclass + flowinfo + hoplimit + rxq_ovfl, with room to spare.
constexpr std::size_t kRxControlBytes = 256;
constexpr std::size_t kTxControlBytes = 2 * CMSG_SPACE(sizeof(int));

enum : std::uint64_t { kKindRx = 1, kKindTx = 2, kKindProbe = 3, kKindCancel = 4 };
constexpr std::uint64_t tag(std::uint64_t kind, std::uint64_t index) { return (kind << 56) | index; }

struct Socket {
    int fd = -1;
    int ifindex = 0;  ///< raw mode
    std::uint32_t plane = 0;
    std::uint16_t port = 0;
    std::uint32_t overflow_seen = 0;  ///< last SO_RXQ_OVFL value
};

struct RxSlot {
    std::uint8_t* buf = nullptr;  ///< kSlotBytes: headroom for the rebuilt headers, then the datagram
    msghdr msg{};
    iovec iov{};
    sockaddr_in6 from{};
    sockaddr_ll from_ll{};  ///< raw mode
    alignas(cmsghdr) std::uint8_t control[kRxControlBytes]{};
    std::uint32_t socket = 0;
    std::uint32_t len = 0;  ///< rebuilt frame bytes while ready
};

struct TxSlot {
    std::uint8_t* buf = nullptr;  ///< the datagram
    msghdr msg{};
    iovec iov{};
    sockaddr_in6 to{};
    alignas(cmsghdr) std::uint8_t control[kTxControlBytes]{};
    std::uint32_t plane = 0;
};

struct Plane {
    std::uint16_t base_port = 0;
    wire::MacAddr mac{};
    bool oper_up = true;
    bool reported_up = true;
    bool probe_inflight = false;
    std::uint64_t last_probe_ns = 0;
    msghdr probe_msg{};
    sockaddr_in6 probe_to{};
    std::vector<std::uint32_t> parked;  ///< receive slots not re-armed after a socket error
    std::string iface;                  ///< raw mode
};

bool socket_level_error(int err) {
    switch (err) {
        case ENETDOWN:
        case EADDRNOTAVAIL:
        case ENODEV:
        case ENXIO:
        case EBADF:
        case ENOTSOCK:
        case EINVAL:
        case EPIPE:
            return true;
        default:
            return false;
    }
}

std::uint32_t next_pow2(std::uint32_t v) {
    std::uint32_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

}  // namespace

struct UdpDriver::Impl {
    UdpConfig cfg;
    wire::Ipv6Addr addr{};
    io_uring ring{};
    bool ring_ok = false;
    std::vector<Socket> sockets;  ///< plane-major: plane p, index i at p·16 + i
    std::vector<Plane> planes;
    std::array<std::atomic<bool>, core::kMaxPlanes> admin_up{};

    std::uint8_t* rx_mem = nullptr;
    std::uint8_t* tx_mem = nullptr;
    std::vector<RxSlot> rx;
    std::vector<TxSlot> tx;
    std::vector<std::uint32_t> tx_free;
    std::vector<std::uint32_t> rearm;      ///< receive slots to post again
    std::vector<std::uint32_t> delivered;  ///< handed out by the last rx_burst
    std::deque<std::uint32_t> ready;       ///< receive slots holding a rebuilt frame
    std::deque<driver::LinkEvent> events;
    std::uint64_t released = 0;
    std::uint64_t inflight = 0;  ///< requests submitted or queued whose completion was not reaped
    UdpCounters c{};
    bool raw = false;
    bool ignore_outgoing = false;       ///< raw: PACKET_IGNORE_OUTGOING took effect
    std::uint64_t last_link_poll_ns = 0;
    bool link_polled = false;

    ~Impl() {
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

    int open_plane_sockets(std::uint32_t p, std::uint16_t base, std::string& error);
    int open_sockets(std::string& error);
    int open_ring(std::string& error);
    int open_raw_sockets(std::string& error);
    /// Raw mode: the interface's IFF_UP && IFF_RUNNING (false when it is gone).
    bool read_iface_up(std::uint32_t p);
    void poll_iface_flags(std::uint64_t now_ns);
    void on_rx_raw(std::uint32_t i, int res);

    io_uring_sqe* sqe() {
        io_uring_sqe* s = io_uring_get_sqe(&ring);
        if (s == nullptr) {
            submit();
            s = io_uring_get_sqe(&ring);
        }
        return s;
    }
    void submit() {
        ++c.submits;
        const int rc = io_uring_submit(&ring);
        if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR)
            log::logger().error("udp: io_uring_submit: {}", std::strerror(-rc));
    }
    bool arm_rx(std::uint32_t i) {
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
    void rearm_pending() {
        std::size_t k = 0;
        for (; k < rearm.size(); ++k)
            if (!arm_rx(rearm[k])) break;
        rearm.erase(rearm.begin(), rearm.begin() + static_cast<std::ptrdiff_t>(k));
    }
    void plane_down(std::uint32_t p, int err) {
        if (raw) return;  // raw mode: the interface flags decide (poll_iface_flags)
        if (!planes[p].oper_up) return;
        planes[p].oper_up = false;
        log::logger().warn("udp: plane {} down: {}", p, std::strerror(err));
    }
    void plane_up(std::uint32_t p) {
        if (planes[p].oper_up) return;
        planes[p].oper_up = true;
        for (std::uint32_t i : planes[p].parked) rearm.push_back(i);
        planes[p].parked.clear();
        log::logger().info("udp: plane {} up", p);
    }
    [[nodiscard]] bool up(std::uint32_t p) const {
        return planes[p].oper_up && admin_up[p].load(std::memory_order_relaxed);
    }

    void reap();
    void on_rx(std::uint32_t i, int res);
    void on_tx(std::uint32_t i, int res);
    void probe_links(std::uint64_t now_ns);
    void update_link_events();
};

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
        // Larger buffers absorb bursts; root may exceed net.core.[rw]mem_max.
        if (::setsockopt(s.fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) != 0)
            (void)::setsockopt(s.fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
        if (::setsockopt(s.fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf) != 0)
            (void)::setsockopt(s.fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
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
        if (::setsockopt(s.fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) != 0)
            (void)::setsockopt(s.fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
        if (::setsockopt(s.fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf) != 0)
            (void)::setsockopt(s.fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
        sockaddr_ll ll{};
        ll.sll_family = AF_PACKET;
        ll.sll_protocol = htons(ETH_P_IPV6);
        ll.sll_ifindex = s.ifindex;
        if (::bind(s.fd, reinterpret_cast<const sockaddr*>(&ll), sizeof ll) != 0) {
            const int e = errno;
            error = fmt::format("plane {}: bind to {}: {}", p, pl.iface, std::strerror(e));
            return e;
        }
        pl.oper_up = pl.reported_up = read_iface_up(p);
        if (!pl.oper_up) log::logger().warn("udp: plane {} ({}) is down at open", p, pl.iface);
    }
    if (!ignore_outgoing) log::logger().info("udp: no PACKET_IGNORE_OUTGOING; own sends are dropped by type");
    return 0;
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

void UdpDriver::Impl::on_rx_raw(std::uint32_t i, int res) {
    RxSlot& r = rx[i];
    const std::uint32_t p = sockets[r.socket].plane;
    if (res < 0) {
        if (res == -EINTR || res == -EAGAIN || res == -ECANCELED) {
            rearm.push_back(i);
            return;
        }
        ++c.rx_errors;
        planes[p].parked.push_back(i);  // posted again by poll_iface_flags while the interface is up
        return;
    }
    rearm.push_back(i);  // undone below when the frame is kept
    if (r.msg.msg_flags & MSG_TRUNC) return void(++c.rx_truncated);
    const auto len = static_cast<std::size_t>(res);
    if (r.msg.msg_namelen >= sizeof(sockaddr_ll) && r.from_ll.sll_pkttype == PACKET_OUTGOING)
        return void(++c.rx_outgoing);
    if (len < kEthIpv6Bytes) return void(++c.rx_short);
    const std::uint8_t* f = r.buf;
    if (f[12] != 0x86 || f[13] != 0xDD || (f[14] >> 4) != 6) return void(++c.rx_not_ipv6);
    if (f[0] & 1) return void(++c.rx_multicast);  // group bit: multicast and broadcast
    if (!std::equal(f, f + 6, planes[p].mac.begin())) return void(++c.rx_other_mac);
    // Outer next header: ICMPv6 (neighbour discovery, errors) or hop-by-hop (MLD).
    if (f[20] == 58 || f[20] == 0) return void(++c.rx_kernel_noise);
    if (len < kEthIpv6Bytes + 8 + kMinDatagramBytes) return void(++c.rx_short);
    if (!admin_up[p].load(std::memory_order_relaxed)) return void(++c.rx_link_down);
    rearm.pop_back();
    r.len = static_cast<std::uint32_t>(len);
    ready.push_back(i);
}

void UdpDriver::Impl::on_rx(std::uint32_t i, int res) {
    if (raw) return on_rx_raw(i, res);
    RxSlot& r = rx[i];
    const Socket& s = sockets[r.socket];
    const std::uint32_t p = s.plane;
    if (res < 0) {
        if (res == -EINTR || res == -EAGAIN || res == -ECANCELED || res == -ECONNREFUSED) {
            rearm.push_back(i);
            return;
        }
        ++c.rx_errors;
        if (socket_level_error(-res)) {
            plane_down(p, -res);
            planes[p].parked.push_back(i);
        } else {
            rearm.push_back(i);
        }
        return;
    }
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
    rearm.push_back(i);  // undone below when the frame is kept
    if (r.msg.msg_flags & MSG_TRUNC) return void(++c.rx_truncated);
    if (r.msg.msg_flags & MSG_CTRUNC) return void(++c.rx_ctrl_truncated);
    if (r.msg.msg_namelen < sizeof(sockaddr_in6) || r.from.sin6_family != AF_INET6) return void(++c.rx_bad_family);
    std::memcpy(m.src.data(), &r.from.sin6_addr, 16);
    m.src_port = ntohs(r.from.sin6_port);
    if (res == 0 && m.src == addr && m.src_port == planes[p].base_port) {
        ++c.rx_self_probes;
        plane_up(p);
        return;
    }
    if (static_cast<std::size_t>(res) < kMinDatagramBytes) return void(++c.rx_short);
    if (!have_dst) return void(++c.rx_no_pktinfo);
    if (!admin_up[p].load(std::memory_order_relaxed)) return void(++c.rx_link_down);
    rearm.pop_back();
    write_rx_headers(std::span<std::uint8_t, kPlainHeaderBytes>(r.buf, kPlainHeaderBytes), m,
                     static_cast<std::size_t>(res));
    r.len = static_cast<std::uint32_t>(kPlainHeaderBytes + static_cast<std::size_t>(res));
    ready.push_back(i);
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

// ---------------------------------------------------------------------------

UdpDriver::UdpDriver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
UdpDriver::~UdpDriver() = default;

int UdpDriver::open(const UdpConfig& config, std::unique_ptr<UdpDriver>& out, std::string& error) {
    if (config.planes.empty() || config.planes.size() > core::kMaxPlanes) {
        error = "1..15 planes";
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
    if (int rc = impl->open_ring(error)) return rc;
    out.reset(new UdpDriver(std::move(impl)));
    return 0;
}

bool UdpDriver::raw() const { return impl_->raw; }

std::uint32_t UdpDriver::planes() const { return static_cast<std::uint32_t>(impl_->planes.size()); }

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
        // Checks first: a frame dropped here is accepted (consumed) and counted.
        if (g.plane >= d.planes.size()) {
            ++d.c.tx_bad_plane;
        } else if (!d.up(g.plane)) {
            ++d.c.tx_link_down;
        } else if (d.raw) {
            // The engine's Ethernet frame goes out as it is.
            const std::size_t n = g.size();
            if (n < kEthIpv6Bytes || g.header_len < kEthIpv6Bytes || g.header[12] != 0x86 || g.header[13] != 0xDD) {
                ++d.c.tx_bad_frame;
            } else if (n > kRawMaxFrameBytes) {
                ++d.c.tx_too_large;
            } else {
                if (d.tx_free.empty()) break;
                io_uring_sqe* s = d.sqe();
                if (s == nullptr) break;
                const std::uint32_t i = d.tx_free.back();
                d.tx_free.pop_back();
                TxSlot& t = d.tx[i];
                t.plane = g.plane;
                std::uint8_t* out = t.buf;
                std::memcpy(out, g.header.data(), g.header_len);
                out += g.header_len;
                for (std::size_t k = 0; k < g.segment_count; ++k) {
                    if (g.segments[k].len != 0) std::memcpy(out, g.segments[k].data, g.segments[k].len);
                    out += g.segments[k].len;
                }
                std::memcpy(out, g.tail.data(), g.tail_len);
                t.iov = {t.buf, n};
                t.msg = {};  // no address: the socket is bound to the plane's interface
                t.msg.msg_iov = &t.iov;
                t.msg.msg_iovlen = 1;
                io_uring_prep_sendmsg(s, d.sockets[g.plane].fd, &t.msg, 0);
                io_uring_sqe_set_data64(s, tag(kKindTx, i));
                ++d.inflight;
                ++queued;
                ++d.c.tx_frames;
                d.c.tx_bytes += n;
            }
        } else {
            TxMeta m;
            const TxParse pr = parse_tx(g, m);
            const std::size_t dgram = g.size() >= kPlainHeaderBytes ? g.size() - kPlainHeaderBytes : 0;
            if (pr == TxParse::bad_frame) {
                ++d.c.tx_bad_frame;
            } else if (pr == TxParse::bad_peer_mac) {
                ++d.c.tx_bad_peer_mac;
            } else if (pr == TxParse::ev_plane) {
                ++d.c.tx_ev_plane;
            } else if (m.src != d.addr) {
                ++d.c.tx_bad_source;
            } else if (dgram > kMaxDatagramBytes) {
                ++d.c.tx_too_large;
            } else {
                if (d.tx_free.empty()) break;
                io_uring_sqe* s = d.sqe();
                if (s == nullptr) break;
                const std::uint32_t i = d.tx_free.back();
                d.tx_free.pop_back();
                TxSlot& t = d.tx[i];
                t.plane = g.plane;
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
                io_uring_prep_sendmsg(s, d.sockets[g.plane * kSocketsPerPlane + m.src_index].fd, &t.msg, 0);
                io_uring_sqe_set_data64(s, tag(kKindTx, i));
                ++d.inflight;
                ++queued;
                ++d.c.tx_frames;
                d.c.tx_bytes += g.size();
            }
        }
        ++accepted;
    }
    if (accepted < frames.size()) ++d.c.tx_backpressure;
    if (queued > 0 || io_uring_sq_ready(&d.ring) > 0) d.submit();
    d.released += accepted;  // the payload was copied: nothing is referenced any more
    return accepted;
}

std::uint64_t UdpDriver::tx_release_count() const { return impl_->released; }

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

driver::DriverStats UdpDriver::stats() const {
    const UdpCounters& c = impl_->c;
    driver::DriverStats s;
    s.rx_frames = c.rx_frames;
    s.tx_frames = c.tx_frames;
    s.rx_bytes = c.rx_bytes;
    s.tx_bytes = c.tx_bytes;
    s.tx_dropped_link_down = c.tx_link_down;
    s.tx_dropped_full = c.tx_err_nobufs;
    s.rx_dropped_full = c.rx_socket_overflow;
    return s;
}

void UdpDriver::set_admin_link(std::uint32_t plane, bool up) {
    if (plane < impl_->planes.size()) impl_->admin_up[plane].store(up, std::memory_order_relaxed);
}

UdpCounters UdpDriver::udp_counters() const { return impl_->c; }

void UdpDriver::counters(std::vector<std::pair<std::string, std::uint64_t>>& out) const {
    const UdpCounters& c = impl_->c;
#define OMRC_UDP_COUNTER(f) out.emplace_back(#f, c.f)
    OMRC_UDP_COUNTER(rx_frames); OMRC_UDP_COUNTER(rx_bytes); OMRC_UDP_COUNTER(rx_short);
    OMRC_UDP_COUNTER(rx_truncated); OMRC_UDP_COUNTER(rx_ctrl_truncated); OMRC_UDP_COUNTER(rx_bad_family);
    OMRC_UDP_COUNTER(rx_no_pktinfo); OMRC_UDP_COUNTER(rx_socket_overflow); OMRC_UDP_COUNTER(rx_errors);
    OMRC_UDP_COUNTER(rx_link_down); OMRC_UDP_COUNTER(rx_self_probes);
    if (impl_->raw) {
        OMRC_UDP_COUNTER(rx_not_ipv6); OMRC_UDP_COUNTER(rx_multicast); OMRC_UDP_COUNTER(rx_other_mac);
        OMRC_UDP_COUNTER(rx_kernel_noise); OMRC_UDP_COUNTER(rx_outgoing); OMRC_UDP_COUNTER(link_polls);
    }
    OMRC_UDP_COUNTER(tx_frames); OMRC_UDP_COUNTER(tx_bytes); OMRC_UDP_COUNTER(tx_bad_frame);
    OMRC_UDP_COUNTER(tx_bad_peer_mac); OMRC_UDP_COUNTER(tx_ev_plane); OMRC_UDP_COUNTER(tx_bad_source);
    OMRC_UDP_COUNTER(tx_too_large); OMRC_UDP_COUNTER(tx_bad_plane); OMRC_UDP_COUNTER(tx_link_down);
    OMRC_UDP_COUNTER(tx_err_unreachable); OMRC_UDP_COUNTER(tx_err_refused); OMRC_UDP_COUNTER(tx_err_nobufs);
    OMRC_UDP_COUNTER(tx_err_perm); OMRC_UDP_COUNTER(tx_err_msgsize); OMRC_UDP_COUNTER(tx_err_socket);
    OMRC_UDP_COUNTER(tx_err_other); OMRC_UDP_COUNTER(tx_backpressure);
    OMRC_UDP_COUNTER(cq_overflow); OMRC_UDP_COUNTER(submits); OMRC_UDP_COUNTER(link_changes);
#undef OMRC_UDP_COUNTER
}
const wire::Ipv6Addr& UdpDriver::address() const { return impl_->addr; }
std::uint16_t UdpDriver::base_port(std::uint32_t plane) const {
    return plane < impl_->planes.size() ? impl_->planes[plane].base_port : 0;
}
core::PlaneMacs UdpDriver::macs() const {
    core::PlaneMacs m{};
    for (std::uint32_t p = 0; p < impl_->planes.size(); ++p) m[p] = impl_->planes[p].mac;
    return m;
}

}  // namespace omrc::udp
