// SPDX-License-Identifier: BSD-3-Clause
// A received frame as a driver hands it over: a view into driver-owned
// memory (valid until the driver's next rx_burst) and the port it arrived on.
#pragma once

#include <cstdint>

#include "wire/int_telemetry.hpp"

namespace omrc::wire {

struct RxFrame {
    const std::uint8_t* data = nullptr;
    std::uint32_t len = 0;
    std::uint8_t plane = 0;  ///< port (plane) the frame arrived on
    /// Header split (a driver that keeps the payload where it is, as NICs
    /// with header/data split do): when `payload` is set the frame is
    /// data[0, split) + payload[0, payload_len) + data[split, len), where
    /// `split` must be the end of the extension headers (the parser checks
    /// it: WireError::bad_split) and data[split, len) holds pad and ICRC.
    /// Both pieces are valid for as long as `data` is.
    const std::uint8_t* payload = nullptr;
    std::uint32_t payload_len = 0;
    std::uint16_t split = 0;
    /// INT records that came with the frame (an OpenMRC extension only the
    /// simulator fills: a data packet's path, or the ones a SACK echoes);
    /// valid during the call; null = none.
    const IntStack* telemetry = nullptr;
    /// An endpoint request (EP_REQUEST) that another engine of the same
    /// device answers (a device with several workers shows each of them the
    /// request, and one of them answers): act on it, send nothing back.
    /// Ignored on every other frame. Set by the runtime, never by a driver.
    bool no_reply = false;

    [[nodiscard]] std::uint32_t frame_len() const noexcept { return len + payload_len; }
};

}  // namespace omrc::wire
