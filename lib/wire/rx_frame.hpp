// SPDX-License-Identifier: BSD-3-Clause
// A received frame as a driver hands it over: a view into driver-owned
// memory (valid until the driver's next rx_burst) and the port it arrived on.
#pragma once

#include <cstdint>

namespace omrc::wire {

struct RxFrame {
    const std::uint8_t* data = nullptr;
    std::uint32_t len = 0;
    std::uint8_t plane = 0;  ///< port (plane) the frame arrived on
};

}  // namespace omrc::wire
