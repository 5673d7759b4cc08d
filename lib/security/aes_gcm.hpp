// SPDX-License-Identifier: BSD-3-Clause
// AES-GCM (128 or 256) for sealed frames, over intel-ipsec-mb's direct GCM
// API (chosen against OpenSSL 3's EVP by bench/crypto_cost.cpp: 4-5 times
// less time per packet on this CPU; docs/PERFORMANCE.md "Encryption"). One
// AesGcm holds one key's expanded schedule and hash keys: the key is set
// once, each packet brings its 96-bit nonce. Pure computation: no clock, no
// kernel. The library's dispatch table (IMB_MGR, the best code path for the
// CPU) is made once per process on first use and only read after that.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace omrc::security {

inline constexpr std::size_t kGcmNonceBytes = 12;
inline constexpr std::size_t kGcmTagBytes = 16;

/// One AES-GCM key. seal and open use a working state kept with the key:
/// one thread at a time per object (each QP's keys are its engine's).
class AesGcm {
public:
    AesGcm() = default;
    ~AesGcm();
    AesGcm(AesGcm&&) noexcept;
    AesGcm& operator=(AesGcm&&) noexcept;
    AesGcm(const AesGcm&) = delete;
    AesGcm& operator=(const AesGcm&) = delete;

    /// Sets the key: 16 bytes (AES-GCM-128) or 32 (AES-GCM-256). False on
    /// any other size or when the library cannot start; the object is then unkeyed.
    bool set_key(std::span<const std::uint8_t> key);
    [[nodiscard]] bool keyed() const noexcept { return key_ != nullptr; }

    /// Encrypts the pieces of `plain` in order into `out` (their total
    /// size), authenticating `aad` too, and writes the 16-byte tag. False
    /// only when unkeyed.
    bool seal(std::span<const std::uint8_t, kGcmNonceBytes> nonce, std::span<const std::uint8_t> aad,
              std::span<const std::span<const std::uint8_t>> plain, std::uint8_t* out,
              std::span<std::uint8_t, kGcmTagBytes> tag) noexcept;

    /// Decrypts the pieces of `cipher` into `out` and checks `tag`. False on
    /// a tag mismatch (out's bytes are then meaningless and must not be used).
    bool open(std::span<const std::uint8_t, kGcmNonceBytes> nonce, std::span<const std::uint8_t> aad,
              std::span<const std::span<const std::uint8_t>> cipher, std::uint8_t* out,
              std::span<const std::uint8_t, kGcmTagBytes> tag) noexcept;

private:
    struct KeyData;                  ///< the library's gcm_key_data (64-byte aligned)
    struct KeyFree {
        void operator()(KeyData* k) const noexcept;
    };
    std::unique_ptr<KeyData, KeyFree> key_;
    bool aes256_ = false;
};

}  // namespace omrc::security
