// SPDX-License-Identifier: BSD-3-Clause
// The sender's segmentation and frames (lib/core/engine_tx.cpp): opcodes by
// bytes, AckReq, the send gates. Cases in the order of the functions they
// exercise, named Function__case.
#include <catch2/catch.hpp>

#include "core/psn.hpp"
#include "support/crafted_sender.hpp"

using namespace omrc;
using namespace omrc::core;
using namespace omrc::test;
using wire::Opcode;

TEST_CASE("SendMsg::opcode_at__first_middle_last_by_bytes", "[unit][core]") {
    SendMsg m;
    m.length = 3 * 4096;
    CHECK(m.opcode_at(0, 4096) == wire::Opcode::write_first);
    CHECK(m.opcode_at(4096, 4096) == wire::Opcode::write_middle);
    CHECK(m.opcode_at(8192, 4096) == wire::Opcode::write_last);
    m.req.with_imm = true;
    CHECK(m.opcode_at(8192, 4096) == wire::Opcode::write_last_imm);
    m.length = 0;  // a zero-length message is one packet
    CHECK(m.opcode_at(0, 0) == wire::Opcode::write_only_imm);
    m.req.with_imm = false;
    CHECK(m.opcode_at(0, 0) == wire::Opcode::write_only);
}

TEST_CASE("SendMsg::opcode_at__message_beyond_2_23_packets_ends_with_last", "[unit][core]") {
    // The largest message (2^31 bytes) at the smallest MTU (64 B) is 2^25
    // packets: more than a signed 24-bit PSN difference counts.
    SendMsg m;
    m.length = 1u << 31;
    constexpr std::uint32_t mtu = 64;
    CHECK(m.opcode_at(0, mtu) == wire::Opcode::write_first);
    for (std::uint32_t pkt : {(1u << 23) - 1, 1u << 23, (1u << 23) + 1, 1u << 24, (1u << 25) - 2})
        CHECK(m.opcode_at(pkt * mtu, mtu) == wire::Opcode::write_middle);
    CHECK(m.opcode_at((1u << 31) - mtu, mtu) == wire::Opcode::write_last);
    m.length = (1u << 31) - 10;  // a short last packet
    CHECK(m.opcode_at((1u << 31) - mtu, mtu - 10) == wire::Opcode::write_last);
}

TEST_CASE("Engine::build_data_frame__ack_req_only_when_the_sender_cannot_go_on", "[unit][core]") {
    Tx t;
    const auto out = t.post(6);
    REQUIRE(out.size() == 6);
    for (std::size_t k = 0; k < 6; ++k) {
        CHECK(out[k].f.bth.psn == psn_add(t.first_psn(), static_cast<std::int32_t>(k)));
        CHECK(out[k].f.bth.ack_req == (k == 5));  // the queue is empty after the last packet
        CHECK_FALSE(out[k].f.bth.rtx);
        CHECK(out[k].f.payload.size() == kTxMtu);
        CHECK(std::equal(out[k].f.payload.begin(), out[k].f.payload.end(), t.src.begin() + k * kTxMtu));
    }
    CHECK(out[0].f.bth.opcode == Opcode::write_first);
    CHECK(out[5].f.bth.opcode == Opcode::write_last);
}

TEST_CASE("Engine::build_data_frame__ack_req_when_the_window_is_full", "[unit][core]") {
    QpAttr a = Tx::base_attr();
    a.cc.fixed_window_bytes = 4 * kTxMtu;
    Tx t(a);
    const auto out = t.post(10);
    REQUIRE(out.size() == 4);  // the window holds four
    CHECK_FALSE(out[2].f.bth.ack_req);
    CHECK(out[3].f.bth.ack_req);
}
