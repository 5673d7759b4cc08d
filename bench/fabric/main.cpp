// SPDX-License-Identifier: BSD-3-Clause
// omrc-fabric SCENARIO [--policy P] [--cc C] [--routing R] [--json] [--out DIR]: runs one fabric
// scenario in the packet-level simulator (drivers/sim) with real engines and
// prints its summary; --out also writes CSV series and PNG plots.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <cstdio>
#include <iostream>

#include "core/cc.hpp"
#include "report.hpp"
#include "scenario_file.hpp"

int main(int argc, char** argv) {
    CLI::App app{"omrc-fabric: OpenMRC engines on a simulated multi-plane fabric"};
    std::string scenario, policy, cc, routing, out;
    bool json = false;
    std::int64_t seed = -1;
    app.add_option("scenario", scenario, "scenario file (.toml or .json), e.g. bench/fabric/scenarios/perm_1024.toml")
        ->required()
        ->check(CLI::ExistingFile);
    // The policies' and algorithms' names and descriptions are their registrations'.
    std::string policies, ccs;
    for (const omrc::core::PathPolicyInfo& p : omrc::core::kPathPolicies)
        policies += fmt::format("{}{}: {}", policies.empty() ? "" : "; ", p.name, p.description);
    for (const omrc::core::CcAlgorithmInfo* a : omrc::core::cc_algorithms())
        ccs += fmt::format("{}{}: {}", ccs.empty() ? "" : "; ", a->name, a->description);
    app.add_option("--policy", policy, "path policy, overrides the scenario: " + policies);
    app.add_option("--cc", cc, "congestion control of every QP, overrides the scenario: " + ccs);
    app.add_option("--routing", routing, "switch routing, overrides the scenario: usid (SRv6 frames), ecmp (plain frames, switches hash the EV), ev_path (plain frames, the EV's path bits name each uplink: placed paths on any topology, the fat tree included) or ddc (a distributed disaggregated chassis per plane: VOQs, credits, cells, in-order delivery; clos and leaf_spine)");
    app.add_flag("--json", json, "print the summary as one JSON object");
    app.add_option("--out", out, "directory for CSV series, summary.json and PNG plots");
    app.add_option("--seed", seed, "seed, overrides the scenario");
    std::uint32_t workers = 0;
    app.add_option("--workers", workers, "engines per NIC (a device's workers, each QP on one), overrides the scenario")
        ->check(CLI::Range(1, 16));
    CLI11_PARSE(app, argc, argv);
    try {
        omrc::sim::ScenarioConfig cfg = omrc::fabric::load_scenario(scenario);
        if (!policy.empty()) cfg.policy = omrc::fabric::parse_policy(policy);
        if (!cc.empty()) cfg.cc.algorithm = omrc::fabric::parse_cc(cc);
        if (!routing.empty()) cfg.routing = omrc::fabric::parse_routing(routing);
        if (seed >= 0) cfg.seed = static_cast<std::uint64_t>(seed);
        if (workers != 0) cfg.sim.workers = workers;
        const omrc::sim::Result r = omrc::sim::run_scenario(cfg);
        if (json) std::cout << omrc::fabric::summary_json(cfg, r).dump() << "\n";
        else std::cout << omrc::fabric::summary_text(cfg, r);
        if (!out.empty()) {
            omrc::fabric::write_csv(out, cfg, r);
            omrc::fabric::render_plots(out, cfg, r);
        }
        return r.completed ? 0 : 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "omrc-fabric: %s\n", e.what());
        return 1;
    }
}
