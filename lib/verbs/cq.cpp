// SPDX-License-Identifier: BSD-3-Clause
// Cq: completions routed from the engine by QPN, polled by the application.
#include <algorithm>
#include <cerrno>

#include "log/log.hpp"
#include "verbs/device_core.hpp"

namespace omrc {

const char* to_string(WcStatus s) noexcept {
    switch (s) {
        case WcStatus::success: return "success";
        case WcStatus::loc_len_err: return "loc_len_err";
        case WcStatus::loc_qp_op_err: return "loc_qp_op_err";
        case WcStatus::loc_prot_err: return "loc_prot_err";
        case WcStatus::wr_flush_err: return "wr_flush_err";
        case WcStatus::bad_resp_err: return "bad_resp_err";
        case WcStatus::loc_access_err: return "loc_access_err";
        case WcStatus::rem_inv_req_err: return "rem_inv_req_err";
        case WcStatus::rem_access_err: return "rem_access_err";
        case WcStatus::rem_op_err: return "rem_op_err";
        case WcStatus::retry_exc_err: return "retry_exc_err";
        case WcStatus::rnr_retry_exc_err: return "rnr_retry_exc_err";
        case WcStatus::general_err: return "general_err";
    }
    return "unknown";
}

Cq::~Cq() {
    if (qps_ != 0) detail::abort_live_children("Cq", qps_);
    auto& cqs = core_->cqs;
    cqs.erase(std::remove(cqs.begin(), cqs.end(), this), cqs.end());
    --core_->children;
}

std::size_t Cq::poll(std::span<Wc> out) {
    (void)core_->collect();  // worker threads: what they completed so far
    const std::size_t n = std::min(out.size(), entries_.size());
    std::copy_n(entries_.begin(), n, out.begin());
    entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(n));
    return n;
}

int Cq::resize(int cqe) {
    if (cqe < 1 || cqe > kMaxCqe) return EINVAL;
    (void)core_->collect();  // worker threads: count what they completed so far
    if (static_cast<std::size_t>(cqe) < entries_.size()) return EINVAL;
    cqe_ = cqe;
    return 0;
}

void detail::DeviceCore::route_completion(const core::Completion& c) {
    if (c.opcode == core::WcOpcode::srq_limit_reached) {
        const auto s = srqs.find(srq_key(c.qpn, static_cast<std::uint32_t>(c.wr_id)));
        if (s != srqs.end()) async_events.push_back({AsyncEventType::srq_limit_reached, s->second});
        return;
    }
    auto it = qps.find(c.qpn);
    if (it == qps.end()) {
        ++completions_orphaned;
        return;
    }
    Qp& qp = *it->second;
    const bool recv = c.opcode == core::WcOpcode::recv || c.opcode == core::WcOpcode::recv_rdma_with_imm;
    // What a poster on this thread knows of the QP (Qp::post_send with a worker thread).
    if (recv) ++qp.rq_retired_;
    else qp.sq_retired_ = c.sq_retired;
    if (c.status != core::WcStatus::success) qp.posted_state_ = QpState::err;
    Cq& cq = recv ? *qp.recv_cq_ : *qp.send_cq_;
    Wc wc;
    wc.wr_id = c.wr_id;
    wc.status = static_cast<WcStatus>(c.status);  // both numbered as ibv_wc_status
    wc.opcode = static_cast<WcOpcode>(c.opcode);  // both numbered as ibv_wc_opcode
    wc.byte_len = c.byte_len;
    wc.imm_data = c.imm_data;
    wc.qp_num = c.qpn;
    wc.wc_flags = c.has_imm ? WcFlags::with_imm : 0;
    wc.solicited = c.solicited;
    if (cq.entries_.size() >= static_cast<std::size_t>(cq.cqe_)) {
        if (cq.overruns_++ == 0)
            log::logger().warn("CQ overrun: {} completions waiting in a CQ of {}; it grows, "
                                   "but the consumer polls too rarely", cq.entries_.size(), cq.cqe_);
    }
    if (wc.solicited || wc.status != WcStatus::success) ++cq.solicited_events_;
    cq.entries_.push_back(wc);
}

}  // namespace omrc

namespace omrc::detail {
// The public enums reuse ibverbs' numbering, as the engine's do.
static_assert(static_cast<int>(WcStatus::loc_prot_err) == static_cast<int>(core::WcStatus::loc_prot_err));
static_assert(static_cast<int>(WcStatus::rem_access_err) == static_cast<int>(core::WcStatus::rem_access_err));
static_assert(static_cast<int>(WcStatus::retry_exc_err) == static_cast<int>(core::WcStatus::retry_exc_err));
static_assert(static_cast<int>(WcStatus::general_err) == static_cast<int>(core::WcStatus::general_err));
static_assert(static_cast<int>(WcOpcode::rdma_write) == static_cast<int>(core::WcOpcode::rdma_write));
static_assert(static_cast<int>(WcOpcode::send) == static_cast<int>(core::WcOpcode::send) &&
              static_cast<int>(WcOpcode::recv) == static_cast<int>(core::WcOpcode::recv));
static_assert(static_cast<int>(WcOpcode::recv_rdma_with_imm) ==
              static_cast<int>(core::WcOpcode::recv_rdma_with_imm));
static_assert(AccessFlags::local_write == core::kAccessLocalWrite &&
              AccessFlags::remote_write == core::kAccessRemoteWrite &&
              AccessFlags::remote_read == core::kAccessRemoteRead &&
              AccessFlags::remote_atomic == core::kAccessRemoteAtomic);
}  // namespace omrc::detail
