// SPDX-License-Identifier: BSD-3-Clause
// perftest-shaped tables and the JSON report.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "perf.hpp"

namespace omrc::perf {

namespace {
constexpr const char* kRule =
    "---------------------------------------------------------------------------------------";
}

const char* to_string(Test t) {
    switch (t) {
        case Test::write_bw: return "write_bw";
        case Test::write_lat: return "write_lat";
        case Test::send_bw: return "send_bw";
        case Test::send_lat: return "send_lat";
        case Test::read_bw: return "read_bw";
        case Test::read_lat: return "read_lat";
    }
    return "write_bw";
}

bool test_from_string(const std::string& name, Test& out) {
    for (Test t : {Test::write_bw, Test::write_lat, Test::send_bw, Test::send_lat, Test::read_bw, Test::read_lat})
        if (name == to_string(t)) {
            out = t;
            return true;
        }
    return false;
}

nlohmann::json to_json(const Result& r) {
    return {{"bytes", r.bytes},       {"iterations", r.iterations}, {"bw_peak", r.bw_peak},
            {"bw_avg", r.bw_avg},     {"msg_rate_mpps", r.msg_rate_mpps},
            {"t_min_us", r.t_min},    {"t_max_us", r.t_max},        {"t_typical_us", r.t_typical},
            {"t_avg_us", r.t_avg},    {"t_stdev_us", r.t_stdev},    {"p99_us", r.p99},
            {"p999_us", r.p999}};
}

bool from_json(const nlohmann::json& j, Result& r) {
    try {
        r.bytes = j.at("bytes").get<std::uint32_t>();
        r.iterations = j.at("iterations").get<std::uint64_t>();
        r.bw_peak = j.at("bw_peak").get<double>();
        r.bw_avg = j.at("bw_avg").get<double>();
        r.msg_rate_mpps = j.at("msg_rate_mpps").get<double>();
        r.t_min = j.at("t_min_us").get<double>();
        r.t_max = j.at("t_max_us").get<double>();
        r.t_typical = j.at("t_typical_us").get<double>();
        r.t_avg = j.at("t_avg_us").get<double>();
        r.t_stdev = j.at("t_stdev_us").get<double>();
        r.p99 = j.at("p99_us").get<double>();
        r.p999 = j.at("p999_us").get<double>();
        return true;
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

void print_header(const Options& o, const std::string& role, std::uint32_t planes) {
    if (o.quiet) return;
    fmt::print("{}\n", kRule);
    fmt::print("                    {} {} Test ({})\n", is_send(o.test) ? "Send" : is_read(o.test) ? "RDMA_Read" : "RDMA_Write",
               is_bw(o.test) ? "BW" : "Latency", role);
    fmt::print(" Driver         : {}\t\tPlanes         : {}\n", o.driver, planes);
    if (!o.config.empty())
        fmt::print(" Config         : {} (device {}, frame mode {})\n", o.config, o.device,
                   o.device_options.frame_mode == FrameMode::srv6 ? "srv6" : "plain");
    fmt::print(" Number of qps  : {}\t\tTransport type : OpenMRC (multipath RC)\n", o.qps);
    fmt::print(" Path policy    : {}\t\tActive EVs     : {}\n", o.policy, o.evs);
    fmt::print(" Mtu            : {}[B]\t\tTX depth       : {}\n", o.mtu, o.tx_depth);
    if (o.duration_s > 0)
        fmt::print(" Duration       : {} s per size\n", o.duration_s);
    if (is_read(o.test) && !is_bw(o.test))
        fmt::print(" One READ at a time: send completion; times are whole round trips\n");
    else if (!is_bw(o.test))
        fmt::print(" Ping-pong      : {}, receive completion; times are half round trips\n",
                   is_send(o.test) ? "SEND" : "WRITE_WITH_IMM");
    fmt::print("{}\n", kRule);
    if (is_bw(o.test)) {
        const char* unit = o.report_gbits ? "Gb/sec" : "MB/sec";
        fmt::print(" #bytes     #iterations    BW peak[{}]    BW average[{}]   MsgRate[Mpps]\n", unit, unit);
    } else {
        fmt::print(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                   "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n");
    }
    std::fflush(stdout);
}

void print_row(const Options& o, const Result& r) {
    if (o.quiet) return;
    if (is_bw(o.test)) {
        fmt::print(" {:<10} {:<10}       {:<15.2f}    {:<15.2f}      {:.6f}\n", r.bytes, r.iterations, r.bw_peak,
                   r.bw_avg, r.msg_rate_mpps);
    } else {
        fmt::print(" {:<6} {:<10}     {:<10.2f}     {:<10.2f}   {:<10.2f}         {:<10.2f}     {:<10.2f}      "
                   "{:<10.2f}             {:<10.2f}\n",
                   r.bytes, r.iterations, r.t_min, r.t_max, r.t_typical, r.t_avg, r.t_stdev, r.p99, r.p999);
    }
    std::fflush(stdout);
}

void print_footer(const Options& o) {
    if (o.quiet) return;
    fmt::print("{}\n", kRule);
    std::fflush(stdout);
}

std::string write_json(const Options& o, const std::vector<Result>& results, std::uint32_t planes) {
    if (o.out_json.empty()) return {};
    nlohmann::json rows = nlohmann::json::array();
    static const std::vector<std::string> kLatFields{"t_min_us", "t_max_us", "t_typical_us", "t_avg_us",
                                                     "t_stdev_us", "p99_us", "p999_us"};
    static const std::vector<std::string> kBwFields{"bw_peak", "bw_avg", "msg_rate_mpps"};
    for (const Result& r : results) {
        nlohmann::json row = to_json(r);  // keep the fields of this test only
        for (const std::string& k : is_bw(o.test) ? kLatFields : kBwFields) row.erase(k);
        rows.push_back(std::move(row));
    }
    nlohmann::json doc = {
        {"test", to_string(o.test)},
        {"driver", o.driver},
        {"planes", planes},
        {"qps", o.qps},
        {"policy", o.policy},
        {"evs", o.evs},
        {"mtu", o.mtu},
        {"backup_evs", o.backup_evs},
        {"mpr", o.mpr},
        {"cc", to_string(o.cc.algorithm)},
        {"tx_depth", o.tx_depth},
        {"bw_unit", o.report_gbits ? "Gb/sec" : "MB/sec"},
        {"results", std::move(rows)},
    };
    if (!o.config.empty()) {
        doc["config"] = o.config;
        doc["device"] = o.device;
    }
    std::ofstream f(o.out_json);
    if (!f) return fmt::format("cannot write {}", o.out_json);
    f << doc.dump(2) << '\n';
    return f.good() ? std::string{} : fmt::format("cannot write {}", o.out_json);
}

}  // namespace omrc::perf
