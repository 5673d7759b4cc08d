// SPDX-License-Identifier: BSD-3-Clause
// omrc-perf: RDMA WRITE bandwidth and latency over OpenMRC, shaped like
// perftest's ib_write_bw / ib_write_lat / ib_send_bw / ib_send_lat (docs/PERF.md).
//
//   omrc-perf write_bw [options]                  server: waits for one client
//   omrc-perf write_bw [options] <server-host>    client: runs the test
//   omrc-perf write_lat --driver loopback         both ends in this process
//   omrc-perf write_bw --config FILE --device NAME   the device from a configuration file
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <thread>

#include "drivers/loopback/loopback.hpp"
#include "perf.hpp"
#ifdef OMRC_HAVE_DPDK
#include "omrc/dpdk.hpp"
#endif

namespace {

using omrc::perf::Options;
using omrc::perf::Test;

/// The loopback arguments that describe a device's private fabric (from a
/// configuration file) describe the fabric built here instead. "" or the error.
std::string take_private_fabric_args(Options& o, omrc::loopback::FabricConfig& c) {
    auto& args = o.device_options.args;
    for (const char* key : {"planes", "link_delay_ns"}) {
        const auto it = args.find(key);
        if (it == args.end()) continue;
        std::uint64_t v = 0;
        const std::string& s = it->second;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || end != s.data() + s.size())
            return fmt::format("loopback argument {}={} is not an unsigned integer", key, s);
        if (std::string_view(key) == "planes") {
            if (o.planes == 0) c.planes = static_cast<std::uint32_t>(v);
        } else {
            c.link_delay_ns = v;
        }
        args.erase(it);
    }
    args.erase("endpoints");  // this fabric has two: one per end
    return {};
}

/// Both ends over an in-process real-time loopback fabric, the server on a
/// thread of its own and the out-of-band channel on a free local port.
int run_loopback(Options o) {
    omrc::loopback::FabricConfig c;
    c.endpoints = 2;
    c.planes = o.planes != 0 ? o.planes : 4;
    c.mode = omrc::loopback::ClockMode::real_time;
    c.link_delay_ns = 1'000;
    c.ring_slots = 4096;
    c.rx_pool_frames = 4096;
    c.queues = std::max<std::uint32_t>(1, o.workers);  // a queue per worker of each end
    if (auto e = take_private_fabric_args(o, c); !e.empty()) {
        fmt::print(stderr, "omrc-perf: error: {}\n", e);
        return 1;
    }
    omrc::loopback::Fabric fabric(c);
    o.planes = 0;  // the fabric's
    Options server = o;
    server.server.clear();
    server.port = 0;
    server.quiet = true;
    server.out_json.clear();
    server.stats_json.clear();
    server.driver_context = &fabric;
    server.endpoint = 1;
    std::atomic<std::uint16_t> port{0};
    std::atomic<bool> server_done{false};
    int server_rc = 0;
    std::thread t([&] {
        server_rc = omrc::perf::run(server, &port);
        server_done = true;
    });
    while (port.load() == 0 && !server_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    int rc = 1;
    if (port.load() != 0) {
        Options client = o;
        client.server = "localhost";
        client.port = port.load();
        client.driver_context = &fabric;
        client.endpoint = 0;
        rc = omrc::perf::run(client);
    }
    t.join();
    return rc != 0 ? rc : server_rc;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef OMRC_HAVE_DPDK
    omrc::dpdk::register_driver();
#endif
    CLI::App app{"omrc-perf: RDMA WRITE bandwidth and latency over OpenMRC (perftest-style)"};
    std::string test;
    Options o;
    std::string config_file, device_name;
    std::uint32_t size = 0;
    bool all = false;
    app.add_option("test", test, "write_bw, write_lat, send_bw, send_lat, read_bw or read_lat")
        ->required()
        ->check(CLI::IsMember({"write_bw", "write_lat", "send_bw", "send_lat", "read_bw", "read_lat"}));
    app.add_option("server", o.server, "server host (omit to be the server)");
    app.add_option("-s,--size", size, "message size in bytes (default 65536 for the _bw tests, 2 for the _lat ones)")
        ->check(CLI::Range(1u, 1u << 30));
    app.add_flag("-a,--all", all, "run every size 2..2^23");
    app.add_option("-n,--iters", o.iters, "iterations per size (default 5000 bw, 1000 lat)");
    app.add_option("-D,--duration", o.duration_s, "run each size this many seconds instead of -n")->check(CLI::PositiveNumber);
    app.add_option("-q,--qp", o.qps, "QPs (write_bw, send_bw)")->check(CLI::Range(1u, 1024u));
    app.add_option("-t,--tx-depth", o.tx_depth, "outstanding WRITEs per QP (default 128 bw, 1 lat)")
        ->check(CLI::Range(1u, 65536u));
    app.add_flag("--report_gbits", o.report_gbits, "bandwidth in Gb/sec (default MB/sec, 2^20 bytes)");
    app.add_option("--out_json", o.out_json, "also write the results as JSON to this file");
    app.add_flag("--check", o.check,
                 "write_bw, send_bw: random source data, and the server's memory is compared (CRC-64) after each size");
    app.add_option("--stats", o.stats_json, "write the device's counters (engine, paths, driver) as JSON to this file");
    app.add_option("--stats-interval", o.stats_interval_ms,
                   "write_bw: every this many ms, one line on stderr per-plane (Gb/s, retransmissions, losses, EVs)")
        ->check(CLI::Range(1u, 3'600'000u));
    app.add_option("-p,--port", o.port, "out-of-band TCP port")->check(CLI::Range(1, 65535));
    app.add_flag("--cm", o.cm,
                 "connect the QPs with OpenMRC's connection manager over the fabric (the TCP port then carries only "
                 "the run's control)");
    auto* driver_opt =
        app.add_option("--driver", o.driver, "udp, loopback or dpdk")->check(CLI::IsMember({"udp", "loopback", "dpdk"}));
    app.add_option("--eal", o.eal, "DPDK EAL arguments (dpdk driver: args[\"eal\"])");
    auto* planes_opt = app.add_option("--planes", o.planes, "planes (0: the driver's default)")->check(CLI::Range(0u, 15u));
    app.add_option("--workers", o.workers,
                   "workers (engine shards with a queue each on every port, each on a thread of its own; QPs placed on "
                   "them in turn: use -q >= workers)")
        ->check(CLI::Range(1u, 16u));
    app.add_option("--encrypt", o.encrypt, "encrypted mode of every QP: off, aes-gcm-128 or aes-gcm-256 (both ends alike)")
        ->check(CLI::IsMember({"off", "aes-gcm-128", "aes-gcm-256"}));
    app.add_option("--master-key-file", o.master_key_file,
                   "file of 64 hex digits: the PSP master key (both ends hold the same)");
    app.add_option("--cpus", o.cpus, "the CPU of each worker thread, one per worker (default: the first port's NUMA node)")
        ->delimiter(',');
    auto* evs_opt = app.add_option("--evs", o.evs, "active EVs per QP")->check(CLI::Range(1u, 4096u));
    std::vector<std::string> policies;  // the library's (path_policies())
    for (const omrc::PathPolicyInfo& p : omrc::path_policies()) policies.push_back(p.name);
    auto* policy_opt = app.add_option("--policy", o.policy, fmt::format("{}", fmt::join(policies, ", ")))
                           ->check(CLI::IsMember(policies));
    auto* mtu_opt =
        app.add_option("--mtu", o.mtu, "payload bytes per packet (64..4096, multiple of 64)")->check(CLI::Range(64u, 4096u));
    app.add_option("--config", config_file,
                   "device configuration file (TOML, docs/CONFIG.md): the driver, its options and the QP attributes "
                   "(the command line's --driver, --planes, --dev-arg, --eal, --evs, --policy, --mtu win)");
    app.add_option("--device", device_name, "the device of --config to use (default: its first)");
    app.add_option("--pcap", o.pcap, "write every frame the device sends and receives to this pcap file");
    app.add_option("--dev-arg", o.dev_args, "driver option key=value (repeatable), e.g. local=[::1]:14800");
    app.add_option("--oob_timeout_ms", o.oob_timeout_ms, "connect / peer reply timeout")->check(CLI::Range(100u, 600'000u));
    app.add_option("--qp_timeout_ms", o.qp_timeout_ms, "QP timeout (no progress for 8x this fails the test)")
        ->check(CLI::Range(1u, 60'000u));
    CLI11_PARSE(app, argc, argv);

    if (!device_name.empty() && config_file.empty()) {
        fmt::print(stderr, "omrc-perf: error: --device names a device of a --config file: give --config too\n");
        return 1;
    }
    if (!config_file.empty()) {
        omrc::perf::GivenOnCommandLine given;
        given.driver = driver_opt->count() > 0;
        given.planes = planes_opt->count() > 0;
        given.evs = evs_opt->count() > 0;
        given.policy = policy_opt->count() > 0;
        given.mtu = mtu_opt->count() > 0;
        if (auto e = omrc::perf::apply_config(config_file, device_name, given, o); !e.empty()) {
            fmt::print(stderr, "omrc-perf: error: {}\n", e);
            return 1;
        }
    }

    (void)test_from_string(test, o.test);  // CLI11 checked the name
    if (all) {
        for (std::uint32_t s = 2; s <= (1u << 23); s <<= 1) o.sizes.push_back(s);
    } else {
        o.sizes.push_back(size != 0 ? size : is_bw(o.test) ? 65536 : 2);
    }
    if (o.mtu % 64 != 0) {
        fmt::print(stderr, "omrc-perf: error: --mtu must be a multiple of 64\n");
        return 1;
    }
#ifndef OMRC_HAVE_DPDK
    if (o.driver == "dpdk") {
        fmt::print(stderr, "omrc-perf: error: this omrc-perf was built without the DPDK driver\n");
        return 1;
    }
#endif
    if (!o.eal.empty() && o.driver != "dpdk") {
        fmt::print(stderr, "omrc-perf: error: --eal applies to --driver dpdk only\n");
        return 1;
    }
    if (o.driver == "loopback") {
        if (!o.server.empty()) {
            fmt::print(stderr, "omrc-perf: error: --driver loopback runs both ends in this process: give no server host\n");
            return 1;
        }
        return run_loopback(o);
    }
    return omrc::perf::run(o);
}
