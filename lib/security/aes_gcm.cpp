// SPDX-License-Identifier: BSD-3-Clause
#include "security/aes_gcm.hpp"

#include <intel-ipsec-mb.h>
#include <openssl/crypto.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace omrc::security {

namespace {
/// The library's dispatch table for this CPU, made once (a thread-safe
/// static); the direct GCM API keeps its state in the key and context
/// structures, so the table is only read.
IMB_MGR* manager() noexcept {
    static IMB_MGR* const mgr = [] {
        IMB_MGR* m = alloc_mb_mgr(0);
        if (m != nullptr) init_mb_mgr_auto(m, nullptr);
        return m;
    }();
    return mgr;
}
}  // namespace

struct AesGcm::KeyData {
    gcm_key_data k;
    /// The working state of one seal or open (counter blocks, the hash so
    /// far, a partial block's key stream). Kept beside the key schedule, which
    /// is the greater secret and is wiped with it, rather than wiped on every
    /// call: a per-call wipe of a stack copy cost an 8-byte frame's seal and
    /// open about 1 % of bench/engine_cost's sealed row.
    gcm_context_data ctx;
    IMB_MGR* mgr = nullptr;  ///< manager(), kept here so that a call does not test its guard
};

void AesGcm::KeyFree::operator()(KeyData* k) const noexcept {
    if (k == nullptr) return;
    OPENSSL_cleanse(k, sizeof *k);  // key schedules are secrets
    std::free(k);
}

AesGcm::~AesGcm() = default;
AesGcm::AesGcm(AesGcm&&) noexcept = default;
AesGcm& AesGcm::operator=(AesGcm&&) noexcept = default;

bool AesGcm::set_key(std::span<const std::uint8_t> key) {
    key_.reset();
    IMB_MGR* m = manager();
    if (m == nullptr || (key.size() != 16 && key.size() != 32)) return false;
    void* mem = std::aligned_alloc(64, (sizeof(KeyData) + 63) / 64 * 64);
    if (mem == nullptr) return false;
    std::unique_ptr<KeyData, KeyFree> k(new (mem) KeyData{});
    k->mgr = m;
    aes256_ = key.size() == 32;
    if (aes256_) IMB_AES256_GCM_PRE(m, key.data(), &k->k);
    else IMB_AES128_GCM_PRE(m, key.data(), &k->k);
    key_ = std::move(k);
    return true;
}

bool AesGcm::seal(std::span<const std::uint8_t, kGcmNonceBytes> nonce, std::span<const std::uint8_t> aad,
                  std::span<const std::span<const std::uint8_t>> plain, std::uint8_t* out,
                  std::span<std::uint8_t, kGcmTagBytes> tag) noexcept {
    if (!key_) return false;
    IMB_MGR* m = key_->mgr;
    gcm_context_data& ctx = key_->ctx;
    const gcm_key_data* k = &key_->k;
    if (plain.size() == 1) {  // one piece: the one-shot call
        if (aes256_)
            IMB_AES256_GCM_ENC(m, k, &ctx, out, plain[0].data(), plain[0].size(), nonce.data(), aad.data(), aad.size(),
                               tag.data(), tag.size());
        else
            IMB_AES128_GCM_ENC(m, k, &ctx, out, plain[0].data(), plain[0].size(), nonce.data(), aad.data(), aad.size(),
                               tag.data(), tag.size());
        return true;
    }
    if (aes256_) IMB_AES256_GCM_INIT(m, k, &ctx, nonce.data(), aad.data(), aad.size());
    else IMB_AES128_GCM_INIT(m, k, &ctx, nonce.data(), aad.data(), aad.size());
    for (const auto& p : plain) {
        if (p.empty()) continue;
        if (aes256_) IMB_AES256_GCM_ENC_UPDATE(m, k, &ctx, out, p.data(), p.size());
        else IMB_AES128_GCM_ENC_UPDATE(m, k, &ctx, out, p.data(), p.size());
        out += p.size();
    }
    if (aes256_) IMB_AES256_GCM_ENC_FINALIZE(m, k, &ctx, tag.data(), tag.size());
    else IMB_AES128_GCM_ENC_FINALIZE(m, k, &ctx, tag.data(), tag.size());
    return true;
}

bool AesGcm::open(std::span<const std::uint8_t, kGcmNonceBytes> nonce, std::span<const std::uint8_t> aad,
                  std::span<const std::span<const std::uint8_t>> cipher, std::uint8_t* out,
                  std::span<const std::uint8_t, kGcmTagBytes> tag) noexcept {
    if (!key_) return false;
    IMB_MGR* m = key_->mgr;
    gcm_context_data& ctx = key_->ctx;
    const gcm_key_data* k = &key_->k;
    std::uint8_t computed[kGcmTagBytes];
    if (cipher.size() == 1) {
        if (aes256_)
            IMB_AES256_GCM_DEC(m, k, &ctx, out, cipher[0].data(), cipher[0].size(), nonce.data(), aad.data(),
                               aad.size(), computed, sizeof computed);
        else
            IMB_AES128_GCM_DEC(m, k, &ctx, out, cipher[0].data(), cipher[0].size(), nonce.data(), aad.data(),
                               aad.size(), computed, sizeof computed);
    } else {
        if (aes256_) IMB_AES256_GCM_INIT(m, k, &ctx, nonce.data(), aad.data(), aad.size());
        else IMB_AES128_GCM_INIT(m, k, &ctx, nonce.data(), aad.data(), aad.size());
        for (const auto& p : cipher) {
            if (p.empty()) continue;
            if (aes256_) IMB_AES256_GCM_DEC_UPDATE(m, k, &ctx, out, p.data(), p.size());
            else IMB_AES128_GCM_DEC_UPDATE(m, k, &ctx, out, p.data(), p.size());
            out += p.size();
        }
        if (aes256_) IMB_AES256_GCM_DEC_FINALIZE(m, k, &ctx, computed, sizeof computed);
        else IMB_AES128_GCM_DEC_FINALIZE(m, k, &ctx, computed, sizeof computed);
    }
    return CRYPTO_memcmp(computed, tag.data(), kGcmTagBytes) == 0;  // constant time
}

}  // namespace omrc::security
