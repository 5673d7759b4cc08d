// SPDX-License-Identifier: BSD-3-Clause
// The udp driver: OpenMRC frames over kernel UDP sockets, driven by io_uring.
// No DPDK, no root. docs/DRIVERS.md ("udp") describes the addressing, the
// arguments and the counters; drivers/udp/codec.hpp the datagram format.
//
// Data path. One io_uring per driver. Every socket keeps `rx_depth`
// recvmsg requests posted; rx_burst() reaps completions in bursts (no system
// call when none are ready), rebuilds each frame's Ethernet/IPv6/UDP headers
// in the buffer's headroom and hands out views; the buffers go back to the
// kernel at the next rx_burst(). tx_burst() copies each frame's UDP payload
// into one of `tx_slots` send buffers, queues one sendmsg per frame and
// submits the batch with one io_uring_enter(); the kernel copies again, so
// the driver releases every accepted frame at once. A full set of send
// buffers or a full submission queue refuses the rest of a burst (back
// pressure, not a drop).
//
// Link state. A plane is up while it is administratively up
// (set_admin_link) and its sockets work: a send or receive that fails with an
// error of the socket itself (ENETDOWN, EADDRNOTAVAIL, ENODEV, EBADF, ...)
// takes the plane down; while down, the driver sends a zero-length datagram
// from the plane's first socket to itself every link_probe_ms and brings the
// plane up when it arrives. Errors that concern one destination (EHOSTUNREACH,
// ECONNREFUSED, EPERM, ...) are counted and leave the plane up: the engine
// treats them as path loss.
//
// SRv6 mode (raw). With `ifaces` (one network interface per plane) the
// driver carries whole Ethernet frames instead: one AF_PACKET SOCK_RAW
// socket per plane, bound to its interface for ETH_P_IPV6, sends each engine
// frame as it is (outer IPv6, SRH, inner IPv6, UDP, BTH, ... ICRC) and
// receives whole frames, keeping only IPv6 unicast to the interface's MAC
// that is not ICMPv6/hop-by-hop (the kernel's neighbour discovery and MLD);
// everything else is dropped and counted by reason. PACKET_IGNORE_OUTGOING
// keeps our own sends out. A plane's MAC is its interface's MAC; its link
// state is the interface's IFF_UP and IFF_RUNNING, polled at most every
// link_poll_us. The same io_uring data path (batched recvmsg/sendmsg)
// drives both modes. Needs CAP_NET_RAW (EPERM otherwise).
//
// Threads. All methods except set_admin_link() and counters() belong to the
// owning thread (the Device's). set_admin_link() may be called from any
// thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "driver/args.hpp"
#include "driver/driver.hpp"
#include "drivers/udp/codec.hpp"
#include "wire/ipv6.hpp"

namespace omrc::udp {

/// One plane: the device address and the first port of its block of
/// kSocketsPerPlane ports (0: the driver picks a free aligned block).
struct PlaneEndpoint {
    wire::Ipv6Addr addr{};
    std::uint16_t base_port = 0;
};

struct UdpConfig {
    std::vector<PlaneEndpoint> planes;        ///< 1..kMaxPlanes, all with the same address
    std::uint32_t rx_depth = 4;               ///< receives posted per socket (1..64)
    std::uint32_t tx_slots = 1024;            ///< send buffers in flight (16..65536)
    std::uint32_t ring_entries = 0;           ///< io_uring submission queue; 0 = sized from the above
    std::uint32_t sock_buf_bytes = 4u << 20;  ///< SO_RCVBUF and SO_SNDBUF per socket (capped by the kernel unless root)
    std::uint32_t link_probe_ms = 100;        ///< self-probe period of a plane that is down
    /// SRv6 (raw) mode: one interface name per plane; `planes` then holds the
    /// device address (base_port unused). Empty: plain mode.
    std::vector<std::string> ifaces;
    std::uint32_t link_poll_us = 1000;        ///< raw mode: interface-flags poll period
    /// Workers (steering.cpp): this socket set is queue `queue` of `queues`.
    /// With queues > 1 every socket joins a group with the other queues'
    /// (plain: SO_REUSEPORT on the same ports; raw: a PACKET_FANOUT group on
    /// the same interface) and a classic BPF program gives each datagram to
    /// the queue its BTH.DestQP names (endpoint responses: the request id;
    /// requests: queue 0). Queue 0 opens first and picks the ports; the
    /// others are given them.
    std::uint32_t queue = 0;
    std::uint32_t queues = 1;
    /// `steering=spread`: the program spreads frames over the queues by
    /// BTH.PSN instead (a QP's packets on every queue; the runtime hands
    /// them to its worker): software dispatch, for kernels and NICs that
    /// cannot steer, and to test it.
    bool spread = false;
    [[nodiscard]] bool raw() const { return !ifaces.empty(); }
};

/// Every argument key parse_args accepts, in either frame mode (the registry
/// gives it to configuration files).
[[nodiscard]] std::span<const driver::ArgKey> arg_keys() noexcept;

/// Parses DeviceOptions::args (docs/DRIVERS.md):
///   local=ADDR[,ADDR...]   ADDR = [ipv6]:port or [ipv6] (port 0 / omitted: pick
///                          a free block); one per plane, or one for all planes
///                          (planes then take consecutive blocks)
///   planes=N               planes when `local` has one entry (default:
///                          `device_planes`, else 1)
///   rx_depth=N, tx_slots=N, ring_entries=N, sock_buf_bytes=N, link_probe_ms=N
///   steering=qpn|spread    workers: each frame to its QP's worker (default), or spread
/// Without `local`: [::1], ports picked. Returns 0 or EINVAL with `error` set.
///
/// With `raw` (frame_mode srv6): ifaces=IF[,IF...] (one per plane, required),
/// local=[ipv6] (optional: the device address; ports are refused), rx_depth
/// (default 32), tx_slots, ring_entries, sock_buf_bytes, link_poll_us.
int parse_args(const std::map<std::string, std::string, std::less<>>& args, std::uint32_t device_planes,
               UdpConfig& out, std::string& error, bool raw = false);

/// "[::1]:14800" / "[fd00::1]" / "::1" → address and port (0 if absent).
bool parse_endpoint(std::string_view s, PlaneEndpoint& out);

/// Every drop and error, by reason.
struct UdpCounters {
    // receive
    std::uint64_t rx_frames = 0;
    std::uint64_t rx_bytes = 0;             ///< rebuilt frame bytes
    std::uint64_t rx_short = 0;             ///< datagram shorter than BTH + ICRC
    std::uint64_t rx_truncated = 0;         ///< datagram larger than a receive buffer (MSG_TRUNC)
    std::uint64_t rx_ctrl_truncated = 0;    ///< ancillary data cut (MSG_CTRUNC)
    std::uint64_t rx_bad_family = 0;        ///< source not AF_INET6
    std::uint64_t rx_no_pktinfo = 0;        ///< destination address missing
    std::uint64_t rx_socket_overflow = 0;   ///< datagrams the kernel dropped on a full socket buffer (SO_RXQ_OVFL)
    std::uint64_t rx_errors = 0;            ///< recvmsg failed
    std::uint64_t rx_link_down = 0;         ///< arrived on a plane that is administratively down
    std::uint64_t rx_self_probes = 0;       ///< link probes received (not frames)
    // receive, raw mode
    std::uint64_t rx_not_ipv6 = 0;          ///< Ethernet type is not IPv6
    std::uint64_t rx_multicast = 0;         ///< multicast / broadcast destination (ND, MLD, ...)
    std::uint64_t rx_other_mac = 0;         ///< unicast to another MAC
    std::uint64_t rx_kernel_noise = 0;      ///< ICMPv6 or hop-by-hop to our MAC (neighbour discovery)
    std::uint64_t rx_outgoing = 0;          ///< our own sends (kernels without PACKET_IGNORE_OUTGOING)
    // transmit
    std::uint64_t tx_frames = 0;
    std::uint64_t tx_bytes = 0;             ///< engine frame bytes accepted
    std::uint64_t tx_bad_frame = 0;         ///< not a plain Ethernet/IPv6/UDP frame (raw: not Ethernet/IPv6)
    std::uint64_t tx_bad_peer_mac = 0;      ///< destination MAC is not a udp device MAC
    std::uint64_t tx_ev_plane = 0;          ///< EV[31:28] ≠ plane + 1
    std::uint64_t tx_bad_source = 0;        ///< IPv6 source is not the device address
    std::uint64_t tx_too_large = 0;         ///< datagram over kMaxDatagramBytes (raw: frame over kRawMaxFrameBytes)
    std::uint64_t tx_bad_plane = 0;         ///< plane ≥ planes()
    std::uint64_t tx_link_down = 0;         ///< plane down
    std::uint64_t tx_err_unreachable = 0;   ///< ENETUNREACH, EHOSTUNREACH, EHOSTDOWN
    std::uint64_t tx_err_refused = 0;       ///< ECONNREFUSED (ICMP port unreachable)
    std::uint64_t tx_err_nobufs = 0;        ///< ENOBUFS, EAGAIN, ENOMEM
    std::uint64_t tx_err_perm = 0;          ///< EPERM, EACCES (filtered)
    std::uint64_t tx_err_msgsize = 0;       ///< EMSGSIZE
    std::uint64_t tx_err_socket = 0;        ///< errors of the socket itself (plain: take the plane down; raw: ENETDOWN etc.)
    std::uint64_t tx_err_other = 0;
    std::uint64_t tx_backpressure = 0;      ///< tx_burst calls that refused frames (no buffer / SQ full)
    // ring
    std::uint64_t cq_overflow = 0;          ///< completions the kernel had to hold back
    std::uint64_t submits = 0;              ///< io_uring_submit calls
    std::uint64_t link_changes = 0;
    std::uint64_t link_polls = 0;           ///< raw mode: interface-flag reads
};

/// Raw mode: the largest frame a receive buffer holds (larger: rx_truncated).
inline constexpr std::size_t kRawMaxFrameBytes = 4608;

class UdpDriver final : public driver::Driver {
public:
    /// Opens the sockets and the ring. Returns 0, or an errno: EINVAL (bad
    /// config), EBUSY (a port of a given block is taken), EADDRNOTAVAIL,
    /// ENOMEM, EPERM (raw mode without CAP_NET_RAW), ENODEV (raw mode: no such
    /// interface), or io_uring_queue_init's error (ENOSYS/EPERM where io_uring
    /// is unavailable). `error` says what failed.
    static int open(const UdpConfig& config, std::unique_ptr<UdpDriver>& out, std::string& error);
    ~UdpDriver() override;

    [[nodiscard]] std::string name() const override { return "udp"; }
    /// SRv6 (raw) mode.
    [[nodiscard]] bool raw() const;
    [[nodiscard]] std::uint32_t planes() const override;
    std::size_t rx_burst(std::span<driver::RxFrame> out, std::uint64_t now_ns) override;
    std::size_t tx_burst(std::span<const wire::GatherFrame> frames, std::uint64_t now_ns) override;
    [[nodiscard]] std::uint64_t tx_release_count() const override;
    std::size_t poll_link_events(std::span<driver::LinkEvent> out) override;
    [[nodiscard]] bool link_up(std::uint32_t plane) const override;
    [[nodiscard]] driver::DriverStats stats() const override;
    /// Every UdpCounters field by name (Device::stats_json() "counters").
    void counters(std::vector<std::pair<std::string, std::uint64_t>>& out) const override;

    /// queues > 1: {by_qpn or spread, "reuseport_cbpf"} (plain) or {.., "fanout_cbpf"} (raw).
    [[nodiscard]] driver::SteeringInfo steering() const override;

    /// Administrative link state (any thread). Down: frames sent on the plane
    /// are dropped (tx_link_down), frames arriving on it are dropped
    /// (rx_link_down), and a link event reports it at the next rx_burst().
    void set_admin_link(std::uint32_t plane, bool up);
    /// Owning thread.
    [[nodiscard]] UdpCounters udp_counters() const;
    /// The device address (all planes share it).
    [[nodiscard]] const wire::Ipv6Addr& address() const;
    /// First port of plane `plane`'s block.
    [[nodiscard]] std::uint16_t base_port(std::uint32_t plane) const;
    /// plane_mac(base_port(p), p) for every plane (raw mode: the interfaces'
    /// MACs), zero beyond planes().
    [[nodiscard]] core::PlaneMacs macs() const;

    struct Impl;

private:
    explicit UdpDriver(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace omrc::udp
