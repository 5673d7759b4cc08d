// SPDX-License-Identifier: BSD-3-Clause
// The PSP header codec and the sealed-frame layout (docs/PROTOCOL.md §12):
// a golden header, every refusal, the layout of a sealed plain and srv6
// frame, clear part and plain part as inverses, and truncation at every
// length never reading past the frame.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "support/hex.hpp"
#include "wire/psp.hpp"
#include "wire/sample_frames.hpp"

using namespace omrc::wire;

TEST_CASE("psp::header_golden_and_round_trip", "[unit][wire][psp]") {
    const PspHdr h{.version = PspVersion::aes_gcm_256, .spi = psp_spi(1, 3, 0x123456), .iv = 0x0102030405060708};
    std::uint8_t b[16];
    REQUIRE(h.encode(b) == WireError::ok);
    // next header 17, ext len 1, crypt offset 5, version 1 + always-one, SPI, IV.
    const std::vector<std::uint8_t> golden = omrc::test::hex("11 01 05 05 83 12 34 56 01 02 03 04 05 06 07 08");
    CHECK(std::vector<std::uint8_t>(b, b + 16) == golden);
    PspHdr d;
    REQUIRE(PspHdr::decode(b, d) == WireError::ok);
    CHECK(d == h);
    CHECK(spi_key_select(d.spi) == 1);
    CHECK(spi_epoch(d.spi) == 3);
    CHECK(spi_qpn(d.spi) == 0x123456);
    CHECK(psp_spi(0, 128, 1) == psp_spi(0, 0, 1));  // the epoch wraps at 128
}

TEST_CASE("psp::header_refusals", "[unit][wire][psp]") {
    const PspHdr h{.spi = 1, .iv = 1};
    std::uint8_t good[16];
    REQUIRE(h.encode(good) == WireError::ok);
    PspHdr d;
    for (std::size_t n = 0; n < 16; ++n) CHECK(PspHdr::decode(std::span(good, n), d) == WireError::psp_truncated);
    auto with = [&](std::size_t at, std::uint8_t v) {
        std::uint8_t b[16];
        std::memcpy(b, good, 16);
        b[at] = v;
        return PspHdr::decode(b, d);
    };
    CHECK(with(1, 2) == WireError::psp_bad_header);                      // a virtualization cookie's length
    CHECK(with(2, 0x45) == WireError::psp_bad_header);                   // reserved bits
    CHECK(with(3, good[3] & ~1) == WireError::psp_bad_header);           // the always-one bit clear
    CHECK(with(3, good[3] | 2) == WireError::psp_bad_header);            // V: a cookie
    CHECK(with(3, (2 << 2) | 1) == WireError::psp_bad_header);           // GMAC-only versions are not ours
    CHECK(with(3, 0x80 | 0x40 | (1 << 2) | 1) == WireError::ok);         // S and D are read, not refused
    CHECK(h.encode(std::span(good, 15)) == WireError::buffer_too_small);
}

namespace {
/// A plain frame turned into a sealed one the way the engine lays it out
/// (cipher text = the plain bytes after BTH, a zero ICV): enough for the layout.
std::vector<std::uint8_t> seal_layout(const std::vector<std::uint8_t>& plain, std::size_t ip_offset, FrameMode mode) {
    std::vector<std::uint8_t> out(plain.size() + kPspOverhead);
    const PspHdr h{.spi = psp_spi(0, 0, 0x11), .iv = 9};
    const std::size_t n = psp_write_clear_part(plain, ip_offset, mode, h, out);
    REQUIRE(n == ip_offset + kPspClearBytesAfterIp);
    const std::size_t bth_end = ip_offset + 40 + 8 + 12;
    const std::size_t body = plain.size() - 4 - bth_end;
    std::memcpy(&out[n], &plain[bth_end], body);
    std::memset(&out[n + body], 0, kPspIcvSize + 4);
    return out;
}
}  // namespace

TEST_CASE("psp::layout_of_sealed_frames_both_modes", "[unit][wire][psp]") {
    std::size_t tried = 0;
    for (const SampleFrame& sf : make_sample_frames()) {
        if (sf.spec.has_srh || sf.name.find("WRITE_ONLY") == std::string::npos) continue;
        ++tried;
        const FrameMode mode = sf.spec.mode;
        const std::vector<std::uint8_t>& plain = sf.bytes;
        const std::size_t ip = mode == FrameMode::plain ? 14 : 54;
        const auto sealed = seal_layout(plain, ip, mode);
        CHECK(is_psp_frame(sealed));
        CHECK_FALSE(is_psp_frame(plain));
        PspLayout l;
        REQUIRE(locate_psp(sealed, l) == WireError::ok);
        CHECK(l.mode == mode);
        CHECK(l.ip_offset == ip);
        CHECK(l.psp_offset == ip + 48);
        CHECK(l.bth_offset == ip + 72);
        CHECK(l.ct_offset == ip + 84);
        CHECK(l.icrc_offset == sealed.size() - 4);
        CHECK(l.ct_len == plain.size() - 4 - (ip + 60));
        CHECK(l.aad_len() == 36);
        CHECK(l.dest_qp == load_be24(&plain[ip + 48 + 5]));
        CHECK(l.opcode == plain[ip + 48]);
        // The plain part rebuilt from the sealed one is the plain frame's, byte for byte.
        std::vector<std::uint8_t> back(plain.size());
        const std::size_t n = psp_write_plain_part(sealed, l, back);
        REQUIRE(n == ip + 60);
        CHECK(std::equal(back.begin(), back.begin() + static_cast<std::ptrdiff_t>(n), plain.begin()));
        // Truncated anywhere: refused, never read past (ASan watches).
        for (std::size_t len = 0; len < sealed.size(); ++len) {
            const std::vector<std::uint8_t> cut(sealed.begin(), sealed.begin() + static_cast<std::ptrdiff_t>(len));
            PspLayout lc;
            CHECK(locate_psp(cut, lc) != WireError::ok);
        }
        // The inner UDP port and length must be the plain frame's.
        auto bad = sealed;
        bad[l.bth_offset - 8 + 3] ^= 1;
        CHECK(locate_psp(bad, l) == WireError::psp_bad_inner);
        bad = sealed;
        bad[l.bth_offset - 8 + 5] ^= 4;
        CHECK(locate_psp(bad, l) == WireError::psp_bad_inner);
        bad = sealed;
        bad[l.psp_offset + 2] = 4;  // another crypt offset
        CHECK(locate_psp(bad, l) == WireError::psp_bad_header);
    }
    CHECK(tried >= 2);  // a plain and an srv6 frame at least
}
