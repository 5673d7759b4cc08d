// SPDX-License-Identifier: BSD-3-Clause
// Opening the sealed frames of a capture (encrypted mode, docs/PROTOCOL.md
// §12) with the cluster master keys the devices were configured with, as a
// receiver does: the receiver's master key from the cluster key and the
// frame's destination address, the connection master key from the
// receiver's nonce where the QP was set up by the connection manager (the
// nonces travel in the clear in the capture's REQ and REP messages, §13.4),
// then the SPI's key. Each opened frame becomes the plain frame the receiver
// parses (ICRC recomputed). No replay window: a capture is read, not
// defended.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "security/aes_gcm.hpp"
#include "security/psp_keys.hpp"
#include "wire/frame.hpp"
#include "wire/ipv6.hpp"

namespace omrc::pcaptool {

enum class SealStatus : std::uint8_t {
    plain,      ///< not a sealed frame (no UDP port 1000)
    opened,     ///< the ICV verified; `plain` holds the frame
    no_key,     ///< the SPI's master key was not given
    bad_tag,    ///< the ICV did not verify under the derived key
    malformed,  ///< a sealed frame the PSP walk refuses (wire::locate_psp)
};
[[nodiscard]] const char* to_string(SealStatus s) noexcept;

class Decryptor {
public:
    /// Cluster master keys by key select (0, 1); either may be absent.
    explicit Decryptor(std::array<std::optional<security::MasterKey>, 2> cluster);

    /// Learns the key nonce of an encrypted REQ or REP (a parsed CM frame):
    /// frames later sent to that QP open under its connection key.
    void observe(const wire::ParsedFrame& p);

    /// Opens `frame` if it is sealed. On opened, `plain` holds the plain frame.
    SealStatus open(std::span<const std::uint8_t> frame, std::vector<std::uint8_t>& plain, std::uint32_t& spi);

private:
    struct Sa {
        security::AesGcm gcm;
    };
    /// The keys `spi` may be under at `receiver`: from each nonce known, then without one.
    std::vector<Sa> candidates(const wire::Ipv6Addr& receiver, std::uint32_t spi, wire::PspVersion version);
    std::array<std::optional<security::MasterKey>, 2> cluster_;
    /// (device address, QPN) → the key nonces QPs of that number there chose
    /// (their REQs and REPs). Two devices on one address (udp over ::1) can
    /// both have a QP of a number: each candidate is tried until one opens.
    std::map<std::pair<wire::Ipv6Addr, std::uint32_t>, std::vector<std::array<std::uint8_t, 16>>> nonces_;
    /// (receiver address, SPI) → the keys that opened frames under it, derived once
    /// (two, for two devices on one address whose QPs share a number).
    std::map<std::pair<wire::Ipv6Addr, std::uint32_t>, std::vector<Sa>> sas_;
};

/// Reads a master key file: 64 hex digits (key 0) or 128 (keys 0 and 1),
/// whitespace ignored. False with `why` otherwise.
bool read_master_keys(const std::string& path, std::array<std::optional<security::MasterKey>, 2>& out,
                      std::string& why);

}  // namespace omrc::pcaptool
