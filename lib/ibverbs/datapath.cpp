// SPDX-License-Identifier: BSD-3-Clause
// The data path: post_send, post_recv, poll_cq and req_notify_cq (the
// ibv_context_ops that verbs.h's inline functions call), and the ibv_qp_ex
// work-request builder (ibv_wr_start … ibv_wr_complete).
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "log/log.hpp"
#include "objects.hpp"

namespace omrc::ibv {

namespace {

constexpr unsigned kSendFlagsKnown = IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;

/// ibverbs' send opcode as OpenMRC's; false for one OpenMRC does not carry.
bool to_omrc_opcode(int op, WrOpcode& out) {
    switch (op) {
        case IBV_WR_RDMA_WRITE: out = WrOpcode::rdma_write; return true;
        case IBV_WR_RDMA_WRITE_WITH_IMM: out = WrOpcode::rdma_write_with_imm; return true;
        case IBV_WR_SEND: out = WrOpcode::send; return true;
        case IBV_WR_SEND_WITH_IMM: out = WrOpcode::send_with_imm; return true;
        case IBV_WR_RDMA_READ: out = WrOpcode::rdma_read; return true;
        default: return false;
    }
}

const char* opcode_name(int op) {
    switch (op) {
        case IBV_WR_SEND: return "SEND";
        case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
        case IBV_WR_RDMA_READ: return "RDMA_READ";
        case IBV_WR_ATOMIC_CMP_AND_SWP: return "ATOMIC_CMP_AND_SWP";
        case IBV_WR_ATOMIC_FETCH_AND_ADD: return "ATOMIC_FETCH_AND_ADD";
        case IBV_WR_LOCAL_INV: return "LOCAL_INV";
        case IBV_WR_BIND_MW: return "BIND_MW";
        case IBV_WR_SEND_WITH_INV: return "SEND_WITH_INV";
        case IBV_WR_TSO: return "TSO";
        default: return "unknown";
    }
}

/// One warning per QP and opcode: a program that posts READs in a loop
/// must not flood the log, and must not fail silently either.
void log_unsupported(Qp& q, int op) {
    const std::uint32_t bit = op >= 0 && op < 32 ? 1u << op : 1u << 31;
    if (q.unsupported_logged & bit) return;
    q.unsupported_logged |= bit;
    omrc::log::logger().warn("ibverbs: QP {}: {} (opcode {}) is not supported by OpenMRC (RDMA WRITE, "
                       "SEND and RDMA READ, with or without immediate where they have one): the WR fails with EOPNOTSUPP",
                       q.qpx.qp_base.qp_num, opcode_name(op), op);
}

/// The program is inside a data-path call: the progress thread stands back
/// (Context, objects.hpp) while the calls keep coming, so the two do not take
/// turns on the device (its state would bounce between cores at every turn).
/// A call is counted when it ends (a call that runs a long progress pass must
/// not look like a pause); no clock is read on the program's path.
class ProgramCall {
public:
    explicit ProgramCall(Context& c) : c_(c) { c_.program_calls.fetch_add(1, std::memory_order_relaxed); }
    ~ProgramCall() {
        c_.program_seq.fetch_add(1, std::memory_order_relaxed);
        c_.program_calls.fetch_sub(1, std::memory_order_relaxed);
    }
    ProgramCall(const ProgramCall&) = delete;
    ProgramCall& operator=(const ProgramCall&) = delete;

private:
    Context& c_;
};


int post_send_op(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
    Qp& q = *reinterpret_cast<Qp*>(qp);
    constexpr std::size_t kBatch = 32;
    // Per thread, built once: value-initialising ~8 KB of WRs and SGEs at
    // every call cost more than the rest of a one-WR post.
    thread_local SendWr wrs[kBatch];
    thread_local std::array<Sge, kMaxSge> sges[kBatch];
    thread_local ibv_send_wr* src[kBatch];
    int err = 0;
    const ProgramCall call(*q.ctx);
    std::lock_guard g(q.ctx->mu);
    while (wr != nullptr && err == 0) {
        std::size_t n = 0;
        ibv_send_wr* stop_at = nullptr;  // the WR that failed validation
        for (; wr != nullptr && n < kBatch; wr = wr->next) {
            WrOpcode op{};
            if (!to_omrc_opcode(wr->opcode, op)) {
                log_unsupported(q, wr->opcode);
                err = EOPNOTSUPP;
            } else if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > kMaxSge ||
                       (wr->send_flags & ~kSendFlagsKnown) != 0) {
                err = EINVAL;
            }
            if (err != 0) {
                stop_at = wr;
                break;
            }
            SendWr& o = wrs[n];
            o = SendWr{};
            o.wr_id = wr->wr_id;
            o.opcode = op;
            // FENCE, SIGNALED, SOLICITED and INLINE have ibverbs' values in SendFlags.
            o.send_flags = wr->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE);
            for (int s = 0; s < wr->num_sge; ++s)
                sges[n][s] = {wr->sg_list[s].addr, wr->sg_list[s].length, wr->sg_list[s].lkey};
            o.sg_list = std::span<const Sge>(sges[n].data(), static_cast<std::size_t>(wr->num_sge));
            if (op == WrOpcode::rdma_write || op == WrOpcode::rdma_write_with_imm || op == WrOpcode::rdma_read) {
                o.remote_addr = wr->wr.rdma.remote_addr;
                o.rkey = wr->wr.rdma.rkey;
            }
            o.imm_data = ntohl(wr->imm_data);
            src[n++] = wr;
        }
        if (n != 0) {
            std::size_t bad = 0;
            if (const int rc = q.oqp->post_send(std::span<const SendWr>(wrs, n), &bad); rc != 0) {
                if (bad_wr != nullptr) *bad_wr = src[bad];
                return rc;
            }
        }
        if (stop_at != nullptr && bad_wr != nullptr) *bad_wr = stop_at;
    }
    // No progress pass here: programs post many WRs one call at a time
    // (perftest does) and then poll; the poll (or the progress thread)
    // transmits them in bursts.
    return err;
}

int post_recv_op(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    Qp& q = *reinterpret_cast<Qp*>(qp);
    const ProgramCall call(*q.ctx);
    std::lock_guard g(q.ctx->mu);
    return post_recv_chain(wr, bad_wr, [&](const RecvWr& o) { return q.oqp->post_recv(o); });
}

int poll_cq_op(ibv_cq* cq, int num_entries, ibv_wc* wc) {
    if (num_entries < 0 || (wc == nullptr && num_entries > 0)) return -1;
    Cq& q = *reinterpret_cast<Cq*>(cq);
    Context& c = *to_ctx(cq->context);
    const ProgramCall call(c);
    std::lock_guard g(c.mu);
    if (q.ocq->size() < static_cast<std::size_t>(num_entries)) c.progress_locked();
    int done = 0;
    thread_local Wc buf[64];  // built once per thread, not at every poll
    while (done < num_entries) {
        const std::size_t want = std::min<std::size_t>(64, static_cast<std::size_t>(num_entries - done));
        const std::size_t got = q.ocq->poll(std::span<Wc>(buf, want));
        for (std::size_t i = 0; i < got; ++i) to_ibv_wc(buf[i], &wc[done + static_cast<int>(i)]);
        done += static_cast<int>(got);
        if (got < want) break;
    }
    return done;
}

int req_notify_cq_op(ibv_cq* cq, int solicited_only) {
    Cq& q = *reinterpret_cast<Cq*>(cq);
    Context& c = *to_ctx(cq->context);
    std::lock_guard g(c.mu);
    // Solicited only: the next solicited RECV or error completion from now
    // (IBTA); otherwise the next completion, or one already waiting.
    q.armed_solicited_only = solicited_only != 0;
    q.armed_solicited_mark = q.ocq->solicited_events();
    if (!q.armed) {
        q.armed = true;
        c.armed.push_back(&q);
    }
    return 0;
}

// ---- ibv_qp_ex ----

Qp& qp_of(ibv_qp_ex* x) { return *reinterpret_cast<Qp*>(x); }

PendingWr* start_wr(ibv_qp_ex* x, WrOpcode op, std::uint64_t needed_op) {
    Qp& q = qp_of(x);
    if (!q.builder.open) {
        q.builder.error = q.builder.error != 0 ? q.builder.error : EINVAL;
        return nullptr;
    }
    if ((q.send_ops_flags & needed_op) == 0) {
        omrc::log::logger().warn("ibverbs: QP {}: WR opcode not enabled in send_ops_flags at create time",
                           x->qp_base.qp_num);
        q.builder.error = q.builder.error != 0 ? q.builder.error : EINVAL;
        return nullptr;
    }
    PendingWr& p = q.builder.wrs.emplace_back();
    p.wr.wr_id = x->wr_id;
    p.wr.opcode = op;
    p.wr.send_flags = x->wr_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE);
    return &p;
}

PendingWr* last_wr(ibv_qp_ex* x) {
    Qp& q = qp_of(x);
    if (!q.builder.open || q.builder.wrs.empty()) {
        q.builder.error = q.builder.error != 0 ? q.builder.error : EINVAL;
        return nullptr;
    }
    return &q.builder.wrs.back();
}

void wr_start(ibv_qp_ex* x) {
    Qp& q = qp_of(x);
    q.builder.open = true;
    q.builder.error = 0;
    q.builder.wrs.clear();
}

void wr_send(ibv_qp_ex* x) { (void)start_wr(x, WrOpcode::send, IBV_QP_EX_WITH_SEND); }

void wr_send_imm(ibv_qp_ex* x, __be32 imm) {
    if (PendingWr* p = start_wr(x, WrOpcode::send_with_imm, IBV_QP_EX_WITH_SEND_WITH_IMM)) p->wr.imm_data = ntohl(imm);
}

void wr_rdma_write(ibv_qp_ex* x, uint32_t rkey, uint64_t remote_addr) {
    if (PendingWr* p = start_wr(x, WrOpcode::rdma_write, IBV_QP_EX_WITH_RDMA_WRITE)) {
        p->wr.rkey = rkey;
        p->wr.remote_addr = remote_addr;
    }
}

void wr_rdma_write_imm(ibv_qp_ex* x, uint32_t rkey, uint64_t remote_addr, __be32 imm) {
    if (PendingWr* p = start_wr(x, WrOpcode::rdma_write_with_imm, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)) {
        p->wr.rkey = rkey;
        p->wr.remote_addr = remote_addr;
        p->wr.imm_data = ntohl(imm);
    }
}

void wr_rdma_read(ibv_qp_ex* x, uint32_t rkey, uint64_t remote_addr) {
    if (PendingWr* p = start_wr(x, WrOpcode::rdma_read, IBV_QP_EX_WITH_RDMA_READ)) {
        p->wr.rkey = rkey;
        p->wr.remote_addr = remote_addr;
    }
}

void wr_set_sge(ibv_qp_ex* x, uint32_t lkey, uint64_t addr, uint32_t length) {
    if (PendingWr* p = last_wr(x)) {
        p->sge[0] = {addr, length, lkey};
        p->nsge = 1;
    }
}

void wr_set_sge_list(ibv_qp_ex* x, size_t num_sge, const ibv_sge* sg_list) {
    PendingWr* p = last_wr(x);
    if (p == nullptr) return;
    if (num_sge > kMaxSge) {
        qp_of(x).builder.error = EINVAL;
        return;
    }
    for (std::size_t i = 0; i < num_sge; ++i) p->sge[i] = {sg_list[i].addr, sg_list[i].length, sg_list[i].lkey};
    p->nsge = static_cast<std::uint32_t>(num_sge);
}

void wr_set_inline_data_list(ibv_qp_ex* x, size_t num_buf, const ibv_data_buf* buf_list) {
    PendingWr* p = last_wr(x);
    if (p == nullptr) return;
    p->inline_copy.clear();
    for (std::size_t i = 0; i < num_buf; ++i) {
        const auto* b = static_cast<const std::uint8_t*>(buf_list[i].addr);
        p->inline_copy.insert(p->inline_copy.end(), b, b + buf_list[i].length);
    }
    if (p->inline_copy.size() > qp_of(x).cap.max_inline_data) {
        qp_of(x).builder.error = EINVAL;
        return;
    }
    p->wr.send_flags |= IBV_SEND_INLINE;
    p->nsge = 0;  // the copy is attached at wr_complete (the vector may still move)
}

void wr_set_inline_data(ibv_qp_ex* x, void* addr, size_t length) {
    const ibv_data_buf b{addr, length};
    wr_set_inline_data_list(x, 1, &b);
}

int wr_complete(ibv_qp_ex* x) {
    Qp& q = qp_of(x);
    WrBuilder& b = q.builder;
    if (!b.open) return EINVAL;
    b.open = false;
    if (b.error != 0) {
        b.wrs.clear();
        return b.error;
    }
    std::vector<SendWr> wrs;
    wrs.reserve(b.wrs.size());
    for (PendingWr& p : b.wrs) {
        if (!p.inline_copy.empty()) {
            p.sge[0] = {reinterpret_cast<std::uintptr_t>(p.inline_copy.data()),
                        static_cast<std::uint32_t>(p.inline_copy.size()), 0};
            p.nsge = 1;
        }
        p.wr.sg_list = std::span<const Sge>(p.sge.data(), p.nsge);
        wrs.push_back(p.wr);
    }
    const ProgramCall call(*q.ctx);
    std::lock_guard g(q.ctx->mu);
    const int rc = wrs.empty() ? 0 : q.oqp->post_send(wrs);
    b.wrs.clear();
    q.ctx->progress_locked();
    return rc;
}

void wr_abort(ibv_qp_ex* x) {
    Qp& q = qp_of(x);
    q.builder.open = false;
    q.builder.wrs.clear();
}

/// The builder's unsupported operations: the batch fails at wr_complete.
void unsupported_wr(ibv_qp_ex* x, int op) {
    log_unsupported(qp_of(x), op);
    qp_of(x).builder.error = EOPNOTSUPP;
}
void wr_atomic_cmp_swp(ibv_qp_ex* x, uint32_t, uint64_t, uint64_t, uint64_t) { unsupported_wr(x, IBV_WR_ATOMIC_CMP_AND_SWP); }
void wr_atomic_fetch_add(ibv_qp_ex* x, uint32_t, uint64_t, uint64_t) { unsupported_wr(x, IBV_WR_ATOMIC_FETCH_AND_ADD); }
void wr_bind_mw(ibv_qp_ex* x, ibv_mw*, uint32_t, const ibv_mw_bind_info*) { unsupported_wr(x, IBV_WR_BIND_MW); }
void wr_local_inv(ibv_qp_ex* x, uint32_t) { unsupported_wr(x, IBV_WR_LOCAL_INV); }
void wr_send_inv(ibv_qp_ex* x, uint32_t) { unsupported_wr(x, IBV_WR_SEND_WITH_INV); }
void wr_send_tso(ibv_qp_ex* x, void*, uint16_t, uint16_t) { unsupported_wr(x, IBV_WR_TSO); }
void wr_set_ud_addr(ibv_qp_ex* x, ibv_ah*, uint32_t, uint32_t) { qp_of(x).builder.error = EOPNOTSUPP; }
void wr_set_xrc_srqn(ibv_qp_ex* x, uint32_t) { qp_of(x).builder.error = EOPNOTSUPP; }
void wr_atomic_write(ibv_qp_ex* x, uint32_t, uint64_t, const void*) { unsupported_wr(x, IBV_WR_ATOMIC_WRITE); }

}  // namespace

void to_ibv_wc(const Wc& in, ibv_wc* out) {
    std::memset(out, 0, sizeof *out);
    out->wr_id = in.wr_id;
    out->status = static_cast<ibv_wc_status>(in.status);  // WcStatus has ibv_wc_status's numbering
    out->opcode = static_cast<ibv_wc_opcode>(in.opcode);  // and WcOpcode ibv_wc_opcode's
    out->byte_len = in.byte_len;
    out->qp_num = in.qp_num;
    if (in.wc_flags & WcFlags::with_imm) {
        out->wc_flags = IBV_WC_WITH_IMM;
        out->imm_data = htonl(in.imm_data);
    }
}

void fill_context_ops(Context& c) {
    ibv_context_ops& ops = c.vctx.context.ops;
    ops.post_send = post_send_op;
    ops.post_recv = post_recv_op;
    ops.post_srq_recv = post_srq_recv_op;
    ops.poll_cq = poll_cq_op;
    ops.req_notify_cq = req_notify_cq_op;
    fill_resource_ops(c);
}

void fill_qp_ex_ops(Qp& q) {
    ibv_qp_ex& x = q.qpx;
    x.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
    x.wr_atomic_fetch_add = wr_atomic_fetch_add;
    x.wr_bind_mw = wr_bind_mw;
    x.wr_local_inv = wr_local_inv;
    x.wr_rdma_read = wr_rdma_read;
    x.wr_rdma_write = wr_rdma_write;
    x.wr_rdma_write_imm = wr_rdma_write_imm;
    x.wr_send = wr_send;
    x.wr_send_imm = wr_send_imm;
    x.wr_send_inv = wr_send_inv;
    x.wr_send_tso = wr_send_tso;
    x.wr_set_ud_addr = wr_set_ud_addr;
    x.wr_set_xrc_srqn = wr_set_xrc_srqn;
    x.wr_set_inline_data = wr_set_inline_data;
    x.wr_set_inline_data_list = wr_set_inline_data_list;
    x.wr_set_sge = wr_set_sge;
    x.wr_set_sge_list = wr_set_sge_list;
    x.wr_start = wr_start;
    x.wr_complete = wr_complete;
    x.wr_abort = wr_abort;
    x.wr_atomic_write = wr_atomic_write;
}

}  // namespace omrc::ibv

extern "C" {

/// Placement is out of order (MRC sprays every packet over its own path), so
/// no operation's data is guaranteed in order: 0 for every opcode.
int ibv_query_qp_data_in_order(ibv_qp* qp, enum ibv_wr_opcode op, uint32_t flags) {
    (void)qp, (void)op, (void)flags;
    return 0;
}

}  // extern "C"
