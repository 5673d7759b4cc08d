// SPDX-License-Identifier: BSD-3-Clause
// The engine's registries (congestion control: lib/core/cc.hpp; path
// policies: lib/core/path_policy.hpp) in the public API's terms, and the
// conversions of what they govern between the public types and the engine's.
#pragma once

#include "core/config.hpp"
#include "omrc/verbs.hpp"

namespace omrc::detail {

/// The engine's CcConfig of a public one (the algorithm by its id: the
/// engine refuses one it does not have).
[[nodiscard]] core::CcConfig to_core(const CcConfig& c) noexcept;
/// The public CcConfig of an engine's one.
[[nodiscard]] CcConfig from_core(const core::CcConfig& c) noexcept;
/// The engine's policy of a public one; false for a value the public API does not offer.
[[nodiscard]] bool to_core(PathPolicy p, core::PathPolicy& out) noexcept;

}  // namespace omrc::detail
