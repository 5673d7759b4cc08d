// SPDX-License-Identifier: BSD-3-Clause
// Protection domains, memory regions, completion channels, CQs and QPs:
// each ibverbs call maps onto the OpenMRC verbs object it stands for.
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "log/log.hpp"
#include "objects.hpp"
#include "symver.hpp"

// verbs.h turns these calls into inline wrappers; the library defines the functions.
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace omrc::ibv {

namespace {

constexpr std::uint32_t kMaxWr = 65536;
constexpr std::uint32_t kMaxInline = 4096;
/// How long ibv_destroy_qp progresses a connected QP's device before it
/// destroys the QP (ACKs still owed leave): ten times the default ACK delay.
constexpr std::uint64_t kLingerNs = 20'000;
/// The ibv_qp_ex builder operations an OpenMRC RC QP carries.
constexpr std::uint64_t kSendOpsSupported = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                                            IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                                            IBV_QP_EX_WITH_RDMA_READ;
/// Access bits OpenMRC understands; the optional ones (relaxed ordering and
/// the rest of IBV_ACCESS_OPTIONAL_RANGE) and HUGETLB are hints it may ignore.
constexpr unsigned kAccessKnown = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                  IBV_ACCESS_REMOTE_ATOMIC;
constexpr unsigned kAccessIgnored = static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE) | IBV_ACCESS_HUGETLB;

template <class F>
auto guarded(const char* what, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const std::bad_alloc&) {
        errno = ENOMEM;
    } catch (const std::exception& e) {
        omrc::log::logger().error("ibverbs: {}: {}", what, e.what());
        errno = EIO;
    }
    if constexpr (std::is_pointer_v<decltype(f())>) return nullptr;
    else return errno;
}

ibv_mr* reg(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned access) {
    if (pd == nullptr) return fail_null<ibv_mr>(EINVAL);
    if (iova != reinterpret_cast<std::uintptr_t>(addr)) {
        omrc::log::logger().warn("ibverbs: reg_mr with an iova other than the address is not supported");
        return fail_null<ibv_mr>(EOPNOTSUPP);
    }
    const unsigned a = access & ~kAccessIgnored;
    if ((a & ~kAccessKnown) != 0) {
        omrc::log::logger().warn("ibverbs: reg_mr access 0x{:x}: memory windows, zero-based and on-demand MRs are not "
                           "supported",
                           a & ~kAccessKnown);
        return fail_null<ibv_mr>(EOPNOTSUPP);
    }
    Pd* p = reinterpret_cast<Pd*>(pd);
    Context* c = to_ctx(pd->context);
    auto m = std::make_unique<Mr>();
    int err = 0;
    {
        std::lock_guard g(c->mu);
        m->omr = p->opd->reg_mr(addr, length, a, &err);
    }
    if (!m->omr) return fail_null<ibv_mr>(err);
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = length;
    m->mr.handle = m->omr->lkey();
    m->mr.lkey = m->omr->lkey();
    m->mr.rkey = m->omr->rkey();
    ++p->children;
    return &m.release()->mr;
}

QpState to_omrc(ibv_qp_state s, bool& ok) {
    ok = true;
    switch (s) {
        case IBV_QPS_RESET: return QpState::reset;
        case IBV_QPS_INIT: return QpState::init;
        case IBV_QPS_RTR: return QpState::rtr;
        case IBV_QPS_RTS: return QpState::rts;
        case IBV_QPS_ERR: return QpState::err;
        default: ok = false; return QpState::err;
    }
}

ibv_qp_state to_ibv(QpState s) {
    switch (s) {
        case QpState::reset: return IBV_QPS_RESET;
        case QpState::init: return IBV_QPS_INIT;
        case QpState::rtr: return IBV_QPS_RTR;
        case QpState::rts: return IBV_QPS_RTS;
        case QpState::err: return IBV_QPS_ERR;
    }
    return IBV_QPS_ERR;
}

/// ibverbs' local ACK timeout: 4.096 µs · 2^t; 0 means "wait forever",
/// which OpenMRC turns into its longest (a day).
std::uint64_t timeout_ns_of(std::uint8_t t) {
    if (t == 0) return 86'400'000'000'000ULL;
    return 4096ULL << std::min<std::uint8_t>(t, 31);
}

ibv_qp* create(Context* c, Pd* pd, const ibv_qp_init_attr_ex& in, ibv_qp_cap* cap_out, std::uint64_t ops) {
    if (in.qp_type != IBV_QPT_RC) {
        omrc::log::logger().warn("ibverbs: QP type {} is not supported: OpenMRC QPs are reliable connected (RC)",
                           static_cast<int>(in.qp_type));
        return fail_null<ibv_qp>(EOPNOTSUPP);
    }
    Srq* srq = reinterpret_cast<Srq*>(in.srq);
    if (srq != nullptr && srq->ctx != c) return fail_null<ibv_qp>(EINVAL);
    // With an SRQ the QP has no receive queue: its max_recv_* are not read (ibverbs).
    const std::uint32_t max_recv_wr = srq != nullptr ? 0 : in.cap.max_recv_wr;
    const std::uint32_t max_recv_sge = srq != nullptr ? 0 : in.cap.max_recv_sge;
    if (in.send_cq == nullptr || (in.recv_cq == nullptr && (max_recv_wr != 0 || srq != nullptr)))
        return fail_null<ibv_qp>(EINVAL);
    if (in.cap.max_send_wr > kMaxWr || max_recv_wr > kMaxWr || in.cap.max_send_sge > kMaxSge ||
        max_recv_sge > kMaxSge)
        return fail_null<ibv_qp>(EINVAL);
    Cq* scq = reinterpret_cast<Cq*>(in.send_cq);
    Cq* rcq = reinterpret_cast<Cq*>(in.recv_cq != nullptr ? in.recv_cq : in.send_cq);
    QpInitAttr a;
    a.send_cq = scq->ocq.get();
    a.recv_cq = rcq->ocq.get();
    a.cap.max_send_wr = std::max<std::uint32_t>(in.cap.max_send_wr, 1);
    a.cap.max_recv_wr = max_recv_wr;
    a.cap.max_send_sge = std::max<std::uint32_t>(in.cap.max_send_sge, 1);
    a.cap.max_recv_sge = std::max<std::uint32_t>(max_recv_sge, 1);
    if (srq != nullptr) a.srq = srq->osrq.get();
    a.cap.max_inline_data = std::min(in.cap.max_inline_data, kMaxInline);
    a.sq_sig_all = in.sq_sig_all != 0;
    auto q = std::make_unique<Qp>();
    int err = 0;
    {
        std::lock_guard g(c->mu);
        q->oqp = pd->opd->create_qp(a, &err);
        if (q->oqp) ++scq->qps, ++rcq->qps;
        if (q->oqp && srq != nullptr) ++srq->qps;
    }
    if (!q->oqp) return fail_null<ibv_qp>(err);
    q->ctx = c;
    q->pd = pd;
    q->send_cq = scq;
    q->recv_cq = rcq;
    q->srq = srq;
    q->cap = {a.cap.max_send_wr, a.cap.max_recv_wr, a.cap.max_send_sge, a.cap.max_recv_sge, a.cap.max_inline_data};
    if (cap_out != nullptr) *cap_out = q->cap;
    q->sq_sig_all = a.sq_sig_all;
    q->send_ops_flags = ops;
    ibv_qp& b = q->qpx.qp_base;
    b.context = &c->vctx.context;
    b.qp_context = in.qp_context;
    b.pd = &pd->pd;
    b.send_cq = &scq->cq;
    b.recv_cq = &rcq->cq;
    b.srq = in.srq;
    b.handle = q->oqp->qp_num();
    b.qp_num = q->oqp->qp_num();
    b.state = IBV_QPS_RESET;
    b.qp_type = IBV_QPT_RC;
    pthread_mutex_init(&b.mutex, nullptr);
    pthread_cond_init(&b.cond, nullptr);
    fill_qp_ex_ops(*q);
    q->attr.qp_state = IBV_QPS_RESET;
    q->attr.cap = q->cap;
    ++pd->children;
    return &q.release()->qpx.qp_base;
}

ibv_qp* create_qp_ex_op(ibv_context* context, ibv_qp_init_attr_ex* attr) {
    if (context == nullptr || attr == nullptr) return fail_null<ibv_qp>(EINVAL);
    constexpr std::uint32_t known =
        IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_CREATE_FLAGS;
    if ((attr->comp_mask & ~known) != 0 || (attr->comp_mask & IBV_QP_INIT_ATTR_PD) == 0 || attr->pd == nullptr) {
        omrc::log::logger().warn(
            "ibverbs: create_qp_ex comp_mask 0x{:x}: only a PD, send_ops_flags and create_flags (none set) are supported",
            attr->comp_mask);
        return fail_null<ibv_qp>(EOPNOTSUPP);
    }
    // The bit is accepted (as rxe does); a flag set in it is a capability no
    // OpenMRC QP has (scatter-FCS, CVLAN stripping, source-QPN, PCI write
    // end padding), refused as providers refuse what they lack.
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags != 0) {
        omrc::log::logger().warn("ibverbs: create_qp_ex create_flags 0x{:x}: no QP creation flag is supported",
                                 attr->create_flags);
        return fail_null<ibv_qp>(EOPNOTSUPP);
    }
    std::uint64_t ops = kSendOpsSupported;
    if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
        if ((attr->send_ops_flags & ~ops) != 0) {
            omrc::log::logger().warn("ibverbs: send_ops_flags 0x{:x}: OpenMRC QPs do RDMA WRITE, WRITE_WITH_IMM, SEND, "
                                     "SEND_WITH_IMM and RDMA READ only",
                               attr->send_ops_flags);
            return fail_null<ibv_qp>(EOPNOTSUPP);
        }
        ops = attr->send_ops_flags;
    }
    return guarded("create_qp_ex", [&] {
        return create(to_ctx(context), reinterpret_cast<Pd*>(attr->pd), *attr, &attr->cap, ops);
    });
}

}  // namespace

}  // namespace omrc::ibv

using namespace omrc::ibv;
using omrc::DeviceConfig;
using omrc::QpAttr;
using omrc::QpAttrMask;
using omrc::QpState;

OMRC_IBV_DUAL(ibv_alloc_pd)
OMRC_IBV_DUAL(ibv_dealloc_pd)
OMRC_IBV_DUAL(ibv_reg_mr)
OMRC_IBV_DUAL(ibv_dereg_mr)
OMRC_IBV_DUAL(ibv_create_cq)
OMRC_IBV_DUAL(ibv_resize_cq)
OMRC_IBV_DUAL(ibv_destroy_cq)
OMRC_IBV_DUAL(ibv_get_cq_event)
OMRC_IBV_DUAL(ibv_ack_cq_events)
OMRC_IBV_DUAL(ibv_create_qp)
OMRC_IBV_DUAL(ibv_modify_qp)
OMRC_IBV_DUAL(ibv_query_qp)
OMRC_IBV_DUAL(ibv_destroy_qp)

extern "C" {

ibv_pd* omrc_ibv_alloc_pd(ibv_context* context) {
    if (context == nullptr) return fail_null<ibv_pd>(EINVAL);
    Context* c = to_ctx(context);
    return guarded("alloc_pd", [&]() -> ibv_pd* {
        auto p = std::make_unique<Pd>();
        int err = 0;
        {
            std::lock_guard g(c->mu);
            p->opd = c->dev->alloc_pd(&err);
        }
        if (!p->opd) return fail_null<ibv_pd>(err);
        p->pd.context = context;
        p->pd.handle = p->opd->handle();
        ++c->live_objects;
        return &p.release()->pd;
    });
}

int omrc_ibv_dealloc_pd(ibv_pd* pd) {
    if (pd == nullptr) return EINVAL;
    Pd* p = reinterpret_cast<Pd*>(pd);
    if (p->children.load() != 0) return EBUSY;
    Context* c = to_ctx(pd->context);
    {
        std::lock_guard g(c->mu);
        p->opd.reset();
    }
    --c->live_objects;
    delete p;
    return 0;
}

ibv_mr* omrc_ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
    return guarded("reg_mr", [&] {
        return reg(pd, addr, length, reinterpret_cast<std::uintptr_t>(addr), static_cast<unsigned>(access));
    });
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
    return guarded("reg_mr_iova", [&] { return reg(pd, addr, length, iova, static_cast<unsigned>(access)); });
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
    return guarded("reg_mr_iova2", [&] { return reg(pd, addr, length, iova, access); });
}

int omrc_ibv_dereg_mr(ibv_mr* mr) {
    if (mr == nullptr) return EINVAL;
    Mr* m = reinterpret_cast<Mr*>(mr);
    Context* c = to_ctx(mr->context);
    {
        std::lock_guard g(c->mu);
        m->omr.reset();
    }
    --reinterpret_cast<Pd*>(mr->pd)->children;
    delete m;
    return 0;
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
    if (context == nullptr) return fail_null<ibv_comp_channel>(EINVAL);
    return guarded("create_comp_channel", [&]() -> ibv_comp_channel* {
        auto ch = std::make_unique<CompChannel>();
        ch->channel.context = context;
        ch->channel.fd = ::eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
        if (ch->channel.fd < 0) return nullptr;
        ch->channel.refcnt = 0;
        ++to_ctx(context)->live_objects;
        return &ch.release()->channel;
    });
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
    if (channel == nullptr) return EINVAL;
    if (channel->refcnt != 0) return EBUSY;
    --to_ctx(channel->context)->live_objects;
    ::close(channel->fd);
    delete reinterpret_cast<CompChannel*>(channel);
    return 0;
}

ibv_cq* omrc_ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                           int comp_vector) {
    if (context == nullptr || cqe < 1 || comp_vector < 0 || comp_vector >= context->num_comp_vectors)
        return fail_null<ibv_cq>(EINVAL);
    Context* c = to_ctx(context);
    return guarded("create_cq", [&]() -> ibv_cq* {
        auto q = std::make_unique<Cq>();
        int err = 0;
        {
            std::lock_guard g(c->mu);
            q->ocq = c->dev->create_cq(cqe, &err);
        }
        if (!q->ocq) return fail_null<ibv_cq>(err);
        q->channel = reinterpret_cast<CompChannel*>(channel);
        q->cq.context = context;
        q->cq.channel = channel;
        q->cq.cq_context = cq_context;
        q->cq.cqe = cqe;
        pthread_mutex_init(&q->cq.mutex, nullptr);
        pthread_cond_init(&q->cq.cond, nullptr);
        if (channel != nullptr) ++channel->refcnt;
        ++c->live_objects;
        return &q.release()->cq;
    });
}

/// OpenMRC CQs grow instead of overflowing (an overrun is counted against
/// cqe), so a resize sets that size; below the completions waiting it is
/// EINVAL, as upstream providers answer.
int omrc_ibv_resize_cq(ibv_cq* cq, int cqe) {
    if (cq == nullptr) return EINVAL;
    Cq* q = reinterpret_cast<Cq*>(cq);
    Context* c = to_ctx(cq->context);
    std::lock_guard g(c->mu);
    if (const int err = q->ocq->resize(cqe); err != 0) return err;
    cq->cqe = cqe;
    return 0;
}

int omrc_ibv_destroy_cq(ibv_cq* cq) {
    if (cq == nullptr) return EINVAL;
    Cq* q = reinterpret_cast<Cq*>(cq);
    Context* c = to_ctx(cq->context);
    {
        std::lock_guard g(c->mu);
        if (q->qps != 0) return EBUSY;
        c->armed.erase(std::remove(c->armed.begin(), c->armed.end(), q), c->armed.end());
        q->ocq.reset();
    }
    if (q->channel != nullptr) {
        std::lock_guard g(q->channel->mu);
        auto& ev = q->channel->events;
        ev.erase(std::remove(ev.begin(), ev.end(), q), ev.end());
        --q->channel->channel.refcnt;
    }
    pthread_mutex_destroy(&cq->mutex);
    pthread_cond_destroy(&cq->cond);
    --c->live_objects;
    delete q;
    return 0;
}

int omrc_ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
    if (channel == nullptr || cq == nullptr || cq_context == nullptr) {
        errno = EINVAL;
        return -1;
    }
    CompChannel* ch = reinterpret_cast<CompChannel*>(channel);
    for (;;) {
        std::uint64_t v = 0;
        if (::read(channel->fd, &v, sizeof v) != sizeof v) return -1;  // errno from read (EAGAIN if non-blocking)
        std::lock_guard g(ch->mu);
        if (ch->events.empty()) continue;  // the CQ of this event was destroyed meanwhile
        Cq* q = ch->events.front();
        ch->events.pop_front();
        *cq = &q->cq;
        *cq_context = q->cq.cq_context;
        return 0;
    }
}

void omrc_ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
    if (cq == nullptr) return;
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_broadcast(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

ibv_qp* omrc_ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    if (pd == nullptr || attr == nullptr) return fail_null<ibv_qp>(EINVAL);
    ibv_qp_init_attr_ex ex{};
    std::memcpy(&ex, attr, sizeof *attr);  // ibv_qp_init_attr is ibv_qp_init_attr_ex's prefix
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    return guarded("create_qp", [&] {
        return create(to_ctx(pd->context), reinterpret_cast<Pd*>(pd), ex, &attr->cap, kSendOpsSupported);
    });
}

int omrc_ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
    if (qp == nullptr || attr == nullptr) return EINVAL;
    Qp* q = reinterpret_cast<Qp*>(qp);
    Context* c = q->ctx;
    const DeviceConfig& cfg = c->entry->config;
    QpAttr a;
    std::uint32_t m = 0;
    QpState target = QpState::reset;
    bool to_state = false;
    if (mask & IBV_QP_STATE) {
        bool ok = false;
        target = to_omrc(attr->qp_state, ok);
        if (!ok) return EINVAL;  // SQD and SQE do not exist here
        a.qp_state = target;
        m |= QpAttrMask::state;
        to_state = true;
    }
    if (mask & IBV_QP_ACCESS_FLAGS) {
        a.qp_access_flags = attr->qp_access_flags & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
        m |= QpAttrMask::access_flags;
    } else if (to_state && target == QpState::init && qp->state == IBV_QPS_RESET) {
        a.qp_access_flags = 0;
        m |= QpAttrMask::access_flags;
    }
    if (mask & IBV_QP_AV) {
        if (!attr->ah_attr.is_global) {
            omrc::log::logger().warn("ibverbs: QP {}: the address vector needs a GRH (is_global = 1): OpenMRC peers are "
                               "named by GID",
                               qp->qp_num);
            return EINVAL;
        }
        omrc::Ipv6Addr gid{};
        std::memcpy(gid.data(), attr->ah_attr.grh.dgid.raw, gid.size());
        a.peer = omrc::peer_from_lid(cfg.driver, cfg.options.frame_mode, c->dev->address(), gid, attr->ah_attr.dlid);
        a.path_policy = cfg.qp.path_policy;
        a.evs = cfg.qp.evs;
        a.backup_evs = cfg.qp.backup_evs;
        m |= QpAttrMask::path;
    }
    if (mask & IBV_QP_PATH_MTU) {
        if (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096) return EINVAL;
        a.mtu_bytes = cfg.qp.mtu_bytes != 0 ? cfg.qp.mtu_bytes : 128u << attr->path_mtu;
        a.mpr = cfg.qp.mpr;
        m |= QpAttrMask::mtu | QpAttrMask::mpr;
    }
    if (mask & IBV_QP_DEST_QPN) {
        a.dest_qp_num = attr->dest_qp_num;
        m |= QpAttrMask::dest_qpn;
    }
    if (mask & IBV_QP_RQ_PSN) {
        a.rq_psn = attr->rq_psn & 0xFFFFFF;
        m |= QpAttrMask::rq_psn;
    }
    if (mask & IBV_QP_SQ_PSN) {
        a.sq_psn = attr->sq_psn & 0xFFFFFF;
        m |= QpAttrMask::sq_psn;
    }
    const bool to_rts = to_state && target == QpState::rts && qp->state == IBV_QPS_RTR;
    if (mask & IBV_QP_TIMEOUT) {
        a.timeout_ns = timeout_ns_of(attr->timeout);
        m |= QpAttrMask::timeout;
    } else if (to_rts && cfg.qp.timeout_ns != 0) {
        a.timeout_ns = cfg.qp.timeout_ns;
        m |= QpAttrMask::timeout;
    }
    if (mask & IBV_QP_RETRY_CNT) {
        a.retry_cnt = attr->retry_cnt;
        m |= QpAttrMask::retry_cnt;
    } else if (to_rts) {
        a.retry_cnt = cfg.qp.retry_cnt;
        m |= QpAttrMask::retry_cnt;
    }
    if (to_rts) {
        a.cc = cfg.qp.cc;
        m |= QpAttrMask::cc;
    }
    if (mask & IBV_QP_RNR_RETRY) {
        a.rnr_retry = attr->rnr_retry;
        m |= QpAttrMask::rnr_retry;
    }
    if (mask & IBV_QP_MIN_RNR_TIMER) {
        a.min_rnr_timer = attr->min_rnr_timer;
        m |= QpAttrMask::min_rnr_timer;
    }
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC) {
        a.max_rd_atomic = attr->max_rd_atomic;
        m |= QpAttrMask::max_rd_atomic;
    }
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
        a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
        m |= QpAttrMask::max_dest_rd_atomic;
    }
    int rc;
    {
        std::lock_guard g(c->mu);
        rc = q->oqp->modify(a, m);
        qp->state = to_ibv(q->oqp->state());
    }
    if (rc != 0) {
        omrc::log::logger().info("ibverbs: QP {}: modify (mask 0x{:x}) to state {}: {}", qp->qp_num, mask,
                           static_cast<int>(attr->qp_state), std::strerror(rc));
        return rc;
    }
    // What ibv_query_qp will report.
    const int keep = mask & ~IBV_QP_STATE;
    if (keep & IBV_QP_ACCESS_FLAGS) q->attr.qp_access_flags = attr->qp_access_flags;
    if (keep & IBV_QP_AV) q->attr.ah_attr = attr->ah_attr;
    if (keep & IBV_QP_PATH_MTU) q->attr.path_mtu = attr->path_mtu;
    if (keep & IBV_QP_DEST_QPN) q->attr.dest_qp_num = attr->dest_qp_num;
    if (keep & IBV_QP_RQ_PSN) q->attr.rq_psn = attr->rq_psn;
    if (keep & IBV_QP_SQ_PSN) q->attr.sq_psn = attr->sq_psn;
    if (keep & IBV_QP_TIMEOUT) q->attr.timeout = attr->timeout;
    if (keep & IBV_QP_RETRY_CNT) q->attr.retry_cnt = attr->retry_cnt;
    if (keep & IBV_QP_RNR_RETRY) q->attr.rnr_retry = attr->rnr_retry;
    if (keep & IBV_QP_MIN_RNR_TIMER) q->attr.min_rnr_timer = attr->min_rnr_timer;
    if (keep & IBV_QP_MAX_QP_RD_ATOMIC) q->attr.max_rd_atomic = attr->max_rd_atomic;
    if (keep & IBV_QP_MAX_DEST_RD_ATOMIC) q->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
    if (keep & IBV_QP_PKEY_INDEX) q->attr.pkey_index = attr->pkey_index;
    if (keep & IBV_QP_PORT) q->attr.port_num = attr->port_num;
    q->attr_mask |= static_cast<std::uint32_t>(mask);
    return 0;
}

int omrc_ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
    (void)attr_mask;  // everything known is filled in, as providers do
    if (qp == nullptr || attr == nullptr) return EINVAL;
    Qp* q = reinterpret_cast<Qp*>(qp);
    {
        std::lock_guard g(q->ctx->mu);
        qp->state = to_ibv(q->oqp->state());
    }
    *attr = q->attr;
    attr->qp_state = qp->state;
    attr->cur_qp_state = qp->state;
    attr->path_mig_state = IBV_MIG_MIGRATED;
    attr->cap = q->cap;
    if (init_attr != nullptr) {
        std::memset(init_attr, 0, sizeof *init_attr);
        init_attr->qp_context = qp->qp_context;
        init_attr->send_cq = qp->send_cq;
        init_attr->recv_cq = qp->recv_cq;
        init_attr->cap = q->cap;
        init_attr->qp_type = IBV_QPT_RC;
        init_attr->sq_sig_all = q->sq_sig_all ? 1 : 0;
    }
    return 0;
}

int omrc_ibv_destroy_qp(ibv_qp* qp) {
    if (qp == nullptr) return EINVAL;
    Qp* q = reinterpret_cast<Qp*>(qp);
    {
        std::lock_guard g(q->ctx->mu);
        // Linger: a program that exits right after its last completion (as
        // ibv_rc_pingpong does) may still owe the peer the acknowledgement of
        // what it just received: a NIC would have sent it already. A few
        // progress passes, for at most kLingerNs, let it leave; the peer
        // would otherwise resend into nothing and fail its last WR.
        if (q->oqp->state() == QpState::rts || q->oqp->state() == QpState::rtr) {
            const std::uint64_t until = monotonic_ns() + kLingerNs;
            while (monotonic_ns() < until) q->ctx->progress_locked();
        }
        write_stats_file(*q->ctx, qp->qp_num);
        q->oqp.reset();
        --q->send_cq->qps;
        --q->recv_cq->qps;
        if (q->srq != nullptr) --q->srq->qps;
    }
    --q->pd->children;
    pthread_mutex_destroy(&qp->mutex);
    pthread_cond_destroy(&qp->cond);
    delete q;
    return 0;
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
    if (qp == nullptr) return fail_null<ibv_qp_ex>(EINVAL);
    return &reinterpret_cast<Qp*>(qp)->qpx;
}

}  // extern "C"

namespace omrc::ibv {

void write_stats_file(const Context& c, std::uint32_t qp_num) {
    // OMRC_IBV_STATS=PREFIX: the device's counters, with this QP's, as
    // PREFIX.<device>.<pid>.qp<N>.json when the QP is destroyed (perftest and
    // most programs destroy their QPs before they close the device).
    const char* prefix = std::getenv("OMRC_IBV_STATS");
    if (prefix == nullptr || *prefix == 0) return;
    const std::string path = fmt::format("{}.{}.{}.qp{}.json", prefix, c.entry->config.name, ::getpid(), qp_num);
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr) {
        omrc::log::logger().warn("ibverbs: OMRC_IBV_STATS: cannot write {}: {}", path, std::strerror(errno));
        return;
    }
    const std::string json = c.dev->stats_json();
    std::fwrite(json.data(), 1, json.size(), f);
    std::fputc('\n', f);
    std::fclose(f);
}

void fill_resource_ops(Context& c) { c.vctx.create_qp_ex = create_qp_ex_op; }

}  // namespace omrc::ibv
