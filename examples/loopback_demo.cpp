// SPDX-License-Identifier: BSD-3-Clause
// The main job on an embedded default: two OpenMRC devices on an in-process
// loopback fabric of 8 planes (100 Gb/s each, virtual time), ≥ 1 GiB of
// sprayed RDMA WRITEs through the public verbs API. Midway one plane is
// blackholed, later restored. Prints a per-plane throughput timeline and
// checks the destination byte for byte; exits non-zero if data is wrong.
//
//   loopback_demo [--bytes N] [--planes P] [--policy adaptive|spray|ecmp] [--dark-plane K]
//                 [--outages D,B[,D,B...]] [--loss RATE] [--trim RATE] [--pcap FILE] [--pcap-peer FILE]
//
// The transfer itself is examples/demo_scenario.cpp (the fault tier runs it too).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>

#include "demo_scenario.hpp"

int main(int argc, char** argv) {
    CLI::App app{"OpenMRC demo: sprayed RDMA WRITEs over an 8-plane loopback fabric with a plane failure"};
    omrc::demo::Options o;
    std::string policy_name = omrc::to_string(omrc::PathPolicy::adaptive);
    double bucket_us = 500;
    bool stats = false;
    std::vector<double> outages;
    app.add_option("--bytes", o.bytes, "bytes to transfer (default 1 GiB)")->check(CLI::Range(1ull << 20, 1ull << 34));
    app.add_option("--planes", o.planes, "planes (NIC ports), 100 Gb/s each")->check(CLI::Range(2, 15));
    app.add_option("--msg-kib", o.msg_kib, "WRITE size in KiB")->check(CLI::Range(4, 65536));
    std::vector<std::string> policies;  // the library's (path_policies())
    for (const omrc::PathPolicyInfo& p : omrc::path_policies()) policies.push_back(p.name);
    app.add_option("--policy", policy_name, "path policy")->check(CLI::IsMember(policies));
    app.add_option("--dark-plane", o.dark_plane, "plane blackholed in the middle of the run");
    app.add_option("--outages", outages,
                   "when the dark plane goes dark and comes back, as fractions of the ideal transfer time "
                   "(pairs: --outages 0.2,0.35,0.5,0.65; default 0.3,0.6)")
        ->delimiter(',')
        ->check(CLI::Range(0.0, 10.0));
    app.add_option("--bucket-us", bucket_us, "timeline resolution in µs of virtual time");
    app.add_option("--seed", o.seed, "seed of the fabric, the engines and the data");
    app.add_flag("--stats", stats, "print the sender's counters (JSON) at the end");
    app.add_option("--loss", o.loss, "random loss on every link, both ways (0..0.5)")->check(CLI::Range(0.0, 0.5));
    app.add_option("--trim", o.trim, "share of data packets trimmed on every link (0..0.5)")->check(CLI::Range(0.0, 0.5));
    app.add_option("--pcap", o.pcap_sender, "write every frame the sender sends and receives to this pcap file");
    app.add_option("--pcap-peer", o.pcap_receiver, "the same for the receiver");
    CLI11_PARSE(app, argc, argv);
    if (!outages.empty()) {
        if (outages.size() % 2 != 0) {
            std::fprintf(stderr, "loopback_demo: --outages takes pairs (dark, back)\n");
            return 2;
        }
        o.outages.clear();
        for (std::size_t i = 0; i < outages.size(); i += 2) {
            if (outages[i + 1] <= outages[i]) {
                std::fprintf(stderr, "loopback_demo: an outage must end after it starts (%g, %g)\n", outages[i],
                             outages[i + 1]);
                return 2;
            }
            o.outages.push_back({outages[i], outages[i + 1]});
        }
    }
    if (o.dark_plane >= o.planes) o.dark_plane = o.planes - 1;
    (void)omrc::path_policy_by_name(policy_name, &o.policy);  // a member of policies (checked above)
    o.bucket_ns = static_cast<std::uint64_t>(bucket_us * 1e3);
    const std::uint64_t msg = std::uint64_t{o.msg_kib} << 10;
    const std::uint64_t bytes = (o.bytes + msg - 1) / msg * msg;
    const double ideal_ns = static_cast<double>(bytes) * 8 / (o.planes * 100e9) * 1e9;

    std::printf("OpenMRC loopback demo: %.2f GiB as %llu KiB WRITEs, %u planes x 100 Gb/s, policy %s\n",
                static_cast<double>(bytes) / (1 << 30), static_cast<unsigned long long>(msg >> 10), o.planes,
                policy_name.c_str());
    for (const omrc::demo::Outage& out : o.outages)
        std::printf("plane %u blackholed at %.0f us, restored at %.0f us (virtual time)\n", o.dark_plane,
                    std::floor(out.dark_at * ideal_ns) / 1e3, std::floor(out.back_at * ideal_ns) / 1e3);
    std::printf("\n%9s", "t (us)");
    for (std::uint32_t p = 0; p < o.planes; ++p) std::printf("   p%-3u", p);
    std::printf("   total Gb/s\n");
    const omrc::demo::Result r = omrc::demo::run(o, [](const omrc::demo::Bucket& b) {
        std::printf("%9.0f", b.end_ns / 1e3);
        double total = 0;
        for (double g : b.gbps) {
            std::printf(" %6.1f", g);
            total += g;
        }
        std::printf("   %6.1f\n", total);
    });
    if (!r.error.empty()) std::fprintf(stderr, "loopback_demo: %s\n", r.error.c_str());
    std::printf("\n%zu/%zu WRITEs completed in %.3f ms of virtual time: %.1f Gb/s (ideal %.1f Gb/s)\n", r.completed,
                r.messages, r.elapsed_ns / 1e6, r.gbps(), o.planes * 100.0);
    std::printf("digest (CRC-64/ECMA) source %016llx destination %016llx: %s\n",
                static_cast<unsigned long long>(r.crc_source), static_cast<unsigned long long>(r.crc_destination),
                r.byte_exact ? "byte-exact" : "MISMATCH");
    if (stats) std::printf("%s\n", r.sender_stats_json.c_str());
    if (r.messages == 0 && !r.error.empty()) return 2;  // setup failed
    return r.byte_exact ? 0 : 1;
}
