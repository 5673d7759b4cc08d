// SPDX-License-Identifier: BSD-3-Clause
// omrc-nccl-bench: see bench.hpp. Options follow nccl-tests where it has
// one (-b, -e, -f, -n, -w); ranks are threads (loopback) or processes (udp).
//
//   omrc-nccl-bench                              # 4 threads, loopback, 4 planes, 1 KiB .. 256 MiB
//   omrc-nccl-bench --driver udp -r 2 -e 64M     # 2 processes over udp on [::1]
//   omrc-nccl-bench --config my.toml -r 2        # devices of a configuration file
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "bench.hpp"
#include "harness/plugin_loader.hpp"
#include "harness/spawn.hpp"

using namespace omrc::nccl;
using namespace omrc::nccl::bench;

namespace {

/// "1K", "256M", "1G", "4096" → bytes; 0 when it is none of these.
std::size_t parse_size(const std::string& s) {
    if (s.empty()) return 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    std::size_t mult = 1;
    const std::string unit(end);
    if (unit == "K" || unit == "k")
        mult = 1u << 10;
    else if (unit == "M" || unit == "m")
        mult = 1u << 20;
    else if (unit == "G" || unit == "g")
        mult = 1u << 30;
    else if (!unit.empty())
        return 0;
    return static_cast<std::size_t>(v) * mult;
}

/// The device configuration of a run without --config: one device of the
/// chosen driver and planes. The QPs' retry budget is generous (0.8 s):
/// the benchmark measures bandwidth, and a loaded machine may starve a rank.
std::string write_config(const std::string& dir, const Options& o) {
    const std::string path = dir + "/omrc-nccl-bench.toml";
    std::ofstream(path) << "[[device]]\nname = \"omrc0\"\ndriver = \"" << o.driver << "\"\nplanes = " << o.planes
                        << "\n\n[device.qp]\ntimeout_ns = 100_000_000\n";
    return path;
}

int run_threads(const Options& o, test::Plugin& plugin) {
    test::MemoryExchange ex;
    std::vector<test::Status> status(static_cast<std::size_t>(o.ranks));
    std::vector<Row> rows;
    std::vector<std::thread> threads;
    for (int r = 0; r < o.ranks; ++r)
        threads.emplace_back([&, r] {
            auto net = plugin.net(o.abi_version);
            if (!net || net->init() != ncclSuccess) {
                status[r] = test::Status::error(ncclSystemError, "plugin init");
                return;
            }
            std::vector<Row> mine;
            status[r] = run_rank(*net, r, o, ex, &mine);
            if (r == 0) rows = std::move(mine);
        });
    for (auto& t : threads) t.join();
    int rc = 0;
    for (int r = 0; r < o.ranks; ++r)
        if (!status[r].ok()) {
            std::fprintf(stderr, "rank %d: %s\n", r, test::describe(status[r]).c_str());
            rc = 1;
        }
    print_footer(rows);
    for (const Row& row : rows) rc |= row.wrong != 0;
    return rc;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    std::string min_bytes = "1K", max_bytes = "256M", slice = "512K";
    bool ranks_given = false;
    CLI::App app{"omrc-nccl-bench: allreduce bus bandwidth through the OpenMRC NCCL net plugin (nccl-tests style)"};
    app.add_option("--driver", o.driver, "loopback (ranks as threads) or udp (ranks as processes)")
        ->check(CLI::IsMember({"loopback", "udp"}));
    app.add_option("--config", o.config, "device configuration file (docs/CONFIG.md) instead of --driver/--planes");
    app.add_option("-r,--ranks", o.ranks, "ranks (default 4 with loopback, 2 with udp)")
        ->check(CLI::Range(2, 16))
        ->each([&](const std::string&) { ranks_given = true; });
    app.add_option("--planes", o.planes, "planes of each device")->check(CLI::Range(1, 15));
    app.add_option("-b,--minbytes", min_bytes, "smallest size (K, M, G suffixes)");
    app.add_option("-e,--maxbytes", max_bytes, "largest size");
    app.add_option("-f,--stepfactor", o.factor, "size multiplier")->check(CLI::Range(2, 1024));
    app.add_option("-n,--iters", o.iters, "timed allreduces per size (default: by size, about --budget ms)")
        ->check(CLI::Range(1, 100000));
    app.add_option("-w,--warmup_iters", o.warmup, "untimed allreduces per size (the first is checked)")
        ->check(CLI::Range(1, 1000));
    app.add_option("--budget", o.time_budget_ms, "ms per size when -n is not given")->check(CLI::Range(10, 600000));
    app.add_option("--slice", slice, "bytes per isend/irecv (NCCL's chunk)");
    app.add_option("--window", o.window, "slices in flight per direction")->check(CLI::Range(1, NCCL_NET_MAX_REQUESTS));
    app.add_option("--abi", o.abi_version, "ncclNetPlugin_vN the ranks use")->check(CLI::Range(8, 12));
    app.add_option("--plugin", o.plugin, "path of libnccl-net-omrc.so");
    app.add_option("--setup", o.setup_pairs,
                   "instead of allreduces: set this many comm pairs up over the connection manager and over TCP, "
                   "alternately, and report the times (loopback)")
        ->check(CLI::Range(2, 100000));
    app.add_option("--rank", o.rank, "(internal: a rank process of a udp run)")->group("");
    app.add_option("--job-dir", o.job_dir, "(internal: where a udp run's ranks meet)")->group("");
    CLI11_PARSE(app, argc, argv);
    if (!ranks_given && o.driver == "udp") o.ranks = 2;
    o.min_bytes = parse_size(min_bytes);
    o.max_bytes = parse_size(max_bytes);
    o.slice_bytes = parse_size(slice);
    if (o.min_bytes == 0 || o.max_bytes < o.min_bytes || o.max_bytes > (std::size_t{1} << 31) - 4 ||
        o.slice_bytes == 0) {
        std::fprintf(stderr, "bad sizes: -b %s -e %s --slice %s (1 <= b <= e < 2 GiB, slice > 0; K, M, G suffixes)\n",
                     min_bytes.c_str(), max_bytes.c_str(), slice.c_str());
        return 64;
    }
    if (o.plugin.empty()) {
        const char* env = std::getenv("OMRC_NCCL_PLUGIN");
        o.plugin = env != nullptr ? env : OMRC_NCCL_PLUGIN_PATH;
    }
    const bool threads = o.driver == "loopback" && o.job_dir.empty();

    // The first process of a udp run owns the job directory and starts the others.
    std::vector<pid_t> children;
    bool own_dir = false;
    if (!threads && o.job_dir.empty()) {
        o.job_dir = test::make_temp_dir("omrc-nccl-bench-");
        own_dir = true;
        const bool config_given = !o.config.empty();
        if (!config_given) o.config = write_config(o.job_dir, o);
        ::setenv("OMRC_NCCL_CONFIG", o.config.c_str(), 1);
        const std::string self = std::filesystem::canonical("/proc/self/exe").string();
        for (int r = 1; r < o.ranks; ++r) {
            // The same options, plus where it is in the job.
            std::vector<std::string> args(argv, argv + argc);
            args[0] = self;
            if (!config_given) args.insert(args.end(), {"--config", o.config});
            args.insert(args.end(), {"--rank", std::to_string(r), "--job-dir", o.job_dir});
            children.push_back(test::spawn(args, test::environment_with({{"OMRC_NCCL_CONFIG", o.config}})));
        }
    }
    std::string temp_dir;
    if (threads && o.config.empty()) {
        temp_dir = test::make_temp_dir("omrc-nccl-bench-");
        o.config = write_config(temp_dir, o);
    }
    if (!o.config.empty()) ::setenv("OMRC_NCCL_CONFIG", o.config.c_str(), 1);

    test::Plugin plugin(o.plugin);
    if (!plugin.ok()) {
        std::fprintf(stderr, "dlopen %s: %s\n", o.plugin.c_str(), plugin.error().c_str());
        return 1;
    }
    int rc = 0;
    if (o.setup_pairs > 0) {
        if (!threads) {
            std::fprintf(stderr, "--setup runs on the loopback driver (one process)\n");
            rc = 64;
        } else {
            rc = run_setup(o, plugin);
        }
        if (!temp_dir.empty()) std::filesystem::remove_all(temp_dir);
        return rc;
    }
    if (o.rank == 0) print_header(o, threads);
    if (threads) {
        rc = run_threads(o, plugin);
    } else {
        test::FileExchange ex(o.job_dir);
        auto net = plugin.net(o.abi_version);
        std::vector<Row> rows;
        test::Status st;
        if (!net || net->init() != ncclSuccess)
            st = test::Status::error(ncclSystemError, "plugin init");
        else
            st = run_rank(*net, o.rank, o, ex, &rows);
        if (!st.ok()) {
            std::fprintf(stderr, "rank %d: %s\n", o.rank, test::describe(st).c_str());
            rc = 1;
        }
        if (o.rank == 0) {
            const auto codes = test::wait_all_processes(children, test::Clock::now() + std::chrono::minutes(30));
            for (const auto& [pid, code] : codes)
                if (code != 0) {
                    std::fprintf(stderr, "rank process %d exited with %d\n", static_cast<int>(pid), code);
                    rc = 1;
                }
            print_footer(rows);
            for (const Row& row : rows) rc |= row.wrong != 0;
        }
    }
    if (own_dir) std::filesystem::remove_all(o.job_dir);
    if (!temp_dir.empty()) std::filesystem::remove_all(temp_dir);
    return rc;
}
