// SPDX-License-Identifier: BSD-3-Clause
// Engine: shared receive queues (core/srq.hpp, docs/PROTOCOL.md §11.9, "Shared receive queues").
#include <cerrno>
#include <utility>

#include "core/engine.hpp"

namespace omrc::core {

namespace {
constexpr std::uint32_t kMaxSrqWr = 65536;
}  // namespace

const Srq* Engine::find_srq(std::uint32_t srqn) const noexcept {
    if (srqn == 0 || srqn > srqs_.size()) return nullptr;
    return srqs_[srqn - 1].get();
}

Srq* Engine::srq_by_num(std::uint32_t srqn) noexcept { return const_cast<Srq*>(std::as_const(*this).find_srq(srqn)); }

SubmitResult Engine::create_srq(const CmdCreateSrq& c) {
    if (c.max_wr == 0 || c.max_wr > kMaxSrqWr || c.limit > c.max_wr) return {EINVAL};
    // The lowest free number: SRQs are few and long-lived.
    std::size_t i = 0;
    while (i < srqs_.size() && srqs_[i] != nullptr) ++i;
    if (i == srqs_.size()) srqs_.emplace_back();
    auto srq = std::make_unique<Srq>();
    srq->srqn = static_cast<std::uint32_t>(i + 1);
    srq->pd = c.pd;
    srq->max_wr = c.max_wr;
    srq->limit = c.limit;
    srqs_[i] = std::move(srq);
    SubmitResult r{kOk};
    r.srqn = static_cast<std::uint32_t>(i + 1);
    return r;
}

SubmitResult Engine::modify_srq(const CmdModifySrq& c) {
    Srq* s = srq_by_num(c.srqn);
    if (s == nullptr || (c.mask & ~(kSrqAttrMaxWr | kSrqAttrLimit)) != 0) return {EINVAL};
    const std::uint32_t max_wr = (c.mask & kSrqAttrMaxWr) ? c.max_wr : s->max_wr;
    const std::uint32_t limit = (c.mask & kSrqAttrLimit) ? c.limit : s->limit;
    // A queue never shrinks below what it holds (nothing posted is lost).
    if (max_wr == 0 || max_wr > kMaxSrqWr || max_wr < s->wrs.size() || limit > max_wr) return {EINVAL};
    s->max_wr = max_wr;
    s->limit = limit;
    return {kOk};
}

SubmitResult Engine::destroy_srq(const CmdDestroySrq& c) {
    Srq* s = srq_by_num(c.srqn);
    if (s == nullptr) return {EINVAL};
    if (s->qps != 0) return {EBUSY};
    srqs_[c.srqn - 1].reset();
    return {kOk};
}

SubmitResult Engine::post_srq_recv(const CmdPostSrqRecv& c) {
    Srq* s = srq_by_num(c.srqn);
    if (s == nullptr) return {EINVAL, 0, 0};
    for (std::size_t i = 0; i < c.wrs.size(); ++i) {
        if (s->wrs.size() >= s->max_wr) return {ENOMEM, 0, i};
        s->wrs.push_back(c.wrs[i]);
        ++s->posted;
    }
    // Messages whose data is all placed may have waited for a receive (only
    // then are its QPs looked at: posting is otherwise O(1)).
    if (s->imm_waiting) {
        s->imm_waiting = false;  // set again by deliver_imms if still too few
        for (Qp* qp : live_)
            if (qp->srq == s && !qp->imms.empty()) deliver_imms(*qp);
    }
    return {kOk};
}

bool Engine::bind_receives(Qp& qp, std::size_t need) {
    if (qp.rq.size() >= need) return true;
    Srq* s = qp.srq;
    if (s == nullptr) return false;
    const std::size_t missing = need - qp.rq.size();
    if (s->wrs.size() < missing) return false;
    for (std::size_t i = 0; i < missing; ++i) {
        qp.rq.push_back(s->wrs.front());
        s->wrs.pop_front();
    }
    s->taken += missing;
    if (s->limit != 0 && s->wrs.size() < s->limit) {
        s->limit = 0;  // one event per arming (ibv_modify_srq with IBV_SRQ_LIMIT arms it again)
        ++s->limit_events;
        complete({.wr_id = s->srqn, .qpn = 0, .opcode = WcOpcode::srq_limit_reached});
    }
    return true;
}

}  // namespace omrc::core
