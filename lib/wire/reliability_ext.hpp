// SPDX-License-Identifier: BSD-3-Clause
// Reliability headers: SACK (SETH + CC state), NACK (NETH), probe (PETH),
// laid out as the public reimplementations of OCP MRC 1.0 lay them out
// (docs/PROTOCOL.md §4, with each field's source and confidence).
#pragma once

#include <cstdint>
#include <span>

#include "wire/bytes.hpp"
#include "wire/error.hpp"

namespace omrc::wire {

/// SETH M field: what the sender does with the EV the SACK echoes.
enum class SackSkip : std::uint8_t {
    none = 0,
    skip_once = 1,    ///< the triggering packet saw congestion (CE): skip the EV for a rotation
    always_skip = 2,  ///< stop using the EV (the sender treats it as assumed bad)
};

/// Selective ACK extended header (SETH), 28 bytes, the layout the public
/// MRC reimplementations share (docs/PROTOCOL.md §4.7):
///   0-1  type|nh (0) and flags: M in byte 1 bits 6..5, PR in bit 1
///   2    ack_psn_offset (signed; a probe answer carries the probe id here)
///   4    entropy (EV of the triggering packet, or of the probe answered)
///   8    spdcid, 10 dpdcid, 12 reserved, 13 cack_psn (24 bits, inclusive)
///   16   cc_type (4) | cc_flags (4), 17 mpr, 18 sack_offset (signed)
///   20   bitmap: bit k (LSB = 0) ⇔ PSN cack_psn + sack_offset + k received.
/// A CLEAR bitmap bit means "no information", never "lost". Reserved bits
/// are sent as zero and ignored on receive.
struct SethHdr {
    static constexpr std::size_t kSize = 28;
    SackSkip skip = SackSkip::none;   ///< M
    bool probe_response = false;      ///< PR: this SACK answers a reliability probe
    std::int16_t ack_psn_offset = 0;  ///< PSN of the triggering packet minus cack_psn; probe answer: the probe id
    std::uint32_t ev = 0;             ///< echoed EV of the triggering packet (probe answer: the EV the probe came on)
    std::uint16_t src_conn_id = 0;    ///< spdcid: the sender's connection id (its QPN's low 16 bits)
    std::uint16_t dst_conn_id = 0;    ///< dpdcid: the receiver's connection id (its QPN's low 16 bits)
    std::uint32_t cack_psn = 0;       ///< 24 bits: every PSN ≤ cack_psn is received
    std::uint8_t cc_type = 0;         ///< 4 bits (mrc::kSethCcTypeNscc)
    std::uint8_t cc_flags = 0;        ///< 4 bits
    std::uint8_t mpr = 0;             ///< receive window in units of 128 packets
    std::int16_t sack_offset = 0;     ///< first bitmap PSN minus cack_psn
    std::uint64_t bitmap = 0;         ///< bit k ⇔ PSN (cack_psn + sack_offset + k), LSB = k 0
    static constexpr std::int32_t kBitmapPsns = 64;  ///< PSNs one bitmap reports

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (cack_psn > 0xFFFFFF || cc_type > 15 || cc_flags > 15 || static_cast<std::uint8_t>(skip) > 2)
            return WireError::bad_field;
        out[0] = 0;
        out[1] = static_cast<std::uint8_t>((static_cast<unsigned>(skip) << 5) | (probe_response ? 0x02 : 0));
        store_be16(&out[2], static_cast<std::uint16_t>(ack_psn_offset));
        store_be32(&out[4], ev);
        store_be16(&out[8], src_conn_id);
        store_be16(&out[10], dst_conn_id);
        out[12] = 0;
        store_be24(&out[13], cack_psn);
        out[16] = static_cast<std::uint8_t>((cc_type << 4) | cc_flags);
        out[17] = mpr;
        store_be16(&out[18], static_cast<std::uint16_t>(sack_offset));
        store_be64(&out[20], bitmap);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, SethHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        const unsigned m = (in[1] >> 5) & 0x3;
        if (m > 2) return WireError::bad_field;  // M = 3 is reserved
        h.skip = static_cast<SackSkip>(m);
        h.probe_response = (in[1] & 0x02) != 0;
        h.ack_psn_offset = static_cast<std::int16_t>(load_be16(&in[2]));
        h.ev = load_be32(&in[4]);
        h.src_conn_id = load_be16(&in[8]);
        h.dst_conn_id = load_be16(&in[10]);
        h.cack_psn = load_be24(&in[13]);
        h.cc_type = in[16] >> 4;
        h.cc_flags = in[16] & 0xF;
        h.mpr = in[17];
        h.sack_offset = static_cast<std::int16_t>(load_be16(&in[18]));
        h.bitmap = load_be64(&in[20]);
        return WireError::ok;
    }
    friend bool operator==(const SethHdr&, const SethHdr&) = default;
};

/// Congestion-control state carried after SETH in every SACK (CC_STATE),
/// 8 bytes: 0 tx_timestamp echo; 2 reserved (bit 7) | ooo_count (15 bits);
/// 4 restore_cwnd (bit 7) | penalty (7 bits); 5 rcvd_bytes (24 bits).
struct CcStateHdr {
    static constexpr std::size_t kSize = 8;
    static constexpr std::uint32_t kRcvdBytesUnit = 256;
    std::uint16_t ts_echo = 0;       ///< echoed TSETH.tx_timestamp of the triggering packet (128 ns ticks)
    std::uint16_t ooo_count = 0;     ///< 15 bits: packets the receiver holds beyond cack_psn
    bool restore_cwnd = false;       ///< r_c: the sender may restore the window it had before its last cut
    std::uint8_t penalty = 0;        ///< 7 bits: receiver cwnd penalty, 0 none .. 127 one packet per RTT
    std::uint32_t rcvd_bytes = 0;    ///< 24 bits: bytes received on the QP, in 256-byte units (rounded up), wrapping

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (ooo_count > 0x7FFF || penalty > 127 || rcvd_bytes > 0xFFFFFF) return WireError::bad_field;
        store_be16(&out[0], ts_echo);
        store_be16(&out[2], ooo_count);
        out[4] = static_cast<std::uint8_t>((restore_cwnd ? 0x80 : 0) | penalty);
        store_be24(&out[5], rcvd_bytes);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, CcStateHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.ts_echo = load_be16(&in[0]);
        h.ooo_count = load_be16(&in[2]) & 0x7FFF;
        h.restore_cwnd = (in[4] & 0x80) != 0;
        h.penalty = in[4] & 0x7F;
        h.rcvd_bytes = load_be24(&in[5]);
        return WireError::ok;
    }
    friend bool operator==(const CcStateHdr&, const CcStateHdr&) = default;
};

/// NACK reasons (UET PDS codes).
enum class NackReason : std::uint8_t {
    trimmed = 0x01,
    trimmed_lasthop = 0x02,
    no_bitmap = 0x06,
    no_pkt_buffer = 0x07,
    no_resource = 0x0A,
    psn_oor_window = 0x0B,
    unexp_event = 0x19,
};

/// NACK extended header (NETH), 20 bytes: 0-1 type|nh (0); 2 reason;
/// 3 vendor info; 4 entropy (EV of the NACKed packet); 8 spdcid; 10 dpdcid;
/// 12 reserved; 13 nack_psn (24 bits); 16 cc_type (4) | cc_flags (4);
/// 17 reserved; 18 tx_timestamp of the NACKed packet, reflected. It carries
/// no cumulative ACK.
struct NethHdr {
    static constexpr std::size_t kSize = 20;
    std::uint8_t reason = 0;        ///< NackReason value (unknown values are kept, not rejected)
    std::uint8_t vendor = 0;        ///< vendor info
    std::uint32_t ev = 0;           ///< echoed EV of the NACKed packet
    std::uint16_t src_conn_id = 0;  ///< spdcid
    std::uint16_t dst_conn_id = 0;  ///< dpdcid
    std::uint32_t nack_psn = 0;     ///< 24 bits
    std::uint8_t cc_type = 0;       ///< 4 bits (mrc::kNethCcType when sent)
    std::uint8_t cc_flags = 0;      ///< 4 bits
    std::uint16_t ts_echo = 0;      ///< TSETH.tx_timestamp of the NACKed packet

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (nack_psn > 0xFFFFFF || cc_type > 15 || cc_flags > 15) return WireError::bad_field;
        out[0] = 0;
        out[1] = 0;
        out[2] = reason;
        out[3] = vendor;
        store_be32(&out[4], ev);
        store_be16(&out[8], src_conn_id);
        store_be16(&out[10], dst_conn_id);
        out[12] = 0;
        store_be24(&out[13], nack_psn);
        out[16] = static_cast<std::uint8_t>((cc_type << 4) | cc_flags);
        out[17] = 0;
        store_be16(&out[18], ts_echo);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, NethHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.reason = in[2];
        h.vendor = in[3];
        h.ev = load_be32(&in[4]);
        h.src_conn_id = load_be16(&in[8]);
        h.dst_conn_id = load_be16(&in[10]);
        h.nack_psn = load_be24(&in[13]);
        h.cc_type = in[16] >> 4;
        h.cc_flags = in[16] & 0xF;
        h.ts_echo = load_be16(&in[18]);
        return WireError::ok;
    }
    friend bool operator==(const NethHdr&, const NethHdr&) = default;
};

/// Reliability probe extended header (PETH), 16 bytes: 0-1 type|nh (0);
/// 2 reserved; 3 vendor info; 4 probe_id (16 bits); 6 reserved; 8 spdcid;
/// 10 dpdcid; 12 tx_timestamp; 14 TSR (bit 7) | reserved | format type
/// (low 4 bits). No EV field: the probe's EV is the one its UDP port and
/// flow label carry. A probe consumes no PSN (BTH.PSN 0). The answer is a
/// SACK with PR = 1, ack_psn_offset = probe_id, entropy = the probe's EV.
struct PethHdr {
    static constexpr std::size_t kSize = 16;
    std::uint8_t vendor = 0;
    std::uint16_t probe_id = 0;     ///< sender-chosen, echoed by the answer
    std::uint16_t src_conn_id = 0;  ///< spdcid
    std::uint16_t dst_conn_id = 0;  ///< dpdcid
    std::uint16_t tx_timestamp = 0; ///< 128 ns ticks (TSR 0)
    bool tsr = false;               ///< timestamp resolution: false = 128 ns
    std::uint8_t ftype = 0;         ///< 4 bits: mrc::kFtypeTransmitTimestamp for a valid timestamp

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (ftype > 15) return WireError::bad_field;
        out[0] = 0;
        out[1] = 0;
        out[2] = 0;
        out[3] = vendor;
        store_be16(&out[4], probe_id);
        store_be16(&out[6], 0);
        store_be16(&out[8], src_conn_id);
        store_be16(&out[10], dst_conn_id);
        store_be16(&out[12], tx_timestamp);
        store_be16(&out[14], static_cast<std::uint16_t>((tsr ? 0x8000 : 0) | ftype));
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, PethHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.vendor = in[3];
        h.probe_id = load_be16(&in[4]);
        h.src_conn_id = load_be16(&in[8]);
        h.dst_conn_id = load_be16(&in[10]);
        h.tx_timestamp = load_be16(&in[12]);
        const std::uint16_t w = load_be16(&in[14]);
        h.tsr = (w & 0x8000) != 0;
        h.ftype = static_cast<std::uint8_t>(w & 0xF);
        return WireError::ok;
    }
    friend bool operator==(const PethHdr&, const PethHdr&) = default;
};

}  // namespace omrc::wire
