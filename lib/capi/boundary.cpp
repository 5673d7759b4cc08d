// SPDX-License-Identifier: BSD-3-Clause
#include "capi/boundary.hpp"

#include <algorithm>
#include <cstring>

#include "log/log.hpp"

namespace omrc::capi {

void log_escaped(const char* fn, const char* what) noexcept {
    try {
        log::logger().error("{}: unexpected exception turned into EIO: {}", fn, what);
    } catch (...) {
        // The logger itself failed: the errno is all the caller gets.
    }
}

int copy_out(std::string_view text, char* buf, std::size_t len, std::size_t* needed) noexcept {
    if (buf == nullptr && len > 0) return EINVAL;
    if (needed != nullptr) *needed = text.size() + 1;
    if (len < text.size() + 1) {
        if (len > 0) buf[0] = '\0';
        return ERANGE;
    }
    std::memcpy(buf, text.data(), text.size());
    buf[text.size()] = '\0';
    return 0;
}

void copy_message(std::string_view text, char* err_buf, std::size_t err_len) noexcept {
    if (err_buf == nullptr || err_len == 0) return;
    const std::size_t n = std::min(text.size(), err_len - 1);
    std::memcpy(err_buf, text.data(), n);
    err_buf[n] = '\0';
}

}  // namespace omrc::capi
