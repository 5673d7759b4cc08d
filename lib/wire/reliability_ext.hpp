// SPDX-License-Identifier: BSD-3-Clause
// Reliability headers: SACK (SETH + CC state), NACK (NETH), probe (PETH).
// Layouts are OpenMRC's normative ones (docs/PROTOCOL.md §4), sized as MRC's.
#pragma once

#include <cstdint>
#include <span>

#include "wire/bytes.hpp"
#include "wire/error.hpp"

namespace omrc::wire {

/// SETH flags field (16 bits). M (bits 15..14) tells the sender what to do
/// with the EV it echoes.
enum class SackSkip : std::uint8_t { none = 0, skip_once = 1, always_skip = 2 };
inline constexpr std::uint16_t kSackFlagProbeResponse = 0x2000;  ///< bit 13: answers a PETH
inline constexpr std::uint16_t kSackFlagEcnEcho = 0x1000;        ///< bit 12: triggering packet had CE

/// Selective ACK extended header, 28 bytes.
/// Bitmap bit i (bit 63 = i 0) reports PSN (cack_psn + sack_offset + i) as
/// received. A CLEAR bit means "no information", never "lost".
struct SethHdr {
    static constexpr std::size_t kSize = 28;
    SackSkip skip = SackSkip::none;
    std::uint16_t flags = 0;          ///< bits other than M (probe response, ECN echo)
    std::int16_t ack_psn_offset = 0;  ///< PSN of the triggering packet minus cack_psn
    std::uint32_t ev = 0;             ///< echoed EV of the triggering packet
    std::uint16_t src_conn_id = 0;    ///< sender's connection id (16 bits, random per QP)
    std::uint16_t dst_conn_id = 0;    ///< receiver's connection id as learnt at connect
    std::uint32_t cack_psn = 0;       ///< 24 bits: every PSN ≤ cack_psn is received
    std::uint8_t cc_type = 0;         ///< 4 bits: 0 none, 1 NSCC
    std::uint8_t cc_flags = 0;        ///< 4 bits
    std::uint8_t mpr = 0;             ///< receive window in units of 128 packets
    std::int16_t sack_offset = 0;     ///< first bitmap PSN minus cack_psn
    std::uint64_t bitmap = 0;

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (cack_psn > 0xFFFFFF || cc_type > 15 || cc_flags > 15 ||
            static_cast<std::uint8_t>(skip) > 2 || (flags & 0xC000) != 0)
            return WireError::bad_field;
        store_be16(&out[0], static_cast<std::uint16_t>((static_cast<unsigned>(skip) << 14) | flags));
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
        const std::uint16_t f = load_be16(&in[0]);
        const unsigned m = f >> 14;
        if (m > 2) return WireError::bad_field;
        h.skip = static_cast<SackSkip>(m);
        h.flags = f & 0x3FFF;
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

/// Congestion-control state carried after SETH, 8 bytes.
struct CcStateHdr {
    static constexpr std::size_t kSize = 8;
    static constexpr std::uint32_t kRcvdBytesUnit = 256;
    std::uint16_t ts_echo = 0;       ///< echoed TSETH.tx_timestamp (128 ns ticks)
    std::uint16_t ooo_count = 0;     ///< 15 bits: packets held out of order at the receiver
    bool restore_cwnd = false;
    std::uint8_t penalty = 0;        ///< 7 bits: receiver cwnd penalty 0..127
    std::uint32_t rcvd_bytes = 0;    ///< 24 bits, in 256-byte units, wrapping

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (ooo_count > 0x7FFF || penalty > 127 || rcvd_bytes > 0xFFFFFF) return WireError::bad_field;
        store_be16(&out[0], ts_echo);
        store_be16(&out[2], static_cast<std::uint16_t>((ooo_count << 1) | (restore_cwnd ? 1 : 0)));
        out[4] = static_cast<std::uint8_t>(penalty << 1);
        store_be24(&out[5], rcvd_bytes);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, CcStateHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.ts_echo = load_be16(&in[0]);
        const std::uint16_t w = load_be16(&in[2]);
        h.ooo_count = w >> 1;
        h.restore_cwnd = (w & 1) != 0;
        h.penalty = in[4] >> 1;
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

/// NACK extended header, 20 bytes.
struct NethHdr {
    static constexpr std::size_t kSize = 20;
    std::uint8_t reason = 0;        ///< NackReason value (unknown values are kept, not rejected)
    std::uint8_t flags = 0;
    std::uint16_t ts_echo = 0;      ///< echoed TSETH.tx_timestamp of the NACKed packet
    std::uint32_t ev = 0;           ///< echoed EV of the NACKed packet
    std::uint16_t src_conn_id = 0;
    std::uint16_t dst_conn_id = 0;
    std::uint32_t nack_psn = 0;     ///< 24 bits
    std::uint32_t cack_psn = 0;     ///< 24 bits: receiver's cumulative ack at NACK time

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (nack_psn > 0xFFFFFF || cack_psn > 0xFFFFFF) return WireError::bad_field;
        out[0] = reason;
        out[1] = flags;
        store_be16(&out[2], ts_echo);
        store_be32(&out[4], ev);
        store_be16(&out[8], src_conn_id);
        store_be16(&out[10], dst_conn_id);
        out[12] = 0;
        store_be24(&out[13], nack_psn);
        out[16] = 0;
        store_be24(&out[17], cack_psn);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, NethHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.reason = in[0];
        h.flags = in[1];
        h.ts_echo = load_be16(&in[2]);
        h.ev = load_be32(&in[4]);
        h.src_conn_id = load_be16(&in[8]);
        h.dst_conn_id = load_be16(&in[10]);
        h.nack_psn = load_be24(&in[13]);
        h.cack_psn = load_be24(&in[17]);
        return WireError::ok;
    }
    friend bool operator==(const NethHdr&, const NethHdr&) = default;
};

/// Probe extended header, 16 bytes. A probe consumes no PSN; its BTH.PSN
/// carries the sender's next PSN for information only.
struct PethHdr {
    static constexpr std::size_t kSize = 16;
    std::uint32_t probe_id = 0;     ///< sender-chosen; the answering SACK echoes its low 16 bits in ack_psn_offset and this EV in ev
    std::uint32_t ev = 0;           ///< EV this probe travels on (also in UDP sport / flow label)
    std::uint16_t src_conn_id = 0;
    std::uint16_t dst_conn_id = 0;
    std::uint16_t tx_timestamp = 0; ///< 128 ns ticks
    std::uint16_t reserved = 0;

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        store_be32(&out[0], probe_id);
        store_be32(&out[4], ev);
        store_be16(&out[8], src_conn_id);
        store_be16(&out[10], dst_conn_id);
        store_be16(&out[12], tx_timestamp);
        store_be16(&out[14], reserved);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, PethHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.probe_id = load_be32(&in[0]);
        h.ev = load_be32(&in[4]);
        h.src_conn_id = load_be16(&in[8]);
        h.dst_conn_id = load_be16(&in[10]);
        h.tx_timestamp = load_be16(&in[12]);
        h.reserved = load_be16(&in[14]);
        return WireError::ok;
    }
    friend bool operator==(const PethHdr&, const PethHdr&) = default;
};

}  // namespace omrc::wire
