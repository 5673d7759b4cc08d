// SPDX-License-Identifier: BSD-3-Clause
// lib/security: AES-GCM (intel-ipsec-mb) checked against a second
// implementation (OpenSSL 3 EVP) for both key sizes, one piece and many,
// every length 0..300; a tampered byte anywhere fails open(); the PSP key
// derivation checked against the specification's input block computed by
// hand with AES-CMAC; the anti-replay window.
#include <catch2/catch.hpp>

#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/core_names.h>

#include <random>
#include <vector>

#include "core/replay_window.hpp"
#include "security/aes_gcm.hpp"
#include "security/psp_keys.hpp"

using namespace omrc;

namespace {
std::vector<std::uint8_t> bytes(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 r(seed);
    std::vector<std::uint8_t> v(n);
    for (auto& b : v) b = static_cast<std::uint8_t>(r());
    return v;
}

/// OpenSSL's AES-GCM of `plain`: cipher text || tag.
std::vector<std::uint8_t> evp_seal(const std::vector<std::uint8_t>& key, const std::vector<std::uint8_t>& nonce,
                                   const std::vector<std::uint8_t>& aad, const std::vector<std::uint8_t>& plain) {
    EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
    REQUIRE(EVP_EncryptInit_ex(c, key.size() == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm(), nullptr, key.data(),
                               nonce.data()) == 1);
    int n = 0;
    if (!aad.empty()) REQUIRE(EVP_EncryptUpdate(c, nullptr, &n, aad.data(), static_cast<int>(aad.size())) == 1);
    std::vector<std::uint8_t> out(plain.size() + 16);
    int len = 0;
    if (!plain.empty()) REQUIRE(EVP_EncryptUpdate(c, out.data(), &len, plain.data(), static_cast<int>(plain.size())) == 1);
    REQUIRE(EVP_EncryptFinal_ex(c, out.data() + len, &n) == 1);
    REQUIRE(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, out.data() + plain.size()) == 1);
    EVP_CIPHER_CTX_free(c);
    return out;
}

/// One AES-256-CMAC block of the PSP key derivation, as the specification
/// lays out its input: [i]32 | "Pv0"/"Pv1" | 0x00 | SPI | [L]32.
std::vector<std::uint8_t> cmac_block(const security::MasterKey& mk, std::uint32_t i, char ver, std::uint32_t spi,
                                     std::uint32_t bits) {
    const std::uint8_t in[20] = {0, 0, 0, static_cast<std::uint8_t>(i), 'P', 'v', static_cast<std::uint8_t>(ver), 0,
                                 static_cast<std::uint8_t>(spi >> 24), static_cast<std::uint8_t>(spi >> 16),
                                 static_cast<std::uint8_t>(spi >> 8), static_cast<std::uint8_t>(spi),
                                 0, 0, static_cast<std::uint8_t>(bits >> 8), static_cast<std::uint8_t>(bits)};
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, "CMAC", nullptr);
    EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac);
    char cipher[] = "AES-256-CBC";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, cipher, 0),
                                 OSSL_PARAM_construct_end()};
    REQUIRE(EVP_MAC_init(ctx, mk.data(), mk.size(), params) == 1);
    REQUIRE(EVP_MAC_update(ctx, in, 16) == 1);
    std::vector<std::uint8_t> out(16);
    std::size_t n = 0;
    REQUIRE(EVP_MAC_final(ctx, out.data(), &n, out.size()) == 1);
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    return out;
}
}  // namespace

TEST_CASE("security::aes_gcm_matches_openssl_every_length_both_keys", "[unit][security]") {
    for (const std::size_t key_len : {16u, 32u}) {
        const auto key = bytes(key_len, key_len);
        security::AesGcm g;
        REQUIRE(g.set_key(key));
        for (std::size_t len = 0; len <= 300; len += (len < 40 ? 1 : 13)) {
            const auto plain = bytes(len, len + 1), aad = bytes(36, len + 2), nonce = bytes(12, len + 3);
            const auto want = evp_seal(key, nonce, aad, plain);
            std::vector<std::uint8_t> ct(len + 16);
            // One piece, then the same bytes in three pieces of odd sizes.
            const std::span<const std::uint8_t> one(plain);
            REQUIRE(g.seal(std::span<const std::uint8_t, 12>(nonce.data(), 12), aad, {&one, 1}, ct.data(),
                           std::span<std::uint8_t, 16>(ct.data() + len, 16)));
            CHECK(ct == want);
            const std::size_t a = len / 3, b = len / 2;
            const std::span<const std::uint8_t> three[] = {one.first(a), one.subspan(a, b - a), one.subspan(b)};
            std::vector<std::uint8_t> ct3(len + 16);
            REQUIRE(g.seal(std::span<const std::uint8_t, 12>(nonce.data(), 12), aad, three, ct3.data(),
                           std::span<std::uint8_t, 16>(ct3.data() + len, 16)));
            CHECK(ct3 == want);
            // open() gives the plain text back, from one piece and from three.
            std::vector<std::uint8_t> back(len);
            const std::span<const std::uint8_t> c1(ct.data(), len);
            const std::span<const std::uint8_t, 16> tag(ct.data() + len, 16);
            CHECK(g.open(std::span<const std::uint8_t, 12>(nonce.data(), 12), aad, {&c1, 1}, back.data(), tag));
            CHECK(back == plain);
            const std::span<const std::uint8_t> c3[] = {c1.first(b), c1.subspan(b)};
            CHECK(g.open(std::span<const std::uint8_t, 12>(nonce.data(), 12), aad, c3, back.data(), tag));
            CHECK(back == plain);
        }
    }
    security::AesGcm bad;
    CHECK_FALSE(bad.set_key(bytes(24, 1)));  // AES-192 is not a PSP version
    CHECK_FALSE(bad.keyed());
}

TEST_CASE("security::aes_gcm_open_refuses_any_change", "[unit][security]") {
    const auto key = bytes(32, 5), plain = bytes(100, 6), aad = bytes(36, 7), nonce = bytes(12, 8);
    security::AesGcm g;
    REQUIRE(g.set_key(key));
    auto sealed = evp_seal(key, nonce, aad, plain);
    std::vector<std::uint8_t> out(plain.size());
    auto open = [&](const std::vector<std::uint8_t>& s, const std::vector<std::uint8_t>& a,
                    const std::vector<std::uint8_t>& n) {
        const std::span<const std::uint8_t> c(s.data(), plain.size());
        return g.open(std::span<const std::uint8_t, 12>(n.data(), 12), a, {&c, 1}, out.data(),
                      std::span<const std::uint8_t, 16>(s.data() + plain.size(), 16));
    };
    REQUIRE(open(sealed, aad, nonce));
    for (std::size_t i = 0; i < sealed.size(); ++i) {
        auto s = sealed;
        s[i] ^= 0x10;
        CHECK_FALSE(open(s, aad, nonce));
    }
    for (std::size_t i = 0; i < aad.size(); ++i) {
        auto a = aad;
        a[i] ^= 1;
        CHECK_FALSE(open(sealed, a, nonce));
    }
    auto n = nonce;
    n[11] ^= 1;
    CHECK_FALSE(open(sealed, aad, n));
    security::AesGcm other;
    REQUIRE(other.set_key(bytes(32, 99)));
    const std::span<const std::uint8_t> c(sealed.data(), plain.size());
    CHECK_FALSE(other.open(std::span<const std::uint8_t, 12>(nonce.data(), 12), aad, {&c, 1}, out.data(),
                           std::span<const std::uint8_t, 16>(sealed.data() + plain.size(), 16)));
}

TEST_CASE("security::psp_key_derivation_is_the_specifications", "[unit][security]") {
    security::MasterKey mk;
    const auto m = bytes(32, 77);
    std::copy(m.begin(), m.end(), mk.begin());
    for (const std::uint32_t spi : {0x00000001u, 0x80123456u, 0x7FFFFFFFu}) {
        security::DerivedKey k128, k256;
        REQUIRE(security::psp_derive_key(mk, spi, wire::PspVersion::aes_gcm_128, k128));
        REQUIRE(security::psp_derive_key(mk, spi, wire::PspVersion::aes_gcm_256, k256));
        CHECK(std::vector<std::uint8_t>(k128.begin(), k128.begin() + 16) == cmac_block(mk, 1, '0', spi, 128));
        std::vector<std::uint8_t> want = cmac_block(mk, 1, '1', spi, 256);
        const auto second = cmac_block(mk, 2, '1', spi, 256);
        want.insert(want.end(), second.begin(), second.end());
        CHECK(std::vector<std::uint8_t>(k256.begin(), k256.end()) == want);
        CHECK(std::all_of(k128.begin() + 16, k128.end(), [](std::uint8_t b) { return b == 0; }));
    }
    security::MasterKey parsed;
    CHECK(security::parse_master_key("000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F", parsed));
    CHECK(parsed[31] == 0x1F);
    CHECK_FALSE(security::parse_master_key("0001", parsed));
    CHECK_FALSE(security::parse_master_key("000000000000000000000000000000000000000000000000000000000000000g", parsed));
}

TEST_CASE("security::replay_window_accepts_each_iv_once", "[unit][security]") {
    core::ReplayWindow w(128);
    using V = core::ReplayWindow::Verdict;
    CHECK(w.check(0) == V::too_old);
    for (std::uint64_t iv : {5u, 3u, 9u, 4u}) {
        REQUIRE(w.check(iv) == V::fresh);
        w.commit(iv);
    }
    CHECK(w.check(5) == V::duplicate);
    CHECK(w.check(6) == V::fresh);
    w.commit(200);  // moves the window: 72 and below are too old now
    CHECK(w.check(72) == V::too_old);
    CHECK(w.check(73) == V::fresh);
    CHECK(w.check(200) == V::duplicate);
    CHECK(w.check(9) == V::too_old);
    // Random order within the window: every IV accepted exactly once.
    core::ReplayWindow r(4096);
    std::vector<std::uint64_t> ivs(3000);
    for (std::size_t i = 0; i < ivs.size(); ++i) ivs[i] = i + 1;
    std::shuffle(ivs.begin(), ivs.end(), std::mt19937_64(3));
    std::size_t fresh = 0;
    for (int pass = 0; pass < 2; ++pass)
        for (const std::uint64_t iv : ivs)
            if (r.check(iv) == V::fresh) {
                r.commit(iv);
                ++fresh;
            }
    CHECK(fresh == ivs.size());
    // A jump wider than the window forgets all below it.
    r.commit(1'000'000);
    CHECK(r.check(1'000'000 - 4096) == V::too_old);
    CHECK(r.check(1'000'000 - 4095) == V::fresh);
}
