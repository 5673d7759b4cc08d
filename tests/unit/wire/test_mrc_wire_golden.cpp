// SPDX-License-Identifier: BSD-3-Clause
// Golden vectors for every control opcode, assembled byte by byte from the
// layouts the public reimplementations of OCP MRC 1.0 share
// (shared/design/MRC-WIRE.md, cited per vector; S1 = the Python end-host
// emulator, S2 = the HLS-style C++ testbench, S3 = the ns-3 module, S6/S7 =
// the UET lineage). Nothing below is produced by lib/wire: each frame is
// written out by hand (only the ICRC, a checksum, is computed), parsed, and
// rebuilt from the parsed fields byte-exact.
#include <catch2/catch.hpp>

#include "support/hex.hpp"
#include "wire/bytes.hpp"
#include "wire/frame.hpp"
#include "wire/icrc.hpp"
#include "wire/mrc_choices.hpp"

using namespace omrc::wire;
using omrc::test::hex;
using omrc::test::to_hex;

namespace {

constexpr std::uint32_t kEv = 0x12340A0B;  ///< EV[31:16] → UDP source port, EV[15:0] → flow label (MRC-WIRE §3.12, S1)

/// A plain-mode RoCEv2 frame around `bth_and_ext` (BTH + extension
/// headers, hand-written), with payload and pad after it; ICRC appended.
std::vector<std::uint8_t> frame(const std::vector<std::uint8_t>& bth_and_ext, const std::vector<std::uint8_t>& payload = {},
                                std::uint8_t dscp = kDscpControl) {
    std::vector<std::uint8_t> f = hex("02 00 00 00 00 02  02 00 00 00 00 01  86 dd");  // Ethernet
    const std::size_t pad = (4 - payload.size() % 4) % 4;
    const std::size_t udp_len = 8 + bth_and_ext.size() + payload.size() + pad + 4;
    // IPv6: version 6, traffic class = DSCP << 2, flow label = EV[15:0].
    f.push_back(static_cast<std::uint8_t>(0x60 | (dscp >> 4)));
    f.push_back(static_cast<std::uint8_t>((dscp << 4) & 0xF0));
    f.push_back(0x0A);
    f.push_back(0x0B);
    f.push_back(static_cast<std::uint8_t>(udp_len >> 8));
    f.push_back(static_cast<std::uint8_t>(udp_len));
    f.push_back(17);  // next header: UDP
    f.push_back(64);  // hop limit
    const auto addrs = hex("20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01  20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02");
    f.insert(f.end(), addrs.begin(), addrs.end());
    // UDP: source port = EV[31:16], destination 4791, length, checksum 0.
    const auto udp = hex("12 34 12 b7");
    f.insert(f.end(), udp.begin(), udp.end());
    f.push_back(static_cast<std::uint8_t>(udp_len >> 8));
    f.push_back(static_cast<std::uint8_t>(udp_len));
    f.push_back(0);
    f.push_back(0);
    f.insert(f.end(), bth_and_ext.begin(), bth_and_ext.end());
    f.insert(f.end(), payload.begin(), payload.end());
    f.insert(f.end(), pad, 0);
    const std::uint32_t crc = icrc_compute(std::span(f).subspan(14));
    f.resize(f.size() + 4);
    store_le32(f.data() + f.size() - 4, crc);
    return f;
}

/// Parses `bytes`, rebuilds them from the parsed fields, and checks both.
ParsedFrame parse_and_rebuild(const std::vector<std::uint8_t>& bytes) {
    ParsedFrame p;
    REQUIRE(parse_frame(bytes, {}, p) == WireError::ok);
    REQUIRE(p.trim == TrimKind::none);
    FrameSpec s;
    s.mode = p.mode;
    s.eth = p.eth;
    s.ip = p.ip;
    s.ev = p.ev;
    s.bth = p.bth;
    s.meth = p.meth;
    s.tseth = p.tseth;
    s.reth = p.reth;
    s.imm = p.imm;
    s.aeth = p.aeth;
    s.seth = p.seth;
    s.cc = p.cc;
    s.neth = p.neth;
    s.peth = p.peth;
    s.erth = p.erth;
    s.eeth = p.eeth;
    std::vector<std::uint8_t> out(bytes.size() + 16);
    std::size_t len = 0;
    REQUIRE(build_frame(out, s, p.payload, len) == WireError::ok);
    out.resize(len);
    CHECK(to_hex(out) == to_hex(bytes));
    return p;
}

}  // namespace

TEST_CASE("mrc golden: SACK 0xDC — SETH (28 B) + CC_STATE (8 B)", "[unit][wire]") {
    // MRC-WIRE §3.5 (S1 mrc_headers.py:353-376, S2 buildSethCc, S3 MrcSethHeader), §3.6 (S1 :235-263, S3).
    // BTH.PSN = cack_psn (§2, S2 "Table 7-6").
    const auto bytes = frame(hex(
        "dc 00 ff ff 00 00 01 05 00 00 01 23"   // BTH: opcode DC, P_Key, DestQP 0x000105, PSN = cack 0x000123
        "00 20"                                 // type|nh 0; byte 1: M = 1 (SKIP_ONCE) in bits 6..5, PR 0
        "00 05"                                 // ack_psn_offset +5
        "12 34 0a 0b"                           // entropy of the triggering packet
        "01 02 03 04"                           // spdcid, dpdcid
        "00 00 01 23"                           // reserved, cack_psn (24 bits)
        "00 08"                                 // cc_type 0 (NSCC, UET numbering) | cc_fl 0; mpr 8 (× 128 PSNs)
        "00 01"                                 // sack_offset +1
        "00 00 00 00 00 00 00 01"               // bitmap: bit 0 (LSB, last on the wire) = PSN cack + 1
        "be ef"                                 // CC_STATE: tx_timestamp reflected
        "12 34"                                 // reserved bit 7, ooo_count 0x1234 (15 bits)
        "e4"                                    // r_c (bit 7) = 1, rcv_cwnd_pen = 100
        "0a 0b 0c"));                           // rcvd_bytes, 256-byte units
    const ParsedFrame p = parse_and_rebuild(bytes);
    CHECK(p.bth.opcode == Opcode::sack);
    CHECK(p.bth.psn == 0x000123);
    CHECK(p.ev == kEv);
    CHECK(p.seth.skip == SackSkip::skip_once);
    CHECK_FALSE(p.seth.probe_response);
    CHECK(p.seth.ack_psn_offset == 5);
    CHECK(p.seth.ev == kEv);
    CHECK(p.seth.src_conn_id == 0x0102);
    CHECK(p.seth.dst_conn_id == 0x0304);
    CHECK(p.seth.cack_psn == 0x000123);
    CHECK(p.seth.cc_type == mrc::kSethCcTypeNscc);
    CHECK(p.seth.mpr == 8);
    CHECK(p.seth.sack_offset == 1);
    CHECK(p.seth.bitmap == 1);  // PSN cack + 1 only
    CHECK(p.cc.ts_echo == 0xBEEF);
    CHECK(p.cc.ooo_count == 0x1234);
    CHECK(p.cc.restore_cwnd);
    CHECK(p.cc.penalty == 100);
    CHECK(p.cc.rcvd_bytes == 0x0A0B0C);
}

TEST_CASE("mrc golden: SETH bitmap bit order — bit 0 and bit 63", "[unit][wire]") {
    // MRC-WIRE §3.5: bit k (k = 0 the LSB) ⇔ PSN sack_base + k (S1 mrc_responder.py:83-92,
    // S3 IsReceived, S6 pdc_build_sack, S7 uec.cpp:1012-1031). Big-endian 64-bit field.
    SethHdr h;
    h.bitmap = 1;  // sack_base + 0
    std::vector<std::uint8_t> out(SethHdr::kSize);
    REQUIRE(h.encode(out) == WireError::ok);
    CHECK(to_hex({out.begin() + 20, out.end()}) == "00 00 00 00 00 00 00 01");
    h.bitmap = 1ull << 63;  // sack_base + 63
    REQUIRE(h.encode(out) == WireError::ok);
    CHECK(to_hex({out.begin() + 20, out.end()}) == "80 00 00 00 00 00 00 00");
    SethHdr d;
    REQUIRE(SethHdr::decode(out, d) == WireError::ok);
    CHECK(d.bitmap >> 63 == 1);
}

TEST_CASE("mrc golden: SACK answering a probe — PR set, probe id in ack_psn_offset", "[unit][wire]") {
    // MRC-WIRE §3.5 (PR in byte 1 bit 1) and §5 "Reliability probe" (S2; UET probe_opaque, S10).
    const auto bytes = frame(hex(
        "dc 00 ff ff 00 00 01 05 00 00 01 23"
        "00 02"                      // M = NONE, PR = 1
        "a5 5a"                      // the probe id
        "30 00 00 42"                // the EV the probe came on
        "01 02 03 04 00 00 01 23 00 08 00 01 00 00 00 00 00 00 00 00"
        "00 00 00 00 00 00 00 00"));  // CC_STATE all zero
    const ParsedFrame p = parse_and_rebuild(bytes);
    CHECK(p.seth.probe_response);
    CHECK(p.seth.skip == SackSkip::none);
    CHECK(static_cast<std::uint16_t>(p.seth.ack_psn_offset) == 0xA55A);
    CHECK(p.seth.ev == 0x30000042);
}

TEST_CASE("mrc golden: SETH M = ALWAYS_SKIP, and M = 3 is reserved", "[unit][wire]") {
    auto ext = hex("00 40 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
    SethHdr h;
    REQUIRE(SethHdr::decode(ext, h) == WireError::ok);
    CHECK(h.skip == SackSkip::always_skip);
    ext[1] = 0x60;  // M = 3
    CHECK(SethHdr::decode(ext, h) == WireError::bad_field);
}

TEST_CASE("mrc golden: NACK 0xDD — NETH (20 B)", "[unit][wire]") {
    // MRC-WIRE §3.7 (S1 mrc_headers.py:453-475, S2 buildNeth/Nack(), S3 MrcNethHeader); reason codes §4.
    const auto bytes = frame(hex(
        "dd 00 ff ff 00 00 01 05 00 00 04 56"   // BTH.PSN = nack_psn
        "00 00"                                 // type|nh|reserved
        "01"                                    // nack_reason TRIMMED
        "00"                                    // vendor_info
        "12 34 0a 0b"                           // entropy of the NACKed packet
        "01 02 03 04"                           // spdcid, dpdcid
        "00 00 04 56"                           // reserved, nack_psn
        "20"                                    // cc_type 2 (what every source sends) | cc_fl 0
        "00"                                    // reserved
        "0c 0d"));                              // tx_timestamp of the NACKed packet
    const ParsedFrame p = parse_and_rebuild(bytes);
    CHECK(p.bth.opcode == Opcode::nack);
    CHECK(p.neth.reason == static_cast<std::uint8_t>(NackReason::trimmed));
    CHECK(p.neth.ev == kEv);
    CHECK(p.neth.src_conn_id == 0x0102);
    CHECK(p.neth.dst_conn_id == 0x0304);
    CHECK(p.neth.nack_psn == 0x000456);
    CHECK(p.neth.cc_type == mrc::kNethCcType);
    CHECK(p.neth.ts_echo == 0x0C0D);
}

TEST_CASE("mrc golden: NACK reason codes", "[unit][wire]") {
    // MRC-WIRE §4 (S1 :35-42, S2, S3; UET PDS codes).
    CHECK(static_cast<int>(NackReason::trimmed) == 0x01);
    CHECK(static_cast<int>(NackReason::trimmed_lasthop) == 0x02);
    CHECK(static_cast<int>(NackReason::no_bitmap) == 0x06);
    CHECK(static_cast<int>(NackReason::no_pkt_buffer) == 0x07);
    CHECK(static_cast<int>(NackReason::no_resource) == 0x0A);
    CHECK(static_cast<int>(NackReason::psn_oor_window) == 0x0B);
    CHECK(static_cast<int>(NackReason::unexp_event) == 0x19);
}

TEST_CASE("mrc golden: probe 0xDE — PETH (16 B), no EV field, PSN 0", "[unit][wire]") {
    // MRC-WIRE §3.8 (S1 :537-550, S2 buildPeth, S3 MrcPethHeader); BTH.PSN reserved (§2).
    const auto bytes = frame(hex(
        "de 00 ff ff 00 00 01 05 00 00 00 00"
        "00 00 00"                              // type|nh|reserved, reserved
        "00"                                    // vendor_info
        "a5 5a"                                 // probe_id (16 bits)
        "00 00"                                 // reserved
        "01 02 03 04"                           // spdcid, dpdcid
        "0c 0c"                                 // tx_timestamp
        "00 01"),                               // TSR 0 (128 ns), format type 1
        {}, kDscpData);                         // probes travel in the trimmable class (§5, S1 packet_builder.py:487)
    const ParsedFrame p = parse_and_rebuild(bytes);
    CHECK(p.bth.opcode == Opcode::probe);
    CHECK(p.bth.psn == 0);
    CHECK(p.peth.probe_id == 0xA55A);
    CHECK(p.peth.src_conn_id == 0x0102);
    CHECK(p.peth.dst_conn_id == 0x0304);
    CHECK(p.peth.tx_timestamp == 0x0C0C);
    CHECK_FALSE(p.peth.tsr);
    CHECK(p.peth.ftype == mrc::kFtypeTransmitTimestamp);
    CHECK(p.ev == kEv);  // the probe's EV is the one its UDP port and flow label carry
}

TEST_CASE("mrc golden: endpoint request 0xD8 — ERTH (16 B), id in BTH.PSN[15:0]", "[unit][wire]") {
    // MRC-WIRE §3.9 (S1 :607-619, S2 buildErth), §3.11 (mask), request id: S1 probing.py:11-13, S2 EpReq().
    const auto psu = frame(hex(
        "d8 00 ff ff 00 00 00 02 00 00 07 77"   // DestQP 2, PSN[15:0] = request id 0x0777
        "00"                                    // type | nh
        "00"                                    // op PORT_STATUS_UPDATE in bits 1..0 (S1: 0)
        "00 00"                                 // reserved, vendor_info
        "00 00 00 fe"                           // port_status_mask: planes 0..6 up, bit p + 1 (1-based, S4)
        "00 00 00 00"                           // reserved
        "0d 0d"                                 // tx_timestamp
        "00 01"));                              // TSR 0, format type 1
    ParsedFrame p = parse_and_rebuild(psu);
    CHECK(p.bth.opcode == Opcode::ep_request);
    CHECK(p.bth.dest_qp == kEndpointQpn);
    CHECK((p.bth.psn & 0xFFFF) == 0x0777);
    CHECK(p.erth.op == ErthOp::port_status_update);
    CHECK(mrc::planes_from_port_mask(p.erth.port_status_mask) == 0x7F);
    CHECK(p.erth.tx_timestamp == 0x0D0D);
    CHECK(p.erth.ftype == 1);
    const auto probe = frame(hex("d8 00 ff ff 00 00 00 02 00 00 07 78  00 01 00 00 00 00 00 00 00 00 00 00 0d 0e 00 01"));
    p = parse_and_rebuild(probe);
    CHECK(p.erth.op == ErthOp::ev_probe);  // S1: EV_PROBE = 1
    CHECK(p.erth.port_status_mask == 0);   // never read as a port-status update
}

TEST_CASE("mrc golden: endpoint response 0xD9 — EETH (36 B)", "[unit][wire]") {
    // MRC-WIRE §3.10 (S1 :676-680, S2 buildEeth): op in byte 1 (S1: bits 5..4), timestamp at 28.
    const auto bytes = frame(hex(
        "d9 00 ff ff 00 00 00 02 00 00 07 78"   // DestQP 2, the request id echoed
        "00 10"                                 // op EV_PROBE (1) in bits 5..4
        "00 00"                                 // reserved
        "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"  // 6 × 32 reserved
        "0d 0e"                                 // the request's tx_timestamp, reflected
        "00 00 00 00 00 00"));                  // reserved
    const ParsedFrame p = parse_and_rebuild(bytes);
    CHECK(p.bth.opcode == Opcode::ep_response);
    CHECK(p.eeth.op == ErthOp::ev_probe);
    CHECK(p.eeth.ts_echo == 0x0D0E);
    CHECK((p.bth.psn & 0xFFFF) == 0x0778);
}

TEST_CASE("mrc golden: Transport ACK 0xD1 — AETH, IB semantics", "[unit][wire]") {
    // MRC-WIRE §3.4 (S1 :713-734, S8 roce.py:244-248, S3): syndrome | MSN (24); BTH.PSN = acked PSN (S2).
    const auto bytes = frame(hex("d1 00 ff ff 00 00 01 05 00 00 01 23  00 00 00 05"));
    const ParsedFrame p = parse_and_rebuild(bytes);
    CHECK(p.bth.opcode == Opcode::ack);
    CHECK(p.aeth.syndrome == static_cast<std::uint8_t>(AethSyndrome::ack));
    CHECK(p.aeth.msn == 5);
    CHECK(p.bth.psn == 0x000123);
}

TEST_CASE("mrc golden: WRITE_ONLY with TSETH — format type 1, TSR = 128 ns", "[unit][wire]") {
    // MRC-WIRE §3.1 (byte 8: A 0x80, rtx 0x20, ts 0x10), §3.2 METH, §3.3 TSETH (S1 :172-194, S2 "tsr=0 (128 ns)"),
    // §3.4 RETH in every packet.
    const std::vector<std::uint8_t> payload(8, 0x5A);
    const auto bytes = frame(hex(
        "ca 00 ff ff 00 00 01 05 b0 00 00 09"   // WRITE_ONLY, A | rtx | ts, PSN 9
        "00 00 00 03"                           // METH: RQMSN 0, MSN 3
        "10 01 00 01"                           // TSETH: tx_timestamp 0x1001, TSR 0, format type 1
        "00 00 7f 00 00 00 10 00  5e c0 de 00  00 00 00 08"),  // RETH: VA, R_Key, DMALength
        payload, kDscpData);
    const ParsedFrame p = parse_and_rebuild(bytes);
    CHECK(p.bth.ack_req);
    CHECK(p.bth.rtx);
    CHECK(p.bth.ts);
    CHECK(p.tseth.tx_timestamp == 0x1001);
    CHECK_FALSE(p.tseth.tsr);
    CHECK(p.tseth.type == mrc::kFtypeTransmitTimestamp);
    CHECK(p.reth.va == 0x00007F0000001000ull);
    CHECK(p.payload.size() == 8);
}
