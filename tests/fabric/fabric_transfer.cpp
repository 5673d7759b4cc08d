// SPDX-License-Identifier: BSD-3-Clause
// The OpenMRC half of the real SRv6 uSID fabric test (tests/fabric/usid_clos.sh,
// docs/FABRIC-TEST.md). Two devices over DPDK ports (one port per plane) attached
// to a Clos of Linux SRv6 routers; the sender sprays RDMA WRITEs over every
// plane and T1 path through the public verbs API while the fabric fails:
//
//   1. a T0–T1 link goes down (--link-down-cmd): the transfer goes on, the
//      EVs through that link are retired, throughput recovers;
//   2. a whole port of the receiver goes down (--plane-down-cmd): its driver
//      sees the link go down, its engine marks the plane down and tells the
//      sender (port status), and the sender stops sending on that plane.
//
// Prints a throughput timeline and the measured figures, and checks: the
// destination is byte-exact, the EVs through the failed link were retired,
// throughput came back, the sender stopped using the failed plane.
// Exit status: 0 passed, 1 a check failed, 2 setup error.
#include <isa-l/crc64.h>
#include <spawn.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#ifdef OMRC_FABRIC_DPDK
#include "omrc/dpdk.hpp"
#endif
#include "omrc/omrc.hpp"
#include "support/transfer.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

struct Side {
    std::unique_ptr<omrc::Device> dev;
};

[[noreturn]] void die(const char* what, int err) {
    std::fprintf(stderr, "fabric_transfer: %s failed: %s\n", what, std::strerror(err));
    std::exit(2);
}

/// One EV slot of the sender's QP, as stats_json() shows it.
struct Slot {
    std::uint32_t ev = 0;
    std::uint32_t plane = 0;
    std::uint64_t sent = 0;
    std::uint64_t retirements = 0;
    bool parked = false;
};

/// The counters the checks use, from one stats_json() snapshot.
struct View {
    std::vector<Slot> slots;
    std::uint64_t ev_retirements = 0, ev_timeouts = 0, resent = 0, bytes_received = 0;
    std::uint64_t port_status_sent = 0, port_status_received = 0;
    std::uint32_t local_plane_mask = 0;
    std::vector<bool> link_up;
    std::vector<std::uint32_t> assumed_bad;
    json doc;

    [[nodiscard]] std::uint64_t plane_sent(std::uint32_t p) const {
        std::uint64_t n = 0;
        for (const Slot& s : slots)
            if (s.plane == p) n += s.sent;
        return n;
    }
};

View view(const omrc::Device& d) {
    View v;
    v.doc = json::parse(d.stats_json());
    const json& e = v.doc["engine"];
    v.port_status_sent = e.value("port_status_sent", 0ull);
    v.port_status_received = e.value("port_status_received", 0ull);
    v.local_plane_mask = e.value("local_plane_mask", 0u);
    for (const auto& up : v.doc["driver"]["link_up"]) v.link_up.push_back(up.get<bool>());
    if (!v.doc["qps"].empty()) {
        const json& q = v.doc["qps"][0];
        const json& s = q["stats"];
        v.ev_retirements = s.value("ev_retirements", 0ull);
        v.ev_timeouts = s.value("ev_timeouts", 0ull);
        v.resent = s.value("data_pkts_resent", 0ull);
        v.bytes_received = s.value("data_bytes_received", 0ull);
        for (const auto& ev : q["paths"]["evs"])
            v.slots.push_back({ev["ev"].get<std::uint32_t>(), ev["plane"].get<std::uint32_t>(),
                               ev["sent"].get<std::uint64_t>(), ev["retirements"].get<std::uint64_t>(),
                               ev.value("parked", false)});
        for (const auto& b : q["paths"]["assumed_bad"]) v.assumed_bad.push_back(b["ev"].get<std::uint32_t>());
    }
    return v;
}

// EV layout for SRv6 fabrics (lib/routing/fabric.hpp): EV[31:28] = plane + 1, EV[27:16] = path.
std::uint32_t ev_plane(std::uint32_t ev) { return (ev >> 28) - 1; }
std::uint32_t ev_t1(std::uint32_t ev, std::uint32_t t1s) { return ((ev >> 16) & 0xFFF) % t1s; }

/// A fabric command (ip link set ... down) started without stopping the
/// progress loop; reaped later.
struct Command {
    pid_t pid = -1;
    std::string text;
    bool start(const std::string& cmd) {
        text = cmd;
        const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
        if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char* const*>(argv), environ) != 0) {
            pid = -1;
            return false;
        }
        return true;
    }
    /// -1 still running, else the exit status (0 = success).
    int poll(bool wait = false) {
        if (pid < 0) return 0;
        int st = 0;
        const pid_t r = waitpid(pid, &st, wait ? 0 : WNOHANG);
        if (r == 0) return -1;
        pid = -1;
        return (r > 0 && WIFEXITED(st)) ? WEXITSTATUS(st) : 1;
    }
};

int run_blocking(const std::string& cmd) {
    Command c;
    if (!c.start(cmd)) return 1;
    return c.poll(true);
}

struct Sample {
    double t = 0;                 ///< seconds since the transfer started (end of the interval)
    double gbps = 0;              ///< bytes placed at the receiver in the interval
    std::vector<std::uint64_t> plane_pkts;  ///< sender data packets per plane in the interval
    std::uint64_t retirements = 0;          ///< sender's EV retirements so far
    const char* mark = "";
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"OpenMRC transfer across a Linux SRv6 uSID fabric, with a link and a plane failing"};
    std::string eal, ports_a, ports_b, nh_a, nh_b, link_down_cmd, plane_down_cmd, on_open_cmd, stats_out;
    std::uint32_t planes = 2, t0 = 2, t1 = 2, hosts_per_t0 = 1, host_a = 0, host_b = 1;
    std::uint64_t bytes = 256ull << 20;
    std::uint32_t msg_kib = 256, depth = 16, mtu = 4096, evs = 64, window_kib = 256;
    std::uint32_t failed_plane = 0, failed_t1 = 1, down_plane = 1;
    double link_down_at = 0.3, plane_down_at = 0.65, recover_fraction = 0.5, interval_ms = 25, timeout_s = 120;
    double ev_timeout_us = 4000, grace_ms = 20;
    std::string policy_name = "adaptive";
#ifdef OMRC_FABRIC_DPDK
    std::string driver = "dpdk";
#else
    std::string driver = "udp";
#endif
    std::uint64_t seed = 1;
    app.add_option("--driver", driver, "dpdk (ports: DPDK ports) or udp (srv6 mode; ports: interfaces)")
        ->check(CLI::IsMember({"dpdk", "udp"}));
    app.add_option("--eal", eal, "EAL arguments (ports as --vdev; dpdk only)");
    app.add_option("--ports-a", ports_a, "sender's ports, one per plane (dpdk: DPDK ports; udp: interfaces)")->required();
    app.add_option("--ports-b", ports_b, "receiver's ports, one per plane")->required();
    app.add_option("--next-hop-a", nh_a, "sender's next-hop MACs (its T0's ports), one per plane")->required();
    app.add_option("--next-hop-b", nh_b, "receiver's next-hop MACs, one per plane")->required();
    app.add_option("--planes", planes)->check(CLI::Range(2, 15));
    app.add_option("--t0", t0);
    app.add_option("--t1", t1)->check(CLI::Range(2, 1024));
    app.add_option("--hosts-per-t0", hosts_per_t0);
    app.add_option("--host-a", host_a, "sender's host index in the fabric");
    app.add_option("--host-b", host_b, "receiver's host index (on another T0: every packet crosses a T1)");
    app.add_option("--bytes", bytes, "bytes to WRITE")->check(CLI::Range(1ull << 20, 1ull << 34));
    app.add_option("--msg-kib", msg_kib, "WRITE size in KiB")->check(CLI::Range(4, 65536));
    app.add_option("--depth", depth, "WRITEs outstanding")->check(CLI::Range(1, 1024));
    app.add_option("--mtu", mtu, "payload bytes per packet")->check(CLI::Range(256, 4096));
    app.add_option("--evs", evs, "active EVs of the QP (split over the planes)");
    app.add_option("--window-kib", window_kib, "fixed congestion window (0: NSCC)");
    app.add_option("--policy", policy_name)->check(CLI::IsMember({"adaptive", "spray"}));
    app.add_option("--ev-timeout-us", ev_timeout_us, "an EV whose oldest packet is older has failed");
    app.add_option("--on-open", on_open_cmd, "command run once both devices are open (e.g. wire their ports)");
    app.add_option("--link-down-cmd", link_down_cmd, "command that downs the T0-T1 link");
    app.add_option("--failed-plane", failed_plane, "plane of that link");
    app.add_option("--failed-t1", failed_t1, "T1 of that link (the sender's T0 uplink to it)");
    app.add_option("--link-down-at", link_down_at, "fraction of the bytes placed when the link goes down");
    app.add_option("--plane-down-cmd", plane_down_cmd, "command that downs a port of the receiver (empty: skip)");
    app.add_option("--down-plane", down_plane, "plane of that port");
    app.add_option("--plane-down-at", plane_down_at, "fraction of the bytes placed when the port goes down");
    app.add_option("--recover-fraction", recover_fraction, "throughput after the link failure, as a fraction of before");
    app.add_option("--grace-ms", grace_ms, "sends on a plane may still leave this long after the peer is told");
    app.add_option("--interval-ms", interval_ms, "timeline resolution");
    app.add_option("--timeout-s", timeout_s, "give up after");
    app.add_option("--seed", seed);
    app.add_option("--stats-out", stats_out, "write both devices' final stats_json() here");
    CLI11_PARSE(app, argc, argv);
    if (failed_plane >= planes || down_plane >= planes || failed_t1 >= t1 || !(link_down_at < plane_down_at)) {
        std::fprintf(stderr, "fabric_transfer: inconsistent failure options\n");
        return 2;
    }
    const std::size_t msg = std::size_t{msg_kib} << 10;
    bytes = (bytes + msg - 1) / msg * msg;

#ifdef OMRC_FABRIC_DPDK
    if (driver == "dpdk") omrc::dpdk::register_driver();
#else
    if (driver == "dpdk") {
        std::fprintf(stderr, "fabric_transfer: built without the DPDK driver\n");
        return 77;
    }
#endif
    if (driver == "dpdk" && eal.empty()) {
        std::fprintf(stderr, "fabric_transfer: --eal is required with --driver dpdk\n");
        return 2;
    }
    Side s[2];
    const std::string ports[2] = {ports_a, ports_b};
    const std::string nh[2] = {nh_a, nh_b};
    const std::uint32_t hosts[2] = {host_a, host_b};
    for (int i = 0; i < 2; ++i) {
        omrc::DeviceOptions o;
        if (driver == "dpdk") {
            if (i == 0) o.args["eal"] = eal;  // the second device attaches to the EAL the first one started
            o.args["ports"] = ports[i];
        } else {
            o.args["ifaces"] = ports[i];  // the udp driver's SRv6 mode: one raw socket per interface
        }
        o.args["next_hop_macs"] = nh[i];
        o.planes = planes;
        o.frame_mode = omrc::FrameMode::srv6;
        o.fabric = {0xFCBB0000, planes, t0, t1, hosts_per_t0};
        o.local_host = hosts[i];
        // A global (ULA) source: Linux routers do not forward link-local sources.
        o.local_addr = {0xfd, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, static_cast<std::uint8_t>(0xa0 + i)};
        o.seed = seed * 2 + static_cast<std::uint64_t>(i);
        o.ev_timeout_ns = static_cast<std::uint64_t>(ev_timeout_us * 1e3);
        o.probe_interval_ns = 1'000'000;
        o.port_status_repeat_ns = 1'000'000;
        int err = 0;
        s[i].dev = omrc::Device::open(driver, o, &err);
        if (!s[i].dev) die(("Device::open(" + driver + ")").c_str(), err);
    }
    if (!on_open_cmd.empty()) {
        if (const int rc = run_blocking(on_open_cmd); rc != 0) {
            std::fprintf(stderr, "fabric_transfer: --on-open command failed (%d): %s\n", rc, on_open_cmd.c_str());
            return 2;
        }
    }

    // The transfer (tests/support/transfer.hpp): its loop posts, progresses
    // both devices and polls; the monitors below run after every pass.
    omrc::test::TransferSpec spec;
    spec.bytes = bytes;
    spec.msg_bytes = msg;
    spec.depth = depth;
    spec.seed = seed;
    spec.cqe = 4096;
    spec.cap.max_send_wr = 1024;
    spec.stop_on_error = true;
    spec.timeout = std::chrono::hours(24);  // the monitors give up first (--timeout-s, no progress)
    omrc::QpAttr& qa = spec.qp;
    qa.path_policy = policy_name == "spray" ? omrc::PathPolicy::spray : omrc::PathPolicy::adaptive;
    qa.evs = evs;
    qa.backup_evs = 16;
    qa.mtu_bytes = mtu;
    qa.timeout_ns = 100'000'000;
    qa.retry_cnt = 7;
    if (window_kib != 0) {
        qa.cc.algorithm = omrc::CcAlgorithm::fixed;
        qa.cc.fixed_window_bytes = std::uint64_t{window_kib} << 10;
    }
    omrc::test::WriteTransfer xfer(*s[0].dev, *s[1].dev, spec);
    if (const auto& r = xfer.result(); r.setup_error != 0) die(r.setup_step.c_str(), r.setup_error);
    const std::vector<std::uint8_t>& src = xfer.source();
    const std::vector<std::uint8_t>& dst = xfer.destination();

    std::printf("fabric_transfer: %.0f MiB as %zu KiB WRITEs, %u planes x %u T1, MTU %u, %u EVs, policy %s, window %s\n",
                static_cast<double>(bytes) / (1 << 20), msg >> 10, planes, t1, mtu, evs, policy_name.c_str(),
                window_kib ? (std::to_string(window_kib) + " KiB").c_str() : "NSCC");
    std::printf("  link down (plane %u, T0 of host %u <-> T1 %u) at %.0f %%: %s\n", failed_plane, host_a, failed_t1,
                link_down_at * 100, link_down_cmd.empty() ? "(none)" : link_down_cmd.c_str());
    std::printf("  receiver port of plane %u down at %.0f %%: %s\n\n", down_plane, plane_down_at * 100,
                plane_down_cmd.empty() ? "(skipped)" : plane_down_cmd.c_str());

    const std::size_t messages = bytes / msg;
    std::size_t completed = 0;
    std::vector<std::string> failures;
    auto check = [&](bool ok, const std::string& what) {
        std::printf("  [%s] %s\n", ok ? "ok" : "FAIL", what.c_str());
        if (!ok) failures.push_back(what);
    };
    bool wr_error = false;

    const auto t_start = Clock::now();
    auto secs = [&](Clock::time_point t) { return std::chrono::duration<double>(t - t_start).count(); };
    const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(interval_ms));
    auto next_sample = t_start + interval;
    std::vector<Sample> timeline;
    View last_a = view(*s[0].dev);
    std::uint64_t last_rx_bytes = 0;

    // Failure bookkeeping.
    Command link_cmd, plane_cmd;
    bool link_down = false, plane_down = false;
    int link_rc = -1, plane_rc = -1;
    double t_link_cmd_done = -1, t_plane_cmd_done = -1;
    double t_link_down = 0, t_plane_down = 0, t_all_retired = -1, t_b_noticed = -1, t_a_told = -1;
    View a_at_link_down, a_at_plane_down, b_at_plane_down, a_at_told;
    std::vector<std::size_t> through;  // sender slots whose EV crossed the failed link when it went down
    bool told_snapshot_taken = false;
    const char* pending_mark = "";

    auto last_progress = t_start;
    auto place_fraction = [&]() { return static_cast<double>(last_rx_bytes) / static_cast<double>(bytes); };

    int exit_code = -1;  // a monitor gave up (1) or a fabric command did not start (2)
    omrc::test::TransferHooks hooks;
    hooks.on_send_completion = [&](const omrc::Wc& wc, std::size_t done) {
        if (wc.status != omrc::WcStatus::success)
            std::fprintf(stderr, "fabric_transfer: WR %llu completed with %s\n", static_cast<unsigned long long>(wc.wr_id),
                         omrc::to_string(wc.status));
        completed = done;
        last_progress = Clock::now();
    };
    hooks.on_pass = [&]() -> bool {
        const auto now = Clock::now();

        // While the receiver's port is going down: watch who knows, at 1 ms resolution.
        if (plane_down && (t_b_noticed < 0 || t_a_told < 0)) {
            static auto next_watch = now;
            if (now >= next_watch) {
                next_watch = now + std::chrono::milliseconds(1);
                if (t_b_noticed < 0 && !(view(*s[1].dev).local_plane_mask & (1u << down_plane))) t_b_noticed = secs(now);
                if (t_a_told < 0 && view(*s[0].dev).port_status_received > a_at_plane_down.port_status_received)
                    t_a_told = secs(now);
            }
        }
        // The fabric commands' exit: from then on the link (port) is down for sure.
        if (link_cmd.pid > 0 && (link_rc = link_cmd.poll()) >= 0) t_link_cmd_done = secs(now);
        if (plane_cmd.pid > 0 && (plane_rc = plane_cmd.poll()) >= 0) t_plane_cmd_done = secs(now);
        // After the link failure: when was the last EV through it retired (1 ms resolution)?
        if (link_down && t_all_retired < 0 && !through.empty()) {
            static auto next_retire_watch = now;
            if (now >= next_retire_watch) {
                next_retire_watch = now + std::chrono::milliseconds(1);
                const View a = view(*s[0].dev);
                bool all = true;
                for (std::size_t i : through) all = all && a.slots[i].retirements > a_at_link_down.slots[i].retirements;
                if (all) t_all_retired = secs(now);
            }
        }
        if (t_a_told >= 0 && !told_snapshot_taken && secs(now) >= t_a_told + grace_ms / 1e3) {
            a_at_told = view(*s[0].dev);
            told_snapshot_taken = true;
        }

        if (now >= next_sample) {
            const View a = view(*s[0].dev);
            const std::uint64_t rx = view(*s[1].dev).bytes_received;
            Sample smp;
            smp.t = secs(now);
            const double dt = std::chrono::duration<double>(now - (next_sample - interval)).count();
            smp.gbps = static_cast<double>(rx - last_rx_bytes) * 8 / dt / 1e9;
            for (std::uint32_t p = 0; p < planes; ++p) smp.plane_pkts.push_back(a.plane_sent(p) - last_a.plane_sent(p));
            smp.retirements = a.ev_retirements;
            smp.mark = pending_mark;
            pending_mark = "";
            timeline.push_back(smp);
            last_rx_bytes = rx;
            last_a = a;
            next_sample = now + interval;
        }

        if (!link_down && place_fraction() >= link_down_at) {
            a_at_link_down = view(*s[0].dev);
            for (std::size_t i = 0; i < a_at_link_down.slots.size(); ++i) {
                const Slot& sl = a_at_link_down.slots[i];
                if (sl.plane == failed_plane && ev_t1(sl.ev, t1) == failed_t1) through.push_back(i);
            }
            link_down = true;
            t_link_down = secs(now);
            pending_mark = "<- T0-T1 link down";
            if (!link_down_cmd.empty() && !link_cmd.start(link_down_cmd)) {
                std::fprintf(stderr, "fabric_transfer: cannot run %s\n", link_down_cmd.c_str());
                exit_code = 2;
                return false;
            }
        }
        if (link_down && !plane_down && !plane_down_cmd.empty() && place_fraction() >= plane_down_at) {
            a_at_plane_down = view(*s[0].dev);
            b_at_plane_down = view(*s[1].dev);
            plane_down = true;
            t_plane_down = secs(now);
            pending_mark = "<- receiver port down";
            if (!plane_cmd.start(plane_down_cmd)) {
                std::fprintf(stderr, "fabric_transfer: cannot run %s\n", plane_down_cmd.c_str());
                exit_code = 2;
                return false;
            }
        }
        const bool qp_err = xfer.sender_qp()->state() == omrc::QpState::err ||
                            xfer.receiver_qp()->state() == omrc::QpState::err;
        if (secs(now) > timeout_s || now - last_progress > std::chrono::seconds(15) || qp_err) {
            std::fprintf(stderr, "fabric_transfer: %zu of %zu WRITEs done after %.1f s (%s): giving up\n", completed,
                         messages, secs(now), qp_err ? "a QP is in ERR" : "no progress");
            std::fprintf(stderr, "sender: %s\nreceiver: %s\n", s[0].dev->stats_json().c_str(),
                         s[1].dev->stats_json().c_str());
            exit_code = 1;
            return false;
        }
        return true;
    };
    const omrc::test::TransferResult result = xfer.run(hooks);
    if (exit_code >= 0) return exit_code;
    completed = result.completions;
    wr_error = result.errors > 0 || result.post_error != 0;
    const double t_end = secs(Clock::now());
    const View a_end = view(*s[0].dev);
    const View b_end = view(*s[1].dev);
    if (link_cmd.pid > 0) link_rc = link_cmd.poll(true);
    if (plane_cmd.pid > 0) plane_rc = plane_cmd.poll(true);

    // Timeline.
    std::printf("%8s %8s", "t (ms)", "Gb/s");
    for (std::uint32_t p = 0; p < planes; ++p) std::printf("  pkts p%-2u", p);
    std::printf("  retired\n");
    for (const Sample& smp : timeline) {
        std::printf("%8.0f %8.2f", smp.t * 1e3, smp.gbps);
        for (std::uint64_t v : smp.plane_pkts) std::printf(" %9llu", static_cast<unsigned long long>(v));
        std::printf(" %8llu %s\n", static_cast<unsigned long long>(smp.retirements), smp.mark);
    }

    // Figures.
    auto mean_gbps = [&](double from, double to) {
        double sum = 0;
        int k = 0;
        for (const Sample& smp : timeline)
            if (smp.t - interval_ms / 1e3 >= from && smp.t <= to) {
                sum += smp.gbps;
                ++k;
            }
        return k ? sum / k : 0.0;
    };
    const double total_gbps = static_cast<double>(bytes) * 8 / t_end / 1e9;
    // Baseline: full intervals before the link failure, after the first (warm-up).
    const double before = mean_gbps(interval_ms / 1e3, t_link_down);
    double t_recovered = -1;
    for (const Sample& smp : timeline)
        if (smp.t > t_link_down && smp.t - interval_ms / 1e3 >= t_link_down && smp.gbps >= recover_fraction * before) {
            t_recovered = smp.t;
            break;
        }
    const double phase2_end = plane_down ? t_plane_down : t_end;
    double dip = before;
    for (const Sample& smp : timeline)
        if (smp.t > t_link_down && smp.t <= phase2_end) dip = std::min(dip, smp.gbps);
    const double after = t_recovered >= 0 ? mean_gbps(t_recovered, phase2_end) : 0.0;
    const double after3 = mean_gbps(plane_down ? t_plane_down : t_end, t_end);

    std::uint64_t retired_through = 0, retired_other_slots = 0;
    std::vector<std::uint64_t> retired_other_per_plane(planes, 0);
    for (std::size_t i = 0; i < a_at_link_down.slots.size(); ++i) {
        const std::uint64_t d =
            (plane_down ? a_at_plane_down : a_end).slots[i].retirements - a_at_link_down.slots[i].retirements;
        if (std::find(through.begin(), through.end(), i) != through.end()) {
            if (d > 0) ++retired_through;
        } else if (d > 0) {
            ++retired_other_slots;
            ++retired_other_per_plane[a_at_link_down.slots[i].plane];
        }
    }
    std::string other_planes;
    for (std::uint32_t p = 0; p < planes; ++p)
        other_planes += (p ? ", p" : "p") + std::to_string(p) + " " + std::to_string(retired_other_per_plane[p]);
    const View& a_phase2 = plane_down ? a_at_plane_down : a_end;
    std::uint32_t still_through = 0;
    for (const Slot& sl : a_phase2.slots)
        if (sl.plane == failed_plane && ev_t1(sl.ev, t1) == failed_t1 && !sl.parked) ++still_through;
    bool bad_all_through = true;
    for (std::uint32_t ev : a_phase2.assumed_bad)
        bad_all_through = bad_all_through && ev_plane(ev) == failed_plane && ev_t1(ev, t1) == failed_t1;

    std::printf("\n%zu/%zu WRITEs in %.2f s: %.2f Gb/s overall\n", completed, messages, t_end, total_gbps);
    std::printf("link-down command ran %.0f-%.0f ms", t_link_down * 1e3, t_link_cmd_done * 1e3);
    if (plane_down) std::printf(", port-down command %.0f-%.0f ms", t_plane_down * 1e3, t_plane_cmd_done * 1e3);
    std::printf(" (times below count from the command's start)\n");
    std::printf("throughput before the link failure %.2f Gb/s; lowest interval after it %.2f Gb/s;\n", before, dip);
    if (t_recovered >= 0)
        std::printf("back to >= %.0f %% after %.0f ms; %.2f Gb/s (%.0f %%) until the port failure\n",
                    recover_fraction * 100, (t_recovered - t_link_down) * 1e3, after, before > 0 ? after / before * 100 : 0);
    else
        std::printf("throughput did not return to %.0f %% of before\n", recover_fraction * 100);
    std::printf("EVs through the failed link when it failed: %zu; retired since: %llu (all of them %s); "
                "other slots with a retirement: %llu (%s); sender EV retirements %llu -> %llu, EV timeouts %llu, "
                "packets resent %llu\n",
                through.size(), static_cast<unsigned long long>(retired_through),
                t_all_retired >= 0 ? ("within " + std::to_string(static_cast<int>((t_all_retired - t_link_down) * 1e3)) + " ms").c_str()
                                   : "not seen",
                static_cast<unsigned long long>(retired_other_slots), other_planes.c_str(),
                static_cast<unsigned long long>(a_at_link_down.ev_retirements),
                static_cast<unsigned long long>(a_phase2.ev_retirements),
                static_cast<unsigned long long>(a_end.ev_timeouts), static_cast<unsigned long long>(a_end.resent));
    if (plane_down)
        std::printf("receiver port down at %.0f ms: receiver's engine noticed after %.1f ms, sender told after %.1f ms; "
                    "throughput after it %.2f Gb/s\n",
                    t_plane_down * 1e3, t_b_noticed >= 0 ? (t_b_noticed - t_plane_down) * 1e3 : -1.0,
                    t_a_told >= 0 ? (t_a_told - t_plane_down) * 1e3 : -1.0, after3);

    // Checks.
    std::printf("\nchecks:\n");
    const std::uint64_t crc_src = crc64_ecma_refl(0, src.data(), src.size());
    const std::uint64_t crc_dst = crc64_ecma_refl(0, dst.data(), dst.size());
    char buf[256];
    std::snprintf(buf, sizeof buf, "byte-exact: CRC-64 source %016llx destination %016llx, every WRITE succeeded",
                  static_cast<unsigned long long>(crc_src), static_cast<unsigned long long>(crc_dst));
    check(!wr_error && completed == messages && crc_src == crc_dst && src == dst, buf);
    {
        bool every = true;
        std::string used;
        for (std::uint32_t p = 0; p < planes; ++p)
            for (std::uint32_t j = 0; j < t1; ++j) {
                std::uint64_t n = 0;
                for (const Slot& sl : a_at_link_down.slots)
                    if (sl.plane == p && ev_t1(sl.ev, t1) == j) n += sl.sent;
                used += " p" + std::to_string(p) + "/T1" + std::to_string(j) + "=" + std::to_string(n);
                every = every && n > 0;
            }
        check(every, "before the failure, data was sprayed over every plane and T1 (packets:" + used + ")");
    }
    check(link_rc == 0 && !link_down_cmd.empty(), "the T0-T1 link was taken down: " + link_down_cmd);
    check(!through.empty() && retired_through == through.size(),
          "every EV through the failed link was retired (" + std::to_string(retired_through) + "/" +
              std::to_string(through.size()) + ")");
    check(still_through == 0, "no active EV of the sender crosses the failed link any more (" +
                                  std::to_string(still_through) + " left)");
    check(bad_all_through, "the EVs being probed back are all through the failed link");
    check(retired_other_slots <= 1,
          "at most one healthy EV was retired (" + std::to_string(retired_other_slots) + " other slots)");
    std::snprintf(buf, sizeof buf, "throughput recovered: %.2f Gb/s after the link failure vs %.2f before (need >= %.0f %%)",
                  after, before, recover_fraction * 100);
    check(before > 0 && t_recovered >= 0 && after >= recover_fraction * before, buf);
    if (plane_down) {
        check(plane_rc == 0, "the receiver's port was taken down: " + plane_down_cmd);
        check(down_plane < b_end.link_up.size() && !b_end.link_up[down_plane],
              "the receiver's driver reports plane " + std::to_string(down_plane) + " link down");
        check(t_b_noticed >= 0 && !(b_end.local_plane_mask & (1u << down_plane)),
              "the receiver's engine marked the plane down");
        check(b_end.port_status_sent > b_at_plane_down.port_status_sent, "the receiver sent port status (" +
                                                                              std::to_string(b_end.port_status_sent - b_at_plane_down.port_status_sent) + ")");
        check(t_a_told >= 0, "the sender received port status");
        if (told_snapshot_taken) {
            const std::uint64_t late = a_end.plane_sent(down_plane) - a_at_told.plane_sent(down_plane);
            std::uint64_t other = 0;
            for (std::uint32_t p = 0; p < planes; ++p)
                if (p != down_plane) other += a_end.plane_sent(p) - a_at_told.plane_sent(p);
            check(late == 0 && other > 0, "the sender stopped sending on plane " + std::to_string(down_plane) + " " +
                                              std::to_string(static_cast<int>(grace_ms)) + " ms after it was told (" +
                                              std::to_string(late) + " packets on it, " + std::to_string(other) +
                                              " on the others since)");
        } else {
            check(false, "the transfer went on long enough after the sender was told to see it stop sending");
        }
    }
    if (!stats_out.empty()) {
        if (FILE* f = std::fopen(stats_out.c_str(), "w")) {
            std::fprintf(f, "{\"sender\": %s,\n\"receiver\": %s}\n", s[0].dev->stats_json().c_str(),
                         s[1].dev->stats_json().c_str());
            std::fclose(f);
        }
    }
    if (!failures.empty()) {
        std::printf("\nfabric_transfer: %zu check(s) failed\n", failures.size());
        return 1;
    }
    std::printf("\nfabric_transfer: all checks passed\n");
    return 0;
}
