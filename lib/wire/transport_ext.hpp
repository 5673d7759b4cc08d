// SPDX-License-Identifier: BSD-3-Clause
// Extension headers of data and transport-ACK packets: METH, TSETH, RETH,
// ImmDt, AETH. All big-endian, fixed size.
#pragma once

#include <cstdint>
#include <span>

#include "wire/bytes.hpp"
#include "wire/error.hpp"

namespace omrc::wire {

/// Message extension header: orders WRITE_WITH_IMM completions.
struct MethHdr {
    static constexpr std::size_t kSize = 4;
    std::uint16_t rqmsn = 0;  ///< receive-queue MSN: counts messages that consume a RECV (WRITE_IMM)
    std::uint16_t msn = 0;    ///< message sequence number of this packet's message (all messages)

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        store_be16(&out[0], rqmsn);
        store_be16(&out[2], msn);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, MethHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.rqmsn = load_be16(&in[0]);
        h.msn = load_be16(&in[2]);
        return WireError::ok;
    }
    friend bool operator==(const MethHdr&, const MethHdr&) = default;
};

/// Timestamp extension header (present when BTH.TS is set): 0 tx_timestamp;
/// 2 TSR (bit 7) | 11 reserved bits | format type (low 4 bits). The
/// receiver reflects tx_timestamp in the SACK's CC_STATE.
struct TsethHdr {
    static constexpr std::size_t kSize = 4;
    static constexpr std::uint32_t kTickNs = 128;  ///< unit of tx_timestamp when tsr is false
    std::uint16_t tx_timestamp = 0;  ///< sender clock in 128 ns ticks, wraps every 8.39 ms
    bool tsr = false;                ///< timestamp resolution: false = 128 ns, true = implementation-defined
    std::uint8_t type = 0;           ///< 4 bits, format type: mrc::kFtypeTransmitTimestamp = a transmit time

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (type > 15) return WireError::bad_field;
        store_be16(&out[0], tx_timestamp);
        store_be16(&out[2], static_cast<std::uint16_t>((tsr ? 0x8000 : 0) | type));
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, TsethHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.tx_timestamp = load_be16(&in[0]);
        const std::uint16_t w = load_be16(&in[2]);
        h.tsr = (w & 0x8000) != 0;
        h.type = static_cast<std::uint8_t>(w & 0xF);
        return WireError::ok;
    }
    friend bool operator==(const TsethHdr&, const TsethHdr&) = default;
};

/// RDMA extended transport header: the packet's own target address. OpenMRC
/// sends it in EVERY data packet, so each packet can be placed on arrival.
struct RethHdr {
    static constexpr std::size_t kSize = 16;
    std::uint64_t va = 0;       ///< target virtual address of this packet's first payload byte
    std::uint32_t rkey = 0;
    std::uint32_t dma_len = 0;  ///< bytes of the whole message (not of this packet)

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        store_be64(&out[0], va);
        store_be32(&out[8], rkey);
        store_be32(&out[12], dma_len);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, RethHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.va = load_be64(&in[0]);
        h.rkey = load_be32(&in[8]);
        h.dma_len = load_be32(&in[12]);
        return WireError::ok;
    }
    friend bool operator==(const RethHdr&, const RethHdr&) = default;
};

/// Immediate data (WRITE_LAST_WITH_IMM, WRITE_ONLY_WITH_IMM). Opaque 32 bits,
/// carried in network order and handed to the application unchanged.
struct ImmDtHdr {
    static constexpr std::size_t kSize = 4;
    std::uint32_t imm = 0;

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        store_be32(&out[0], imm);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, ImmDtHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.imm = load_be32(&in[0]);
        return WireError::ok;
    }
    friend bool operator==(const ImmDtHdr&, const ImmDtHdr&) = default;
};

/// AETH syndromes (IBTA): 0x00 ACK; 0x60..0x63 NAK codes.
enum class AethSyndrome : std::uint8_t {
    ack = 0x00,
    /// RNR NAK (receiver not ready: no receive WR for a SEND): 0x20 | the
    /// IBTA RNR timer code in the low five bits.
    rnr_nak = 0x20,
    nak_psn_seq_error = 0x60,
    nak_invalid_request = 0x61,
    nak_remote_access = 0x62,
    nak_remote_op = 0x63,
};

[[nodiscard]] constexpr bool is_rnr_nak(std::uint8_t syndrome) noexcept { return (syndrome & 0xE0) == 0x20; }

/// ACK extended transport header (opcode 0xD1): RDMA-semantic ACK/NAK, kept
/// separate from reliability (a packet may be SACKed and NAKed).
struct AethHdr {
    static constexpr std::size_t kSize = 4;
    std::uint8_t syndrome = 0;
    std::uint32_t msn = 0;  ///< 24 bits: message the syndrome refers to

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (msn > 0xFFFFFF) return WireError::bad_field;
        out[0] = syndrome;
        store_be24(&out[1], msn);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, AethHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.syndrome = in[0];
        h.msn = load_be24(&in[1]);
        return WireError::ok;
    }
    friend bool operator==(const AethHdr&, const AethHdr&) = default;
};

}  // namespace omrc::wire
