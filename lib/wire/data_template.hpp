// SPDX-License-Identifier: BSD-3-Clause
// Prebuilt headers of one connection's data frames. Everything a QP's data
// packets share (addresses, traffic classes, hop limits, ports, P_Key,
// destination QP, the TS flag) is encoded once by build_headers(); write()
// copies those bytes and stores only the per-packet fields through the
// codecs: MACs of the plane, the EV (UDP source port and flow label), the
// SRv6 outer destination, lengths, BTH opcode/pad/flags/PSN, METH, TSETH,
// CRTH (credit mode), RETH and ImmDt. The result is byte-identical to build_headers() of the
// same fields (tested).
#pragma once

#include <array>
#include <cstdint>

#include "wire/frame.hpp"
#include "wire/gather_frame.hpp"

namespace omrc::wire {

/// The fields that change from one data packet to the next.
struct DataFields {
    const std::uint8_t* macs = nullptr;  ///< 12 bytes: destination then source MAC of the plane
    const Ipv6Addr* outer_dst = nullptr; ///< srv6: the uSID destination of the EV
    std::uint32_t ev = 0;
    Opcode opcode = Opcode::write_only;  ///< a data opcode
    bool ack_req = false;
    bool rtx = false;
    bool solicited = false;              ///< BTH.SE (a SEND's last packet, IBV_SEND_SOLICITED)
    std::uint32_t psn = 0;
    std::uint32_t payload_len = 0;
    MethHdr meth{};
    std::uint16_t tx_timestamp = 0;      ///< TSETH (the template's tsr and type are kept)
    RethHdr reth{};
    std::uint32_t imm = 0;               ///< *_WITH_IMM: the immediate; READ request: its response PSN
    const CrthHdr* crth = nullptr;       ///< credit mode: sets BTH.CR and writes a CRTH before RETH
};

class DataTemplate {
public:
    /// Encodes the shared fields of `spec` (mode, addresses, traffic
    /// classes, hop limits, BTH.dest_qp/pkey/ts, TSETH tsr/type). SRH paths
    /// are not templated (bad_field).
    WireError init(const FrameSpec& spec) noexcept;

    /// Writes the headers of one data packet into `out` (≥ GatherFrame::kMaxHeader
    /// bytes) and returns their length.
    std::size_t write(std::uint8_t* out, const DataFields& f) const noexcept;

    /// Offset of the IPv6 header that the ICRC starts at.
    [[nodiscard]] std::size_t icrc_offset() const noexcept { return ip_off_; }
    [[nodiscard]] FrameMode mode() const noexcept { return mode_; }

private:
    std::array<std::uint8_t, GatherFrame::kMaxHeader> bytes_{};
    FrameMode mode_ = FrameMode::plain;
    std::uint16_t len_ = 0;      ///< through RETH
    std::uint16_t ip_off_ = 0;   ///< IPv6 header before UDP
    std::uint16_t bth_off_ = 0;
    BthHdr bth_{};               ///< the shared BTH fields
    TsethHdr tseth_{};
};

}  // namespace omrc::wire
