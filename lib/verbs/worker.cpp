// SPDX-License-Identifier: BSD-3-Clause
// The workers of a device: their passes, the queues between them and the
// program's thread, parking, and how completions reach CQs.
#include <algorithm>
#include <cstring>

#include "log/log.hpp"
#include "verbs/device_core.hpp"

namespace omrc::detail {

Worker::Worker(DeviceCore& d, std::uint32_t i, std::unique_ptr<driver::Driver> q, const verbs::MrTable& mrs)
    : dev(d), index(i), queue(std::move(q)), placement(mrs) {}

Worker::~Worker() {
    thread.reset();  // stopped and joined before anything it runs goes
}

std::size_t Worker::submit_posts(core::TimeNs now) {
    if (posts == nullptr) return 0;
    std::size_t n = 0;
    for (PostEntry* p = posts->front(); p != nullptr; p = posts->front()) {
        if (p->kind == PostEntry::Kind::send) {
            core::SendRequest r = p->send;
            if (r.is_inline) {
                r.sge_count = p->inline_len != 0 ? 1 : 0;
                r.sges[0] = {p->inline_bytes, p->inline_len};
            }
            // The program checked the QP's state and room before it queued
            // the WR (Qp::post_send): the engine takes it, or flushes it.
            const core::SubmitResult res = engine->submit(core::CmdPostSend{p->qpn, std::span(&r, 1)}, now);
            if (res.err != 0)
                log::logger().error("worker {}: QP {} refused a queued send WR ({}): it gets no completion", index,
                                    p->qpn, std::strerror(res.err));
        } else {
            const core::SubmitResult res = engine->submit(core::CmdPostRecv{p->qpn, std::span(&p->recv, 1)}, now);
            if (res.err != 0)
                log::logger().error("worker {}: QP {} refused a queued receive WR ({}): it gets no completion", index,
                                    p->qpn, std::strerror(res.err));
        }
        posts->pop();
        ++n;
    }
    if (n != 0) loop->kick();
    return n;
}

void Worker::on_completion(const core::Completion& engine_c) {
    core::Completion c = engine_c;
    if (c.opcode == core::WcOpcode::srq_limit_reached) c.qpn = index;  // SRQ numbers are per engine
    if (done == nullptr) {
        dev.route_completion(c);
        return;
    }
    // In order: once one waits, later ones wait behind it.
    if (!done_overflow.empty() || !done->try_push(c)) done_overflow.push_back(c);
}

std::size_t Worker::pass() {
    const core::TimeNs now = dev.now();
    std::size_t work = submit_posts(now);
    while (!done_overflow.empty() && done->try_push(done_overflow.front())) done_overflow.pop_front();
    work += loop->run_once(now, *this);
    if (const core::ConnManager* cm = engine->conn_manager(); cm != nullptr)
        cm_events_waiting.store(cm->has_events(), std::memory_order_release);
    return work;
}

std::uint64_t Worker::next_wakeup_ns() {
    if (!done_overflow.empty() || (posts != nullptr && !posts->empty())) return 0;
    return loop->next_wakeup(dev.now());
}

DeviceCore::~DeviceCore() {
    // Worker threads stop before any of them goes: a thread still running
    // could hand a frame to a worker already destroyed.
    for (auto& w : workers) w->thread.reset();
    while (!workers.empty()) workers.pop_back();
}

Worker& DeviceCore::worker_of(const Qp& qp) const { return *workers[qp.worker_]; }

std::size_t DeviceCore::collect() {
    if (!threaded) return 0;
    std::size_t n = 0;
    for (auto& w : workers) {
        for (core::Completion* c = w->done->front(); c != nullptr; c = w->done->front()) {
            route_completion(*c);
            w->done->pop();
            ++n;
        }
    }
    return n;
}

std::size_t DeviceCore::progress() {
    if (threaded) return collect();
    std::size_t work = 0;
    for (auto& w : workers) work += w->loop->run_once(now(), *w);
    return work;
}

WorkerControl::WorkerControl(DeviceCore& d, Worker& w) : d_(d), one_(&w) {
    if (!w.threaded()) return;
    w.thread->park();
    (void)w.submit_posts(d.now());
}

WorkerControl::WorkerControl(DeviceCore& d) : d_(d) {
    if (!d.threaded) return;
    for (auto& w : d.workers) w->thread->park();
    for (auto& w : d.workers) (void)w->submit_posts(d.now());
}

WorkerControl::~WorkerControl() {
    if (one_ != nullptr) {
        if (one_->threaded()) one_->thread->unpark();
        return;
    }
    if (!d_.threaded) return;
    for (auto& w : d_.workers) w->thread->unpark();
}

}  // namespace omrc::detail
