// SPDX-License-Identifier: BSD-3-Clause
// CPU cost of connection setup through the connection manager
// (docs/PROTOCOL.md §13), both ends together, in one thread on a virtual
// clock: two loopback devices, the verbs API as an application uses it.
//
// One setup: A creates a QP and cm_connect()s to B's service; B takes the
// connect_request, creates a QP and cm_accept()s; both see established;
// A cm_disconnect()s, both see disconnected, both QPs are destroyed. With
// `forged` > 0 a raw port of the fabric sends that many REQs from forged
// addresses (half with a guessed cookie) to B before each setup: B answers
// each (a COOKIE) or, with cookies only under load, takes it as a request
// until its backlog is half full. The thread's CPU time over the run divided
// by the setups is `us_per_setup`; `ns_per_forged` is the extra CPU per
// forged REQ against the run without them (same cookies and held settings)
// when both are in the same invocation, otherwise 0. `held` connections are
// set up first and stay connected for the run (B's live connections).
//
//   build/release/bench/cm_cost --benchmark_format=json
#include <benchmark/benchmark.h>

#include <time.h>

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "drivers/loopback/loopback.hpp"
#include "omrc/omrc.hpp"
#include "support/forged_cm.hpp"

namespace {

using namespace omrc;

constexpr std::uint64_t kService = 0x4F4D5243'0000C057ull;

std::uint64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

struct End {
    std::unique_ptr<Device> dev;
    std::unique_ptr<Pd> pd;
    std::unique_ptr<Cq> cq;
};

class Net {
public:
    explicit Net(bool cookies) : fabric_(config()) {
        a_ = open(0);
        b_ = open(1);
        flood_ = fabric_.attach(2);
        CmListenOptions lo;
        lo.cookies = cookies;
        if (b_.dev->cm_listen(kService, lo) != 0) throw std::runtime_error("cm_listen");
        // Forged REQs, built once; sent in turn.
        std::mt19937_64 rng(57);
        for (int i = 0; i < 4096; ++i)
            forged_.push_back(omrc::test::forged_req_frame(rng, b_.dev->address(), kService, 2,
                                                           static_cast<std::uint8_t>(i % 8), i % 2 == 1));
    }

    /// Connects `n` QPs that stay connected (B's live connections during the run).
    bool hold(std::uint32_t n, std::string& why) {
        for (std::uint32_t i = 0; i < n; ++i)
            if (!setup_once(0, why, true)) return false;
        return true;
    }

    /// One connect/accept/disconnect (`keep`: connect/accept only, the QPs
    /// kept); false (with `why`) when it did not complete.
    bool setup_once(std::uint32_t forged, std::string& why, bool keep = false) {
        for (std::uint32_t i = 0; i < forged; ++i) {
            const std::size_t k = next_forged_++ % forged_.size();
            if (!omrc::test::send_raw(*flood_, forged_[k], static_cast<std::uint8_t>(k % 8), now_)) {
                why = "the raw port refused a frame";
                return false;
            }
        }
        auto qa = a_.pd->create_qp(attr(a_));
        CmConnParams p;
        p.service_id = kService;
        p.peer = b_.dev->address();
        std::uint32_t id_a = 0;
        if (qa == nullptr || a_.dev->cm_connect(*qa, p, &id_a) != 0) return (why = "cm_connect"), false;
        std::unique_ptr<Qp> qb;
        bool a_up = false, b_up = false;
        std::uint32_t requests = 0;
        if (!run([&] {
                CmEvent ev[32];
                for (std::size_t n; (n = b_.dev->cm_poll(ev)) != 0;)
                    for (std::size_t i = 0; i < n; ++i) {
                        if (ev[i].type == CmEventType::connect_request) {
                            ++requests;
                            // A forged request (cookies under load only) is refused; A's is taken.
                            if (ev[i].peer.addr != a_.dev->address().addr) {
                                (void)b_.dev->cm_reject(ev[i].id);
                                continue;
                            }
                            qb = b_.pd->create_qp(attr(b_));
                            if (qb == nullptr || b_.dev->cm_accept(ev[i].id, *qb, {}) != 0) return true;
                        } else if (ev[i].type == CmEventType::established) {
                            b_up = true;
                        }
                    }
                for (std::size_t n; (n = a_.dev->cm_poll(ev)) != 0;)
                    for (std::size_t i = 0; i < n; ++i)
                        if (ev[i].id == id_a && ev[i].type == CmEventType::established) a_up = true;
                        else if (ev[i].id == id_a) return true;  // rejected or unreachable: fails below
                return a_up && b_up;
            }) ||
            !a_up || !b_up)
            return (why = "setup did not complete"), false;
        forged_requests_ += requests - 1;
        if (keep) {
            held_.push_back(std::move(qa));
            held_.push_back(std::move(qb));
            return true;
        }
        if (a_.dev->cm_disconnect(id_a) != 0) return (why = "cm_disconnect"), false;
        bool a_down = false, b_down = false;
        if (!run([&] {
                CmEvent ev[32];
                for (std::size_t n; (n = b_.dev->cm_poll(ev)) != 0;)
                    for (std::size_t i = 0; i < n; ++i) b_down |= ev[i].type == CmEventType::disconnected;
                for (std::size_t n; (n = a_.dev->cm_poll(ev)) != 0;)
                    for (std::size_t i = 0; i < n; ++i) a_down |= ev[i].type == CmEventType::disconnected;
                return a_down && b_down;
            }))
            return (why = "disconnect did not complete"), false;
        return true;
    }
    [[nodiscard]] std::uint64_t forged_requests() const { return forged_requests_; }
    [[nodiscard]] std::uint64_t answers() const { return answers_; }

private:
    static loopback::FabricConfig config() {
        loopback::FabricConfig c;
        c.endpoints = 3;
        c.planes = 8;
        c.seed = 57;
        c.mode = loopback::ClockMode::virtual_clock;
        return c;
    }
    End open(std::uint32_t endpoint) {
        DeviceOptions o;
        o.max_qps = 4096;
        o.driver_context = &fabric_;
        o.args["endpoint"] = std::to_string(endpoint);
        o.seed = 100 + endpoint;
        o.clock = [this] { return now_; };
        int err = 0;
        End e;
        e.dev = Device::open("loopback", o, &err);
        if (e.dev == nullptr) throw std::runtime_error("Device::open: " + std::to_string(err));
        e.pd = e.dev->alloc_pd();
        e.cq = e.dev->create_cq(256);
        return e;
    }
    static QpInitAttr attr(End& e) {
        QpInitAttr a;
        a.send_cq = e.cq.get();
        a.recv_cq = e.cq.get();
        return a;
    }
    /// Progresses both devices (and drains the raw port) and jumps virtual
    /// time from event to event until done(), for at most 10 s of it.
    bool run(const std::function<bool()>& done) {
        const std::uint64_t deadline = now_ + 10'000'000'000ull;
        for (;;) {
            wire::RxFrame rx[64];
            for (std::size_t n; (n = flood_->rx_burst(rx, now_)) != 0;) answers_ += n;
            a_.dev->progress();
            b_.dev->progress();
            if (done()) return true;
            std::uint64_t next = std::min({fabric_.next_event_ns(), a_.dev->next_wakeup_ns(), b_.dev->next_wakeup_ns(),
                                           flood_->next_event_ns()});
            if (next == UINT64_MAX || next > deadline) return done();
            now_ = std::max(now_, next);
        }
    }

    std::uint64_t now_ = 1'000'000;
    loopback::Fabric fabric_;
    End a_, b_;
    std::unique_ptr<driver::Driver> flood_;
    std::vector<std::unique_ptr<Qp>> held_;  ///< QPs of the connections hold() made (declared after the ends: go first)
    std::vector<std::vector<std::uint8_t>> forged_;
    std::size_t next_forged_ = 0;
    std::uint64_t forged_requests_ = 0;
    std::uint64_t answers_ = 0;
};

/// us per setup of the forged:0 run, by (cookies, held), for ns_per_forged.
std::map<std::pair<bool, std::uint32_t>, double> g_base_us;

void BM_cm_setup(benchmark::State& st) {
    const bool cookies = st.range(0) != 0;
    const auto forged = static_cast<std::uint32_t>(st.range(1));
    const auto held = static_cast<std::uint32_t>(st.range(2));
    const std::uint64_t setups = 2000;
    std::uint64_t cpu = 0, done = 0;
    Net net(cookies);
    if (std::string why; !net.hold(held, why)) {
        st.SkipWithError(why.c_str());
        return;
    }
    for (auto _ : st) {
        std::string why;
        const std::uint64_t t0 = thread_cpu_ns();
        for (std::uint64_t i = 0; i < setups; ++i) {
            if (!net.setup_once(forged, why)) {
                st.SkipWithError(why.c_str());
                return;
            }
        }
        cpu += thread_cpu_ns() - t0;
        done += setups;
    }
    const double us = static_cast<double>(cpu) / 1e3 / static_cast<double>(done);
    if (forged == 0) g_base_us[{cookies, held}] = us;
    st.counters["us_per_setup"] = us;
    st.counters["setups_per_cpu_s"] = 1e6 / us;
    st.counters["ns_per_forged"] =
        forged > 0 && g_base_us.count({cookies, held}) != 0 ? (us - g_base_us[{cookies, held}]) * 1e3 / forged : 0.0;
    st.counters["forged_taken_as_requests"] = static_cast<double>(net.forged_requests());
    st.counters["answers_to_forged"] = static_cast<double>(net.answers());
}

}  // namespace

BENCHMARK(BM_cm_setup)
    ->Args({1, 0, 0})
    ->Args({1, 100, 0})
    ->Args({0, 0, 0})
    ->Args({0, 100, 0})
    ->Args({1, 0, 1000})
    ->Args({1, 100, 1000})
    ->ArgNames({"cookies", "forged", "held"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_MAIN();
