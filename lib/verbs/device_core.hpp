// SPDX-License-Identifier: BSD-3-Clause
// What a Device owns behind the public API: the driver's queues, the MR
// table, one Worker per DeviceOptions::workers (an engine shard, its
// progress loop and, with worker threads, its thread and the queues to and
// from it), the exchange between workers, and the QPN → Qp map that routes
// completions to CQs.
//
// Threads (docs/ARCHITECTURE.md, "Workers"). The program's thread (one at a
// time, verbs.hpp) owns everything here but what a worker thread runs: the
// worker's engine, loop and driver queue. It touches those only while the
// worker is parked (WorkerControl), except for the two queues between them:
// `posts` (work requests, program → worker) and `done` (completions,
// worker → program). Without worker threads every worker is driven by
// progress() on the program's thread and the queues stay unused.
#pragma once

#include <array>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/engine.hpp"
#include "driver/registry.hpp"
#include "omrc/verbs.hpp"
#include "runtime/frame_exchange.hpp"
#include "runtime/progress_loop.hpp"
#include "runtime/spsc_queue.hpp"
#include "runtime/worker_thread.hpp"
#include "verbs/mr_table.hpp"

namespace omrc::detail {

struct DeviceCore;

/// A work request on its way to a worker thread: the engine's request, with
/// an inline WR's bytes copied (the caller may reuse its buffer on return).
struct PostEntry {
    static constexpr std::uint32_t kInlineBytes = 256;  ///< inline WRs larger than this are posted while the worker is parked
    enum class Kind : std::uint8_t { send, recv } kind = Kind::send;
    std::uint32_t qpn = 0;
    core::SendRequest send{};
    core::RecvRequest recv{};
    std::uint32_t inline_len = 0;
    std::uint8_t inline_bytes[kInlineBytes];
};

/// One worker: an engine shard over queue `index` of every port.
struct Worker final : runtime::CompletionSink, runtime::WorkerThread::Body {
    Worker(DeviceCore& dev, std::uint32_t index, std::unique_ptr<driver::Driver> queue, const verbs::MrTable& mrs);
    ~Worker() override;

    DeviceCore& dev;
    const std::uint32_t index;
    // Declaration order is destruction order reversed: the thread stops
    // first, then the loop, the engine (which points at the placement), the
    // placement and the queue.
    std::unique_ptr<driver::Driver> queue;
    verbs::MrPlacement placement;
    std::unique_ptr<core::Engine> engine;
    std::unique_ptr<runtime::ProgressLoop> loop;
    /// Threaded only (null otherwise): the queues to and from the thread.
    std::unique_ptr<runtime::SpscQueue<PostEntry>> posts;
    std::unique_ptr<runtime::SpscQueue<core::Completion>> done;
    std::deque<core::Completion> done_overflow;  ///< worker side: completions `done` had no room for
    std::uint32_t qps = 0;                        ///< live QPs (program thread)
    /// Threaded worker 0: whether its connection manager held events at the
    /// end of its last pass, so that Device::cm_poll parks the thread only
    /// when there is something to take (written by the worker, read by the program).
    std::atomic<bool> cm_events_waiting{false};
    std::unique_ptr<runtime::WorkerThread> thread;  ///< null: driven by progress()

    [[nodiscard]] bool threaded() const noexcept { return thread != nullptr; }
    /// Submits the posts queued so far to the engine (the worker's thread, or
    /// the program's while the worker is parked). Returns how many.
    std::size_t submit_posts(core::TimeNs now);
    /// Completions into `done` (threaded) or straight to the CQs.
    void on_completion(const core::Completion& c) override;
    // WorkerThread::Body
    std::size_t pass() override;
    std::uint64_t next_wakeup_ns() override;
};

struct DeviceCore {
    // Declaration order is destruction order reversed: the workers go
    // first, then the exchange, the MR table they point at, and whatever
    // keeps the driver alive.
    std::shared_ptr<void> keepalive;
    std::string driver_name;
    std::function<std::uint64_t()> clock;
    DeviceAddress address{};
    /// args "next_hop_macs": the Ethernet destination of every frame sent on
    /// plane p when bit p of the mask is set (a routed fabric's gateway),
    /// instead of the peer's own MAC.
    std::array<MacAddr, kMaxPlanes> next_hop_macs{};
    std::uint32_t next_hop_mask = 0;
    /// Encryption of QPs whose attributes say device_default (DeviceOptions::security).
    Encryption security_default = Encryption::off;
    verbs::MrTable mrs;
    std::unique_ptr<runtime::FrameExchange> exchange;  ///< null for one worker
    std::vector<std::unique_ptr<Worker>> workers;
    bool threaded = false;                       ///< workers run on threads of their own
    std::uint32_t next_worker = 0;               ///< round-robin QP and SRQ placement (place_on_worker)

    std::unordered_map<std::uint32_t, Qp*> qps;  ///< live QPs by QPN
    /// Live SRQs by srq_key(worker, engine SRQ number), for their limit events.
    std::unordered_map<std::uint64_t, Srq*> srqs;
    std::deque<AsyncEvent> async_events;         ///< raised, not yet polled (Device::poll_async_events)
    [[nodiscard]] static std::uint64_t srq_key(std::uint32_t worker, std::uint32_t srqn) noexcept {
        return (std::uint64_t{worker} << 32) | srqn;
    }
    /// Connection manager (lib/verbs/cm.cpp): the connections this device's
    /// API knows, by id, and the events not yet polled (Device::cm_poll).
    struct CmConn {
        Qp* qp = nullptr;              ///< null: a request not yet accepted
        bool requester = false;
        bool moved = false;            ///< the QP left INIT for this connection (ends in ERR)
        bool ending = false;           ///< cm_disconnect called: the disconnected event ends it
        DeviceAddress peer{};
        std::uint64_t service_id = 0;
        std::uint32_t psn = 0;         ///< our first PSN
        std::array<std::uint8_t, 16> nonce{};  ///< our key nonce (encrypted)
        CmConnParams params{};         ///< requester: the QP's attributes for the reply
        core::CmEvent request{};       ///< responder: the request (its REQ)
    };
    using CmConns = std::unordered_map<std::uint32_t, CmConn>;
    CmConns cm_conns;
    std::deque<CmEvent> cm_events;
    /// The connection `qp` is in now (a QP is in one at a time), or cm_conns.end().
    CmConns::iterator cm_conn_of(const Qp& qp);
    /// Runs f(manager) with worker 0 parked (its thread owns the manager),
    /// then wakes worker 0 to send what f queued; f's result.
    template <class F>
    auto with_cm(F&& f);
    /// The QP's receive edge for the DREQ it sends (every PSN before it
    /// arrived); none before RTR.
    std::optional<std::uint32_t> receive_edge(const Qp& qp);
    /// The peer's DREQ reported `rcv_psn` as its receive edge: the sends
    /// below it complete (their ACKs were overtaken or never sent).
    void peer_receive_edge(const Qp& qp, std::uint32_t rcv_psn);
    /// A QP going away: its connection ends (a DREQ for one past its REQ).
    void cm_forget(const Qp& qp);
    /// Acts on one of the engine's CM events (moves QPs) and queues the API's event.
    void cm_event(const core::CmEvent& e);
    std::vector<const Cq*> cqs;                  ///< live CQs (stats)
    std::uint32_t next_pd = 1;
    std::uint32_t children = 0;                  ///< live Pd + Cq
    std::uint64_t completions_orphaned = 0;      ///< completions of a QP that no longer exists

    // Reused by post_send / post_recv so posting does not allocate.
    std::vector<core::SendRequest> send_scratch;
    std::vector<core::RecvRequest> recv_scratch;

    DeviceCore(std::shared_ptr<void> keep, std::string name, std::function<std::uint64_t()> clk,
               verbs::KeyGenerator keys)
        : keepalive(std::move(keep)), driver_name(std::move(name)), clock(std::move(clk)), mrs(keys) {}
    ~DeviceCore();

    /// Debug builds: the thread inside an owner-thread entry point (the
    /// default id when none is). Two threads inside at once break the
    /// one-thread-at-a-time rule of verbs.hpp and are caught by OwnerScope.
    std::atomic<std::thread::id> owner_inside{};

    [[nodiscard]] std::uint64_t now() const { return clock(); }
    [[nodiscard]] Worker& worker_of(const Qp& qp) const;
    /// Routes one engine completion to its QP's send or receive CQ (program
    /// thread); an SRQ limit event (core::WcOpcode::srq_limit_reached, its
    /// qpn set to the worker's index by Worker::on_completion) to async_events.
    void route_completion(const core::Completion& c);
    /// Threaded: moves what the workers completed to the CQs. Returns how many.
    std::size_t collect();
    /// Unthreaded: one pass of every worker. Threaded: collect().
    std::size_t progress();
    /// The worker a new QP or SRQ goes to: `asked` (already checked to be
    /// 0..workers-1), or with -1 the next in turn (next_worker).
    [[nodiscard]] std::uint32_t place_on_worker(int asked) {
        if (asked >= 0) return static_cast<std::uint32_t>(asked);
        const std::uint32_t w = next_worker;
        next_worker = (next_worker + 1) % static_cast<std::uint32_t>(workers.size());
        return w;
    }
    /// A receive WR resolved for the engine: at most `max_sge` SGEs, each
    /// inside a live LOCAL_WRITE MR of `pd`, at most 4 GiB in all (Qp's
    /// and Srq's post_recv); false otherwise.
    [[nodiscard]] bool resolve_recv(const RecvWr& wr, std::uint32_t pd, std::uint32_t max_sge,
                                    core::RecvRequest& out) const;
    /// The driver queue of worker 0 (device-wide facts: planes, link state, stats requests).
    [[nodiscard]] driver::Driver& first_queue() const { return *workers.front()->queue; }
};

/// Parks one worker (or all) for the program thread to touch what it owns,
/// and hands it back on destruction; the posts queued to it are submitted
/// first, so that what the program does next comes after them. Nothing to
/// do for workers driven by progress().
class WorkerControl {
public:
    WorkerControl(DeviceCore& d, Worker& w);
    explicit WorkerControl(DeviceCore& d);  ///< every worker
    ~WorkerControl();
    WorkerControl(const WorkerControl&) = delete;
    WorkerControl& operator=(const WorkerControl&) = delete;

private:
    DeviceCore& d_;
    Worker* one_ = nullptr;  ///< null: all
};

/// Debug builds: asserts that no other thread is inside an owner-thread entry
/// point of the same Device for as long as it lives (eRPC's owner-thread
/// check, relaxed to "one thread at a time": a Device may move between
/// threads when the program orders the moves). Compiled out with NDEBUG.
class OwnerScope {
public:
#ifdef NDEBUG
    explicit OwnerScope(DeviceCore&) noexcept {}
#else
    explicit OwnerScope(DeviceCore& d) noexcept : d_(d) {
        const std::thread::id me = std::this_thread::get_id();
        const std::thread::id before = d_.owner_inside.exchange(me, std::memory_order_acq_rel);
        nested_ = before == me;
        assert((before == std::thread::id{} || nested_) &&
               "a Device is used by two threads at once (verbs.hpp: one thread at a time)");
    }
    ~OwnerScope() {
        if (!nested_) d_.owner_inside.store(std::thread::id{}, std::memory_order_release);
    }

private:
    DeviceCore& d_;
    bool nested_ = false;
#endif
    OwnerScope(const OwnerScope&) = delete;
    OwnerScope& operator=(const OwnerScope&) = delete;
};

/// Logs a destroyed-with-children error and aborts (see verbs.hpp, Ownership).
[[noreturn]] void abort_live_children(const char* object, std::uint32_t children);

}  // namespace omrc::detail
