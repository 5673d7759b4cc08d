// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include "support/hex.hpp"
#include "wire/bytes.hpp"
#include "wire/ev.hpp"
#include "wire/frame.hpp"
#include "wire/frame_view.hpp"
#include "wire/mrc_choices.hpp"
#include "wire/sample_frames.hpp"
#include "wire/usid.hpp"

using namespace omrc::wire;
using omrc::test::hex;

namespace {

// The plain WRITE_ONLY frame whose ICRC test_icrc.cpp pins independently.
const char* kPlainGolden =
    "02 00 00 00 00 02 02 00 00 00 00 01 86 dd"
    " 66 80 ab cd 00 34 11 40 20010db8000000000000000000000001 20010db8000000000000000000000002"
    " 10 01 12 b7 00 34 00 00"
    " ca 00 ff ff 00 00 00 11 80 00 00 05"
    " 00 00 00 01"
    " 00 00 00 00 00 00 10 00 11 22 33 44 00 00 00 08"
    " 01 02 03 04 05 06 07 08"
    " de 01 43 d5";
const char* kOuter = "66 80 00 00 00 5c 29 40 20010db8000000000000000000000001 fcbb0000100410011006f001 00000000";

FrameSpec golden_spec(FrameMode mode) {
    FrameSpec s;
    s.mode = mode;
    s.eth.dst = {0x02, 0, 0, 0, 0, 0x02};
    s.eth.src = {0x02, 0, 0, 0, 0, 0x01};
    s.ip.set_dscp(26);
    s.ip.src = {0x20, 0x01, 0x0d, 0xb8};
    s.ip.src[15] = 1;
    s.ip.dst = {0x20, 0x01, 0x0d, 0xb8};
    s.ip.dst[15] = 2;
    s.ev = 0x1001ABCD;
    s.bth.opcode = Opcode::write_only;
    s.bth.dest_qp = 0x11;
    s.bth.ack_req = true;
    s.bth.psn = 5;
    s.meth = {0, 1};
    s.reth = {0x1000, 0x11223344, 8};
    if (mode == FrameMode::srv6) {
        s.outer.set_dscp(kDscpData);
        s.outer.src = s.ip.src;
        const std::uint16_t u[] = {0x1004, 0x1001, 0x1006, 0xF001};
        REQUIRE(usid_container_build(0xFCBB0000, u, s.outer.dst) == WireError::ok);
    }
    return s;
}

std::vector<std::uint8_t> build(const FrameSpec& s, const std::vector<std::uint8_t>& payload) {
    std::vector<std::uint8_t> out(2048);
    std::size_t len = 0;
    REQUIRE(build_frame(out, s, payload, len) == WireError::ok);
    out.resize(len);
    return out;
}

}  // namespace

TEST_CASE("build_frame__plain_golden", "[unit][wire]") {
    const auto f = build(golden_spec(FrameMode::plain), hex("01 02 03 04 05 06 07 08"));
    CHECK(omrc::test::to_hex(f) == omrc::test::to_hex(hex(kPlainGolden)));
}

TEST_CASE("build_frame__srv6_golden_icrc_covers_inner_only", "[unit][wire]") {
    const auto f = build(golden_spec(FrameMode::srv6), hex("01 02 03 04 05 06 07 08"));
    auto expect = hex(kPlainGolden);
    const auto outer = hex(kOuter);
    expect.insert(expect.begin() + 14, outer.begin(), outer.end());
    CHECK(omrc::test::to_hex(f) == omrc::test::to_hex(expect));
}

TEST_CASE("build_headers__zero_copy_split_matches_build_frame", "[unit][wire]") {
    for (const auto& sample : make_sample_frames()) {
        std::vector<std::uint8_t> hdr(512);
        std::size_t hlen = 0;
        REQUIRE(build_headers(hdr, sample.spec, sample.payload.size(), hlen) == WireError::ok);
        hdr.resize(hlen);
        auto tail = sample.payload;
        tail.resize(tail.size() + (4 - tail.size() % 4) % 4, 0);
        const std::uint32_t crc = frame_icrc(hdr, sample.spec.mode, tail);
        INFO(sample.name);
        CHECK(crc == load_le32(sample.bytes.data() + sample.bytes.size() - 4));
        CHECK(std::equal(hdr.begin(), hdr.end(), sample.bytes.begin()));
    }
}

TEST_CASE("build_headers__rejects", "[unit][wire]") {
    FrameSpec s = golden_spec(FrameMode::plain);
    std::vector<std::uint8_t> out(100);
    std::size_t len = 0;
    s.bth.opcode = Opcode::sack;
    CHECK(build_headers(out, s, 8, len) == WireError::bad_field);  // control packets carry no payload
    s.bth.opcode = Opcode::write_only;
    CHECK(build_headers(std::span(out).first(60), s, 8, len) == WireError::buffer_too_small);
    CHECK(build_headers(out, s, 70000, len) == WireError::bad_field);
    s.bth.opcode = static_cast<Opcode>(0x42);
    CHECK(build_headers(out, s, 0, len) == WireError::unknown_opcode);
}

TEST_CASE("parse_frame__every_sample_roundtrips", "[unit][wire]") {
    const auto samples = make_sample_frames();
    CHECK(samples.size() == 31);
    for (const auto& s : samples) {
        INFO(s.name);
        ParsedFrame p;
        REQUIRE(parse_frame(s.bytes, {}, p) == WireError::ok);
        CHECK(p.trim == TrimKind::none);
        CHECK(p.mode == s.spec.mode);
        CHECK(p.has_srh == s.spec.has_srh);
        CHECK(p.ev == s.spec.ev);
        CHECK(p.bth.opcode == s.spec.bth.opcode);
        CHECK(p.bth.dest_qp == s.spec.bth.dest_qp);
        CHECK(p.bth.psn == s.spec.bth.psn);
        CHECK(std::vector<std::uint8_t>(p.payload.begin(), p.payload.end()) == s.payload);
        const Opcode op = s.spec.bth.opcode;
        if (is_data_opcode(op)) {
            CHECK(p.meth == s.spec.meth);
            CHECK(p.reth == s.spec.reth);
            if (s.spec.bth.ts) CHECK(p.tseth == s.spec.tseth);
            CHECK(p.has_crth == s.spec.bth.cr);
            if (s.spec.bth.cr) CHECK(p.crth == s.spec.crth);
            if (carries_imm(op)) CHECK(p.imm == s.spec.imm);
        }
        if (op == Opcode::ack) CHECK(p.aeth == s.spec.aeth);
        if (op == Opcode::sack) {
            CHECK(p.seth == s.spec.seth);
            CHECK(p.cc == s.spec.cc);
            CHECK(p.has_cgth == (s.spec.seth.cc_type == mrc::kSethCcTypeCredit));
            if (p.has_cgth) CHECK(p.cgth == s.spec.cgth);
        }
        if (op == Opcode::nack) CHECK(p.neth == s.spec.neth);
        if (op == Opcode::probe) CHECK(p.peth == s.spec.peth);
        if (op == Opcode::ep_request) CHECK(p.erth == s.spec.erth);
        if (op == Opcode::ep_response) CHECK(p.eeth == s.spec.eeth);
        if (s.spec.mode == FrameMode::srv6) CHECK(p.outer.dst == s.spec.outer.dst);
    }
}

namespace {

/// The sample as a driver with header split hands it over: headers and
/// tail in one buffer, the payload in another.
struct SplitFrame {
    std::vector<std::uint8_t> head, payload;
    RxFrame rx;
};
SplitFrame split_sample(const SampleFrame& s) {
    SplitFrame f;
    const std::size_t hlen = header_size(s.spec);
    f.head.assign(s.bytes.begin(), s.bytes.begin() + static_cast<std::ptrdiff_t>(hlen));
    f.head.insert(f.head.end(), s.bytes.begin() + static_cast<std::ptrdiff_t>(hlen + s.payload.size()), s.bytes.end());
    f.payload = s.payload;
    f.rx = {f.head.data(), static_cast<std::uint32_t>(f.head.size()), 0, f.payload.data(),
            static_cast<std::uint32_t>(f.payload.size()), static_cast<std::uint16_t>(hlen)};
    return f;
}

}  // namespace

TEST_CASE("parse_frame_view__header_split_reads_as_the_whole_frame", "[unit][wire]") {
    std::size_t data_samples = 0;
    for (const auto& s : make_sample_frames()) {
        if (!is_data_opcode(s.spec.bth.opcode) || s.payload.empty()) continue;
        INFO(s.name);
        ++data_samples;
        FrameView whole, split;
        REQUIRE(parse_frame_view(s.bytes, {}, whole) == WireError::ok);
        SplitFrame f = split_sample(s);
        REQUIRE(parse_frame_view(f.rx, {}, split) == WireError::ok);  // ICRC checked over both pieces
        CHECK(split.payload.data() == f.payload.data());
        CHECK(std::vector<std::uint8_t>(split.payload.begin(), split.payload.end()) == s.payload);
        CHECK(split.bth.psn == whole.bth.psn);
        CHECK(split.bth.opcode == whole.bth.opcode);
        CHECK(split.ev == whole.ev);
        CHECK(split.reth() == whole.reth());
        CHECK(split.meth() == whole.meth());
        CHECK(split.ip_src_addr() == whole.ip_src_addr());
        // A contiguous RxFrame is the plain parse.
        const RxFrame contiguous{s.bytes.data(), static_cast<std::uint32_t>(s.bytes.size()), 0};
        FrameView again;
        CHECK(parse_frame_view(contiguous, {}, again) == WireError::ok);
        CHECK(again.payload.data() == whole.payload.data());
    }
    CHECK(data_samples >= 8);
}

TEST_CASE("parse_frame_view__header_split_rejects_what_does_not_fit", "[unit][wire]") {
    const auto samples = make_sample_frames();
    const auto it = std::find_if(samples.begin(), samples.end(), [](const SampleFrame& s) {
        return s.name == "plain/WRITE_MIDDLE";
    });
    REQUIRE(it != samples.end());
    FrameView v;
    {
        SplitFrame f = split_sample(*it);
        f.payload[3] ^= 0x10;  // a payload bit: the ICRC covers the payload piece
        CHECK(parse_frame_view(f.rx, {}, v) == WireError::bad_icrc);
        ParseOptions no_icrc;
        no_icrc.verify_icrc = false;
        CHECK(parse_frame_view(f.rx, no_icrc, v) == WireError::ok);
    }
    {
        SplitFrame f = split_sample(*it);
        f.rx.split = static_cast<std::uint16_t>(f.rx.split - 4);  // inside the extension headers
        CHECK(parse_frame_view(f.rx, {}, v) == WireError::bad_split);
        f.rx.split = static_cast<std::uint16_t>(f.rx.len + 1);  // beyond the head buffer
        CHECK(parse_frame_view(f.rx, {}, v) == WireError::bad_split);
    }
    {
        SplitFrame f = split_sample(*it);
        f.rx.payload_len -= 4;  // the pieces do not add up to the frame's lengths
        CHECK(parse_frame_view(f.rx, {}, v) == WireError::bad_split);
        f.rx.payload_len += 8;
        CHECK(parse_frame_view(f.rx, {}, v) == WireError::bad_split);
    }
    {
        // A control frame never has a payload piece.
        const auto sack = std::find_if(samples.begin(), samples.end(), [](const SampleFrame& s) {
            return s.name == "plain/SACK";
        });
        REQUIRE(sack != samples.end());
        const std::uint8_t junk[4] = {};
        const std::size_t hlen = header_size(sack->spec);
        const RxFrame rx{sack->bytes.data(), static_cast<std::uint32_t>(sack->bytes.size()), 0, junk, 0,
                         static_cast<std::uint16_t>(hlen)};
        CHECK(parse_frame_view(rx, {}, v) == WireError::bad_split);
    }
}

TEST_CASE("parse_frame__truncation_at_every_offset", "[unit][wire]") {
    for (const auto& s : make_sample_frames()) {
        INFO(s.name);
        const std::size_t bth_end = min_trim_size(s.spec.mode, s.spec.has_srh ? s.spec.srh.wire_size() : 0);
        for (std::size_t n = 0; n < s.bytes.size(); ++n) {
            INFO("length " << n);
            // Copy into an exact-size heap buffer so ASan catches any read past it.
            std::vector<std::uint8_t> cut(s.bytes.begin(), s.bytes.begin() + static_cast<std::ptrdiff_t>(n));
            ParsedFrame p;
            const WireError e = parse_frame(cut, {}, p);
            if (n >= bth_end && is_data_opcode(s.spec.bth.opcode)) {
                // A data frame that still holds its BTH is a (short-length) trim.
                REQUIRE(e == WireError::ok);
                CHECK(p.trim == TrimKind::short_length);
                CHECK(p.bth.psn == s.spec.bth.psn);
                CHECK(p.payload.empty());
            } else {
                REQUIRE(e != WireError::ok);
            }
        }
    }
}

TEST_CASE("parse_frame__trim_by_dscp_before_icrc", "[unit][wire]") {
    for (FrameMode mode : {FrameMode::plain, FrameMode::srv6}) {
        auto f = build(golden_spec(mode), std::vector<std::uint8_t>(256, 0x5A));
        // A switch cuts the frame to 128 bytes and remarks DSCP: the ICRC no longer matches.
        const std::size_t tc_byte = 14;  // the header a switch marks: outer in srv6, the only one in plain
        f.resize(128);
        Ipv6Hdr::store_dscp(&f[tc_byte], kDscpTrimmed);
        ParsedFrame p;
        REQUIRE(parse_frame(f, {}, p) == WireError::ok);
        CHECK(p.trim == TrimKind::dscp);
        CHECK(p.bth.psn == 5);
        CHECK(p.ev == 0x1001ABCD);
        CHECK(p.has_meth);
        // Last-hop DSCP is told apart.
        Ipv6Hdr::store_dscp(&f[tc_byte], kDscpTrimmedLastHop);
        REQUIRE(parse_frame(f, {}, p) == WireError::ok);
        CHECK(p.trim == TrimKind::dscp_last_hop);
    }
}

TEST_CASE("parse_frame__bad_lengths_ports_and_headers", "[unit][wire]") {
    const auto good = build(golden_spec(FrameMode::srv6), hex("01 02 03 04 05 06 07 08"));
    ParsedFrame p;
    REQUIRE(parse_frame(good, {}, p) == WireError::ok);
    REQUIRE(p.trim == TrimKind::none);
    auto f = good;
    SECTION("ethertype") {
        f[12] = 0x08; f[13] = 0x00;
        CHECK(parse_frame(f, {}, p) == WireError::not_ipv6);
    }
    SECTION("outer next header") {
        f[14 + 6] = 6;
        CHECK(parse_frame(f, {}, p) == WireError::unsupported_next_header);
    }
    SECTION("inner next header") {
        f[54 + 6] = 6;
        CHECK(parse_frame(f, {}, p) == WireError::unsupported_next_header);
    }
    SECTION("inner payload length disagrees with outer") {
        f[54 + 5] += 4;
        CHECK(parse_frame(f, {}, p) == WireError::bad_ip_payload_len);
    }
    SECTION("outer payload length larger than the frame on a control packet") {
        auto s = golden_spec(FrameMode::srv6);
        s.bth.opcode = Opcode::ack;
        auto c = build(s, {});
        c.pop_back();
        CHECK(parse_frame(c, {}, p) == WireError::truncated_ext);
    }
    SECTION("udp port") {
        f[94 + 3] = 0xB8;
        CHECK(parse_frame(f, {}, p) == WireError::not_roce_port);
    }
    SECTION("udp length") {
        f[94 + 5] -= 4;
        CHECK(parse_frame(f, {}, p) == WireError::bad_udp_len);
    }
    SECTION("pad count larger than payload") {
        auto s = golden_spec(FrameMode::plain);
        auto g = build(s, hex("01"));  // 1 byte + 3 pad
        g[63] = 0x30;              // claims 3 pad: still fine
        REQUIRE(parse_frame(g, {.verify_icrc = false}, p) == WireError::ok);
        CHECK(p.payload.size() == 1);
        auto z = build(s, {});
        z[63] = 0x10;  // 1 pad byte but no payload at all
        CHECK(parse_frame(z, {.verify_icrc = false}, p) == WireError::bad_pad);
    }
    SECTION("corrupted payload") {
        f[f.size() - 6] ^= 0x01;
        CHECK(parse_frame(f, {}, p) == WireError::bad_icrc);
        CHECK(parse_frame(f, {.verify_icrc = false}, p) == WireError::ok);
    }
    SECTION("unknown opcode") {
        f[102] = 0x04;
        CHECK(parse_frame(f, {}, p) == WireError::unknown_opcode);
    }
    SECTION("Ethernet padding after the IPv6 packet is ignored") {
        f.resize(f.size() + 20, 0);
        CHECK(parse_frame(f, {}, p) == WireError::ok);
    }
}

TEST_CASE("parse_frame__every_single_bit_flip_is_rejected_or_harmless", "[unit][wire]") {
    // Flipping any bit either fails parsing or changes only fields the ICRC
    // deliberately leaves out (Ethernet, outer IPv6/SRH, masked fields) — never
    // the BTH, extension headers or payload the engine acts on.
    for (const auto& s : make_sample_frames()) {
        INFO(s.name);
        ParsedFrame ref;
        REQUIRE(parse_frame(s.bytes, {}, ref) == WireError::ok);
        auto f = s.bytes;
        for (std::size_t byte = 0; byte < f.size(); ++byte) {
            for (int bit = 0; bit < 8; ++bit) {
                f[byte] ^= static_cast<std::uint8_t>(1u << bit);
                ParsedFrame p;
                if (parse_frame(f, {}, p) == WireError::ok && p.trim == TrimKind::none) {
                    INFO("byte " << byte << " bit " << bit);
                    CHECK(p.bth.psn == ref.bth.psn);
                    CHECK(p.bth.dest_qp == ref.bth.dest_qp);
                    CHECK(p.bth.opcode == ref.bth.opcode);
                    CHECK(p.reth == ref.reth);
                    CHECK(std::equal(p.payload.begin(), p.payload.end(), ref.payload.begin(), ref.payload.end()));
                }
                f[byte] ^= static_cast<std::uint8_t>(1u << bit);
            }
        }
    }
}
