// SPDX-License-Identifier: BSD-3-Clause
#include "wire/frame.hpp"

#include <algorithm>
#include <cstring>

#include "wire/ev.hpp"
#include "wire/frame_view.hpp"
#include "wire/mrc_choices.hpp"

namespace omrc::wire {

std::size_t ext_header_size(Opcode op, bool ts, bool credit) noexcept {
    const std::size_t crth = credit ? CrthHdr::kSize : 0;
    switch (op) {
        case Opcode::send_first:
        case Opcode::send_middle:
        case Opcode::send_last:
        case Opcode::send_only:
        case Opcode::write_first:
        case Opcode::write_middle:
        case Opcode::write_last:
        case Opcode::write_only:
        case Opcode::read_resp_first:
        case Opcode::read_resp_middle:
        case Opcode::read_resp_last:
        case Opcode::read_resp_only:
            return MethHdr::kSize + (ts ? TsethHdr::kSize : 0) + crth + RethHdr::kSize;
        case Opcode::send_last_imm:
        case Opcode::send_only_imm:
        case Opcode::read_req:
        case Opcode::write_last_imm:
        case Opcode::write_only_imm:
            return MethHdr::kSize + (ts ? TsethHdr::kSize : 0) + crth + RethHdr::kSize + ImmDtHdr::kSize;
        case Opcode::ack: return AethHdr::kSize;
        case Opcode::sack: return SethHdr::kSize + CcStateHdr::kSize + (credit ? CgthHdr::kSize : 0);
        case Opcode::nack: return NethHdr::kSize;
        case Opcode::probe: return PethHdr::kSize;
        case Opcode::ep_request: return ErthHdr::kSize;
        case Opcode::ep_response: return EethHdr::kSize;
        case Opcode::cm: return DethHdr::kSize;
    }
    return 0;
}

namespace {

std::size_t l3_size(const FrameSpec& s) noexcept {
    std::size_t n = Ipv6Hdr::kSize;
    if (s.mode == FrameMode::srv6) n += Ipv6Hdr::kSize + (s.has_srh ? s.srh.wire_size() : 0);
    return n;
}

/// Whether the spec's frame carries OpenMRC's credit header (CRTH or CGTH).
bool spec_credit(const FrameSpec& s) noexcept {
    if (is_data_opcode(s.bth.opcode)) return s.bth.cr;
    return s.bth.opcode == Opcode::sack && s.seth.cc_type == mrc::kSethCcTypeCredit;
}

/// Offset of the IPv6 header that precedes UDP.
std::size_t ip_offset_of(const FrameSpec& s) noexcept { return EthHdr::kSize + l3_size(s) - Ipv6Hdr::kSize; }

WireError encode_ext(std::span<std::uint8_t> out, const FrameSpec& s) noexcept {
    const Opcode op = s.bth.opcode;
    std::size_t off = 0;
    auto put = [&](const auto& h) {
        const WireError e = h.encode(out.subspan(off));
        off += std::remove_cvref_t<decltype(h)>::kSize;
        return e;
    };
    WireError e = WireError::ok;
    if (is_data_opcode(op)) {
        if ((e = put(s.meth)) != WireError::ok) return e;
        if (s.bth.ts && (e = put(s.tseth)) != WireError::ok) return e;
        if (s.bth.cr && (e = put(s.crth)) != WireError::ok) return e;
        if ((e = put(s.reth)) != WireError::ok) return e;
        if (has_imm_field(op)) e = put(s.imm);
        return e;
    }
    switch (op) {
        case Opcode::ack: return put(s.aeth);
        case Opcode::sack:
            if ((e = put(s.seth)) != WireError::ok) return e;
            if ((e = put(s.cc)) != WireError::ok) return e;
            return spec_credit(s) ? put(s.cgth) : WireError::ok;
        case Opcode::nack: return put(s.neth);
        case Opcode::probe: return put(s.peth);
        case Opcode::ep_request: return put(s.erth);
        case Opcode::ep_response: return put(s.eeth);
        case Opcode::cm: return put(s.deth);
        default: return WireError::bad_field;
    }
}

}  // namespace

std::size_t header_size(const FrameSpec& spec) noexcept {
    return EthHdr::kSize + l3_size(spec) + UdpHdr::kSize + BthHdr::kSize +
           ext_header_size(spec.bth.opcode, spec.bth.ts, spec_credit(spec));
}

WireError build_headers(std::span<std::uint8_t> out, const FrameSpec& spec, std::size_t payload_len,
                        std::size_t& hdr_len) noexcept {
    if (!is_known_opcode(static_cast<std::uint8_t>(spec.bth.opcode))) return WireError::unknown_opcode;
    if (!carries_payload(spec.bth.opcode) && payload_len != 0) return WireError::bad_field;
    hdr_len = header_size(spec);
    if (out.size() < hdr_len) return WireError::buffer_too_small;
    const std::size_t pad = (4 - payload_len % 4) % 4;
    const std::size_t udp_len =
        UdpHdr::kSize + BthHdr::kSize + ext_header_size(spec.bth.opcode, spec.bth.ts, spec_credit(spec)) +
        payload_len + pad + kIcrcSize;
    if (udp_len > 0xFFFF) return WireError::bad_field;
    std::size_t off = 0;
    WireError e = spec.eth.encode(out);
    if (e != WireError::ok) return e;
    off += EthHdr::kSize;
    if (spec.mode == FrameMode::srv6) {
        Ipv6Hdr outer = spec.outer;
        const std::size_t srh_len = spec.has_srh ? spec.srh.wire_size() : 0;
        if (srh_len + Ipv6Hdr::kSize + udp_len > 0xFFFF) return WireError::bad_field;
        outer.next_header = spec.has_srh ? kNextHeaderRouting : kNextHeaderIpv6;
        outer.payload_len = static_cast<std::uint16_t>(srh_len + Ipv6Hdr::kSize + udp_len);
        if ((e = outer.encode(out.subspan(off))) != WireError::ok) return e;
        off += Ipv6Hdr::kSize;
        if (spec.has_srh) {
            SrhHdr srh = spec.srh;
            srh.next_header = kNextHeaderIpv6;
            if ((e = srh.encode(out.subspan(off))) != WireError::ok) return e;
            off += srh_len;
        }
    }
    Ipv6Hdr ip = spec.ip;
    ip.next_header = kNextHeaderUdp;
    ip.payload_len = static_cast<std::uint16_t>(udp_len);
    ip.flow_label = ev_to_flow_label(spec.ev);
    if ((e = ip.encode(out.subspan(off))) != WireError::ok) return e;
    off += Ipv6Hdr::kSize;
    UdpHdr udp{};
    udp.src_port = ev_to_udp_sport(spec.ev);
    udp.length = static_cast<std::uint16_t>(udp_len);
    if ((e = udp.encode(out.subspan(off))) != WireError::ok) return e;
    off += UdpHdr::kSize;
    BthHdr bth = spec.bth;
    bth.pad_count = static_cast<std::uint8_t>(pad);
    if ((e = bth.encode(out.subspan(off))) != WireError::ok) return e;
    off += BthHdr::kSize;
    return encode_ext(out.subspan(off, hdr_len - off), spec);
}

std::uint32_t frame_icrc(std::span<const std::uint8_t> headers, FrameMode mode,
                         std::span<const std::uint8_t> payload_and_pad) noexcept {
    // The IPv6 header before UDP sits right after any outer header/SRH; find it
    // from the outer header's own fields (the builder wrote them).
    std::size_t ip_off = EthHdr::kSize;
    if (mode == FrameMode::srv6) {
        if (headers.size() < EthHdr::kSize + Ipv6Hdr::kSize) return 0;
        ip_off += Ipv6Hdr::kSize;
        if (headers[EthHdr::kSize + 6] == kNextHeaderRouting) {
            if (headers.size() < ip_off + 2) return 0;
            ip_off += SrhHdr::kFixedSize + 8u * headers[ip_off + 1];
        }
    }
    if (headers.size() < ip_off) return 0;
    return icrc_compute(headers.subspan(ip_off), payload_and_pad);
}

WireError build_frame(std::span<std::uint8_t> out, const FrameSpec& spec,
                      std::span<const std::uint8_t> payload, std::size_t& frame_len) noexcept {
    std::size_t hdr_len = 0;
    WireError e = build_headers(out, spec, payload.size(), hdr_len);
    if (e != WireError::ok) return e;
    const std::size_t pad = (4 - payload.size() % 4) % 4;
    frame_len = hdr_len + payload.size() + pad + kIcrcSize;
    if (out.size() < frame_len) return WireError::buffer_too_small;
    if (!payload.empty()) std::memcpy(out.data() + hdr_len, payload.data(), payload.size());
    std::fill_n(out.data() + hdr_len + payload.size(), pad, std::uint8_t{0});
    const std::size_t ip_off = ip_offset_of(spec);
    const std::uint32_t crc = icrc_compute(out.subspan(ip_off, frame_len - kIcrcSize - ip_off));
    store_le32(out.data() + frame_len - kIcrcSize, crc);
    return WireError::ok;
}

namespace {

/// Field checks of the extension headers that have them (sizes are already
/// checked): the decoders' own checks, done without decoding.
WireError check_ext_fields(Opcode op, std::span<const std::uint8_t> ext) noexcept {
    // Only SETH has a reserved value in a field (M = 3). Endpoint ops
    // outside the known ones are valid on the wire and dropped by the engine.
    switch (op) {
        case Opcode::sack: return ((ext[1] >> 5) & 0x3) > 2 ? WireError::bad_field : WireError::ok;
        default: return WireError::ok;
    }
}

}  // namespace

namespace {

/// The bytes of one frame as a driver hands them over: all in `head`, or
/// (header split) headers in head[0, split), the payload elsewhere, then
/// pad and ICRC in head[split, ...).
struct FramePieces {
    std::span<const std::uint8_t> head;
    std::span<const std::uint8_t> payload;  ///< header split only
    std::size_t split = 0;                  ///< header split: bytes of head before the payload; else head.size()
    bool is_split = false;
    [[nodiscard]] std::size_t total() const noexcept { return head.size() + payload.size(); }
};

WireError parse_pieces(const FramePieces& in, const ParseOptions& opts, FrameView& out) noexcept {
    out.frame = in.head;
    out.trim = TrimKind::none;
    out.has_meth = out.has_tseth = out.has_crth = out.has_cgth = false;
    out.payload = {};
    // Headers are read from `hdr` only: never from beyond the split.
    const std::span<const std::uint8_t> hdr = in.head.first(in.split);
    const std::size_t total = in.total();
    if (hdr.size() < EthHdr::kSize) return WireError::truncated_eth;
    if (load_be16(&hdr[12]) != kEthertypeIpv6) return WireError::not_ipv6;
    std::size_t off = EthHdr::kSize;

    Ipv6Hdr first{};
    WireError e = Ipv6Hdr::decode(hdr.subspan(off), first);
    if (e != WireError::ok) return e;
    off += Ipv6Hdr::kSize;
    // End of the IPv6 packet as claimed; a frame may be longer (Ethernet pad)
    // or shorter (trimmed, truncated).
    const std::size_t claimed_end = off + first.payload_len;
    const bool short_frame = total < claimed_end;
    const std::size_t end = std::min({claimed_end, total, hdr.size()});
    const auto avail = [&](std::size_t from) { return hdr.subspan(from, end > from ? end - from : 0); };

    const std::uint8_t marked_tc = first.traffic_class;
    std::uint8_t inner_tc = first.traffic_class;
    std::uint16_t ip_payload_len = first.payload_len;
    std::size_t ip_start = EthHdr::kSize;
    if (first.next_header == kNextHeaderUdp) {
        out.mode = FrameMode::plain;
    } else if (first.next_header == kNextHeaderIpv6 || first.next_header == kNextHeaderRouting) {
        out.mode = FrameMode::srv6;
        if (first.next_header == kNextHeaderRouting) {
            SrhHdr srh;
            std::size_t used = 0;
            if ((e = SrhHdr::decode(avail(off), srh, used)) != WireError::ok) return e;
            if (srh.next_header != kNextHeaderIpv6) return WireError::unsupported_next_header;
            off += used;
        }
        ip_start = off;
        Ipv6Hdr inner{};
        if ((e = Ipv6Hdr::decode(avail(off), inner)) != WireError::ok) return e;
        if (inner.next_header != kNextHeaderUdp) return WireError::unsupported_next_header;
        // The inner packet must end exactly where the outer one does.
        if (off + Ipv6Hdr::kSize + inner.payload_len != claimed_end) return WireError::bad_ip_payload_len;
        inner_tc = inner.traffic_class;
        ip_payload_len = inner.payload_len;
    } else {
        return WireError::unsupported_next_header;
    }
    out.ip_offset = static_cast<std::uint16_t>(ip_start);
    off = ip_start + Ipv6Hdr::kSize;

    const auto udp_bytes = avail(off);
    if (udp_bytes.size() < UdpHdr::kSize) return WireError::truncated_udp;
    const std::uint16_t udp_len = load_be16(&udp_bytes[4]);
    if (load_be16(&udp_bytes[2]) != kRoceUdpPort) return WireError::not_roce_port;
    if (udp_len != ip_payload_len) return WireError::bad_udp_len;
    if (udp_len < UdpHdr::kSize + BthHdr::kSize + kIcrcSize) return WireError::bad_udp_len;
    const std::uint32_t flow_label = load_be32(hdr.data() + ip_start) & 0xFFFFFu;
    out.ev = ev_from_wire(load_be16(&udp_bytes[0]), flow_label);
    out.ecn = marked_tc & 0x3;
    off += UdpHdr::kSize;

    if ((e = BthHdr::decode(avail(off), out.bth)) != WireError::ok) return e;
    off += BthHdr::kSize;
    out.ext_offset = static_cast<std::uint16_t>(off);
    const Opcode op = out.bth.opcode;

    // Trim detection comes before any ICRC check: a trimmed frame always fails it.
    if (is_data_opcode(op)) {
        const std::uint8_t dscp = marked_tc >> 2;
        const std::uint8_t inner_dscp = inner_tc >> 2;
        if (dscp == opts.dscp_trimmed_last_hop || inner_dscp == opts.dscp_trimmed_last_hop)
            out.trim = TrimKind::dscp_last_hop;
        else if (dscp == opts.dscp_trimmed || inner_dscp == opts.dscp_trimmed)
            out.trim = TrimKind::dscp;
        else if (short_frame)
            out.trim = TrimKind::short_length;
        if (out.trim != TrimKind::none) {
            if (in.is_split) return WireError::bad_split;  // a trimmed frame has no payload to split off
            const std::size_t kept = avail(off).size();
            const std::size_t tseth = out.bth.ts ? TsethHdr::kSize : 0;
            out.has_meth = kept >= MethHdr::kSize;
            out.has_tseth = out.has_meth && out.bth.ts && kept >= MethHdr::kSize + TsethHdr::kSize;
            out.has_crth = out.has_meth && out.bth.cr && kept >= MethHdr::kSize + tseth + CrthHdr::kSize;
            return WireError::ok;
        }
    }
    if (short_frame) return in.is_split ? WireError::bad_split : WireError::truncated_ext;

    // SETH's cc_type (byte 16, high nibble) says whether a CGTH follows CC state.
    const bool credit = is_data_opcode(op) ? out.bth.cr
                                           : op == Opcode::sack && avail(off).size() > 16 &&
                                                 (avail(off)[16] >> 4) == mrc::kSethCcTypeCredit;
    const std::size_t ext_len = ext_header_size(op, out.bth.ts, credit);
    const std::size_t icrc_off = claimed_end - kIcrcSize;
    if (off + ext_len > claimed_end) return WireError::truncated_ext;
    if (off + ext_len > icrc_off) return WireError::truncated_icrc;
    // A split frame's payload starts right after the extension headers.
    if (in.is_split && (!is_data_opcode(op) || off + ext_len != in.split)) return WireError::bad_split;
    if ((e = check_ext_fields(op, hdr.subspan(off, ext_len))) != WireError::ok) return e;
    if (is_data_opcode(op)) {
        out.has_meth = true;
        out.has_tseth = out.bth.ts;
        out.has_crth = out.bth.cr;
    } else {
        out.has_cgth = credit;
    }
    off += ext_len;

    const std::size_t body = icrc_off - off;  // payload + pad
    if (out.bth.pad_count > body) return WireError::bad_pad;
    if (!carries_payload(op) && body != 0) return WireError::bad_field;
    if (op == Opcode::read_req && body != out.bth.pad_count) return WireError::bad_field;  // a request carries no payload
    if (!in.is_split) {
        out.payload = in.head.subspan(off, body - out.bth.pad_count);
        if (opts.verify_icrc && icrc_compute(in.head.subspan(out.ip_offset, icrc_off - out.ip_offset)) !=
                                    load_le32(in.head.data() + icrc_off))
            return WireError::bad_icrc;
        return WireError::ok;
    }
    // Header split: the payload piece is exactly the payload; pad and ICRC
    // follow the split in head (everything past them is Ethernet pad).
    if (in.payload.size() != body - out.bth.pad_count) return WireError::bad_split;
    out.payload = in.payload;
    const std::size_t tail_icrc = in.split + out.bth.pad_count;  // ICRC offset within head
    if (opts.verify_icrc) {
        const std::span<const std::uint8_t> pieces[2] = {in.payload, in.head.subspan(in.split, out.bth.pad_count)};
        if (icrc_compute_pieces(hdr.subspan(out.ip_offset), pieces, 0) != load_le32(in.head.data() + tail_icrc))
            return WireError::bad_icrc;
    }
    return WireError::ok;
}

}  // namespace

WireError parse_frame_view(std::span<const std::uint8_t> frame, const ParseOptions& opts, FrameView& out) noexcept {
    return parse_pieces({frame, {}, frame.size(), false}, opts, out);
}

WireError parse_frame_view(const RxFrame& frame, const ParseOptions& opts, FrameView& out) noexcept {
    const std::span<const std::uint8_t> head(frame.data, frame.len);
    if (frame.payload == nullptr) return parse_pieces({head, {}, head.size(), false}, opts, out);
    if (frame.split > frame.len) return WireError::bad_split;
    return parse_pieces({head, {frame.payload, frame.payload_len}, frame.split, true}, opts, out);
}

WireError parse_frame(std::span<const std::uint8_t> frame, const ParseOptions& opts, ParsedFrame& out) noexcept {
    out = ParsedFrame{};
    FrameView v;
    const WireError e = parse_frame_view(frame, opts, v);
    if (e != WireError::ok) return e;
    // Everything below was validated by the view: decode in full.
    out.mode = v.mode;
    out.trim = v.trim;
    out.ecn = v.ecn;
    out.ev = v.ev;
    out.bth = v.bth;
    out.ip_offset = v.ip_offset;
    out.has_meth = v.has_meth;
    out.has_tseth = v.has_tseth;
    out.has_crth = v.has_crth;
    out.has_cgth = v.has_cgth;
    out.payload = v.payload;
    (void)EthHdr::decode(frame, out.eth);
    if (v.mode == FrameMode::srv6) {
        (void)Ipv6Hdr::decode(frame.subspan(EthHdr::kSize), out.outer);
        if (out.outer.next_header == kNextHeaderRouting) {
            std::size_t used = 0;
            out.has_srh = SrhHdr::decode(frame.subspan(EthHdr::kSize + Ipv6Hdr::kSize), out.srh, used) == WireError::ok;
        }
    }
    (void)Ipv6Hdr::decode(frame.subspan(v.ip_offset), out.ip);
    (void)UdpHdr::decode(frame.subspan(v.ip_offset + Ipv6Hdr::kSize), out.udp);
    const Opcode op = v.bth.opcode;
    if (is_data_opcode(op)) {
        if (v.has_meth) out.meth = v.meth();
        if (v.has_tseth) out.tseth = v.tseth();
        if (v.has_crth) out.crth = v.crth();
        if (v.trim == TrimKind::none) {
            out.reth = v.reth();
            if (has_imm_field(op)) out.imm = v.imm();
        }
    } else {
        switch (op) {
            case Opcode::ack: out.aeth = v.ext_header<AethHdr>(); break;
            case Opcode::sack:
                out.seth = v.ext_header<SethHdr>();
                out.cc = v.ext_header<CcStateHdr>(SethHdr::kSize);
                if (v.has_cgth) out.cgth = v.cgth();
                break;
            case Opcode::nack: out.neth = v.ext_header<NethHdr>(); break;
            case Opcode::probe: out.peth = v.ext_header<PethHdr>(); break;
            case Opcode::ep_request: out.erth = v.ext_header<ErthHdr>(); break;
            case Opcode::cm: out.deth = v.ext_header<DethHdr>(); break;
            default: out.eeth = v.ext_header<EethHdr>(); break;
        }
    }
    if (v.trim == TrimKind::none) out.icrc = load_le32(frame.data() + (v.ip_offset + Ipv6Hdr::kSize + out.udp.length) - kIcrcSize);
    return WireError::ok;
}

}  // namespace omrc::wire
