// SPDX-License-Identifier: BSD-3-Clause
#include "scenario_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <toml++/toml.h>
#include <vector>

#include "core/cc.hpp"

namespace omrc::fabric {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
    throw std::runtime_error(fmt::format("{}: {}", where, what));
}

/// Rejects keys a section does not know (typos must not pass silently).
void only(const json& j, const std::string& where, std::initializer_list<const char*> keys) {
    if (!j.is_object()) fail(where, "expected a table");
    const std::set<std::string> allowed(keys.begin(), keys.end());
    for (const auto& [k, v] : j.items())
        if (!allowed.count(k)) fail(where, fmt::format("unknown key '{}'", k));
}

template <typename T>
void get(const json& j, const char* key, T& out, const std::string& where) {
    if (!j.contains(key)) return;
    try {
        out = j.at(key).get<T>();
    } catch (const json::exception& e) {
        fail(where + "." + key, e.what());
    }
}

std::uint64_t us_to_ps(double us) { return static_cast<std::uint64_t>(us * 1e6 + 0.5); }

sim::QueueConfig queue(const json& j, const std::string& where, sim::QueueConfig q) {
    only(j, where, {"limit_kb", "priority_limit_kb", "ecn_kb", "trim", "trim_bytes", "ecn_last_hop"});
    double limit_kb = static_cast<double>(q.limit_bytes) / 1024, prio_kb = static_cast<double>(q.priority_limit_bytes) / 1024;
    double ecn_kb = -1;
    get(j, "limit_kb", limit_kb, where);
    get(j, "priority_limit_kb", prio_kb, where);
    get(j, "ecn_kb", ecn_kb, where);
    get(j, "trim", q.trim, where);
    get(j, "trim_bytes", q.trim_bytes, where);
    get(j, "ecn_last_hop", q.ecn_last_hop, where);
    q.limit_bytes = static_cast<std::uint64_t>(limit_kb * 1024);
    q.priority_limit_bytes = static_cast<std::uint64_t>(prio_kb * 1024);
    if (j.contains("ecn_kb")) q.ecn_threshold_bytes = ecn_kb < 0 ? UINT64_MAX : static_cast<std::uint64_t>(ecn_kb * 1024);
    return q;
}

sim::Tier parse_tier(const std::string& s, const std::string& where) {
    if (s == "t0") return sim::Tier::t0;
    if (s == "t1") return sim::Tier::t1;
    fail(where, fmt::format("tier must be t0 or t1, got '{}'", s));
}

sim::ScenarioConfig from_json(const json& root, const std::string& file) {
    sim::ScenarioConfig c;
    only(root, file, {"name", "seed", "policy", "plan_reaction_us", "rnl", "routing", "max_time_us", "carry_payload",
                      "topology", "queues", "workload", "cc", "qp", "failures", "output", "ddc", "workers"});
    get(root, "name", c.name, file);
    get(root, "seed", c.seed, file);
    if (root.contains("policy")) c.policy = parse_policy(root["policy"].get<std::string>());
    // Engines per NIC, as a device's workers (each QP on one of them).
    if (root.contains("workers")) {
        const std::int64_t w = root["workers"].get<std::int64_t>();
        if (w < 1 || w > 16) fail(file + ".workers", "must be 1..16");
        c.sim.workers = static_cast<std::uint32_t>(w);
    }
    if (root.contains("routing")) {
        try {
            c.routing = parse_routing(root["routing"].get<std::string>());
        } catch (const std::runtime_error& e) {
            fail(file + ".routing", e.what());
        }
    }
    if (root.contains("ddc")) {
        // routing = "ddc"'s chassis (drivers/sim/ddc.cpp); read whatever the routing, used only with ddc.
        const json& j = root["ddc"];
        const std::string w = file + ".ddc";
        only(j, w, {"cell_bytes", "cell_header_bytes", "credit_bytes", "voq_limit_kb", "voq_ecn_kb", "ctrl_delay_ns",
                    "reassembly_timeout_us"});
        sim::DdcConfig& d = c.sim.ddc;
        get(j, "cell_bytes", d.cell_bytes, w);
        get(j, "cell_header_bytes", d.cell_header_bytes, w);
        get(j, "credit_bytes", d.credit_bytes, w);
        double limit_kb = static_cast<double>(d.voq_limit_bytes) / 1024, ecn_kb = static_cast<double>(d.voq_ecn_bytes) / 1024;
        get(j, "voq_limit_kb", limit_kb, w);
        get(j, "voq_ecn_kb", ecn_kb, w);
        if (limit_kb < 0) fail(w + ".voq_limit_kb", "must be ≥ 0");
        d.voq_limit_bytes = static_cast<std::uint64_t>(limit_kb * 1024);
        d.voq_ecn_bytes = ecn_kb < 0 ? UINT64_MAX : static_cast<std::uint64_t>(ecn_kb * 1024);
        std::uint64_t ctrl_ns = d.ctrl_delay_ps / sim::kPsPerNs;
        get(j, "ctrl_delay_ns", ctrl_ns, w);
        d.ctrl_delay_ps = ctrl_ns * sim::kPsPerNs;
        double timeout_us = static_cast<double>(d.reassembly_timeout_ps) / 1e6;
        get(j, "reassembly_timeout_us", timeout_us, w);
        if (timeout_us <= 0) fail(w + ".reassembly_timeout_us", "must be > 0");
        d.reassembly_timeout_ps = us_to_ps(timeout_us);
        const std::string e = d.validate();
        if (!e.empty()) fail(w, e);
    }
    double reaction_us = static_cast<double>(c.plan_reaction_ps) / 1e6;
    get(root, "plan_reaction_us", reaction_us, file);
    c.plan_reaction_ps = us_to_ps(reaction_us);
    if (root.contains("rnl")) {
        const json& r = root["rnl"];
        const std::string w = file + ".rnl";
        only(r, w, {"interval_us", "max_moves", "margin", "queue_weight"});
        double interval_us = static_cast<double>(c.rnl.interval_ps) / 1e6;
        get(r, "interval_us", interval_us, w);
        if (!(interval_us > 0)) fail(w + ".interval_us", "must be positive");
        c.rnl.interval_ps = us_to_ps(interval_us);
        get(r, "max_moves", c.rnl.max_moves, w);
        if (c.rnl.max_moves == 0) fail(w + ".max_moves", "must be at least 1");
        get(r, "margin", c.rnl.margin, w);
        if (!(c.rnl.margin >= 0)) fail(w + ".margin", "must be ≥ 0");
        get(r, "queue_weight", c.rnl.queue_weight, w);
        if (!(c.rnl.queue_weight >= 0)) fail(w + ".queue_weight", "must be ≥ 0");
    }
    double max_us = 1e6;
    get(root, "max_time_us", max_us, file);
    c.max_time_ps = us_to_ps(max_us);
    get(root, "carry_payload", c.carry_payload, file);

    if (root.contains("topology")) {
        const json& t = root["topology"];
        const std::string w = file + ".topology";
        only(t, w, {"kind", "planes", "t0", "t1", "hosts_per_t0", "k", "host_link_gbps", "fabric_link_gbps",
                    "host_link_delay_ns", "fabric_link_delay_ns", "switch_latency_ns"});
        if (t.contains("kind")) {
            const auto k = t["kind"].get<std::string>();
            if (k == "clos") c.topology.kind = sim::TopologyKind::clos;
            else if (k == "leaf_spine") c.topology.kind = sim::TopologyKind::leaf_spine;
            else if (k == "fat_tree") c.topology.kind = sim::TopologyKind::fat_tree;
            else fail(w + ".kind", "must be clos, leaf_spine or fat_tree");
        }
        get(t, "planes", c.topology.planes, w);
        get(t, "t0", c.topology.t0, w);
        get(t, "t1", c.topology.t1, w);
        get(t, "hosts_per_t0", c.topology.hosts_per_t0, w);
        get(t, "k", c.topology.k, w);
        double hg = 100, fg = 100;
        get(t, "host_link_gbps", hg, w);
        get(t, "fabric_link_gbps", fg, w);
        c.topology.host_link_bps = static_cast<std::uint64_t>(hg * 1e9);
        c.topology.fabric_link_bps = static_cast<std::uint64_t>(fg * 1e9);
        get(t, "host_link_delay_ns", c.topology.host_link_delay_ns, w);
        get(t, "fabric_link_delay_ns", c.topology.fabric_link_delay_ns, w);
        std::uint64_t sl = c.sim.switch_latency_ps / sim::kPsPerNs;
        get(t, "switch_latency_ns", sl, w);
        c.sim.switch_latency_ps = sl * sim::kPsPerNs;
    }
    if (root.contains("queues")) {
        const json& q = root["queues"];
        const std::string w = file + ".queues";
        only(q, w, {"uplink", "downlink", "host_down"});
        if (q.contains("uplink")) c.topology.uplink = queue(q["uplink"], w + ".uplink", c.topology.uplink);
        if (q.contains("downlink")) c.topology.downlink = queue(q["downlink"], w + ".downlink", c.topology.downlink);
        if (q.contains("host_down")) c.topology.host_down = queue(q["host_down"], w + ".host_down", c.topology.host_down);
    }
    if (root.contains("workload")) {
        const json& j = root["workload"];
        const std::string w = file + ".workload";
        only(j, w, {"kind", "hosts", "message_bytes", "start_us", "incast_senders", "steps", "shuffle", "interleave"});
        if (j.contains("kind")) {
            const auto k = j["kind"].get<std::string>();
            if (k == "permutation") c.workload.kind = sim::WorkloadKind::permutation;
            else if (k == "all_to_all") c.workload.kind = sim::WorkloadKind::all_to_all;
            else if (k == "incast") c.workload.kind = sim::WorkloadKind::incast;
            else if (k == "ring_allreduce") c.workload.kind = sim::WorkloadKind::ring_allreduce;
            else fail(w + ".kind", "must be permutation, all_to_all, incast or ring_allreduce");
        }
        get(j, "hosts", c.workload.hosts, w);
        get(j, "message_bytes", c.workload.message_bytes, w);
        double start = 0;
        get(j, "start_us", start, w);
        c.workload.start_ps = us_to_ps(start);
        get(j, "incast_senders", c.workload.incast_senders, w);
        get(j, "steps", c.workload.steps, w);
        get(j, "shuffle", c.workload.shuffle, w);
        get(j, "interleave", c.workload.interleave, w);
    }
    if (root.contains("cc") && root["cc"].is_string()) {
        // cc = "dcqcn": the algorithm alone, its parameters at their defaults.
        c.cc.algorithm = parse_cc(root["cc"].get<std::string>());
        c.cc.base_rtt_ns = 0;
    } else if (root.contains("cc")) {
        const json& j = root["cc"];
        const std::string w = file + ".cc";
        if (!j.is_object()) fail(w, "expected a table");
        c.cc.base_rtt_ns = 0;  // 0 = derived from the fabric
        // algorithm, base_rtt_ns, and the algorithms' own keys by their registrations (lib/core/cc.hpp).
        for (const auto& [key, value] : j.items()) {
            if (key == "algorithm") {
                try {
                    c.cc.algorithm = parse_cc(value.get<std::string>());
                } catch (const std::exception& e) {
                    fail(w + ".algorithm", e.what());
                }
            } else if (key == "base_rtt_ns") {
                get(j, "base_rtt_ns", c.cc.base_rtt_ns, w);
            } else if (const core::CcParam* p = core::find_cc_param(key)) {
                if (!value.is_number()) fail(w + "." + key, "must be a number");
                const double v = value.get<double>();
                if (!p->accepts(v))
                    fail(w + "." + key, p->kind == core::CcParam::Kind::integer
                                            ? fmt::format("must be a whole number in {}..{}, got {}", p->min, p->max, v)
                                            : fmt::format("must be > 0 and ≤ {}, got {}", p->max, v));
                p->set(c.cc, v);
            } else {
                fail(w, fmt::format("unknown key '{}'", key));
            }
        }
    } else {
        c.cc.base_rtt_ns = 0;
    }
    if (root.contains("qp")) {
        const json& j = root["qp"];
        const std::string w = file + ".qp";
        only(j, w, {"mtu_bytes", "mpr", "evs", "backup_evs", "ev_track_depth", "max_send_wr", "path_alarm_us",
                    "peer_path_alarms", "stale_path_packets"});
        get(j, "mtu_bytes", c.mtu_bytes, w);
        get(j, "mpr", c.mpr, w);
        get(j, "evs", c.evs, w);
        get(j, "backup_evs", c.backup_evs, w);
        get(j, "ev_track_depth", c.ev_track_depth, w);
        double alarm_us = static_cast<double>(c.path_alarm_ns) / 1e3;
        get(j, "path_alarm_us", alarm_us, w);
        if (!(alarm_us >= 0)) fail(w + ".path_alarm_us", "must be ≥ 0");
        c.path_alarm_ns = static_cast<std::uint64_t>(alarm_us * 1e3);
        get(j, "peer_path_alarms", c.peer_path_alarms, w);
        get(j, "stale_path_packets", c.stale_path_packets, w);
        get(j, "max_send_wr", c.max_send_wr, w);
    }
    if (root.contains("failures")) {
        const json& arr = root["failures"];
        if (!arr.is_array()) fail(file + ".failures", "expected an array of tables");
        for (std::size_t i = 0; i < arr.size(); ++i) {
            const json& j = arr[i];
            const std::string w = fmt::format("{}.failures[{}]", file, i);
            only(j, w, {"kind", "at_us", "tier", "plane", "index", "t0", "t1", "host", "down_us", "period_us", "until_us"});
            sim::FailureSpec f;
            const auto k = j.value("kind", std::string{});
            if (k == "link_down") f.kind = sim::FailureKind::link_down;
            else if (k == "link_up") f.kind = sim::FailureKind::link_up;
            else if (k == "link_flap") f.kind = sim::FailureKind::link_flap;
            else if (k == "switch_down") f.kind = sim::FailureKind::switch_down;
            else if (k == "switch_up") f.kind = sim::FailureKind::switch_up;
            else if (k == "nic_port_down") f.kind = sim::FailureKind::nic_port_down;
            else if (k == "nic_port_up") f.kind = sim::FailureKind::nic_port_up;
            else fail(w + ".kind", fmt::format("unknown failure kind '{}'", k));
            double at = 0, down = 0, period = 0, until = 0;
            get(j, "at_us", at, w);
            get(j, "down_us", down, w);
            get(j, "period_us", period, w);
            get(j, "until_us", until, w);
            f.at_ps = us_to_ps(at);
            f.down_ps = us_to_ps(down);
            f.period_ps = us_to_ps(period);
            f.until_ps = us_to_ps(until);
            if (j.contains("tier")) f.tier = parse_tier(j["tier"].get<std::string>(), w + ".tier");
            get(j, "plane", f.plane, w);
            get(j, "index", f.index, w);
            get(j, "t0", f.index, w);
            get(j, "t1", f.peer, w);
            get(j, "host", f.host, w);
            c.failures.push_back(f);
        }
    }
    if (root.contains("output")) {
        const json& j = root["output"];
        const std::string w = file + ".output";
        only(j, w, {"bucket_us", "tracked_host", "queue_peak_from_us"});
        double bucket = 10;
        get(j, "bucket_us", bucket, w);
        c.telemetry_bucket_ps = us_to_ps(bucket);
        get(j, "tracked_host", c.tracked_src_host, w);
        double peak_from = 0;
        get(j, "queue_peak_from_us", peak_from, w);
        c.sim.queue_peak_from_ps = us_to_ps(peak_from);
    }
    return c;
}

}  // namespace

core::PathPolicy parse_policy(const std::string& name) {
    if (const core::PathPolicyInfo* p = core::find_path_policy(name)) return p->id;
    std::vector<std::string_view> names;
    for (const core::PathPolicyInfo& p : core::kPathPolicies) names.push_back(p.name);
    throw std::runtime_error(fmt::format("policy must be one of {}, got '{}'", fmt::join(names, ", "), name));
}

sim::RoutingMode parse_routing(const std::string& name) {
    if (name == "usid") return sim::RoutingMode::usid;
    if (name == "ecmp") return sim::RoutingMode::ecmp;
    if (name == "ddc") return sim::RoutingMode::ddc;
    if (name == "ev_path") return sim::RoutingMode::ev_path;
    throw std::runtime_error(fmt::format("routing must be usid, ecmp, ev_path or ddc, got '{}'", name));
}

core::CcAlgorithm parse_cc(const std::string& name) {
    if (const core::CcAlgorithmInfo* a = core::find_cc(name)) return a->id;
    std::vector<std::string_view> names;
    for (const core::CcAlgorithmInfo* a : core::cc_algorithms()) names.push_back(a->name);
    throw std::runtime_error(fmt::format("cc must be one of {}, got '{}'", fmt::join(names, ", "), name));
}

sim::ScenarioConfig load_scenario(const std::string& path) {
    json root;
    const bool is_toml = path.size() >= 5 && path.compare(path.size() - 5, 5, ".toml") == 0;
    if (is_toml) {
        toml::table tbl;
        try {
            tbl = toml::parse_file(path);
        } catch (const toml::parse_error& e) {
            std::ostringstream os;
            os << e;
            fail(path, os.str());
        }
        std::ostringstream os;
        os << toml::json_formatter{tbl};
        root = json::parse(os.str());
    } else {
        std::ifstream in(path);
        if (!in) fail(path, "cannot open");
        try {
            root = json::parse(in);
        } catch (const json::exception& e) {
            fail(path, e.what());
        }
    }
    return from_json(root, path);
}

}  // namespace omrc::fabric
