// SPDX-License-Identifier: BSD-3-Clause
#include "log.hpp"

#include <atomic>

#include "log/log.hpp"

namespace omrc::nccl {

namespace {

std::atomic<ncclDebugLogger_t> g_nccl_logger{nullptr};

}  // namespace

void set_nccl_logger(ncclDebugLogger_t logger) noexcept {
    if (logger != nullptr) g_nccl_logger.store(logger, std::memory_order_release);
}

void log_line(Level level, const std::string& text, Where where) noexcept {
    try {
        auto& omrc_log = omrc::log::logger();
        switch (level) {
            case Level::warn: omrc_log.warn("nccl: {}", text); break;
            case Level::info: omrc_log.info("nccl: {}", text); break;
            case Level::debug: omrc_log.debug("nccl: {}", text); break;
        }
    } catch (...) {
        // A logger that cannot write must not take the caller down.
    }
    if (ncclDebugLogger_t nccl_log = g_nccl_logger.load(std::memory_order_acquire)) {
        const ncclDebugLogLevel l = level == Level::warn   ? NCCL_LOG_WARN
                                    : level == Level::info ? NCCL_LOG_INFO
                                                           : NCCL_LOG_TRACE;
        nccl_log(l, NCCL_NET, where.file, where.line, "NET/OpenMRC : %s", text.c_str());
    }
}

}  // namespace omrc::nccl
