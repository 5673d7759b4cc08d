// SPDX-License-Identifier: BSD-3-Clause
// The C API's shared receive queues and the device's asynchronous events.
#include <algorithm>
#include <array>
#include <cerrno>
#include <memory>
#include <span>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "capi/work_requests.hpp"
#include "log/log.hpp"

using omrc::capi::convert_recv_wrs;
using omrc::capi::guarded;
using omrc::capi::post_prefix;

void omrc_srq_attr_init(struct omrc_srq_attr* a) {
    if (a == nullptr) return;
    const omrc::SrqAttr d;
    *a = {d.max_wr, d.max_sge, d.srq_limit};
}

int omrc_srq_create(struct omrc_pd* pd, const struct omrc_srq_attr* attr, int worker, struct omrc_srq** out) {
    if (out != nullptr) *out = nullptr;
    if (pd == nullptr || attr == nullptr || out == nullptr) return EINVAL;
    return guarded("omrc_srq_create", [&] {
        const omrc::SrqAttr a{attr->max_wr, attr->max_sge, attr->srq_limit};
        auto handle = std::make_unique<omrc_srq>();
        int err = 0;
        handle->srq = pd->pd->create_srq(a, &err, worker);
        if (handle->srq == nullptr) return err != 0 ? err : EIO;
        handle->pd = pd;
        ++pd->live_srqs;
        pd->dev->srqs.emplace(handle->srq.get(), handle.get());
        *out = handle.release();
        return 0;
    });
}

int omrc_srq_destroy(struct omrc_srq* srq) {
    if (srq == nullptr) return EINVAL;
    if (srq->live_qps != 0) {
        (void)guarded("omrc_srq_destroy", [&] {
            omrc::log::logger().error("omrc_srq_destroy: {} qp(s) still use the srq", srq->live_qps);
            return 0;
        });
        return EBUSY;
    }
    return guarded("omrc_srq_destroy", [&] {
        srq->pd->dev->srqs.erase(srq->srq.get());
        srq->srq.reset();
        --srq->pd->live_srqs;
        delete srq;
        return 0;
    });
}

int omrc_srq_post_recv(struct omrc_srq* srq, const struct omrc_recv_wr* wrs, size_t n, size_t* bad_wr) {
    if (srq == nullptr || (wrs == nullptr && n != 0)) {
        if (bad_wr != nullptr) *bad_wr = 0;
        return EINVAL;
    }
    return guarded("omrc_srq_post_recv", [&] {
        const std::size_t valid = convert_recv_wrs(wrs, n, srq->sge_scratch, srq->recv_scratch);
        auto& list = srq->recv_scratch;
        return post_prefix([&](std::size_t* bad) { return srq->srq->post_recv(list, bad); }, valid, n, bad_wr);
    });
}

int omrc_srq_modify(struct omrc_srq* srq, const struct omrc_srq_attr* attr, uint32_t mask) {
    if (srq == nullptr || attr == nullptr) return EINVAL;
    return guarded("omrc_srq_modify", [&] {
        return srq->srq->modify(omrc::SrqAttr{attr->max_wr, attr->max_sge, attr->srq_limit}, mask);
    });
}

int omrc_srq_query(const struct omrc_srq* srq, struct omrc_srq_attr* out) {
    if (srq == nullptr || out == nullptr) return EINVAL;
    return guarded("omrc_srq_query", [&] {
        const omrc::SrqAttr a = srq->srq->query();
        *out = {a.max_wr, a.max_sge, a.srq_limit};
        return 0;
    });
}

uint32_t omrc_srq_worker(const struct omrc_srq* srq) { return srq == nullptr ? 0 : srq->srq->worker(); }

int omrc_device_poll_async_events(struct omrc_device* dev, struct omrc_async_event* out, int n) {
    if (dev == nullptr || n < 0 || (out == nullptr && n > 0)) return -EINVAL;
    int got = 0;
    const int rc = guarded("omrc_device_poll_async_events", [&] {
        std::array<omrc::AsyncEvent, 16> chunk;
        while (got < n) {
            const std::size_t want = std::min<std::size_t>(chunk.size(), static_cast<std::size_t>(n - got));
            const std::size_t k = dev->dev->poll_async_events(std::span<omrc::AsyncEvent>(chunk.data(), want));
            for (std::size_t i = 0; i < k; ++i) {
                const auto h = dev->srqs.find(chunk[i].srq);
                out[got++] = {static_cast<int>(chunk[i].type), h == dev->srqs.end() ? nullptr : h->second};
            }
            if (k < want) break;
        }
        return 0;
    });
    return rc != 0 ? -rc : got;
}
