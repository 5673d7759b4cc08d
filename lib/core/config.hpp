// SPDX-License-Identifier: BSD-3-Clause
// Engine and connection configuration. Every field has a unit in its name
// and a default that works on the loopback driver.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/path_policy.hpp"
#include "core/conn_manager.hpp"
#include "routing/fabric.hpp"
#include "wire/ethernet.hpp"
#include "wire/frame.hpp"
#include "wire/psp.hpp"
#include "wire/ipv6.hpp"

namespace omrc::core {

inline constexpr std::uint32_t kMaxPlanes = routing::kMaxPlanes;
using PlaneMacs = std::array<wire::MacAddr, kMaxPlanes>;

/// The plane of an EV as an index below kMaxPlanes (an EV from the wire may
/// name any plane; the last index stands for those beyond).
[[nodiscard]] constexpr std::uint8_t ev_plane_index(std::uint32_t ev) noexcept {
    return static_cast<std::uint8_t>(std::min<std::uint32_t>(routing::ev_plane(ev), kMaxPlanes - 1));
}

/// A controller's path plan for one QP (PathPolicy::planned, rnl): per plane, the
/// T1 switches its slots cross, `t1_count` consecutive T1s (modulo the
/// plane's T1 count) from `first_t1`. A planner that knows the job's flows
/// chooses them so that flows do not share a T0-T1 link (docs/DESIGNS.md).
struct PathPlan {
    static constexpr std::uint16_t kNoT1 = 0xFFFF;     ///< first_t1: the QP has no path in this plane
    std::array<std::uint16_t, kMaxPlanes> first_t1{};  ///< per plane: the first planned T1, or kNoT1
    std::uint16_t t1_count = 0;                        ///< T1s per plane from first_t1; 0 = no plan
};

enum class CcAlgorithm : std::uint8_t {
    fixed,  ///< constant window (tests, baselines)
    nscc,   ///< NSCC (delay + ECN, quick adapt on trims)
    dcqcn,  ///< DCQCN's reaction point (rate based on ECN echoes; window = rate · RTT)
    hpcc,   ///< HPCC: window from the utilisation INT telemetry reports (needs INT; holds without)
    /// Receiver credit (GSE DQSQ / UEC RCCC-EQDS style pull): the receiver
    /// paces grants at its line rate over the QPs sending to it; a sender
    /// sends an unscheduled first burst, then only against credit (needs the
    /// credit fields, docs/PROTOCOL.md §11.8: carried by the simulator only).
    credit,
};

/// Receiver-credit parameters (lib/core/cc_credit.cpp, docs/DESIGNS.md).
struct CreditConfig {
    /// Sender: bytes it may send without credit when it starts from idle
    /// (nothing in flight, nothing queued), as EQDS's speculative first
    /// burst; 0 = one BDP (planes · link rate · base RTT, EQDS's choice).
    /// 64 KB: measured on incast_32 (8 × 100G, BDP 623 KB), one BDP a
    /// sender trims 3,999 packets at the start, 64 KB none (docs/DESIGNS.md).
    std::uint64_t unscheduled_bytes = 65536;
    /// Receiver: credit one QP gets per round-robin turn (bytes, ≥ 1).
    std::uint64_t quantum_bytes = 16384;
    /// Receiver: how far its grants may run ahead of its line rate (the
    /// pacing bucket's depth, bytes); 0 = one BDP plus what its ACK delay
    /// bound sends at line rate (grants ride SACKs, which may wait that long).
    std::uint64_t ahead_bytes = 0;
    /// Receiver: grants pace at this fraction of planes · link rate, (0, 1].
    double rate_ratio = 1.0;
};

/// HPCC's parameters (lib/core/cc_hpcc.cpp; Li et al., SIGCOMM 2019).
struct HpccConfig {
    double eta = 0.95;                 ///< target utilisation η, (0, 1]
    std::uint32_t max_stage = 5;       ///< additive-increase rounds before a multiplicative adjustment
    double wai_ratio = 0.0025;         ///< additive increase W_AI / initial window (ours: (1 − η) / 20)
};

/// DCQCN's reaction-point parameters (lib/core/cc_dcqcn.cpp). Defaults are
/// the published ones (Zhu et al., SIGCOMM 2015) where one exists; the
/// increase steps are fractions of the QP's line rate (every plane's
/// link_rate_bps together) so that they scale with it.
struct DcqcnConfig {
    double g = 1.0 / 256;                         ///< alpha gain, (0, 1]
    std::uint64_t alpha_period_ns = 55'000;       ///< alpha decays by (1 − g) per period without a notification
    std::uint64_t cnp_interval_ns = 50'000;       ///< at most one rate cut per interval (a CNP generator's spacing)
    std::uint64_t increase_period_ns = 55'000;    ///< rate-increase timer period
    std::uint64_t byte_counter_bytes = 10'000'000; ///< acknowledged bytes per byte-counter increase event
    std::uint32_t fast_recovery_stages = 5;       ///< F: increase events of fast recovery before additive increase
    double ai_ratio = 0.001;                      ///< additive increase step RAI / line rate (40 Mb/s of 40 Gb/s)
    double hai_ratio = 0.01;                      ///< hyper increase step RHAI / line rate (ours: 10 · RAI)
};

struct CcConfig {
    CcAlgorithm algorithm = CcAlgorithm::nscc;
    std::uint64_t fixed_window_bytes = 4u << 20;  ///< fixed: the window; nscc: unused
    std::uint64_t base_rtt_ns = 10'000;           ///< nscc, dcqcn: unloaded round trip
    std::uint64_t link_rate_bps = 100'000'000'000; ///< nscc, dcqcn: one plane's rate; BDP = rate · base_rtt · planes
    double target_delay_ratio = 0.75;             ///< nscc: target queueing delay as a fraction of base_rtt
    double max_window_bdp = 1.5;                  ///< nscc: initial and maximum window in BDPs
    DcqcnConfig dcqcn{};                          ///< dcqcn only
    HpccConfig hpcc{};                            ///< hpcc only
    CreditConfig credit{};                        ///< credit only
};

/// Per-endpoint engine configuration.
struct EngineConfig {
    std::uint32_t planes = 8;                  ///< NIC ports, one per plane (≤ kMaxPlanes)
    wire::FrameMode mode = wire::FrameMode::plain;
    PlaneMacs local_macs{};                    ///< our MAC on each plane
    wire::Ipv6Addr local_addr{};               ///< inner (plain: only) IPv6 source
    routing::FabricDesc fabric{};              ///< srv6 mode: the fabric and our host index in it
    std::uint32_t local_host = 0;
    std::uint64_t seed = 1;                    ///< engine RNG seed (rkeys are the verbs layer's)
    bool compute_icrc = true;                  ///< false: ICRC field left zero (simulation without payload)
    bool verify_icrc = true;
    std::uint8_t dscp_data = wire::kDscpData;
    std::uint8_t dscp_control = wire::kDscpControl;

    // Receiver ACK policy (docs/PROTOCOL.md "Acknowledgements"). A SACK goes
    // out at the end of a receive burst (at most one per QP per burst) when a
    // packet in it asked for one (BTH AckReq: the sender cannot send more
    // without it, or the packet is a retransmission), carried CE, was a
    // duplicate, or when this many packets await acknowledgement; otherwise
    // the delay bound sends it.
    std::uint32_t ack_every_pkts = 16;         ///< coalescing count, 1..64 (one SACK bitmap)
    std::uint64_t ack_delay_ns = 2'000;        ///< longest a received packet waits for its SACK
    /// Also send a positive Transport ACK (0xD1, AETH syndrome 0, BTH.PSN =
    /// cumulative PSN, MSN = messages completed) with every SACK, for
    /// requesters that complete work requests on them. Received ones are
    /// always understood.
    bool send_transport_acks = false;

    // Paths.
    std::uint64_t ev_timeout_ns = 200'000;     ///< EV timeout before any RTT sample
    std::uint64_t min_ev_timeout_ns = 20'000;  ///< EV timeout = max(this, 2 · max RTT + reorder window)
    std::uint64_t probe_interval_ns = 50'000;  ///< probe period of a (plane, T1) group with EVs out (fixed, no backoff)
    std::uint32_t probe_successes_to_restore = 3;
    /// srv6 mode: when a QP retires a (plane, T1) on strong evidence, the
    /// engine's other QPs toward the same destination T0 that send within
    /// this long retire their EVs through it too, without waiting for losses
    /// of their own (0 = each QP finds out alone). docs/PROTOCOL.md §11.5.
    std::uint64_t path_alarm_ns = 50'000;
    /// srv6 mode, with path_alarm_ns: such a retirement is also told to the
    /// QP's peer engine (an ERTH PATH_ALARM, an OpenMRC extension), whose QPs
    /// then leave that (plane, T1) for every destination; and PATH_ALARMs
    /// from peers are believed. Off: neither sent nor acted on (an MRC peer
    /// that does not know the op answers or drops it). Off by default: on
    /// t1_loss_allreduce it ends an idle host's losses into the dead T1 in
    /// two seeds of four but lengthens the outage's steps by up to 1 % in two
    /// (docs/SIMULATOR.md §5 (b)). docs/PROTOCOL.md §11.5.
    bool peer_path_alarms = false;
    /// Adaptive spray: a slot whose EV has been acknowledged before but not
    /// for max(2 · rtt_max, min_ev_timeout_ns) (the QP was idle, or the slot
    /// was not used) is stale: what was known of its path may no longer
    /// hold. A stale slot carries at most this many packets until one of
    /// them is acknowledged; its turns go to its plane's other slots meanwhile. A path that died
    /// while the QP was idle then costs this many packets, not one per
    /// rotation until loss detection retires it. 0: no such limit; at most
    /// 255 (larger values count as 255).
    /// docs/PROTOCOL.md §11.5.
    std::uint32_t stale_path_packets = 2;
    /// Policy reps: how long an EV timeout freezes exploration (ns).
    std::uint64_t reps_freeze_ns = 100'000;
    std::uint32_t ev_track_depth = 16;         ///< packets tracked per EV for path-order loss inference
    std::uint64_t port_status_repeat_ns = 100'000; ///< re-send port-status updates this often while a port is down

    std::uint32_t max_qps = 1024;

    /// Workers (docs/ARCHITECTURE.md, "Workers"): a device with several
    /// workers runs one engine per worker, a shard of its QPs. The QPN names
    /// the shard, so that a frame finds its engine from BTH.DestQP alone:
    ///   QPN = generation << (12 + shard_bits) | shard << 12 | index
    /// (index < 4096, the engine's QP table; the generation keeps a destroyed
    /// QP's number from coming back soon and wraps at 2^(12 - shard_bits) - 1).
    /// Endpoint requests carry the shard in the low shard_bits of their
    /// request id (BTH.PSN[15:0]), so that the answer comes back to it.
    /// shard_bits = 0: one engine, numbered as ever.
    std::uint32_t shard = 0;       ///< this engine's shard, < 2^shard_bits
    std::uint32_t shard_bits = 0;  ///< 0..kMaxShardBits

    /// The connection manager (docs/PROTOCOL.md §13): shard 0's engine runs
    /// one (Engine::conn_manager()) and carries its messages (opcode 0x64 to
    /// QPN 1); the other shards drop CM frames (multi-worker steering sends
    /// QPN 1 to shard 0).
    bool connection_manager = true;
    CmLimits cm_limits{};
    /// Frames the engine addresses without a QP (CM messages) go on plane p
    /// to next_hop_macs[p] when bit p of next_hop_mask is set (a routed
    /// fabric's gateway), else to the MAC the peer gave for that plane.
    PlaneMacs next_hop_macs{};
    std::uint32_t next_hop_mask = 0;

    /// Encrypted mode (docs/PROTOCOL.md §12): the device's PSP master keys.
    /// A QP opened with QpAttr::encrypt derives the keys of its SPIs from
    /// them; without the master key its SPIs name, it cannot be encrypted.
    struct Security {
        std::array<std::array<std::uint8_t, 32>, 2> master_keys{};  ///< AES-256 CMAC keys (SPI bit 31 picks one)
        std::uint8_t present = 0;       ///< bit k: master_keys[k] is set
        std::uint8_t key_select = 0;    ///< the master key our new SPIs name (0 or 1)
        std::uint32_t replay_window = 4096;  ///< IVs remembered per receive epoch: a power of two, 64..65536
    } security{};
};

/// At most 2^kMaxShardBits engines (workers) per device.
inline constexpr std::uint32_t kMaxShardBits = 4;
inline constexpr std::uint32_t kQpnShardShift = 12;  ///< = kQpIndexBits (engine.hpp)

/// The shard a QPN of a device with `shard_bits` names.
[[nodiscard]] constexpr std::uint32_t qpn_shard(std::uint32_t qpn, std::uint32_t shard_bits) noexcept {
    return (qpn >> kQpnShardShift) & ((1u << shard_bits) - 1);
}
/// The shard an endpoint request id (BTH.PSN[15:0] of EP_REQUEST/EP_RESPONSE) names.
[[nodiscard]] constexpr std::uint32_t request_id_shard(std::uint32_t request_id, std::uint32_t shard_bits) noexcept {
    return request_id & ((1u << shard_bits) - 1);
}
/// The fewest shard bits that number `shards` shards (1 → 0, 2 → 1, 3..4 → 2, ...).
[[nodiscard]] constexpr std::uint32_t shard_bits_for(std::uint32_t shards) noexcept {
    std::uint32_t bits = 0;
    while ((1u << bits) < shards) ++bits;
    return bits;
}

/// Capacities fixed at QP creation (ibverbs qp_init_attr.cap).
struct QpCaps {
    std::uint32_t max_send_wr = 256;
    std::uint32_t max_recv_wr = 256;
    std::uint32_t max_send_sge = 4;   ///< ≤ wire::GatherFrame::kMaxSegments
    std::uint32_t max_recv_sge = 1;
    std::uint32_t max_inline_data = 256;
    /// A shared receive queue of the same engine (CmdCreateSrq) that the
    /// QP's messages take their receives from instead of a receive queue of
    /// its own (max_recv_wr is then ignored); 0: none.
    std::uint32_t srqn = 0;
};

/// The most RDMA READs a QP has in flight as requester, and answers at once
/// as responder (the device's max_qp_rd_atom / max_qp_init_rd_atom).
inline constexpr std::uint8_t kMaxRdAtomic = 16;

/// Attributes for RESET→INIT→RTR→RTS (ibverbs ibv_qp_attr, the parts OpenMRC uses).
struct QpAttr {
    // INIT
    std::uint32_t access_flags = 0;     ///< remote access this QP allows (AccessFlags)
    std::uint32_t pd = 0;               ///< protection domain handle
    // RTR
    std::uint32_t dest_qp_num = 0;      ///< peer QPN (24 bits)
    std::uint32_t rq_psn = 0;           ///< first PSN expected from the peer
    std::uint16_t dest_conn_id = 0;     ///< ignored: the peer's connection id is its QPN's low 16 bits (as MRC builders fill spdcid/dpdcid)
    wire::Ipv6Addr peer_addr{};         ///< peer NIC inner IPv6 address
    PlaneMacs peer_macs{};              ///< next-hop MAC per plane
    std::uint32_t peer_host = 0;        ///< srv6 mode: peer host index in the fabric
    std::uint32_t mtu_bytes = 4096;     ///< payload per packet: 64..4096, a multiple of 64
    std::uint32_t mpr = 8;              ///< receive window in units of 128 packets (1..32)
    PathPolicy policy = PathPolicy::adaptive;
    std::uint32_t evs = 128;            ///< active EVs, split equally over planes (≥ planes)
    std::uint32_t backup_evs = 32;      ///< known-good spares kept per QP
    PathPlan plan{};                    ///< policy planned: the T1s the QP may use (set with kAttrPath)
    /// Receiver: the IBTA RNR timer code (5 bits) its RNR NAKs carry: how
    /// long the sender waits before it sends again (rnr_timer_ns()).
    std::uint8_t min_rnr_timer = 12;    ///< 0.64 ms
    // RTS
    std::uint32_t sq_psn = 0;           ///< our first PSN
    std::uint64_t timeout_ns = 4'000'000;  ///< no progress for timeout · (retry_cnt + 1) → RETRY_EXC_ERR
    std::uint32_t retry_cnt = 7;
    /// Sender: RNR NAKs (no receive posted at the peer) it waits out per
    /// SEND before the WR fails with rnr_retry_exc_err; 7 = without limit (IBTA).
    std::uint8_t rnr_retry = 7;
    /// Requester: RDMA READs in flight at once (IBTA max_rd_atomic; 0 acts
    /// as 1), 0..kMaxRdAtomic. Set at RTR→RTS or later.
    std::uint8_t max_rd_atomic = kMaxRdAtomic;
    /// Responder: READs of the peer answered at once (IBTA
    /// max_dest_rd_atomic; 0 acts as 1), 0..kMaxRdAtomic. Set at INIT→RTR or later.
    std::uint8_t max_dest_rd_atomic = kMaxRdAtomic;
    CcConfig cc{};
    // Encrypted mode (INIT→RTR with kAttrSecurity; docs/PROTOCOL.md §12).
    /// Seal every frame of the QP (AES-GCM, PSP) and accept only sealed ones.
    bool encrypt = false;
    wire::PspVersion psp_version = wire::PspVersion::aes_gcm_256;
    /// The master key (0 or 1) the peer's SPI names (its EngineConfig::security.key_select).
    std::uint8_t psp_peer_key_select = 0;
    /// The peer's key for its SPI, as a connection manager hands it over
    /// (PSP: the receiver derives it and gives it to the sender). Unset: the
    /// key is derived here from our master key of the same index, which then
    /// must be the peer's too (a key the cluster shares). Only derived keys rotate.
    bool psp_tx_key_set = false;
    std::array<std::uint8_t, 32> psp_tx_key{};  ///< the first psp_key_bytes(psp_version) bytes
    /// Connection keys (docs/PROTOCOL.md §13.4), as the connection manager
    /// exchanges them: our receive keys derive from our receiver master key
    /// through psp_rx_nonce, the peer's (our transmit keys) from its through
    /// psp_tx_nonce (the nonce it sent). Unset: straight from the receiver
    /// master keys (§12.3).
    bool psp_nonces = false;
    std::array<std::uint8_t, 16> psp_rx_nonce{};
    std::array<std::uint8_t, 16> psp_tx_nonce{};
};

/// The wait an IBTA RNR timer code (5 bits, the AETH of an RNR NAK) stands
/// for: code 0 is 655.36 ms, codes 1..31 run from 10 µs to 491.52 ms.
[[nodiscard]] constexpr std::uint64_t rnr_timer_ns(std::uint8_t code) noexcept {
    constexpr std::uint32_t kMicros[32] = {655360, 10,    20,    30,    40,    60,    80,    120,
                                           160,    240,   320,   480,   640,   960,   1280,  1920,
                                           2560,   3840,  5120,  7680,  10240, 15360, 20480, 30720,
                                           40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};
    return std::uint64_t{kMicros[code & 31]} * 1000;
}

/// Bits of QpAttr a modify call sets (ibverbs attr_mask).
enum QpAttrMask : std::uint32_t {
    kAttrState = 1u << 0,
    kAttrAccess = 1u << 1,
    kAttrPath = 1u << 2,      ///< peer address, MACs, peer host, policy, evs, plan
    kAttrDestQpn = 1u << 3,
    kAttrRqPsn = 1u << 4,
    kAttrMtu = 1u << 5,
    kAttrMpr = 1u << 6,
    kAttrSqPsn = 1u << 7,
    kAttrTimeout = 1u << 8,
    kAttrRetryCnt = 1u << 9,
    kAttrCc = 1u << 10,
    kAttrMinRnrTimer = 1u << 11,  ///< INIT→RTR or later
    kAttrRnrRetry = 1u << 12,     ///< RTR→RTS or later
    kAttrMaxRdAtomic = 1u << 13,      ///< RTR→RTS or later
    kAttrMaxDestRdAtomic = 1u << 14,  ///< INIT→RTR or later
    kAttrSecurity = 1u << 15,         ///< INIT→RTR: encrypt, psp_version, psp_peer_key_select, psp_tx_key
};

}  // namespace omrc::core
