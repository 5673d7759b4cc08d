// SPDX-License-Identifier: BSD-3-Clause
#include "security/psp_keys.hpp"

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

namespace omrc::security {

bool psp_derive_key(const MasterKey& master, std::uint32_t spi, wire::PspVersion version, DerivedKey& out) {
    const std::size_t len = wire::psp_key_bytes(version);
    char label[] = {'P', 'v', version == wire::PspVersion::aes_gcm_128 ? '0' : '1'};
    unsigned char context[4] = {static_cast<unsigned char>(spi >> 24), static_cast<unsigned char>(spi >> 16),
                                static_cast<unsigned char>(spi >> 8), static_cast<unsigned char>(spi)};
    EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "KBKDF", nullptr);
    if (kdf == nullptr) return false;
    EVP_KDF_CTX* kctx = EVP_KDF_CTX_new(kdf);
    EVP_KDF_free(kdf);
    if (kctx == nullptr) return false;
    char mode[] = "COUNTER";
    char mac[] = "CMAC";
    char cipher[] = "AES-256-CBC";
    // SP 800-108 input per block: [i]32 || label || 0x00 || context || [L]32
    // (OpenSSL's defaults: a 32-bit counter, the separator and L included).
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MODE, mode, 0),
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MAC, mac, 0),
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_CIPHER, cipher, 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<std::uint8_t*>(master.data()), master.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, label, sizeof label),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, context, sizeof context),
        OSSL_PARAM_construct_end()};
    out.fill(0);
    const bool ok = EVP_KDF_derive(kctx, out.data(), len, params) == 1;
    EVP_KDF_CTX_free(kctx);
    return ok;
}

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
