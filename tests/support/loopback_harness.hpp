// SPDX-License-Identifier: BSD-3-Clause
// N engines on one loopback fabric in virtual time: the driver path the
// runtime uses (rx_burst → on_rx, link events, on_timer, poll_tx → tx_burst),
// driven deterministically by jumping to the next event.
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "core/engine.hpp"
#include "drivers/loopback/loopback.hpp"
#include "support/engine_connect.hpp"
#include "support/guarded_memory.hpp"

namespace omrc::test {

class LoopbackHarness {
public:
    LoopbackHarness(std::uint32_t endpoints, loopback::FabricConfig fcfg, core::EngineConfig ecfg = {})
        : fabric(with(fcfg, endpoints)) {
        for (std::uint32_t i = 0; i < endpoints; ++i) {
            core::EngineConfig c = ecfg;
            c.planes = fcfg.planes;
            c.seed = fcfg.seed * 1000 + i + 1;
            for (std::uint32_t p = 0; p < fcfg.planes; ++p) c.local_macs[p] = loopback::Fabric::mac(i, p);
            c.local_addr = addr(i);
            c.local_host = i;
            memory.push_back(std::make_unique<GuardedMemory>());
            engines.push_back(std::make_unique<core::Engine>(c, memory.back().get()));
            drivers.push_back(fabric.attach(i));
            completions.emplace_back();
            pending_tx.emplace_back();
            pend_begin.push_back(0);
            pend_end.push_back(0);
        }
    }
    static loopback::FabricConfig with(loopback::FabricConfig f, std::uint32_t n) {
        f.endpoints = n;
        f.mode = loopback::ClockMode::virtual_clock;
        return f;
    }
    static wire::Ipv6Addr addr(std::uint32_t i) { return endpoint_addr(i); }

    /// Creates and connects a QP between endpoints x and y, first PSNs just
    /// before the 24-bit wrap (0xFFFF00 and 0xFFFF10).
    std::pair<std::uint32_t, std::uint32_t> connect(std::uint32_t x, std::uint32_t y, core::QpAttr attr = {},
                                                    core::QpCaps caps = {}) {
        const EngineEnd ex{engines[x].get(), x, engines[x]->config().local_macs};
        const EngineEnd ey{engines[y].get(), y, engines[y]->config().local_macs};
        return connect_engines(ex, ey, 0xFFFF00, 0xFFFF10, attr, caps, now);
    }

    /// One pass over every endpoint at the current time.
    void step() {
        std::vector<driver::RxFrame> rx(64);
        std::vector<driver::LinkEvent> ev(16);
        std::vector<core::Completion> wc(64);
        for (std::size_t i = 0; i < engines.size(); ++i) {
            auto& e = *engines[i];
            auto& d = *drivers[i];
            for (;;) {
                const std::size_t n = d.rx_burst(rx, now);
                e.on_rx_burst(std::span(rx).first(n), now);  // as the runtime does: one call per burst
                if (n < rx.size()) break;
            }
            const std::size_t ne = d.poll_link_events(ev);
            for (std::size_t k = 0; k < ne; ++k) e.submit(core::CmdLinkChange{ev[k].plane, ev[k].up}, now);
            e.on_timer(now);
            auto& pend = pending_tx[i];
            if (pend.size() < 64) pend.resize(64);
            for (;;) {
                if (pend_begin[i] == pend_end[i]) {
                    pend_begin[i] = 0;
                    pend_end[i] = e.poll_tx(pend, now);
                    if (pend_end[i] == 0) break;
                }
                pend_begin[i] += d.tx_burst(std::span(pend).subspan(pend_begin[i], pend_end[i] - pend_begin[i]), now);
                if (pend_begin[i] != pend_end[i]) break;
            }
            for (;;) {
                const std::size_t n = e.poll_completions(wc);
                for (std::size_t k = 0; k < n; ++k) completions[i].push_back(wc[k]);
                if (n < wc.size()) break;
            }
        }
    }

    /// Steps and jumps time until done() or until_ns.
    /// `each_step` runs before every pass (post work there); `next_hint` says
    /// when it next needs to run (kNever: only on events).
    bool run(const std::function<bool()>& done, core::TimeNs until_ns,
             const std::function<void()>& each_step = {},
             const std::function<core::TimeNs()>& next_hint = {}) {
        while (now <= until_ns) {
            if (each_step) each_step();
            step();
            if (done()) return true;
            core::TimeNs next = fabric.next_event_ns();
            for (auto& e : engines) next = std::min(next, e->next_wakeup());
            if (next_hint) next = std::min(next, next_hint());
            if (next == core::kNever || next == UINT64_MAX) return done();
            now = std::max(now + 1, next);
        }
        return done();
    }

    loopback::Fabric fabric;
    std::vector<std::unique_ptr<GuardedMemory>> memory;
    std::vector<std::unique_ptr<core::Engine>> engines;
    std::vector<std::unique_ptr<driver::Driver>> drivers;
    std::vector<std::vector<core::Completion>> completions;
    std::vector<std::vector<wire::GatherFrame>> pending_tx;
    std::vector<std::size_t> pend_begin, pend_end;  ///< frames of pending_tx[i] not yet accepted by the driver
    core::TimeNs now = 1'000'000;
};

}  // namespace omrc::test
