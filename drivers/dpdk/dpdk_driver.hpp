// SPDX-License-Identifier: BSD-3-Clause
// The DPDK driver: one rte_ethdev port per plane, one RX and one TX queue per
// port, polled from the device's owning thread.
//
// Transmit: the engine's headers are copied into a head mbuf; payload from
// registered memory is attached as external buffers (zero copy) and the
// pad+ICRC tail goes in a small last segment. Payload the engine owns (inline
// WRs) and frames of ports that cannot take chains are copied. Frames wait in
// a per-port backlog when the PMD's ring is full; tx_burst accepts frames
// while their port's backlog has room (a prefix of the burst).
//
// Receive: frames are handed to the engine straight from the mbufs (the
// engine places payload from there into the target MR); the mbufs of a burst
// are freed at the next rx_burst call. Frames that are not OpenMRC's — short,
// not IPv6, ICMPv6/hop-by-hop (neighbour discovery, MLD from a kernel tap),
// multicast, for another MAC — are dropped and counted by reason. Checksum
// offload flags are counted, never trusted: the engine checks the ICRC.
//
// Link state: polled every millisecond by default (rte_eth_link_get_nowait;
// the interface flags for af_packet, whose PMD always says up), so PMDs
// without LSC interrupts report links too.
//
// Telemetry: every open driver is in the registry of drivers/dpdk/telemetry.hpp;
// the /omrc commands read the snapshots it publishes (publish_stats).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/driver.hpp"
#include "drivers/dpdk/telemetry.hpp"
#include "drivers/dpdk/tx_release.hpp"

struct rte_mempool;
struct rte_mbuf;

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
    std::uint32_t mbufs = 0;          ///< frame mbufs per port (0 = sized from the rings and backlog)
    bool zero_copy = true;
    std::uint32_t backlog = 1024;     ///< frames waiting per port when the PMD ring is full
    std::uint64_t link_poll_ns = 1'000'000;  ///< link state poll period (0: every driver call)
    IcrcChoice icrc = IcrcChoice::automatic;
    bool telemetry = false;           ///< the EAL keeps its telemetry socket (no --no-telemetry)
};

/// Per-port counters (all frames, by reason for drops).
struct PortCounters {
    std::uint64_t rx_frames = 0, rx_bytes = 0, tx_frames = 0, tx_bytes = 0;  ///< everything the PMD gave / took
    std::uint64_t rx_delivered = 0;        ///< frames handed to the engine (rx_frames less the drops below)
    std::uint64_t tx_zero_copy = 0;        ///< frames sent with payload as external buffers
    std::uint64_t tx_copied = 0;           ///< frames copied into one mbuf
    std::uint64_t tx_pool_empty = 0;       ///< frames refused: no mbuf
    std::uint64_t tx_backlog_full = 0;     ///< frames refused: backlog full (offered again later)
    std::uint64_t tx_dropped_link_down = 0;
    std::uint64_t rx_short = 0;            ///< shorter than Ethernet + IPv6 headers
    std::uint64_t rx_not_ipv6 = 0;         ///< ARP, LLDP, IPv4, ...
    std::uint64_t rx_kernel_noise = 0;     ///< ICMPv6 / hop-by-hop (ND, MLD)
    std::uint64_t rx_multicast = 0;        ///< other multicast/broadcast destinations
    std::uint64_t rx_other_mac = 0;        ///< unicast for another MAC
    std::uint64_t rx_oversize = 0;         ///< chained frame larger than the linearising buffer
    std::uint64_t rx_linearized = 0;       ///< chained frames copied into one buffer
    std::uint64_t rx_cksum_bad_flag = 0;   ///< PMD flagged a bad IP/L4 checksum (passed on: ICRC decides)
    std::uint64_t link_changes = 0;
    std::uint64_t tx_oversize = 0;         ///< frames longer than the port's MTU allows (dropped)
};

/// The mbuf pools of one port (they live as long as the process).
struct PortPools {
    rte_mempool* frames = nullptr;  ///< RX and copied TX frames (one frame per mbuf)
    rte_mempool* ext = nullptr;     ///< data-less mbufs carrying external payload
    rte_mempool* small = nullptr;   ///< small mbufs: headers before and pad + ICRC after external payload
};

struct Port {
    const PortPools* pools = nullptr;
    std::uint16_t id = 0;
    std::string name;
    std::array<std::uint8_t, 6> mac{};
    bool up = false;
    bool chains = true;                  ///< the PMD accepts multi-segment frames
    std::uint32_t max_frame = UINT32_MAX;  ///< longest frame the PMD takes, without FCS (UINT32_MAX: no limit known)
    unsigned if_index = 0;               ///< af_packet: the kernel interface whose state is the link
    bool shared_memory = false;          ///< net_memif: frames cross shared memory only (cannot be corrupted)
    std::vector<rte_mbuf*> backlog;      ///< frames the PMD has not taken yet, in order
    std::size_t backlog_head = 0;        ///< first unsent entry of `backlog`
    PortCounters c{};
};

class DpdkDriver final : public driver::Driver {
public:
    /// Initialises the EAL if need be, adds the vdevs and opens (configures
    /// and starts) the ports. Returns 0, or an errno with `error` saying what
    /// failed: EBUSY (a port another device holds), ENODEV (no such port, no
    /// ports at all), EINVAL (more ports than planes), ENOMEM (mbuf pools),
    /// or the errno of the EAL or ethdev call that failed.
    static int open(const DpdkOptions& o, std::unique_ptr<DpdkDriver>& out, std::string& error);
    ~DpdkDriver() override;

    [[nodiscard]] std::string name() const override { return "dpdk"; }
    [[nodiscard]] std::uint32_t planes() const override { return static_cast<std::uint32_t>(ports_.size()); }
    std::size_t rx_burst(std::span<driver::RxFrame> out, std::uint64_t now_ns) override;
    std::size_t tx_burst(std::span<const wire::GatherFrame> frames, std::uint64_t now_ns) override;
    [[nodiscard]] std::uint64_t tx_release_count() const override;
    std::size_t poll_link_events(std::span<driver::LinkEvent> out) override;
    [[nodiscard]] bool link_up(std::uint32_t plane) const override;
    [[nodiscard]] std::uint64_t next_event_ns() const override;
    [[nodiscard]] driver::DriverStats stats() const override;
    [[nodiscard]] driver::IcrcHandling icrc() const override { return icrc_; }
    void counters(std::vector<std::pair<std::string, std::uint64_t>>& out) const override;
    /// A telemetry command is waiting for this device's stats (one relaxed load).
    [[nodiscard]] bool stats_wanted() const override {
        const telemetry::Snapshot* s = telemetry_.snapshot();
        return s != nullptr && s->wanted();
    }
    /// The owning thread's stats document, for the telemetry commands.
    void publish_stats(std::string json) override {
        if (telemetry::Snapshot* s = telemetry_.snapshot()) s->publish(std::move(json));
    }

    [[nodiscard]] const std::vector<Port>& ports() const noexcept { return ports_; }

private:
    explicit DpdkDriver(const DpdkOptions& o);
    int open_port(const std::string& spec, std::string& error);
    /// Stops the ports and frees everything; safe to call twice.
    void close();
    void poll_links(std::uint64_t now_ns);
    void flush(Port& p);
    void drop_backlog(Port& p);
    [[nodiscard]] bool link_state(const Port& p) const;
    rte_mbuf* build(const wire::GatherFrame& g, Port& p, TxReleaseRing::Record& rec);
    rte_mbuf* build_copy(const wire::GatherFrame& g, Port& p);
    const std::uint8_t* rx_view(rte_mbuf* m, std::size_t slot, Port& p);

    DpdkOptions opt_;
    std::vector<Port> ports_;
    std::unique_ptr<TxReleaseRing> release_;
    std::vector<rte_mbuf*> rx_held_;     ///< mbufs of the last burst (views handed out)
    std::vector<std::vector<std::uint8_t>> rx_linear_;  ///< linearising buffers, one per burst slot
    std::vector<driver::LinkEvent> link_events_;
    std::uint64_t next_link_poll_ns_ = 0;
    std::size_t rx_next_port_ = 0;       ///< round-robin start
    std::size_t backlogged_ = 0;         ///< frames in all backlogs
    driver::IcrcHandling icrc_ = driver::IcrcHandling::software;  ///< decided once the ports are open
    telemetry::Registration telemetry_;  ///< from a successful open() until close()
};

}  // namespace omrc::dpdk
