// SPDX-License-Identifier: BSD-3-Clause
#include "report.hpp"
#include "scenario_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/cc.hpp"

namespace omrc::fabric {

namespace {

double mean(const std::vector<double>& v) {
    if (v.empty()) return 0;
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
}

}  // namespace

nlohmann::json summary_json(const sim::ScenarioConfig& cfg, const sim::Result& r) {
    nlohmann::json j;
    j["scenario"] = r.name;
    j["topology"] = sim::to_string(cfg.topology.kind);
    j["workload"] = sim::to_string(cfg.workload.kind);
    j["policy"] = std::string(core::path_policy_name(cfg.policy));
    j["cc"] = std::string(core::cc_name(cfg.cc.algorithm));
    j["routing"] = cfg.topology.kind == sim::TopologyKind::fat_tree && cfg.routing == sim::RoutingMode::usid
                       ? "ecmp"
                       : sim::to_string(cfg.routing);
    j["seed"] = cfg.seed;
    j["workers"] = cfg.sim.workers;
    j["completed"] = r.completed;
    j["hosts"] = r.hosts;
    j["planes"] = r.planes;
    j["flows"] = r.flows;
    j["steps"] = r.steps;
    j["switches"] = r.switches;
    j["job_us"] = r.job_us;
    j["ideal_job_us"] = r.ideal_job_us;
    j["job_over_ideal"] = r.ideal_job_us > 0 ? r.job_us / r.ideal_job_us : 0.0;
    j["ideal_fct_us"] = r.ideal_fct_us_typical;
    j["fct_mean_us"] = r.fct_mean_us;
    j["fct_p50_us"] = r.fct_p50_us;
    j["fct_p99_us"] = r.fct_p99_us;
    j["fct_max_us"] = r.fct_max_us;
    j["fct_p99_over_ideal"] = r.fct_p99_over_ideal;
    j["step_mean_us"] = mean(r.step_us);
    j["step_max_us"] = r.step_us.empty() ? 0.0 : *std::max_element(r.step_us.begin(), r.step_us.end());
    j["ideal_step_us"] = r.ideal_step_us.empty() ? 0.0 : r.ideal_step_us.front();
    for (const auto& [key, value] : {std::pair{"step_mean_before_us", r.step_mean_before_us},
                                     std::pair{"step_mean_during_us", r.step_mean_during_us},
                                     std::pair{"step_mean_after_us", r.step_mean_after_us}})
        if (value >= 0) j[key] = value;
    j["retransmits_pkts"] = r.retransmits;
    j["trims_pkts"] = r.trims;
    j["ecn_marks_pkts"] = r.ecn_marks;
    j["drops_pkts"] = r.drops;
    j["last_hop_queue_peak_bytes"] = r.last_hop_queue_peak_bytes;
    j["fabric_queue_peak_bytes"] = r.fabric_queue_peak_bytes;
    if (r.tracked_gbps_before > 0 && r.tracked_gbps_after >= 0) {
        j["tracked_gbps_before"] = r.tracked_gbps_before;
        j["tracked_gbps_after"] = r.tracked_gbps_after;
        j["tracked_after_over_before"] = r.tracked_gbps_after / r.tracked_gbps_before;
    }
    j["ev_retirements"] = r.ev_retirements;
    for (std::size_t c = 1; c < core::kRetireCauses; ++c)
        j["ev_retirements_by_cause"][core::to_string(static_cast<core::RetireCause>(c))] = r.ev_retirements_by_cause[c];
    j["losses_timeout_pkts"] = r.losses_timeout;
    j["losses_send_order_pkts"] = r.losses_send_order;
    j["losses_send_order_cross_plane_pkts"] = r.losses_send_order_cross_plane;
    j["losses_path_order_pkts"] = r.losses_path_order;
    j["path_alarms_sent"] = r.path_alarms_sent;
    j["path_alarms_believed"] = r.path_alarms_believed;
    j["stale_path_starts"] = r.stale_path_starts;
    j["reps_explored"] = r.reps_explored;
    j["reps_recycled"] = r.reps_recycled;
    j["reps_freezes"] = r.reps_freezes;
    j["plan_max_link_sharing"] = r.plan_max_link_sharing;
    j["slots_off_plan"] = r.slots_off_plan;
    j["replans"] = r.replans;
    j["rnl_rounds"] = r.rnl_rounds;
    j["rnl_moves"] = r.rnl_moves;
    j["rnl_most_moves_in_a_round"] = r.rnl_most_moves_in_a_round;
    j["ev_slots_away_from_home_at_end"] = r.ev_slots_away_from_home;
    j["ev_assumed_bad_at_end"] = r.ev_bad_at_end;
    j["qp_errors"] = r.qp_errors;
    j["plane_gbps"] = r.plane_gbps;
    j["t0_t1_util_cov"] = r.t0_t1_util_cov;
    j["data_packets"] = r.data_packets;
    j["packets"] = r.packets;
    j["events"] = r.events;
    j["wall_s"] = r.wall_s;
    j["cpu_s"] = r.cpu_s;
    j["data_packets_per_cpu_s"] = r.cpu_s > 0 ? static_cast<double>(r.data_packets) / r.cpu_s : 0.0;
    j["build_s"] = r.build_s;
    j["data_packets_per_wall_s"] = r.wall_s > 0 ? static_cast<double>(r.data_packets) / r.wall_s : 0.0;
    j["packets_per_wall_s"] = r.wall_s > 0 ? static_cast<double>(r.packets) / r.wall_s : 0.0;
    j["peak_rss_mib"] = static_cast<double>(r.peak_rss_bytes) / (1024.0 * 1024.0);
    if (cfg.routing == sim::RoutingMode::ddc) {
        j["ddc_cell_bytes"] = cfg.sim.ddc.cell_bytes;
        j["ddc_packets"] = r.ddc.packets;
        j["ddc_local_packets"] = r.ddc.local_packets;
        j["ddc_cells"] = r.ddc.cells;
        j["ddc_cells_lost"] = r.ddc.cells_lost;
        j["ddc_packets_lost"] = r.ddc.packets_lost;
        j["ddc_voq_drops_pkts"] = r.ddc.voq_drops;
        j["ddc_voq_ecn_marks_pkts"] = r.ddc.voq_ecn_marks;
        j["ddc_voq_peak_bytes"] = r.ddc.voq_peak_bytes;
        j["ddc_reassembly_peak_bytes"] = r.ddc.reassembly_peak_bytes;
        j["ddc_credits"] = r.ddc.credits;
        j["ddc_voqs"] = r.ddc.voqs;
        j["ddc_reorder_at_nic"] = r.reorder_at_nic;
    } else if (cfg.sim.count_reorder) {
        j["reorder_at_nic"] = r.reorder_at_nic;
    }
    if (r.dead_path_last_drop_us >= 0) {
        j["dead_path_last_drop_us"] = r.dead_path_last_drop_us;
        j["dead_path_p90_drop_us"] = r.dead_path_p90_drop_us;
        j["dead_path_share_within_50us"] = r.dead_path_share_50us;
        j["dead_path_drops_pkts"] = r.dead_path_drops;
    }
    return j;
}

std::string summary_text(const sim::ScenarioConfig& cfg, const sim::Result& r) {
    std::string s;
    s += fmt::format("scenario     {} ({} on {} hosts × {} planes, {} switches; policy {}, cc {}, routing {}, seed {})\n", r.name,
                     sim::to_string(cfg.workload.kind), r.hosts, r.planes, r.switches, core::path_policy_name(cfg.policy),
                     core::cc_name(cfg.cc.algorithm), sim::to_string(cfg.routing), cfg.seed);
    s += fmt::format("completed    {}  ({} flows in {} steps)\n", r.completed ? "yes" : "NO", r.flows, r.steps);
    s += fmt::format("job          {:.1f} µs  (ideal {:.1f} µs, ×{:.2f})\n", r.job_us, r.ideal_job_us,
                     r.ideal_job_us > 0 ? r.job_us / r.ideal_job_us : 0.0);
    if (r.steps > 1 && !r.step_us.empty())
        s += fmt::format("step         mean {:.1f} µs, max {:.1f} µs (ideal {:.1f} µs)\n", mean(r.step_us),
                         *std::max_element(r.step_us.begin(), r.step_us.end()), r.ideal_step_us.front());
    if (r.step_mean_before_us > 0) {
        auto of_before = [&](double v) {
            return v >= 0 ? fmt::format("×{:.3f}", v / r.step_mean_before_us) : std::string("n/a");
        };
        s += fmt::format("step phases  before {:.1f} µs, during {}, after {}\n", r.step_mean_before_us,
                         of_before(r.step_mean_during_us), of_before(r.step_mean_after_us));
    }
    s += fmt::format("FCT          mean {:.1f}  p50 {:.1f}  p99 {:.1f}  max {:.1f} µs  (ideal {:.1f} µs; p99/ideal {:.2f})\n",
                     r.fct_mean_us, r.fct_p50_us, r.fct_p99_us, r.fct_max_us, r.ideal_fct_us_typical, r.fct_p99_over_ideal);
    s += fmt::format("packets      {} data ({} all), {} retransmitted, {} trimmed, {} ECN-marked, {} dropped\n",
                     r.data_packets, r.packets, r.retransmits, r.trims, r.ecn_marks, r.drops);
    s += fmt::format("queue peaks  last hop {} B, fabric {} B (data class)\n", r.last_hop_queue_peak_bytes,
                     r.fabric_queue_peak_bytes);
    s += fmt::format("paths        {} EV retirements, {} QP errors\n", r.ev_retirements, r.qp_errors);
    if (cfg.routing == sim::RoutingMode::ddc)
        s += fmt::format("ddc          {} packets as {} cells of {} B ({} local), {} cells lost → {} packets lost, {} VOQ drops, "
                         "VOQ peak {} B, reassembly peak {} B, {} reordered at NICs\n",
                         r.ddc.packets, r.ddc.cells, cfg.sim.ddc.cell_bytes, r.ddc.local_packets, r.ddc.cells_lost,
                         r.ddc.packets_lost, r.ddc.voq_drops, r.ddc.voq_peak_bytes, r.ddc.reassembly_peak_bytes,
                         r.reorder_at_nic);
    if (r.plan_max_link_sharing != 0)
        s += fmt::format("plan         at most {} connection(s) per T0-T1 link; {} active slots off the plan\n",
                         r.plan_max_link_sharing, r.slots_off_plan);
    if (r.rnl_rounds != 0)
        s += fmt::format("rnl          {} rounds, {} migrations, at most {} in a round\n", r.rnl_rounds, r.rnl_moves,
                         r.rnl_most_moves_in_a_round);
    std::string planes;
    for (double g : r.plane_gbps) planes += fmt::format(" {:.1f}", g);
    s += fmt::format("plane Gb/s  {}\n", planes);
    s += fmt::format("T0→T1 CoV    {:.4f}  (utilisation of {} uplinks)\n", r.t0_t1_util_cov, r.uplink_util.size());
    if (r.dead_path_last_drop_us >= 0)
        s += fmt::format("dead path    {} data frames lost toward the dead switch: {:.1f} % within 50 µs, 90 % within {:.1f} µs, "
                         "the last {:.1f} µs after it failed\n",
                         r.dead_path_drops, 100.0 * r.dead_path_share_50us, r.dead_path_p90_drop_us, r.dead_path_last_drop_us);
    s += fmt::format("simulator    {:.2f} s wall, {:.2f} s CPU ({:.2f} s build), {:.0f} k data packets per wall s ({:.0f} k per CPU s), "
                     "{} events, peak RSS {:.0f} MiB\n",
                     r.wall_s, r.cpu_s, r.build_s, r.wall_s > 0 ? static_cast<double>(r.data_packets) / r.wall_s / 1e3 : 0.0,
                     r.cpu_s > 0 ? static_cast<double>(r.data_packets) / r.cpu_s / 1e3 : 0.0, r.events,
                     static_cast<double>(r.peak_rss_bytes) / (1024.0 * 1024.0));
    return s;
}

void write_csv(const std::string& dir, const sim::ScenarioConfig& cfg, const sim::Result& r) {
    std::filesystem::create_directories(dir);
    {
        std::ofstream o(dir + "/series.csv");
        o << "time_us";
        for (std::uint32_t p = 0; p < r.planes; ++p) o << ",plane" << p << "_gbps";
        if (!r.tracked_series_gbps.empty()) o << ",tracked_host_gbps";
        o << "\n";
        const std::size_t n = std::max(r.plane_series_gbps.size(), r.tracked_series_gbps.size());
        for (std::size_t i = 0; i < n; ++i) {
            o << fmt::format("{:.3f}", static_cast<double>(i) * r.bucket_us);
            for (std::uint32_t p = 0; p < r.planes; ++p)
                o << fmt::format(",{:.3f}", i < r.plane_series_gbps.size() ? r.plane_series_gbps[i][p] : 0.0);
            if (!r.tracked_series_gbps.empty())
                o << fmt::format(",{:.3f}", i < r.tracked_series_gbps.size() ? r.tracked_series_gbps[i] : 0.0);
            o << "\n";
        }
    }
    {
        std::ofstream o(dir + "/fct.csv");
        o << "rank,fct_us\n";
        std::vector<double> v = r.fct_us;
        std::sort(v.begin(), v.end());
        for (std::size_t i = 0; i < v.size(); ++i)
            o << fmt::format("{:.6f},{:.3f}\n", static_cast<double>(i + 1) / static_cast<double>(v.size()), v[i]);
    }
    {
        std::ofstream o(dir + "/link_util.csv");
        o << "uplink,utilisation\n";
        for (std::size_t i = 0; i < r.uplink_util.size(); ++i) o << fmt::format("{},{:.5f}\n", i, r.uplink_util[i]);
    }
    {
        std::ofstream o(dir + "/steps.csv");
        o << "step,step_us,ideal_us\n";
        for (std::size_t i = 0; i < r.step_us.size(); ++i)
            o << fmt::format("{},{:.3f},{:.3f}\n", i, r.step_us[i], i < r.ideal_step_us.size() ? r.ideal_step_us[i] : 0.0);
    }
    std::ofstream(dir + "/summary.json") << summary_json(cfg, r).dump(2) << "\n";
}

bool render_plots(const std::string& dir, const sim::ScenarioConfig& cfg, const sim::Result& r) {
    const std::string title = fmt::format("{} ({})", r.name, core::path_policy_name(cfg.policy));
    const std::string gp = dir + "/plots.gp";
    {
        std::ofstream o(gp);
        o << "set terminal pngcairo size 900,500 font ',10' noenhanced\nset datafile separator ','\nset key outside right\n"
             "set grid\n";
        o << fmt::format("set output '{}/throughput.png'\n", dir);
        o << fmt::format("set title '{}: delivered payload per plane'\nset xlabel 'time (µs)'\nset ylabel 'Gb/s'\n", title);
        o << fmt::format("plot for [p=2:{}] '{}/series.csv' using 1:p with lines title columnhead(p)\n", r.planes + 1, dir);
        if (!r.tracked_series_gbps.empty()) {
            o << fmt::format("set output '{}/tracked_host.png'\n", dir);
            o << fmt::format("set title '{}: delivered payload of the tracked host'\n", title);
            o << fmt::format("plot '{}/series.csv' using 1:{} with lines title 'tracked host'\n", dir, r.planes + 2);
        }
        if (r.step_us.size() > 1) {
            o << fmt::format("set output '{}/steps.png'\n", dir);
            o << fmt::format("set title '{}: step time (barrier per step)'\nset xlabel 'step'\nset ylabel 'µs'\nset yrange [0:*]\n", title);
            o << fmt::format("plot '{0}/steps.csv' using 1:2 with linespoints title 'step', '{0}/steps.csv' using 1:3 with lines dt 2 title 'ideal'\n", dir);
            o << "set yrange [*:*]\n";
        }
        o << fmt::format("set output '{}/fct_cdf.png'\n", dir);
        o << fmt::format("set title '{}: flow completion time CDF (ideal {:.1f} µs)'\nset xlabel 'FCT (µs)'\nset ylabel 'fraction of flows'\n",
                         title, r.ideal_fct_us_typical);
        o << fmt::format("set arrow 1 from {0},0 to {0},1 nohead dt 2\n", r.ideal_fct_us_typical);
        o << fmt::format("plot '{}/fct.csv' using 2:1 with steps title 'FCT'\nunset arrow 1\n", dir);
        o << fmt::format("set output '{}/link_util.png'\n", dir);
        o << fmt::format("set title '{}: T0→T1 link utilisation (CoV {:.3f})'\nset xlabel 'utilisation'\nset ylabel 'links'\n",
                         title, r.t0_t1_util_cov);
        o << "set style fill solid 0.6\nbin(x)=floor(x/0.02)*0.02+0.01\nset xrange [0:1.05]\n";
        o << fmt::format("plot '{}/link_util.csv' using (bin($2)):(1.0) smooth freq with boxes title 'uplinks'\n", dir);
    }
    const std::string cmd = fmt::format("gnuplot '{}' 2>&1", gp);
    const int rc = std::system(cmd.c_str());
    if (rc != 0) {
        std::fprintf(stderr, "omrc-fabric: gnuplot failed (exit %d); CSV files are in %s\n", rc, dir.c_str());
        return false;
    }
    return true;
}

}  // namespace omrc::fabric
