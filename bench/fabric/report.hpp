// SPDX-License-Identifier: BSD-3-Clause
// omrc-fabric outputs: the summary (text or one JSON object whose keys name
// their units), CSV time series and gnuplot PNG plots.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "drivers/sim/scenario.hpp"

namespace omrc::fabric {

[[nodiscard]] nlohmann::json summary_json(const sim::ScenarioConfig& cfg, const sim::Result& r);
[[nodiscard]] std::string summary_text(const sim::ScenarioConfig& cfg, const sim::Result& r);
/// series.csv, fct.csv, link_util.csv, steps.csv and summary.json into `dir` (created).
void write_csv(const std::string& dir, const sim::ScenarioConfig& cfg, const sim::Result& r);
/// throughput.png, fct_cdf.png, link_util.png into `dir` via gnuplot; returns
/// false (and says why on stderr) when gnuplot is missing or fails.
bool render_plots(const std::string& dir, const sim::ScenarioConfig& cfg, const sim::Result& r);

}  // namespace omrc::fabric
