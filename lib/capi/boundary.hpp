// SPDX-License-Identifier: BSD-3-Clause
// What the C API (include/omrc/omrc.h) does at its boundary: no exception
// leaves a C entry point, and strings leave through caller-sized buffers.
#pragma once

#include <cerrno>
#include <cstddef>
#include <exception>
#include <new>
#include <string_view>

namespace omrc::capi {

/// Logs an exception that reached a C entry point (`fn`), never throwing itself.
void log_escaped(const char* fn, const char* what) noexcept;

/// Runs `body` (which returns 0 or an errno) and turns whatever it throws
/// into an errno: std::bad_alloc → ENOMEM, anything else → EIO with a log line.
template <class Body>
int guarded(const char* fn, Body&& body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        return ENOMEM;
    } catch (const std::exception& e) {
        log_escaped(fn, e.what());
        return EIO;
    } catch (...) {
        log_escaped(fn, "an exception that is no std::exception");
        return EIO;
    }
}

/// snprintf-style output of `text` with its terminating NUL: 0 when it fits
/// in `len` bytes, else ERANGE with buf[0] = '\0' (when len > 0). *needed
/// (optional) gets text.size() + 1 either way. EINVAL for a NULL buf with len > 0.
int copy_out(std::string_view text, char* buf, std::size_t len, std::size_t* needed) noexcept;

/// Copies `text` into an error buffer the caller may have left NULL or
/// short (truncated, always NUL-terminated when err_len > 0).
void copy_message(std::string_view text, char* err_buf, std::size_t err_len) noexcept;

}  // namespace omrc::capi
