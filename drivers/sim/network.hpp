// SPDX-License-Identifier: BSD-3-Clause
// The simulation context: switches, NICs (each hosting a real lib/core
// engine), links and their output queues, and the event loop. Nothing is
// static: every piece of state lives in one Simulator object, so a process
// may run several simulations (one thread per Simulator at a time).
//
// A link joins two ports; each port owns the output queue of its direction.
// A frame's life: NIC engine poll_tx → NIC port queue → serialise at the
// link rate → propagation (+ switch pipeline latency when the far end is a
// switch) → the switch forwards it (uSID shift-and-forward or ECMP on the
// EV) into an output queue (priority class for control and trimmed frames,
// drop-tail or trim for data, ECN marking above a threshold except on the
// last hop) → ... → the destination NIC, which hands the engine the frame.
//
// Failures: a link that goes down drops what is queued on both its ports and
// every frame still on its wire (an epoch counter tells stale arrivals); a
// dead switch drops everything that reaches it and its links are down; a NIC
// port loss is a host link down that the NIC's engine is told about
// (CmdLinkChange) at once, as a NIC sees its own PHY.
//
// routing = ddc (drivers/sim/ddc.cpp): the T0s and T1s of a plane act as one
// distributed chassis. Data frames wait in VOQs at the ingress T0, leave on
// the egress port's credits as cells sprayed over every T1, and are
// reassembled and released in order at the egress T0.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engine.hpp"
#include "drivers/sim/event_queue.hpp"
#include "drivers/sim/packet.hpp"
#include "drivers/sim/sim_time.hpp"

namespace omrc::sim {

inline constexpr std::uint32_t kNone = UINT32_MAX;

/// How switches choose an output port.
enum class RoutingMode : std::uint8_t {
    usid,  ///< SRv6 uN: match block+own uSID, shift, look the next uSID up in a static table (srv6 frames)
    ecmp,  ///< hash the EV (UDP source port + flow label) over the up uplinks; down by destination (plain frames)
    ddc,   ///< distributed disaggregated chassis (2-tier only, plain frames): VOQs, credits, cells, in-order reassembly
    /// plain frames; an uplink is named by the EV's path bits instead of a
    /// hash (T0/edge: path mod uplinks; aggregation: (path / k/2) mod k/2), so
    /// the sender places every EV on a known path, as uSID does on a Clos,
    /// on any topology (the fat tree included); a down uplink passes to the next
    ev_path,
};
[[nodiscard]] const char* to_string(RoutingMode m) noexcept;

enum class Tier : std::uint8_t { t0, t1, edge, agg, core };
[[nodiscard]] const char* to_string(Tier t) noexcept;

/// Output-queue policy of one class of ports (one per tier and direction).
struct QueueConfig {
    std::uint64_t limit_bytes = 512 * 1024;           ///< data class: a frame that would exceed this is trimmed or dropped
    std::uint64_t priority_limit_bytes = 512 * 1024;  ///< control + trimmed class: tail drop above this
    std::uint64_t ecn_threshold_bytes = UINT64_MAX;   ///< data frames finding more queued get CE; UINT64_MAX = off
    bool trim = true;                                 ///< overflowing data frames are trimmed (else dropped)
    std::uint32_t trim_bytes = 128;                   ///< bytes kept; raised to the end of METH when smaller
    /// Mark on a last-hop (switch → NIC) port too: classic RoCE, where the
    /// receiver's downlink is DCQCN's congestion point. MRC never marks there.
    bool ecn_last_hop = false;
};

/// One direction's physical layer.
struct LinkConfig {
    std::uint64_t rate_bps = 100'000'000'000;
    TimePs delay_ps = 500 * kPsPerNs;   ///< propagation (cable + PHY)
};

struct Port {
    PacketFifo hi;                  ///< control and trimmed frames (strict priority)
    PacketFifo lo;                  ///< data frames
    std::uint64_t tx_bytes = 0;     ///< frame bytes that started serialising here (utilisation)
    std::uint64_t tx_pkts = 0;
    std::uint32_t owner = 0;        ///< switch id, or NIC id when nic_side
    std::uint32_t peer = kNone;     ///< global index of the port at the other end
    std::uint32_t drops = 0;        ///< queue overflow (tail drop) and link-down drops
    std::uint32_t trims = 0;
    std::uint32_t ecn_marks = 0;
    std::uint64_t peak_lo_bytes = 0; ///< most data-class bytes queued here from SimConfig::queue_peak_from_ps (the frame serialising excluded)
    std::uint32_t epoch = 0;        ///< bumped when the link goes down: frames on the wire are lost
    TimePs busy_until_ps = 0;       ///< end of the current frame's serialisation
    TimePs tx_event_ps = kNeverPs;  ///< time of the live tx_done event (others pending are stale)
    TimePs last_down_drop_ps = 0;   ///< latest *data* frame (or DDC cell) dropped here because the link or far end was down
    std::uint64_t down_drops = 0;
    std::uint16_t link = 0;         ///< index of its LinkConfig
    std::uint8_t queue = 0;         ///< index of its QueueConfig
    std::uint8_t local = 0;         ///< plane of a NIC port (NIC side only)
    bool up = true;
    bool busy = false;              ///< a frame is serialising (until busy_until_ps)
    bool nic_side = false;          ///< this port belongs to a NIC
    bool last_hop = false;          ///< switch port facing a NIC: no ECN, last-hop trim DSCP
    bool peer_is_switch = false;
};

struct Switch {
    Tier tier = Tier::t0;
    std::uint8_t plane = 0;
    bool alive = true;
    std::uint16_t usid = 0;         ///< its uN uSID (usid mode)
    std::uint32_t index = 0;        ///< within its tier and plane (fat-tree: within its pod for edge/agg)
    std::uint32_t pod = 0;          ///< fat-tree pod of edge/agg switches
    std::uint32_t first_port = 0;   ///< global index of its port 0
    std::uint32_t ports = 0;
    std::uint64_t dropped_dead = 0; ///< frames that reached it while dead
    std::uint64_t no_route = 0;     ///< frames it could not forward (bad uSID, wrong plane, no table entry)
};

/// Geometry the switches' static tables are derived from.
struct RoutingDims {
    std::uint32_t hosts_per_t0 = 0;  ///< clos: T0 ports [0, hosts_per_t0) face hosts, then one uplink per T1
    std::uint32_t t0 = 0;
    std::uint32_t t1 = 0;
    std::uint32_t k = 0;             ///< fat-tree arity (0 = not a fat-tree)
    std::uint32_t usid_block = 0xFCBB0000;
    std::uint32_t first_switch = 0;  ///< clos: id of plane 0's T0 0; plane p's T0 i is first + p·(t0 + t1) + i, its T1 j first + p·(t0 + t1) + t0 + j
};

/// routing = ddc (drivers/sim/ddc.cpp). Sizes are wire bytes.
struct DdcConfig {
    /// Bytes of a packet one cell carries: a packet of W wire bytes (frame +
    /// SimConfig::wire_overhead_bytes) becomes ⌈W / cell_bytes⌉ cells. Real
    /// DDC fabrics cut 64–256 B cells; 1024 keeps the event count at about
    /// five fabric hops per packet (documented in docs/DESIGNS.md).
    std::uint32_t cell_bytes = 1024;
    /// Added to every cell on a fabric link (its header and framing). 0: a
    /// packet's cells cost its Ethernet wire bytes, so a 1:1 fabric needs no
    /// speedup; real fabrics pay a header per cell and provision speedup.
    std::uint32_t cell_header_bytes = 0;
    std::uint32_t credit_bytes = 4096;              ///< one credit lets a VOQ send this many wire bytes
    /// Per VOQ: a data packet that would exceed it is dropped. DDC leaves are
    /// deep-buffer switches (GBs shared by their VOQs); 32 MiB per VOQ stands
    /// for that without a shared-buffer model.
    std::uint64_t voq_limit_bytes = 32ull << 20;
    std::uint64_t voq_ecn_bytes = 50 * 1024;        ///< a packet finding more queued in its VOQ gets CE; UINT64_MAX = off
    /// One way, ingress T0 ↔ egress T0, of requests and credits (fixed, never
    /// lost); 0 = a 64-byte cell's unloaded trip over two fabric links.
    TimePs ctrl_delay_ps = 0;
    /// A packet that lost a cell blocks its VOQ's in-order release this long
    /// after the loss, then is skipped (the egress's reassembly timer).
    TimePs reassembly_timeout_ps = 10 * kPsPerUs;

    /// Empty when usable; otherwise what is wrong.
    [[nodiscard]] std::string validate() const;
};

/// What routing = ddc did (all zero otherwise).
struct DdcStats {
    std::uint64_t packets = 0;           ///< data packets carried as cells (remote egress T0)
    std::uint64_t local_packets = 0;     ///< data packets switched within one T0 (through its VOQs, no cells)
    std::uint64_t cells = 0;             ///< cells sent into the fabric
    std::uint64_t cells_lost = 0;        ///< cells dropped (link down, dead switch, full queue, no live T1)
    std::uint64_t packets_lost = 0;      ///< packets that lost a cell (the engine retransmits them)
    std::uint64_t voq_drops = 0;         ///< data packets dropped at a full VOQ (or a dead ingress T0's)
    std::uint64_t voq_ecn_marks = 0;
    std::uint64_t voq_peak_bytes = 0;    ///< most bytes in one VOQ, from SimConfig::queue_peak_from_ps
    std::uint64_t reassembly_peak_bytes = 0;  ///< most bytes held at one egress T0 for in-order release
    std::uint64_t credits = 0;           ///< credits granted
    std::uint32_t voqs = 0;              ///< VOQs that ever held a packet
};

struct Nic {
    /// One engine per worker (SimConfig::workers): a QP's QPN names its
    /// engine (core::qpn_shard), frames are routed to it as a device's
    /// workers route them (runtime/frame_exchange.hpp), and the NIC's ports
    /// take frames from every engine in turn.
    std::vector<std::unique_ptr<core::Engine>> engines;
    std::uint32_t shard_bits = 0;   ///< core::shard_bits_for(engines.size())
    std::uint32_t next_shard = 0;   ///< round-robin QP placement and transmit turn
    std::uint32_t host = 0;
    std::uint32_t first_port = 0;   ///< global index of its plane-0 port
    std::uint32_t queued = 0;       ///< frames in its port queues not yet serialising
    TimePs wake_at = kNeverPs;      ///< the one live nic_wake event (others are stale)
};

struct SimConfig {
    std::uint64_t seed = 1;
    RoutingMode routing = RoutingMode::usid;
    std::uint32_t planes = 8;
    std::uint32_t wire_overhead_bytes = 24;   ///< preamble + SFD + IFG + FCS per frame on every link
    TimePs switch_latency_ps = 400 * kPsPerNs; ///< pipeline latency added at every switch
    std::uint32_t nic_queue_pkts_per_port = 2; ///< the NIC pulls from its engine while fewer frames wait per port
    std::uint32_t workers = 1;                ///< engines per NIC, 1..16 (a device's workers)
    bool carry_payload = false;               ///< receivers see the sender's payload bytes (needs live send buffers)
    TimePs telemetry_bucket_ps = 10 * kPsPerUs; ///< per-plane delivered-bytes series resolution; 0 = off
    std::uint32_t tracked_src_nic = UINT32_MAX;  ///< also keep a series of this NIC's delivered data bytes
    bool log_down_drops = false;              ///< keep (time, port) of every data frame lost to a down link
    bool int_telemetry = false;               ///< switch egresses stamp INT records on data packets (HPCC)
    TimePs queue_peak_from_ps = 0;            ///< Port::peak_lo_bytes counts only from this time (skips a start-up burst)
    /// Count data frames that reach a NIC port behind one their source port
    /// sent later (on by itself with routing ddc).
    bool count_reorder = false;
    DdcConfig ddc{};                          ///< routing ddc only
};

struct DdcState;

/// Sink for what NIC engines report.
using CompletionHandler = std::function<void(std::uint32_t nic, const core::Completion&, TimePs now)>;

class Simulator {
public:
    explicit Simulator(const SimConfig& cfg);
    ~Simulator();
    Simulator(const Simulator&) = delete;
    Simulator& operator=(const Simulator&) = delete;

    // ---- building ----
    std::uint16_t add_link_config(const LinkConfig& l);
    std::uint8_t add_queue_config(const QueueConfig& q);
    /// A switch with `ports` unconnected ports; returns its id.
    std::uint32_t add_switch(Tier tier, std::uint8_t plane, std::uint32_t index, std::uint32_t pod,
                             std::uint16_t usid, std::uint32_t ports, std::uint8_t queue);
    /// A NIC with cfg.planes ports hosting an engine built from `ecfg`; returns its id.
    std::uint32_t add_nic(std::uint32_t host, const core::EngineConfig& ecfg, core::PlacementTarget* memory);
    /// Joins two ports with `link` in both directions.
    void connect(std::uint32_t port_a, std::uint32_t port_b, std::uint16_t link);
    /// The fabric's geometry; with routing ddc also sets up the chassis (the ports must be connected).
    void set_routing_dims(const RoutingDims& d);
    void set_port_queue(std::uint32_t port, std::uint8_t queue) noexcept { ports_[port].queue = queue; }
    void reserve(std::size_t nics, std::size_t switches, std::size_t ports);

    [[nodiscard]] std::uint32_t switch_port(std::uint32_t sw, std::uint32_t local) const noexcept {
        return switches_[sw].first_port + local;
    }
    [[nodiscard]] std::uint32_t nic_port(std::uint32_t nic, std::uint32_t plane) const noexcept {
        return nics_[nic].first_port + plane;
    }

    // ---- running ----
    [[nodiscard]] TimePs now() const noexcept { return now_; }
    [[nodiscard]] core::TimeNs now_ns() const noexcept { return to_ns(now_); }
    /// Runs `fn` at `at` (≥ now). For rare events (failures, workload steps), not per packet.
    void schedule(TimePs at, std::function<void()> fn);
    /// Processes events until none is left, virtual time passes `until`, or stop() is called.
    /// Returns true when it stopped because of stop() or an empty event list.
    bool run(TimePs until = kNeverPs);
    void stop() noexcept { stop_ = true; }
    void set_completion_handler(CompletionHandler h) { on_completion_ = std::move(h); }

    /// Engine 0 of a NIC (its only one with one worker).
    [[nodiscard]] core::Engine& engine(std::uint32_t nic) noexcept { return *nics_[nic].engines.front(); }
    /// The engine that owns `qpn` on `nic`.
    [[nodiscard]] core::Engine& engine_of(std::uint32_t nic, std::uint32_t qpn) noexcept;
    /// The engine the next QP of `nic` goes to (the engines in turn).
    [[nodiscard]] core::Engine& place_qp(std::uint32_t nic) noexcept;
    [[nodiscard]] std::size_t engines(std::uint32_t nic) const noexcept { return nics_[nic].engines.size(); }
    [[nodiscard]] core::Engine& engine_at(std::uint32_t nic, std::size_t shard) noexcept {
        return *nics_[nic].engines[shard];
    }
    /// After submitting commands to a NIC's engine from outside (posting work):
    /// pull its frames and re-arm its timer.
    void kick(std::uint32_t nic);

    // ---- failures ----
    void set_link(std::uint32_t port, bool up);
    void set_switch(std::uint32_t sw, bool alive);
    /// NIC port loss / return: the host link goes down and the engine is told.
    void set_nic_port(std::uint32_t nic, std::uint32_t plane, bool up);

    // ---- observation ----
    [[nodiscard]] const SimConfig& config() const noexcept { return cfg_; }
    [[nodiscard]] std::size_t nic_count() const noexcept { return nics_.size(); }
    [[nodiscard]] std::size_t switch_count() const noexcept { return switches_.size(); }
    [[nodiscard]] std::size_t port_count() const noexcept { return ports_.size(); }
    [[nodiscard]] const Nic& nic(std::uint32_t i) const noexcept { return nics_[i]; }
    [[nodiscard]] const Switch& sw(std::uint32_t i) const noexcept { return switches_[i]; }
    [[nodiscard]] const Port& port(std::uint32_t i) const noexcept { return ports_[i]; }
    [[nodiscard]] const LinkConfig& link_config(std::uint16_t i) const noexcept { return links_[i]; }
    [[nodiscard]] const RoutingDims& dims() const noexcept { return dims_; }
    /// Data frames handed to a NIC port by an engine (first sends and retransmissions).
    [[nodiscard]] std::uint64_t data_packets_sent() const noexcept { return data_pkts_sent_; }
    [[nodiscard]] std::uint64_t packets_sent() const noexcept { return pkts_sent_; }
    [[nodiscard]] std::uint64_t events_processed() const noexcept { return events_; }
    /// Payload bytes of untrimmed data frames delivered to NICs, per plane and telemetry bucket.
    [[nodiscard]] const std::vector<std::array<std::uint64_t, 16>>& delivered_series() const noexcept {
        return delivered_;
    }
    [[nodiscard]] const std::vector<std::uint64_t>& tracked_series() const noexcept { return tracked_; }
    /// SimConfig::log_down_drops: (time, port where it was lost) of each data frame lost to a down link.
    [[nodiscard]] const std::vector<std::pair<TimePs, std::uint32_t>>& down_drop_log() const noexcept { return down_log_; }
    [[nodiscard]] std::size_t packet_pool_size() const noexcept { return pool_.allocated(); }
    /// SimConfig::count_reorder: untrimmed data frames that reached a NIC port after one
    /// that left the same source NIC port later (per source port and destination NIC).
    [[nodiscard]] std::uint64_t reorder_at_nic() const noexcept { return reorder_at_nic_; }
    [[nodiscard]] DdcStats ddc_stats() const noexcept;

private:
    void dispatch(const Event& e);
    void start_tx(std::uint32_t port);
    void enqueue(std::uint32_t port, Packet* p);
    void arrive(std::uint32_t port, Packet* p, std::uint32_t epoch);
    void drop(Packet* p) {
        if (p->cell) ddc_cell_lost(p);
        pool_.put(p);
    }
    void drop_down(Port& port, Packet* p);
    void flush(Port& port);
    // forwarding.cpp
    std::uint32_t route(Switch& s, Packet& p);
    std::uint32_t route_usid(Switch& s, Packet& p);
    std::uint32_t route_ecmp(Switch& s, Packet& p);
    std::uint32_t pick_up(const Switch& s, std::uint32_t first, std::uint32_t count, std::uint32_t ev) const noexcept;
    void trim(Packet& p, const QueueConfig& q, bool last_hop) noexcept;
    // ddc.cpp
    void ddc_setup();
    void ddc_ingress(Switch& s, std::uint32_t in_port, Packet* p);   ///< a frame from a host at its T0
    std::uint32_t ddc_route_control(const Switch& s, Packet& p);      ///< priority frames: ECMP over reachable T1s
    void ddc_cell_arrive(Switch& s, Packet* cell);
    void ddc_cell_lost(Packet* cell);
    void ddc_tick(std::uint32_t egress_port);
    void ddc_credit(std::uint32_t voq);
    void ddc_status(std::uint32_t voq, bool on);
    void ddc_drain(std::uint32_t voq);
    void ddc_send(std::uint32_t voq, Packet* p);
    void ddc_release(std::uint32_t voq);
    void ddc_switch_down(std::uint32_t sw);
    // nic.cpp
    void nic_receive(std::uint32_t nic, std::uint32_t plane, Packet* p);
    void after_engine(std::uint32_t nic);
    /// The engines of `nic` that take a received frame (routed as a device's workers route it).
    void deliver(Nic& n, const wire::RxFrame& rx);
    /// The earliest next_wakeup() of a NIC's engines.
    [[nodiscard]] core::TimeNs next_wakeup(const Nic& n) const noexcept;
    void pull(std::uint32_t nic);
    void arm_wake(std::uint32_t nic);
    void nic_wake(std::uint32_t nic, TimePs at);

    SimConfig cfg_;
    RoutingDims dims_{};
    EventQueue events_q_;
    PacketPool pool_;
    std::vector<Port> ports_;
    std::vector<Switch> switches_;
    std::vector<Nic> nics_;
    std::vector<LinkConfig> links_;
    std::vector<QueueConfig> queues_;
    std::vector<std::function<void()>> calls_;   ///< scheduled callbacks (slot reused after it ran)
    std::vector<std::uint32_t> free_calls_;
    CompletionHandler on_completion_;
    std::vector<wire::GatherFrame> txbuf_;       ///< poll_tx scratch
    std::vector<core::Completion> wcbuf_;        ///< poll_completions scratch
    std::vector<std::uint8_t> rxbuf_;            ///< a received frame flattened for on_rx (payload zeros unless carried)
    std::vector<std::array<std::uint64_t, 16>> delivered_;
    std::vector<std::uint64_t> tracked_;
    std::vector<std::pair<TimePs, std::uint32_t>> down_log_;
    std::unordered_map<std::uint64_t, std::uint32_t> last_order_;  ///< count_reorder: (source port, NIC) → latest order seen
    std::uint64_t reorder_at_nic_ = 0;
    std::unique_ptr<DdcState> ddc_;             ///< routing ddc only
    TimePs now_ = 0;
    bool stop_ = false;
    std::uint64_t events_ = 0;
    std::uint64_t data_pkts_sent_ = 0;
    std::uint64_t pkts_sent_ = 0;
    std::uint8_t dscp_data_ = wire::kDscpData;
};

}  // namespace omrc::sim
