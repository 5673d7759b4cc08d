// SPDX-License-Identifier: BSD-3-Clause
// The engine over the real-time loopback driver, two threads (one per
// endpoint, each running the poll-mode loop: one clock read, rx_burst →
// on_rx_burst → on_timer when due → poll_tx → tx_burst). Each benchmark
// posts WRITEs for at least 0.5 s. Reports packets/s and goodput, and for
// 1 MiB WRITEs the ratio to a memcpy of the same bytes measured in the same
// run; frames the sender had to resend and frames the rings dropped are
// counted beside them (both 0 on a healthy run).
//
//   build/release/bench/engine_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/engine.hpp"
#include "drivers/loopback/loopback.hpp"

namespace {

using namespace omrc;
using Clock = std::chrono::steady_clock;

core::TimeNs now_ns() {
    return static_cast<core::TimeNs>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

/// Receive side placement: bounds-checked copy into one buffer.
class Sink final : public core::PlacementTarget {
public:
    explicit Sink(std::size_t bytes) : buf_(bytes) {}
    core::PlaceStatus place(std::uint32_t, std::uint32_t, std::uint64_t va, std::span<const std::uint8_t> b) override {
        const auto base = reinterpret_cast<std::uint64_t>(buf_.data());
        if (va < base || b.size() > buf_.size() || va - base > buf_.size() - b.size())
            return core::PlaceStatus::out_of_bounds;
        std::memcpy(reinterpret_cast<void*>(va), b.data(), b.size());
        return core::PlaceStatus::ok;
    }
    std::uint8_t* data() { return buf_.data(); }

private:
    std::vector<std::uint8_t> buf_;
};

struct Endpoint {
    std::unique_ptr<core::Engine> engine;
    std::unique_ptr<driver::Driver> driver;
    std::vector<driver::RxFrame> rx = std::vector<driver::RxFrame>(64);
    std::vector<wire::GatherFrame> tx = std::vector<wire::GatherFrame>(64);
    std::vector<core::Completion> wc = std::vector<core::Completion>(64);
    std::size_t tx_pending = 0, tx_done = 0;

    /// One pass of the progress loop; returns completions seen.
    std::size_t progress() {
        const core::TimeNs now = now_ns();
        const std::size_t n = driver->rx_burst(rx, now);
        engine->on_rx_burst(std::span(rx).first(n), now);
        if (engine->next_wakeup() <= now) engine->on_timer(now);
        if (tx_done == tx_pending) {
            tx_pending = engine->poll_tx(tx, now);
            tx_done = 0;
        }
        if (tx_done < tx_pending) tx_done += driver->tx_burst(std::span(tx).subspan(tx_done, tx_pending - tx_done), now);
        return engine->poll_completions(wc);
    }
};

struct Setup {
    loopback::Fabric fabric;
    Endpoint ep[2];
    Sink sink;
    std::uint32_t qpn[2] = {0, 0};

    Setup(std::uint32_t planes, std::uint32_t evs, core::PathPolicy policy, std::size_t sink_bytes, bool icrc = true)
        : fabric(config(planes)), sink(sink_bytes) {
        for (std::uint32_t i = 0; i < 2; ++i) {
            core::EngineConfig c;
            c.planes = planes;
            c.seed = i + 1;
            for (std::uint32_t p = 0; p < planes; ++p) c.local_macs[p] = loopback::Fabric::mac(i, p);
            c.local_addr = addr(i);
            c.compute_icrc = c.verify_icrc = icrc;  // false: as a NIC that offloads the ICRC
            ep[i].engine = std::make_unique<core::Engine>(c, i == 1 ? &sink : nullptr);
            ep[i].driver = fabric.attach(i);
        }
        for (int i = 0; i < 2; ++i) {
            core::QpCaps caps;
            caps.max_send_wr = 1024;
            qpn[i] = ep[i].engine->submit(core::CmdCreateQp{caps}, now_ns()).qpn;
            core::QpAttr init;
            init.access_flags = core::kAccessRemoteWrite;
            ep[i].engine->submit(core::CmdModifyQp{qpn[i], core::QpState::init, init, core::kAttrAccess}, now_ns());
        }
        for (int i = 0; i < 2; ++i) {
            core::QpAttr a;
            a.dest_qp_num = qpn[1 - i];
            a.dest_conn_id = ep[1 - i].engine->qp_info(qpn[1 - i]).conn_id;
            a.peer_addr = addr(static_cast<std::uint32_t>(1 - i));
            for (std::uint32_t p = 0; p < planes; ++p) a.peer_macs[p] = loopback::Fabric::mac(static_cast<std::uint32_t>(1 - i), p);
            a.policy = policy;
            a.evs = evs;
            a.mpr = 32;
            a.cc.algorithm = core::CcAlgorithm::fixed;
            a.cc.fixed_window_bytes = 16u << 20;
            ep[i].engine->submit(core::CmdModifyQp{qpn[i], core::QpState::rtr, a,
                                                  core::kAttrDestQpn | core::kAttrRqPsn | core::kAttrPath | core::kAttrMtu | core::kAttrMpr},
                                 now_ns());
            ep[i].engine->submit(core::CmdModifyQp{qpn[i], core::QpState::rts, a, core::kAttrSqPsn | core::kAttrCc}, now_ns());
        }
    }
    static loopback::FabricConfig config(std::uint32_t planes) {
        loopback::FabricConfig f;
        f.planes = planes;
        f.mode = loopback::ClockMode::real_time;
        f.link_delay_ns = 0;
        f.ring_slots = 512;                  // MTU-sized slots: 512 × 4352 B per direction
        f.rx_pool_frames = 512;
        f.max_frame_bytes = 4096 + 256;
        f.ring_backpressure = true;          // a full ring refuses frames, as a NIC transmit queue does
        f.zero_copy = true;                  // payload left in the sender's memory: the receiver's placement is the one copy
        return f;
    }
    static wire::Ipv6Addr addr(std::uint32_t i) {
        wire::Ipv6Addr a{0xfd, 0x00};
        a[15] = static_cast<std::uint8_t>(i + 1);
        return a;
    }
};

struct RunResult {
    double secs = 0;
    std::size_t messages = 0;
};

/// Sends WRITEs of `msg_bytes` from endpoint 0 with `depth` outstanding for
/// at least `min_secs`; endpoint 1 runs its loop on a second thread.
RunResult run_writes(Setup& s, std::size_t msg_bytes, double min_secs, std::size_t depth,
                     const std::vector<std::uint8_t>& src) {
    std::atomic<bool> stop{false};
    std::thread peer([&] {
        while (!stop.load(std::memory_order_relaxed)) s.ep[1].progress();
    });
    const auto t0 = Clock::now();
    const auto until = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(min_secs));
    std::size_t posted = 0, completed = 0;
    bool posting = true;
    const std::uint64_t dst = reinterpret_cast<std::uint64_t>(s.sink.data());
    while (posting || completed < posted) {
        while (posting && posted - completed < depth) {
            core::SendRequest r;
            r.wr_id = posted;
            r.remote_addr = dst;
            r.rkey = 1;
            r.sge_count = 1;
            r.sges[0] = {src.data(), static_cast<std::uint32_t>(msg_bytes)};
            if (s.ep[0].engine->submit(core::CmdPostSend{s.qpn[0], std::span(&r, 1)}, now_ns()).err != 0) break;
            ++posted;
            if ((posted & 63) == 0 && Clock::now() >= until) posting = false;
        }
        completed += s.ep[0].progress();
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    stop = true;
    peer.join();
    return {secs, completed};
}

/// Frames resent by the sender and dropped by full rings so far.
void loss_counters(benchmark::State& st, Setup& s) {
    const core::Qp* q = s.ep[0].engine->find_qp(s.qpn[0]);
    st.counters["resent"] = q != nullptr ? static_cast<double>(q->stats.data_pkts_resent) : -1;
    st.counters["ring_full"] = static_cast<double>(s.fabric.endpoint_counters(0).sent.ring_full +
                                                   s.fabric.endpoint_counters(1).sent.ring_full);
}

void BM_write_8B_packet_rate(benchmark::State& st) {
    Setup s(8, 128, core::PathPolicy::spray, 4096);
    std::vector<std::uint8_t> src(8, 0x5A);
    double secs = 0;
    std::size_t total = 0;
    for (auto _ : st) {
        const RunResult r = run_writes(s, 8, 0.5, 256, src);
        secs += r.secs;
        total += r.messages;
    }
    st.counters["pkts_per_s"] = static_cast<double>(total) / secs;
    loss_counters(st, s);
}

void BM_write_1MiB(benchmark::State& st) {
    const auto policy = static_cast<core::PathPolicy>(st.range(0));
    const bool icrc = st.range(1) != 0;
    const std::uint32_t evs = policy == core::PathPolicy::ecmp ? 8 : 128;
    const std::size_t msg = 1u << 20;
    Setup s(8, evs, policy, msg, icrc);
    std::vector<std::uint8_t> src(msg, 0xA5), copy(msg);
    double secs = 0, memcpy_secs = 0;
    std::size_t total = 0;
    for (auto _ : st) {
        const RunResult r = run_writes(s, msg, 0.5, 8, src);
        secs += r.secs;
        const auto t0 = Clock::now();
        for (std::size_t i = 0; i < r.messages; ++i) {
            std::memcpy(copy.data(), src.data(), msg);
            benchmark::DoNotOptimize(copy.data());
            benchmark::ClobberMemory();
        }
        memcpy_secs += std::chrono::duration<double>(Clock::now() - t0).count();
        total += r.messages;
    }
    const double bytes = static_cast<double>(total * msg);
    st.counters["goodput_gbps"] = bytes * 8 / secs / 1e9;
    st.counters["memcpy_gbps"] = bytes * 8 / memcpy_secs / 1e9;
    st.counters["memcpy_ratio"] = memcpy_secs / secs;
    st.counters["pkts_per_s"] = static_cast<double>(total * (msg / 4096)) / secs;
    loss_counters(st, s);
}

}  // namespace

BENCHMARK(BM_write_8B_packet_rate)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_write_1MiB)
    ->Args({static_cast<int>(core::PathPolicy::spray), 1})
    ->Args({static_cast<int>(core::PathPolicy::adaptive), 1})
    ->Args({static_cast<int>(core::PathPolicy::ecmp), 1})
    ->Args({static_cast<int>(core::PathPolicy::adaptive), 0})
    ->ArgNames({"policy", "icrc"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK_MAIN();
