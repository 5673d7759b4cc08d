// SPDX-License-Identifier: BSD-3-Clause
// Endpoint headers: connectionless messages between NICs on reserved QPN 2.
// Requests (opcode 0xD8) carry ERTH, 16 bytes; responses (0xD9) carry EETH,
// 36 bytes. The request id is BTH.PSN[15:0] in both (docs/PROTOCOL.md
// §4.11-4.12). Op values and the EETH op position are choices where the
// public sources disagree (wire/mrc_choices.hpp).
#pragma once

#include <cstdint>
#include <span>

#include "wire/bytes.hpp"
#include "wire/error.hpp"
#include "wire/mrc_choices.hpp"

namespace omrc::wire {

/// Endpoint operation (2 bits on the wire). Values outside the two known
/// ones are kept as they arrive and never acted on.
enum class ErthOp : std::uint8_t {
    port_status_update = mrc::kErthOpPortStatusUpdate,  ///< port_status_mask says which ports are up
    ev_probe = mrc::kErthOpEvProbe,                     ///< probe one EV towards a peer NIC, answered with EETH
    /// OpenMRC extension: the sender retired a (plane, T1) on strong evidence
    /// (alarm_plane, alarm_t1); the receiver's QPs leave it too
    path_alarm = mrc::kErthOpPathAlarm,
};

/// ERTH: 0 type|nh (0); 1 op in bits 1..0; 2 reserved; 3 vendor info;
/// 4 port_status_mask; 8 reserved (PATH_ALARM, OpenMRC's: 8 T1 index (16),
/// 10 plane, 11 reserved); 12 tx_timestamp; 14 TSR (bit 7) | reserved |
/// format type (low 4 bits).
struct ErthHdr {
    static constexpr std::size_t kSize = 16;
    ErthOp op = ErthOp::port_status_update;
    std::uint8_t vendor = 0;
    std::uint32_t port_status_mask = 0;  ///< port_status_update: bit per port (mrc::port_mask_bit), 1 = up
    std::uint16_t alarm_t1 = 0;          ///< path_alarm: the T1 (group) index; 0 on every other op
    std::uint8_t alarm_plane = 0;        ///< path_alarm: its plane; 0 on every other op
    std::uint16_t tx_timestamp = 0;      ///< 128 ns ticks
    bool tsr = false;                    ///< timestamp resolution: false = 128 ns
    std::uint8_t ftype = 0;              ///< 4 bits

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (static_cast<std::uint8_t>(op) > 3 || ftype > 15) return WireError::bad_field;
        out[0] = 0;
        out[1] = static_cast<std::uint8_t>(op) & 0x3;
        out[2] = 0;
        out[3] = vendor;
        store_be32(&out[4], port_status_mask);
        store_be16(&out[8], alarm_t1);
        out[10] = alarm_plane;
        out[11] = 0;
        store_be16(&out[12], tx_timestamp);
        store_be16(&out[14], static_cast<std::uint16_t>((tsr ? 0x8000 : 0) | ftype));
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, ErthHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.op = static_cast<ErthOp>(in[1] & 0x3);
        h.vendor = in[3];
        h.port_status_mask = load_be32(&in[4]);
        h.alarm_t1 = load_be16(&in[8]);
        h.alarm_plane = in[10];
        h.tx_timestamp = load_be16(&in[12]);
        const std::uint16_t w = load_be16(&in[14]);
        h.tsr = (w & 0x8000) != 0;
        h.ftype = static_cast<std::uint8_t>(w & 0xF);
        return WireError::ok;
    }
    friend bool operator==(const ErthHdr&, const ErthHdr&) = default;
};

/// EETH: 0 type|nh (0); 1 op (2 bits at mrc::kEethOpShift); 2..27
/// reserved; 28 tx_timestamp (the request's, reflected: the requester's RTT
/// sample); 30..35 reserved. As long as SETH + CC_STATE, with the reflected
/// timestamp at the same offset.
struct EethHdr {
    static constexpr std::size_t kSize = 36;
    ErthOp op = ErthOp::ev_probe;
    std::uint16_t ts_echo = 0;  ///< the request's tx_timestamp

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        if (static_cast<std::uint8_t>(op) > 3) return WireError::bad_field;
        for (std::size_t i = 0; i < kSize; ++i) out[i] = 0;
        out[1] = static_cast<std::uint8_t>((static_cast<unsigned>(op) & 0x3) << mrc::kEethOpShift);
        store_be16(&out[28], ts_echo);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, EethHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        h.op = static_cast<ErthOp>((in[1] >> mrc::kEethOpShift) & 0x3);
        h.ts_echo = load_be16(&in[28]);
        return WireError::ok;
    }
    friend bool operator==(const EethHdr&, const EethHdr&) = default;
};

}  // namespace omrc::wire
