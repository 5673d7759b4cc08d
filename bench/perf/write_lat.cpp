// SPDX-License-Identifier: BSD-3-Clause
// write_lat: ping-pong with WRITE_WITH_IMM (send_lat: with SEND); a receive
// completion says the whole message is placed (packets may arrive out of order over many paths,
// so polling the last byte, as perftest does on RC, would be wrong here).
//
// The client pings (a WRITE_WITH_IMM) and waits for the pong; half the round
// trip is one sample. The server pongs every ping (serve_lat).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>

#include "session.hpp"

namespace omrc::perf {

namespace {

/// The ping (or pong): a WRITE_WITH_IMM (write_lat) or a SEND (send_lat).
std::string send_imm(const Options& o, Endpoint& ep, std::uint32_t size, std::uint32_t imm) {
    const Sge sge{ep.local[0].va, size, ep.mr->lkey()};
    SendWr w;
    w.wr_id = 0;
    w.opcode = is_send(o.test) ? WrOpcode::send : WrOpcode::rdma_write_with_imm;
    w.send_flags = SendFlags::signaled;
    w.sg_list = {&sge, 1};
    w.remote_addr = ep.remote[0].va;
    w.rkey = ep.remote[0].rkey;
    w.imm_data = imm;
    if (int rc = ep.qps[0]->post_send(w)) return fmt::format("post_send: {}", std::strerror(rc));
    return {};
}

/// Progresses until a receive completion arrives (send completions are
/// drained on the way). 1: received; 0: `stop` said so; error otherwise.
template <class Stop>
int wait_recv(Endpoint& ep, std::string& error, Stop stop) {
    Wc wc[16];
    auto last = Clock::now();
    for (std::uint64_t spin = 0;; ++spin) {
        ep.dev->progress();
        for (std::size_t n = ep.scq->poll(wc), k = 0; k < n; ++k)
            if (error = check_wc(wc[k]); !error.empty()) return -1;
        if (ep.rcq->poll(std::span(wc, 1)) == 1) {
            if (error = check_wc(wc[0]); !error.empty()) return -1;
            if (auto e = ep.post_recvs(0, 1); !e.empty()) return error = e, -1;
            return 1;
        }
        if ((spin & 1023) == 0) {
            if (stop()) return 0;
            if (Clock::now() - last > std::chrono::seconds(10)) {
                error = "no reply from the peer for 10 s";
                return -1;
            }
        }
    }
}

}  // namespace

/// read_lat: one READ of `size` bytes from the server's buffer, waited for
/// (its send completion says every byte is placed).
static std::string read_once(Endpoint& ep, std::uint32_t size) {
    const Sge sge{ep.local[0].va, size, ep.mr->lkey()};
    SendWr w;
    w.wr_id = 0;
    w.opcode = WrOpcode::rdma_read;
    w.send_flags = SendFlags::signaled;
    w.sg_list = {&sge, 1};
    w.remote_addr = ep.remote[0].va;
    w.rkey = ep.remote[0].rkey;
    if (int rc = ep.qps[0]->post_send(w)) return fmt::format("post_send: {}", std::strerror(rc));
    Wc wc[1];
    const auto start = Clock::now();
    for (std::uint64_t spin = 0;; ++spin) {
        ep.dev->progress();
        if (ep.scq->poll(wc) == 1) return check_wc(wc[0]);
        if ((spin & 1023) == 0 && Clock::now() - start > std::chrono::seconds(10))
            return "no READ completed for 10 s";
    }
}

std::string client_lat(const Options& o, Endpoint& ep, std::uint32_t size, std::uint64_t iters, Result& r) {
    std::vector<double> us;
    us.reserve(iters);
    const bool timed = o.duration_s > 0;
    const auto start = Clock::now();
    std::string error;
    for (std::uint64_t i = 0; timed ? seconds_between(start, Clock::now()) < o.duration_s : i < iters; ++i) {
        const auto t0 = Clock::now();
        if (is_read(o.test)) {
            // As ib_read_lat: the whole round trip of one READ.
            if (auto e = read_once(ep, size); !e.empty()) return e;
            us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
            continue;
        }
        if (auto e = send_imm(o, ep, size, static_cast<std::uint32_t>(i)); !e.empty()) return e;
        if (wait_recv(ep, error, [] { return false; }) < 0) return error;
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
    }
    if (us.empty()) return "no iteration completed";
    r.bytes = size;
    r.iterations = us.size();
    double sum = 0;
    for (double v : us) sum += v;
    r.t_avg = sum / static_cast<double>(us.size());
    double var = 0;
    for (double v : us) var += (v - r.t_avg) * (v - r.t_avg);
    r.t_stdev = std::sqrt(var / static_cast<double>(us.size()));
    std::sort(us.begin(), us.end());
    auto pct = [&](double p) {
        const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(us.size()))) ;
        return us[std::min(us.size() - 1, k == 0 ? 0 : k - 1)];
    };
    r.t_min = us.front();
    r.t_max = us.back();
    r.t_typical = pct(0.5);
    r.p99 = pct(0.99);
    r.p999 = pct(0.999);
    return {};
}

std::string serve_lat(const Options& o, Endpoint& ep, Oob& oob, std::uint32_t size, std::uint64_t iters,
                      nlohmann::json& result, bool& oob_broken) {
    oob_broken = false;
    nlohmann::json early;
    bool have_early = false;
    std::string oob_error, error;
    auto stop = [&] {
        const int r2 = oob.recv(early, milliseconds(0), oob_error);
        if (r2 != 0) have_early = true;
        return r2 != 0;
    };
    for (std::uint64_t i = 0; o.duration_s > 0 || i < iters; ++i) {
        const int got = wait_recv(ep, error, stop);
        if (got < 0) return error;
        if (got == 0) break;
        if (auto e = send_imm(o, ep, size, static_cast<std::uint32_t>(i)); !e.empty()) return e;
    }
    if (have_early) {
        oob_broken = !oob_error.empty();
        if (oob_broken) return oob_error;
        result = early;
        return {};
    }
    return expect(oob, &ep, "result", result, milliseconds(o.oob_timeout_ms) + std::chrono::seconds(60));
}

}  // namespace omrc::perf
