// SPDX-License-Identifier: BSD-3-Clause
// The poll-mode progress loop of one device: driver rx → engine → driver tx,
// link events, timers, completions. One run_once() is one pass; the caller
// supplies `now` (the runtime's clock or a virtual one).
//
// Partial transmit acceptance. When the driver accepts only a prefix of a
// burst, the rest is kept and offered first on the next pass, and the
// engine is not asked for more frames until it is gone. Kept frames get a
// private copy of their payload: they stay valid however long the driver
// refuses them, even if the application deregisters the memory or the
// engine reuses an inline buffer meanwhile.
//
// Zero-copy drivers. A send WR's payload may still sit in a driver's queue
// (or a NIC's) after the peer acknowledged it, e.g. a spurious retransmit.
// Send completions are therefore held until the driver's release watermark
// (Driver::tx_release_count) passes every frame accepted before the
// completion was produced; the application may reuse or deregister the
// memory once it sees the completion. Copying drivers release at once, so
// nothing is held for them. Receive completions never wait.
//
// Workers. A device with several workers (docs/ARCHITECTURE.md, "Workers")
// runs one loop per worker, each over its own driver queue and engine shard,
// joined by a FrameExchange: each received frame is routed there, frames of
// another worker's shard are handed to it, and every pass feeds the engine
// what the other workers handed over.
//
// Threads: the thread driving the worker (the device's owning thread, or the
// worker's own thread) only.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "core/engine.hpp"
#include "driver/driver.hpp"
#include "runtime/frame_exchange.hpp"
#include "runtime/path_event_log.hpp"

namespace omrc::runtime {

struct ProgressConfig {
    std::uint32_t rx_burst_frames = 32;
    std::uint32_t tx_burst_frames = 32;
    /// Bursts per direction in one pass; more work than that is left for the
    /// next pass (next_wakeup() then says "now"), bounding one pass's latency.
    std::uint32_t max_bursts_per_pass = 16;
    /// The path-event log lines (retire, probe, restore, port down/up).
    PathLogConfig path_log{};
};

struct ProgressStats {
    std::uint64_t passes = 0;
    std::uint64_t rx_bursts = 0;          ///< rx_burst calls that returned frames
    std::uint64_t rx_frames = 0;          ///< frames received from the driver (for any worker)
    std::uint64_t tx_bursts = 0;          ///< tx_burst calls
    std::uint64_t tx_frames = 0;          ///< frames the driver accepted
    std::uint64_t tx_partial = 0;         ///< tx_burst calls that accepted less than offered
    std::uint64_t tx_kept_frames = 0;     ///< frames copied aside after a partial acceptance
    std::uint64_t timer_runs = 0;
    std::uint64_t link_events = 0;
    std::uint64_t completions = 0;
    std::uint64_t completions_held = 0;   ///< send completions that waited for the driver's release
};

/// Receives the engine's completions (the verbs layer routes them to CQs).
class CompletionSink {
public:
    virtual ~CompletionSink() = default;
    virtual void on_completion(const core::Completion& c) = 0;
};

class ProgressLoop {
public:
    /// `exchange`: the device's workers' exchange, this loop being worker
    /// `worker` of it; null for a device of one worker.
    ProgressLoop(driver::Driver& drv, core::Engine& engine, const ProgressConfig& cfg,
                 FrameExchange* exchange = nullptr, std::uint32_t worker = 0);

    /// One pass at time `now`. Returns frames received + frames accepted by
    /// the driver + completions delivered.
    std::size_t run_once(core::TimeNs now, CompletionSink& sink);
    /// Moves the engine's pending completions to `sink` (before a QP goes away).
    std::size_t drain_completions(CompletionSink& sink);
    /// New work was submitted to the engine outside run_once(): the next
    /// next_wakeup() says "now".
    void kick() noexcept { pending_ = true; }
    /// Earliest time run_once() has work; ≤ `now` when work is pending now.
    [[nodiscard]] core::TimeNs next_wakeup(core::TimeNs now) const noexcept;

    /// Frames accepted by the driver (compare with Driver::tx_release_count()).
    [[nodiscard]] std::uint64_t tx_accepted() const noexcept { return stats_.tx_frames; }
    [[nodiscard]] std::size_t kept_frames() const noexcept { return kept_.size(); }
    /// Send completions waiting for the driver to release their frames.
    [[nodiscard]] std::size_t held_completions() const noexcept { return held_.size(); }
    [[nodiscard]] const ProgressStats& stats() const noexcept { return stats_; }
    /// The engine's path events seen so far, by kind (each pass drains them).
    [[nodiscard]] const PathEventCounts& path_events() const noexcept { return path_log_.counts(); }

private:
    std::size_t poll_links(core::TimeNs now);
    std::size_t receive(core::TimeNs now);
    /// Routes a burst from the driver: the frames of this worker's shard are
    /// packed to the front of rx_buf_ (their count is returned), the others
    /// handed over.
    std::size_t route(std::size_t n, core::TimeNs now);
    /// Feeds the engine the frames other workers handed over.
    std::size_t receive_handed(core::TimeNs now);
    std::size_t transmit(core::TimeNs now);
    /// Offers `frames` to the driver; returns how many it accepted.
    std::size_t offer(std::span<const wire::GatherFrame> frames, core::TimeNs now);
    void keep(std::span<const wire::GatherFrame> frames);
    /// Delivers held completions whose frames the driver has released.
    std::size_t release_held(CompletionSink& sink);

    struct HeldCompletion {
        core::Completion wc;
        std::uint64_t accepted_before = 0;  ///< driver frames accepted when it was produced
    };

    driver::Driver& drv_;
    core::Engine& engine_;
    ProgressConfig cfg_;
    FrameExchange* exchange_ = nullptr;
    std::uint32_t worker_ = 0;
    ProgressStats stats_{};
    PathEventLog path_log_;
    bool pending_ = true;  ///< a pass stopped at a limit, or work was submitted since
    std::vector<driver::RxFrame> rx_buf_;
    std::vector<driver::RxFrame> handed_buf_;        ///< views of frames other workers handed over
    std::vector<wire::GatherFrame> tx_buf_;
    std::vector<core::Completion> wc_buf_;
    std::vector<wire::GatherFrame> kept_;            ///< refused frames, in order
    std::vector<std::vector<std::uint8_t>> kept_payload_;  ///< their payload copies (parallel to kept_)
    std::deque<HeldCompletion> held_;                ///< send completions in production order
};

}  // namespace omrc::runtime
