// SPDX-License-Identifier: BSD-3-Clause
// The library's logger: one spdlog logger named "omrc", created on first use.
// Its level comes from the environment variable OMRC_LOG_LEVEL (trace, debug,
// info, warn, err, critical, off; default warn). An application that
// registered its own "omrc" logger with spdlog before first use keeps it.
// Used for lifecycle events and errors only, never per packet.
#pragma once

#include <spdlog/logger.h>

namespace omrc::log {

/// Thread-safe (spdlog's _mt sink); the same logger for the whole process.
spdlog::logger& logger();

}  // namespace omrc::log
