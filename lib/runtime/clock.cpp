// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/clock.hpp"

#include <chrono>

namespace omrc::runtime {

std::uint64_t steady_now_ns() noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

}  // namespace omrc::runtime
