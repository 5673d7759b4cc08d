// SPDX-License-Identifier: BSD-3-Clause
// The sans-IO engine: all connections of one endpoint. It never reads a
// clock, calls the kernel, starts a thread or touches a NIC: time comes in
// as `now` (ns), randomness from its own seeded Rng, frames in through
// on_rx() and out through poll_tx(), completions through poll_completions().
// One thread drives an Engine at a time (the "owning thread").
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <variant>
#include <vector>

#include "core/config.hpp"
#include "core/conn_manager.hpp"
#include "core/path_alarms.hpp"
#include "core/qp.hpp"
#include "core/ring.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "core/types.hpp"
#include "wire/frame_view.hpp"
#include "wire/gather_frame.hpp"
#include "wire/rx_frame.hpp"

namespace omrc::core {

/// errno-style results (0 = success; positive errno values).
inline constexpr int kOk = 0;
/// Control frames queued beyond this are dropped and counted (ctrl_queue_overflow).
inline constexpr std::size_t kCtrlQueueLimit = 8192;
/// A QPN's low bits index the engine's QP table; the bits above are a generation.
inline constexpr std::uint32_t kQpIndexBits = 12;
inline constexpr std::uint32_t kQpIndexMask = (1u << kQpIndexBits) - 1;
static_assert(kQpIndexBits == kQpnShardShift, "the shard sits right above the QP index (EngineConfig::shard)");
/// Path events kept until polled.
inline constexpr std::size_t kPathEventLimit = 1024;

/// Commands accepted by submit().
struct CmdCreateQp { QpCaps caps{}; };
struct CmdModifyQp { std::uint32_t qpn = 0; QpState state = QpState::init; QpAttr attr{}; std::uint32_t mask = 0; };
struct CmdDestroyQp { std::uint32_t qpn = 0; };
struct CmdPostSend { std::uint32_t qpn = 0; std::span<const SendRequest> wrs{}; };
struct CmdPostRecv { std::uint32_t qpn = 0; std::span<const RecvRequest> wrs{}; };
struct CmdLinkChange { std::uint32_t plane = 0; bool up = true; };
struct CmdDenyEv { std::uint32_t qpn = 0; std::uint32_t ev = 0; };
/// Sends an EV probe (endpoint request EV_PROBE) to the QP's peer NIC on
/// `ev`: the answer (EETH) measures that path's round trip
/// (QpStats::ev_probe_answers, last_ev_probe_rtt_ns).
struct CmdProbeEv { std::uint32_t qpn = 0; std::uint32_t ev = 0; };
/// Shared receive queues (core/srq.hpp). create: max_wr 1..65536, limit ≤
/// max_wr (0: disarmed); the new SRQ's number in SubmitResult::srqn.
struct CmdCreateSrq { std::uint32_t pd = 0; std::uint32_t max_wr = 0; std::uint32_t limit = 0; };
/// modify (IBV_SRQ_MAX_WR, IBV_SRQ_LIMIT): max_wr may grow, or shrink to no
/// fewer than it holds; limit ≤ max_wr arms the limit event (0 disarms).
inline constexpr std::uint32_t kSrqAttrMaxWr = 1u << 0;
inline constexpr std::uint32_t kSrqAttrLimit = 1u << 1;
struct CmdModifySrq { std::uint32_t srqn = 0; std::uint32_t mask = 0; std::uint32_t max_wr = 0; std::uint32_t limit = 0; };
/// EBUSY while QPs use it; its receives not taken go with it, uncompleted (ibverbs).
struct CmdDestroySrq { std::uint32_t srqn = 0; };
struct CmdPostSrqRecv { std::uint32_t srqn = 0; std::span<const RecvRequest> wrs{}; };
/// Encrypted mode: begins the QP's next transmit key epoch (a new SPI of the
/// peer's, its key derived from the master key). EINVAL: not encrypted or not
/// RTS; EOPNOTSUPP: its key was given, not derived; EBUSY: packets first sent
/// before the last rotation are not all acknowledged yet (try again later).
struct CmdRotateKey { std::uint32_t qpn = 0; };
using Command = std::variant<CmdCreateQp, CmdModifyQp, CmdDestroyQp, CmdPostSend, CmdPostRecv, CmdLinkChange, CmdDenyEv,
                             CmdProbeEv, CmdCreateSrq, CmdModifySrq, CmdDestroySrq, CmdPostSrqRecv, CmdRotateKey>;

struct SubmitResult {
    int err = kOk;               ///< errno value
    std::uint32_t qpn = 0;       ///< CmdCreateQp: the new QP
    std::size_t bad_index = 0;   ///< post commands: first WR not accepted when err != 0
    std::uint32_t srqn = 0;      ///< CmdCreateSrq: the new SRQ
};

/// What out-of-band connection setup needs to know about a local QP.
struct QpInfo {
    std::uint32_t qpn = 0;
    std::uint16_t conn_id = 0;
    QpState state = QpState::reset;
    std::uint32_t rcv_psn = 0;  ///< every PSN before this one arrived (rtr on; rq_psn until the first)
};

class Engine {
public:
    Engine(const EngineConfig& cfg, PlacementTarget* memory);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    /// A burst of received frames (views valid for the call; none is
    /// referenced after return). Acknowledgements are decided once per QP at
    /// the end of the burst: at most one SACK per QP per burst.
    void on_rx_burst(std::span<const wire::RxFrame> frames, TimeNs now);
    /// One received frame from `plane`: a burst of one.
    void on_rx(std::span<const std::uint8_t> frame, std::uint8_t plane, TimeNs now);
    /// Runs every timer due at `now`.
    void on_timer(TimeNs now);
    /// The peer's DREQ gave its receive edge (every PSN before `rcv_psn`
    /// arrived there): the packets below it count as acknowledged and
    /// their messages complete, before the QP goes to ERR. Their own ACKs
    /// may still be on the way, overtaken by the DREQ, or were never sent
    /// (the peer's QP went first). An edge beyond what this QP sent is
    /// ignored, and so is any edge for an encrypted QP (the DREQ is not
    /// authenticated; its acknowledgements are). Returns the packets it acknowledged.
    std::uint32_t on_peer_receive_edge(std::uint32_t qpn, std::uint32_t rcv_psn, TimeNs now);
    /// Verbs-layer commands (QP lifecycle, posting, link events).
    SubmitResult submit(const Command& cmd, TimeNs now);
    /// Frames ready to send. Payload segments point into registered memory
    /// and must stay readable until the driver releases them.
    std::size_t poll_tx(std::span<wire::GatherFrame> out, TimeNs now);
    std::size_t poll_completions(std::span<Completion> out);
    /// Path state changes since the last call, oldest first (at most
    /// kPathEventLimit are kept; older ones are dropped and counted).
    std::size_t poll_path_events(std::span<PathEvent> out);
    /// Earliest time on_timer() has work; kNever when idle.
    [[nodiscard]] TimeNs next_wakeup() const noexcept;

    [[nodiscard]] const EngineStats& stats() const noexcept { return stats_; }
    [[nodiscard]] const Qp* find_qp(std::uint32_t qpn) const noexcept;
    [[nodiscard]] QpInfo qp_info(std::uint32_t qpn) const noexcept;
    /// A live SRQ by number, or null.
    [[nodiscard]] const Srq* find_srq(std::uint32_t srqn) const noexcept;
    [[nodiscard]] const EngineConfig& config() const noexcept { return cfg_; }
    /// Local ports (planes) that are up, bit p = plane p.
    [[nodiscard]] std::uint32_t local_plane_mask() const noexcept { return local_up_; }
    /// Whether some QP (not in RESET) has `peer` as its peer: the engines a
    /// device shows an endpoint request to (runtime/frame_exchange.hpp).
    [[nodiscard]] bool has_peer(const wire::Ipv6Addr& peer) const noexcept;
    /// Planes a peer said are up (port-status updates); all planes until told otherwise.
    [[nodiscard]] std::uint32_t peer_plane_mask(const wire::Ipv6Addr& peer) const noexcept;
    /// The connection manager this engine carries (shard 0 with
    /// EngineConfig::connection_manager), or null. Called on the owning
    /// thread like the engine: what it queues goes out at the next poll_tx(),
    /// its timers run in on_timer() and count in next_wakeup(), and the CM
    /// frames that arrive reach it through on_rx_burst().
    [[nodiscard]] ConnManager* conn_manager() noexcept { return cm_.get(); }
    [[nodiscard]] const ConnManager* conn_manager() const noexcept { return cm_.get(); }

private:
    // engine.cpp: commands and lifecycle
    SubmitResult create_qp(const CmdCreateQp& c, TimeNs now);
    SubmitResult modify_qp(const CmdModifyQp& c, TimeNs now);
    SubmitResult destroy_qp(const CmdDestroyQp& c);
    SubmitResult post_send(const CmdPostSend& c, TimeNs now);
    /// Builds the sender's transmit ring and EV set on a QP's first post.
    void ensure_sender(Qp& qp);
    SubmitResult post_recv(const CmdPostRecv& c);
    // engine_srq.cpp: shared receive queues
    SubmitResult create_srq(const CmdCreateSrq& c);
    SubmitResult modify_srq(const CmdModifySrq& c);
    SubmitResult destroy_srq(const CmdDestroySrq& c);
    SubmitResult post_srq_recv(const CmdPostSrqRecv& c);
    Srq* srq_by_num(std::uint32_t srqn) noexcept;
    // engine_psp.cpp: encrypted mode (docs/PROTOCOL.md §12)
    /// INIT→RTR with kAttrSecurity: the QP's security associations; EINVAL
    /// when a master key it needs is missing.
    int set_security(Qp& qp, const QpAttr& a);
    void clear_security(Qp& qp) noexcept;
    SubmitResult rotate_key(const CmdRotateKey& c);
    /// Rewrites the plain frame `g` of `qp` as a sealed one: clear part in
    /// g.header, cipher text and ICV in an engine buffer valid until the next
    /// poll_tx(), ICRC in g.tail. False (frame not sendable) when the headers
    /// do not fit or no buffer is left.
    bool seal_frame(Qp& qp, wire::GatherFrame& g);
    /// What open_frame() did with a received frame.
    enum class Opened : std::uint8_t { plain, opened, dropped };
    /// Walks a received frame once: not a sealed frame → plain (for the
    /// plain parser). A sealed one: checks ICRC, SPI, epoch, replay and ICV,
    /// then writes the plain frame to rx_plain_ and points `out` at it
    /// (opened, `qp` its QP), or drops it, counted, nothing changed.
    Opened open_frame(const wire::RxFrame& in, wire::RxFrame& out, Qp*& qp);
    QpSecurity::RxEpoch* rx_epoch_for(Qp& qp, std::uint32_t spi);
    /// Our receiver master keys (security::receiver_master_key of our address), at construction.
    void derive_receiver_masters();
    bool derive_rx_epoch(const Qp& qp, std::uint32_t spi, QpSecurity::RxEpoch& ep) const;
    /// Makes qp.rq hold at least `need` receives, taking the missing ones
    /// from the QP's SRQ (all or none, oldest first); false when it cannot
    /// (no SRQ, or too few posted). Raises the SRQ's limit event when due.
    bool bind_receives(Qp& qp, std::size_t need);
    /// Whether a receive is there for the QP's next message (its own or its SRQ's).
    [[nodiscard]] static bool receive_ready(const Qp& qp) noexcept {
        return !qp.rq.empty() || (qp.srq != nullptr && !qp.srq->wrs.empty());
    }
    SubmitResult link_change(const CmdLinkChange& c, TimeNs now);
    /// Operator denial of an EV (CmdDenyEv): it leaves the QP's active set for good.
    SubmitResult deny_ev(const CmdDenyEv& c);
    Qp* qp_by_num(std::uint32_t qpn) noexcept;
    void enter_error(Qp& qp, WcStatus first_status, TimeNs now);
    void complete(const Completion& c) { completions_.push_back(c); }
    /// Puts the QP on the transmit list when it has something to send.
    void want_tx(Qp& qp) {
        if (!qp.tx_listed && qp.has_tx_work()) {
            qp.tx_listed = true;
            tx_active_.push_back(&qp);
        }
    }
    /// (Re)arms the QP's timer after one of its deadlines moved earlier.
    void arm_timer(Qp& qp) {
        const TimeNs d = qp.deadline();
        if (d < qp.timer_armed_ns) {
            qp.timer_armed_ns = d;
            push_timer(d, qp.qpn);
        }
    }
    void push_timer(TimeNs at, std::uint32_t qpn);
    void rx_one(const wire::RxFrame& frame, TimeNs now);
    void flush_acks(TimeNs now);
    void prepare_specs(Qp& qp);
    std::uint32_t usable_planes(Qp& qp) noexcept;
    /// Bit per configured plane.
    [[nodiscard]] std::uint32_t all_planes() const noexcept { return (1u << cfg_.planes) - 1; }  // planes ≤ 15

    // engine_tx.cpp: segmentation, send gates, path choice, frames, probes
    bool send_one_data(Qp& qp, wire::GatherFrame& out, TimeNs now);
    /// The path policy's next slot, with stale slots limited (EngineConfig::stale_path_packets).
    int select_slot(Qp& qp, std::uint32_t planes, TimeNs now);
    /// `response_src`: a READ response packet's bytes (response_source).
    void build_data_frame(Qp& qp, std::uint32_t psn, TxPkt& p, bool retransmit, wire::GatherFrame& out, TimeNs now,
                          const std::uint8_t* response_src);
    /// Whether the message to segment next may go: not a READ beyond max_rd_atomic.
    static bool read_gate_open(const Qp& qp) noexcept;
    /// A READ response packet's bytes [offset, offset+len) from our MR, in
    /// `src`; false when the MR no longer holds them (the QP entered ERR).
    bool response_source(Qp& qp, const SendMsg& m, std::uint32_t offset, std::uint32_t len, const std::uint8_t*& src,
                         TimeNs now);
    /// True when the QP could send another data packet right now (queue, windows).
    bool can_send_more(const Qp& qp, std::uint64_t cwnd) const noexcept;
    /// The send gates of a `len`-byte packet: the congestion window `cwnd`
    /// (a packet always goes with nothing in the pipe) and, in credit mode, the credit.
    static bool may_send(const Qp& qp, std::uint32_t len, std::uint64_t cwnd) noexcept;
    void send_probe(Qp& qp, const PathSet::ProbeDue& due, TimeNs now);
    SubmitResult probe_ev(const CmdProbeEv& c, TimeNs now);

    // engine_sack.cpp: what the peer's receiver sends back
    void on_sack(Qp& qp, const wire::FrameView& f, TimeNs now);
    void on_nack(Qp& qp, const wire::FrameView& f, TimeNs now);
    void on_aeth(Qp& qp, const wire::FrameView& f, TimeNs now);
    /// An RNR NAK for `psn` (in the send window): wait (IBTA timer code), then resend it.
    void on_rnr_nak(Qp& qp, std::uint32_t psn, std::uint8_t timer_code, TimeNs now);
    /// The message of `psn` (in the send window) completes with `st`; the
    /// earlier outstanding ones are flushed and the QP enters ERR.
    void fail_message(Qp& qp, std::uint32_t psn, WcStatus st, TimeNs now);
    /// Round trip of the transmission the SACK's trigger echo names, or 0.
    TimeNs rtt_sample(const Qp& qp, const wire::SethHdr& s, std::uint16_t ts_echo, TimeNs now) const noexcept;
    /// `marked`: the packet arrived with ECN CE (the SACK's trigger, with M = SKIP_ONCE).
    void ack_packet(Qp& qp, std::uint32_t psn, TimeNs now, std::uint64_t& acked_bytes, bool marked = false);
    void advance_una(Qp& qp, TimeNs now);
    /// SACK M field: skip the EV once, or give it up.
    void on_skip_signal(Qp& qp, const wire::SethHdr& s, TimeNs now);
    /// CC_STATE of a SACK: delivered bytes (returned), held packets, penalty, restore.
    std::uint64_t on_cc_state(Qp& qp, const wire::CcStateHdr& cc, TimeNs now);
    /// Evidence from one SACK: its cumulative PSN and the bitmap from cack + 1
    /// (bit k = PSN cack + 1 + k)
    /// (valid = false when the SACK's bitmap starts elsewhere, or for timers).
    /// What one SACK says of the receiver's state when it was built: every
    /// PSN ≤ cack received, and for the 64 PSNs from `base` (> cack) which
    /// were (bit set) and which were not (bit clear).
    struct SackView {
        bool valid = false;
        std::uint32_t cack = 0;
        std::uint32_t base = 0;     ///< PSN of bitmap bit 0 (cack + sack_offset)
        std::uint64_t bitmap = 0;
        TimeNs horizon_ns = 0;      ///< latest send time of a packet sent once that the SACK shows received (0: none)
        /// Whether the SACK shows `psn` received (known), and which.
        [[nodiscard]] bool reports(std::uint32_t psn, bool& received) const noexcept;
    };

    // engine_loss.cpp: loss detection
    void mark_lost(Qp& qp, std::uint32_t psn, bool front);
    /// Hands the packets an EV slot tracks to the window sweep (before the slot's ring is cleared).
    void untrack_slot(Qp& qp, std::size_t slot);
    /// Marks what the slot has in flight lost (to be resent elsewhere now).
    void resend_slot(Qp& qp, std::size_t slot);
    /// Returns true when the slot still has an older packet to decide later.
    bool infer_losses_on_path(Qp& qp, std::size_t slot, const SackView& sack, TimeNs now);
    /// infer_losses_on_path on every slot waiting for it (Qp::infer_pending)
    /// with `sack` as evidence (none: the timers); returns the earliest time
    /// one still undecided must be looked at again (kNever: none).
    TimeNs infer_pending_losses(Qp& qp, const SackView& sack, TimeNs now);
    /// RACK-style loss detection over the packets a SACK reports missing.
    void detect_losses_by_send_order(Qp& qp, const SackView& sack, TimeNs now);
    /// The latest send time of a packet sent once and acknowledged, over every plane.
    static TimeNs latest_delivered_send(const Qp& qp) noexcept;
    /// The latest send time of a packet sent once that this SACK shows received.
    /// (the trigger counts when its echo names the transmission, as for an RTT sample).
    TimeNs reported_send_horizon(const Qp& qp, const wire::SethHdr& s, std::uint16_t ts_echo, TimeNs now) const noexcept;
    /// Each EV's oldest unacknowledged packet against the EV timeout
    /// `timeout`: an overdue one resends what the EV carries (and may retire
    /// it). Returns the earliest timer still running (kNever: none).
    TimeNs detect_losses_by_timeout(Qp& qp, TimeNs timeout, TimeNs now);
    /// The sweep of the window for packets no EV tracks; returns when it is
    /// due again (kNever: no such packet left).
    TimeNs sweep_untracked(Qp& qp, TimeNs timeout, TimeNs now);
    /// The QP-wide reorder window (RttEstimator::reorder_window).
    [[nodiscard]] TimeNs reorder_window(const Qp& qp) const noexcept { return qp.rtt.reorder_window(cfg_.ev_timeout_ns); }

    // engine_timers.cpp: the sender's timers
    TimeNs ev_timeout(Qp& qp) noexcept;
    void sender_timers(Qp& qp, TimeNs now);

    // engine_path_alarms.cpp: retirements and what they tell
    /// resend_slot, then the slot's EV is retired (and, where T1s are known,
    /// the QP's other EVs through its T1; a path alarm is raised for the
    /// engine's other QPs unless `cause` is itself an alarm).
    void retire_slot(Qp& qp, std::size_t slot, TimeNs now, RetireCause cause);
    /// Retires the QP's EVs through the (plane, T1)s that other QPs toward
    /// the same destination T0 gave up within cfg_.path_alarm_ns.
    void apply_path_alarms(Qp& qp, TimeNs now);
    /// Tells `qp`'s peer engine of a (plane, T1) `qp` retired (an ERTH
    /// PATH_ALARM, OpenMRC's), once per (peer, plane, T1) within the alarm time.
    void send_path_alarm(Qp& qp, std::uint8_t plane, std::uint16_t group, TimeNs now);

    void path_event(const PathEvent& e);

    // engine_cm.cpp: the connection manager's carriage (docs/PROTOCOL.md §13.1)
    /// A CM frame: DestQP 1, the GSI DETH, one message; else cm_invalid.
    void on_cm(const wire::FrameView& f, const wire::RxFrame& frame, TimeNs now);
    /// Builds the frame of one outgoing CM message into `g` (its message in
    /// cm_slots_, valid until the next poll_tx); false when it has no route.
    bool cm_frame(const CmOutgoing& o, wire::GatherFrame& g);
    /// CmKeys over the engine's master keys (§13.4).
    class CmKeyring final : public CmKeys {
    public:
        explicit CmKeyring(const Engine& e) : e_(e) {}
        [[nodiscard]] bool has_key(std::uint8_t select) const override;
        bool own_check(std::uint8_t select, const std::array<std::uint8_t, 16>& nonce,
                       std::span<const std::uint8_t> context, std::array<std::uint8_t, 16>& out) override;
        bool peer_check(const wire::Ipv6Addr& peer, std::uint8_t select, const std::array<std::uint8_t, 16>& nonce,
                        std::span<const std::uint8_t> context, std::array<std::uint8_t, 16>& out) override;

    private:
        const Engine& e_;
    };

    // engine_rx.cpp: receiver
    void on_data(Qp& qp, const wire::FrameView& f, TimeNs now);
    /// Places a SEND packet into the receive its RQMSN names; false when it
    /// was refused (RNR NAK, a receive too small, bad fields: counted, NAKed).
    bool place_send(Qp& qp, const wire::FrameView& f, TimeNs now);
    /// Responder: checks a READ request (access, memory, max_dest_rd_atomic)
    /// and keeps it until cack reaches it; false when refused (NAKed, counted).
    bool accept_read(Qp& qp, const wire::FrameView& f, TimeNs now);
    /// Responder: queues the response of every accepted READ that cack has
    /// reached, while the send queue has room for responses.
    void answer_reads(Qp& qp, TimeNs now);
    /// Requester: places a READ response packet into the READ its RQMSN
    /// names; false when it names none or lies outside it (dropped, counted).
    bool place_read_response(Qp& qp, const wire::FrameView& f, TimeNs now);
    void on_trimmed(Qp& qp, const wire::FrameView& f, TimeNs now);
    void on_probe(Qp& qp, const wire::FrameView& f, std::uint8_t plane, TimeNs now);
    /// `no_reply`: another engine of the device answers this request (RxFrame::no_reply).
    void on_endpoint(const wire::FrameView& f, std::uint8_t plane, bool no_reply, TimeNs now);
    /// The live QP whose peer is `addr` (endpoint messages name no QP), or null.
    Qp* qp_of_peer(const std::uint8_t* addr) noexcept;
    /// Notes a received data packet for the acknowledgement at the end of the burst.
    void note_ack(Qp& qp, const wire::FrameView& f, bool ack_now);
    void deliver_imms(Qp& qp);
    /// grant_only: a SACK sent for its credit grant alone (nothing awaits
    /// acknowledgement): no timestamp echo, no ECN echo, no INT records.
    /// rotate: over the usable planes' reverse EVs instead of back along the
    /// last data packet's EV (a grant sent again: that path may have died).
    void send_sack(Qp& qp, TimeNs now, bool grant_only = false, bool rotate = false);
    /// Receiver credit (docs/PROTOCOL.md §11.8): a credit-mode data packet's
    /// CRTH: its request (and unscheduled bytes, charged when it arrived whole).
    void credit_rx(Qp& qp, const wire::CrthHdr& c, const wire::FrameView& f, TimeNs now);
    /// Runs the credit scheduler to `now`; lists the QPs whose grant grew.
    void credit_schedule(TimeNs now);
    /// A SACK to every listed QP whose grant no SACK has carried yet.
    void credit_send_grants(TimeNs now);
    /// The CGTH of a credit-mode QP's SACK (`s` is being built; fill_sack set its cc_type).
    void credit_fill(Qp& qp, wire::FrameSpec& s);
    /// The SACK answering a reliability probe: PR set, the probe id in
    /// ack_psn_offset, sent back on the EV and plane the probe came on.
    void send_probe_answer(Qp& qp, std::uint8_t plane, std::uint32_t ev, std::uint16_t probe_id);
    /// Fills SETH + CC_STATE from the receiver state (everything but the trigger).
    void fill_sack(Qp& qp, wire::FrameSpec& s);
    void send_transport_ack(Qp& qp);
    /// Answers an endpoint request (EETH, request id echoed) on `plane`.
    void send_ep_response(Qp& qp, std::uint8_t plane, std::uint16_t request_id, const wire::ErthHdr& req);
    /// Sends `erth` as an endpoint request to `qp`'s peer on `plane` and
    /// `ev`, under a fresh request id, and keeps it to match the answer.
    /// False when the control queue is full (nothing sent).
    bool send_ep_request(const Qp& qp, std::uint8_t plane, std::uint32_t ev, const wire::ErthHdr& erth, TimeNs now);
    /// The reverse EV of a QP on a plane, for acknowledgements with no data
    /// EV to follow (timer SACKs, endpoint messages).
    static std::uint32_t reverse_ev(const Qp& qp, std::uint8_t plane) noexcept;
    /// What a NACK names: the PSN, the EV and TSETH timestamp it arrived
    /// with, and why (three integers of one width otherwise easy to swap).
    struct NackFields {
        std::uint32_t psn = 0;
        std::uint32_t ev = 0;
        std::uint16_t ts_echo = 0;
        wire::NackReason reason = wire::NackReason::trimmed;
    };
    void send_nack(Qp& qp, const NackFields& n);
    /// An AETH NAK for the data packet `psn` (IB: BTH.PSN = the NAKed PSN,
    /// MSN = messages completed so far).
    void send_aeth_nak(Qp& qp, wire::AethSyndrome syndrome, std::uint32_t psn);
    void send_port_status(TimeNs now);
    std::uint8_t reverse_plane(Qp& qp) noexcept;
    /// The plane and EV of an acknowledgement: those of the data packet it
    /// answers when usable, else the QP's rotation over reverse EVs.
    void ack_route(Qp& qp, std::uint8_t arrived_plane, std::uint32_t data_ev, std::uint8_t& plane,
                   std::uint32_t& ev) noexcept;
    wire::GatherFrame* ctrl_slot();
    /// Addresses the QP's control spec for `plane` and `ev` (MACs, EV, SRv6 path) and tags `g` with the plane.
    wire::FrameSpec& address_ctrl(Qp& qp, std::uint8_t plane, std::uint32_t ev, wire::GatherFrame& g);
    void finish_ctrl(wire::GatherFrame& g, const wire::FrameSpec& spec);
    void drop(DropReason r) noexcept { ++stats_.rx_drops[static_cast<std::size_t>(r)]; }

    EngineConfig cfg_;
    PlacementTarget* memory_;
    Rng rng_;
    EngineStats stats_{};
    std::vector<std::unique_ptr<Qp>> qps_;   ///< index = qpn & 0xFFF
    std::vector<Qp*> live_;                  ///< every existing QP, for loops that must not scan empty slots
    std::vector<std::unique_ptr<Srq>> srqs_; ///< index = srqn - 1 (null: free)
    std::uint32_t qpn_generation_ = 1;       ///< 1 .. 2^(12 - shard_bits) - 1
    std::uint32_t tx_cursor_ = 0;            ///< round-robin over tx_active_ in poll_tx
    std::vector<Qp*> tx_active_;             ///< QPs with something to send (Qp::tx_listed)
    std::vector<Qp*> ack_list_;              ///< QPs that received data in the current burst (Qp::ack_queued)
    /// Min-heap of (deadline, qpn): each QP's earliest timer. Entries whose
    /// deadline no longer matches Qp::timer_armed_ns are stale and skipped.
    std::vector<std::pair<TimeNs, std::uint32_t>> timers_;
    Ring<wire::GatherFrame> ctrl_;           ///< control frames waiting for poll_tx
    Ring<std::uint32_t> ctrl_seal_;          ///< per ctrl_ entry: the encrypted QP to seal it for at poll_tx, 0 = plain
    std::uint32_t secure_qps_ = 0;           ///< QPs with encrypted mode (sealed frames are looked for only then)
    std::array<security::MasterKey, 2> rx_masters_{};  ///< the keys of our SPIs derive from these
    std::uint8_t rx_masters_present_ = 0;    ///< bit k: rx_masters_[k] derived
    /// Cipher text + ICV of the sealed frames of one poll_tx() (valid until the next).
    std::vector<std::unique_ptr<std::uint8_t[]>> seal_slots_;
    std::size_t seal_used_ = 0;
    std::vector<std::uint8_t> rx_plain_;     ///< the plain frame of the sealed one being received
    std::vector<std::uint8_t> rx_flat_;      ///< a header-split sealed frame made contiguous
    std::uint8_t rx_plane_ = 0;              ///< plane of the frame being received (rx_one)
    std::uint32_t rx_ev_ = 0;                ///< its EV
    const wire::IntStack* rx_telemetry_ = nullptr;  ///< its INT records (null = none), valid during rx_one
    /// Receiver credit over every credit-mode QP sending to us (configured
    /// by the first one's CcConfig; idle, and never configured, otherwise).
    CreditScheduler credit_sched_;
    TimeNs credit_next_ns_ = kNever;         ///< when the scheduler can next grant (kNever: no demand)
    std::vector<Qp*> credit_granted_;        ///< QPs whose grant grew in this run (Qp::credit_grant_listed)
    Ring<Completion> completions_{64};
    Ring<PathEvent> path_events_{64};
    /// Recent (plane, T1, destination T0) retirements on strong evidence,
    /// for the other QPs, and the alarms told to peers (EngineConfig::path_alarm_ns).
    PathAlarms path_alarms_;
    std::uint32_t local_up_ = 0;             ///< bit per local plane that is up
    std::uint32_t planes_epoch_ = 1;         ///< bumped when local_up_ or a peer's port mask changes
    struct PeerPorts { wire::Ipv6Addr addr{}; std::uint32_t up_mask = 0; };
    std::vector<PeerPorts> peer_ports_;
    TimeNs port_status_next_ns_ = kNever;
    /// Endpoint requests of ours awaiting an answer (EV probes, port-status
    /// updates), matched by request id (BTH.PSN[15:0]) and peer; the oldest
    /// is forgotten beyond kEpPendingLimit.
    struct EpRequest {
        std::uint16_t id = 0;
        std::uint32_t qpn = 0;
        wire::ErthOp op = wire::ErthOp::ev_probe;
        TimeNs sent_ns = 0;
    };
    static constexpr std::size_t kEpPendingLimit = 256;
    Ring<EpRequest> ep_pending_;
    std::uint16_t ep_request_seq_ = 0;       ///< request ids are (seq << shard_bits | shard) mod 2^16
    // Connection manager (engine_cm.cpp).
    CmKeyring cm_keys_{*this};
    std::unique_ptr<ConnManager> cm_;        ///< null: this engine carries none
    /// The messages of the CM frames of one poll_tx() (valid until the next).
    using CmSlot = std::array<std::uint8_t, wire::kCmMaxMessage + 4>;  ///< a message and its pad
    std::vector<std::unique_ptr<CmSlot>> cm_slots_;
    std::size_t cm_used_ = 0;
    /// Where the last CM frame came from: a DREP to a DREQ repeated after its
    /// connection ended has no route of its own and goes back this way.
    struct CmLastHop {
        wire::Ipv6Addr from{};
        std::uint8_t plane = 0;
        std::array<std::uint8_t, 6> mac{};
        bool valid = false;
    } cm_last_{};
};

}  // namespace omrc::core
