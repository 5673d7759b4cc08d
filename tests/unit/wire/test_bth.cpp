// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <random>

#include "support/hex.hpp"
#include "wire/bth.hpp"

using namespace omrc::wire;
using omrc::test::hex;

TEST_CASE("BthHdr::encode__golden", "[unit][wire]") {
    BthHdr h;
    h.opcode = Opcode::write_only;
    h.solicited = true;
    h.pad_count = 2;
    h.dest_qp = 0x123456;
    h.ack_req = true;
    h.rtx = true;
    h.ts = true;
    h.psn = 0xABCDEF;
    CHECK(omrc::test::encoded(h) == hex("ca a0 ff ff 00 12 34 56 b0 ab cd ef"));
}

TEST_CASE("BthHdr::encode__flag_bits_are_separate", "[unit][wire]") {
    BthHdr h;
    h.opcode = Opcode::sack;
    h.rtx = true;
    CHECK(omrc::test::encoded(h)[8] == 0x20);
    h.rtx = false;
    h.ts = true;
    CHECK(omrc::test::encoded(h)[8] == 0x10);
    h.ts = false;
    h.ack_req = true;
    CHECK(omrc::test::encoded(h)[8] == 0x80);
}

TEST_CASE("BthHdr::encode__out_of_range", "[unit][wire]") {
    std::uint8_t out[12];
    BthHdr h;
    h.dest_qp = 0x1000000;
    CHECK(h.encode(out) == WireError::bad_field);
    h.dest_qp = 0;
    h.psn = 0x1000000;
    CHECK(h.encode(out) == WireError::bad_field);
    h.psn = 0;
    h.pad_count = 4;
    CHECK(h.encode(out) == WireError::bad_field);
}

TEST_CASE("BthHdr::decode__every_opcode", "[unit][wire]") {
    auto b = hex("ca 00 ff ff 00 00 00 11 00 00 00 05");
    int known = 0;
    for (int op = 0; op < 256; ++op) {
        b[0] = static_cast<std::uint8_t>(op);
        BthHdr h;
        const WireError e = BthHdr::decode(b, h);
        if (is_known_opcode(static_cast<std::uint8_t>(op))) {
            ++known;
            REQUIRE(e == WireError::ok);
            CHECK(static_cast<int>(h.opcode) == op);
            CHECK(std::string(opcode_name(h.opcode)) != "UNKNOWN");
        } else {
            CHECK(e == WireError::unknown_opcode);
        }
    }
    CHECK(known == 24);  // 6 SEND, 6 WRITE, 5 READ, ACK, 2 endpoint, SACK, NACK, PROBE, CM
}

TEST_CASE("BthHdr::decode__tver_and_truncation", "[unit][wire]") {
    auto b = hex("ca 01 ff ff 00 00 00 11 00 00 00 05");
    BthHdr h;
    CHECK(BthHdr::decode(b, h) == WireError::bad_tver);
    b[1] = 0;
    for (std::size_t n = 0; n < BthHdr::kSize; ++n)
        CHECK(BthHdr::decode(std::span(b).first(n), h) == WireError::truncated_bth);
}

TEST_CASE("BthHdr::decode__roundtrip_random", "[unit][wire]") {
    static constexpr Opcode ops[] = {Opcode::write_first, Opcode::write_middle, Opcode::write_last,
                                     Opcode::write_last_imm, Opcode::write_only, Opcode::write_only_imm,
                                     Opcode::ack, Opcode::ep_request, Opcode::ep_response,
                                     Opcode::sack, Opcode::nack, Opcode::probe};
    std::mt19937 rng(7);
    for (int i = 0; i < 2000; ++i) {
        BthHdr h;
        h.opcode = ops[rng() % 12];
        h.solicited = rng() & 1;
        h.mig_req = rng() & 1;
        h.pad_count = rng() & 3;
        h.pkey = static_cast<std::uint16_t>(rng());
        h.resv8 = static_cast<std::uint8_t>(rng());
        h.dest_qp = rng() & 0xFFFFFF;
        h.ack_req = rng() & 1;
        h.rtx = rng() & 1;
        h.ts = rng() & 1;
        h.psn = rng() & 0xFFFFFF;
        BthHdr d;
        REQUIRE(BthHdr::decode(omrc::test::encoded(h), d) == WireError::ok);
        REQUIRE(d == h);
    }
}

TEST_CASE("opcode predicates", "[unit][wire]") {
    CHECK(is_data_opcode(Opcode::write_first));
    CHECK(is_data_opcode(Opcode::write_only_imm));
    CHECK_FALSE(is_data_opcode(Opcode::ack));
    CHECK(carries_imm(Opcode::write_last_imm));
    CHECK_FALSE(carries_imm(Opcode::write_last));
    CHECK(is_first_of_message(Opcode::write_only));
    CHECK_FALSE(is_first_of_message(Opcode::write_middle));
    CHECK(is_last_of_message(Opcode::write_only_imm));
    CHECK_FALSE(is_last_of_message(Opcode::write_first));
}
