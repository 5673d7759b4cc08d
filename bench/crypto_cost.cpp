// SPDX-License-Identifier: BSD-3-Clause
// The cost floor of encrypted mode: AES-GCM seal of one packet's encrypted
// bytes (with a sealed frame's 36 bytes of AAD: PSP header, inner UDP, BTH)
// in the two libraries Debian offers — OpenSSL 3 EVP and intel-ipsec-mb (the
// one DPDK's crypto PMD uses; lib/security's AesGcm, measured here too, is
// built on it because of this comparison) — and the PSP key derivation. The
// engine_cost `psp` rows are compared against these (docs/PERFORMANCE.md
// "Encryption").
//
//   build/release/bench/crypto_cost
#include <benchmark/benchmark.h>
#include <intel-ipsec-mb.h>
#include <openssl/evp.h>

#include <array>
#include <cstring>
#include <cstdint>
#include <vector>

#include "security/aes_gcm.hpp"
#include "security/psp_keys.hpp"

namespace {

constexpr std::size_t kAadBytes = 36;

std::vector<std::uint8_t> bytes(std::size_t n, std::uint8_t seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + 31 * i);
    return v;
}

/// OpenSSL 3 EVP AES-GCM, keyed once, a nonce per packet: how lib/security
/// would use it (the comparison that chose intel-ipsec-mb).
struct Evp {
    EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
    Evp(const std::vector<std::uint8_t>& key, bool enc) {
        const EVP_CIPHER* ciph = key.size() == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm();
        if (enc) EVP_EncryptInit_ex(c, ciph, nullptr, key.data(), nullptr);
        else EVP_DecryptInit_ex(c, ciph, nullptr, key.data(), nullptr);
    }
    ~Evp() { EVP_CIPHER_CTX_free(c); }
};

void openssl_seal(benchmark::State& st) {
    const auto len = static_cast<std::size_t>(st.range(0));
    Evp e(bytes(static_cast<std::size_t>(st.range(1)), 7), true);
    auto in = bytes(len, 1), out = bytes(len, 0), aad = bytes(kAadBytes, 3);
    std::array<std::uint8_t, 12> nonce{};
    std::array<std::uint8_t, 16> tag{};
    std::uint64_t iv = 0;
    for (auto _ : st) {
        ++iv;
        std::memcpy(nonce.data() + 4, &iv, 8);
        int n = 0;
        EVP_EncryptInit_ex(e.c, nullptr, nullptr, nullptr, nonce.data());
        EVP_EncryptUpdate(e.c, nullptr, &n, aad.data(), static_cast<int>(aad.size()));
        EVP_EncryptUpdate(e.c, out.data(), &n, in.data(), static_cast<int>(len));
        EVP_EncryptFinal_ex(e.c, out.data() + n, &n);
        EVP_CIPHER_CTX_ctrl(e.c, EVP_CTRL_GCM_GET_TAG, 16, tag.data());
        benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * len));
}

/// lib/security's AesGcm (intel-ipsec-mb underneath).
void omrc_seal(benchmark::State& st) {
    const auto len = static_cast<std::size_t>(st.range(0));
    omrc::security::AesGcm g;
    if (!g.set_key(bytes(static_cast<std::size_t>(st.range(1)), 7))) st.SkipWithError("set_key");
    auto in = bytes(len, 1), out = bytes(len, 0), aad = bytes(kAadBytes, 3);
    std::array<std::uint8_t, 12> nonce{};
    std::array<std::uint8_t, 16> tag{};
    std::uint64_t iv = 0;
    for (auto _ : st) {
        ++iv;
        std::memcpy(nonce.data() + 4, &iv, 8);
        const std::span<const std::uint8_t> piece(in);
        benchmark::DoNotOptimize(g.seal(nonce, aad, {&piece, 1}, out.data(), tag));
        benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * len));
}

void omrc_open(benchmark::State& st) {
    const auto len = static_cast<std::size_t>(st.range(0));
    omrc::security::AesGcm g;
    if (!g.set_key(bytes(static_cast<std::size_t>(st.range(1)), 7))) st.SkipWithError("set_key");
    auto in = bytes(len, 1), ct = bytes(len, 0), out = bytes(len, 0), aad = bytes(kAadBytes, 3);
    std::array<std::uint8_t, 12> nonce{};
    std::array<std::uint8_t, 16> tag{};
    const std::span<const std::uint8_t> piece(in);
    (void)g.seal(nonce, aad, {&piece, 1}, ct.data(), tag);
    const std::span<const std::uint8_t> cpiece(ct);
    for (auto _ : st) {
        if (!g.open(nonce, aad, {&cpiece, 1}, out.data(), tag)) st.SkipWithError("tag");
        benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * len));
}

struct Ipsec {
    IMB_MGR* mgr = nullptr;
    Ipsec() {
        mgr = alloc_mb_mgr(0);
        if (mgr != nullptr) init_mb_mgr_auto(mgr, nullptr);
    }
    ~Ipsec() { free_mb_mgr(mgr); }
};

void ipsecmb_seal(benchmark::State& st) {
    const auto len = static_cast<std::size_t>(st.range(0));
    const std::size_t key_len = static_cast<std::size_t>(st.range(1));
    Ipsec m;
    if (m.mgr == nullptr) {
        st.SkipWithError("alloc_mb_mgr");
        return;
    }
    alignas(64) gcm_key_data kd{};
    gcm_context_data ctx{};
    const auto key = bytes(key_len, 7);
    if (key_len == 16) IMB_AES128_GCM_PRE(m.mgr, key.data(), &kd);
    else IMB_AES256_GCM_PRE(m.mgr, key.data(), &kd);
    auto in = bytes(len, 1), out = bytes(len, 0), aad = bytes(kAadBytes, 3);
    std::array<std::uint8_t, 12> nonce{};
    std::array<std::uint8_t, 16> tag{};
    std::uint64_t iv = 0;
    for (auto _ : st) {
        ++iv;
        std::memcpy(nonce.data() + 4, &iv, 8);
        if (key_len == 16)
            IMB_AES128_GCM_ENC(m.mgr, &kd, &ctx, out.data(), in.data(), len, nonce.data(), aad.data(), aad.size(),
                               tag.data(), tag.size());
        else
            IMB_AES256_GCM_ENC(m.mgr, &kd, &ctx, out.data(), in.data(), len, nonce.data(), aad.data(), aad.size(),
                               tag.data(), tag.size());
        benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * len));
}

void derive(benchmark::State& st) {
    omrc::security::MasterKey mk{};
    omrc::security::DerivedKey k{};
    std::uint32_t spi = 0;
    for (auto _ : st) {
        benchmark::DoNotOptimize(omrc::security::psp_derive_key(mk, ++spi, omrc::wire::PspVersion::aes_gcm_256, k));
    }
}

// Sizes: a control frame's encrypted bytes (a SACK's 36), a 256-byte and
// an 8-byte message's data packet (METH + RETH + 8 = 28), a 4 KiB packet's (4116).
void sizes(benchmark::internal::Benchmark* b) {
    for (int key : {16, 32})
        for (int len : {28, 36, 276, 4116}) b->Args({len, key});
}

}  // namespace

BENCHMARK(openssl_seal)->Apply(sizes);
BENCHMARK(omrc_seal)->Apply(sizes);
BENCHMARK(omrc_open)->Apply(sizes);
BENCHMARK(ipsecmb_seal)->Apply(sizes);
BENCHMARK(derive);
BENCHMARK_MAIN();
