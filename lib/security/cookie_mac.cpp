// SPDX-License-Identifier: BSD-3-Clause
#include "security/cookie_mac.hpp"

#include <cstring>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

namespace omrc::security {

CookieMac::CookieMac(std::span<const std::uint8_t, 32> secret) {
    mac_ = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    if (mac_ == nullptr) return;
    ctx_ = EVP_MAC_CTX_new(mac_);
    if (ctx_ == nullptr) return;
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_construct_end()};
    if (EVP_MAC_init(ctx_, secret.data(), secret.size(), params) != 1) {
        EVP_MAC_CTX_free(ctx_);
        ctx_ = nullptr;
    }
}

CookieMac::~CookieMac() {
    EVP_MAC_CTX_free(ctx_);
    EVP_MAC_free(mac_);
}

bool CookieMac::mac(std::span<const std::uint8_t> data, std::span<std::uint8_t> out) {
    if (ctx_ == nullptr || out.size() > 32) return false;
    // A null key keeps the one given at construction (OpenSSL 3's HMAC re-init).
    unsigned char full[32];
    std::size_t len = 0;
    const bool ok = EVP_MAC_init(ctx_, nullptr, 0, nullptr) == 1 && EVP_MAC_update(ctx_, data.data(), data.size()) == 1 &&
                    EVP_MAC_final(ctx_, full, &len, sizeof full) == 1 && len == sizeof full;
    if (ok) std::memcpy(out.data(), full, out.size());
    OPENSSL_cleanse(full, sizeof full);
    return ok;
}

bool cookie_mac(std::span<const std::uint8_t, 32> secret, std::span<const std::uint8_t> data,
                std::span<std::uint8_t> out) {
    CookieMac m(secret);
    return m.mac(data, out);
}

}  // namespace omrc::security
