// SPDX-License-Identifier: BSD-3-Clause
// OpenMRC's credit extension headers on the wire (docs/PROTOCOL.md §11.8):
// CRTH on data packets (BTH.CR), CGTH on SACKs of cc_type credit.
#include <catch2/catch.hpp>

#include "wire/bytes.hpp"
#include "wire/credit_ext.hpp"
#include "wire/data_template.hpp"
#include "wire/frame.hpp"
#include "wire/frame_view.hpp"
#include "wire/mrc_choices.hpp"

using namespace omrc::wire;

namespace {

FrameSpec data_spec(FrameMode mode, bool ts, bool credit) {
    FrameSpec s;
    s.mode = mode;
    s.eth.dst = {0x02, 0, 0, 0, 0, 0x02};
    s.eth.src = {0x02, 0, 0, 0, 0, 0x01};
    s.ip.set_dscp(kDscpData);
    s.ip.src = {0x20, 0x01, 0x0d, 0xb8};
    s.ip.src[15] = 1;
    s.ip.dst = {0x20, 0x01, 0x0d, 0xb8};
    s.ip.dst[15] = 2;
    if (mode == FrameMode::srv6) {
        s.outer = s.ip;
        s.outer.dst = {0xfc, 0xbb, 0, 0, 0x10, 0x04, 0x10, 0x01};
    }
    s.ev = 0x2003ABCD;
    s.bth.opcode = Opcode::write_only_imm;
    s.bth.dest_qp = 0x42;
    s.bth.psn = 77;
    s.bth.ts = ts;
    s.bth.cr = credit;
    s.meth = {1, 9};
    s.tseth = {0x1234, false, mrc::kFtypeTransmitTimestamp};
    s.crth = {0xFFFFFFF0u, 0x12345678u, 1000};
    s.reth = {0x7F0000001000ull, 0xABCD0001u, 4096};
    s.imm = {0xC0FFEE01u};
    return s;
}

std::vector<std::uint8_t> build(const FrameSpec& s, std::size_t payload_len) {
    std::vector<std::uint8_t> payload(payload_len, 0x5A), out(4096);
    std::size_t len = 0;
    REQUIRE(build_frame(out, s, payload, len) == WireError::ok);
    out.resize(len);
    return out;
}

void mark_trimmed(std::vector<std::uint8_t>& f) {
    Ipv6Hdr::store_dscp(&f[EthHdr::kSize], kDscpTrimmed);
    f[15] = static_cast<std::uint8_t>((f[15] & 0x3F) | ((kDscpTrimmed & 3) << 6));
}

}  // namespace

TEST_CASE("crth__sits_after_tseth_and_before_reth_with_bth_byte_8_bit_6", "[unit][wire]") {
    for (FrameMode mode : {FrameMode::plain, FrameMode::srv6}) {
        for (bool ts : {false, true}) {
            INFO("mode " << static_cast<int>(mode) << " ts " << ts);
            const FrameSpec s = data_spec(mode, ts, true);
            const auto f = build(s, 1000);
            const std::size_t bth = EthHdr::kSize + Ipv6Hdr::kSize * (mode == FrameMode::srv6 ? 2 : 1) + UdpHdr::kSize;
            CHECK((f[bth + 8] & kBthCredit) == kBthCredit);
            const std::size_t crth = bth + BthHdr::kSize + MethHdr::kSize + (ts ? TsethHdr::kSize : 0);
            CHECK(load_be32(&f[crth]) == 0xFFFFFFF0u);
            CHECK(load_be32(&f[crth + 4]) == 0x12345678u);
            CHECK(load_be16(&f[crth + 8]) == 1000);
            CHECK(load_be16(&f[crth + 10]) == 0);  // reserved
            CHECK(load_be64(&f[crth + CrthHdr::kSize]) == 0x7F0000001000ull);  // RETH.va right after
            CHECK(header_size(s) == header_size(data_spec(mode, ts, false)) + CrthHdr::kSize);

            ParsedFrame p;
            REQUIRE(parse_frame(f, {}, p) == WireError::ok);
            CHECK(p.bth.cr);
            CHECK(p.has_crth);
            CHECK(p.crth == s.crth);
            CHECK(p.reth == s.reth);
            CHECK(p.imm == s.imm);
            CHECK(p.payload.size() == 1000);
            FrameView v;
            REQUIRE(parse_frame_view(f, {}, v) == WireError::ok);
            CHECK(v.has_crth);
            CHECK(v.crth() == s.crth);
            CHECK(v.reth() == s.reth);
            CHECK(v.imm() == s.imm);
            // Without the flag there is no CRTH and RETH follows METH [TSETH].
            const auto plain = build(data_spec(mode, ts, false), 1000);
            REQUIRE(parse_frame(plain, {}, p) == WireError::ok);
            CHECK_FALSE(p.has_crth);
            CHECK(p.reth == s.reth);
        }
    }
}

TEST_CASE("crth__survives_a_trim_that_keeps_it_and_only_then", "[unit][wire]") {
    const FrameSpec s = data_spec(FrameMode::plain, true, true);
    const auto whole = build(s, 512);
    const std::size_t crth_end = EthHdr::kSize + Ipv6Hdr::kSize + UdpHdr::kSize + BthHdr::kSize + MethHdr::kSize +
                                 TsethHdr::kSize + CrthHdr::kSize;
    for (std::size_t keep : {crth_end - 1, crth_end, std::size_t{128}}) {
        INFO("kept " << keep);
        auto f = whole;
        f.resize(keep);
        mark_trimmed(f);
        ParsedFrame p;
        REQUIRE(parse_frame(f, {}, p) == WireError::ok);
        CHECK(p.trim == TrimKind::dscp);
        CHECK(p.has_tseth);
        CHECK(p.has_crth == (keep >= crth_end));
        if (p.has_crth) CHECK(p.crth == s.crth);
    }
}

TEST_CASE("cgth__follows_cc_state_exactly_on_sacks_of_cc_type_credit", "[unit][wire]") {
    FrameSpec s;
    s.eth.dst = {0x02, 0, 0, 0, 0, 0x02};
    s.ip.set_dscp(kDscpControl);
    s.ev = 0x10010001;
    s.bth.opcode = Opcode::sack;
    s.bth.dest_qp = 0x43;
    s.seth.cack_psn = 100;
    s.seth.cc_type = mrc::kSethCcTypeCredit;
    s.cc.rcvd_bytes = 5;
    s.cgth = {true, 0x80000001u};
    const auto f = build(s, 0);
    const std::size_t ext = EthHdr::kSize + Ipv6Hdr::kSize + UdpHdr::kSize + BthHdr::kSize;
    const std::size_t cgth = ext + SethHdr::kSize + CcStateHdr::kSize;
    REQUIRE(f.size() == cgth + CgthHdr::kSize + kIcrcSize);
    CHECK(f[cgth] == 0x80);
    CHECK(load_be32(&f[cgth + 4]) == 0x80000001u);
    ParsedFrame p;
    REQUIRE(parse_frame(f, {}, p) == WireError::ok);
    CHECK(p.has_cgth);
    CHECK(p.cgth == s.cgth);
    CHECK(p.cc == s.cc);
    FrameView v;
    REQUIRE(parse_frame_view(f, {}, v) == WireError::ok);
    CHECK(v.has_cgth);
    CHECK(v.cgth() == s.cgth);

    // A grant not yet valid is still 8 bytes, V clear.
    s.cgth = {};
    REQUIRE(parse_frame(build(s, 0), {}, p) == WireError::ok);
    CHECK(p.has_cgth);
    CHECK_FALSE(p.cgth.valid);

    // Other cc_types carry none: the SACK is MRC's 36 bytes of headers.
    s.seth.cc_type = mrc::kSethCcTypeNscc;
    const auto nscc = build(s, 0);
    CHECK(nscc.size() + CgthHdr::kSize == f.size());
    REQUIRE(parse_frame(nscc, {}, p) == WireError::ok);
    CHECK_FALSE(p.has_cgth);
}

TEST_CASE("cgth__a_sack_whose_length_disagrees_with_its_cc_type_is_rejected", "[unit][wire]") {
    // cc_type credit but no room for the CGTH, and cc_type nscc with 8 bytes
    // too many: both fail the size checks (the ICRC is recomputed, so only
    // the layout is wrong).
    FrameSpec s;
    s.eth.dst = {0x02, 0, 0, 0, 0, 0x02};
    s.bth.opcode = Opcode::sack;
    s.seth.cc_type = mrc::kSethCcTypeNscc;
    auto short_one = build(s, 0);
    const std::size_t ext = EthHdr::kSize + Ipv6Hdr::kSize + UdpHdr::kSize + BthHdr::kSize;
    short_one[ext + 16] = static_cast<std::uint8_t>(mrc::kSethCcTypeCredit << 4);
    const std::size_t icrc_at = short_one.size() - kIcrcSize;
    store_le32(&short_one[icrc_at], frame_icrc(std::span(short_one).first(icrc_at), FrameMode::plain, {}));
    ParsedFrame p;
    CHECK(parse_frame(short_one, {}, p) == WireError::truncated_ext);

    s.seth.cc_type = mrc::kSethCcTypeCredit;
    auto long_one = build(s, 0);
    long_one[ext + 16] = static_cast<std::uint8_t>(mrc::kSethCcTypeNscc << 4);
    const std::size_t icrc2 = long_one.size() - kIcrcSize;
    store_le32(&long_one[icrc2], frame_icrc(std::span(long_one).first(icrc2), FrameMode::plain, {}));
    CHECK(parse_frame(long_one, {}, p) == WireError::bad_field);
}

TEST_CASE("data_template__writes_the_crth_exactly_as_build_headers", "[unit][wire]") {
    for (FrameMode mode : {FrameMode::plain, FrameMode::srv6}) {
        for (bool credit : {false, true}) {
            INFO("mode " << static_cast<int>(mode) << " credit " << credit);
            const FrameSpec s = data_spec(mode, true, credit);
            DataTemplate t;
            REQUIRE(t.init(data_spec(mode, true, false)) == WireError::ok);
            std::array<std::uint8_t, GatherFrame::kMaxHeader> got{};
            std::array<std::uint8_t, 12> macs{};
            std::copy(s.eth.dst.begin(), s.eth.dst.end(), macs.begin());
            std::copy(s.eth.src.begin(), s.eth.src.end(), macs.begin() + 6);
            DataFields f;
            f.macs = macs.data();
            f.outer_dst = mode == FrameMode::srv6 ? &s.outer.dst : nullptr;
            f.ev = s.ev;
            f.opcode = s.bth.opcode;
            f.psn = s.bth.psn;
            f.payload_len = 1000;
            f.meth = s.meth;
            f.tx_timestamp = s.tseth.tx_timestamp;
            f.reth = s.reth;
            f.imm = s.imm.imm;
            f.crth = credit ? &s.crth : nullptr;
            const std::size_t n = t.write(got.data(), f);
            std::array<std::uint8_t, GatherFrame::kMaxHeader> want{};
            std::size_t hlen = 0;
            REQUIRE(build_headers(want, s, 1000, hlen) == WireError::ok);
            REQUIRE(n == hlen);
            CHECK(std::equal(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(n), want.begin()));
            CHECK(n <= GatherFrame::kMaxHeader);
        }
    }
}

TEST_CASE("unwrap_cumulative__widens_32_bit_counts_across_the_wrap", "[unit][wire]") {
    CHECK(unwrap_cumulative(0, 1000) == 1000);
    CHECK(unwrap_cumulative(1000, 500) == 1000);  // older (reordered): no change
    CHECK(unwrap_cumulative(0xFFFFFF00ull, 0x100) == 0x100000100ull);  // across 2^32
    CHECK(unwrap_cumulative(0x100000100ull, 0xFFFFFF00u) == 0x100000100ull);  // the older one, after the wrap
    CHECK(unwrap_cumulative(0x300000000ull, 0x7FFFFFFFu) == 0x37FFFFFFFull);  // up to 2^31 − 1 ahead
    CHECK(unwrap_cumulative(0x300000000ull, 0x80000000u) == 0x300000000ull);  // 2^31 ahead is taken as behind
}
