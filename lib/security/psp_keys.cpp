// SPDX-License-Identifier: BSD-3-Clause
#include "security/psp_keys.hpp"

#include <cstring>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

namespace omrc::security {

namespace {
/// SP 800-108 KBKDF in counter mode, AES-CMAC-256 under `key`: [i]32 || label || 0x00 || context || [L]32.
bool kbkdf_cmac(const MasterKey& key, std::span<const char> label, std::span<const unsigned char> context,
                std::span<std::uint8_t> out) {
    EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "KBKDF", nullptr);
    if (kdf == nullptr) return false;
    EVP_KDF_CTX* kctx = EVP_KDF_CTX_new(kdf);
    EVP_KDF_free(kdf);
    if (kctx == nullptr) return false;
    char mode[] = "COUNTER";
    char mac[] = "CMAC";
    char cipher[] = "AES-256-CBC";
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MODE, mode, 0),
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MAC, mac, 0),
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_CIPHER, cipher, 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<std::uint8_t*>(key.data()), key.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, const_cast<char*>(label.data()), label.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<unsigned char*>(context.data()), context.size()),
        OSSL_PARAM_construct_end()};
    const bool ok = EVP_KDF_derive(kctx, out.data(), out.size(), params) == 1;
    EVP_KDF_CTX_free(kctx);
    return ok;
}
}  // namespace

bool psp_derive_key(const MasterKey& master, std::uint32_t spi, wire::PspVersion version, DerivedKey& out) {
    // PSP's input per block: [i]32 || "Pv0"/"Pv1" || 0x00 || SPI || [L]32.
    const char label[] = {'P', 'v', version == wire::PspVersion::aes_gcm_128 ? '0' : '1'};
    const unsigned char context[4] = {static_cast<unsigned char>(spi >> 24), static_cast<unsigned char>(spi >> 16),
                                      static_cast<unsigned char>(spi >> 8), static_cast<unsigned char>(spi)};
    out.fill(0);
    return kbkdf_cmac(master, label, context, std::span(out).first(wire::psp_key_bytes(version)));
}

bool psp_key_schedule(const MasterKey& master, std::uint32_t spi, wire::PspVersion version, AesGcm& out) {
    DerivedKey key;
    const bool ok = psp_derive_key(master, spi, version, key) &&
                    out.set_key(std::span(key).first(wire::psp_key_bytes(version)));
    wipe(key.data(), key.size());
    return ok;
}

bool receiver_master_key(const MasterKey& cluster, std::span<const std::uint8_t, 16> receiver_addr, MasterKey& out) {
    static constexpr char kLabel[] = "OpenMRC PSP receiver";
    return kbkdf_cmac(cluster, std::span(kLabel, sizeof kLabel - 1), receiver_addr, out);
}

bool connection_master_key(const MasterKey& receiver_master, std::span<const std::uint8_t, 16> nonce, MasterKey& out) {
    static constexpr char kLabel[] = "OpenMRC PSP connection";
    return kbkdf_cmac(receiver_master, std::span(kLabel, sizeof kLabel - 1), nonce, out);
}

bool cm_key_check(const MasterKey& connection_master, std::span<const std::uint8_t> context,
                  std::span<std::uint8_t, 16> out) {
    static constexpr char kLabel[] = "OpenMRC CM key check";
    return kbkdf_cmac(connection_master, std::span(kLabel, sizeof kLabel - 1), context, out);
}

void wipe(void* p, std::size_t n) noexcept { OPENSSL_cleanse(p, n); }

bool parse_master_key(std::string_view hex, MasterKey& out) noexcept {
    if (hex.size() != 2 * kMasterKeyBytes) return false;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < kMasterKeyBytes; ++i) {
        const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return true;
}

}  // namespace omrc::security
