// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/progress_loop.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "log/log.hpp"

namespace omrc::runtime {

ProgressLoop::ProgressLoop(driver::Driver& drv, core::Engine& engine, const ProgressConfig& cfg,
                           FrameExchange* exchange, std::uint32_t worker)
    : drv_(drv), engine_(engine), cfg_(cfg), exchange_(exchange), worker_(worker), path_log_(cfg.path_log) {
    cfg_.rx_burst_frames = std::max<std::uint32_t>(cfg_.rx_burst_frames, 1);
    cfg_.tx_burst_frames = std::max<std::uint32_t>(cfg_.tx_burst_frames, 1);
    cfg_.max_bursts_per_pass = std::max<std::uint32_t>(cfg_.max_bursts_per_pass, 1);
    rx_buf_.resize(cfg_.rx_burst_frames);
    if (exchange_ != nullptr) handed_buf_.resize(cfg_.rx_burst_frames);
    tx_buf_.resize(cfg_.tx_burst_frames);
    wc_buf_.resize(64);
}

std::size_t ProgressLoop::run_once(core::TimeNs now, CompletionSink& sink) {
    ++stats_.passes;
    pending_ = false;
    std::size_t work = poll_links(now);
    work += receive(now);
    if (engine_.next_wakeup() <= now) {
        engine_.on_timer(now);
        ++stats_.timer_runs;
    }
    work += transmit(now);
    work += drain_completions(sink);
    // Retirements, probes and restorations of this pass as log lines (the
    // port changes of poll_links() among them).
    path_log_.drain(engine_, now);
    return work;
}

std::size_t ProgressLoop::poll_links(core::TimeNs now) {
    std::array<driver::LinkEvent, 16> events;
    std::size_t total = 0;
    for (;;) {
        const std::size_t n = drv_.poll_link_events(events);
        for (std::size_t i = 0; i < n; ++i)
            (void)engine_.submit(core::CmdLinkChange{events[i].plane, events[i].up}, now);
        total += n;
        if (n < events.size()) break;
    }
    stats_.link_events += total;
    return 0;  // link events are not frames; they do not make a pass "busy"
}

std::size_t ProgressLoop::receive(core::TimeNs now) {
    std::size_t total = exchange_ != nullptr ? receive_handed(now) : 0;
    for (std::uint32_t b = 0; b < cfg_.max_bursts_per_pass; ++b) {
        const std::size_t n = drv_.rx_burst(rx_buf_, now);
        if (n == 0) return total;
        ++stats_.rx_bursts;
        // The burst's views stay valid until the next rx_burst() call. One
        // engine call per burst: acknowledgements are decided once per QP
        // at its end.
        const std::size_t own = exchange_ != nullptr ? route(n, now) : n;
        if (own != 0) engine_.on_rx_burst(std::span(rx_buf_).first(own), now);
        total += n;
        stats_.rx_frames += n;
        if (n < rx_buf_.size()) return total;
    }
    pending_ = true;
    return total;
}

std::size_t ProgressLoop::route(std::size_t n, core::TimeNs now) {
    std::size_t own = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const driver::RxFrame& f = rx_buf_[i];
        const FrameRoute r = exchange_->route(f, worker_);
        for (std::uint32_t m = r.observer_mask; m != 0; m &= m - 1) {
            const auto w = static_cast<std::uint32_t>(__builtin_ctz(m));
            if (w == worker_) {
                // This worker observes a request another one answers: its own
                // engine sees a no-reply copy, handed to itself.
                driver::RxFrame copy = f;
                copy.no_reply = true;
                engine_.on_rx_burst(std::span(&copy, 1), now);
            } else {
                (void)exchange_->hand_over(worker_, w, f, true);
            }
        }
        if (r.owner == worker_) rx_buf_[own++] = f;
        else (void)exchange_->hand_over(worker_, r.owner, f, false);
    }
    exchange_->note_own(worker_, own);
    return own;
}

std::size_t ProgressLoop::receive_handed(core::TimeNs now) {
    const std::size_t max = std::size_t{cfg_.max_bursts_per_pass} * handed_buf_.size();
    const std::size_t n = exchange_->drain(worker_, handed_buf_, max, [&](std::span<const wire::RxFrame> frames) {
        engine_.on_rx_burst(frames, now);
    });
    if (n == max) pending_ = true;
    return n;
}

std::size_t ProgressLoop::offer(std::span<const wire::GatherFrame> frames, core::TimeNs now) {
    const std::size_t accepted = std::min(drv_.tx_burst(frames, now), frames.size());
    ++stats_.tx_bursts;
    stats_.tx_frames += accepted;
    if (accepted < frames.size()) ++stats_.tx_partial;
    return accepted;
}

void ProgressLoop::keep(std::span<const wire::GatherFrame> frames) {
    for (const wire::GatherFrame& g : frames) {
        std::vector<std::uint8_t> payload(g.payload_len());
        std::size_t off = 0;
        for (std::size_t s = 0; s < g.segment_count; ++s) {
            if (g.segments[s].len) std::memcpy(payload.data() + off, g.segments[s].data, g.segments[s].len);
            off += g.segments[s].len;
        }
        wire::GatherFrame copy = g;
        copy.segment_count = payload.empty() ? 0 : 1;
        copy.segments = {};
        if (!payload.empty()) copy.segments[0] = {payload.data(), static_cast<std::uint32_t>(payload.size())};
        kept_.push_back(copy);
        kept_payload_.push_back(std::move(payload));  // moving keeps the heap buffer in place
    }
    stats_.tx_kept_frames += frames.size();
}

std::size_t ProgressLoop::transmit(core::TimeNs now) {
    std::size_t total = 0;
    if (!kept_.empty()) {
        const std::size_t a = offer(kept_, now);
        kept_.erase(kept_.begin(), kept_.begin() + static_cast<std::ptrdiff_t>(a));
        kept_payload_.erase(kept_payload_.begin(), kept_payload_.begin() + static_cast<std::ptrdiff_t>(a));
        total += a;
        if (!kept_.empty()) {
            pending_ = true;  // the driver is full: leave the engine's frames where they are
            return total;
        }
    }
    for (std::uint32_t b = 0; b < cfg_.max_bursts_per_pass; ++b) {
        const std::size_t n = engine_.poll_tx(tx_buf_, now);
        if (n == 0) return total;
        const std::span<const wire::GatherFrame> burst(tx_buf_.data(), n);
        const std::size_t a = offer(burst, now);
        total += a;
        if (a < n) {
            keep(burst.subspan(a));
            pending_ = true;
            return total;
        }
        if (n < tx_buf_.size()) return total;
    }
    pending_ = true;
    return total;
}

std::size_t ProgressLoop::release_held(CompletionSink& sink) {
    std::size_t n = 0;
    const std::uint64_t released = drv_.tx_release_count();
    while (!held_.empty() && held_.front().accepted_before <= released) {
        sink.on_completion(held_.front().wc);
        held_.pop_front();
        ++n;
    }
    return n;
}

std::size_t ProgressLoop::drain_completions(CompletionSink& sink) {
    std::size_t total = release_held(sink);
    for (;;) {
        const std::size_t n = engine_.poll_completions(wc_buf_);
        const std::uint64_t accepted = stats_.tx_frames;
        // One look at the driver's watermark per batch, not per completion.
        const bool all_released = n == 0 || drv_.tx_release_count() >= accepted;
        for (std::size_t i = 0; i < n; ++i) {
            const core::Completion& c = wc_buf_[i];
            const bool send_side = c.opcode == core::WcOpcode::rdma_write;
            // Keep send completions in order: once one waits, later ones queue behind it.
            if (send_side && (!held_.empty() || !all_released)) {
                held_.push_back({c, accepted});
                ++stats_.completions_held;
                continue;
            }
            sink.on_completion(c);
            ++total;
        }
        if (n < wc_buf_.size()) break;
    }
    total += release_held(sink);
    stats_.completions += total;
    return total;
}

core::TimeNs ProgressLoop::next_wakeup(core::TimeNs now) const noexcept {
    if (pending_ || !kept_.empty() || !held_.empty()) return now;
    if (exchange_ != nullptr && exchange_->has_inbound(worker_)) return now;
    return std::min<core::TimeNs>(engine_.next_wakeup(), drv_.next_event_ns());
}

}  // namespace omrc::runtime
