// SPDX-License-Identifier: BSD-3-Clause
// Connection-manager messages (wire/cm_msg.hpp, docs/PROTOCOL.md §13):
// golden bytes of the short messages and of a REQ's fixed part, every type
// round trip, every refusal, truncation at every length, and a CM message
// carried in a frame (opcode 0x64, DETH, DestQP 1).
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "support/hex.hpp"
#include "wire/cm_msg.hpp"
#include "wire/frame.hpp"

using namespace omrc::wire;

namespace {

CmMessage sample_req() {
    CmMessage m;
    m.type = CmType::req;
    m.src_comm_id = 0x11223344;
    m.attempt = 2;
    m.service_id = 0x0102030405060708ull;
    m.qpn = 0x012345;
    m.psn = 0xABCDEF;
    m.mtu = 4096;
    m.encryption = 2;
    m.key_select = 1;
    m.host = 77;
    m.conn_id = 0x1F2E;
    m.planes = 3;
    for (std::size_t i = 0; i < 16; ++i) {
        m.key_nonce[i] = static_cast<std::uint8_t>(0xA0 + i);
        m.cookie[i] = static_cast<std::uint8_t>(0xC0 + i);
        m.key_check[i] = static_cast<std::uint8_t>(0xE0 + i);
    }
    for (std::size_t p = 0; p < 3; ++p) m.macs[p] = {0x02, 0, 0, 0, 0, static_cast<std::uint8_t>(p + 1)};
    m.private_len = 5;
    std::memcpy(m.private_data.data(), "hello", 5);
    return m;
}

std::vector<std::uint8_t> encode(const CmMessage& m) {
    std::vector<std::uint8_t> b(kCmMaxMessage);
    std::size_t len = 0;
    REQUIRE(m.encode(b, len) == WireError::ok);
    b.resize(len);
    return b;
}

}  // namespace

TEST_CASE("cm::short_messages_golden", "[unit][wire][cm]") {
    CmMessage d;
    d.type = CmType::dreq;
    d.src_comm_id = 0x01020304;
    d.dst_comm_id = 0x0A0B0C0D;
    d.attempt = 1;
    CHECK(encode(d) == omrc::test::hex("01 06 00 14 01 02 03 04 0a 0b 0c 0d 00 01 00 00  00 00 00 00"));
    d.has_rcv_psn = true;
    d.rcv_psn = 0xABCDEF;
    CHECK(encode(d) == omrc::test::hex("01 06 00 14 01 02 03 04 0a 0b 0c 0d 00 01 00 00  01 ab cd ef"));
    CmMessage r;
    r.type = CmType::rej;
    r.src_comm_id = 5;
    r.dst_comm_id = 6;
    r.reason = CmReject::busy;
    r.private_len = 2;
    r.private_data[0] = 0xAA;
    r.private_data[1] = 0xBB;
    CHECK(encode(r) ==
          omrc::test::hex("01 05 00 16 00 00 00 05 00 00 00 06 00 00 00 00  00 03 02 00 aa bb"));
    CmMessage c;
    c.type = CmType::cookie;
    c.src_comm_id = 9;
    c.cookie.fill(0x5C);
    const auto cb = encode(c);
    REQUIRE(cb.size() == 32);
    CHECK(cb[1] == 0x02);
    CHECK(cb[16] == 0x5C);
    CHECK(cb[31] == 0x5C);
}

TEST_CASE("cm::req_layout_golden", "[unit][wire][cm]") {
    const auto b = encode(sample_req());
    // header 16 + params 84 + 3 MACs (18 B padded to 20) + 5 private bytes
    REQUIRE(b.size() == 16 + 84 + 20 + 5);
    CHECK(std::vector<std::uint8_t>(b.begin(), b.begin() + 16) ==
          omrc::test::hex("01 01 00 7d 11 22 33 44 00 00 00 00 00 02 00 00"));
    // service id, QPN, PSN, MTU, planes, encryption, key select, private length, conn id, host
    CHECK(std::vector<std::uint8_t>(b.begin() + 16, b.begin() + 48) ==
          omrc::test::hex("01 02 03 04 05 06 07 08  00 01 23 45  00 ab cd ef  10 00 03 02 01 05 1f 2e"
                          "00 00 00 4d  00 00 00 00"));
    CHECK(b[48] == 0xA0);   // key nonce
    CHECK(b[64] == 0xC0);   // cookie
    CHECK(b[80] == 0xE0);   // key check
    CHECK(b[100] == 0x02);  // first MAC
    CHECK(b[105] == 0x01);
    CHECK(b[118] == 0x00);  // MAC pad
    CHECK(std::memcmp(b.data() + 120, "hello", 5) == 0);
}

TEST_CASE("cm::every_type_round_trips", "[unit][wire][cm]") {
    for (CmType t : {CmType::req, CmType::cookie, CmType::rep, CmType::rtu, CmType::rej, CmType::dreq, CmType::drep}) {
        CmMessage m = sample_req();
        m.type = t;
        m.dst_comm_id = 0x55667788;
        if (t == CmType::rej) m.reason = CmReject::key_mismatch;
        const auto b = encode(m);
        CHECK(b.size() == m.wire_size());
        CmMessage d;
        REQUIRE(CmMessage::decode(b, d) == WireError::ok);
        CHECK(d.type == t);
        CHECK(d.src_comm_id == m.src_comm_id);
        CHECK(d.dst_comm_id == m.dst_comm_id);
        if (t == CmType::req || t == CmType::rep) {
            CHECK(d.service_id == m.service_id);
            CHECK(d.qpn == m.qpn);
            CHECK(d.psn == m.psn);
            CHECK(d.host == m.host);
            CHECK(d.conn_id == m.conn_id);
            CHECK(d.key_nonce == m.key_nonce);
            CHECK(d.cookie == m.cookie);
            CHECK(d.key_check == m.key_check);
            CHECK(d.macs == m.macs);
            CHECK(d.private_len == 5);
        }
        if (t == CmType::cookie) CHECK(d.cookie == m.cookie);
        if (t == CmType::rej) CHECK(d.reason == CmReject::key_mismatch);
        if (t == CmType::dreq) CHECK_FALSE(d.has_rcv_psn);
        // The frame's pad (up to 3 bytes) may follow; a 4th byte is refused.
        auto padded = b;
        padded.insert(padded.end(), 3, 0);
        CHECK(CmMessage::decode(padded, d) == WireError::ok);
        padded.push_back(0);
        CHECK(CmMessage::decode(padded, d) == WireError::bad_field);
    }
}

TEST_CASE("cm::refusals", "[unit][wire][cm]") {
    const auto good = encode(sample_req());
    CmMessage d;
    SECTION("every truncation, never read past the span") {
        for (std::size_t n = 0; n < good.size(); ++n) {
            std::vector<std::uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
            CHECK(CmMessage::decode(cut, d) != WireError::ok);
        }
    }
    auto bad = good;
    SECTION("version") { bad[0] = 2; CHECK(CmMessage::decode(bad, d) == WireError::bad_field); }
    SECTION("type") { bad[1] = 0x08; CHECK(CmMessage::decode(bad, d) == WireError::bad_field); }
    SECTION("comm id 0") { std::memset(&bad[4], 0, 4); CHECK(CmMessage::decode(bad, d) == WireError::bad_field); }
    SECTION("QPN beyond 24 bits") { bad[24] = 1; CHECK(CmMessage::decode(bad, d) == WireError::bad_field); }
    SECTION("MTU not a multiple of 64") { bad[33] = 1; CHECK(CmMessage::decode(bad, d) == WireError::bad_field); }
    SECTION("no planes") { bad[34] = 0; CHECK(CmMessage::decode(bad, d) == WireError::bad_field); }
    SECTION("16 planes") { bad[34] = 16; CHECK(CmMessage::decode(bad, d) == WireError::bad_field); }
    SECTION("unknown encryption") { bad[35] = 3; CHECK(CmMessage::decode(bad, d) == WireError::bad_field); }
    SECTION("private length beyond the message") { bad[37] = 6; CHECK(CmMessage::decode(bad, d) == WireError::bad_field); }
    SECTION("private length beyond 64") { bad[37] = 65; CHECK(CmMessage::decode(bad, d) == WireError::bad_field); }
    SECTION("length field shorter than the header") { bad[3] = 15; CHECK(CmMessage::decode(bad, d) == WireError::bad_field); }
    SECTION("length field longer than the bytes") { bad[3] = 0x7e; CHECK(CmMessage::decode(bad, d) == WireError::truncated_ext); }
    SECTION("encode refuses what decode would") {
        CmMessage m = sample_req();
        std::vector<std::uint8_t> b(kCmMaxMessage);
        std::size_t len = 0;
        m.src_comm_id = 0;
        CHECK(m.encode(b, len) == WireError::bad_field);
        m = sample_req();
        m.private_len = 65;
        CHECK(m.encode(b, len) == WireError::bad_field);
        m = sample_req();
        CHECK(m.encode(std::span(b).first(20), len) == WireError::buffer_too_small);
    }
}

TEST_CASE("cm::carried_in_a_frame", "[unit][wire][cm]") {
    const auto msg = encode(sample_req());
    FrameSpec s;
    s.bth.opcode = Opcode::cm;
    s.bth.dest_qp = kCmQpn;
    std::vector<std::uint8_t> f(512);
    std::size_t len = 0;
    REQUIRE(build_frame(f, s, msg, len) == WireError::ok);
    f.resize(len);
    ParsedFrame p;
    REQUIRE(parse_frame(f, {}, p) == WireError::ok);
    CHECK(p.bth.opcode == Opcode::cm);
    CHECK(p.bth.dest_qp == kCmQpn);
    CHECK(p.deth.qkey == kCmQkey);
    CHECK(p.deth.src_qp == 1);
    REQUIRE(p.payload.size() == msg.size());
    CHECK(std::equal(p.payload.begin(), p.payload.end(), msg.begin()));
    // DETH sits right after BTH: Q_Key 0x80010000, source QP 1.
    const std::size_t deth = 14 + 40 + 8 + 12;
    CHECK(std::vector<std::uint8_t>(f.begin() + deth, f.begin() + deth + 8) ==
          omrc::test::hex("80 01 00 00 00 00 00 01"));
    CmMessage d;
    CHECK(CmMessage::decode(p.payload, d) == WireError::ok);
}

TEST_CASE("cm::dreq_receive_psn", "[unit][wire][cm]") {
    CmMessage m;
    m.type = CmType::dreq;
    m.src_comm_id = 7;
    m.dst_comm_id = 8;
    m.has_rcv_psn = true;
    m.rcv_psn = 0x000102;
    auto b = encode(m);
    REQUIRE(b.size() == kCmHeaderSize + kCmDreqBodySize);
    CmMessage d;
    REQUIRE(CmMessage::decode(b, d) == WireError::ok);
    CHECK(d.has_rcv_psn);
    CHECK(d.rcv_psn == 0x000102);
    m.rcv_psn = 0x1000000;  // past 24 bits
    std::vector<std::uint8_t> out(kCmMaxMessage);
    std::size_t len = 0;
    CHECK(m.encode(out, len) == WireError::bad_field);
    SECTION("a reserved flag bit is refused") {
        b[16] = 0x03;
        CHECK(CmMessage::decode(b, d) == WireError::bad_field);
    }
    SECTION("a PSN without its flag is refused") {
        b[16] = 0x00;
        CHECK(CmMessage::decode(b, d) == WireError::bad_field);
    }
    SECTION("a DREQ without its body is refused") {
        b.resize(kCmHeaderSize);
        b[3] = kCmHeaderSize;
        CHECK(CmMessage::decode(b, d) == WireError::bad_field);
    }
}
