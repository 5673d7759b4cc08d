// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/path_event_log.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "log/log.hpp"

namespace omrc::runtime {

static_assert(static_cast<std::size_t>(core::PathEventKind::peer_ports) + 1 == PathEventCounts{}.by_kind.size(),
              "one count per PathEventKind");

PathEventLog::PathEventLog(const PathLogConfig& cfg) : cfg_(cfg), tokens_(cfg.burst_lines), buf_(64) {
    cfg_.refill_ns = std::max<core::TimeNs>(cfg_.refill_ns, 1);
}

std::string PathEventLog::format(const core::PathEvent& e) {
    using core::PathEventKind;
    switch (e.kind) {
        case PathEventKind::retired:
            return fmt::format("path_event=retired cause={} qpn={} plane={} t1={} ev={:#x} at_ns={}",
                               core::to_string(e.cause), e.qpn, e.plane, e.group, e.ev, e.at_ns);
        case PathEventKind::probe_sent:
            return fmt::format("path_event=probe qpn={} plane={} t1={} ev={:#x} at_ns={}", e.qpn, e.plane, e.group,
                               e.ev, e.at_ns);
        case PathEventKind::restored:
            return fmt::format("path_event=restored qpn={} plane={} t1={} ev={:#x} evs={} at_ns={}", e.qpn, e.plane,
                               e.group, e.ev, e.count, e.at_ns);
        case PathEventKind::local_port_down:
        case PathEventKind::local_port_up:
            return fmt::format("path_event={} plane={} at_ns={}", core::to_string(e.kind), e.plane, e.at_ns);
        case PathEventKind::peer_ports:
            return fmt::format("path_event=peer_ports qpn={} plane_mask={:#x} at_ns={}", e.qpn, e.count, e.at_ns);
    }
    return fmt::format("path_event=unknown kind={} at_ns={}", static_cast<unsigned>(e.kind), e.at_ns);
}

void PathEventLog::refill(core::TimeNs now) noexcept {
    if (!started_) {
        started_ = true;
        refilled_ns_ = now;
        return;
    }
    if (now <= refilled_ns_) return;
    const std::uint64_t earned = (now - refilled_ns_) / cfg_.refill_ns;
    if (earned == 0) return;
    tokens_ = std::min<std::uint64_t>(tokens_ + earned, cfg_.burst_lines);
    refilled_ns_ += earned * cfg_.refill_ns;
}

std::size_t PathEventLog::drain(core::Engine& engine, core::TimeNs now) {
    // Called every progress pass: nothing but the empty-queue check when there is nothing to say.
    std::size_t n = engine.poll_path_events(buf_);
    if (n == 0 && pending_suppressed_ == 0) return 0;
    spdlog::logger& log = log::logger();
    const bool info = log.should_log(spdlog::level::info);
    refill(now);
    std::size_t total = 0;
    for (bool first = true;; first = false) {
        if (!first) n = engine.poll_path_events(buf_);
        for (std::size_t i = 0; i < n; ++i) {
            const core::PathEvent& e = buf_[i];
            const auto kind = static_cast<std::size_t>(e.kind);
            if (kind < counts_.by_kind.size()) ++counts_.by_kind[kind];
            if (!info) continue;
            if (tokens_ == 0) {
                if (pending_suppressed_ == 0) suppressed_since_ns_ = e.at_ns;
                ++pending_suppressed_;
                ++counts_.suppressed;
                continue;
            }
            --tokens_;
            ++counts_.logged;
            log.info("{}", format(e));
        }
        total += n;
        if (n < buf_.size()) break;
    }
    // Say what was left out once there is room for a line again.
    if (pending_suppressed_ != 0 && tokens_ != 0) {
        --tokens_;
        log.info("path_event=suppressed count={} since_ns={} at_ns={}", pending_suppressed_, suppressed_since_ns_, now);
        pending_suppressed_ = 0;
    }
    return total;
}

}  // namespace omrc::runtime
