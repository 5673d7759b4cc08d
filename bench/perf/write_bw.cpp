// SPDX-License-Identifier: BSD-3-Clause
// write_bw and send_bw (session.hpp): the client keeps tx_depth WRITEs (or
// SENDs) outstanding on every QP, round-robin, for `iters` of them or
// `duration_s`; the server progresses its device (and for send_bw keeps
// receives posted, serve_bw). Average and peak bandwidth and the message rate.
#include <algorithm>
#include <cstring>
#include <thread>
#include <fmt/format.h>
#include <isa-l/crc64.h>

#include "session.hpp"
#include "stats_interval.hpp"

namespace omrc::perf {

std::vector<std::uint64_t> buffer_crcs(const Endpoint& ep, std::uint32_t size) {
    std::vector<std::uint64_t> crcs;
    for (std::size_t q = 0; q < ep.qps.size(); ++q) crcs.push_back(crc64_ecma_refl(0, ep.buf + q * ep.buf_per_qp, size));
    return crcs;
}

std::vector<std::uint64_t> expected_crcs(const Endpoint& ep, std::uint32_t size) {
    std::vector<std::uint64_t> crcs;
    std::vector<std::uint8_t> want(size);
    for (std::size_t q = 0; q < ep.qps.size(); ++q) {
        const std::uint32_t w = q < ep.written.size() ? std::min(ep.written[q], size) : 0;
        std::memcpy(want.data(), ep.buf + q * ep.buf_per_qp, w);
        std::memset(want.data() + w, 0, size - w);
        crcs.push_back(crc64_ecma_refl(0, want.data(), size));
    }
    return crcs;
}

std::string client_bw(const Options& o, Endpoint& ep, std::uint32_t size, std::uint64_t iters, Result& r) {
    const std::size_t nqps = ep.qps.size();
    const bool send = is_send(o.test);
    std::vector<std::uint64_t> outstanding(nqps, 0);
    std::vector<Clock::time_point> done_at;
    done_at.reserve(o.duration_s > 0 ? 1u << 20 : iters);
    const bool timed = o.duration_s > 0;
    const auto start = Clock::now();
    const auto stop_posting = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_s));
    std::uint64_t posted = 0, completed = 0;
    auto last_progress = start;
    Wc wc[64];
    std::size_t next_qp = 0;
    IntervalStats interval(*ep.dev, o.stats_interval_ms, o.quiet);
    for (;;) {
        interval.tick();
        // One clock read per pass (each costs tens of ns: a pass is not much more).
        const auto now = Clock::now();
        const bool more = timed ? now < stop_posting : posted < iters;
        if (!more && completed == posted) break;
        // Post round-robin over the QPs, up to tx_depth outstanding each.
        for (std::size_t k = 0; more && k < nqps; ++k, next_qp = (next_qp + 1) % nqps) {
            const std::size_t i = next_qp;
            while (outstanding[i] < o.tx_depth && (timed || posted < iters)) {
                const Sge sge{ep.local[i].va, size, ep.mr->lkey()};
                SendWr w;
                w.wr_id = i;
                w.send_flags = SendFlags::signaled;
                w.sg_list = {&sge, 1};
                if (send) {
                    w.opcode = WrOpcode::send;  // into the server's next receive on QP i
                } else {
                    if (is_read(o.test)) w.opcode = WrOpcode::rdma_read;  // the server's buffer into ours
                    w.remote_addr = ep.remote[i].va;
                    w.rkey = ep.remote[i].rkey;
                }
                if (int rc = ep.qps[i]->post_send(w)) return fmt::format("post_send: {}", std::strerror(rc));
                if (ep.written.size() < nqps) ep.written.resize(nqps, 0);
                ep.written[i] = std::max(ep.written[i], size);
                ++outstanding[i];
                ++posted;
                if (timed) break;  // check the clock often
            }
        }
        ep.dev->progress();
        const std::size_t got = ep.scq->poll(wc);
        for (std::size_t k = 0; k < got; ++k) {
            if (auto e = check_wc(wc[k]); !e.empty()) return e;
            --outstanding[wc[k].wr_id];
            ++completed;
            done_at.push_back(now);
            last_progress = now;
        }
        // Worker threads move the frames: with nothing completed, this thread
        // lets them have the CPU rather than spin beside them.
        if (got == 0 && ep.dev->worker_threads()) std::this_thread::yield();
        if (now - last_progress > std::chrono::seconds(10))
            return fmt::format("no {} completed for 10 s ({} of {} done)",
                               send ? "SEND" : is_read(o.test) ? "READ" : "WRITE", completed, posted);
    }
    const double secs = seconds_between(start, done_at.empty() ? Clock::now() : done_at.back());
    const double scale = o.report_gbits ? 8.0 / 1e9 : 1.0 / (1u << 20);
    r.bytes = size;
    r.iterations = completed;
    r.bw_avg = secs > 0 ? static_cast<double>(completed) * size * scale / secs : 0;
    r.msg_rate_mpps = secs > 0 ? static_cast<double>(completed) / secs / 1e6 : 0;
    // Peak: the best rate over any window of W consecutive completions.
    const std::size_t w = std::clamp<std::size_t>(done_at.size() / 10, 1, 1000);
    double best = 0;
    for (std::size_t i = 0; i + w < done_at.size(); ++i) {
        const double dt = seconds_between(done_at[i], done_at[i + w]);
        if (dt > 0) best = std::max(best, static_cast<double>(w) * size * scale / dt);
    }
    r.bw_peak = std::max(best, r.bw_avg);
    return {};
}

std::string serve_bw(const Options& o, Endpoint& ep, Oob& oob, nlohmann::json& result) {
    // write_bw, read_bw: the client's WRITEs and READs need nothing of this side but progress.
    if (!is_send(o.test)) return expect(oob, &ep, "result", result, std::chrono::hours(24 * 365));
    // send_bw: every receive a SEND consumed is posted again at once, so
    // the client meets RNR only if this side falls behind by the whole depth.
    Wc wc[64];
    std::string error;
    for (std::uint64_t pass = 1;; ++pass) {
        ep.dev->progress();
        const std::size_t n = ep.rcq->poll(wc);
        for (std::size_t k = 0; k < n; ++k) {
            if (auto e = check_wc(wc[k]); !e.empty()) return e;
            if (auto e = ep.post_recvs(wc[k].wr_id, 1); !e.empty()) return e;
        }
        if (n == 0 && ep.dev->worker_threads()) std::this_thread::yield();
        if (pass % 64 != 0) continue;  // the socket every 64 passes, the receives every pass
        const int rc = oob.recv(result, milliseconds(0), error);
        if (rc < 0) return error;
        if (rc == 0) continue;
        if (result.value("type", "") == "error")
            return fmt::format("the client reports: {}", result.value("message", ""));
        if (result.value("type", "") != "result")
            return fmt::format("expected 'result', got '{}'", result.value("type", ""));
        return {};
    }
}

}  // namespace omrc::perf
