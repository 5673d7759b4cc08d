// SPDX-License-Identifier: BSD-3-Clause
// The udp driver's private state (UdpDriver::Impl), shared by the files
// that implement it, one concern each:
//   sockets.cpp    opening and closing: sockets (plain and raw), the ring, the slots
//   datapath.cpp   rx_burst / tx_burst and the completions they reap
//   link.cpp       link state: admin state, self-probes (plain), interface flags (raw), events
//   udp_driver.cpp the driver's counters and addresses
//   steering.cpp   workers: the socket groups' BPF programs
// Everything here belongs to the owning thread, except admin_up (any thread).
#pragma once

#include <liburing.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

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
    std::uint8_t probe_byte = 0;  ///< queues > 1: the probe carries the queue's index (steering.cpp)
    iovec probe_iov{};
    std::vector<std::uint32_t> parked;  ///< receive slots not re-armed after a socket error
    std::string iface;                  ///< raw mode
};

/// An errno of the socket itself (the plane is down), not of one destination.
[[nodiscard]] inline bool socket_level_error(int err) {
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

/// A received frame dropped, counted under its reason: `return dropped(c.rx_short);`.
inline std::uint32_t dropped(std::uint64_t& reason) {
    ++reason;
    return 0;
}
/// A frame to send dropped, counted under its reason: `return counted(c.tx_bad_plane);`.
inline bool counted(std::uint64_t& reason) {
    ++reason;
    return true;
}

struct UdpDriver::Impl {
    UdpConfig cfg;
    wire::Ipv6Addr addr{};
    io_uring ring{};
    bool ring_ok = false;
    std::vector<Socket> sockets;  ///< plane-major: plane p, index i at p·16 + i (raw: one per plane)
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

    /// Cancels the posted receives and waits for them, then frees everything.
    ~Impl();

    // sockets.cpp
    int open_plane_sockets(std::uint32_t p, std::uint16_t base, std::string& error);
    int open_sockets(std::string& error);
    int open_raw_sockets(std::string& error);
    int open_ring(std::string& error);

    // steering.cpp (queues > 1)
    /// Queue 0: the BPF program of every socket group. 0 or an errno.
    int attach_steering(std::string& error);
    /// Raw mode: `s` joins its interface's fanout group.
    int join_fanout(Socket& s, std::string& error);

    // datapath.cpp
    /// A submission queue entry, submitting what is queued when the ring is full.
    io_uring_sqe* sqe();
    void submit();
    /// Posts a receive into slot i. False: no room in the submission queue.
    bool arm_rx(std::uint32_t i);
    void rearm_pending();
    void reap();
    void on_rx(std::uint32_t i, int res);
    /// A failed receive: transient errors re-post the slot; others count and
    /// park it (plain: a socket-level error also takes the plane down).
    void on_rx_error(std::uint32_t i, std::uint32_t p, int err);
    /// The frame of a completed receive, checked; its length, or 0 when it is
    /// dropped (counted by reason). Plain: rebuilds the headers first.
    std::uint32_t accept_plain(RxSlot& r, std::uint32_t p, int res);
    std::uint32_t accept_raw(RxSlot& r, std::uint32_t p, int res);
    void on_tx(std::uint32_t i, int res);
    /// True when frame `g` is dropped before it takes a send slot (counted by
    /// reason); plain mode fills `m` from its headers.
    bool tx_drop(const wire::GatherFrame& g, TxMeta& m);
    /// Fills send slot `t` with `g`; returns the socket to send it on.
    int fill_raw(TxSlot& t, const wire::GatherFrame& g);
    int fill_plain(TxSlot& t, const wire::GatherFrame& g, const TxMeta& m);

    // link.cpp
    void plane_down(std::uint32_t p, int err);
    void plane_up(std::uint32_t p);
    [[nodiscard]] bool up(std::uint32_t p) const {
        return planes[p].oper_up && admin_up[p].load(std::memory_order_relaxed);
    }
    /// Plain: a self-probe from each down plane every link_probe_ms; raw: the interface flags.
    void probe_links(std::uint64_t now_ns);
    /// Raw mode: the interface's IFF_UP && IFF_RUNNING (false when it is gone).
    bool read_iface_up(std::uint32_t p);
    void poll_iface_flags(std::uint64_t now_ns);
    void update_link_events();
};

}  // namespace omrc::udp
