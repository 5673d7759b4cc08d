// SPDX-License-Identifier: BSD-3-Clause
// The table, in nccl-tests' layout (all_reduce_perf, in place).
#include <cstdio>

#include "bench.hpp"

namespace omrc::nccl::bench {

void print_header(const Options& o, bool threads) {
    std::printf(
        "# omrc-nccl-bench: allreduce (ring: reduce-scatter + all-gather) through libnccl-net-omrc.so "
        "(ncclNetPlugin_v%d), isend/irecv/test only\n",
        o.abi_version);
    if (o.config.empty())
        std::printf("# %d ranks as %s over the %s driver, %d planes\n", o.ranks,
                    threads ? "threads of one process" : "processes", o.driver.c_str(), o.planes);
    else
        std::printf("# %d ranks as %s, devices from %s\n", o.ranks, threads ? "threads of one process" : "processes",
                    o.config.c_str());
    std::printf("# slices of %zu bytes, %d in flight per direction; busbw = algbw * 2(n-1)/n\n", o.slice_bytes,
                o.window);
    std::printf("#\n");
    std::printf("#                                                   in-place\n");
    std::printf("#       size         count      type   redop       time   algbw   busbw  #wrong  iters\n");
    std::printf("#        (B)    (elements)                         (us)  (GB/s)  (GB/s)\n");
    std::fflush(stdout);
}

void print_row(const Row& r) {
    std::printf("%12zu  %12zu     float     sum  %9.1f  %6.2f  %6.2f  %6zu  %5d\n", r.bytes, r.count, r.time_us,
                r.algbw, r.busbw, r.wrong, r.iters);
    std::fflush(stdout);
}

void print_footer(const std::vector<Row>& rows) {
    double sum = 0;
    std::size_t wrong = 0;
    for (const Row& r : rows) {
        sum += r.busbw;
        wrong += r.wrong;
    }
    std::printf("# Out of bounds values : %zu %s\n", wrong, wrong == 0 ? "OK" : "FAILED");
    std::printf("# Avg bus bandwidth    : %g\n", rows.empty() ? 0.0 : sum / static_cast<double>(rows.size()));
    std::printf("#\n");
}

}  // namespace omrc::nccl::bench
