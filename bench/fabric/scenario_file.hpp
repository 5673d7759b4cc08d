// SPDX-License-Identifier: BSD-3-Clause
// Scenario files: TOML (toml++) or JSON (nlohmann-json), one schema
// (docs/SIMULATOR.md §3). A TOML file is converted to JSON by toml++ and
// read by the same code as a JSON file, so the two never drift apart.
#pragma once

#include <string>

#include "drivers/sim/scenario.hpp"

namespace omrc::fabric {

/// Reads a scenario; throws std::runtime_error with the file name and the
/// offending key on a syntax error, an unknown key or a bad value.
sim::ScenarioConfig load_scenario(const std::string& path);

/// Parses a path policy's name (lib/core/path_policy.hpp); throws, naming the known ones, on anything else.
core::PathPolicy parse_policy(const std::string& name);

/// Parses a switch routing mode name (usid, ecmp, ddc); throws on anything else.
sim::RoutingMode parse_routing(const std::string& name);

/// Parses a congestion-control algorithm's name (lib/core/cc.hpp); throws, naming the known ones, on anything else.
core::CcAlgorithm parse_cc(const std::string& name);

}  // namespace omrc::fabric
