// SPDX-License-Identifier: BSD-3-Clause
#include "log/log.hpp"

#include <cstdlib>
#include <string_view>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace omrc::log {

namespace {

std::shared_ptr<spdlog::logger> make_logger() {
    if (auto existing = spdlog::get("omrc")) return existing;
    std::shared_ptr<spdlog::logger> log;
    try {
        log = spdlog::stderr_color_mt("omrc");
    } catch (const spdlog::spdlog_ex&) {
        // Registered by someone else in the meantime.
        if (auto existing = spdlog::get("omrc")) return existing;
        throw;
    }
    log->set_level(spdlog::level::warn);
    if (const char* env = std::getenv("OMRC_LOG_LEVEL"); env != nullptr && *env != '\0') {
        const std::string_view name(env);
        const spdlog::level::level_enum level = spdlog::level::from_str(std::string(name));
        // from_str() maps unknown names to off; only "off" itself may turn logging off.
        if (level != spdlog::level::off || name == "off")
            log->set_level(level);
        else
            log->warn("OMRC_LOG_LEVEL={} is not a level name; using warn", name);
    }
    return log;
}

}  // namespace

spdlog::logger& logger() {
    static const std::shared_ptr<spdlog::logger> log = make_logger();
    return *log;
}

}  // namespace omrc::log
