// SPDX-License-Identifier: BSD-3-Clause
// Engine: construction, commands (QP lifecycle, posting, link events),
// frame dispatch, timers and the transmit/completion queues. The sender and
// receiver halves live in engine_tx.cpp and engine_rx.cpp.
#include "core/engine.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstring>

#include "core/psn.hpp"
#include "routing/fabric.hpp"

namespace omrc::core {

const char* to_string(PathEventKind k) noexcept {
    switch (k) {
        case PathEventKind::retired: return "retired";
        case PathEventKind::probe_sent: return "probe";
        case PathEventKind::restored: return "restored";
        case PathEventKind::local_port_down: return "port_down";
        case PathEventKind::local_port_up: return "port_up";
        case PathEventKind::peer_ports: return "peer_ports";
    }
    return "unknown";
}

const char* to_string(RetireCause c) noexcept {
    switch (c) {
        case RetireCause::none: return "none";
        case RetireCause::path_order: return "path_order_loss";
        case RetireCause::send_order: return "send_order_loss";
        case RetireCause::timeout: return "ev_timeout";
        case RetireCause::always_skip: return "always_skip";
        case RetireCause::with_group: return "with_its_t1";
        case RetireCause::path_alarm: return "another_qps_alarm";
    }
    return "unknown";
}

const char* to_string(DropReason r) noexcept {
    switch (r) {
        case DropReason::no_qp: return "no_qp";
        case DropReason::bad_state: return "bad_state";
        case DropReason::wrong_source: return "wrong_source";
        case DropReason::out_of_window: return "out_of_window";
        case DropReason::duplicate: return "duplicate";
        case DropReason::bad_conn_id: return "bad_conn_id";
        case DropReason::forged_ack: return "forged_ack";
        case DropReason::stale_ack: return "stale_ack";
        case DropReason::remote_access: return "remote_access";
        case DropReason::bad_length: return "bad_length";
        case DropReason::trimmed: return "trimmed";
        case DropReason::rnr: return "rnr";
        case DropReason::recv_too_small: return "recv_too_small";
        case DropReason::bad_read: return "bad_read";
        case DropReason::unexpected: return "unexpected";
        case DropReason::psp_unknown_spi: return "psp_unknown_spi";
        case DropReason::psp_bad_tag: return "psp_bad_tag";
        case DropReason::psp_replay: return "psp_replay";
        case DropReason::psp_old_epoch: return "psp_old_epoch";
        case DropReason::psp_required: return "psp_required";
        case DropReason::cm_invalid: return "cm_invalid";
        case DropReason::count_: break;
    }
    return "unknown";
}

namespace {
constexpr std::uint16_t conn_id_of(std::uint32_t qpn) noexcept { return static_cast<std::uint16_t>(qpn & 0xFFFF); }

}  // namespace

Engine::Engine(const EngineConfig& cfg, PlacementTarget* memory)
    : cfg_(cfg), memory_(memory), rng_(cfg.seed), path_alarms_(cfg.path_alarm_ns) {
    cfg_.planes = std::clamp<std::uint32_t>(cfg_.planes, 1, kMaxPlanes);
    cfg_.max_qps = std::clamp<std::uint32_t>(cfg_.max_qps, 1, kQpIndexMask + 1);
    cfg_.ack_every_pkts = std::clamp<std::uint32_t>(cfg_.ack_every_pkts, 1, 64);
    cfg_.shard_bits = std::min(cfg_.shard_bits, kMaxShardBits);
    cfg_.shard &= (1u << cfg_.shard_bits) - 1;
    qps_.resize(cfg_.max_qps);
    local_up_ = all_planes();
    const std::uint32_t w = cfg_.security.replay_window;
    if (w < 64 || w > 65536 || !std::has_single_bit(w)) cfg_.security.replay_window = 4096;
    derive_receiver_masters();
    if (cfg_.connection_manager && cfg_.shard == 0)
        cm_ = std::make_unique<ConnManager>(cfg_.cm_limits, cfg_.seed ^ 0xC0117EC7ull, &cm_keys_);
}

Engine::~Engine() {
    security::wipe(rx_masters_.data(), sizeof rx_masters_);
    security::wipe(cfg_.security.master_keys.data(), sizeof cfg_.security.master_keys);
}

namespace {
/// A command type no branch of Engine::submit handles: the static_assert
/// there names it at compile time.
template <typename>
inline constexpr bool kUnhandledCommand = false;
}  // namespace

SubmitResult Engine::submit(const Command& cmd, TimeNs now) {
    // One branch per command; a command added to `Command` without one fails
    // the build (a catch-all once treated any unlisted command as an EV denial).
    return std::visit(
        [&](const auto& c) -> SubmitResult {
            using T = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<T, CmdCreateQp>) return create_qp(c, now);
            else if constexpr (std::is_same_v<T, CmdModifyQp>) return modify_qp(c, now);
            else if constexpr (std::is_same_v<T, CmdDestroyQp>) return destroy_qp(c);
            else if constexpr (std::is_same_v<T, CmdPostSend>) return post_send(c, now);
            else if constexpr (std::is_same_v<T, CmdPostRecv>) return post_recv(c);
            else if constexpr (std::is_same_v<T, CmdLinkChange>) return link_change(c, now);
            else if constexpr (std::is_same_v<T, CmdProbeEv>) return probe_ev(c, now);
            else if constexpr (std::is_same_v<T, CmdDenyEv>) return deny_ev(c);
            else if constexpr (std::is_same_v<T, CmdCreateSrq>) return create_srq(c);
            else if constexpr (std::is_same_v<T, CmdModifySrq>) return modify_srq(c);
            else if constexpr (std::is_same_v<T, CmdDestroySrq>) return destroy_srq(c);
            else if constexpr (std::is_same_v<T, CmdPostSrqRecv>) return post_srq_recv(c);
            else if constexpr (std::is_same_v<T, CmdRotateKey>) return rotate_key(c);
            else static_assert(kUnhandledCommand<T>, "Engine::submit: a Command alternative has no branch");
        },
        cmd);
}

SubmitResult Engine::deny_ev(const CmdDenyEv& c) {
    Qp* qp = qp_by_num(c.qpn);
    if (qp == nullptr) return {EINVAL};
    for (std::size_t i = 0; i < qp->paths.size(); ++i)
        if (qp->paths.slot(i).ev == c.ev) untrack_slot(*qp, i);
    return {qp->paths.deny(c.ev, rng_) ? kOk : ENOENT};
}

Qp* Engine::qp_by_num(std::uint32_t qpn) noexcept {
    // Any 24-bit QPN can arrive from the wire: the index is checked against the table.
    const std::uint32_t index = qpn & kQpIndexMask;
    if (index >= qps_.size()) return nullptr;
    Qp* qp = qps_[index].get();
    return (qp != nullptr && qp->qpn == qpn) ? qp : nullptr;
}

const Qp* Engine::find_qp(std::uint32_t qpn) const noexcept {
    const std::uint32_t index = qpn & kQpIndexMask;
    if (index >= qps_.size()) return nullptr;
    const Qp* qp = qps_[index].get();
    return (qp != nullptr && qp->qpn == qpn) ? qp : nullptr;
}

bool Engine::has_peer(const wire::Ipv6Addr& peer) const noexcept {
    return std::any_of(live_.begin(), live_.end(),
                       [&](const Qp* q) { return q->state != QpState::reset && q->attr.peer_addr == peer; });
}

QpInfo Engine::qp_info(std::uint32_t qpn) const noexcept {
    const Qp* qp = find_qp(qpn);
    if (qp == nullptr) return {};
    return {qp->qpn, qp->conn_id, qp->state, psn_add(qp->rcv_cack, 1)};
}

SubmitResult Engine::create_qp(const CmdCreateQp& c, TimeNs) {
    if (c.caps.max_send_wr == 0 || c.caps.max_send_wr > 65536 || c.caps.max_recv_wr > 65536 ||
        c.caps.max_send_sge > kMaxSge || c.caps.max_inline_data > 4096)
        return {EINVAL};
    Srq* srq = nullptr;
    if (c.caps.srqn != 0 && (srq = srq_by_num(c.caps.srqn)) == nullptr) return {EINVAL};
    auto slot = std::find(qps_.begin(), qps_.end(), nullptr);
    if (slot == qps_.end()) return {ENOMEM};
    auto qp = std::make_unique<Qp>();
    const auto index = static_cast<std::uint32_t>(slot - qps_.begin());
    // A generation in the high bits keeps a destroyed QP's number from being
    // reused soon (stale packets then find no QP).
    const std::uint32_t generations = (1u << (kQpIndexBits - cfg_.shard_bits)) - 1;  // 4095 for one shard
    qpn_generation_ = (qpn_generation_ % generations) + 1;
    qp->qpn = (qpn_generation_ << (kQpIndexBits + cfg_.shard_bits)) | (cfg_.shard << kQpIndexBits) | index;
    // Connection ids (SETH/NETH/PETH spdcid and dpdcid) are the QPNs' low 16
    // bits, as the public MRC builders fill them: a peer NIC that never took
    // part in our connection setup fills the same values.
    qp->conn_id = conn_id_of(qp->qpn);
    qp->caps = c.caps;
    qp->srq = srq;
    if (srq != nullptr) ++srq->qps;
    qp->sq.resize(c.caps.max_send_wr + kMaxRdAtomic);  // room for READ responses beyond the WRs
    const std::uint32_t qpn = qp->qpn;
    credit_sched_.forget(index);  // an earlier QP of this slot's
    live_.push_back(qp.get());
    *slot = std::move(qp);
    return {kOk, qpn};
}

SubmitResult Engine::destroy_qp(const CmdDestroyQp& c) {
    Qp* qp = qp_by_num(c.qpn);
    if (qp == nullptr) return {EINVAL};
    if (qp->srq != nullptr) --qp->srq->qps;
    clear_security(*qp);
    std::erase(live_, qp);
    std::erase(tx_active_, qp);
    std::erase(ack_list_, qp);
    std::erase(credit_granted_, qp);
    credit_sched_.forget(c.qpn & kQpIndexMask);
    tx_cursor_ = 0;
    qps_[c.qpn & kQpIndexMask].reset();  // its timer entries find no QP and are dropped
    return {kOk};
}

void Engine::prepare_specs(Qp& qp) {
    wire::FrameSpec s{};
    s.mode = cfg_.mode;
    s.ip.src = cfg_.local_addr;
    s.ip.dst = qp.attr.peer_addr;
    s.ip.hop_limit = 64;
    s.outer.src = cfg_.local_addr;
    s.outer.hop_limit = 64;
    s.bth.dest_qp = qp.attr.dest_qp_num;
    qp.ctrl_spec = s;
    qp.ctrl_spec.ip.set_dscp(cfg_.dscp_control);
    qp.ctrl_spec.outer.set_dscp(cfg_.dscp_control);
    wire::FrameSpec data = s;
    data.ip.set_dscp(cfg_.dscp_data);
    data.ip.set_ecn(2);  // ECT(0): switches may mark CE
    data.outer.set_dscp(cfg_.dscp_data);
    data.outer.set_ecn(2);
    data.bth.ts = true;
    data.tseth = {0, false, wire::mrc::kFtypeTransmitTimestamp};  // a transmit time in 128 ns ticks
    (void)qp.data_tmpl.init(data);  // no SRH: the outer destination carries the whole uSID path
    for (std::uint32_t p = 0; p < cfg_.planes; ++p) {
        std::memcpy(qp.plane_macs[p].data(), qp.attr.peer_macs[p].data(), 6);
        std::memcpy(qp.plane_macs[p].data() + 6, cfg_.local_macs[p].data(), 6);
    }
    if (cfg_.mode == wire::FrameMode::srv6)
        (void)routing::UsidTemplate::make(cfg_.fabric, cfg_.local_host, qp.attr.peer_host, qp.usid_template);
}

SubmitResult Engine::modify_qp(const CmdModifyQp& c, TimeNs now) {
    Qp* qp = qp_by_num(c.qpn);
    if (qp == nullptr) return {EINVAL};
    const QpState from = qp->state, to = c.state;
    auto need = [&](std::uint32_t bits) { return (c.mask & bits) == bits; };
    const QpAttr& a = c.attr;
    if (to == QpState::err) {
        enter_error(*qp, WcStatus::wr_flush_err, now);
        return {kOk};
    }
    if (to == QpState::reset) {
        std::erase(tx_active_, qp);
        std::erase(credit_granted_, qp);
        tx_cursor_ = 0;
        credit_sched_.forget(qp->qpn & kQpIndexMask);
        const std::uint32_t qpn = qp->qpn;
        const std::uint16_t conn = qp->conn_id;
        const QpCaps caps = qp->caps;
        clear_security(*qp);
        *qp = Qp{};
        qp->qpn = qpn;
        qp->conn_id = conn;
        qp->caps = caps;
        qp->sq.resize(caps.max_send_wr + kMaxRdAtomic);
        return {kOk};
    }
    if (from == QpState::reset && to == QpState::init) {
        if (!need(kAttrAccess)) return {EINVAL};
        qp->attr.access_flags = a.access_flags;
        qp->attr.pd = a.pd;
        qp->state = QpState::init;
        return {kOk};
    }
    if (from == QpState::init && to == QpState::rtr) {
        if (!need(kAttrDestQpn | kAttrRqPsn | kAttrPath | kAttrMtu)) return {EINVAL};
        if (a.mtu_bytes < 64 || a.mtu_bytes > 4096 || a.mtu_bytes % 64 != 0) return {EINVAL};
        if (a.dest_qp_num > kQpnMask || a.rq_psn > kPsnMask || a.evs == 0) return {EINVAL};
        const std::uint32_t mpr = (c.mask & kAttrMpr) ? a.mpr : qp->attr.mpr;
        if (mpr == 0 || mpr > 32 || !std::has_single_bit(mpr)) return {EINVAL};
        if (cfg_.mode == wire::FrameMode::srv6 && a.peer_host >= cfg_.fabric.hosts()) return {EINVAL};
        const CcAlgorithmInfo* cc = find_cc(a.cc.algorithm);
        if (cc == nullptr || find_path_policy(a.policy) == nullptr) return {EINVAL};
        const std::uint32_t access = qp->attr.access_flags, pd = qp->attr.pd;
        const std::uint8_t rnr_timer = (c.mask & kAttrMinRnrTimer) ? a.min_rnr_timer : qp->attr.min_rnr_timer;
        if (rnr_timer > 31) return {EINVAL};
        const std::uint8_t rnr_retry = qp->attr.rnr_retry;  // set at RTS (kAttrRnrRetry)
        const std::uint8_t rd_atomic = qp->attr.max_rd_atomic;  // set at RTS (kAttrMaxRdAtomic)
        const std::uint8_t dest_rd_atomic =
            (c.mask & kAttrMaxDestRdAtomic) ? a.max_dest_rd_atomic : qp->attr.max_dest_rd_atomic;
        if (dest_rd_atomic > kMaxRdAtomic) return {EINVAL};
        const QpAttr before = qp->attr;
        qp->attr = a;
        if (const int err = (c.mask & kAttrSecurity) && a.encrypt ? set_security(*qp, a) : (clear_security(*qp), 0);
            err != kOk) {
            qp->attr = before;
            return {err};
        }
        qp->attr.max_rd_atomic = rd_atomic;
        qp->attr.max_dest_rd_atomic = dest_rd_atomic;
        qp->attr.access_flags = access;
        qp->attr.pd = pd;
        qp->attr.min_rnr_timer = rnr_timer;
        qp->attr.rnr_retry = rnr_retry;
        qp->attr.dest_conn_id = conn_id_of(a.dest_qp_num);  // whatever the caller passed
        qp->attr.mpr = mpr;
        qp->cc_info = cc;
        qp->rcv_window = mpr * 128;
        qp->rcv_bitmap.assign(qp->rcv_window / 64, 0);
        qp->rcv_cack = psn_add(a.rq_psn, -1);
        qp->window_pkts = qp->rcv_window;
        qp->pkt_mask = qp->rcv_window - 1;
        assert(std::has_single_bit(qp->rcv_window) && qp->rcv_window >= 128 &&
               "receive window and transmit ring: a power of two ≥ 128 (bitmaps span two words)");
        prepare_specs(*qp);
        if (qp->sec && qp->data_tmpl.icrc_offset() + wire::kPspClearBytesAfterIp > wire::GatherFrame::kMaxHeader) {
            clear_security(*qp);  // an SRv6 path with an SRH: the sealed headers would not fit
            qp->attr = before;
            return {EINVAL};
        }
        qp->state = QpState::rtr;
        return {kOk};
    }
    if (from == QpState::rtr && to == QpState::rts) {
        if (!need(kAttrSqPsn)) return {EINVAL};
        if (a.sq_psn > kPsnMask) return {EINVAL};
        const CcAlgorithmInfo* cc = (c.mask & kAttrCc) ? find_cc(a.cc.algorithm) : qp->cc_info;
        if (cc == nullptr) return {EINVAL};
        // A responder that answered READs in RTR has PSNs in flight: it keeps them.
        if (!qp->rtr_responder) qp->snd_una = qp->snd_nxt = a.sq_psn;
        if (c.mask & kAttrTimeout) qp->attr.timeout_ns = a.timeout_ns;
        if (c.mask & kAttrRetryCnt) qp->attr.retry_cnt = a.retry_cnt;
        if (c.mask & kAttrRnrRetry) {
            if (a.rnr_retry > 7) return {EINVAL};
            qp->attr.rnr_retry = a.rnr_retry;
        }
        if (c.mask & kAttrMaxRdAtomic) {
            if (a.max_rd_atomic > kMaxRdAtomic) return {EINVAL};
            qp->attr.max_rd_atomic = a.max_rd_atomic;
        }
        if (c.mask & kAttrCc) qp->attr.cc = a.cc;
        qp->cc_info = cc;
        qp->attr.sq_psn = a.sq_psn;
        // The peer's receiver may hold a packet up to its ACK delay bound
        // before the SACK that releases it (assuming its ACK policy is ours).
        qp->cc = make_cc(qp->attr.cc, cfg_.planes, qp->attr.mtu_bytes, cfg_.ack_delay_ns);
        qp->credit = dynamic_cast<Credit*>(qp->cc.get());
        qp->last_progress_ns = now;
        qp->state = QpState::rts;
        if (!qp->rd_in.empty()) answer_reads(*qp, now);  // READs that arrived while we could not send
        return {kOk};
    }
    if (from == to && from != QpState::reset) {
        // Attribute-only modify in the same state: timeouts and CC may change,
        // and a planned QP's plan (a controller re-plans, as ibverbs programs
        // load an alternate path with an RTS→RTS modify).
        if ((c.mask & kAttrPath) && from == QpState::rts) {
            if (!follows_plan(qp->attr.policy)) return {EINVAL};
            qp->attr.plan = a.plan;
            // Packets in flight on a slot that changes EV go to the window
            // sweep: the slot no longer tracks them.
            if (qp->paths.size() != 0)
                qp->paths.replan(a.plan, rng_, [&](std::size_t slot) { untrack_slot(*qp, slot); });
        }
        if ((c.mask & kAttrMinRnrTimer) && a.min_rnr_timer > 31) return {EINVAL};
        if ((c.mask & kAttrRnrRetry) && a.rnr_retry > 7) return {EINVAL};
        if ((c.mask & kAttrMaxRdAtomic) && (from != QpState::rts || a.max_rd_atomic > kMaxRdAtomic)) return {EINVAL};
        if ((c.mask & kAttrMaxDestRdAtomic) && a.max_dest_rd_atomic > kMaxRdAtomic) return {EINVAL};
        if (c.mask & kAttrMaxRdAtomic) qp->attr.max_rd_atomic = a.max_rd_atomic;
        if (c.mask & kAttrMaxDestRdAtomic) qp->attr.max_dest_rd_atomic = a.max_dest_rd_atomic;
        if (c.mask & kAttrTimeout) qp->attr.timeout_ns = a.timeout_ns;
        if (c.mask & kAttrRetryCnt) qp->attr.retry_cnt = a.retry_cnt;
        if (c.mask & kAttrMinRnrTimer) qp->attr.min_rnr_timer = a.min_rnr_timer;
        if (c.mask & kAttrRnrRetry) qp->attr.rnr_retry = a.rnr_retry;
        return {kOk};
    }
    return {EINVAL};
}

void Engine::ensure_sender(Qp& qp) {
    // The sender's state (transmit ring, EV set) is built at the first post:
    // a QP that only receives (one side of every one-way flow) never pays
    // for it — about 75 KB a QP at the default window and EV count.
    if (!qp.pkts.empty()) return;
    qp.pkts.assign(qp.rcv_window, TxPkt{});
    qp.plane_counters.assign(kMaxPlanes, PlaneCounters{});
    // Each EV's tracking ring holds twice its share of a full window, so
    // with even spraying every packet in flight is tracked by its EV.
    const QpAttr& a = qp.attr;
    const std::uint32_t share = (qp.rcv_window + a.evs - 1) / a.evs;
    const std::uint32_t depth = std::max(cfg_.ev_track_depth, 2 * share);
    // SRv6 mode: the EV picks the T1 of every path that crosses one, so
    // paths are managed per (plane, T1); otherwise per EV.
    const std::uint32_t t1s =
        cfg_.mode == wire::FrameMode::srv6 && qp.usid_template.crosses_t1() ? cfg_.fabric.t1_per_plane : 0;
    qp.paths.init(a.policy, cfg_.planes, a.evs, a.backup_evs, depth, qp.qpn, t1s, rng_, a.plan);
    qp.paths.set_probe_interval(cfg_.probe_interval_ns);
}

SubmitResult Engine::post_send(const CmdPostSend& c, TimeNs now) {
    Qp* qp = qp_by_num(c.qpn);
    if (qp == nullptr) return {EINVAL, 0, 0};
    if (qp->state == QpState::rts && !c.wrs.empty()) ensure_sender(*qp);
    for (std::size_t i = 0; i < c.wrs.size(); ++i) {
        const SendRequest& wr = c.wrs[i];
        if (qp->state != QpState::rts && qp->state != QpState::err) return {EINVAL, 0, i};
        if (wr.sge_count > qp->caps.max_send_sge) return {EINVAL, 0, i};
        std::uint64_t len = 0;
        for (std::size_t s = 0; s < wr.sge_count; ++s) len += wr.sges[s].len;
        if (len > (1ull << 31)) return {EINVAL, 0, i};
        if (wr.is_inline && len > qp->caps.max_inline_data) return {EINVAL, 0, i};
        if (wr.is_read && (wr.is_inline || wr.is_send || wr.with_imm)) return {EINVAL, 0, i};
        if (qp->sq_count - qp->rd_resp_queued >= qp->caps.max_send_wr) return {ENOMEM, 0, i};
        if (qp->state == QpState::err) {
            complete({.wr_id = wr.wr_id,
                      .qpn = qp->qpn,
                      .status = WcStatus::wr_flush_err,
                      .opcode = wr.is_read ? WcOpcode::rdma_read : wr.is_send ? WcOpcode::send : WcOpcode::rdma_write,
                      .sq_retired = ++qp->sq_retired});
            continue;
        }
        const std::uint32_t slot = (qp->sq_head + qp->sq_count) % static_cast<std::uint32_t>(qp->sq.size());
        SendMsg& m = qp->sq[slot];
        m.req = wr;
        m.response = false;
        // A READ's request carries no payload; its SGEs receive the response.
        m.length = wr.is_read ? 0 : static_cast<std::uint32_t>(len);
        m.rd_len = wr.is_read ? static_cast<std::uint32_t>(len) : 0;
        m.rd_placed = 0;
        m.rd_issued = m.rd_done = false;
        if (wr.is_inline) {
            // The caller may reuse an inline buffer as soon as post returns.
            m.inline_copy.resize(len);
            std::size_t off = 0;
            for (std::size_t s = 0; s < wr.sge_count; ++s) {
                if (wr.sges[s].len) std::memcpy(m.inline_copy.data() + off, wr.sges[s].addr, wr.sges[s].len);
                off += wr.sges[s].len;
            }
            m.req.sge_count = len ? 1 : 0;
            m.req.sges[0] = {m.inline_copy.data(), static_cast<std::uint32_t>(len)};
        }
        m.npkts = std::max<std::uint32_t>(1, (m.length + qp->attr.mtu_bytes - 1) / qp->attr.mtu_bytes);
        m.msn = qp->next_msn++;
        // SEND and WRITE_WITH_IMM consume a receive at the peer, in this
        // order; a READ names its response by its own sequence.
        if (wr.is_read) m.rqmsn = qp->next_rd_seq++;
        else m.rqmsn = wr.with_imm || wr.is_send ? qp->next_rqmsn++ : qp->next_rqmsn;
        if (qp->sq_unsegmented == 0) {
            qp->seg_msg = slot;
            qp->seg_offset = 0;
            // Nothing left to send before this message: a new burst starts a
            // fresh path rotation (PathSet::begin_burst).
            if (qp->resend.empty()) qp->paths.begin_burst(rng_);
        }
        // Credit mode: the message is demand; a QP that had nothing to send
        // and nothing in flight opens an unscheduled burst.
        if (qp->credit != nullptr)
            qp->credit->on_demand(m.length, true, qp->inflight_bytes == 0 && !qp->has_tx_work());
        ++qp->sq_count;
        ++qp->sq_unsegmented;
        if (qp->snd_una == qp->snd_nxt && qp->sq_unsegmented == 1) qp->last_progress_ns = now;
        want_tx(*qp);
    }
    return {kOk};
}

SubmitResult Engine::post_recv(const CmdPostRecv& c) {
    Qp* qp = qp_by_num(c.qpn);
    if (qp == nullptr || qp->srq != nullptr) return {EINVAL, 0, 0};  // a QP with an SRQ has no receive queue
    for (std::size_t i = 0; i < c.wrs.size(); ++i) {
        if (qp->state == QpState::reset) return {EINVAL, 0, i};
        if (qp->rq.size() >= qp->caps.max_recv_wr) return {ENOMEM, 0, i};
        if (qp->state == QpState::err) {
            complete({.wr_id = c.wrs[i].wr_id, .qpn = qp->qpn, .status = WcStatus::wr_flush_err, .opcode = WcOpcode::recv});
            continue;
        }
        qp->rq.push_back(c.wrs[i]);
    }
    deliver_imms(*qp);
    return {kOk};
}

std::uint32_t Engine::usable_planes(Qp& qp) noexcept {
    if (qp.planes_epoch != planes_epoch_) {
        qp.usable_mask = local_up_ & peer_plane_mask(qp.attr.peer_addr);
        qp.planes_epoch = planes_epoch_;
    }
    return qp.usable_mask;
}

std::uint32_t Engine::peer_plane_mask(const wire::Ipv6Addr& peer) const noexcept {
    for (const auto& p : peer_ports_)
        if (p.addr == peer) return p.up_mask;
    return ~0u;
}

SubmitResult Engine::link_change(const CmdLinkChange& c, TimeNs now) {
    if (c.plane >= cfg_.planes) return {EINVAL};
    const std::uint32_t bit = 1u << c.plane;
    const std::uint32_t before = local_up_;
    local_up_ = c.up ? (local_up_ | bit) : (local_up_ & ~bit);
    if (before == local_up_) return {kOk};
    ++planes_epoch_;
    path_event({.at_ns = now, .kind = c.up ? PathEventKind::local_port_up : PathEventKind::local_port_down,
                .plane = static_cast<std::uint8_t>(c.plane)});
    if (!c.up) {
        // Everything in flight on that port is gone: resend it elsewhere now.
        for (Qp* qp : live_) {
            if (!qp->sends()) continue;
            for (std::size_t s = 0; s < qp->paths.size(); ++s) {
                if (qp->paths.slot(s).plane != c.plane) continue;
                qp->for_each_in_flight(s, [&](std::uint32_t psn, TxPkt&) { mark_lost(*qp, psn, false); });
                qp->paths.clear_tracked(s);
            }
        }
    }
    send_port_status(now);
    port_status_next_ns_ = (local_up_ != all_planes()) ? now + cfg_.port_status_repeat_ns : kNever;
    return {kOk};
}

void Engine::enter_error(Qp& qp, WcStatus first_status, TimeNs) {
    if (qp.state == QpState::err) return;
    qp.state = QpState::err;
    // Every outstanding send WR completes, signalled or not: the first with
    // the error that ended the QP, the rest flushed (ibverbs semantics).
    bool first = first_status != WcStatus::wr_flush_err;
    const auto n = static_cast<std::uint32_t>(qp.sq.size());
    for (std::uint32_t k = 0; k < qp.sq_count; ++k) {
        const SendMsg& m = qp.sq[(qp.sq_head + k) % n];
        if (m.response) continue;  // a READ response of ours: no WR to complete
        complete({.wr_id = m.req.wr_id,
                  .qpn = qp.qpn,
                  .status = first ? first_status : WcStatus::wr_flush_err,
                  .opcode = m.wc_opcode(),
                  .sq_retired = ++qp.sq_retired});
        first = false;
    }
    qp.sq_count = qp.sq_unsegmented = 0;
    qp.rd_outstanding = 0;
    qp.rd_slots.clear();
    qp.rd_in.clear();
    qp.rd_resp_unsent = qp.rd_resp_queued = 0;
    for (std::size_t i = 0; i < qp.rq.size(); ++i)
        complete({.wr_id = qp.rq[i].wr_id, .qpn = qp.qpn, .status = WcStatus::wr_flush_err, .opcode = WcOpcode::recv});
    qp.rq.clear();
    qp.imms.clear();
    qp.resend.clear();
    qp.inflight_bytes = 0;
    qp.snd_una = qp.snd_nxt;
    qp.untracked = 0;
    qp.acked_above_una = 0;
    qp.peer_held_unreported_bytes = 0;
    qp.ack_deadline = kNever;
    qp.next_scan_ns = kNever;
}

std::size_t Engine::poll_tx(std::span<wire::GatherFrame> out, TimeNs now) {
    std::size_t n = 0;
    seal_used_ = 0;  // the sealed frames of the last call are the driver's now (copied or sent)
    while (n < out.size() && !ctrl_.empty()) {
        out[n].assign_used(ctrl_.front());
        const std::uint32_t seal_for = ctrl_seal_.front();
        ctrl_.pop_front();
        ctrl_seal_.pop_front();
        if (seal_for != 0) {
            // Sealed as it leaves, so that its cipher text lives no longer than this call's.
            Qp* qp = qp_by_num(seal_for);
            if (qp == nullptr || !qp->sec || !seal_frame(*qp, out[n])) {
                ++stats_.psp_seal_failures;
                continue;
            }
        }
        ++n;
        ++stats_.tx_ctrl_frames;
    }
    // The connection manager's messages, as control frames of their own.
    cm_used_ = 0;
    if (cm_ != nullptr) {
        CmOutgoing o;
        while (n < out.size() && cm_->poll_outgoing(o)) {
            if (!cm_frame(o, out[n])) {
                ++stats_.cm_unroutable;
                continue;
            }
            ++n;
            ++stats_.cm_frames_sent;
            ++stats_.tx_ctrl_frames;
        }
    }
    // One data packet per QP per round, round robin over the QPs with work;
    // a QP with nothing left leaves the list (post_send and losses put it back).
    while (n < out.size() && !tx_active_.empty()) {
        bool progressed = false;
        for (std::size_t k = 0; k < tx_active_.size() && n < out.size();) {
            const std::size_t i = (tx_cursor_ + k) % tx_active_.size();
            Qp* qp = tx_active_[i];
            if (!qp->sends() || !qp->has_tx_work()) {
                qp->tx_listed = false;
                tx_active_[i] = tx_active_.back();
                tx_active_.pop_back();
                continue;
            }
            if (send_one_data(*qp, out[n], now)) {
                ++n;
                progressed = true;
            }
            ++k;
        }
        if (!tx_active_.empty()) tx_cursor_ = (tx_cursor_ + 1) % static_cast<std::uint32_t>(tx_active_.size());
        if (!progressed) break;
    }
    stats_.tx_frames += n;
    return n;
}

void Engine::path_event(const PathEvent& e) {
    if (path_events_.size() >= kPathEventLimit) {
        path_events_.pop_front();
        ++stats_.path_events_dropped;
    }
    path_events_.push_back(e);
}

std::size_t Engine::poll_path_events(std::span<PathEvent> out) {
    std::size_t n = 0;
    while (n < out.size() && !path_events_.empty()) {
        out[n++] = path_events_.front();
        path_events_.pop_front();
    }
    return n;
}

std::size_t Engine::poll_completions(std::span<Completion> out) {
    std::size_t n = 0;
    while (n < out.size() && !completions_.empty()) {
        out[n++] = completions_.front();
        completions_.pop_front();
    }
    return n;
}

namespace {
bool timer_later(const std::pair<TimeNs, std::uint32_t>& a, const std::pair<TimeNs, std::uint32_t>& b) noexcept {
    return a.first > b.first;
}
}  // namespace

void Engine::push_timer(TimeNs at, std::uint32_t qpn) {
    timers_.emplace_back(at, qpn);
    std::push_heap(timers_.begin(), timers_.end(), timer_later);
}

TimeNs Engine::next_wakeup() const noexcept {
    // A stale heap entry can make this early, never late: on_timer() then
    // finds nothing due and drops it.
    const TimeNs t = timers_.empty() ? kNever : timers_.front().first;
    // Messages the connection manager queued (outside a timer) wait for poll_tx: due now.
    const TimeNs cm = cm_ == nullptr ? kNever : cm_->has_outgoing() ? 0 : cm_->next_wakeup();
    return std::min({t, port_status_next_ns_, credit_next_ns_, cm});
}

void Engine::on_timer(TimeNs now) {
    while (!timers_.empty() && timers_.front().first <= now) {
        const auto [at, qpn] = timers_.front();
        std::pop_heap(timers_.begin(), timers_.end(), timer_later);
        timers_.pop_back();
        Qp* qp = qp_by_num(qpn);
        if (qp == nullptr || qp->timer_armed_ns != at) continue;  // stale
        qp->timer_armed_ns = kNever;
        if (qp->ack_deadline <= now) send_sack(*qp, now);
        if (qp->next_scan_ns <= now) sender_timers(*qp, now);
        if (qp->deadline() != kNever) arm_timer(*qp);
    }
    if (credit_next_ns_ <= now) {
        credit_schedule(now);
        credit_send_grants(now);
    }
    if (port_status_next_ns_ <= now) {
        send_port_status(now);
        port_status_next_ns_ = (local_up_ != all_planes()) ? now + cfg_.port_status_repeat_ns : kNever;
    }
    if (cm_ != nullptr && cm_->next_wakeup() <= now) cm_->on_timer(now);
}

void Engine::on_rx(std::span<const std::uint8_t> frame, std::uint8_t plane, TimeNs now) {
    const wire::RxFrame one{frame.data(), static_cast<std::uint32_t>(frame.size()), plane};
    on_rx_burst({&one, 1}, now);
}

void Engine::on_rx_burst(std::span<const wire::RxFrame> frames, TimeNs now) {
    for (const wire::RxFrame& f : frames) rx_one(f, now);
    // Grants first, so that the SACKs of this burst carry them.
    if (credit_sched_.configured()) credit_schedule(now);
    flush_acks(now);
    if (!credit_granted_.empty()) credit_send_grants(now);
}

void Engine::rx_one(const wire::RxFrame& arrived, TimeNs now) {
    ++stats_.rx_frames;
    // A sealed frame is opened first (everything checked before any state
    // changes), then handled as the plain frame inside it.
    Qp* sealed_for = nullptr;
    wire::RxFrame opened;
    if (secure_qps_ > 0 && open_frame(arrived, opened, sealed_for) == Opened::dropped) return;
    const wire::RxFrame& frame = sealed_for != nullptr ? opened : arrived;
    wire::FrameView f;
    // The ICRC of a sealed frame was checked over the sealed bytes.
    const wire::ParseOptions opts{.verify_icrc = cfg_.verify_icrc && sealed_for == nullptr};
    const wire::WireError e = wire::parse_frame_view(frame, opts, f);
    if (e != wire::WireError::ok) {
        ++stats_.rx_wire_errors[static_cast<std::size_t>(e)];
        return;
    }
    const wire::Opcode op = f.bth.opcode;
    rx_plane_ = frame.plane;
    rx_ev_ = f.ev;
    rx_telemetry_ = frame.telemetry;
    if (op == wire::Opcode::ep_request || op == wire::Opcode::ep_response) {
        on_endpoint(f, frame.plane, frame.no_reply, now);
        return;
    }
    if (op == wire::Opcode::cm) return on_cm(f, frame, now);
    // A sealed frame's QP is the one open_frame found (its SPI names the QP its BTH does).
    Qp* qp = sealed_for != nullptr ? sealed_for : qp_by_num(f.bth.dest_qp);
    assert(sealed_for == nullptr || sealed_for->qpn == f.bth.dest_qp);
    if (qp == nullptr) return drop(DropReason::no_qp);
    if (qp->state == QpState::reset || qp->state == QpState::init || qp->state == QpState::err)
        return drop(DropReason::bad_state);
    if (!f.ip_src_is(qp->attr.peer_addr)) return drop(DropReason::wrong_source);
    // An encrypted QP takes sealed frames only (open_frame matched the SPI to this QP).
    if (qp->sec && sealed_for != qp) return drop(DropReason::psp_required);
    if (f.has_crth && qp->cc_info->receiver_credit) credit_rx(*qp, f.crth(), f, now);
    if (f.trim != wire::TrimKind::none) return on_trimmed(*qp, f, now);
    switch (op) {
        case wire::Opcode::sack:
            if (!qp->sends()) return drop(DropReason::bad_state);
            return on_sack(*qp, f, now);
        case wire::Opcode::nack:
            if (!qp->sends()) return drop(DropReason::bad_state);
            return on_nack(*qp, f, now);
        case wire::Opcode::ack:
            if (!qp->sends()) return drop(DropReason::bad_state);
            return on_aeth(*qp, f, now);
        case wire::Opcode::probe: return on_probe(*qp, f, frame.plane, now);
        default: return on_data(*qp, f, now);
    }
}

void Engine::flush_acks(TimeNs now) {
    for (Qp* qp : ack_list_) {
        qp->ack_queued = false;
        if (qp->state == QpState::err || qp->state == QpState::reset) continue;
        if (qp->ack_due) {
            send_sack(*qp, now);
        } else if (qp->ack_pending > 0 && qp->ack_deadline == kNever) {
            qp->ack_deadline = now + cfg_.ack_delay_ns;
            arm_timer(*qp);
        }
    }
    ack_list_.clear();
}

}  // namespace omrc::core
