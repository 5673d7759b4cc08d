// SPDX-License-Identifier: BSD-3-Clause
// Two engines wired back to back in virtual time, for engine unit tests
// without any driver: each frame is flattened and delivered after a per-plane
// delay, through an optional fault hook (drop, trim, corrupt, delay).
#pragma once

#include <cstring>
#include <functional>
#include <map>
#include <queue>
#include <vector>

#include "core/engine.hpp"

namespace omrc::test {

/// A tiny MR table: one buffer per rkey, all in PD 1, REMOTE_WRITE.
class TestMemory final : public core::PlacementTarget {
public:
    void add(std::uint32_t rkey, std::vector<std::uint8_t>* buf) { mrs_[rkey] = buf; }
    void remove(std::uint32_t rkey) { mrs_.erase(rkey); }
    core::PlaceStatus place(std::uint32_t, std::uint32_t rkey, std::uint64_t va,
                            std::span<const std::uint8_t> bytes) override {
        auto it = mrs_.find(rkey);
        if (it == mrs_.end()) return core::PlaceStatus::bad_rkey;
        auto base = reinterpret_cast<std::uint64_t>(it->second->data());
        if (va < base || bytes.size() > it->second->size() || va - base > it->second->size() - bytes.size())
            return core::PlaceStatus::out_of_bounds;
        if (!bytes.empty()) std::memcpy(reinterpret_cast<void*>(va), bytes.data(), bytes.size());
        ++writes;
        return core::PlaceStatus::ok;
    }
    std::uint64_t writes = 0;

private:
    std::map<std::uint32_t, std::vector<std::uint8_t>*> mrs_;
};

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
            c.local_addr = addr(i);
            c.local_host = static_cast<std::uint32_t>(i);
            engines[i] = std::make_unique<core::Engine>(c, &memory[i]);
        }
    }
    static wire::Ipv6Addr addr(int i) {
        wire::Ipv6Addr a{0xfd, 0x00, 0x6f, 0x6d};
        a[15] = static_cast<std::uint8_t>(i + 1);
        return a;
    }

    /// Creates and connects one QP on each side; returns {qpn_a, qpn_b}.
    std::pair<std::uint32_t, std::uint32_t> connect(core::QpAttr attr = {}, core::QpCaps caps = {}) {
        std::uint32_t qpn[2];
        for (int i = 0; i < 2; ++i) {
            auto r = engines[i]->submit(core::CmdCreateQp{caps}, now);
            qpn[i] = r.qpn;
            core::QpAttr init{};
            init.access_flags = core::kAccessRemoteWrite | core::kAccessLocalWrite;
            init.pd = 1;
            engines[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::init, init, core::kAttrAccess}, now);
        }
        for (int i = 0; i < 2; ++i) {
            core::QpAttr a = attr;
            a.dest_qp_num = qpn[1 - i];
            a.dest_conn_id = engines[1 - i]->qp_info(qpn[1 - i]).conn_id;
            a.rq_psn = 100 + static_cast<std::uint32_t>(1 - i);
            a.sq_psn = 100 + static_cast<std::uint32_t>(i);
            a.peer_addr = addr(1 - i);
            a.peer_host = static_cast<std::uint32_t>(1 - i);
            for (std::uint32_t p = 0; p < core::kMaxPlanes; ++p)
                a.peer_macs[p] = {0x02, 0x6d, 0x72, 0x63, static_cast<std::uint8_t>(p), static_cast<std::uint8_t>(1 - i)};
            const std::uint32_t mask = core::kAttrDestQpn | core::kAttrRqPsn | core::kAttrPath | core::kAttrMtu |
                                       core::kAttrMpr;
            REQUIRE(engines[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::rtr, a, mask}, now).err == 0);
            REQUIRE(engines[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::rts, a,
                                                         core::kAttrSqPsn | core::kAttrTimeout | core::kAttrRetryCnt | core::kAttrCc},
                                       now).err == 0);
        }
        return {qpn[0], qpn[1]};
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
                engines[f.to]->on_rx(f.bytes, f.plane, now);
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
    TestMemory memory[2];
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

}  // namespace omrc::test
