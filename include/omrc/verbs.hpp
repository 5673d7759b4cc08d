// SPDX-License-Identifier: BSD-3-Clause
// The OpenMRC verbs API: rdma-core vocabulary (device, pd, mr, cq, qp, wr,
// wc, sge, lkey, rkey) with OpenMRC's own types. Nothing here exposes the
// engine, the wire codecs or the driver interface.
//
// Ownership. Every object is owned by the std::unique_ptr that created it.
// A parent must outlive its children: Device > {Pd, Cq}, Pd > {Mr, Qp},
// Cq > every Qp that uses it. Destroying a parent that still has live
// children is a programming error: the library logs it and aborts (instead
// of leaving dangling pointers behind).
//
// Threads. A Device and all of its objects are used by one thread at a time
// (the owning thread; the poll-mode model of DPDK and eRPC): progress(),
// posting, polling, modify, registration and deregistration included. A
// program that moves a Device between threads provides the happens-before
// itself (e.g. a mutex around its own calls). Different Devices are
// independent and may be driven from different threads. A device with
// worker threads (DeviceOptions::workers, worker_threads) runs its data path
// on them; the program's calls keep the rule above (docs/VERBS.md, "Workers").
//
// Progress. Without worker threads nothing happens in the background: frames
// are received and sent, timers run and completions reach CQs only inside
// Device::progress(). Posting queues work; polling a CQ only reads what
// progress() put there. With worker threads the workers do all of that;
// progress() and Cq::poll() collect the completions they produced.
//
// Errors. Calls return errno values (0 = success) or take an `int* err`
// that receives one. Every WR that fails after it was accepted produces a
// completion with an error status, signalled or not.
#pragma once

#include <any>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace omrc {

namespace detail {
struct DeviceCore;  // lib/verbs: engine, driver, MR table, progress loop
}

inline constexpr std::uint32_t kMaxPlanes = 15;  ///< NIC ports (planes) per device
inline constexpr std::uint32_t kMaxSge = 8;      ///< scatter/gather entries per send WR
inline constexpr int kMaxCqe = 1 << 20;           ///< completions a CQ is sized for (create_cq, resize)

// ---------------------------------------------------------------------------
// Work completions

/// Completion status, numbered as ibverbs' ibv_wc_status.
enum class WcStatus : std::uint8_t {
    success = 0,
    loc_len_err = 1,
    loc_qp_op_err = 2,
    loc_prot_err = 4,
    wr_flush_err = 5,
    bad_resp_err = 7,
    loc_access_err = 8,
    rem_inv_req_err = 9,
    rem_access_err = 10,
    rem_op_err = 11,
    retry_exc_err = 12,
    rnr_retry_exc_err = 13,
    general_err = 21,
};
/// "success", "wr_flush_err", ... (ibv_wc_status_str's role).
const char* to_string(WcStatus s) noexcept;

/// Completion opcode, numbered as ibverbs' ibv_wc_opcode.
enum class WcOpcode : std::uint8_t {
    send = 0,                  ///< a send-queue SEND (with or without immediate)
    rdma_write = 1,            ///< a send-queue RDMA WRITE (with or without immediate)
    rdma_read = 2,             ///< a send-queue RDMA READ (byte_len: bytes read)
    recv = 128,                ///< a receive that an incoming SEND (with or without immediate) filled
    recv_rdma_with_imm = 129,  ///< a receive consumed by an incoming WRITE_WITH_IMM
};

/// Bits of Wc::wc_flags (ibverbs values).
struct WcFlags {
    static constexpr std::uint32_t with_imm = 1u << 1;  ///< imm_data is valid
};

/// A work completion (ibv_wc).
struct Wc {
    std::uint64_t wr_id = 0;
    WcStatus status = WcStatus::success;
    WcOpcode opcode = WcOpcode::rdma_write;
    /// Receives (recv, recv_rdma_with_imm): bytes of the incoming message;
    /// send completions: bytes of the message sent.
    std::uint32_t byte_len = 0;
    /// Host byte order (ibverbs keeps it big-endian; OpenMRC does not).
    std::uint32_t imm_data = 0;
    std::uint32_t qp_num = 0;
    std::uint32_t wc_flags = 0;  ///< WcFlags
    /// recv: the sender asked for a solicited event (SendFlags::solicited):
    /// what ibv_req_notify_cq(cq, solicited_only = 1) waits for.
    bool solicited = false;
};

// ---------------------------------------------------------------------------
// Memory

/// Access flags of an MR or a QP, ibverbs values. REMOTE_WRITE or
/// REMOTE_ATOMIC without LOCAL_WRITE is rejected (EINVAL), as in ibverbs.
struct AccessFlags {
    static constexpr std::uint32_t local_write = 1u << 0;
    static constexpr std::uint32_t remote_write = 1u << 1;
    static constexpr std::uint32_t remote_read = 1u << 2;
    static constexpr std::uint32_t remote_atomic = 1u << 3;
    static constexpr std::uint32_t all = local_write | remote_write | remote_read | remote_atomic;
};

/// A scatter/gather entry (ibv_sge).
struct Sge {
    std::uint64_t addr = 0;    ///< virtual address inside the MR of lkey
    std::uint32_t length = 0;  ///< bytes
    std::uint32_t lkey = 0;    ///< ignored for inline sends
};

// ---------------------------------------------------------------------------
// Work requests

/// Send opcodes, ibverbs values (ibv_wr_opcode).
enum class WrOpcode : std::uint8_t { rdma_write = 0, rdma_write_with_imm = 1, send = 2, send_with_imm = 3, rdma_read = 4 };

/// The most RDMA READs a QP has in flight, and answers at once
/// (QpAttr::max_rd_atomic, max_dest_rd_atomic; ibv_device_attr::max_qp_rd_atom).
inline constexpr std::uint32_t kMaxRdAtomic = 16;

/// Bits of SendWr::send_flags (ibverbs values).
struct SendFlags {
    /// Not begun before every earlier RDMA READ of the QP has completed (IBV_SEND_FENCE).
    static constexpr std::uint32_t fence = 1u << 0;
    /// Produce a completion on success (errors always complete).
    static constexpr std::uint32_t signaled = 1u << 1;
    /// SEND: the receiver's completion is a solicited event (Wc::solicited).
    /// Accepted on WRITEs, where it has no effect.
    static constexpr std::uint32_t solicited = 1u << 2;
    /// The payload is copied at post time: the SGEs need no MR (lkey ignored)
    /// and the buffers may be reused as soon as post_send() returns.
    /// At most QpCap::max_inline_data bytes.
    static constexpr std::uint32_t inline_ = 1u << 3;
};

/// A send work request (ibv_send_wr, without the linked list: post a span).
struct SendWr {
    std::uint64_t wr_id = 0;
    WrOpcode opcode = WrOpcode::rdma_write;
    std::uint32_t send_flags = 0;        ///< SendFlags
    /// Read during post_send() only. READ: where the bytes read go (MRs
    /// with LOCAL_WRITE; not inline), in order; their total is the length read.
    std::span<const Sge> sg_list{};
    std::uint64_t remote_addr = 0;       ///< WRITEs and READs: peer virtual address (SENDs: unused)
    std::uint32_t rkey = 0;              ///< WRITEs and READs: peer MR (SENDs: unused)
    std::uint32_t imm_data = 0;          ///< *_with_imm, host byte order
};

/// A receive work request (ibv_recv_wr). Receives are consumed in the order
/// they were posted, one per incoming SEND or WRITE_WITH_IMM, in message
/// order. A SEND's bytes are scattered over sg_list in order (validated at
/// post time: lkey, bounds, LOCAL_WRITE); a SEND longer than the receive
/// completes it with loc_len_err and the QP enters ERR. A WRITE_WITH_IMM
/// writes at its RETH address, not into sg_list. A SEND that finds no
/// receive is refused with an RNR NAK and sent again after
/// QpAttr::min_rnr_timer (the sender's rnr_retry bounds how often).
struct RecvWr {
    std::uint64_t wr_id = 0;
    std::span<const Sge> sg_list{};
};

// ---------------------------------------------------------------------------
// Queue pairs

/// QP states, ibverbs values (ibv_qp_state; SQD and SQE do not exist here).
enum class QpState : std::uint8_t { reset = 0, init = 1, rtr = 2, rts = 3, err = 6 };

/// How a QP chooses the path (entropy value, EV) of each packet.
enum class PathPolicy : std::uint8_t {
    ecmp,      ///< one EV for the whole QP: the classic single-path RoCE baseline
    spray,     ///< oblivious rotation over the active EVs (down planes avoided)
    adaptive,  ///< MRC: rotation that skips, retires and probes EVs by their state
};

/// The built-in congestion-control algorithms. The library's registry
/// (cc_algorithms()) may hold more than these names: any value it lists is
/// a valid CcAlgorithm, and cc_algorithm_by_name() finds them by name.
enum class CcAlgorithm : std::uint8_t {
    fixed,  ///< constant window
    nscc,   ///< NSCC: delay + ECN, quick adapt on trims
    dcqcn,  ///< DCQCN's reaction point: rate cut on ECN echoes, trims and losses; timer and byte-counter increase
    hpcc,   ///< HPCC: window from INT telemetry (only the simulator provides it; holds its window without)
    /// Receiver credit (GSE / RCCC-style pull): an unscheduled first burst,
    /// then only what the receiver grants. The grants travel beside the
    /// frame and only the simulator carries them: on a real wire the first
    /// SACK without a grant turns the gate off, and the QP runs a fixed
    /// window of 4 BDPs (no congestion control).
    credit,
};

/// Receiver-credit parameters (docs/CONFIG.md `[device.qp.cc]`, `credit_*` keys).
struct CreditConfig {
    std::uint64_t unscheduled_bytes = 65536;  ///< sender: first burst from idle without credit; 0 = one BDP
    std::uint64_t quantum_bytes = 16384;  ///< receiver: credit per QP per round-robin turn
    std::uint64_t ahead_bytes = 0;        ///< receiver: grants not yet used, at most; 0 = one BDP + the ACK hold
    double rate_ratio = 1.0;              ///< receiver: grants pace at this fraction of its line rate, (0, 1]
};

/// HPCC's parameters (docs/CONFIG.md `[device.qp.cc]`, `hpcc_*` keys).
struct HpccConfig {
    double eta = 0.95;              ///< target utilisation, (0, 1]
    std::uint32_t max_stage = 5;    ///< additive rounds before a multiplicative adjustment
    double wai_ratio = 0.0025;      ///< additive increase / initial window
};

/// DCQCN's parameters (docs/CONFIG.md `[device.qp.cc]`, `dcqcn_*` keys).
struct DcqcnConfig {
    double g = 1.0 / 256;                          ///< alpha gain, (0, 1]
    std::uint64_t alpha_period_ns = 55'000;        ///< alpha decays by (1 − g) per period without a notification
    std::uint64_t cnp_interval_ns = 50'000;        ///< at most one rate cut per interval
    std::uint64_t increase_period_ns = 55'000;     ///< rate-increase timer
    std::uint64_t byte_counter_bytes = 10'000'000; ///< acknowledged bytes per byte-counter increase
    std::uint32_t fast_recovery_stages = 5;        ///< F
    double ai_ratio = 0.001;                       ///< additive increase step / line rate
    double hai_ratio = 0.01;                       ///< hyper increase step / line rate
};

/// Congestion control of one QP.
struct CcConfig {
    CcAlgorithm algorithm = CcAlgorithm::nscc;
    std::uint64_t fixed_window_bytes = 4u << 20;    ///< fixed: the window
    std::uint64_t base_rtt_ns = 10'000;             ///< nscc: unloaded round trip
    std::uint64_t link_rate_bps = 100'000'000'000;  ///< nscc: rate of one plane
    double target_delay_ratio = 0.75;               ///< nscc: target queueing delay / base_rtt
    double max_window_bdp = 1.5;                    ///< nscc: initial and maximum window, in BDPs
    DcqcnConfig dcqcn{};                            ///< dcqcn only (not in the C API's omrc_cc_config: defaults there)
    HpccConfig hpcc{};                              ///< hpcc only (likewise)
    CreditConfig credit{};                          ///< credit only (likewise)
};

/// One configuration key of an algorithm's parameters (a CcConfig field):
/// what `[device.qp.cc]` accepts (docs/CONFIG.md).
struct CcParameterInfo {
    std::string key;          ///< "dcqcn_g"
    bool integer = false;     ///< a whole number in [min, max]; else a number in (0, max]
    double min = 0;
    double max = 0;
    std::string description;
};

/// A congestion-control algorithm of the library's registry.
struct CcAlgorithmInfo {
    CcAlgorithm algorithm{};
    std::string name;         ///< "nscc": what configuration files and tools call it
    std::string description;
    std::vector<CcParameterInfo> parameters;  ///< its own keys (CcConfig's fields of it)
};

/// Every algorithm the library has, in registration order.
[[nodiscard]] std::vector<CcAlgorithmInfo> cc_algorithms();
/// The algorithm called `name`: 0, or EINVAL with the known names in *error.
int cc_algorithm_by_name(std::string_view name, CcAlgorithm* out, std::string* error = nullptr);
/// The name of `a` ("nscc"), or "unknown".
const char* to_string(CcAlgorithm a) noexcept;
/// Sets the parameter `key` (a CcParameterInfo::key of any algorithm) of
/// `cc` to `value`: 0, or EINVAL (an unknown key, or a value out of its
/// range) with the reason in *error.
int set_cc_parameter(CcConfig& cc, std::string_view key, double value, std::string* error = nullptr);
/// The value of parameter `key` in `cc`: 0, or EINVAL for an unknown key.
int get_cc_parameter(const CcConfig& cc, std::string_view key, double* out);

/// A path policy a Device's QPs may take.
struct PathPolicyInfo {
    PathPolicy policy{};
    std::string name;         ///< "adaptive"
    std::string description;
};
/// Every policy of the public API, in the order of PathPolicy.
[[nodiscard]] std::vector<PathPolicyInfo> path_policies();
/// The policy called `name`: 0, or EINVAL with the known names in *error.
int path_policy_by_name(std::string_view name, PathPolicy* out, std::string* error = nullptr);
/// The name of `p` ("adaptive"), or "unknown".
const char* to_string(PathPolicy p) noexcept;

/// Queue capacities, fixed at creation (ibv_qp_cap).
struct QpCap {
    std::uint32_t max_send_wr = 256;      ///< 1..65536 outstanding send WRs
    std::uint32_t max_recv_wr = 256;      ///< 0..65536 posted receives
    std::uint32_t max_send_sge = 4;       ///< ≤ kMaxSge
    std::uint32_t max_recv_sge = 1;       ///< ≤ kMaxSge
    std::uint32_t max_inline_data = 256;  ///< ≤ 4096 bytes
};

class Cq;
class Srq;

/// ibv_qp_init_attr. The CQs (and the SRQ) are not owned and must outlive the QP.
struct QpInitAttr {
    Cq* send_cq = nullptr;
    Cq* recv_cq = nullptr;
    /// A shared receive queue of the same device the QP's incoming SENDs and
    /// WRITE_WITH_IMMs take their receives from (null: a receive queue of
    /// its own; with one, cap.max_recv_wr and max_recv_sge are ignored and
    /// Qp::post_recv answers EINVAL). The QP lives on the SRQ's worker
    /// (`worker` must be -1 or that worker).
    Srq* srq = nullptr;
    QpCap cap{};
    bool sq_sig_all = false;  ///< every send WR is signalled, whatever its flags
    /// The worker that owns the QP (DeviceOptions::workers): 0..workers-1,
    /// or -1 to place QPs on the workers in turn. Its QPN names it.
    int worker = -1;
};

/// ibv_srq_attr: an SRQ's sizes and its limit.
struct SrqAttr {
    std::uint32_t max_wr = 256;   ///< 1..65536 posted receives it holds
    std::uint32_t max_sge = 1;    ///< 1..kMaxSge SGEs per receive
    /// Armed while non-zero (≤ max_wr): when the SRQ's taking leaves fewer
    /// receives than this, the device raises one AsyncEventType::srq_limit_reached
    /// and sets it back to 0 (IBTA). Set again with Srq::modify.
    std::uint32_t srq_limit = 0;
};

/// Srq::modify mask bits, ibverbs' values (IBV_SRQ_MAX_WR, IBV_SRQ_LIMIT).
struct SrqAttrMask {
    enum : std::uint32_t { max_wr = 1u << 0, limit = 1u << 1 };
};

/// Device::poll_async_events: ibv_event_type's values where one exists.
enum class AsyncEventType : std::uint8_t { srq_limit_reached = 15 };

struct AsyncEvent {
    AsyncEventType type = AsyncEventType::srq_limit_reached;
    Srq* srq = nullptr;  ///< srq_limit_reached: which
};

using Ipv6Addr = std::array<std::uint8_t, 16>;
using MacAddr = std::array<std::uint8_t, 6>;

/// Where a device is reachable: what a peer puts into QpAttr::peer. Obtain it
/// with Device::address() and exchange it out of band with the QPN and
/// connection id (plain value, safe to copy and serialise).
struct DeviceAddress {
    Ipv6Addr addr{};                          ///< inner IPv6 address of the device
    std::array<MacAddr, kMaxPlanes> macs{};   ///< next-hop MAC per plane
    std::uint32_t planes = 0;                 ///< planes used (macs beyond are unused)
    std::uint32_t host = 0;                   ///< srv6 frame mode: host index in the fabric
};

/// ibv_qp_attr, the parts OpenMRC uses. Which fields a modify() reads is
/// selected by a QpAttrMask; the transitions need:
///   RESET→INIT  state | access_flags
///   INIT→RTR    state | path | dest_qpn | rq_psn | mtu   (optional: mpr)
///   INIT→RTR    optional: min_rnr_timer
///   INIT→RTR    optional: max_dest_rd_atomic
///   RTR→RTS     state | sq_psn                         (optional: timeout, retry_cnt, rnr_retry, cc, max_rd_atomic)
///   any→ERR, any→RESET: state
/// Without QpAttrMask::state the QP stays in its state and only timeout,
/// retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic (in RTS) and
/// max_dest_rd_atomic may change.
/// Encrypted mode of a QP (docs/PROTOCOL.md §12): every frame sealed with
/// AES-GCM in PSP's format, only sealed frames accepted.
enum class Encryption : std::uint8_t {
    device_default = 0,  ///< DeviceOptions::security.encryption
    off,
    aes_gcm_128,
    aes_gcm_256,
};

struct QpAttr {
    QpState qp_state = QpState::reset;
    /// AccessFlags the peer may use (REMOTE_WRITE to be written, REMOTE_READ to be read)
    std::uint32_t qp_access_flags = 0;
    // RTR
    std::uint32_t dest_qp_num = 0;      ///< peer QPN (Qp::qp_num() on the peer)
    std::uint16_t dest_conn_id = 0;     ///< peer connection id (Qp::conn_id() on the peer)
    std::uint32_t rq_psn = 0;           ///< first PSN expected from the peer (24 bits)
    DeviceAddress peer{};               ///< peer device (Device::address() on the peer)
    std::uint32_t mtu_bytes = 4096;     ///< payload per packet: 64..4096, a multiple of 64
    std::uint32_t mpr = 8;              ///< receive window in units of 128 packets: 1, 2, 4, .. 32
    PathPolicy path_policy = PathPolicy::adaptive;
    std::uint32_t evs = 128;            ///< active EVs, split equally over the planes
    std::uint32_t backup_evs = 32;      ///< known-good spare EVs
    // RTS
    std::uint32_t sq_psn = 0;           ///< our first PSN (24 bits)
    std::uint64_t timeout_ns = 4'000'000;  ///< no progress for timeout · (retry_cnt + 1) → retry_exc_err
    std::uint32_t retry_cnt = 7;
    /// RNR NAKs (a SEND found no receive at the peer) waited out per SEND
    /// before it fails with rnr_retry_exc_err: 0..7, 7 = without limit (IBTA).
    std::uint32_t rnr_retry = 7;
    /// The IBTA RNR timer code (0..31) our RNR NAKs ask the sender to wait:
    /// 1 = 10 µs .. 31 = 491.52 ms, 0 = 655.36 ms; 12 = 0.64 ms.
    std::uint32_t min_rnr_timer = 12;
    /// RDMA READs this QP has in flight at once as requester (0..16; 0 acts
    /// as 1); later READs wait, and the WRs posted after them (IBTA max_rd_atomic).
    std::uint32_t max_rd_atomic = kMaxRdAtomic;
    /// The peer's READs this QP answers at once (0..16; 0 acts as 1); a
    /// request beyond it is refused with rem_inv_req_err (IBTA max_dest_rd_atomic).
    std::uint32_t max_dest_rd_atomic = kMaxRdAtomic;
    CcConfig cc{};
    /// Read at INIT→RTR (QpAttrMask::encryption, else the device's default).
    /// Both ends must agree: an encrypted QP drops every plain frame.
    Encryption encryption = Encryption::device_default;
    /// The master key (0 or 1) the peer's SPIs name: its DeviceOptions::security.key_select.
    std::uint32_t peer_key_select = 0;
    /// Connection keys (docs/PROTOCOL.md §13.4; QpAttrMask::key_nonces, read
    /// with encryption at INIT→RTR): our receive keys derive through
    /// key_nonce, the peer's through peer_key_nonce (the one it sent), so a
    /// QPN used again never brings a key back. The connection manager
    /// (Device::cm_connect) sets both; without them the keys derive from the
    /// master keys and the QPN alone.
    std::array<std::uint8_t, 16> key_nonce{};
    std::array<std::uint8_t, 16> peer_key_nonce{};
};

/// Bits of the mask given to Qp::modify() (ibv_qp_attr_mask's role).
struct QpAttrMask {
    static constexpr std::uint32_t state = 1u << 0;
    static constexpr std::uint32_t access_flags = 1u << 1;
    static constexpr std::uint32_t path = 1u << 2;  ///< peer, path_policy, evs, backup_evs
    static constexpr std::uint32_t dest_qpn = 1u << 3;  ///< dest_qp_num and dest_conn_id
    static constexpr std::uint32_t rq_psn = 1u << 4;
    static constexpr std::uint32_t mtu = 1u << 5;
    static constexpr std::uint32_t mpr = 1u << 6;
    static constexpr std::uint32_t sq_psn = 1u << 7;
    static constexpr std::uint32_t timeout = 1u << 8;
    static constexpr std::uint32_t retry_cnt = 1u << 9;
    static constexpr std::uint32_t cc = 1u << 10;
    static constexpr std::uint32_t min_rnr_timer = 1u << 11;  ///< INIT→RTR or later
    static constexpr std::uint32_t rnr_retry = 1u << 12;      ///< RTR→RTS or later
    static constexpr std::uint32_t max_rd_atomic = 1u << 13;  ///< RTR→RTS or later
    static constexpr std::uint32_t max_dest_rd_atomic = 1u << 14;  ///< INIT→RTR or later
    static constexpr std::uint32_t encryption = 1u << 15;  ///< INIT→RTR: encryption, peer_key_select
    static constexpr std::uint32_t key_nonces = 1u << 16;  ///< INIT→RTR, encrypted: key_nonce, peer_key_nonce
};

// ---------------------------------------------------------------------------
// Device options

/// plain: Ethernet/IPv6/UDP frames; srv6: an outer IPv6 header whose
/// destination is the SRv6 uSID path of the packet's EV.
enum class FrameMode : std::uint8_t { plain = 0, srv6 = 1 };

/// A DeviceAddress as an ibverbs program exchanges it: the GID carries the
/// IPv6 address, the 16-bit LID the rest. In srv6 frame mode the LID is the
/// host index in the fabric; in plain mode it is what the driver packs in it
/// (udp: its port block, so the peer rebuilds its per-plane MACs), or 0 for
/// a driver that packs nothing (the local device's next_hop_macs then name
/// the peer). docs/IBVERBS.md gives the rules per driver.
struct LidAddress {
    std::uint16_t lid = 0;
    /// Empty, or why a peer cannot rebuild the address from GID and LID.
    std::string warning;
};
/// The LID of a device of `driver` in `mode` whose address is `a`.
[[nodiscard]] LidAddress lid_address(std::string_view driver, FrameMode mode, const DeviceAddress& a);
/// The peer's address from its GID and LID, as a local device of `driver`
/// in `mode` whose own address is `local` reaches it.
[[nodiscard]] DeviceAddress peer_from_lid(std::string_view driver, FrameMode mode, const DeviceAddress& local,
                                          const Ipv6Addr& gid, std::uint16_t lid);

/// Who runs a device's workers (DeviceOptions::worker_threads).
enum class WorkerThreads : std::uint8_t {
    /// Threads of their own when there are several workers and the clock is
    /// real; otherwise progress() drives them.
    automatic = 0,
    /// progress() drives every worker in turn on the calling thread
    /// (deterministic: what a virtual clock needs).
    none = 1,
    /// A thread of its own for every worker, one worker included.
    own = 2,
};

/// srv6 frame mode: the multi-plane two-tier Clos the device is part of.
struct FabricLayout {
    std::uint32_t usid_block = 0xFCBB0000;  ///< 32-bit uSID locator block
    std::uint32_t planes = 8;
    std::uint32_t t0_per_plane = 512;
    std::uint32_t t1_per_plane = 256;
    std::uint32_t hosts_per_t0 = 256;
};

/// ibv_open_device's attributes: the driver's options and the engine's.
struct DeviceOptions {
    /// Driver options as key=value strings. Unknown keys are rejected (EINVAL).
    /// loopback:
    ///   endpoint=N        the fabric endpoint to attach to (default 0)
    ///   endpoints=N       without driver_context: endpoints of the device's
    ///                     private fabric (default 1)
    ///   planes=N          without driver_context: planes of the private
    ///                     fabric (default: `planes` below, or 8)
    ///   link_delay_ns=N   without driver_context: one-way delay (default 1000)
    /// Any driver:
    ///   pcap=FILE         write every frame sent and received to FILE (pcap,
    ///                     Ethernet), timestamped with the device's clock
    ///   next_hop_macs=M,… Ethernet destination per plane (a routed fabric)
    std::map<std::string, std::string, std::less<>> args;
    /// An in-process object the driver attaches to; not owned, must outlive
    /// the Device. loopback: an `omrc::loopback::Fabric*`
    /// (drivers/loopback/loopback.hpp; in-tree users such as tests and tools).
    /// Empty for loopback: the device gets a private fabric of its own
    /// (virtual-clock mode, driven by this device only), on which its QPs can
    /// connect to each other.
    std::any driver_context;

    std::uint32_t planes = 0;       ///< planes to use; 0 = all the driver has
    Ipv6Addr local_addr{};          ///< all zero: the driver's default for this endpoint
    FrameMode frame_mode = FrameMode::plain;
    FabricLayout fabric{};          ///< srv6 only
    std::uint32_t local_host = 0;   ///< srv6 only: our host index in `fabric`
    /// Seeds the engine and the rkey generator. 0: drawn from std::random_device
    /// (use 0 in production: a fixed seed makes rkeys predictable).
    std::uint64_t seed = 0;
    /// RoCEv2 ICRC in software: computed on send, verified on receive. A
    /// driver whose medium cannot corrupt frames turns both off whatever is
    /// set here (dpdk over net_memif, its `icrc` option; stats_json() says
    /// what applies under device.icrc).
    bool compute_icrc = true;
    bool verify_icrc = true;

    /// Receiver ACK policy: one SACK per QP per receive burst at most; it is
    /// sent at the end of a burst with this many unacknowledged data packets
    /// (1..64, the SACK bitmap), with a packet that asked for one (the
    /// sender cannot go on without it, or a retransmission), with CE or a
    /// duplicate, and otherwise `ack_delay_ns` after the first one waiting.
    std::uint32_t ack_every_pkts = 16;
    std::uint64_t ack_delay_ns = 2'000;
    std::uint64_t ev_timeout_ns = 200'000;      ///< an EV whose oldest packet is older has failed
    /// Floor of the EV timeout once RTTs are measured (the timeout is
    /// max(this, 2 · max RTT + reorder window)). The default suits a NIC or
    /// a dedicated core; endpoints on time-shared cores (software drivers on
    /// a busy host) see stalls of a scheduler slice, milliseconds, that no
    /// RTT sample predicts, and want a floor above it.
    std::uint64_t min_ev_timeout_ns = 20'000;
    std::uint64_t probe_interval_ns = 50'000;   ///< probe period of an ASSUMED_BAD EV
    std::uint32_t probe_successes_to_restore = 3;
    std::uint32_t ev_track_depth = 16;          ///< packets tracked per EV for loss inference
    /// SRv6 mode: how long a (plane, T1) one QP retired also retires the EVs
    /// of the device's other QPs toward the same destination T0; 0 = off.
    std::uint64_t path_alarm_ns = 50'000;
    /// SRv6 mode, with path_alarm_ns: tell the peer's device of such a
    /// retirement, and believe a peer's (an OpenMRC endpoint op; both ends).
    bool peer_path_alarms = false;
    /// Adaptive: packets a slot not acknowledged for two round trips (at
    /// least min_ev_timeout_ns) carries before an acknowledgement (0 = no limit).
    std::uint32_t stale_path_packets = 2;
    std::uint64_t port_status_repeat_ns = 100'000;
    std::uint32_t max_qps = 1024;               ///< 1..4096

    std::uint32_t rx_burst_frames = 32;  ///< frames per driver rx call (1..1024)
    std::uint32_t tx_burst_frames = 32;  ///< frames per driver tx call (1..1024)

    /// Workers (docs/VERBS.md, "Workers"): 1..16 engine shards, each with its
    /// own receive and transmit queue on every port and its own QPs
    /// (QpInitAttr::worker). A frame that a port delivers to another
    /// worker than its QP's is handed to the owner (counted in stats_json()).
    std::uint32_t workers = 1;
    WorkerThreads worker_threads = WorkerThreads::automatic;
    /// The CPU of each worker thread: one per worker, or empty: the CPUs of
    /// the NUMA node of the driver's first port in turn where the driver
    /// knows it (dpdk), else unpinned.
    std::vector<int> cpus;
    /// An idle worker thread polls for worker_spin_ns, yields the CPU until
    /// worker_yield_ns, then sleeps up to worker_sleep_ns between passes
    /// (woken early by a post); worker_sleep_ns = 0: never sleeps (a
    /// dedicated core). Frames that arrive while it sleeps wait.
    std::uint64_t worker_spin_ns = 20'000;
    std::uint64_t worker_yield_ns = 2'000'000;
    std::uint64_t worker_sleep_ns = 100'000;

    /// Encrypted mode (docs/PROTOCOL.md §12, docs/CONFIG.md "security").
    struct Security {
        /// PSP master keys 0 and 1 (AES-256 CMAC keys): the keys of the
        /// device's SPIs derive from them. Without a connection manager
        /// handing keys over, an encrypted QP derives its peer's key too, so
        /// both devices hold the same key at the index the peer's SPIs name
        /// (a key the cluster shares).
        std::optional<std::array<std::uint8_t, 32>> master_key[2];
        std::uint32_t key_select = 0;       ///< the master key our SPIs name (0 or 1)
        std::uint32_t replay_window = 4096; ///< IVs remembered per receive epoch: a power of two, 64..65536
        /// What QPs whose attributes say Encryption::device_default get.
        Encryption encryption = Encryption::off;
    } security;

    /// The device's clock in ns, read at every progress() call and nowhere
    /// else. Empty: a steady real clock. A virtual clock (simulation, tests
    /// on a virtual-clock loopback fabric) must never go backwards; devices
    /// that share a fabric must share the clock.
    std::function<std::uint64_t()> clock;
};

/// Whether a device opened with `o` runs its workers on threads of their own
/// (WorkerThreads): what Device::worker_threads() will say.
[[nodiscard]] inline bool uses_worker_threads(const DeviceOptions& o) noexcept {
    return o.worker_threads == WorkerThreads::own ||
           (o.worker_threads == WorkerThreads::automatic && o.workers > 1 && !o.clock);
}

class Device;
class Pd;
class Mr;
class Cq;
class Qp;

// ---------------------------------------------------------------------------
// Connection manager (docs/PROTOCOL.md §13): librdmacm's role, carried over
// the fabric itself (UDP 4791, BTH opcode 0x64 to QPN 1), with resends,
// cookies against half-open floods, per-peer limits and, for encrypted QPs,
// the keys of the connection established before either QP leaves INIT.

/// Why a connection was refused (the REJ's reason, docs/PROTOCOL.md §13.3).
enum class CmReason : std::uint16_t {
    none = 0,
    no_listener = 1,           ///< nobody listens to the service there
    consumer = 2,              ///< the application refused it (cm_reject)
    busy = 3,                  ///< the listener's backlog is full
    peer_limit = 4,            ///< too many pending requests from this address
    no_resources = 5,          ///< no QP, or too many connections
    security_required = 6,     ///< a plain request to a listener that takes encrypted ones only
    security_unavailable = 7,  ///< no master key for the encryption asked
    key_mismatch = 8,          ///< the two ends hold different keys
    stale = 9,                 ///< names a connection the other end does not have
    timeout = 10,              ///< no answer after every resend, or not accepted in time
    invalid = 11,              ///< parameters the other end cannot take
};
[[nodiscard]] const char* to_string(CmReason r) noexcept;

/// What Device::cm_poll reports (rdma_cm_event_type's role).
enum class CmEventType : std::uint8_t {
    connect_request,  ///< listener: a request passed every check; cm_accept or cm_reject it
    established,      ///< both ends: the QP is in RTS and connected
    rejected,         ///< the connection was refused (`reason`; `local`: by this end)
    unreachable,      ///< no answer after every resend (reason timeout)
    disconnected,     ///< the connection ended (cm_disconnect at either end); its QP is in ERR
};
[[nodiscard]] const char* to_string(CmEventType t) noexcept;

inline constexpr std::size_t kCmPrivateDataMax = 64;

struct CmEvent {
    CmEventType type = CmEventType::connect_request;
    std::uint32_t id = 0;          ///< the connection (cm_connect's id, or the request's)
    Qp* qp = nullptr;              ///< the QP of the connection (null for connect_request)
    std::uint64_t service_id = 0;
    DeviceAddress peer{};          ///< the other end's device
    CmReason reason = CmReason::none;
    bool local = false;            ///< rejected: this end refused (e.g. key_mismatch found here)
    Encryption encryption = Encryption::off;  ///< connect_request: what the requester asks
    std::uint32_t mtu_bytes = 0;   ///< connect_request: the requester's offer
    std::uint8_t private_len = 0;  ///< the REQ's (connect_request), REP's (established) or REJ's private data
    std::array<std::uint8_t, kCmPrivateDataMax> private_data{};
};

/// Device::cm_listen.
struct CmListenOptions {
    std::uint32_t backlog = 128;     ///< requests not yet accepted or rejected, at most (then REJ busy)
    std::uint32_t per_peer = 8;      ///< pending requests per peer address, at most (then REJ peer_limit)
    /// Every request first answered with a cookie (one more round trip; a
    /// flood from forged addresses holds no state). false: only once the
    /// backlog is half full.
    bool cookies = true;
    bool require_encryption = false;  ///< refuse plain requests (security_required)
};

/// Device::cm_connect and cm_accept: how the QP is set up. The transitions
/// the connection manager makes use these attributes and the peer's (QPN,
/// connection id, first PSN, MTU, address).
struct CmConnParams {
    std::uint64_t service_id = 0;          ///< cm_connect: the service to connect to
    DeviceAddress peer{};                  ///< cm_connect: the device to connect to (its Device::address())
    std::uint32_t qp_access_flags = AccessFlags::remote_write | AccessFlags::remote_read;
    std::uint32_t mtu_bytes = 4096;        ///< offered (connect) or the most taken (accept)
    Encryption encryption = Encryption::device_default;  ///< cm_connect: asked; cm_accept: must be what was asked
    std::uint8_t private_len = 0;          ///< ≤ kCmPrivateDataMax
    std::array<std::uint8_t, kCmPrivateDataMax> private_data{};
    /// The rest of the QP's attributes (path policy, EVs, timeouts, CC,
    /// RNR and READ limits); the fields above and the peer's override it.
    QpAttr qp_attr{};
};

// ---------------------------------------------------------------------------
// Objects

/// An open device: one driver endpoint (one port per plane), one engine per
/// worker, one MR table, one clock.
class Device {
public:
    /// Opens `driver` ("loopback"; Device::drivers() lists them). Returns
    /// nullptr and sets *err: ENODEV for an unknown driver (or a port or
    /// interface the driver cannot find), EINVAL for bad options, EBUSY when
    /// the driver's endpoint or port is held by another device, or the
    /// driver's errno. What was wrong is logged (one line, "<driver>: ...").
    static std::unique_ptr<Device> open(std::string_view driver, const DeviceOptions& options = {},
                                        int* err = nullptr);
    /// Names of the drivers open() accepts.
    static std::vector<std::string> drivers();
    /// The DeviceOptions::args keys open() accepts for `driver`: the driver's
    /// own and the runtime's (next_hop_macs, pcap), sorted. 0, or ENODEV for
    /// a driver drivers() does not list.
    static int driver_arg_keys(std::string_view driver, std::vector<std::string>* keys);

    /// Aborts if a Pd or Cq of this device is still alive.
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    std::unique_ptr<Pd> alloc_pd(int* err = nullptr);
    /// A CQ with room for `cqe` completions (1..2^20, else EINVAL).
    std::unique_ptr<Cq> create_cq(int cqe, int* err = nullptr);

    /// One pass of the poll-mode loop: link events, receive bursts, due
    /// timers, transmit bursts, completions into CQs. Returns the number of
    /// frames and completions it moved (0: nothing to do right now).
    std::size_t progress();
    /// Earliest clock value at which progress() has work: ≤ the clock's
    /// current value while work is pending, UINT64_MAX when idle. A
    /// virtual-time harness advances the shared clock to the minimum over its
    /// devices (and fabrics) and calls progress() on each.
    [[nodiscard]] std::uint64_t next_wakeup_ns() const;
    /// The device clock (DeviceOptions::clock).
    [[nodiscard]] std::uint64_t now_ns() const;

    /// Our address, to give to peers (see DeviceAddress).
    [[nodiscard]] DeviceAddress address() const;
    [[nodiscard]] std::uint32_t planes() const;
    [[nodiscard]] const std::string& driver_name() const;
    /// DeviceOptions::workers, and whether they run on threads of their own.
    [[nodiscard]] std::uint32_t workers() const;
    [[nodiscard]] bool worker_threads() const;

    /// Counters as a JSON document: "device" (progress loop, MR table, CQs),
    /// "engine", "driver", and "qps" (per QP, with per-EV counters). A
    /// snapshot taken on the owning thread.
    [[nodiscard]] std::string stats_json() const;

    /// Affiliated asynchronous events (ibv_get_async_event's), oldest first:
    /// moves up to out.size() of them into `out` and returns how many. They
    /// are raised by progress() (with worker threads, when it or a CQ's
    /// poll collects what the workers did); events naming an Srq not yet
    /// polled are dropped when it is destroyed.
    std::size_t poll_async_events(std::span<AsyncEvent> out);

    // Connection manager (docs/PROTOCOL.md §13). Errors are errno values.
    /// Takes requests for `service_id`. 0, EADDRINUSE (already listened to), EINVAL.
    int cm_listen(std::uint64_t service_id, const CmListenOptions& options = {});
    /// 0, ENOENT. Requests already reported stay.
    int cm_unlisten(std::uint64_t service_id);
    /// Connects `qp` (RESET or INIT; moved to INIT here) to the service on
    /// params.peer: sends the request and returns its id. The QP reaches RTS
    /// when the reply comes (event established), or stays in INIT (rejected,
    /// unreachable). 0, EINVAL (QP state, parameters, encryption without a
    /// master key), EBUSY (the QP is in a connection already), ENOMEM (too
    /// many connections).
    int cm_connect(Qp& qp, const CmConnParams& params, std::uint32_t* id);
    /// Accepts the connect_request `id` on `qp` (RESET or INIT): the QP goes
    /// to RTS and the reply is sent; established follows when the requester
    /// confirms. 0, ENOENT (no such request), EINVAL, EBUSY (the QP is in a
    /// connection already).
    int cm_accept(std::uint32_t id, Qp& qp, const CmConnParams& params = {});
    /// Refuses the connect_request `id` with `reason`: consumer (the
    /// application's choice) or no_resources (say, no QP left to accept it
    /// on). 0, ENOENT, EINVAL (another reason, private data over 64 bytes).
    int cm_reject(std::uint32_t id, std::span<const std::uint8_t> private_data = {},
                  CmReason reason = CmReason::consumer);
    /// Ends connection `id`: its QP goes to ERR (its outstanding WRs flush)
    /// and the peer is told. 0, ENOENT.
    int cm_disconnect(std::uint32_t id);
    /// Connection events, oldest first: up to out.size() of them; how many.
    /// Call after progress(): the messages that cause them arrive there.
    std::size_t cm_poll(std::span<CmEvent> out);

private:
    explicit Device(std::unique_ptr<detail::DeviceCore> core);
    friend class Pd;
    friend class Cq;
    std::unique_ptr<detail::DeviceCore> core_;
};

/// A protection domain: MRs and QPs of one PD only work together.
class Pd {
public:
    /// Aborts if an Mr or Qp of this PD is still alive.
    ~Pd();
    Pd(const Pd&) = delete;
    Pd& operator=(const Pd&) = delete;

    /// Registers [addr, addr+length). Nothing is pinned or copied: the memory
    /// must stay valid until the Mr is deregistered. err: EINVAL for a null
    /// addr, length 0, a range that wraps, unknown access bits, or
    /// REMOTE_WRITE/REMOTE_ATOMIC without LOCAL_WRITE.
    std::unique_ptr<Mr> reg_mr(void* addr, std::size_t length, std::uint32_t access, int* err = nullptr);
    /// err: EINVAL (missing CQ, CQ of another device, cap out of range),
    /// ENOMEM (max_qps reached).
    std::unique_ptr<Qp> create_qp(const QpInitAttr& attr, int* err = nullptr);
    /// A shared receive queue on `worker` (0..workers-1, or -1: the workers
    /// in turn); the QPs that use it live there too. err: EINVAL (max_wr
    /// 0 or above 65536, max_sge 0 or above kMaxSge, srq_limit above max_wr,
    /// bad worker).
    std::unique_ptr<Srq> create_srq(const SrqAttr& attr, int* err = nullptr, int worker = -1);

    [[nodiscard]] std::uint32_t handle() const noexcept { return handle_; }

private:
    friend class Device;
    friend class Mr;
    friend class Qp;
    friend class Srq;
    Pd(detail::DeviceCore* core, std::uint32_t handle) : core_(core), handle_(handle) {}
    detail::DeviceCore* core_;
    std::uint32_t handle_;
    std::uint32_t children_ = 0;  ///< live Mr + Qp + Srq
};

/// A memory registration. lkey and rkey are random 32-bit values, distinct
/// from every live key and from the last 4096 deregistered ones.
class Mr {
public:
    /// Deregisters if still registered.
    ~Mr();
    Mr(const Mr&) = delete;
    Mr& operator=(const Mr&) = delete;

    /// After it returns, no incoming packet writes into this memory and no
    /// frame queued for transmission reads it. Send WRs still outstanding on
    /// it are the caller's error, as in ibverbs (their retransmissions
    /// would read the memory): wait for their completions first.
    /// Returns 0; EINVAL when already deregistered.
    int deregister();

    [[nodiscard]] std::uint32_t lkey() const noexcept { return lkey_; }
    [[nodiscard]] std::uint32_t rkey() const noexcept { return rkey_; }
    [[nodiscard]] void* addr() const noexcept { return reinterpret_cast<void*>(addr_); }
    [[nodiscard]] std::size_t length() const noexcept { return length_; }
    [[nodiscard]] std::uint32_t access() const noexcept { return access_; }
    [[nodiscard]] bool registered() const noexcept { return registered_; }

private:
    friend class Pd;
    Mr() = default;
    detail::DeviceCore* core_ = nullptr;
    Pd* pd_ = nullptr;
    std::uint64_t addr_ = 0;
    std::size_t length_ = 0;
    std::uint32_t access_ = 0;
    std::uint32_t lkey_ = 0;
    std::uint32_t rkey_ = 0;
    bool registered_ = false;
};

/// A completion queue. Completions are added by Device::progress() only.
class Cq {
public:
    /// Aborts if a QP still uses it. Unpolled completions are discarded.
    ~Cq();
    Cq(const Cq&) = delete;
    Cq& operator=(const Cq&) = delete;

    /// Moves up to out.size() completions, oldest first, into `out`; returns
    /// how many. Does not drive progress (with worker threads it collects
    /// what the workers completed).
    std::size_t poll(std::span<Wc> out);
    /// Completions waiting (with worker threads: those collected so far by
    /// poll() or Device::progress()).
    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
    [[nodiscard]] int cqe() const noexcept { return cqe_; }
    /// ibv_resize_cq: sets cqe() (the size the overrun count is against) to
    /// `cqe`. Returns 0, or EINVAL when cqe is below 1, above 2^20 (as
    /// Device::create_cq) or below the completions waiting, collected first
    /// (a CQ is never made smaller than what it holds; nothing is lost).
    int resize(int cqe);
    /// Times a completion arrived while cqe() were already waiting. No
    /// completion is lost (the queue grows), but an overrun means the
    /// consumer polls too rarely or the CQ is too small; counted, logged once.
    [[nodiscard]] std::uint64_t overruns() const noexcept { return overruns_; }
    /// Completions ever added that a solicited-only notification
    /// (ibv_req_notify_cq(cq, 1)) fires on: a RECV with Wc::solicited, or any
    /// completion in error (IBTA). Monotonic; compare two readings.
    [[nodiscard]] std::uint64_t solicited_events() const noexcept { return solicited_events_; }

private:
    friend class Device;
    friend class Pd;
    friend class Qp;
    friend struct detail::DeviceCore;
    Cq(detail::DeviceCore* core, int cqe) : core_(core), cqe_(cqe) {}
    detail::DeviceCore* core_;
    int cqe_;
    std::deque<Wc> entries_;
    std::uint64_t overruns_ = 0;
    std::uint64_t solicited_events_ = 0;  ///< see solicited_events()
    std::uint32_t qps_ = 0;               ///< live QPs using this CQ
};

/// A shared receive queue (ibv_srq): receives any QP created with it may
/// take, in posting order. Each QP still takes them in its own message
/// order: the first packet to arrive of a QP's message takes the SRQ's
/// oldest receives for it and for every earlier message of that QP that has
/// none yet (docs/PROTOCOL.md §11.9, "Shared receive queues").
class Srq {
public:
    /// Aborts if a QP still uses it. Receives never taken are dropped
    /// without completion (ibv_destroy_srq).
    ~Srq();
    Srq(const Srq&) = delete;
    Srq& operator=(const Srq&) = delete;

    /// Posts receives in order. Errors as Qp::post_recv: EINVAL (more than
    /// max_sge SGEs, an SGE outside a live LOCAL_WRITE MR of this SRQ's PD),
    /// ENOMEM (max_wr posted and not taken); *bad_wr names the first WR not
    /// posted.
    int post_recv(std::span<const RecvWr> wrs, std::size_t* bad_wr = nullptr);
    int post_recv(const RecvWr& wr) { return post_recv(std::span<const RecvWr>(&wr, 1)); }
    /// ibv_modify_srq: SrqAttrMask::max_wr resizes (never below what it
    /// holds: EINVAL), SrqAttrMask::limit arms (non-zero, ≤ max_wr) or
    /// disarms (0) the limit event. 0 or EINVAL.
    int modify(const SrqAttr& attr, std::uint32_t mask);
    /// ibv_query_srq: max_wr, max_sge and the limit now (0 once it fired).
    [[nodiscard]] SrqAttr query() const;
    /// Receives posted and not yet taken.
    [[nodiscard]] std::uint32_t size() const;
    [[nodiscard]] std::uint32_t worker() const noexcept { return worker_; }
    /// The engine's SRQ number on its worker (unique with worker()).
    [[nodiscard]] std::uint32_t srq_num() const noexcept { return srqn_; }

private:
    friend class Pd;
    friend class Qp;
    friend struct detail::DeviceCore;
    Srq() = default;
    detail::DeviceCore* core_ = nullptr;
    Pd* pd_ = nullptr;
    std::uint32_t srqn_ = 0;
    std::uint32_t worker_ = 0;
    std::uint32_t max_sge_ = 1;
    std::uint32_t qps_ = 0;  ///< live QPs using it
};

/// A reliable-connected queue pair driven by the multipath engine.
class Qp {
public:
    /// Destroys the QP: its outstanding WRs are dropped without completion
    /// (completions already produced still reach the CQs).
    ~Qp();
    Qp(const Qp&) = delete;
    Qp& operator=(const Qp&) = delete;

    /// State transition and/or attribute change. Returns 0 or EINVAL
    /// (transition not allowed, required attribute missing or out of range).
    int modify(const QpAttr& attr, std::uint32_t mask);

    /// Posts send WRs in order. Returns 0, or an errno for the first WR not
    /// posted (its index in *bad_wr; the WRs before it are posted):
    ///   EINVAL  QP not in RTS/ERR, bad opcode or flags, more than
    ///           max_send_sge SGEs, inline longer than max_inline_data,
    ///           message over 2^31 bytes, or an SGE whose lkey is not a live
    ///           MR of this QP's PD or that is not inside that MR (these
    ///           local protection errors are reported here, at post time,
    ///           instead of as loc_prot_err completions)
    ///   ENOMEM  max_send_wr WRs outstanding
    /// In ERR every WR is accepted and completes with wr_flush_err.
    /// The sg_list buffers (not inline) are read until the WR completes.
    int post_send(std::span<const SendWr> wrs, std::size_t* bad_wr = nullptr);
    int post_send(const SendWr& wr) { return post_send(std::span<const SendWr>(&wr, 1)); }

    /// Posts receives in order. Errors as post_send: EINVAL (QP in RESET,
    /// more than max_recv_sge SGEs, an SGE outside a live LOCAL_WRITE MR of
    /// this PD), ENOMEM (max_recv_wr posted).
    int post_recv(std::span<const RecvWr> wrs, std::size_t* bad_wr = nullptr);
    int post_recv(const RecvWr& wr) { return post_recv(std::span<const RecvWr>(&wr, 1)); }

    /// Stops using path `ev` (operator denial). 0, or ENOENT if not in use.
    int deny_ev(std::uint32_t ev);

    /// Encrypted mode: starts the next transmit key epoch (a new SPI of the
    /// peer's and its key), without dropping a frame or the connection; the
    /// peer follows when the first frame under it arrives. 0; EINVAL (not
    /// encrypted, not RTS), EBUSY (packets sent before the last rotation are
    /// not all acknowledged yet: try again later), ENOSPC (127 rotations
    /// done: the next would bring the first key back; reconnect).
    int rotate_key();
    /// Whether the QP seals its frames (decided at INIT→RTR).
    [[nodiscard]] bool encrypted() const;

    [[nodiscard]] std::uint32_t qp_num() const noexcept { return qpn_; }
    /// 16-bit connection id the peer needs in QpAttr::dest_conn_id.
    [[nodiscard]] std::uint16_t conn_id() const noexcept { return conn_id_; }
    [[nodiscard]] QpState state() const;
    [[nodiscard]] const QpCap& cap() const noexcept { return cap_; }
    /// The worker that owns it (QpInitAttr::worker).
    [[nodiscard]] std::uint32_t worker() const noexcept { return worker_; }

private:
    friend class Pd;
    friend class Device;  // the connection manager checks a QP is its own
    friend struct detail::DeviceCore;
    Qp() = default;
    detail::DeviceCore* core_ = nullptr;
    Pd* pd_ = nullptr;
    Cq* send_cq_ = nullptr;
    Cq* recv_cq_ = nullptr;
    Srq* srq_ = nullptr;
    std::uint32_t qpn_ = 0;
    std::uint16_t conn_id_ = 0;
    QpCap cap_{};
    bool sq_sig_all_ = false;
    std::uint32_t worker_ = 0;
    // A worker on a thread of its own: what the posting thread knows of the
    // QP without asking the worker (posts are queued to it).
    QpState posted_state_ = QpState::reset;  ///< the state its modify() calls set (or err, seen in a completion)
    std::uint32_t sq_posted_ = 0;            ///< send WRs posted (mod 2^32)
    std::uint32_t sq_retired_ = 0;           ///< send WRs retired, as the latest send completion said
    std::uint32_t rq_posted_ = 0;            ///< receive WRs posted
    std::uint32_t rq_retired_ = 0;           ///< receive completions collected
    bool peer_known_ = false;                ///< its peer is in the device's endpoint routing
    Ipv6Addr peer_addr_{};
    std::uint32_t cm_id_ = 0;  ///< the connection manager's connection it was last given to (0: none; may have ended)
};

}  // namespace omrc
