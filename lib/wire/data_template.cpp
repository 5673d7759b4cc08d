// SPDX-License-Identifier: BSD-3-Clause
#include "wire/data_template.hpp"

#include <cstring>

#include "wire/ev.hpp"

namespace omrc::wire {

WireError DataTemplate::init(const FrameSpec& spec) noexcept {
    if (spec.has_srh) return WireError::bad_field;
    FrameSpec s = spec;
    s.bth.opcode = Opcode::write_middle;  // METH [TSETH] RETH: the longest shared part
    std::size_t hlen = 0;
    const WireError e = build_headers(bytes_, s, 0, hlen);
    if (e != WireError::ok) return e;
    mode_ = s.mode;
    len_ = static_cast<std::uint16_t>(hlen);
    ip_off_ = static_cast<std::uint16_t>(EthHdr::kSize + (s.mode == FrameMode::srv6 ? Ipv6Hdr::kSize : 0));
    bth_off_ = static_cast<std::uint16_t>(ip_off_ + Ipv6Hdr::kSize + UdpHdr::kSize);
    bth_ = s.bth;
    tseth_ = s.tseth;
    return WireError::ok;
}

std::size_t DataTemplate::write(std::uint8_t* out, const DataFields& f) const noexcept {
    std::memcpy(out, bytes_.data(), len_);
    std::memcpy(out, f.macs, 12);
    const bool imm = has_imm_field(f.opcode);
    const std::size_t hlen = len_ + (imm ? ImmDtHdr::kSize : 0) + (f.crth != nullptr ? CrthHdr::kSize : 0);
    const std::uint32_t pad = (4 - f.payload_len % 4) % 4;
    const std::size_t udp_len = hlen - ip_off_ - Ipv6Hdr::kSize + f.payload_len + pad + kIcrcSize;
    if (mode_ == FrameMode::srv6) {
        std::uint8_t* outer = out + EthHdr::kSize;
        Ipv6Hdr::store_payload_len(outer, static_cast<std::uint16_t>(Ipv6Hdr::kSize + udp_len));
        if (f.outer_dst != nullptr) Ipv6Hdr::store_dst(outer, *f.outer_dst);
    }
    std::uint8_t* ip = out + ip_off_;
    Ipv6Hdr::store_flow_label(ip, ev_to_flow_label(f.ev));
    Ipv6Hdr::store_payload_len(ip, static_cast<std::uint16_t>(udp_len));
    std::uint8_t* udp = ip + Ipv6Hdr::kSize;
    UdpHdr::store_src_port(udp, ev_to_udp_sport(f.ev));
    UdpHdr::store_length(udp, static_cast<std::uint16_t>(udp_len));
    BthHdr bth = bth_;
    bth.opcode = f.opcode;
    bth.pad_count = static_cast<std::uint8_t>(pad);
    bth.ack_req = f.ack_req;
    bth.rtx = f.rtx;
    bth.solicited = f.solicited;
    bth.cr = f.crth != nullptr;
    bth.psn = f.psn & 0xFFFFFF;
    std::uint8_t* p = out + bth_off_;
    (void)bth.encode({p, BthHdr::kSize});
    p += BthHdr::kSize;
    (void)f.meth.encode({p, MethHdr::kSize});
    p += MethHdr::kSize;
    if (bth_.ts) {
        TsethHdr ts = tseth_;
        ts.tx_timestamp = f.tx_timestamp;
        (void)ts.encode({p, TsethHdr::kSize});
        p += TsethHdr::kSize;
    }
    if (f.crth != nullptr) {
        (void)f.crth->encode({p, CrthHdr::kSize});
        p += CrthHdr::kSize;
    }
    (void)f.reth.encode({p, RethHdr::kSize});
    p += RethHdr::kSize;
    if (imm) (void)ImmDtHdr{f.imm}.encode({p, ImmDtHdr::kSize});
    return hlen;
}

}  // namespace omrc::wire
