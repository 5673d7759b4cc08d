// SPDX-License-Identifier: BSD-3-Clause
// wire::peek_bth: the BTH fields a device dispatches on, read without a parse.
#include <catch2/catch.hpp>

#include <vector>

#include "wire/bth_peek.hpp"
#include "wire/frame.hpp"
#include "wire/sample_frames.hpp"

using namespace omrc::wire;

TEST_CASE("peek_bth__basics: every sample frame, plain and srv6 (with and without an SRH), as the parser reads it",
          "[wire]") {
    const std::vector<SampleFrame> samples = make_sample_frames();
    REQUIRE(samples.size() > 20);
    bool saw_srh = false;
    for (const SampleFrame& s : samples) {
        INFO(s.name);
        ParsedFrame p;
        REQUIRE(parse_frame(s.bytes, {}, p) == WireError::ok);
        saw_srh = saw_srh || p.has_srh;
        BthPeek b;
        REQUIRE(peek_bth(s.bytes, b));
        CHECK(b.opcode == static_cast<std::uint8_t>(p.bth.opcode));
        CHECK(b.dest_qp == p.bth.dest_qp);
        CHECK(b.psn == p.bth.psn);
        CHECK(b.ip_offset == p.ip_offset);
    }
    CHECK(saw_srh);
}

TEST_CASE("peek_bth__truncated: a frame cut anywhere before the end of BTH is refused, never read past", "[wire]") {
    for (const SampleFrame& s : make_sample_frames()) {
        ParsedFrame p;
        REQUIRE(parse_frame(s.bytes, {}, p) == WireError::ok);
        const std::size_t bth_end = p.ip_offset + 40 + 8 + 12;
        for (std::size_t len = 0; len < bth_end; ++len) {
            // An exact-size copy: a read past it is a sanitizer finding.
            const std::vector<std::uint8_t> cut(s.bytes.begin(), s.bytes.begin() + static_cast<std::ptrdiff_t>(len));
            BthPeek b{.opcode = 0xAA, .dest_qp = 7, .psn = 9};
            INFO(s.name << " cut at " << len);
            CHECK_FALSE(peek_bth(cut, b));
            CHECK(b.dest_qp == 7);  // unchanged
        }
        const std::vector<std::uint8_t> whole(s.bytes.begin(), s.bytes.begin() + static_cast<std::ptrdiff_t>(bth_end));
        BthPeek b;
        CHECK(peek_bth(whole, b));
    }
}

TEST_CASE("peek_bth__not_ours: other ethertypes and next headers are refused", "[wire]") {
    std::vector<std::uint8_t> f = make_sample_frames().front().bytes;
    BthPeek b;
    REQUIRE(peek_bth(f, b));
    SECTION("IPv4") {
        f[12] = 0x08;
        f[13] = 0x00;
        CHECK_FALSE(peek_bth(f, b));
    }
    SECTION("TCP instead of UDP") {
        f[14 + 6] = 6;
        CHECK_FALSE(peek_bth(f, b));
    }
}
