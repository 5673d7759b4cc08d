// SPDX-License-Identifier: BSD-3-Clause
// The DPDK driver: one rte_ethdev port per plane, one RX and one TX queue per
// worker on every port (docs/DRIVERS.md, "dpdk").
//
// The pieces, one file each:
//   ports.cpp      DpdkPorts: the EAL, the ports (configured with the MTU
//                  the RDMA MTU needs, one queue pair per worker, mbuf pools
//                  per (port, queue) on the port's NUMA node, started), their
//                  lifecycle off the data path (LSC, removal and reset events
//                  through ethdev callbacks; every port also polled by an EAL
//                  alarm on the interrupt thread; a failed
//                  link query counts as down; a reset runs rte_eth_dev_reset
//                  and brings the port back), and steering (steering.cpp);
//   steering.cpp   which queue a frame arrives on: rte_flow rules on BTH
//                  DestQP where the PMD takes them, else RSS or the PMD's own
//                  spreading (memif: the sender's queue), when the runtime
//                  hands frames to their worker;
//   memory.cpp     registered memory: rte_extmem_register and
//                  rte_dev_dma_map per port device, the IOVA of every page;
//   datapath.cpp   DpdkDriver, one queue: rx_burst, tx_burst, zero-copy
//                  frames (payload as external buffers at their IOVA, split
//                  where a segment crosses a page whose IOVA does not follow),
//                  the release watermark and the reclaim of PMDs without
//                  tx_done_cleanup;
//   ibverbs_clash.cpp  mlx5 ports and OpenMRC's libibverbs.so.1 (they cannot
//                  meet in one process: the open fails and says why).
//
// Transmit: the engine's headers are copied into a head mbuf; payload from
// registered memory is attached as external buffers (zero copy) and the
// pad+ICRC tail goes in a small last segment. Payload the engine owns (inline
// WRs), payload outside memory the driver registered, and frames of ports
// that cannot take chains are copied. Frames wait in a per-port backlog when
// the PMD's ring is full; tx_burst accepts frames while their port's backlog
// has room (a prefix of the burst).
//
// Receive: frames are handed to the engine straight from the mbufs (the
// engine places payload from there into the target MR); the mbufs of a burst
// are freed at the next rx_burst call. Frames that are not OpenMRC's — short,
// not IPv6, ICMPv6/hop-by-hop (neighbour discovery, MLD from a kernel tap),
// multicast, for another MAC — are dropped and counted by reason. Checksum
// offload flags are counted, never trusted: the engine checks the ICRC.
//
// Threads: each DpdkDriver (queue) belongs to its worker's thread; the
// shared DpdkPorts is written at open and close, by the ethdev callbacks and
// the EAL alarm (atomics: link state, changes, a port's pause for a reset),
// and its memory regions change only while every queue's worker is parked.
//
// Telemetry: every open device is in the registry of drivers/dpdk/telemetry.hpp;
// the /omrc commands read the snapshots it publishes (publish_stats).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/driver.hpp"
#include "drivers/dpdk/telemetry.hpp"
#include "drivers/dpdk/tx_release.hpp"

struct rte_mempool;
struct rte_mbuf;
struct rte_flow;

namespace omrc::dpdk {

/// The `icrc` argument.
enum class IcrcChoice : std::uint8_t {
    automatic,  ///< not needed when every port is net_memif (shared memory), software otherwise
    software,   ///< always software
    none,       ///< never (the user vouches for the medium and the peer)
};

/// Driver arguments after parsing (see include/omrc/dpdk.hpp).
struct DpdkOptions {
    std::string eal;                  ///< EAL arguments ("" = environment or default)
    std::vector<std::string> ports;   ///< port ids or names, one per plane ("" = all)
    std::vector<std::string> vdevs;   ///< virtual devices to add if missing ("net_tap0,iface=x")
    std::uint16_t rx_desc = 1024;
    std::uint16_t tx_desc = 1024;
    std::uint32_t mbufs = 0;          ///< frame mbufs per (port, queue) (0 = sized from the rings and backlog)
    bool zero_copy = true;
    std::uint32_t backlog = 1024;     ///< frames waiting per port and queue when the PMD ring is full
    /// Link state poll period of ports without LSC interrupts, on the EAL's
    /// interrupt thread (never the data path); 0: the alarm's shortest, 100 µs.
    std::uint64_t link_poll_ns = 1'000'000;
    IcrcChoice icrc = IcrcChoice::automatic;
    bool telemetry = false;           ///< the EAL keeps its telemetry socket (no --no-telemetry)
    /// The RDMA MTU (payload bytes per packet) the device's QPs use: every
    /// port is configured to carry its frames (SRv6 headers, SRH and tail
    /// included), or the open fails naming the largest MTU the port takes.
    std::uint32_t mtu = 4096;
    std::uint32_t queues = 1;         ///< one per worker (DeviceOptions::workers)
    /// `steering`: qpn (rte_flow where the PMD takes it, else as `spread`),
    /// spread (RSS or the PMD's own spreading; the runtime hands frames over).
    bool steer_by_qpn = true;
};

/// Per-port counters of one queue (all frames, by reason for drops).
struct PortCounters {
    std::uint64_t rx_frames = 0, rx_bytes = 0, tx_frames = 0, tx_bytes = 0;  ///< everything the PMD gave / took
    std::uint64_t rx_delivered = 0;        ///< frames handed to the engine (rx_frames less the drops below)
    std::uint64_t tx_zero_copy = 0;        ///< frames sent with payload as external buffers
    std::uint64_t tx_copied = 0;           ///< frames copied into one mbuf
    std::uint64_t tx_copied_unregistered = 0;  ///< of them: payload outside memory the driver registered
    std::uint64_t tx_split_segments = 0;   ///< payload segments split where their IOVA was not contiguous
    std::uint64_t tx_pool_empty = 0;       ///< frames refused: no mbuf
    std::uint64_t tx_backlog_full = 0;     ///< frames refused: backlog full (offered again later)
    /// rte_eth_tx_burst calls that took less than offered: the PMD's transmit
    /// ring was full, the rest waits in the backlog. Counted here because
    /// PMDs need not count it (memif's oerrors stays 0 in DPDK 22.11).
    std::uint64_t tx_ring_full = 0;
    std::uint64_t tx_dropped_link_down = 0;
    std::uint64_t rx_short = 0;            ///< shorter than Ethernet + IPv6 headers
    std::uint64_t rx_not_ipv6 = 0;         ///< ARP, LLDP, IPv4, ...
    std::uint64_t rx_kernel_noise = 0;     ///< ICMPv6 / hop-by-hop (ND, MLD)
    std::uint64_t rx_multicast = 0;        ///< other multicast/broadcast destinations
    std::uint64_t rx_other_mac = 0;        ///< unicast for another MAC
    std::uint64_t rx_oversize = 0;         ///< chained frame larger than the linearising buffer
    std::uint64_t rx_linearized = 0;       ///< chained frames copied into one buffer
    std::uint64_t rx_cksum_bad_flag = 0;   ///< PMD flagged a bad IP/L4 checksum (passed on: ICRC decides)
    std::uint64_t tx_oversize = 0;         ///< frames longer than the port's MTU allows (dropped)
    std::uint64_t link_changes = 0;        ///< link changes this queue reported
};

/// The mbuf pools of one (port, queue), on the port's NUMA node (they live
/// as long as the process: a port's receive queue keeps mbufs until it is
/// configured again).
struct PortPools {
    rte_mempool* frames = nullptr;  ///< RX and copied TX frames (one frame per mbuf)
    rte_mempool* ext = nullptr;     ///< data-less mbufs carrying external payload
    rte_mempool* small = nullptr;   ///< small mbufs: headers before and pad + ICRC after external payload
};

/// One port as every queue sees it.
struct Port {
    std::uint16_t id = 0;
    std::string name;
    std::string pmd;                     ///< the PMD's driver name (net_memif, net_tap, mlx5_pci, ...)
    std::array<std::uint8_t, 6> mac{};
    int socket = -1;                     ///< NUMA node (-1: unknown)
    bool chains = true;                  ///< the PMD accepts multi-segment frames
    std::uint32_t max_frame = UINT32_MAX;  ///< longest frame the PMD takes, without FCS (UINT32_MAX: no limit known)
    std::uint16_t mtu = 0;               ///< what the port reports after configuration
    unsigned if_index = 0;               ///< af_packet: the kernel interface whose state is the link
    bool shared_memory = false;          ///< net_memif: frames cross shared memory only (cannot be corrupted)
    bool lsc_events = false;             ///< the PMD raises link interrupts (no polling)
    bool tx_cleanup = true;              ///< rte_eth_tx_done_cleanup works
    bool reclaim_kick = false;           ///< a NIC without it: empty bursts free what it sent (datapath.cpp)
    std::vector<PortPools*> pools;       ///< per queue
    std::vector<rte_flow*> flows;        ///< steering rules (steering.cpp)
    /// Link state, written by the callbacks and the alarm, read by the queues.
    std::atomic<bool> up{false};
    std::atomic<std::uint32_t> changes{0};    ///< link changes seen so far
    std::atomic<std::uint64_t> failed_queries{0};  ///< link queries that failed (counted as down)
    std::atomic<bool> removed{false};         ///< RMV: the device is gone
    std::atomic<std::uint32_t> resets{0};     ///< resets done
    /// A reset in progress: the queues stop using the port and say so in
    /// `paused_queues` (bit per queue); the alarm resets it once all have.
    std::atomic<bool> pause{false};
    std::atomic<std::uint32_t> paused_queues{0};
    std::atomic<bool> reset_requested{false};
};

/// A region of registered memory (memory.cpp).
struct MemRegion {
    std::uintptr_t start = 0;        ///< page aligned
    std::size_t len = 0;             ///< whole pages
    std::size_t page = 4096;
    bool iova_is_va = true;
    std::vector<std::uint64_t> iova; ///< per page when !iova_is_va
    std::uint32_t refs = 0;          ///< registrations inside it
    std::vector<std::uint16_t> mapped_ports;  ///< ports whose device took rte_dev_dma_map
};

/// What the queues of one device share: its ports and how they are set up.
class DpdkPorts {
public:
    /// Initialises the EAL if need be, adds the vdevs and opens (configures
    /// and starts) the ports with `o.queues` queue pairs each. Returns 0, or
    /// an errno with `error` saying what failed: EBUSY (a port another device
    /// holds), ENODEV (no such port, no ports at all), EINVAL (more ports
    /// than planes, more queues than a port has, an RDMA MTU a port cannot
    /// carry), ENOMEM (mbuf pools), ENOTSUP (mlx5 ports under OpenMRC's
    /// libibverbs), or the errno of the EAL or ethdev call that failed.
    static int open(const DpdkOptions& o, std::shared_ptr<DpdkPorts>& out, std::string& error);
    ~DpdkPorts();
    DpdkPorts(const DpdkPorts&) = delete;
    DpdkPorts& operator=(const DpdkPorts&) = delete;

    [[nodiscard]] const DpdkOptions& options() const noexcept { return opt_; }
    [[nodiscard]] std::vector<std::unique_ptr<Port>>& ports() noexcept { return ports_; }
    [[nodiscard]] const std::vector<std::unique_ptr<Port>>& ports() const noexcept { return ports_; }
    [[nodiscard]] driver::IcrcHandling icrc() const noexcept { return icrc_; }
    [[nodiscard]] const driver::SteeringInfo& steering() const noexcept { return steering_; }
    [[nodiscard]] telemetry::Snapshot* snapshot() const noexcept { return telemetry_.snapshot(); }
    /// An ethdev event of `port` (the callbacks registered at open; the EAL's
    /// interrupt thread): link change, removal, reset request.
    void on_event(std::uint16_t port, int event);

    // memory.cpp
    /// Registers [addr, addr+len) for DMA by every port; 0 or an errno
    /// (memory that cannot be registered is then sent by copy).
    int register_memory(const void* addr, std::size_t len);
    void unregister_memory(const void* addr, std::size_t len);
    /// The region holding [addr, addr+len), or null (queues' threads; the
    /// regions change only while every worker is parked).
    [[nodiscard]] const MemRegion* find_region(const void* addr, std::size_t len) const noexcept;

private:
    explicit DpdkPorts(const DpdkOptions& o) : opt_(o) {}
    int open_port(const std::string& spec, std::string& error);
    /// rte_eth_dev_configure with `rss`, the queues, start; a net_memif
    /// port's on the interrupt thread (eal.hpp, on_interrupt_thread).
    int configure_port(Port& p, bool rss, std::string& error);
    int configure_port_here(Port& p, bool rss, std::string& error);
    void close();
    // The control plane, off the data path (ports.cpp).
    static void on_alarm(void* self);
    void arm_alarm();
    /// The link state of `p` now (a failed query: down).
    bool query_link(Port& p);
    void set_link(Port& p, bool up);
    void reset_port(Port& p);
    // steering.cpp
    /// After the ports started: rte_flow rules where every port takes
    /// them, else RSS; fills steering_.
    int set_up_steering(std::string& error);
    int try_flows(Port& p);
    void remove_flows(Port& p);

    DpdkOptions opt_;
    std::vector<std::unique_ptr<Port>> ports_;
    driver::IcrcHandling icrc_ = driver::IcrcHandling::software;
    driver::SteeringInfo steering_{};
    bool rss_ = false;                    ///< the ports run RSS (steering fell back to it)
    bool alarm_armed_ = false;
    std::atomic<bool> closing_{false};
    std::vector<MemRegion> regions_;      ///< sorted by start; see find_region
    telemetry::Registration telemetry_;   ///< from a successful open() until close()
};

/// One queue of a dpdk device: queue `queue` of every port, its worker's.
class DpdkDriver final : public driver::Driver {
public:
    /// One queue of a device of one worker (tests and tools).
    static int open(const DpdkOptions& o, std::unique_ptr<DpdkDriver>& out, std::string& error);
    DpdkDriver(std::shared_ptr<DpdkPorts> ports, std::uint32_t queue);
    ~DpdkDriver() override;

    [[nodiscard]] std::string name() const override { return "dpdk"; }
    [[nodiscard]] std::uint32_t planes() const override { return static_cast<std::uint32_t>(p_.size()); }
    std::size_t rx_burst(std::span<driver::RxFrame> out, std::uint64_t now_ns) override;
    std::size_t tx_burst(std::span<const wire::GatherFrame> frames, std::uint64_t now_ns) override;
    [[nodiscard]] std::uint64_t tx_release_count() const override;
    std::size_t poll_link_events(std::span<driver::LinkEvent> out) override;
    [[nodiscard]] bool link_up(std::uint32_t plane) const override;
    [[nodiscard]] std::uint64_t next_event_ns() const override;
    [[nodiscard]] driver::DriverStats stats() const override;
    [[nodiscard]] driver::IcrcHandling icrc() const override { return ports_->icrc(); }
    void counters(std::vector<std::pair<std::string, std::uint64_t>>& out) const override;
    /// A telemetry command is waiting for this device's stats (one relaxed load).
    [[nodiscard]] bool stats_wanted() const override {
        const telemetry::Snapshot* s = ports_->snapshot();
        return s != nullptr && s->wanted();
    }
    /// The owning thread's stats document, for the telemetry commands.
    void publish_stats(std::string json) override {
        if (telemetry::Snapshot* s = ports_->snapshot()) s->publish(std::move(json));
    }
    [[nodiscard]] driver::SteeringInfo steering() const override { return ports_->steering(); }
    [[nodiscard]] int numa_node() const override;
    int register_memory(const void* addr, std::size_t len) override { return ports_->register_memory(addr, len); }
    void unregister_memory(const void* addr, std::size_t len) override { ports_->unregister_memory(addr, len); }

    /// The ports (shared by the device's queues).
    [[nodiscard]] const std::vector<std::unique_ptr<Port>>& ports() const noexcept { return ports_->ports(); }
    /// What the device's queues share (tests raise port events through it).
    [[nodiscard]] DpdkPorts& shared() const noexcept { return *ports_; }
    [[nodiscard]] std::uint32_t queue() const noexcept { return queue_; }

private:
    /// This queue's side of one port.
    struct QueuePort {
        Port* port = nullptr;
        std::vector<rte_mbuf*> backlog;  ///< frames the PMD has not taken yet, in order
        std::size_t backlog_head = 0;    ///< first unsent entry of `backlog`
        std::uint32_t changes_seen = 0;  ///< Port::changes already reported
        bool up = false;                 ///< as last reported
        bool paused = false;             ///< this queue stopped using the port for a reset
        PortCounters c{};
    };

    void flush(QueuePort& p);
    void drop_backlog(QueuePort& p);
    /// Port events since the last call: link changes become events, a
    /// reset's pause is acknowledged.
    void check_ports();
    rte_mbuf* build(const wire::GatherFrame& g, QueuePort& p, TxReleaseRing::Record& rec);
    rte_mbuf* build_copy(const wire::GatherFrame& g, QueuePort& p);
    const std::uint8_t* rx_view(rte_mbuf* m, std::size_t slot, QueuePort& p);

    std::shared_ptr<DpdkPorts> ports_;
    const std::uint32_t queue_;
    std::vector<QueuePort> p_;
    std::unique_ptr<TxReleaseRing> release_;
    std::vector<rte_mbuf*> rx_held_;     ///< mbufs of the last burst (views handed out)
    std::vector<std::vector<std::uint8_t>> rx_linear_;  ///< linearising buffers, one per burst slot
    std::vector<driver::LinkEvent> link_events_;
    std::size_t rx_next_port_ = 0;       ///< round-robin start
    std::size_t backlogged_ = 0;         ///< frames in all backlogs
    mutable std::uint64_t last_kick_released_ = 0;  ///< watermark at the last reclaim kick
    mutable std::uint64_t reclaim_kicks_ = 0;       ///< empty tx bursts that let a PMD without tx_done_cleanup free mbufs
};

}  // namespace omrc::dpdk
