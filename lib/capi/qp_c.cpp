// SPDX-License-Identifier: BSD-3-Clause
// The C API's queue pairs: creation, state changes, posting work requests.
#include <cerrno>
#include <cstring>
#include <memory>
#include <span>

#include "capi/boundary.hpp"
#include "capi/convert.hpp"
#include "capi/handles.hpp"
#include "capi/work_requests.hpp"
#include "log/log.hpp"

using omrc::capi::append_sges;
using omrc::capi::convert_recv_wrs;
using omrc::capi::guarded;
using omrc::capi::post_prefix;
using omrc::capi::sges_readable;


void omrc_qp_init_attr_init(struct omrc_qp_init_attr* a) {
    if (a == nullptr) return;
    const omrc::QpInitAttr d;
    *a = omrc_qp_init_attr{};
    a->cap = {d.cap.max_send_wr, d.cap.max_recv_wr, d.cap.max_send_sge, d.cap.max_recv_sge, d.cap.max_inline_data};
    a->sq_sig_all = d.sq_sig_all;
    a->worker = d.worker;
}

void omrc_qp_attr_init(struct omrc_qp_attr* a) {
    if (a != nullptr) *a = omrc::capi::to_c(omrc::QpAttr{});
}

int omrc_qp_create(struct omrc_pd* pd, const struct omrc_qp_init_attr* attr, struct omrc_qp** out) {
    if (out != nullptr) *out = nullptr;
    if (pd == nullptr || attr == nullptr || out == nullptr || attr->send_cq == nullptr || attr->recv_cq == nullptr)
        return EINVAL;
    return guarded("omrc_qp_create", [&] {
        if (attr->send_cq->dev != pd->dev || attr->recv_cq->dev != pd->dev) {
            omrc::log::logger().error("omrc_qp_create: the CQs must belong to the device of the PD");
            return EINVAL;
        }
        omrc::QpInitAttr init;
        init.send_cq = attr->send_cq->cq.get();
        init.recv_cq = attr->recv_cq->cq.get();
        init.cap = {attr->cap.max_send_wr, attr->cap.max_recv_wr, attr->cap.max_send_sge, attr->cap.max_recv_sge,
                    attr->cap.max_inline_data};
        init.sq_sig_all = attr->sq_sig_all;
        init.worker = attr->worker;
        if (attr->srq != nullptr) {
            if (attr->srq->pd->dev != pd->dev) {
                omrc::log::logger().error("omrc_qp_create: the SRQ must belong to the device of the PD");
                return EINVAL;
            }
            init.srq = attr->srq->srq.get();
        }
        auto handle = std::make_unique<omrc_qp>();
        int err = 0;
        handle->qp = pd->pd->create_qp(init, &err);
        if (handle->qp == nullptr) return err != 0 ? err : EIO;
        handle->pd = pd;
        handle->send_cq = attr->send_cq;
        handle->recv_cq = attr->recv_cq;
        handle->srq = attr->srq;
        if (attr->srq != nullptr) ++attr->srq->live_qps;
        ++pd->live_qps;
        ++attr->send_cq->live_qps;
        ++attr->recv_cq->live_qps;
        pd->dev->qps[handle->qp.get()] = handle.get();
        *out = handle.release();
        return 0;
    });
}

int omrc_qp_destroy(struct omrc_qp* qp) {
    if (qp == nullptr) return EINVAL;
    return guarded("omrc_qp_destroy", [&] {
        qp->pd->dev->qps.erase(qp->qp.get());
        qp->qp.reset();
        --qp->pd->live_qps;
        --qp->send_cq->live_qps;
        --qp->recv_cq->live_qps;
        if (qp->srq != nullptr) --qp->srq->live_qps;
        delete qp;
        return 0;
    });
}

int omrc_qp_modify(struct omrc_qp* qp, const struct omrc_qp_attr* attr, uint32_t mask) {
    if (qp == nullptr || attr == nullptr) return EINVAL;
    return guarded("omrc_qp_modify", [&] {
        omrc::QpAttr a;
        if (const int rc = omrc::capi::from_c(*attr, mask, a); rc != 0) return rc;
        return qp->qp->modify(a, mask);
    });
}

int omrc_qp_post_send(struct omrc_qp* qp, const struct omrc_send_wr* wrs, size_t n, size_t* bad_wr) {
    if (qp == nullptr || (wrs == nullptr && n != 0)) {
        if (bad_wr != nullptr) *bad_wr = 0;
        return EINVAL;
    }
    return guarded("omrc_qp_post_send", [&] {
        // The prefix the C layer can convert: known opcode, readable SGEs.
        std::size_t valid = 0;
        std::size_t sges = 0;
        for (; valid < n; ++valid) {
            const omrc_send_wr& w = wrs[valid];
            int opcode = 0;  // read as an int: a C caller may store any value (UBSan's -fsanitize=enum)
            static_assert(sizeof opcode == sizeof w.opcode);
            std::memcpy(&opcode, &w.opcode, sizeof opcode);
            if ((opcode != OMRC_WR_RDMA_WRITE && opcode != OMRC_WR_RDMA_WRITE_WITH_IMM && opcode != OMRC_WR_SEND &&
                 opcode != OMRC_WR_SEND_WITH_IMM && opcode != OMRC_WR_RDMA_READ) ||
                !sges_readable(w.sg_list, w.num_sge))
                break;
            sges += w.num_sge;
        }
        auto& sge_list = qp->sge_scratch;
        auto& list = qp->send_scratch;
        sge_list.clear();
        list.clear();
        sge_list.reserve(sges);  // the spans below point into it: no reallocation after this
        list.reserve(valid);
        for (std::size_t i = 0; i < valid; ++i) {
            const omrc_send_wr& w = wrs[i];
            const std::size_t first = sge_list.size();
            append_sges(sge_list, w.sg_list, w.num_sge);
            omrc::SendWr s;
            s.wr_id = w.wr_id;
            s.opcode = static_cast<omrc::WrOpcode>(w.opcode);
            s.send_flags = w.send_flags;
            s.sg_list = std::span<const omrc::Sge>(sge_list.data() + first, w.num_sge);
            s.remote_addr = w.remote_addr;
            s.rkey = w.rkey;
            s.imm_data = w.imm_data;
            list.push_back(s);
        }
        return post_prefix([&](std::size_t* bad) { return qp->qp->post_send(list, bad); }, valid, n, bad_wr);
    });
}

int omrc_qp_post_recv(struct omrc_qp* qp, const struct omrc_recv_wr* wrs, size_t n, size_t* bad_wr) {
    if (qp == nullptr || (wrs == nullptr && n != 0)) {
        if (bad_wr != nullptr) *bad_wr = 0;
        return EINVAL;
    }
    return guarded("omrc_qp_post_recv", [&] {
        const std::size_t valid = convert_recv_wrs(wrs, n, qp->sge_scratch, qp->recv_scratch);
        auto& list = qp->recv_scratch;
        return post_prefix([&](std::size_t* bad) { return qp->qp->post_recv(list, bad); }, valid, n, bad_wr);
    });
}

int omrc_qp_deny_ev(struct omrc_qp* qp, uint32_t ev) {
    if (qp == nullptr) return EINVAL;
    return guarded("omrc_qp_deny_ev", [&] { return qp->qp->deny_ev(ev); });
}

int omrc_qp_rotate_key(struct omrc_qp* qp) {
    if (qp == nullptr) return EINVAL;
    return guarded("omrc_qp_rotate_key", [&] { return qp->qp->rotate_key(); });
}

int omrc_qp_encrypted(const struct omrc_qp* qp) { return qp != nullptr && qp->qp->encrypted() ? 1 : 0; }

uint32_t omrc_qp_num(const struct omrc_qp* qp) { return qp == nullptr ? 0 : qp->qp->qp_num(); }

uint32_t omrc_qp_worker(const struct omrc_qp* qp) { return qp == nullptr ? 0 : qp->qp->worker(); }

uint16_t omrc_qp_conn_id(const struct omrc_qp* qp) { return qp == nullptr ? 0 : qp->qp->conn_id(); }

int omrc_qp_get_state(const struct omrc_qp* qp) {
    if (qp == nullptr) return -EINVAL;
    int state = 0;
    if (const int rc = guarded("omrc_qp_get_state", [&] {
            state = static_cast<int>(qp->qp->state());
            return 0;
        });
        rc != 0)
        return -rc;
    return state;
}
