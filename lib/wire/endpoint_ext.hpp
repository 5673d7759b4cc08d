// SPDX-License-Identifier: BSD-3-Clause
// Endpoint extended header (ERTH, 16 bytes): connectionless messages between
// NICs on reserved QPN 2 — port-status updates and EV probes.
#pragma once

#include <cstdint>
#include <span>

#include "wire/bytes.hpp"
#include "wire/error.hpp"

namespace omrc::wire {

enum class ErthOp : std::uint8_t {
    port_status_update = 0,  ///< port_status_mask: bit p set = local port (plane) p is up
    ev_probe = 1,            ///< probe one EV towards a peer NIC, answered with ep_response
};

struct ErthHdr {
    static constexpr std::size_t kSize = 16;
    ErthOp op = ErthOp::port_status_update;
    std::uint8_t flags = 0;
    std::uint16_t reserved = 0;
    std::uint32_t port_status_mask = 0;  ///< meaningful for port_status_update
    std::uint32_t ev = 0;                ///< meaningful for ev_probe
    std::uint32_t seq = 0;               ///< sender sequence; a response echoes it

    WireError encode(std::span<std::uint8_t> out) const noexcept {
        if (out.size() < kSize) return WireError::buffer_too_small;
        out[0] = static_cast<std::uint8_t>(op);
        out[1] = flags;
        store_be16(&out[2], reserved);
        store_be32(&out[4], port_status_mask);
        store_be32(&out[8], ev);
        store_be32(&out[12], seq);
        return WireError::ok;
    }
    static WireError decode(std::span<const std::uint8_t> in, ErthHdr& h) noexcept {
        if (in.size() < kSize) return WireError::truncated_ext;
        if (in[0] > 1) return WireError::bad_field;
        h.op = static_cast<ErthOp>(in[0]);
        h.flags = in[1];
        h.reserved = load_be16(&in[2]);
        h.port_status_mask = load_be32(&in[4]);
        h.ev = load_be32(&in[8]);
        h.seq = load_be32(&in[12]);
        return WireError::ok;
    }
    friend bool operator==(const ErthHdr&, const ErthHdr&) = default;
};

}  // namespace omrc::wire
