// SPDX-License-Identifier: BSD-3-Clause
// A QP's encrypted mode (docs/PROTOCOL.md §12): its PSP security
// associations. Transmit: the peer's SPI, key and IV counter of the current
// epoch. Receive: our SPIs of the current and the previous epoch (two live
// epochs, so frames sent before a rotation still open), and the next one,
// derived when its first frame shows up. Each receive epoch has its own
// replay window.
#pragma once

#include <array>
#include <cstdint>

#include "core/replay_window.hpp"
#include "security/aes_gcm.hpp"
#include "security/psp_keys.hpp"
#include "wire/psp.hpp"

namespace omrc::core {

/// Receive epochs a frame may be ahead of the current one: a sender with
/// nothing in flight may rotate again before a frame of its last epoch arrived.
inline constexpr std::uint32_t kMaxEpochsAhead = 3;

struct QpSecurity {
    QpSecurity() = default;
    QpSecurity(const QpSecurity&) = delete;
    QpSecurity& operator=(const QpSecurity&) = delete;
    ~QpSecurity() {
        security::wipe(peer_master.data(), peer_master.size());
        security::wipe(rx_master.data(), rx_master.size());
    }

    struct RxEpoch {
        bool live = false;
        std::uint32_t spi = 0;        ///< psp_spi(key select, epoch, our QPN)
        security::AesGcm key;
        ReplayWindow window;
    };

    wire::PspVersion version = wire::PspVersion::aes_gcm_256;

    // Transmit (the peer's receive SA).
    std::uint32_t tx_spi = 0;
    /// Last IV used under tx_spi (the next frame takes tx_iv + 1). Each key
    /// epoch starts at a random multiple of 2^32: should an SPI's key ever come
    /// back (the same QPN again after a restart), its IVs would not.
    std::uint64_t tx_iv = 0;
    security::AesGcm tx;
    bool tx_key_given = false;        ///< the key came with the QP's attributes (not derived): no rotation
    /// The peer's receiver master key (security::receiver_master_key of its
    /// address), for the keys of its next epochs; wiped with this object.
    security::MasterKey peer_master{};
    /// Connection keys (QpAttr::psp_nonces): our receive master key for
    /// this QP (connection_master_key of the device's, under our nonce),
    /// which its receive epochs derive from instead of the device's.
    security::MasterKey rx_master{};
    bool rx_master_own = false;
    std::uint8_t rx_master_select = 0;  ///< the device master key rx_master came from
    std::uint32_t tx_first_epoch = 0; ///< the epoch the QP began with: 127 rotations at most, so no SPI comes back
    /// snd_nxt when the current transmit epoch began: the next rotation waits
    /// until every packet first sent before it is acknowledged (snd_una has
    /// passed it), so no frame of the epoch the peer then retires is needed.
    std::uint32_t tx_epoch_psn = 0;
    bool tx_rotated = false;          ///< at least one rotation (tx_epoch_psn meaningful)

    // Receive (ours).
    RxEpoch cur, prev;
    /// Epochs cur + 1 .. cur + kMaxEpochsAhead, each derived at most once
    /// (the first time a frame names it) until the peer's move is verified.
    std::array<RxEpoch, kMaxEpochsAhead> next;
};

}  // namespace omrc::core
