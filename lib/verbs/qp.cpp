// SPDX-License-Identifier: BSD-3-Clause
// Qp: creation, state changes and posting. Work requests are validated
// against the MR table (lkeys, bounds, PD) and resolved into the engine's
// SendRequest / RecvRequest before they are submitted.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "verbs/device_core.hpp"
#include "verbs/registries.hpp"

namespace omrc {

namespace {

void set_err(int* err, int value) {
    if (err != nullptr) *err = value;
}

constexpr std::uint32_t kKnownSendFlags =
    SendFlags::fence | SendFlags::signaled | SendFlags::solicited | SendFlags::inline_;
constexpr std::uint64_t kMaxMessageBytes = 1ull << 31;

static_assert(kMaxSge == core::kMaxSge && kMaxPlanes == core::kMaxPlanes && kMaxRdAtomic == core::kMaxRdAtomic);

// Mask bits are numbered as the engine's.
static_assert(QpAttrMask::state == core::kAttrState && QpAttrMask::access_flags == core::kAttrAccess &&
              QpAttrMask::path == core::kAttrPath && QpAttrMask::dest_qpn == core::kAttrDestQpn &&
              QpAttrMask::rq_psn == core::kAttrRqPsn && QpAttrMask::mtu == core::kAttrMtu &&
              QpAttrMask::mpr == core::kAttrMpr && QpAttrMask::sq_psn == core::kAttrSqPsn &&
              QpAttrMask::timeout == core::kAttrTimeout && QpAttrMask::retry_cnt == core::kAttrRetryCnt &&
              QpAttrMask::cc == core::kAttrCc && QpAttrMask::min_rnr_timer == core::kAttrMinRnrTimer &&
              QpAttrMask::rnr_retry == core::kAttrRnrRetry && QpAttrMask::max_rd_atomic == core::kAttrMaxRdAtomic &&
              QpAttrMask::max_dest_rd_atomic == core::kAttrMaxDestRdAtomic);
constexpr std::uint32_t kKnownMask = (QpAttrMask::key_nonces << 1) - 1;
static_assert(QpAttrMask::key_nonces == core::kAttrSecurity << 1, "key_nonces is the verbs layer's, above the engine's bits");
static_assert(QpAttrMask::encryption == core::kAttrSecurity);

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
    detail::DeviceCore& d = *core_;
    if (attr.send_cq == nullptr || attr.recv_cq == nullptr || attr.send_cq->core_ != core_ ||
        attr.recv_cq->core_ != core_ || attr.cap.max_send_sge > kMaxSge || attr.cap.max_recv_sge > kMaxSge ||
        attr.worker < -1 || attr.worker >= static_cast<int>(d.workers.size()) ||
        (attr.srq != nullptr && (attr.srq->core_ != core_ ||
                                 (attr.worker >= 0 && static_cast<std::uint32_t>(attr.worker) != attr.srq->worker_)))) {
        set_err(err, EINVAL);
        return nullptr;
    }
    core::QpCaps caps{};
    caps.max_send_wr = attr.cap.max_send_wr;
    caps.max_recv_wr = attr.cap.max_recv_wr;
    caps.max_send_sge = attr.cap.max_send_sge;
    caps.max_recv_sge = attr.cap.max_recv_sge;
    caps.max_inline_data = attr.cap.max_inline_data;
    if (attr.srq != nullptr) {
        caps.srqn = attr.srq->srqn_;
        caps.max_recv_wr = 0;
    }
    // Placed on its SRQ's worker, the worker asked for, else on the workers in turn.
    const std::uint32_t worker = attr.srq != nullptr ? attr.srq->worker_ : d.place_on_worker(attr.worker);
    detail::Worker& w = *d.workers[worker];
    core::SubmitResult r;
    std::uint16_t conn_id = 0;
    {
        const detail::WorkerControl parked(d, w);
        r = w.engine->submit(core::CmdCreateQp{caps}, d.now());
        if (r.err == 0) conn_id = w.engine->qp_info(r.qpn).conn_id;
    }
    if (r.err != 0) {
        set_err(err, r.err);
        return nullptr;
    }
    auto qp = std::unique_ptr<Qp>(new Qp());
    qp->core_ = core_;
    qp->pd_ = this;
    qp->send_cq_ = attr.send_cq;
    qp->recv_cq_ = attr.recv_cq;
    qp->srq_ = attr.srq;
    if (attr.srq != nullptr) ++attr.srq->qps_;
    qp->qpn_ = r.qpn;
    qp->conn_id_ = conn_id;
    qp->cap_ = attr.cap;
    qp->sq_sig_all_ = attr.sq_sig_all;
    qp->worker_ = worker;
    d.qps.emplace(r.qpn, qp.get());
    ++w.qps;
    ++children_;
    ++attr.send_cq->qps_;
    ++attr.recv_cq->qps_;
    set_err(err, 0);
    return qp;
}

Qp::~Qp() {
    detail::DeviceCore& d = *core_;
    detail::Worker& w = d.worker_of(*this);
    d.cm_forget(*this);
    {
        // Completions the engine produced for this QP still reach its CQs.
        const detail::WorkerControl parked(d, w);
        w.loop->drain_completions(w);
        (void)w.engine->submit(core::CmdDestroyQp{qpn_}, d.now());
    }
    (void)d.collect();
    if (peer_known_ && d.exchange) d.exchange->remove_peer(peer_addr_, worker_);
    d.qps.erase(qpn_);
    --w.qps;
    --pd_->children_;
    --send_cq_->qps_;
    --recv_cq_->qps_;
    if (srq_ != nullptr) --srq_->qps_;
}

QpState Qp::state() const {
    detail::Worker& w = core_->worker_of(*this);
    const detail::WorkerControl parked(*core_, w);
    return from_core(w.engine->qp_info(qpn_).state);
}

int Qp::modify(const QpAttr& attr, std::uint32_t mask) {
    if ((mask & ~kKnownMask) != 0) return EINVAL;
    detail::DeviceCore& d = *core_;
    detail::Worker& w = d.worker_of(*this);
    const detail::WorkerControl parked(d, w);
    core::CmdModifyQp cmd{};
    cmd.qpn = qpn_;
    cmd.mask = mask & ~QpAttrMask::key_nonces;
    if (mask & QpAttrMask::state) {
        if (!to_core(attr.qp_state, cmd.state)) return EINVAL;
    } else {
        cmd.state = w.engine->qp_info(qpn_).state;
    }
    if ((mask & QpAttrMask::access_flags) && (attr.qp_access_flags & ~AccessFlags::all) != 0) return EINVAL;
    if ((mask & QpAttrMask::path) && attr.peer.planes != d.address.planes) return EINVAL;
    core::QpAttr& a = cmd.attr;
    a.access_flags = attr.qp_access_flags;
    a.pd = pd_->handle();
    a.dest_qp_num = attr.dest_qp_num;
    a.rq_psn = attr.rq_psn;
    a.dest_conn_id = attr.dest_conn_id;
    a.peer_addr = attr.peer.addr;
    // A routed fabric: every frame on a plane goes to that plane's gateway.
    for (std::uint32_t p = 0; p < kMaxPlanes; ++p)
        a.peer_macs[p] = (d.next_hop_mask >> p) & 1 ? d.next_hop_macs[p] : attr.peer.macs[p];
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
    if (((mask & QpAttrMask::rnr_retry) && attr.rnr_retry > 7) ||
        ((mask & QpAttrMask::min_rnr_timer) && attr.min_rnr_timer > 31) ||
        ((mask & QpAttrMask::max_rd_atomic) && attr.max_rd_atomic > core::kMaxRdAtomic) ||
        ((mask & QpAttrMask::max_dest_rd_atomic) && attr.max_dest_rd_atomic > core::kMaxRdAtomic))
        return EINVAL;
    a.max_rd_atomic = static_cast<std::uint8_t>(std::min(attr.max_rd_atomic, kMaxRdAtomic));
    a.max_dest_rd_atomic = static_cast<std::uint8_t>(std::min(attr.max_dest_rd_atomic, kMaxRdAtomic));
    a.rnr_retry = static_cast<std::uint8_t>(attr.rnr_retry);
    a.min_rnr_timer = static_cast<std::uint8_t>(attr.min_rnr_timer);
    a.cc = detail::to_core(attr.cc);
    // Encryption is decided at INIT→RTR: the attributes' choice, else the device's.
    if (cmd.state == core::QpState::rtr && w.engine->qp_info(qpn_).state == core::QpState::init) {
        const Encryption want = (mask & QpAttrMask::encryption) && attr.encryption != Encryption::device_default
                                    ? attr.encryption
                                    : d.security_default;
        cmd.mask &= ~core::kAttrSecurity;
        if (want == Encryption::aes_gcm_128 || want == Encryption::aes_gcm_256) {
            if (attr.peer_key_select > 1) return EINVAL;
            a.encrypt = true;
            a.psp_version = want == Encryption::aes_gcm_128 ? wire::PspVersion::aes_gcm_128 : wire::PspVersion::aes_gcm_256;
            a.psp_peer_key_select = static_cast<std::uint8_t>(attr.peer_key_select);
            if (mask & QpAttrMask::key_nonces) {
                a.psp_nonces = true;
                a.psp_rx_nonce = attr.key_nonce;
                a.psp_tx_nonce = attr.peer_key_nonce;
            }
            cmd.mask |= core::kAttrSecurity;
        } else if (want != Encryption::off) {
            return EINVAL;
        }
    } else if (mask & (QpAttrMask::encryption | QpAttrMask::key_nonces)) {
        return EINVAL;  // only INIT→RTR sets them
    }
    const core::SubmitResult r = w.engine->submit(cmd, d.now());
    w.loop->kick();  // a move to ERR produces flush completions
    if (r.err != 0) return r.err;
    posted_state_ = from_core(w.engine->qp_info(qpn_).state);
    // Endpoint requests from the peer reach the workers with a QP towards it.
    if ((mask & QpAttrMask::path) && d.exchange && (!peer_known_ || peer_addr_ != attr.peer.addr)) {
        if (peer_known_) d.exchange->remove_peer(peer_addr_, worker_);
        d.exchange->add_peer(attr.peer.addr, worker_);
        peer_known_ = true;
        peer_addr_ = attr.peer.addr;
    }
    return 0;
}

namespace {

/// Hands the WRs that passed validation (the first `valid` ones) to the
/// engine. The engine's refusal, if any, names an earlier WR than the
/// validation error, so it wins; *bad_wr gets the index of the first WR not
/// accepted.
template <class Cmd>
int submit_valid_prefix(detail::DeviceCore& core, detail::Worker& w, const Cmd& cmd, std::size_t valid, int err,
                        std::size_t* bad_wr) {
    std::size_t bad = valid;
    if (valid != 0) {
        const core::SubmitResult res = w.engine->submit(cmd, core.now());
        w.loop->kick();
        if (res.err != 0) {
            err = res.err;
            bad = res.bad_index;
        }
    }
    if (err != 0 && bad_wr != nullptr) *bad_wr = bad;
    return err;
}

/// The next free entry of a worker's post queue, waiting while the worker
/// empties a full one.
detail::PostEntry& reserve_post(detail::Worker& w) {
    for (int turns = 0;; ++turns) {
        if (detail::PostEntry* p = w.posts->reserve()) return *p;
        w.thread->kick();
        if (turns > 64) std::this_thread::yield();
    }
}

}  // namespace

int Qp::post_send(std::span<const SendWr> wrs, std::size_t* bad_wr) {
    const detail::OwnerScope owner(*core_);
    detail::DeviceCore& d = *core_;
    detail::Worker& w = d.worker_of(*this);
    auto& reqs = d.send_scratch;
    reqs.clear();
    const std::uint32_t pd = pd_->handle();
    int err = 0;
    for (const SendWr& wr : wrs) {
        const bool is_inline = (wr.send_flags & SendFlags::inline_) != 0;
        const bool is_read = wr.opcode == WrOpcode::rdma_read;
        bool ok = (wr.opcode == WrOpcode::rdma_write || wr.opcode == WrOpcode::rdma_write_with_imm ||
                   wr.opcode == WrOpcode::send || wr.opcode == WrOpcode::send_with_imm || is_read) &&
                  (wr.send_flags & ~kKnownSendFlags) == 0 && wr.sg_list.size() <= cap_.max_send_sge &&
                  !(is_read && is_inline);
        core::SendRequest r{};
        std::uint64_t total = 0;
        for (std::size_t s = 0; ok && s < wr.sg_list.size(); ++s) {
            const Sge& sge = wr.sg_list[s];
            // Inline payload is copied at post time and needs no MR; other
            // SGEs must lie inside a live MR of this QP's PD.
            // A READ writes into its SGEs: their MRs need LOCAL_WRITE.
            ok = is_inline ? (sge.addr != 0 || sge.length == 0)
                           : d.mrs.check_local(pd, sge.lkey, sge.addr, sge.length,
                                               is_read ? AccessFlags::local_write : 0);
            r.sges[s] = {reinterpret_cast<const std::uint8_t*>(static_cast<std::uintptr_t>(sge.addr)), sge.length,
                         sge.lkey};
            total += sge.length;
        }
        ok = ok && total <= kMaxMessageBytes && (!is_inline || total <= cap_.max_inline_data);
        if (!ok) {
            err = EINVAL;
            break;
        }
        r.wr_id = wr.wr_id;
        r.is_send = wr.opcode == WrOpcode::send || wr.opcode == WrOpcode::send_with_imm;
        r.with_imm = wr.opcode == WrOpcode::rdma_write_with_imm || wr.opcode == WrOpcode::send_with_imm;
        r.solicited = r.is_send && (wr.send_flags & SendFlags::solicited) != 0;
        r.signaled = sq_sig_all_ || (wr.send_flags & SendFlags::signaled) != 0;
        r.imm_data = wr.imm_data;
        r.is_read = is_read;
        r.fence = (wr.send_flags & SendFlags::fence) != 0;
        r.remote_addr = r.is_send ? 0 : wr.remote_addr;
        r.rkey = r.is_send ? 0 : wr.rkey;
        r.sge_count = static_cast<std::uint8_t>(wr.sg_list.size());
        r.is_inline = is_inline;
        reqs.push_back(r);
    }
    if (!w.threaded() || reqs.empty()) return submit_valid_prefix(d, w, core::CmdPostSend{qpn_, reqs}, reqs.size(), err, bad_wr);

    // A worker thread: the WRs go into its post queue. What the engine would
    // refuse is refused here, from what this thread knows: the state its
    // modify() calls set (the worker only ever moves a QP to ERR, where
    // posting is allowed) and the room the latest completion left.
    std::size_t accepted = 0;
    for (const core::SendRequest& r : reqs) {
        if (posted_state_ != QpState::rts && posted_state_ != QpState::err) {
            err = EINVAL;
            break;
        }
        if (sq_posted_ - sq_retired_ >= cap_.max_send_wr) {
            (void)d.collect();  // completions waiting may free room
            if (sq_posted_ - sq_retired_ >= cap_.max_send_wr) {
                err = ENOMEM;
                break;
            }
        }
        std::uint32_t inline_len = 0;
        if (r.is_inline) {
            for (std::size_t s = 0; s < r.sge_count; ++s) inline_len += r.sges[s].len;
        }
        if (inline_len > detail::PostEntry::kInlineBytes) {
            // Too large for a queue entry: handed to the parked worker, after what is queued.
            const detail::WorkerControl parked(d, w);
            const core::SubmitResult res = w.engine->submit(core::CmdPostSend{qpn_, std::span(&r, 1)}, d.now());
            if (res.err != 0) {
                err = res.err;
                break;
            }
        } else {
            detail::PostEntry& p = reserve_post(w);
            p.kind = detail::PostEntry::Kind::send;
            p.qpn = qpn_;
            p.send = r;
            p.inline_len = inline_len;
            std::uint32_t off = 0;
            for (std::size_t s = 0; r.is_inline && s < r.sge_count; ++s) {
                if (r.sges[s].len != 0) std::memcpy(p.inline_bytes + off, r.sges[s].addr, r.sges[s].len);
                off += r.sges[s].len;
            }
            w.posts->commit();
        }
        ++sq_posted_;
        ++accepted;
    }
    if (accepted != 0) w.thread->kick();
    if (err != 0 && bad_wr != nullptr) *bad_wr = accepted;
    return err;
}

int Qp::post_recv(std::span<const RecvWr> wrs, std::size_t* bad_wr) {
    const detail::OwnerScope owner(*core_);
    if (srq_ != nullptr) {
        // Its receives come from the SRQ (ibverbs: EINVAL).
        if (bad_wr != nullptr) *bad_wr = 0;
        return wrs.empty() ? 0 : EINVAL;
    }
    detail::DeviceCore& d = *core_;
    detail::Worker& w = d.worker_of(*this);
    auto& reqs = d.recv_scratch;
    reqs.clear();
    const std::uint32_t pd = pd_->handle();
    int err = 0;
    for (const RecvWr& wr : wrs) {
        core::RecvRequest r{};
        if (!d.resolve_recv(wr, pd, cap_.max_recv_sge, r)) {
            err = EINVAL;
            break;
        }
        reqs.push_back(r);
    }
    if (!w.threaded() || reqs.empty()) return submit_valid_prefix(d, w, core::CmdPostRecv{qpn_, reqs}, reqs.size(), err, bad_wr);

    std::size_t accepted = 0;
    for (const core::RecvRequest& r : reqs) {
        if (posted_state_ == QpState::reset) {
            err = EINVAL;
            break;
        }
        if (rq_posted_ - rq_retired_ >= cap_.max_recv_wr) {
            (void)d.collect();
            if (rq_posted_ - rq_retired_ >= cap_.max_recv_wr) {
                err = ENOMEM;
                break;
            }
        }
        detail::PostEntry& p = reserve_post(w);
        p.kind = detail::PostEntry::Kind::recv;
        p.qpn = qpn_;
        p.recv = r;
        w.posts->commit();
        ++rq_posted_;
        ++accepted;
    }
    if (accepted != 0) w.thread->kick();
    if (err != 0 && bad_wr != nullptr) *bad_wr = accepted;
    return err;
}

bool detail::DeviceCore::resolve_recv(const RecvWr& wr, std::uint32_t pd, std::uint32_t max_sge,
                                      core::RecvRequest& out) const {
    if (wr.sg_list.size() > max_sge) return false;
    std::uint64_t total = 0;
    for (std::size_t s = 0; s < wr.sg_list.size(); ++s) {
        const Sge& sge = wr.sg_list[s];
        if (!mrs.check_local(pd, sge.lkey, sge.addr, sge.length, AccessFlags::local_write)) return false;
        out.sges[s] = {reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(sge.addr)), sge.length, sge.lkey};
        total += sge.length;
    }
    if (total > UINT32_MAX) return false;
    out.wr_id = wr.wr_id;
    out.length = static_cast<std::uint32_t>(total);
    out.sge_count = static_cast<std::uint8_t>(wr.sg_list.size());
    return true;
}

int Qp::rotate_key() {
    detail::Worker& w = core_->worker_of(*this);
    const detail::WorkerControl parked(*core_, w);
    const int err = w.engine->submit(core::CmdRotateKey{qpn_}, core_->now()).err;
    return err == EOPNOTSUPP ? EINVAL : err;
}

bool Qp::encrypted() const {
    detail::Worker& w = core_->worker_of(*this);
    const detail::WorkerControl parked(*core_, w);
    const core::Qp* q = w.engine->find_qp(qpn_);
    return q != nullptr && q->sec != nullptr;
}

int Qp::deny_ev(std::uint32_t ev) {
    detail::Worker& w = core_->worker_of(*this);
    const detail::WorkerControl parked(*core_, w);
    return w.engine->submit(core::CmdDenyEv{qpn_, ev}, core_->now()).err;
}

}  // namespace omrc
