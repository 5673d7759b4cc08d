// SPDX-License-Identifier: BSD-3-Clause
// Qp: creation, state changes and posting. Work requests are validated
// against the MR table (lkeys, bounds, PD) and resolved into the engine's
// SendRequest / RecvRequest before they are submitted.
#include <algorithm>
#include <cerrno>

#include "verbs/device_core.hpp"
#include "verbs/registries.hpp"

namespace omrc {

namespace {

void set_err(int* err, int value) {
    if (err != nullptr) *err = value;
}

constexpr std::uint32_t kKnownSendFlags = SendFlags::signaled | SendFlags::solicited | SendFlags::inline_;
constexpr std::uint64_t kMaxMessageBytes = 1ull << 31;

static_assert(kMaxSge == core::kMaxSge && kMaxPlanes == core::kMaxPlanes);

// Mask bits are numbered as the engine's.
static_assert(QpAttrMask::state == core::kAttrState && QpAttrMask::access_flags == core::kAttrAccess &&
              QpAttrMask::path == core::kAttrPath && QpAttrMask::dest_qpn == core::kAttrDestQpn &&
              QpAttrMask::rq_psn == core::kAttrRqPsn && QpAttrMask::mtu == core::kAttrMtu &&
              QpAttrMask::mpr == core::kAttrMpr && QpAttrMask::sq_psn == core::kAttrSqPsn &&
              QpAttrMask::timeout == core::kAttrTimeout && QpAttrMask::retry_cnt == core::kAttrRetryCnt &&
              QpAttrMask::cc == core::kAttrCc);
constexpr std::uint32_t kKnownMask = (core::kAttrCc << 1) - 1;

bool to_core(QpState s, core::QpState& out) {
    switch (s) {
        case QpState::reset: out = core::QpState::reset; return true;
        case QpState::init: out = core::QpState::init; return true;
        case QpState::rtr: out = core::QpState::rtr; return true;
        case QpState::rts: out = core::QpState::rts; return true;
        case QpState::err: out = core::QpState::err; return true;
    }
    return false;
}

QpState from_core(core::QpState s) {
    switch (s) {
        case core::QpState::reset: return QpState::reset;
        case core::QpState::init: return QpState::init;
        case core::QpState::rtr: return QpState::rtr;
        case core::QpState::rts: return QpState::rts;
        case core::QpState::err: return QpState::err;
    }
    return QpState::err;
}

}  // namespace

std::unique_ptr<Qp> Pd::create_qp(const QpInitAttr& attr, int* err) {
    if (attr.send_cq == nullptr || attr.recv_cq == nullptr || attr.send_cq->core_ != core_ ||
        attr.recv_cq->core_ != core_ || attr.cap.max_send_sge > kMaxSge || attr.cap.max_recv_sge > kMaxSge) {
        set_err(err, EINVAL);
        return nullptr;
    }
    core::QpCaps caps{};
    caps.max_send_wr = attr.cap.max_send_wr;
    caps.max_recv_wr = attr.cap.max_recv_wr;
    caps.max_send_sge = attr.cap.max_send_sge;
    caps.max_recv_sge = attr.cap.max_recv_sge;
    caps.max_inline_data = attr.cap.max_inline_data;
    const core::SubmitResult r = core_->engine->submit(core::CmdCreateQp{caps}, core_->now());
    if (r.err != 0) {
        set_err(err, r.err);
        return nullptr;
    }
    auto qp = std::unique_ptr<Qp>(new Qp());
    qp->core_ = core_;
    qp->pd_ = this;
    qp->send_cq_ = attr.send_cq;
    qp->recv_cq_ = attr.recv_cq;
    qp->qpn_ = r.qpn;
    qp->conn_id_ = core_->engine->qp_info(r.qpn).conn_id;
    qp->cap_ = attr.cap;
    qp->sq_sig_all_ = attr.sq_sig_all;
    core_->qps.emplace(r.qpn, qp.get());
    ++children_;
    ++attr.send_cq->qps_;
    ++attr.recv_cq->qps_;
    set_err(err, 0);
    return qp;
}

Qp::~Qp() {
    // Completions the engine produced for this QP still reach its CQs.
    core_->loop->drain_completions(*core_);
    (void)core_->engine->submit(core::CmdDestroyQp{qpn_}, core_->now());
    core_->qps.erase(qpn_);
    --pd_->children_;
    --send_cq_->qps_;
    --recv_cq_->qps_;
}

QpState Qp::state() const { return from_core(core_->engine->qp_info(qpn_).state); }

int Qp::modify(const QpAttr& attr, std::uint32_t mask) {
    if ((mask & ~kKnownMask) != 0) return EINVAL;
    core::CmdModifyQp cmd{};
    cmd.qpn = qpn_;
    cmd.mask = mask;
    if (mask & QpAttrMask::state) {
        if (!to_core(attr.qp_state, cmd.state)) return EINVAL;
    } else {
        cmd.state = core_->engine->qp_info(qpn_).state;
    }
    if ((mask & QpAttrMask::access_flags) && (attr.qp_access_flags & ~AccessFlags::all) != 0) return EINVAL;
    if ((mask & QpAttrMask::path) && attr.peer.planes != core_->address.planes) return EINVAL;
    core::QpAttr& a = cmd.attr;
    a.access_flags = attr.qp_access_flags;
    a.pd = pd_->handle();
    a.dest_qp_num = attr.dest_qp_num;
    a.rq_psn = attr.rq_psn;
    a.dest_conn_id = attr.dest_conn_id;
    a.peer_addr = attr.peer.addr;
    // A routed fabric: every frame on a plane goes to that plane's gateway.
    for (std::uint32_t p = 0; p < kMaxPlanes; ++p)
        a.peer_macs[p] = (core_->next_hop_mask >> p) & 1 ? core_->next_hop_macs[p] : attr.peer.macs[p];
    a.peer_host = attr.peer.host;
    a.mtu_bytes = attr.mtu_bytes;
    a.mpr = attr.mpr;
    // A policy the public API does not offer: EINVAL when the path is set (only then is it read).
    if (!detail::to_core(attr.path_policy, a.policy) && (mask & QpAttrMask::path)) return EINVAL;
    a.evs = attr.evs;
    a.backup_evs = attr.backup_evs;
    a.sq_psn = attr.sq_psn;
    a.timeout_ns = attr.timeout_ns;
    a.retry_cnt = attr.retry_cnt;
    a.cc = detail::to_core(attr.cc);
    const core::SubmitResult r = core_->engine->submit(cmd, core_->now());
    core_->loop->kick();  // a move to ERR produces flush completions
    return r.err;
}

namespace {

/// Hands the WRs that passed validation (the first `valid` ones) to the
/// engine. The engine's refusal, if any, names an earlier WR than the
/// validation error, so it wins; *bad_wr gets the index of the first WR not
/// accepted.
template <class Cmd>
int submit_valid_prefix(detail::DeviceCore& core, const Cmd& cmd, std::size_t valid, int err, std::size_t* bad_wr) {
    std::size_t bad = valid;
    if (valid != 0) {
        const core::SubmitResult res = core.engine->submit(cmd, core.now());
        core.loop->kick();
        if (res.err != 0) {
            err = res.err;
            bad = res.bad_index;
        }
    }
    if (err != 0 && bad_wr != nullptr) *bad_wr = bad;
    return err;
}

}  // namespace

int Qp::post_send(std::span<const SendWr> wrs, std::size_t* bad_wr) {
    const detail::OwnerScope owner(*core_);
    auto& reqs = core_->send_scratch;
    reqs.clear();
    const std::uint32_t pd = pd_->handle();
    int err = 0;
    for (const SendWr& w : wrs) {
        const bool is_inline = (w.send_flags & SendFlags::inline_) != 0;
        bool ok = (w.opcode == WrOpcode::rdma_write || w.opcode == WrOpcode::rdma_write_with_imm) &&
                  (w.send_flags & ~kKnownSendFlags) == 0 && w.sg_list.size() <= cap_.max_send_sge;
        core::SendRequest r{};
        std::uint64_t total = 0;
        for (std::size_t s = 0; ok && s < w.sg_list.size(); ++s) {
            const Sge& sge = w.sg_list[s];
            // Inline payload is copied at post time and needs no MR; other
            // SGEs must lie inside a live MR of this QP's PD.
            ok = is_inline ? (sge.addr != 0 || sge.length == 0)
                           : core_->mrs.check_local(pd, sge.lkey, sge.addr, sge.length, 0);
            r.sges[s] = {reinterpret_cast<const std::uint8_t*>(static_cast<std::uintptr_t>(sge.addr)), sge.length};
            total += sge.length;
        }
        ok = ok && total <= kMaxMessageBytes && (!is_inline || total <= cap_.max_inline_data);
        if (!ok) {
            err = EINVAL;
            break;
        }
        r.wr_id = w.wr_id;
        r.with_imm = w.opcode == WrOpcode::rdma_write_with_imm;
        r.signaled = sq_sig_all_ || (w.send_flags & SendFlags::signaled) != 0;
        r.imm_data = w.imm_data;
        r.remote_addr = w.remote_addr;
        r.rkey = w.rkey;
        r.sge_count = static_cast<std::uint8_t>(w.sg_list.size());
        r.is_inline = is_inline;
        reqs.push_back(r);
    }
    return submit_valid_prefix(*core_, core::CmdPostSend{qpn_, reqs}, reqs.size(), err, bad_wr);
}

int Qp::post_recv(std::span<const RecvWr> wrs, std::size_t* bad_wr) {
    const detail::OwnerScope owner(*core_);
    auto& reqs = core_->recv_scratch;
    reqs.clear();
    const std::uint32_t pd = pd_->handle();
    int err = 0;
    for (const RecvWr& w : wrs) {
        bool ok = w.sg_list.size() <= cap_.max_recv_sge;
        std::uint64_t total = 0;
        for (std::size_t s = 0; ok && s < w.sg_list.size(); ++s) {
            const Sge& sge = w.sg_list[s];
            ok = core_->mrs.check_local(pd, sge.lkey, sge.addr, sge.length, AccessFlags::local_write);
            total += sge.length;
        }
        if (!ok || total > UINT32_MAX) {
            err = EINVAL;
            break;
        }
        reqs.push_back({w.wr_id, static_cast<std::uint32_t>(total)});
    }
    return submit_valid_prefix(*core_, core::CmdPostRecv{qpn_, reqs}, reqs.size(), err, bad_wr);
}

int Qp::deny_ev(std::uint32_t ev) {
    return core_->engine->submit(core::CmdDenyEv{qpn_, ev}, core_->now()).err;
}

}  // namespace omrc
