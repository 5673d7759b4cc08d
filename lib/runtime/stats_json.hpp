// SPDX-License-Identifier: BSD-3-Clause
// Counters of the engine, its QPs and EVs, the driver and the progress loop
// as JSON objects (nlohmann::json). Snapshots, built on the owning thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/engine.hpp"
#include "driver/driver.hpp"
#include "runtime/progress_loop.hpp"

namespace omrc::runtime {

[[nodiscard]] nlohmann::json engine_json(const core::Engine& engine);
/// The same for counters summed over a device's engines (one per worker).
[[nodiscard]] nlohmann::json engine_json(const core::EngineStats& s, std::uint32_t local_plane_mask);
/// The connection manager (worker 0's): its counters, live and time-wait entries.
[[nodiscard]] nlohmann::json cm_json(const core::ConnManager& cm);
/// One QP: identity, state, sender/receiver positions, QpStats, paths and per-EV counters.
[[nodiscard]] nlohmann::json qp_json(const core::Qp& qp);
[[nodiscard]] nlohmann::json driver_json(const driver::Driver& drv);
/// The same with `s` in place of drv.stats() (the sum over a driver's queues).
[[nodiscard]] nlohmann::json driver_json(const driver::Driver& drv, const driver::DriverStats& s);
/// How a worker's frames moved between workers, and its thread.
[[nodiscard]] nlohmann::json exchange_json(const ExchangeStats& s);

// Sums over a device's workers.
void add(core::EngineStats& into, const core::EngineStats& s) noexcept;
void add(ProgressStats& into, const ProgressStats& s) noexcept;
void add(PathEventCounts& into, const PathEventCounts& s) noexcept;
void add(driver::DriverStats& into, const driver::DriverStats& s) noexcept;
[[nodiscard]] nlohmann::json progress_json(const ProgressStats& s);
/// Path events seen by the progress loop, by kind, with those the engine
/// dropped before they were drained.
[[nodiscard]] nlohmann::json path_events_json(const PathEventCounts& c, const core::EngineStats& s);
/// Per plane over a device's QPs: the link, what was sent and lost, the EVs
/// active and out, and the (plane, T1) groups' retirements and probes.
[[nodiscard]] nlohmann::json planes_summary_json(const driver::Driver& drv, std::span<const core::Qp* const> qps);

[[nodiscard]] const char* to_string(core::QpState s) noexcept;

}  // namespace omrc::runtime
