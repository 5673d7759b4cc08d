// SPDX-License-Identifier: BSD-3-Clause
// PSP key derivation: the key of an SPI from the receiver's master key, as
// the PSP specification defines it — NIST SP 800-108 in counter mode with
// AES-CMAC-256 as the PRF, label "Pv0" (AES-GCM-128) or "Pv1" (AES-GCM-256),
// a zero separator, the SPI as context and the key length in bits, one
// 16-byte CMAC block per counter value. Computed with OpenSSL's KBKDF.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "security/aes_gcm.hpp"
#include "wire/psp.hpp"

namespace omrc::security {

inline constexpr std::size_t kMasterKeyBytes = 32;  ///< AES-256 CMAC key
using MasterKey = std::array<std::uint8_t, kMasterKeyBytes>;
using DerivedKey = std::array<std::uint8_t, 32>;     ///< the first psp_key_bytes(version) bytes are used

/// The key of `spi` for `version` under `master` (bit 31 of the SPI says
/// which of the receiver's two master keys the caller passes). False only
/// when OpenSSL fails.
bool psp_derive_key(const MasterKey& master, std::uint32_t spi, wire::PspVersion version, DerivedKey& out);

/// psp_derive_key(), then the key expanded into `out` and wiped: the AES
/// schedule of `spi`'s key. False when either step fails (`out` unkeyed).
bool psp_key_schedule(const MasterKey& master, std::uint32_t spi, wire::PspVersion version, AesGcm& out);

/// The master key of one receiving device, from a master key the cluster
/// shares: SP 800-108 KBKDF (AES-CMAC-256) with label "OpenMRC PSP receiver"
/// and the device's IPv6 address as context. PSP gives every receiver a
/// master key of its own; deriving it from the receiver's address keeps two
/// devices that hold the same cluster key from deriving the same key for the
/// same SPI (the same QPN on both ends, or on two hosts), and a frame
/// reflected to its sender from opening there. False only when OpenSSL fails.
bool receiver_master_key(const MasterKey& cluster, std::span<const std::uint8_t, 16> receiver_addr, MasterKey& out);

/// A connection's receive master key (docs/PROTOCOL.md §13.4): KBKDF
/// (AES-CMAC-256) of the receiver master key with label "OpenMRC PSP
/// connection" and the receiver's 16-byte key nonce as context. The SPI keys
/// of a QP set up by the connection manager derive from it, so a QPN used
/// again under a fresh nonce never brings an old key back. False only when
/// OpenSSL fails.
bool connection_master_key(const MasterKey& receiver_master, std::span<const std::uint8_t, 16> nonce, MasterKey& out);

/// A CM message's key check (§13.4): the first 16 bytes of KBKDF of the
/// connection master key with label "OpenMRC CM key check" and `context`.
bool cm_key_check(const MasterKey& connection_master, std::span<const std::uint8_t> context,
                  std::span<std::uint8_t, 16> out);

/// Overwrites `n` bytes with zeros in a way the compiler may not remove
/// (OpenSSL's cleanse): for keys about to go out of scope.
void wipe(void* p, std::size_t n) noexcept;

/// Parses 64 hex digits (a master key in a configuration file). False on any
/// other length or a non-hex digit.
bool parse_master_key(std::string_view hex, MasterKey& out) noexcept;

}  // namespace omrc::security
