// SPDX-License-Identifier: BSD-3-Clause
// omrc-perf: perftest-shaped RDMA WRITE bandwidth and latency tests over the
// OpenMRC verbs API (docs/PERF.md).
#pragma once

#include <any>
#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "omrc/verbs.hpp"

namespace omrc::perf {

/// write_bw / write_lat as perftest's ib_write_*; send_bw / send_lat as its
/// ib_send_*: SEND into receives the server keeps posted; read_bw / read_lat
/// as its ib_read_*: the client READs the server's buffer (the server only progresses).
enum class Test : std::uint8_t { write_bw, write_lat, send_bw, send_lat, read_bw, read_lat };
const char* to_string(Test t);
/// "write_bw" … "send_lat" to a Test; false for another name.
bool test_from_string(const std::string& name, Test& out);
/// A bandwidth test (write_bw, send_bw) rather than a latency ping-pong.
[[nodiscard]] constexpr bool is_bw(Test t) noexcept {
    return t == Test::write_bw || t == Test::send_bw || t == Test::read_bw;
}
/// RDMA READ by the client (read_bw, read_lat): the server posts nothing.
[[nodiscard]] constexpr bool is_read(Test t) noexcept { return t == Test::read_bw || t == Test::read_lat; }
/// Carried by SEND / RECV rather than WRITE (send_bw, send_lat).
[[nodiscard]] constexpr bool is_send(Test t) noexcept { return t == Test::send_bw || t == Test::send_lat; }

struct Options {
    Test test = Test::write_bw;
    std::string server;                 ///< empty: this process is the server
    std::vector<std::uint32_t> sizes;   ///< message sizes, bytes
    std::uint64_t iters = 0;            ///< per size (0: the test's default)
    double duration_s = 0;              ///< > 0: run each size this long instead of `iters`
    std::uint32_t qps = 1;
    std::uint32_t tx_depth = 0;         ///< outstanding WRs per QP (0: the test's default)
    bool report_gbits = false;
    bool check = false;                 ///< write_bw, send_bw: verify the server's memory (CRC-64) after each size
    /// --cm: the QPs are connected by OpenMRC's connection manager over the
    /// fabric (QPNs, PSNs, MTU and keys in its messages); the TCP connection
    /// then carries only the run's control. The client's choice rules.
    bool cm = false;
    std::string out_json;
    std::string stats_json;  ///< --stats: Device::stats_json() written here after the run
    std::uint32_t stats_interval_ms = 0;  ///< --stats-interval: write_bw prints a per-plane line this often (0: never)
    std::uint16_t port = 18515;
    std::string driver = "udp";
    std::string eal;
    std::string pcap;                 ///< --pcap: capture the device's frames (a second in-process device: FILE-peer.pcap)
    std::uint32_t planes = 0;           ///< 0: the driver's default
    std::uint32_t evs = 128;
    std::string policy = to_string(PathPolicy::adaptive);
    std::uint32_t mtu = 4096;
    std::vector<std::string> dev_args;  ///< key=value for DeviceOptions::args
    std::uint32_t workers = 0;          ///< --workers: DeviceOptions::workers (0: the configuration's, or 1)
    std::vector<int> cpus;              ///< --cpus: DeviceOptions::cpus
    /// --encrypt: DeviceOptions::security.encryption ("": the configuration's, or off).
    std::string encrypt;
    /// --master-key-file: 64 hex digits, master key 0 (both ends must hold the same).
    std::string master_key_file;
    /// --config FILE / --device NAME (config.cpp): where the device came from ("" without --config).
    std::string config, device;
    /// The device's options before --dev-arg, --eal, --pcap and --planes
    /// apply: the configuration's device, or DeviceOptions' defaults.
    DeviceOptions device_options;
    // QP attributes beyond the command line's (the configuration's qp table).
    std::uint32_t backup_evs = 32;
    std::uint32_t mpr = 8;
    CcConfig cc{};
    std::uint32_t oob_timeout_ms = 5000;  ///< connect and every wait for the peer's next message
    std::uint32_t qp_timeout_ms = 200;    ///< QpAttr::timeout_ns (× retry_cnt+1 without progress → error)
    bool quiet = false;                   ///< print nothing (the in-process loopback server)
    /// In-process driver context (loopback fabric) and its endpoint.
    std::any driver_context;
    std::uint32_t endpoint = 0;
};

/// One size's result, as measured by the client.
struct Result {
    std::uint32_t bytes = 0;
    std::uint64_t iterations = 0;
    // write_bw (MB/sec = 2^20 bytes/s, or Gb/sec = 10^9 bits/s with report_gbits)
    double bw_peak = 0, bw_avg = 0, msg_rate_mpps = 0;
    // write_lat, microseconds, half round trip
    double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_stdev = 0, p99 = 0, p999 = 0;
};
nlohmann::json to_json(const Result& r);
bool from_json(const nlohmann::json& j, Result& r);

/// Which of the options the configuration may set were given on the command line.
struct GivenOnCommandLine {
    bool driver = false, planes = false, evs = false, policy = false, mtu = false;
};
/// --config FILE [--device NAME] (config.cpp): the device's driver and
/// DeviceOptions, and its QP attributes, into `o`, except what the command
/// line gave. "" or the error.
std::string apply_config(const std::string& file, const std::string& device, const GivenOnCommandLine& given,
                         Options& o);

/// Runs the server or the client role; returns the process exit status.
/// The server stores the port it listens on into *bound_port_out (if given).
int run(const Options& o, std::atomic<std::uint16_t>* bound_port_out = nullptr);

// report.cpp
void print_header(const Options& o, const std::string& role, std::uint32_t planes);
void print_row(const Options& o, const Result& r);
void print_footer(const Options& o);
/// Writes the JSON report to o.out_json (if set). Returns "" or the error.
std::string write_json(const Options& o, const std::vector<Result>& results, std::uint32_t planes);

}  // namespace omrc::perf
