// SPDX-License-Identifier: BSD-3-Clause
// Two engines wired back to back in virtual time, for engine unit tests
// without any driver: each frame is flattened and delivered after a per-plane
// delay, through an optional fault hook (drop, trim, corrupt, delay).
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <queue>
#include <vector>

#include "core/engine.hpp"
#include "support/engine_connect.hpp"
#include "support/guarded_memory.hpp"
#include "wire/frame.hpp"

namespace omrc::test {

struct InFlight {
    core::TimeNs at = 0;
    std::uint64_t seq = 0;
    int to = 0;
    std::uint8_t plane = 0;
    std::vector<std::uint8_t> bytes;
    bool operator>(const InFlight& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

/// What the fault hook may do to a frame in flight.
struct Fate {
    bool drop = false;
    core::TimeNs extra_delay_ns = 0;
};

class EnginePair {
public:
    using Hook = std::function<Fate(int from, std::uint8_t plane, std::vector<std::uint8_t>& frame)>;

    explicit EnginePair(core::EngineConfig base = {}, core::TimeNs delay_ns = 2'000) : delay_ns_(delay_ns) {
        for (int i = 0; i < 2; ++i) {
            core::EngineConfig c = base;
            c.seed = base.seed * 2 + static_cast<std::uint64_t>(i) + 1;
            for (std::uint32_t p = 0; p < core::kMaxPlanes; ++p)
                c.local_macs[p] = {0x02, 0x6d, 0x72, 0x63, static_cast<std::uint8_t>(p), static_cast<std::uint8_t>(i)};
            c.local_addr = endpoint_addr(static_cast<std::uint32_t>(i));
            c.local_host = static_cast<std::uint32_t>(i);
            engines[i] = std::make_unique<core::Engine>(c, &memory[i]);
        }
    }
    static wire::Ipv6Addr addr(int i) { return endpoint_addr(static_cast<std::uint32_t>(i)); }

    /// Creates and connects one QP on each side (first PSNs 100 and 101); returns {qpn_a, qpn_b}.
    std::pair<std::uint32_t, std::uint32_t> connect(core::QpAttr attr = {}, core::QpCaps caps = {}) {
        const EngineEnd x{engines[0].get(), 0, engines[0]->config().local_macs};
        const EngineEnd y{engines[1].get(), 1, engines[1]->config().local_macs};
        return connect_engines(x, y, 100, 101, attr, caps, now);
    }
    /// The same with different attributes at A and B; `b_rts` false leaves B in RTR.
    std::pair<std::uint32_t, std::uint32_t> connect(const core::QpAttr& attr_a, const core::QpAttr& attr_b,
                                                    core::QpCaps caps = {}, bool b_rts = true) {
        const EngineEnd x{engines[0].get(), 0, engines[0]->config().local_macs};
        const EngineEnd y{engines[1].get(), 1, engines[1]->config().local_macs};
        return connect_engines(x, y, 100, 101, attr_a, attr_b, caps, now, b_rts);
    }

    /// Moves frames and time until `done()` or `until_ns` of virtual time.
    bool run(const std::function<bool()>& done, core::TimeNs until_ns) {
        std::vector<wire::GatherFrame> tx(64);
        std::vector<core::Completion> wc(64);
        while (now <= until_ns) {
            for (int i = 0; i < 2; ++i) {
                engines[i]->on_timer(now);
                for (;;) {
                    const std::size_t n = engines[i]->poll_tx(tx, now);
                    for (std::size_t k = 0; k < n; ++k) transmit(i, tx[k]);
                    if (n < tx.size()) break;
                }
                for (;;) {
                    const std::size_t n = engines[i]->poll_completions(wc);
                    for (std::size_t k = 0; k < n; ++k) completions[i].push_back(wc[k]);
                    if (n < wc.size()) break;
                }
            }
            if (done()) return true;
            // Advance to the next event: a delivery or an engine timer.
            core::TimeNs next = std::min(engines[0]->next_wakeup(), engines[1]->next_wakeup());
            if (!wire_.empty()) next = std::min(next, wire_.top().at);
            if (next == core::kNever) return done();
            now = std::max(now, next);
            while (!wire_.empty() && wire_.top().at <= now) {
                InFlight f = wire_.top();
                wire_.pop();
                ++delivered;
                wire::RxFrame rx{f.bytes.data(), static_cast<std::uint32_t>(f.bytes.size()), f.plane};
                engines[f.to]->on_rx_burst({&rx, 1}, now);
            }
        }
        return done();
    }

    void transmit(int from, const wire::GatherFrame& g) {
        InFlight f;
        f.bytes.resize(g.size());
        g.flatten(f.bytes);
        f.to = 1 - from;
        f.plane = g.plane;
        f.seq = seq_++;
        f.at = now + delay_ns_ + plane_delay_ns[g.plane];
        ++sent;
        if (hook) {
            const Fate fate = hook(from, g.plane, f.bytes);
            if (fate.drop) return;
            f.at += fate.extra_delay_ns;
        }
        wire_.push(std::move(f));
    }

    std::unique_ptr<core::Engine> engines[2];
    GuardedMemory memory[2];
    std::vector<core::Completion> completions[2];
    core::TimeNs now = 1'000'000;
    Hook hook;
    std::array<core::TimeNs, core::kMaxPlanes> plane_delay_ns{};
    std::uint64_t sent = 0, delivered = 0;

private:
    core::TimeNs delay_ns_;
    std::uint64_t seq_ = 0;
    std::priority_queue<InFlight, std::vector<InFlight>, std::greater<>> wire_;
};

/// WRITEs of `msg` bytes covering `bytes` from `src` to `dst` (registered
/// under `rkey` at the peer), wr_id = message index.
inline std::vector<core::SendRequest> make_write_wrs(const std::uint8_t* src, std::uint8_t* dst, std::size_t bytes,
                                                     std::uint32_t rkey, std::size_t msg) {
    std::vector<core::SendRequest> wrs;
    for (std::size_t off = 0; off < bytes; off += msg) {
        core::SendRequest r;
        r.wr_id = off / msg;
        r.remote_addr = reinterpret_cast<std::uint64_t>(dst) + off;
        r.rkey = rkey;
        r.sge_count = 1;
        r.sges[0] = {src + off, static_cast<std::uint32_t>(std::min(msg, bytes - off))};
        wrs.push_back(r);
    }
    return wrs;
}

/// What a trimming switch does to a frame (before the hook hands it on):
/// cut to 128 bytes, DSCP remarked "trimmed".
inline void trim_frame(std::vector<std::uint8_t>& f) {
    f.resize(128);
    wire::Ipv6Hdr::store_dscp(&f[wire::EthHdr::kSize], wire::kDscpTrimmed);
    f[15] = static_cast<std::uint8_t>((f[15] & 0x3F) | ((wire::kDscpTrimmed & 3) << 6));
}

}  // namespace omrc::test
