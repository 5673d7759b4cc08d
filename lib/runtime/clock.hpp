// SPDX-License-Identifier: BSD-3-Clause
// The only real clock in the library. Everything below the runtime takes
// time as an argument.
#pragma once

#include <cstdint>

namespace omrc::runtime {

/// Nanoseconds of std::chrono::steady_clock (monotonic, arbitrary epoch).
std::uint64_t steady_now_ns() noexcept;

}  // namespace omrc::runtime
