// SPDX-License-Identifier: BSD-3-Clause
// The main job on an embedded default: two OpenMRC devices on an in-process
// loopback fabric of 8 planes (100 Gb/s each, virtual time), ≥ 1 GiB of
// sprayed RDMA WRITEs through the public verbs API. Midway one plane is
// blackholed, later restored. Prints a per-plane throughput timeline and
// checks the destination byte for byte; exits non-zero if data is wrong.
//
//   loopback_demo [--bytes N] [--planes P] [--policy adaptive|spray|ecmp] [--dark-plane K]
//                 [--loss RATE] [--trim RATE] [--pcap FILE] [--pcap-peer FILE]
#include <isa-l/crc64.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "drivers/loopback/loopback.hpp"
#include "omrc/omrc.hpp"

namespace {

struct Side {
    std::unique_ptr<omrc::Device> dev;
    std::unique_ptr<omrc::Pd> pd;
    std::unique_ptr<omrc::Cq> cq;
    std::unique_ptr<omrc::Mr> mr;
    std::unique_ptr<omrc::Qp> qp;
};

[[noreturn]] void die(const char* what, int err) {
    std::fprintf(stderr, "loopback_demo: %s failed: %s\n", what, std::strerror(err));
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"OpenMRC demo: sprayed RDMA WRITEs over an 8-plane loopback fabric with a plane failure"};
    std::uint64_t bytes = 1ull << 30;
    std::uint32_t planes = 8, dark_plane = 3, msg_kib = 1024;
    std::string policy_name = "adaptive";
    std::uint64_t seed = 1;
    double bucket_us = 500;
    bool stats = false;
    double loss = 0, trim = 0;
    std::string pcap_a, pcap_b;
    app.add_option("--bytes", bytes, "bytes to transfer (default 1 GiB)")->check(CLI::Range(1ull << 20, 1ull << 34));
    app.add_option("--planes", planes, "planes (NIC ports), 100 Gb/s each")->check(CLI::Range(2, 15));
    app.add_option("--msg-kib", msg_kib, "WRITE size in KiB")->check(CLI::Range(4, 65536));
    app.add_option("--policy", policy_name, "path policy")->check(CLI::IsMember({"adaptive", "spray", "ecmp"}));
    app.add_option("--dark-plane", dark_plane, "plane blackholed in the middle of the run");
    app.add_option("--bucket-us", bucket_us, "timeline resolution in µs of virtual time");
    app.add_option("--seed", seed, "seed of the fabric, the engines and the data");
    app.add_flag("--stats", stats, "print the sender's counters (JSON) at the end");
    app.add_option("--loss", loss, "random loss on every link, both ways (0..0.5)")->check(CLI::Range(0.0, 0.5));
    app.add_option("--trim", trim, "share of data packets trimmed on every link (0..0.5)")->check(CLI::Range(0.0, 0.5));
    app.add_option("--pcap", pcap_a, "write every frame the sender sends and receives to this pcap file");
    app.add_option("--pcap-peer", pcap_b, "the same for the receiver");
    CLI11_PARSE(app, argc, argv);
    if (dark_plane >= planes) dark_plane = planes - 1;
    const std::size_t msg = std::size_t{msg_kib} << 10;
    bytes = (bytes + msg - 1) / msg * msg;
    const omrc::PathPolicy policy = policy_name == "spray" ? omrc::PathPolicy::spray
                                    : policy_name == "ecmp" ? omrc::PathPolicy::ecmp
                                                            : omrc::PathPolicy::adaptive;

    // The fabric: 2 endpoints, one 100 Gb/s link per plane each way, 1 µs away.
    omrc::loopback::FabricConfig fc;
    fc.endpoints = 2;
    fc.planes = planes;
    fc.seed = seed;
    fc.link_delay_ns = 1'000;
    fc.queue.rate_bps = 100'000'000'000;
    omrc::loopback::Fabric fabric(fc);
    omrc::loopback::Impairment impaired;
    impaired.loss.rate = loss;
    impaired.trim.rate = trim;
    if (loss > 0 || trim > 0) fabric.set_impairment_all(impaired);
    std::uint64_t vnow = 1'000'000;  // virtual ns, shared by the fabric and both devices

    Side s[2];
    for (int i = 0; i < 2; ++i) {
        omrc::DeviceOptions o;
        o.driver_context = &fabric;
        o.args["endpoint"] = std::to_string(i);
        o.seed = seed * 2 + static_cast<std::uint64_t>(i);
        o.clock = [&vnow] { return vnow; };
        const std::string& pcap = i == 0 ? pcap_a : pcap_b;
        if (!pcap.empty()) o.args["pcap"] = pcap;
        int err = 0;
        s[i].dev = omrc::Device::open("loopback", o, &err);
        if (!s[i].dev) die("Device::open", err);
        s[i].pd = s[i].dev->alloc_pd(&err);
        s[i].cq = s[i].dev->create_cq(4096, &err);
        if (!s[i].pd || !s[i].cq) die("alloc_pd/create_cq", err);
    }
    std::vector<std::uint8_t> src(bytes), dst(bytes, 0);
    {
        std::mt19937_64 rng(seed);
        for (std::size_t i = 0; i + 8 <= src.size(); i += 8) {
            const std::uint64_t x = rng();
            std::memcpy(src.data() + i, &x, 8);
        }
    }
    int err = 0;
    s[0].mr = s[0].pd->reg_mr(src.data(), src.size(), omrc::AccessFlags::local_write, &err);
    if (!s[0].mr) die("reg_mr(src)", err);
    s[1].mr = s[1].pd->reg_mr(dst.data(), dst.size(), omrc::AccessFlags::local_write | omrc::AccessFlags::remote_write, &err);
    if (!s[1].mr) die("reg_mr(dst)", err);
    for (auto& side : s) {
        omrc::QpInitAttr ia;
        ia.send_cq = ia.recv_cq = side.cq.get();
        ia.cap.max_send_wr = 1024;
        side.qp = side.pd->create_qp(ia, &err);
        if (!side.qp) die("create_qp", err);
        omrc::QpAttr a;
        a.qp_state = omrc::QpState::init;
        a.qp_access_flags = omrc::AccessFlags::remote_write;
        if ((err = side.qp->modify(a, omrc::QpAttrMask::state | omrc::QpAttrMask::access_flags))) die("modify(INIT)", err);
    }
    for (int i = 0; i < 2; ++i) {
        omrc::QpAttr a;
        a.qp_state = omrc::QpState::rtr;
        a.dest_qp_num = s[1 - i].qp->qp_num();
        a.dest_conn_id = s[1 - i].qp->conn_id();
        a.peer = s[1 - i].dev->address();
        a.path_policy = policy;
        a.evs = policy == omrc::PathPolicy::ecmp ? planes : 128;
        using M = omrc::QpAttrMask;
        if ((err = s[i].qp->modify(a, M::state | M::path | M::dest_qpn | M::rq_psn | M::mtu))) die("modify(RTR)", err);
        a.qp_state = omrc::QpState::rts;
        if ((err = s[i].qp->modify(a, M::state | M::sq_psn))) die("modify(RTS)", err);
    }

    // Time line: the dark plane goes dark at 30 % of the ideal transfer time
    // and comes back at 60 %.
    const double ideal_ns = static_cast<double>(bytes) * 8 / (static_cast<double>(planes) * 100e9) * 1e9;
    const std::uint64_t t0 = vnow;
    const std::uint64_t t_dark = t0 + static_cast<std::uint64_t>(0.3 * ideal_ns);
    const std::uint64_t t_back = t0 + static_cast<std::uint64_t>(0.6 * ideal_ns);
    omrc::loopback::Impairment black;
    black.blackhole = true;
    black.loss = impaired.loss;  // the dark plane keeps the other impairments when it returns
    black.trim = impaired.trim;
    fabric.schedule_impairment(t_dark, 0, 1, dark_plane, black);
    fabric.schedule_impairment(t_back, 0, 1, dark_plane, (loss > 0 || trim > 0) ? impaired : omrc::loopback::Impairment{});

    std::printf("OpenMRC loopback demo: %.2f GiB as %zu KiB WRITEs, %u planes x 100 Gb/s, policy %s\n",
                static_cast<double>(bytes) / (1 << 30), msg >> 10, planes, policy_name.c_str());
    std::printf("plane %u blackholed at %.0f us, restored at %.0f us (virtual time)\n\n", dark_plane,
                (t_dark - t0) / 1e3, (t_back - t0) / 1e3);
    std::printf("%9s", "t (us)");
    for (std::uint32_t p = 0; p < planes; ++p) std::printf("   p%-3u", p);
    std::printf("   total Gb/s\n");

    const std::size_t messages = bytes / msg;
    std::size_t posted = 0, completed = 0;
    bool failed = false;
    const auto bucket_ns = static_cast<std::uint64_t>(bucket_us * 1e3);
    std::uint64_t next_bucket = t0 + bucket_ns;
    std::vector<std::uint64_t> last(planes, 0);
    std::vector<omrc::Wc> wc(256);
    auto print_bucket = [&](std::uint64_t at) {
        std::printf("%9.0f", (at - t0) / 1e3);
        double total = 0;
        for (std::uint32_t p = 0; p < planes; ++p) {
            const std::uint64_t d = fabric.link_counters(0, 1, p).delivered;
            const double gbps = static_cast<double>(d - last[p]) * 4096 * 8 / static_cast<double>(bucket_ns);
            last[p] = d;
            total += gbps;
            std::printf(" %6.1f", gbps);
        }
        std::printf("   %6.1f\n", total);
    };
    while (completed < messages && !failed) {
        while (posted < messages && posted - completed < 32) {
            const omrc::Sge sge{reinterpret_cast<std::uint64_t>(src.data()) + posted * msg,
                                static_cast<std::uint32_t>(msg), s[0].mr->lkey()};
            omrc::SendWr wr;
            wr.wr_id = posted;
            wr.send_flags = omrc::SendFlags::signaled;
            wr.sg_list = std::span(&sge, 1);
            wr.remote_addr = reinterpret_cast<std::uint64_t>(dst.data()) + posted * msg;
            wr.rkey = s[1].mr->rkey();
            if ((err = s[0].qp->post_send(wr))) die("post_send", err);
            ++posted;
        }
        s[0].dev->progress();
        s[1].dev->progress();
        const std::size_t n = s[0].cq->poll(wc);
        for (std::size_t k = 0; k < n; ++k) {
            if (wc[k].status != omrc::WcStatus::success) {
                std::fprintf(stderr, "loopback_demo: WR %llu completed with %s\n",
                             static_cast<unsigned long long>(wc[k].wr_id), omrc::to_string(wc[k].status));
                failed = true;
            }
            ++completed;
        }
        // Jump to the next thing that has to happen.
        std::uint64_t next = std::min({s[0].dev->next_wakeup_ns(), s[1].dev->next_wakeup_ns(), fabric.next_event_ns()});
        if (next <= vnow) next = vnow + 1;
        while (next_bucket <= next && next_bucket <= vnow + 1) {
            print_bucket(next_bucket);
            next_bucket += bucket_ns;
        }
        if (next == UINT64_MAX) break;
        vnow = std::max(vnow, std::min(next, next_bucket));
    }
    print_bucket(vnow);
    const double secs = static_cast<double>(vnow - t0) / 1e9;
    const std::uint64_t crc_src = crc64_ecma_refl(0, src.data(), src.size());
    const std::uint64_t crc_dst = crc64_ecma_refl(0, dst.data(), dst.size());
    const bool exact = !failed && completed == messages && src == dst;
    std::printf("\n%zu/%zu WRITEs completed in %.3f ms of virtual time: %.1f Gb/s (ideal %.1f Gb/s)\n", completed,
                messages, secs * 1e3, static_cast<double>(bytes) * 8 / secs / 1e9, planes * 100.0);
    std::printf("digest (CRC-64/ECMA) source %016llx destination %016llx: %s\n",
                static_cast<unsigned long long>(crc_src), static_cast<unsigned long long>(crc_dst),
                exact ? "byte-exact" : "MISMATCH");
    if (stats) std::printf("%s\n", s[0].dev->stats_json().c_str());
    return exact ? 0 : 1;
}
