// SPDX-License-Identifier: BSD-3-Clause
// Shared pieces of the fault-matrix tests (docs/TESTING.md): transfers with
// guard canaries around the destination, byte-exact checks, completion
// accounting. Every scenario is seeded; the seed is printed on failure.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "support/loopback_harness.hpp"

namespace omrc::test {

inline constexpr std::size_t kGuardBytes = 4096;
inline constexpr std::uint8_t kCanary = 0xC5;

/// Source and destination of one transfer. The destination MR is the middle
/// of a larger buffer whose guard regions hold a canary pattern.
struct GuardedTransfer {
    std::vector<std::uint8_t> src;
    std::vector<std::uint8_t> dst_with_guards;
    std::vector<std::uint8_t> mr_view_dummy;  // unused; TestMemory takes a vector
    std::uint32_t rkey = 0;

    std::uint8_t* dst() { return dst_with_guards.data() + kGuardBytes; }
    [[nodiscard]] bool guards_intact() const {
        const auto& b = dst_with_guards;
        return std::all_of(b.begin(), b.begin() + kGuardBytes, [](std::uint8_t x) { return x == kCanary; }) &&
               std::all_of(b.end() - kGuardBytes, b.end(), [](std::uint8_t x) { return x == kCanary; });
    }
    [[nodiscard]] bool byte_exact() const {
        return std::memcmp(src.data(), dst_with_guards.data() + kGuardBytes, src.size()) == 0;
    }
};

inline void fill_random(std::vector<std::uint8_t>& v, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::size_t i = 0;
    for (; i + 8 <= v.size(); i += 8) {
        const std::uint64_t x = rng();
        std::memcpy(v.data() + i, &x, 8);
    }
    for (; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>(rng());
}

inline GuardedTransfer make_guarded(std::size_t bytes, std::uint64_t seed, std::uint32_t rkey = 0x5EC0DE) {
    GuardedTransfer t;
    t.src.resize(bytes);
    fill_random(t.src, seed);
    t.dst_with_guards.assign(bytes + 2 * kGuardBytes, kCanary);
    std::memset(t.dst_with_guards.data() + kGuardBytes, 0, bytes);
    t.rkey = rkey;
    return t;
}

/// Message sizes: log-uniform between lo and hi bytes, summing to total.
inline std::vector<std::size_t> message_sizes(std::size_t total, std::size_t lo, std::size_t hi, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(std::log2(static_cast<double>(lo)), std::log2(static_cast<double>(hi)));
    std::vector<std::size_t> out;
    std::size_t sum = 0;
    while (sum < total) {
        std::size_t s = static_cast<std::size_t>(std::exp2(u(rng)));
        s = std::min(std::max(s, lo), total - sum);
        out.push_back(s);
        sum += s;
    }
    return out;
}

/// WRITE requests covering the transfer, `sizes` bytes each, signalled.
inline std::vector<core::SendRequest> write_requests(GuardedTransfer& t, const std::vector<std::size_t>& sizes,
                                                     std::uint64_t first_wr_id = 0) {
    std::vector<core::SendRequest> wrs;
    std::size_t off = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        core::SendRequest r;
        r.wr_id = first_wr_id + i;
        r.remote_addr = reinterpret_cast<std::uint64_t>(t.dst()) + off;
        r.rkey = t.rkey;
        r.sge_count = 1;
        r.sges[0] = {t.src.data() + off, static_cast<std::uint32_t>(sizes[i])};
        wrs.push_back(r);
        off += sizes[i];
    }
    return wrs;
}

/// The same messages as SENDs (docs/PROTOCOL.md §11.9): each into the
/// receive recv_requests() makes for it.
inline std::vector<core::SendRequest> send_requests(GuardedTransfer& t, const std::vector<std::size_t>& sizes) {
    std::vector<core::SendRequest> wrs = write_requests(t, sizes);
    for (core::SendRequest& r : wrs) {
        r.is_send = true;
        r.remote_addr = 0;
        r.rkey = 0;
    }
    return wrs;
}

/// The same messages as RDMA READs by endpoint 0 (docs/PROTOCOL.md §11.10):
/// each reads its part of `src` (registered at endpoint 1 under t.rkey) into
/// its part of the guarded destination at endpoint 0.
inline std::vector<core::SendRequest> read_requests(GuardedTransfer& t, const std::vector<std::size_t>& sizes) {
    std::vector<core::SendRequest> wrs;
    std::size_t off = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        core::SendRequest r;
        r.wr_id = i;
        r.is_read = true;
        r.remote_addr = reinterpret_cast<std::uint64_t>(t.src.data()) + off;
        r.rkey = t.rkey;
        r.sge_count = 1;
        r.sges[0] = {t.dst() + off, static_cast<std::uint32_t>(sizes[i]), 0};
        wrs.push_back(r);
        off += sizes[i];
    }
    return wrs;
}

/// One receive per message, exactly over its part of the destination (so a
/// byte outside it hits a canary or another message), wr_id = message index.
inline std::vector<core::RecvRequest> recv_requests(GuardedTransfer& t, const std::vector<std::size_t>& sizes) {
    std::vector<core::RecvRequest> rr;
    std::size_t off = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        core::RecvRequest r;
        r.wr_id = i;
        r.length = static_cast<std::uint32_t>(sizes[i]);
        r.sge_count = 1;
        r.sges[0] = {t.dst() + off, static_cast<std::uint32_t>(sizes[i]), 0};
        rr.push_back(r);
        off += sizes[i];
    }
    return rr;
}

/// Keeps up to `ahead` receives posted beyond those consumed, as a SEND
/// consumer would.
class RecvPoster {
public:
    RecvPoster(LoopbackHarness& h, std::uint32_t endpoint, std::uint32_t qpn, std::vector<core::RecvRequest> rr,
               std::size_t ahead)
        : h_(h), ep_(endpoint), qpn_(qpn), rr_(std::move(rr)), ahead_(ahead), base_(h.completions[endpoint].size()) {}
    void pump() {
        const std::size_t done = h_.completions[ep_].size() - base_;
        while (next_ < rr_.size() && next_ - done < ahead_) {
            if (h_.engines[ep_]->submit(core::CmdPostRecv{qpn_, std::span(&rr_[next_], 1)}, h_.now).err != 0) break;
            ++next_;
        }
    }

private:
    LoopbackHarness& h_;
    std::uint32_t ep_, qpn_;
    std::vector<core::RecvRequest> rr_;
    std::size_t ahead_, base_, next_ = 0;
};

/// Exactly one receive completion per message, in message order, each
/// successful with its message's length: one RECV consumed per message.
inline void check_one_receive_each(const std::vector<core::Completion>& wcs, const std::vector<std::size_t>& sizes) {
    std::size_t k = 0;
    for (const auto& c : wcs) {
        if (c.opcode != core::WcOpcode::recv) continue;
        INFO("receive " << k);
        REQUIRE(k < sizes.size());
        CHECK(c.wr_id == k);
        CHECK(c.status == core::WcStatus::success);
        CHECK(c.byte_len == sizes[k]);
        ++k;
    }
    CHECK(k == sizes.size());
}

/// Posts requests as the send queue allows, as an application would.
class Poster {
public:
    Poster(LoopbackHarness& h, std::uint32_t endpoint, std::uint32_t qpn, std::vector<core::SendRequest> wrs,
           std::size_t depth)
        : h_(h), ep_(endpoint), qpn_(qpn), wrs_(std::move(wrs)), depth_(depth), base_(h.completions[endpoint].size()) {}
    void pump() {
        const std::size_t done = h_.completions[ep_].size() - base_;
        while (next_ < wrs_.size() && next_ - done < depth_) {
            auto r = h_.engines[ep_]->submit(core::CmdPostSend{qpn_, std::span(&wrs_[next_], 1)}, h_.now);
            if (r.err != 0) break;
            ++next_;
        }
    }
    [[nodiscard]] std::size_t posted() const { return next_; }
    [[nodiscard]] std::size_t total() const { return wrs_.size(); }

private:
    LoopbackHarness& h_;
    std::uint32_t ep_, qpn_;
    std::vector<core::SendRequest> wrs_;
    std::size_t depth_;
    std::size_t base_;  ///< completions that existed before this poster
    std::size_t next_ = 0;
};

/// One WRITE of all of `t` every `period_ns` from now until `end_ns`: a steady stream.
class SteadyStream {
public:
    SteadyStream(LoopbackHarness& h, std::uint32_t endpoint, std::uint32_t qpn, GuardedTransfer& t,
                 core::TimeNs period_ns, core::TimeNs end_ns)
        : h_(h), ep_(endpoint), qpn_(qpn), t_(t), period_(period_ns), end_(end_ns), next_(h.now) {}
    void pump() {
        while (h_.now >= next_ && next_ < end_) {
            core::SendRequest r = write_requests(t_, {t_.src.size()}, posted_++)[0];
            REQUIRE(h_.engines[ep_]->submit(core::CmdPostSend{qpn_, std::span(&r, 1)}, h_.now).err == 0);
            next_ += period_;
        }
    }
    /// When pump() next has work (the harness's next_hint).
    [[nodiscard]] core::TimeNs next_ns() const { return next_ < end_ ? next_ : end_; }
    [[nodiscard]] std::uint64_t posted() const { return posted_; }

private:
    LoopbackHarness& h_;
    std::uint32_t ep_, qpn_;
    GuardedTransfer& t_;
    core::TimeNs period_, end_, next_;
    std::uint64_t posted_ = 0;
};

/// Data packets QP `qpn` of endpoint `ep` has sent on `plane` (per-EV counters).
inline std::uint64_t sent_on_plane(const LoopbackHarness& h, std::uint32_t ep, std::uint32_t qpn, std::uint8_t plane) {
    std::uint64_t n = 0;
    const auto* qp = h.engines[ep]->find_qp(qpn);
    for (std::size_t s = 0; s < qp->paths.size(); ++s)
        if (qp->paths.slot(s).plane == plane) n += qp->paths.slot(s).counters.sent;
    return n;
}

/// Exactly one completion per WR id in [0, n), all with `status`.
inline void check_one_completion_each(const std::vector<core::Completion>& wcs, std::size_t n,
                                      core::WcStatus status = core::WcStatus::success) {
    std::vector<int> seen(n, 0);
    for (const auto& c : wcs) {
        if (c.opcode != core::WcOpcode::rdma_write && c.opcode != core::WcOpcode::send &&
            c.opcode != core::WcOpcode::rdma_read)
            continue;
        REQUIRE(c.wr_id < n);
        ++seen[c.wr_id];
        CHECK(c.status == status);
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int x) { return x == 1; }));
}

/// The matrix's fabric: 8 planes of 100 Gb/s, 1 µs links.
inline loopback::FabricConfig fabric8(std::uint64_t seed) {
    loopback::FabricConfig f;
    f.planes = 8;
    f.seed = seed;
    f.link_delay_ns = 1'000;
    f.queue.rate_bps = 100'000'000'000;  // 8 × 100 Gb/s
    return f;
}

struct RunResult {
    bool finished = false;
    core::TimeNs elapsed_ns = 0;
};

/// Sends `t` from endpoint 0 to 1 as `sizes` messages with `depth` outstanding.
inline RunResult transfer(LoopbackHarness& h, std::uint32_t qpn, GuardedTransfer& t, const std::vector<std::size_t>& sizes,
                          std::size_t depth, core::TimeNs limit_ns) {
    h.memory[1]->add(t.rkey, t.dst(), t.src.size());
    Poster poster(h, 0, qpn, write_requests(t, sizes), depth);
    const core::TimeNs start = h.now;
    RunResult r;
    r.finished = h.run([&] { return h.completions[0].size() == sizes.size(); }, h.now + limit_ns,
                       [&] { poster.pump(); });
    r.elapsed_ns = h.now - start;
    // `t` may not outlive the next transfer: its region leaves the table
    // (a stale region of the same rkey would take the next one's writes).
    h.memory[1]->remove(t.rkey);
    return r;
}

/// Sends `t` from endpoint 0's QP `qpn` to endpoint 1's `peer_qpn` as
/// `sizes` SENDs, `depth` outstanding, the receiver keeping 128 receives
/// posted; finished when every SEND and every receive has completed.
inline RunResult send_transfer(LoopbackHarness& h, std::uint32_t qpn, std::uint32_t peer_qpn, GuardedTransfer& t,
                               const std::vector<std::size_t>& sizes, std::size_t depth, core::TimeNs limit_ns) {
    Poster poster(h, 0, qpn, send_requests(t, sizes), depth);
    RecvPoster receiver(h, 1, peer_qpn, recv_requests(t, sizes), 128);
    const std::size_t recv_base = h.completions[1].size();
    const core::TimeNs start = h.now;
    RunResult r;
    r.finished = h.run([&] { return h.completions[0].size() == sizes.size() &&
                                    h.completions[1].size() - recv_base == sizes.size(); },
                       h.now + limit_ns, [&] {
                           receiver.pump();
                           poster.pump();
                       });
    r.elapsed_ns = h.now - start;
    return r;
}

/// Endpoint 0's QP `qpn` READs `t` from endpoint 1 as `sizes` READs,
/// `depth` outstanding; finished when every READ has completed.
inline RunResult read_transfer(LoopbackHarness& h, std::uint32_t qpn, GuardedTransfer& t,
                               const std::vector<std::size_t>& sizes, std::size_t depth, core::TimeNs limit_ns) {
    h.memory[1]->add(t.rkey, t.src.data(), t.src.size());
    Poster poster(h, 0, qpn, read_requests(t, sizes), depth);
    const core::TimeNs start = h.now;
    RunResult r;
    r.finished = h.run([&] { return h.completions[0].size() == sizes.size(); }, h.now + limit_ns,
                       [&] { poster.pump(); });
    r.elapsed_ns = h.now - start;
    h.memory[1]->remove(t.rkey);
    return r;
}

/// `bytes` (a multiple of 1 MiB) of 1 MiB WRITEs from endpoint 0 to 1, 32
/// outstanding, checked BX and 1C; returns bytes per ns of virtual time.
inline double transfer_rate(LoopbackHarness& h, std::uint32_t qpn, std::size_t bytes, std::uint64_t seed,
                            std::uint32_t rkey) {
    GuardedTransfer t = make_guarded(bytes, seed, rkey);
    h.completions[0].clear();
    const std::vector<std::size_t> sizes(bytes >> 20, 1u << 20);
    const RunResult r = transfer(h, qpn, t, sizes, 32, 1'000'000'000);
    REQUIRE(r.finished);
    CHECK(t.byte_exact());
    check_one_completion_each(h.completions[0], sizes.size());
    return static_cast<double>(bytes) / static_cast<double>(r.elapsed_ns);
}

}  // namespace omrc::test
