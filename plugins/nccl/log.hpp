// SPDX-License-Identifier: BSD-3-Clause
// The plugin's messages go to two places: NCCL's logger (the callback NCCL
// hands to init, so that NCCL_DEBUG=WARN/INFO shows them among NCCL's own)
// and OpenMRC's "omrc" logger (OMRC_LOG_LEVEL), which sees them when the
// plugin runs without NCCL (the test harness, omrc-nccl-bench) too.
#pragma once

#include <fmt/format.h>

#include <string>

#include "nccl_net_abi.h"

namespace omrc::nccl {

/// Installs NCCL's logger (init's argument); nullptr keeps the one installed.
/// Thread-safe: NCCL may call init from several threads (v11+: once per
/// communicator).
void set_nccl_logger(ncclDebugLogger_t logger) noexcept;

enum class Level { warn, info, debug };

/// A caller's file and line for NCCL's logger. (Not std::source_location:
/// clang 14 with libstdc++ 12 lacks it; __builtin_FILE/LINE as default
/// arguments give the same, evaluated where the call is.)
struct Where {
    const char* file = __builtin_FILE();
    int line = __builtin_LINE();
};

/// Writes one line. `where` names the caller's file and line for NCCL.
void log_line(Level level, const std::string& text, Where where = {__builtin_FILE(), __builtin_LINE()}) noexcept;

/// fmt-formatted warning; returns `result` so that a failure reads
///   return fail(ncclInvalidArgument, "isend: size {} exceeds {}", size, max);
template <class... Args>
ncclResult_t fail(ncclResult_t result, fmt::format_string<Args...> format, Args&&... args) {
    log_line(Level::warn, fmt::format(format, std::forward<Args>(args)...));
    return result;
}

}  // namespace omrc::nccl
