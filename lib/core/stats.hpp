// SPDX-License-Identifier: BSD-3-Clause
// Engine and QP counters. Plain integers, updated on the owning thread,
// read through stats() and dumped as JSON by the runtime.
#pragma once

#include <array>
#include <cstdint>

#include "core/types.hpp"
#include "wire/error.hpp"

namespace omrc::core {

/// Why the engine dropped a frame after it parsed (wire reasons are counted separately).
enum class DropReason : std::uint8_t {
    no_qp,            ///< destination QPN unknown (never existed or destroyed)
    bad_state,        ///< QP not in a state that accepts this packet
    wrong_source,     ///< data from an address that is not the QP's peer
    out_of_window,    ///< PSN beyond the receive window
    duplicate,        ///< PSN already received (bitmap or below cack)
    bad_conn_id,      ///< control packet with connection ids that do not match
    forged_ack,       ///< SACK/NACK/ACK for PSNs never sent or beyond the send edge
    stale_ack,        ///< SACK older than what is already known
    remote_access,    ///< placement refused (rkey, PD, access, bounds): NAKed
    bad_length,       ///< payload length inconsistent with MTU or message length
    trimmed,          ///< trimmed data packet (NACKed, not placed)
    rnr,              ///< SEND with no receive posted for it: RNR NAKed, not placed (the sender resends)
    recv_too_small,   ///< SEND longer than its receive buffer: NAKed (invalid request), the QP fails
    bad_read,         ///< READ response naming no READ of ours or outside it; READ request beyond max_dest_rd_atomic (NAKed)
    unexpected,       ///< opcode not expected here (e.g. EP response without request)
    // Encrypted mode (docs/PROTOCOL.md §12). Every one is decided before any state changes.
    psp_unknown_spi,  ///< sealed frame whose SPI names no encrypted QP of ours, another QP than its BTH, a key we lack
    psp_bad_tag,      ///< the ICV did not verify (tampered, forged, or sealed under another key)
    psp_replay,       ///< an IV already accepted, or older than the replay window
    psp_old_epoch,    ///< an SPI of an epoch this QP has retired
    psp_required,     ///< a plain frame for an encrypted QP
    // Connection manager (docs/PROTOCOL.md §13).
    cm_invalid,       ///< CM frame (opcode 0x64) not to QPN 1, with another DETH, or a message that does not decode
    count_
};
const char* to_string(DropReason r) noexcept;

/// A change of path state, for the runtime to log (Engine::poll_path_events).
enum class PathEventKind : std::uint8_t {
    retired,          ///< an EV left the active set (`cause` says why)
    probe_sent,       ///< a probe went out for a group with EVs out
    restored,         ///< probe answers brought `count` EVs of a group back
    local_port_down,  ///< a local port (plane) went down
    local_port_up,
    peer_ports,       ///< a peer said which of its ports are up (`count` = its plane mask)
};
enum class RetireCause : std::uint8_t { none, path_order, send_order, timeout, always_skip, with_group, path_alarm };
inline constexpr std::size_t kRetireCauses = 7;  ///< RetireCause values
const char* to_string(PathEventKind k) noexcept;
const char* to_string(RetireCause c) noexcept;

struct PathEvent {
    TimeNs at_ns = 0;
    PathEventKind kind = PathEventKind::retired;
    RetireCause cause = RetireCause::none;
    std::uint8_t plane = 0;
    std::uint16_t group = 0;    ///< T1 where known, else 0
    std::uint32_t qpn = 0;      ///< 0 for port events
    std::uint32_t ev = 0;
    std::uint32_t count = 0;    ///< restored: EVs; peer_ports: the peer's plane mask
};

struct EngineStats {
    std::uint64_t rx_frames = 0;
    std::uint64_t tx_frames = 0;
    std::uint64_t tx_ctrl_frames = 0;
    std::array<std::uint64_t, static_cast<std::size_t>(wire::WireError::count_)> rx_wire_errors{};
    std::array<std::uint64_t, static_cast<std::size_t>(DropReason::count_)> rx_drops{};
    std::uint64_t psp_seal_failures = 0;    ///< frames of encrypted QPs not sealed (headers too long, no buffer): not sent
    std::uint64_t port_status_sent = 0;
    std::uint64_t port_status_received = 0;
    std::uint64_t ep_responses_sent = 0;      ///< EETH answers to endpoint requests
    std::uint64_t ep_responses_received = 0;  ///< EETH answers matched to a request of ours
    std::uint64_t ep_requests_observed = 0;   ///< endpoint requests acted on that another engine of the device answered
    std::uint64_t ctrl_queue_overflow = 0;
    std::uint64_t path_events_dropped = 0;  ///< path events not polled before the queue filled (oldest dropped)
    std::uint64_t path_alarms_sent = 0;      ///< PATH_ALARM endpoint requests sent to peers (OpenMRC, §11.5)
    std::uint64_t path_alarms_received = 0;  ///< PATH_ALARM requests received from peers we have a QP with
    std::uint64_t path_alarms_believed = 0;  ///< of those: named a (plane, T1) of our fabric, raised as our alarm
    std::uint64_t cm_frames_received = 0;    ///< CM messages handed to the connection manager
    std::uint64_t cm_frames_sent = 0;
    /// CM messages not sent: no plane up at both ends, or a DREP for a
    /// DREQ whose sender this engine cannot reach (no route known).
    std::uint64_t cm_unroutable = 0;
};

/// What one plane carried for a sending QP (Qp::plane_counters, by the
/// plane of the packet's EV). Sums over planes equal the QP-wide counts.
struct PlaneCounters {
    std::uint64_t data_sent = 0;     ///< first transmissions
    std::uint64_t data_resent = 0;   ///< retransmissions
    std::uint64_t data_bytes_sent = 0;  ///< payload bytes of first transmissions
    std::uint64_t acked = 0;         ///< packets newly acknowledged (by the plane they were last sent on)
    std::uint64_t lost = 0;          ///< declared lost (any detection)
    std::uint64_t ecn_echoes = 0;    ///< SKIP_ONCE SACKs for an EV of the plane
    std::uint64_t trims = 0;         ///< trim NACKs for a packet sent on the plane
};

struct QpStats {
    std::uint64_t data_pkts_sent = 0;     ///< first transmissions
    std::uint64_t data_pkts_resent = 0;   ///< retransmissions (any cause)
    std::uint64_t data_bytes_sent = 0;
    std::uint64_t pkts_sacked = 0;        ///< packets newly acknowledged
    std::uint64_t sacks_received = 0;
    std::uint64_t nacks_received = 0;
    std::uint64_t trims_nacked = 0;       ///< NACK TRIMMED received (sender) / sent (receiver side counts below)
    std::uint64_t ecn_echoes = 0;         ///< SACKs with M = SKIP_ONCE (the triggering packet saw CE) for an EV of ours
    std::uint64_t losses_path_order = 0;  ///< losses inferred from a later packet on the same EV
    std::uint64_t losses_timeout = 0;     ///< packets declared lost by an EV timeout or the QP scan
    std::uint64_t losses_send_order = 0;  ///< packets overtaken by a later-sent packet acknowledged on any EV
    std::uint64_t losses_send_order_cross_plane = 0;  ///< of those, found only against another plane's (a plane silent as a whole)
    std::uint64_t resent_on_retirement = 0;  ///< packets in flight on an EV when it was retired (resent at once)
    std::uint64_t ev_timeouts = 0;
    std::uint64_t ev_retirements = 0;
    std::uint64_t ev_retirements_with_group = 0;  ///< of those: EVs that left with another of their (plane, T1)
    /// ev_retirements by RetireCause (index: the enum's value; `none` stays 0).
    std::array<std::uint64_t, kRetireCauses> ev_retirements_by_cause{};
    std::uint64_t ev_parked_with_plane = 0;  ///< slots parked, not retired, when their plane's streak completed (groups not known)
    std::uint64_t ev_restorations = 0;
    std::uint64_t probes_sent = 0;
    std::uint64_t probe_answers = 0;
    std::uint64_t send_completions = 0;
    std::uint64_t always_skip_received = 0;  ///< SACKs with M = ALWAYS_SKIP (the EV is given up)
    std::uint64_t restores_received = 0;     ///< SACKs with CC_STATE restore_cwnd
    std::uint64_t penalties_received = 0;    ///< SACKs with a non-zero CC_STATE penalty
    std::uint64_t transport_acks_received = 0;  ///< positive 0xD1 ACKs acted on
    /// Packets the peer's DREQ reported arrived that no ACK had (its receive
    /// edge, Engine::on_peer_receive_edge): their ACKs were lost or overtaken.
    std::uint64_t pkts_acked_by_dreq = 0;
    std::uint64_t ev_probes_sent = 0;        ///< endpoint EV_PROBE requests
    std::uint64_t ev_probe_answers = 0;      ///< their EETH answers
    std::uint64_t last_ev_probe_rtt_ns = 0;  ///< round trip of the latest answered EV probe
    // receiver side
    std::uint64_t data_pkts_received = 0;  ///< placed
    std::uint64_t data_bytes_received = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t trims_received = 0;
    std::uint64_t ecn_received = 0;
    std::uint64_t sacks_sent = 0;
    std::uint64_t nacks_sent = 0;
    std::uint64_t naks_sent = 0;           ///< AETH NAKs (remote access)
    std::uint64_t transport_acks_sent = 0; ///< positive 0xD1 ACKs (EngineConfig::send_transport_acks)
    // encrypted mode
    std::uint64_t psp_sealed = 0;          ///< frames sealed (data and control)
    std::uint64_t psp_opened = 0;          ///< sealed frames whose ICV verified
    std::uint64_t psp_tx_rotations = 0;    ///< transmit key epochs begun (Engine CmdRotateKey)
    std::uint64_t psp_rx_rotations = 0;    ///< receive epochs the peer moved us to
    std::uint64_t recv_completions = 0;
    std::uint64_t imm_waiting_for_recv = 0; ///< WRITE_WITH_IMM held because no receive was posted
    std::uint64_t send_msgs_received = 0;  ///< SEND messages completed into receives
    std::uint64_t rnr_naks_sent = 0;       ///< SEND packets refused for want of a receive (AETH RNR NAK)
    // sender side, SEND
    std::uint64_t rnr_naks_received = 0;   ///< RNR NAKs acted on (each resends its packet after the wait)
    std::uint64_t rnr_waits = 0;           ///< RNR waits begun (each spends one of attr.rnr_retry)
    // RDMA READ
    std::uint64_t reads_completed = 0;     ///< requester: READs whose every response byte was placed
    std::uint64_t read_resp_pkts_placed = 0;  ///< requester: response packets placed (counted in data_pkts_received too)
    std::uint64_t reads_answered = 0;      ///< responder: READ requests whose response was queued
    std::uint64_t read_source_lost = 0;    ///< responder: a response's MR gone before its packet was built (the QP entered ERR)
};

}  // namespace omrc::core
