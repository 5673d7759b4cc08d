// SPDX-License-Identifier: BSD-3-Clause
// omrc-nccl-bench: allreduce bus bandwidth through libnccl-net-omrc.so, the
// way nccl-tests' all_reduce_perf reports it (docs/NCCL.md, "Measured"),
// with the collective built only from the plugin's isend/irecv/test: a ring
// allreduce (reduce-scatter + all-gather) of float32 sums, in place.
//
// Ranks are threads of one process over the loopback driver (one device,
// a private fabric), or processes over the udp driver (each its own
// device on [::1]; the first process is rank 0 and starts the others).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/collectives.hpp"
#include "harness/plugin_loader.hpp"

namespace omrc::nccl::bench {

struct Options {
    std::string driver = "loopback";  ///< loopback (threads) or udp (processes)
    std::string config;               ///< a device configuration file instead of driver/planes
    int ranks = 4;
    int planes = 4;
    std::size_t min_bytes = 1024;
    std::size_t max_bytes = 256u << 20;
    int factor = 2;
    int iters = 0;  ///< 0: as many as fit in time_budget_ms (at least 3, at most 50)
    int warmup = 2;
    int time_budget_ms = 1000;  ///< per size, when iters is 0
    std::size_t slice_bytes = 512u << 10;
    int window = 8;
    int abi_version = 12;
    std::string plugin;  ///< libnccl-net-omrc.so
    int setup_pairs = 0;  ///< --setup: comm pairs set up per mode instead of allreduces (0: allreduces)
    // A rank process of a udp run (set by rank 0 when it starts the others).
    int rank = 0;
    std::string job_dir;
};

/// One line of the table: one size.
struct Row {
    std::size_t bytes = 0;
    std::size_t count = 0;
    int iters = 0;
    double time_us = 0;     ///< per allreduce
    double algbw = 0;       ///< GB/s: bytes / time
    double busbw = 0;       ///< GB/s: algbw · 2(n−1)/n
    std::size_t wrong = 0;  ///< elements of rank 0 that differ after the first allreduce
};

/// The sizes of a run: min, min·factor, … up to max.
std::vector<std::size_t> sizes(const Options& o);

/// Runs every size as rank `rank` of o.ranks over `net` (initialised, device
/// 0) and returns rank 0's rows (other ranks: empty). Handles go through `ex`.
test::Status run_rank(test::Net& net, int rank, const Options& o, test::Exchange& ex, std::vector<Row>* rows);

/// --setup: times o.setup_pairs comm pairs set up over the CM and over TCP, alternately; prints the table.
int run_setup(const Options& o, test::Plugin& plugin);

void print_header(const Options& o, bool threads);
void print_row(const Row& r);
void print_footer(const std::vector<Row>& rows);

}  // namespace omrc::nccl::bench
