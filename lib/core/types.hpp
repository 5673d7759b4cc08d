// SPDX-License-Identifier: BSD-3-Clause
// What the verbs layer hands the engine (resolved work requests) and what
// the engine hands back (completions), plus the placement interface through
// which received payload reaches registered memory.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>

namespace omrc::core {

using TimeNs = std::uint64_t;
inline constexpr TimeNs kNever = UINT64_MAX;

/// Completion status, numbered exactly as ibverbs' ibv_wc_status.
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

/// Completion opcode, numbered as ibverbs' ibv_wc_opcode.
/// srq_limit_reached is no work completion: an SRQ's limit event (wr_id =
/// the SRQ's number, qpn = 0), carried with the completions so that it
/// reaches the verbs layer's async events by the same path.
enum class WcOpcode : std::uint8_t {
    send = 0,
    rdma_write = 1,
    rdma_read = 2,
    recv = 128,
    recv_rdma_with_imm = 129,
    srq_limit_reached = 255,
};

struct Completion {
    std::uint64_t wr_id = 0;
    std::uint32_t qpn = 0;
    WcStatus status = WcStatus::success;
    WcOpcode opcode = WcOpcode::rdma_write;
    bool has_imm = false;
    /// recv: the message's last packet had BTH.SE (a solicited event, ibv_req_notify_cq(cq, 1))
    bool solicited = false;
    std::uint32_t byte_len = 0;   ///< recv: bytes of the message (SEND or WRITE_WITH_IMM)
    std::uint32_t imm_data = 0;   ///< host order as posted by the peer
    /// Send-side completions: the send WRs the QP's send queue has retired
    /// so far, this one included (signalled or not, mod 2^32): what a poster
    /// on another thread needs to know how full the queue is (a signalled
    /// WR's completion retires the unsignalled ones before it).
    std::uint32_t sq_retired = 0;
};

enum class QpState : std::uint8_t { reset, init, rtr, rts, err };

/// Access flags, numbered as ibverbs' ibv_access_flags.
enum AccessFlags : std::uint32_t {
    kAccessLocalWrite = 1u << 0,
    kAccessRemoteWrite = 1u << 1,
    kAccessRemoteRead = 1u << 2,
    kAccessRemoteAtomic = 1u << 3,
};

/// A local buffer piece already validated by the verbs layer (lkey, bounds;
/// for an RDMA READ's destination also LOCAL_WRITE).
struct SgePiece {
    const std::uint8_t* addr = nullptr;
    std::uint32_t len = 0;
    std::uint32_t lkey = 0;  ///< RDMA READ: its MR, checked again at placement (PlacementTarget::place_local)
};

inline constexpr std::size_t kMaxSge = 8;

/// A send work request, resolved.
struct SendRequest {
    std::uint64_t wr_id = 0;
    /// SEND (placed into the peer's next receive WR) instead of RDMA WRITE
    /// (placed at remote_addr through rkey, both then unused).
    bool is_send = false;
    /// RDMA READ: the peer's [remote_addr, +length of the SGEs) through rkey
    /// is read into the SGEs (is_send, with_imm, solicited and inline unused).
    bool is_read = false;
    bool fence = false;       ///< not begun before every earlier READ has completed (IBV_SEND_FENCE)
    bool solicited = false;   ///< BTH.SE on the last packet (SEND only; IBV_SEND_SOLICITED)
    bool with_imm = false;
    bool signaled = true;
    std::uint32_t imm_data = 0;
    std::uint64_t remote_addr = 0;
    std::uint32_t rkey = 0;
    std::uint8_t sge_count = 0;
    std::array<SgePiece, kMaxSge> sges{};
    /// Inline requests: bytes copied here by the verbs layer; sges then point into it.
    bool is_inline = false;
};

/// A receive buffer piece validated by the verbs layer (lkey, bounds,
/// LOCAL_WRITE); placement writes through PlacementTarget::place_local.
struct RecvSge {
    std::uint8_t* addr = nullptr;  ///< null: a model without memory (the simulator)
    std::uint32_t len = 0;
    std::uint32_t lkey = 0;
};

struct RecvRequest {
    std::uint64_t wr_id = 0;
    std::uint32_t length = 0;  ///< total bytes of its scatter list: the largest SEND it takes
    std::uint8_t sge_count = 0;
    std::array<RecvSge, kMaxSge> sges{};  ///< where a SEND's bytes go, in order (a WRITE_WITH_IMM writes none)
};

/// Outcome of placing received payload.
enum class PlaceStatus : std::uint8_t {
    ok,
    bad_rkey,       ///< no live MR with this rkey (never registered, or deregistered)
    pd_mismatch,    ///< MR belongs to another protection domain than the QP
    no_access,      ///< MR lacks REMOTE_WRITE (REMOTE_READ for read_source)
    out_of_bounds,  ///< [va, va+len) not inside the MR (checked without overflow)
};

/// Implemented by the verbs layer (an MR table) or a simulator memory model.
/// place() checks and writes atomically with respect to deregistration: once
/// deregistration of an MR has returned, no later place() writes into it.
class PlacementTarget {
public:
    virtual ~PlacementTarget() = default;
    virtual PlaceStatus place(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va,
                              std::span<const std::uint8_t> bytes) = 0;
    /// Checks a whole message range [va, va+len) without writing (the first
    /// packet of a message validates its full DMA length, as an RDMA
    /// responder does). The default accepts: targets without MRs (a
    /// simulator's memory model) check per packet only.
    virtual PlaceStatus check(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va, std::uint64_t len) {
        (void)pd, (void)rkey, (void)va, (void)len;
        return PlaceStatus::ok;
    }
    /// RDMA READ responder: where the bytes [va, va+len) of the MR of `rkey`
    /// are (checked: live, the QP's PD, REMOTE_READ, in bounds), in `out`.
    /// Asked again each time a response packet is built (the MR may be
    /// deregistered meanwhile). The default refuses: a model without memory
    /// has nothing to read from.
    virtual PlaceStatus read_source(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va, std::uint64_t len,
                                    const std::uint8_t*& out) {
        (void)pd, (void)rkey, (void)va, (void)len;
        out = nullptr;
        return PlaceStatus::no_access;
    }
    /// Writes SEND payload into a receive buffer piece [addr, addr+len) of
    /// the MR of `lkey` (checked when the receive was posted; checked again
    /// here, since the MR may have been deregistered since: bad_rkey then).
    /// The default copies when addr is not null (a model without memory
    /// posts receives without buffers).
    virtual PlaceStatus place_local(std::uint32_t pd, std::uint32_t lkey, std::uint8_t* addr,
                                    std::span<const std::uint8_t> bytes) {
        (void)pd, (void)lkey;
        if (addr != nullptr && !bytes.empty()) std::memcpy(addr, bytes.data(), bytes.size());
        return PlaceStatus::ok;
    }
};

}  // namespace omrc::core
