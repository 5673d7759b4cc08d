// SPDX-License-Identifier: BSD-3-Clause
// Counters of the engine, its QPs and EVs, the driver and the progress loop
// as JSON objects (nlohmann::json). Snapshots, built on the owning thread.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/engine.hpp"
#include "driver/driver.hpp"
#include "runtime/progress_loop.hpp"

namespace omrc::runtime {

[[nodiscard]] nlohmann::json engine_json(const core::Engine& engine);
/// One QP: identity, state, sender/receiver positions, QpStats, paths and per-EV counters.
[[nodiscard]] nlohmann::json qp_json(const core::Qp& qp);
[[nodiscard]] nlohmann::json driver_json(const driver::Driver& drv);
[[nodiscard]] nlohmann::json progress_json(const ProgressStats& s);

[[nodiscard]] const char* to_string(core::QpState s) noexcept;

}  // namespace omrc::runtime
