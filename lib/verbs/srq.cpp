// SPDX-License-Identifier: BSD-3-Clause
// Srq: shared receive queues (the engine's core/srq.hpp on one worker) and
// the device's asynchronous events they raise.
#include <algorithm>
#include <cerrno>

#include "verbs/device_core.hpp"

namespace omrc {

namespace {

void set_err(int* err, int value) {
    if (err != nullptr) *err = value;
}

constexpr std::uint32_t kMaxSrqWr = 65536;

}  // namespace

std::unique_ptr<Srq> Pd::create_srq(const SrqAttr& attr, int* err, int worker) {
    detail::DeviceCore& d = *core_;
    if (attr.max_wr == 0 || attr.max_wr > kMaxSrqWr || attr.max_sge == 0 || attr.max_sge > kMaxSge ||
        attr.srq_limit > attr.max_wr || worker < -1 || worker >= static_cast<int>(d.workers.size())) {
        set_err(err, EINVAL);
        return nullptr;
    }
    const std::uint32_t w_index = d.place_on_worker(worker);
    detail::Worker& w = *d.workers[w_index];
    core::SubmitResult r;
    {
        const detail::WorkerControl parked(d, w);
        r = w.engine->submit(core::CmdCreateSrq{handle_, attr.max_wr, attr.srq_limit}, d.now());
    }
    if (r.err != 0) {
        set_err(err, r.err);
        return nullptr;
    }
    auto srq = std::unique_ptr<Srq>(new Srq());
    srq->core_ = core_;
    srq->pd_ = this;
    srq->srqn_ = r.srqn;
    srq->worker_ = w_index;
    srq->max_sge_ = attr.max_sge;
    d.srqs.emplace(detail::DeviceCore::srq_key(w_index, r.srqn), srq.get());
    ++children_;
    set_err(err, 0);
    return srq;
}

Srq::~Srq() {
    if (qps_ != 0) detail::abort_live_children("Srq", qps_);
    detail::DeviceCore& d = *core_;
    detail::Worker& w = *d.workers[worker_];
    {
        const detail::WorkerControl parked(d, w);
        (void)w.engine->submit(core::CmdDestroySrq{srqn_}, d.now());
    }
    (void)d.collect();  // a limit event on its way names this SRQ: dropped below
    d.srqs.erase(detail::DeviceCore::srq_key(worker_, srqn_));
    std::erase_if(d.async_events, [this](const AsyncEvent& e) { return e.srq == this; });
    --pd_->children_;
}

int Srq::post_recv(std::span<const RecvWr> wrs, std::size_t* bad_wr) {
    const detail::OwnerScope owner(*core_);
    detail::DeviceCore& d = *core_;
    detail::Worker& w = *d.workers[worker_];
    auto& reqs = d.recv_scratch;
    reqs.clear();
    const std::uint32_t pd = pd_->handle();
    int err = 0;
    for (const RecvWr& wr : wrs) {
        core::RecvRequest r{};
        if (!d.resolve_recv(wr, pd, max_sge_, r)) {
            err = EINVAL;
            break;
        }
        reqs.push_back(r);
    }
    std::size_t bad = reqs.size();
    if (!reqs.empty()) {
        // With a worker thread, posted while it is parked: the SRQ's fill is
        // the engine's alone to know (its QPs take receives on that thread).
        const detail::WorkerControl parked(d, w);
        const core::SubmitResult res = w.engine->submit(core::CmdPostSrqRecv{srqn_, reqs}, d.now());
        w.loop->kick();
        if (res.err != 0) {
            err = res.err;
            bad = res.bad_index;
        }
    }
    if (err != 0 && bad_wr != nullptr) *bad_wr = bad;
    return err;
}

int Srq::modify(const SrqAttr& attr, std::uint32_t mask) {
    detail::DeviceCore& d = *core_;
    detail::Worker& w = *d.workers[worker_];
    const detail::WorkerControl parked(d, w);
    std::uint32_t core_mask = 0;
    if (mask & SrqAttrMask::max_wr) core_mask |= core::kSrqAttrMaxWr;
    if (mask & SrqAttrMask::limit) core_mask |= core::kSrqAttrLimit;
    if ((mask & ~(SrqAttrMask::max_wr | SrqAttrMask::limit)) != 0) return EINVAL;
    return w.engine->submit(core::CmdModifySrq{srqn_, core_mask, attr.max_wr, attr.srq_limit}, d.now()).err;
}

SrqAttr Srq::query() const {
    detail::DeviceCore& d = *core_;
    detail::Worker& w = *d.workers[worker_];
    const detail::WorkerControl parked(d, w);
    const core::Srq* s = w.engine->find_srq(srqn_);
    SrqAttr a;
    a.max_wr = s->max_wr;
    a.max_sge = max_sge_;
    a.srq_limit = s->limit;
    return a;
}

std::uint32_t Srq::size() const {
    detail::DeviceCore& d = *core_;
    detail::Worker& w = *d.workers[worker_];
    const detail::WorkerControl parked(d, w);
    return static_cast<std::uint32_t>(w.engine->find_srq(srqn_)->wrs.size());
}

std::size_t Device::poll_async_events(std::span<AsyncEvent> out) {
    (void)core_->collect();
    const std::size_t n = std::min(out.size(), core_->async_events.size());
    std::copy_n(core_->async_events.begin(), n, out.begin());
    core_->async_events.erase(core_->async_events.begin(), core_->async_events.begin() + static_cast<std::ptrdiff_t>(n));
    return n;
}

}  // namespace omrc
