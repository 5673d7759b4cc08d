// SPDX-License-Identifier: BSD-3-Clause
// The scenario runner, reporting (drivers/sim/scenario_runner.hpp): the
// Result of a run (flows and their ideals, steps, phases, the tracked
// host, counters, telemetry).
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "drivers/sim/path_plan.hpp"
#include "drivers/sim/scenario_runner.hpp"

namespace omrc::sim::detail {

namespace {

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

}  // namespace

TimePs Runner::ideal_fct_ps(const Flow& f) const {
    // Alone on an idle fabric at the NIC's full rate (every plane): the message's
    // frames back to back, plus one frame's store-and-forward and the propagation
    // and switch latency of its path.
    const TopologyConfig& t = cfg_.topology;
    const std::uint64_t mtu = cfg_.mtu_bytes;
    const std::uint64_t pkts = std::max<std::uint64_t>(1, (f.bytes + mtu - 1) / mtu);
    const std::size_t hdr = srv6_ ? 138 : 98;  // through RETH
    const std::uint64_t per_pkt = hdr + 4 + cfg_.sim.wire_overhead_bytes;
    const std::uint64_t wire_bytes = f.bytes + pkts * per_pkt + 4;
    const std::uint32_t links = topo_.links_between(f.src, f.dst);
    const std::uint64_t nic_bps = t.host_link_bps * topo_.planes;
    const std::uint64_t frame = std::min<std::uint64_t>(f.bytes, mtu) + per_pkt;
    TimePs hop = 2 * t.host_link_delay_ns * kPsPerNs + (links - 2) * t.fabric_link_delay_ns * kPsPerNs +
                 (links - 1) * cfg_.sim.switch_latency_ps + serialization_ps(frame, t.host_link_bps) +
                 (links - 2) * serialization_ps(frame, t.fabric_link_bps);
    return serialization_ps(wire_bytes, nic_bps) + hop;
}

Result Runner::summarise() const {
    Result r;
    r.name = cfg_.name;
    r.hosts = topo_.hosts;
    r.planes = topo_.planes;
    r.flows = static_cast<std::uint32_t>(plan_.flows.size());
    r.steps = static_cast<std::uint32_t>(plan_.steps.size());
    r.nics = sim_->nic_count();
    r.switches = sim_->switch_count();
    r.ports = sim_->port_count();
    summarise_flows(r);
    summarise_steps(r);
    summarise_counters(r);
    summarise_telemetry(r);
    r.data_packets = sim_->data_packets_sent();
    r.packets = sim_->packets_sent();
    r.events = sim_->events_processed();
    r.dead_path_last_drop_us = dead_path_last_drop_us_;
    r.dead_path_p90_drop_us = dead_path_p90_drop_us_;
    r.dead_path_share_50us = dead_path_share_50us_;
    r.dead_path_drops = dead_path_drops_;
    if (cfg_.carry_payload)
        for (std::size_t i = 0; i < plan_.flows.size(); ++i)
            if (!std::equal(send_bufs_[i].begin(), send_bufs_[i].end(), recv_bufs_[i].begin(), recv_bufs_[i].end()))
                ++r.payload_mismatches;
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) == 0) r.peak_rss_bytes = static_cast<std::uint64_t>(ru.ru_maxrss) * 1024;
    r.cpu_s = cpu_run_s_;
    return r;
}

void Runner::summarise_flows(Result& r) const {
    r.completed = std::all_of(plan_.flows.begin(), plan_.flows.end(), [](const Flow& f) { return f.end_ps != kNeverPs; });
    TimePs first = kNeverPs, last = 0;
    std::vector<double> ratio;
    std::map<std::pair<std::uint64_t, std::uint32_t>, std::uint32_t> shapes;
    for (const Flow& f : plan_.flows) {
        const double ideal = to_us(ideal_fct_ps(f));
        r.ideal_fct_us.push_back(ideal);
        ++shapes[{f.bytes, topo_.links_between(f.src, f.dst)}];
        if (f.end_ps == kNeverPs) continue;
        first = std::min(first, f.start_ps);
        last = std::max(last, f.end_ps);
        const double fct = to_us(f.end_ps - f.start_ps);
        r.fct_us.push_back(fct);
        ratio.push_back(fct / ideal);
    }
    {
        auto best = std::max_element(shapes.begin(), shapes.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
        if (best != shapes.end()) {
            Flow f{};
            f.bytes = best->first.first;
            f.src = 0;
            f.dst = best->first.second == 2 ? 1 : topo_.hosts - 1;
            r.ideal_fct_us_typical = to_us(ideal_fct_ps(f));
        }
    }
    if (!r.fct_us.empty()) {
        r.fct_mean_us = std::accumulate(r.fct_us.begin(), r.fct_us.end(), 0.0) / static_cast<double>(r.fct_us.size());
        r.fct_p50_us = percentile(r.fct_us, 0.50);
        r.fct_p99_us = percentile(r.fct_us, 0.99);
        r.fct_max_us = *std::max_element(r.fct_us.begin(), r.fct_us.end());
        r.fct_p99_over_ideal = percentile(ratio, 0.99);
    }
    r.job_us = last > first && first != kNeverPs ? to_us(last - first) : 0;
}

void Runner::summarise_steps(Result& r) const {
    std::vector<std::uint64_t> out_bytes(topo_.hosts, 0), in_bytes(topo_.hosts, 0);
    for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
        // A step can be no shorter than its slowest flow alone, nor than the
        // busiest NIC moving everything it sends or receives in that step.
        double ideal = 0;
        std::uint64_t busiest = 0;
        std::uint32_t busiest_host = 0;
        for (std::uint32_t id : plan_.steps[s]) {
            const Flow& f = plan_.flows[id];
            ideal = std::max(ideal, r.ideal_fct_us[id]);
            for (std::uint64_t* b : {&out_bytes[f.src], &in_bytes[f.dst]}) {
                *b += f.bytes;
                if (*b > busiest) {
                    busiest = *b;
                    busiest_host = static_cast<std::uint32_t>(b == &out_bytes[f.src] ? f.src : f.dst);
                }
            }
        }
        if (busiest > 0) {
            Flow agg{};
            agg.src = busiest_host;
            agg.dst = busiest_host == 0 ? topo_.hosts - 1 : 0;
            agg.bytes = busiest;
            ideal = std::max(ideal, to_us(ideal_fct_ps(agg)));
        }
        for (std::uint32_t id : plan_.steps[s]) {
            out_bytes[plan_.flows[id].src] = 0;
            in_bytes[plan_.flows[id].dst] = 0;
        }
        r.ideal_step_us.push_back(ideal);
        r.ideal_job_us += ideal;
        if (step_end_[s] != kNeverPs) r.step_us.push_back(to_us(step_end_[s] - step_start_[s]));
    }
    summarise_phases(r);
}

void Runner::summarise_phases(Result& r) const {
    if (cfg_.failures.empty()) return;
    TimePs first_fail = kNeverPs, last_repair = 0;
    bool repaired = false;
    for (const FailureSpec& f : cfg_.failures) {
        switch (f.kind) {
            case FailureKind::link_down:
            case FailureKind::switch_down:
            case FailureKind::nic_port_down:
                first_fail = std::min(first_fail, f.at_ps);
                break;
            case FailureKind::link_flap: {
                first_fail = std::min(first_fail, f.at_ps);
                // The last outage starts before until_ps and lasts down_ps.
                const TimePs period = std::max<TimePs>(f.period_ps, 1);
                const TimePs last_start = f.until_ps > f.at_ps ? f.at_ps + (f.until_ps - 1 - f.at_ps) / period * period : f.at_ps;
                last_repair = std::max(last_repair, last_start + f.down_ps);
                repaired = true;
                break;
            }
            case FailureKind::link_up:
            case FailureKind::switch_up:
            case FailureKind::nic_port_up:
                last_repair = std::max(last_repair, f.at_ps);
                repaired = true;
                break;
        }
    }
    if (first_fail == kNeverPs) return;
    double sum[3] = {0, 0, 0};
    std::size_t n[3] = {0, 0, 0};
    for (std::size_t s = 0; s < plan_.steps.size(); ++s) {
        if (step_end_[s] == kNeverPs) continue;
        const double us = to_us(step_end_[s] - step_start_[s]);
        int phase = -1;
        if (step_end_[s] <= first_fail) phase = 0;
        else if (step_start_[s] >= first_fail && (!repaired || step_end_[s] <= last_repair)) phase = 1;
        else if (repaired && step_start_[s] >= last_repair) phase = 2;
        if (phase < 0) continue;
        sum[phase] += us;
        ++n[phase];
    }
    if (n[0] != 0) r.step_mean_before_us = sum[0] / static_cast<double>(n[0]);
    if (n[1] != 0) r.step_mean_during_us = sum[1] / static_cast<double>(n[1]);
    if (n[2] != 0) r.step_mean_after_us = sum[2] / static_cast<double>(n[2]);
}

void Runner::summarise_counters(Result& r) const {
    for (std::size_t nic = 0; nic < sim_->nic_count(); ++nic) {
        for (std::size_t s = 0; s < sim_->engines(static_cast<std::uint32_t>(nic)); ++s) {
            const core::EngineStats& es = sim_->engine_at(static_cast<std::uint32_t>(nic), s).stats();
            r.path_alarms_sent += es.path_alarms_sent;
            r.path_alarms_believed += es.path_alarms_believed;
        }
    }
    for (const auto& [nic, qpn] : qps_) {
        const core::Qp* qp = sim_->engine_of(nic, qpn).find_qp(qpn);
        if (qp == nullptr) continue;
        r.retransmits += qp->stats.data_pkts_resent;
        r.ev_retirements += qp->stats.ev_retirements;
        for (std::size_t c = 0; c < core::kRetireCauses; ++c) r.ev_retirements_by_cause[c] += qp->stats.ev_retirements_by_cause[c];
        r.losses_timeout += qp->stats.losses_timeout;
        r.losses_send_order += qp->stats.losses_send_order;
        r.losses_send_order_cross_plane += qp->stats.losses_send_order_cross_plane;
        r.losses_path_order += qp->stats.losses_path_order;
        if (qp->plane_counters.empty()) continue;
        // How far each QP's active set is, at the end, from its split at the start.
        std::uint32_t away = 0;
        for (std::size_t i = 0; i < qp->paths.size(); ++i) away += qp->paths.slot(i).ev != qp->paths.slot(i).home_ev ? 1 : 0;
        r.ev_slots_away_from_home += away;
        r.ev_bad_at_end += qp->paths.bad().size();
        r.stale_path_starts += qp->paths.stale_starts();
        r.reps_explored += qp->paths.reps_explored();
        r.reps_recycled += qp->paths.reps_recycled();
        r.reps_freezes += qp->paths.reps_freezes();
        for (std::size_t i = 0; i < qp->paths.size(); ++i) {
            const core::EvSlot& s = qp->paths.slot(i);
            if (!s.parked && !qp->paths.in_plan(s.plane, qp->paths.group_of(s.ev))) ++r.slots_off_plan;
        }
    }
    r.plan_max_link_sharing = plan_sharing_;
    r.replans = replans_;
    if (rnl_) {
        r.rnl_rounds = rnl_->rounds();
        r.rnl_moves = rnl_->total_moves();
        r.rnl_most_moves_in_a_round = rnl_->most_moves_in_a_round();
        const PlanShape shape{cfg_.topology.t0, cfg_.topology.t1, cfg_.topology.hosts_per_t0, topo_.planes};
        std::vector<core::PathPlan> plans;
        for (std::uint32_t c = 0; c < plan_order_.size(); ++c) plans.push_back(rnl_->plan(c));
        r.plan_max_link_sharing = max_link_sharing(plan_order_, plans, shape);
    }
    for (std::size_t i = 0; i < sim_->port_count(); ++i) {
        const Port& p = sim_->port(static_cast<std::uint32_t>(i));
        r.trims += p.trims;
        r.ecn_marks += p.ecn_marks;
        r.drops += p.drops;
        if (p.last_hop) r.last_hop_queue_peak_bytes = std::max(r.last_hop_queue_peak_bytes, p.peak_lo_bytes);
        else if (!p.nic_side) r.fabric_queue_peak_bytes = std::max(r.fabric_queue_peak_bytes, p.peak_lo_bytes);
    }
    r.qp_errors = qp_errors_;
    r.reorder_at_nic = sim_->reorder_at_nic();
    r.ddc = sim_->ddc_stats();
}

void Runner::summarise_tracked(Result& r) const {
    // The tracked host's rate before its first failure (from the third
    // bucket: the first ones ramp up) and, as long again, from the third
    // bucket after it (the outage's transient excluded).
    const auto& s = r.tracked_series_gbps;
    TimePs fail = kNeverPs;
    for (const FailureSpec& f : cfg_.failures)
        if (f.kind == FailureKind::nic_port_down && f.host == cfg_.tracked_src_host) fail = std::min(fail, f.at_ps);
    if (s.empty() || fail == kNeverPs || cfg_.telemetry_bucket_ps == 0) return;
    const std::size_t fail_bucket = static_cast<std::size_t>(fail / cfg_.telemetry_bucket_ps);
    const std::size_t from = 2, after_from = fail_bucket + 3;
    if (fail_bucket <= from || after_from >= s.size()) return;
    const std::size_t len = std::min(fail_bucket - from, s.size() - after_from);
    auto mean = [&](std::size_t a, std::size_t n) {
        double sum = 0;
        for (std::size_t i = a; i < a + n; ++i) sum += s[i];
        return sum / static_cast<double>(n);
    };
    r.tracked_gbps_before = mean(from, fail_bucket - from);
    r.tracked_gbps_after = mean(after_from, len);
}

void Runner::summarise_telemetry(Result& r) const {
    const double job_s = r.job_us * 1e-6;
    // Per-plane throughput and its time series.
    r.bucket_us = to_us(cfg_.telemetry_bucket_ps);
    r.plane_gbps.assign(topo_.planes, 0.0);
    const auto& series = sim_->delivered_series();
    for (const auto& b : series) {
        std::array<double, 16> g{};
        for (std::uint32_t p = 0; p < topo_.planes; ++p) {
            g[p] = r.bucket_us > 0 ? static_cast<double>(b[p]) * 8.0 / (r.bucket_us * 1e3) : 0.0;
            r.plane_gbps[p] += static_cast<double>(b[p]);
        }
        r.plane_series_gbps.push_back(g);
    }
    for (auto& g : r.plane_gbps) g = job_s > 0 ? g * 8.0 / job_s / 1e9 : 0.0;
    for (std::uint64_t b : sim_->tracked_series())
        r.tracked_series_gbps.push_back(r.bucket_us > 0 ? static_cast<double>(b) * 8.0 / (r.bucket_us * 1e3) : 0.0);
    summarise_tracked(r);
    // Utilisation of the lowest-tier uplinks over the job, and its CoV.
    double sum = 0, sq = 0;
    for (std::uint32_t idx : topo_.uplink_ports) {
        const Port& p = sim_->port(idx);
        const double cap = static_cast<double>(sim_->link_config(p.link).rate_bps) / 8.0 * job_s;
        const double u = cap > 0 ? static_cast<double>(p.tx_bytes) / cap : 0.0;
        r.uplink_util.push_back(u);
        sum += u;
        sq += u * u;
    }
    if (!r.uplink_util.empty() && sum > 0) {
        const double n = static_cast<double>(r.uplink_util.size());
        const double mean = sum / n;
        r.t0_t1_util_cov = std::sqrt(std::max(0.0, sq / n - mean * mean)) / mean;
    }
}

}  // namespace omrc::sim::detail
