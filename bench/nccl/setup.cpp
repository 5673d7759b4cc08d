// SPDX-License-Identifier: BSD-3-Clause
// omrc-nccl-bench --setup N: what setting one comm pair up costs through the
// plugin (listen, then connect and accept called in turn as NCCL does until
// both return their comm), over the connection manager and over the TCP
// handshake, alternately in one run on one loopback device (the mode is
// OMRC_NCCL_SETUP at each listen, docs/NCCL.md). Closing is not timed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench.hpp"

namespace omrc::nccl::bench {

namespace {

/// One pair set up: wall-clock µs from listen to both comms, or < 0 on failure.
double one_pair(test::Net& net) {
    std::vector<unsigned char> handle(NCCL_NET_HANDLE_MAXSIZE, 0);
    void* lc = nullptr;
    void* sc = nullptr;
    void* rc = nullptr;
    const auto t0 = test::Clock::now();
    const auto deadline = t0 + std::chrono::seconds(20);
    if (net.listen(0, handle.data(), &lc) != ncclSuccess) return -1;
    bool ok = true;
    while (ok && (sc == nullptr || rc == nullptr) && test::Clock::now() < deadline) {
        if (sc == nullptr) ok = net.connect(0, handle.data(), &sc) == ncclSuccess;
        if (ok && rc == nullptr) ok = net.accept(lc, &rc) == ncclSuccess;
    }
    const auto t1 = test::Clock::now();
    ok = ok && sc != nullptr && rc != nullptr;
    if (sc != nullptr) (void)net.close_send(sc);
    if (rc != nullptr) (void)net.close_recv(rc);
    (void)net.close_listen(lc);
    return ok ? std::chrono::duration<double, std::micro>(t1 - t0).count() : -1;
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int run_setup(const Options& o, test::Plugin& plugin) {
    auto net = plugin.net(o.abi_version);
    if (!net || net->init() != ncclSuccess) {
        std::fprintf(stderr, "plugin init failed\n");
        return 1;
    }
    const char* modes[2] = {"cm", "tcp"};
    std::vector<double> us[2];
    for (int round = 0; round < 2 * o.setup_pairs; ++round) {
        const int m = round % 2;  // alternately: both modes see the same machine
        ::setenv("OMRC_NCCL_SETUP", modes[m], 1);
        const double t = one_pair(*net);
        if (t < 0) {
            std::fprintf(stderr, "setting a comm pair up over %s failed (the plugin logged why)\n", modes[m]);
            return 1;
        }
        if (round >= 2) us[m].push_back(t);  // the first of each: warm-up
    }
    std::printf("# comm pair set-up (listen, connect and accept in turn until both comms): %d pairs per mode\n",
                o.setup_pairs - 1);
    std::printf("# %-5s %10s %10s %10s %10s\n", "setup", "p50 (us)", "p90 (us)", "p99 (us)", "mean (us)");
    double p50[2];
    for (int m = 0; m < 2; ++m) {
        double sum = 0;
        for (double t : us[m]) sum += t;
        p50[m] = percentile(us[m], 0.5);
        std::printf("  %-5s %10.1f %10.1f %10.1f %10.1f\n", modes[m], p50[m], percentile(us[m], 0.9),
                    percentile(us[m], 0.99), sum / static_cast<double>(us[m].size()));
    }
    std::printf("# cm / tcp (p50): %.2f\n", p50[0] / p50[1]);
    return 0;
}

}  // namespace omrc::nccl::bench
