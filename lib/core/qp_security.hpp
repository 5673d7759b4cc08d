// SPDX-License-Identifier: BSD-3-Clause
// A QP's encrypted mode (docs/PROTOCOL.md §12): its PSP security
// associations. Transmit: the peer's SPI, key and IV counter of the current
// epoch. Receive: our SPIs of the current and the previous epoch (two live
// epochs, so frames sent before a rotation still open), and the next one,
// derived when its first frame shows up. Each receive epoch has its own
// replay window.
#pragma once

#include <cstdint>

#include "core/replay_window.hpp"
#include "security/aes_gcm.hpp"
#include "wire/psp.hpp"

namespace omrc::core {

struct QpSecurity {
    struct RxEpoch {
        bool live = false;
        std::uint32_t spi = 0;        ///< psp_spi(key select, epoch, our QPN)
        security::AesGcm key;
        ReplayWindow window;
    };

    wire::PspVersion version = wire::PspVersion::aes_gcm_256;

    // Transmit (the peer's receive SA).
    std::uint32_t tx_spi = 0;
    std::uint64_t tx_iv = 0;          ///< last IV used under tx_spi (the next frame takes tx_iv + 1)
    security::AesGcm tx;
    bool tx_key_given = false;        ///< the key came with the QP's attributes (not derived): no rotation
    /// snd_nxt when the current transmit epoch began: the next rotation waits
    /// until every packet first sent before it is acknowledged (snd_una has
    /// passed it), so no frame of the epoch the peer then retires is needed.
    std::uint32_t tx_epoch_psn = 0;
    bool tx_rotated = false;          ///< at least one rotation (tx_epoch_psn meaningful)

    // Receive (ours).
    RxEpoch cur, prev, next;
};

}  // namespace omrc::core
