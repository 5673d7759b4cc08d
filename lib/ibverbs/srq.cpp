// SPDX-License-Identifier: BSD-3-Clause
// libibverbs-compatible library: shared receive queues (ibv_create_srq,
// ibv_modify_srq, ibv_query_srq, ibv_destroy_srq, ibv_post_srq_recv) over
// OpenMRC's Srq, and the affiliated async events they raise
// (IBV_EVENT_SRQ_LIMIT_REACHED through ibv_get_async_event).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "log/log.hpp"
#include "objects.hpp"
#include "symver.hpp"

namespace omrc::ibv {

void Context::take_async_events_locked() {
    AsyncEvent ev[16];
    for (std::size_t n; (n = dev->poll_async_events(ev)) != 0;) {
        for (std::size_t i = 0; i < n; ++i) {
            const auto s = srqs.find(ev[i].srq);
            if (s == srqs.end()) continue;
            ibv_async_event e{};
            e.element.srq = &s->second->srq;
            e.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
            async_events.push_back(e);
            const std::uint64_t one = 1;
            (void)!::write(vctx.context.async_fd, &one, sizeof one);
        }
    }
}

int post_srq_recv_op(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
    Srq& s = *reinterpret_cast<Srq*>(srq);
    std::lock_guard g(s.ctx->mu);
    return post_recv_chain(wr, bad_wr, [&](const RecvWr& o) { return s.osrq->post_recv(o); });
}

}  // namespace omrc::ibv

using namespace omrc::ibv;

OMRC_IBV_DUAL(ibv_create_srq)
OMRC_IBV_DUAL(ibv_modify_srq)
OMRC_IBV_DUAL(ibv_query_srq)
OMRC_IBV_DUAL(ibv_destroy_srq)

extern "C" {

ibv_srq* omrc_ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* init) {
    if (pd == nullptr || init == nullptr) return fail_null<ibv_srq>(EINVAL);
    Pd* p = reinterpret_cast<Pd*>(pd);
    Context* c = to_ctx(pd->context);
    // As providers do: the sizes asked for are minimums (max_sge 0 means 1).
    omrc::SrqAttr a;
    a.max_wr = init->attr.max_wr;
    a.max_sge = std::max<std::uint32_t>(init->attr.max_sge, 1);
    a.srq_limit = init->attr.srq_limit;
    try {
        auto s = std::make_unique<Srq>();
        int err = 0;
        {
            std::lock_guard g(c->mu);
            s->osrq = p->opd->create_srq(a, &err);
            if (s->osrq) c->srqs.emplace(s->osrq.get(), s.get());
        }
        if (!s->osrq) return fail_null<ibv_srq>(err);
        s->ctx = c;
        s->pd = p;
        ibv_srq& b = s->srq;
        b.context = pd->context;
        b.srq_context = init->srq_context;
        b.pd = pd;
        b.handle = s->osrq->srq_num();
        pthread_mutex_init(&b.mutex, nullptr);
        pthread_cond_init(&b.cond, nullptr);
        init->attr.max_wr = a.max_wr;
        init->attr.max_sge = a.max_sge;
        ++p->children;
        return &s.release()->srq;
    } catch (const std::bad_alloc&) {
        return fail_null<ibv_srq>(ENOMEM);
    }
}

int omrc_ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
    if (srq == nullptr || attr == nullptr) return EINVAL;
    Srq* s = reinterpret_cast<Srq*>(srq);
    if ((mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) != 0) return EINVAL;
    std::uint32_t m = 0;
    if (mask & IBV_SRQ_MAX_WR) m |= omrc::SrqAttrMask::max_wr;
    if (mask & IBV_SRQ_LIMIT) m |= omrc::SrqAttrMask::limit;
    omrc::SrqAttr a;
    a.max_wr = attr->max_wr;
    a.srq_limit = attr->srq_limit;
    std::lock_guard g(s->ctx->mu);
    return s->osrq->modify(a, m);
}

int omrc_ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
    if (srq == nullptr || attr == nullptr) return EINVAL;
    Srq* s = reinterpret_cast<Srq*>(srq);
    std::lock_guard g(s->ctx->mu);
    const omrc::SrqAttr a = s->osrq->query();
    attr->max_wr = a.max_wr;
    attr->max_sge = a.max_sge;
    attr->srq_limit = a.srq_limit;
    return 0;
}

int omrc_ibv_destroy_srq(ibv_srq* srq) {
    if (srq == nullptr) return EINVAL;
    Srq* s = reinterpret_cast<Srq*>(srq);
    Context* c = s->ctx;
    {
        std::lock_guard g(c->mu);
        if (s->qps != 0) return EBUSY;
        c->take_async_events_locked();  // then drop the ones naming it
        c->srqs.erase(s->osrq.get());
        std::erase_if(c->async_events, [&](const ibv_async_event& e) {
            return e.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && e.element.srq == srq;
        });
        s->osrq.reset();
    }
    --s->pd->children;
    pthread_mutex_destroy(&srq->mutex);
    pthread_cond_destroy(&srq->cond);
    delete s;
    return 0;
}

}  // extern "C"
