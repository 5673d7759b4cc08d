// SPDX-License-Identifier: BSD-3-Clause
#include "wire/sample_frames.hpp"

#include <stdexcept>

#include "wire/usid.hpp"

namespace omrc::wire {
namespace {

constexpr Opcode kAllOpcodes[] = {Opcode::write_first,    Opcode::write_middle, Opcode::write_last,
                                  Opcode::write_last_imm, Opcode::write_only,   Opcode::write_only_imm,
                                  Opcode::ack,            Opcode::ep_request,   Opcode::ep_response,
                                  Opcode::sack,           Opcode::nack,         Opcode::probe};

Ipv6Addr doc_addr(std::uint8_t last) {
    Ipv6Addr a{0x20, 0x01, 0x0d, 0xb8};  // RFC 3849 documentation prefix
    a[15] = last;
    return a;
}

FrameSpec base_spec(FrameMode mode, Opcode op, std::uint32_t i) {
    FrameSpec s;
    s.mode = mode;
    s.eth.dst = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
    s.eth.src = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
    const std::uint32_t plane = i % 8;
    s.ev = ((plane + 1) << 28) | ((i & 0xFFF) << 16) | (0x0A00 + i);
    s.ip.src = doc_addr(1);
    s.ip.dst = doc_addr(2);
    s.ip.set_dscp(is_data_opcode(op) ? kDscpData : kDscpControl);
    if (mode == FrameMode::srv6) {
        s.outer = s.ip;
        // block fcbb:0000, T0 4 → T1 (path) → T0 6 → host port 2, all in this plane.
        const auto p = static_cast<std::uint16_t>((plane + 1) << 12);
        const std::uint16_t usids[] = {static_cast<std::uint16_t>(p | 0x0400 | 4),
                                       static_cast<std::uint16_t>(p | 0x0800 | (i & 0x3FF)),
                                       static_cast<std::uint16_t>(p | 0x0400 | 6),
                                       static_cast<std::uint16_t>(p | 0x0002)};
        if (usid_container_build(0xFCBB0000, usids, s.outer.dst) != WireError::ok)
            throw std::logic_error("sample uSID container");
    }
    s.bth.opcode = op;
    s.bth.dest_qp = (op == Opcode::ep_request || op == Opcode::ep_response) ? kEndpointQpn : 0x000100 + i;
    // Endpoint messages carry their request id in BTH.PSN[15:0]; a probe consumes no PSN.
    s.bth.psn = op == Opcode::probe ? 0 : 0x000010 + i;
    s.bth.ack_req = is_last_of_message(op);
    s.bth.ts = op == Opcode::write_first || op == Opcode::write_only || op == Opcode::write_only_imm;
    s.meth = {static_cast<std::uint16_t>(carries_imm(op) ? 1 : 0), static_cast<std::uint16_t>(3 + i)};
    s.tseth = {static_cast<std::uint16_t>(0x1000 + i), false, mrc::kFtypeTransmitTimestamp};
    s.reth = {0x00007F0000001000ull + 4096ull * i, 0x5EC0DE00u + i, 65536};
    s.imm = {0xC0FFEE00u + i};
    s.aeth = {static_cast<std::uint8_t>(i % 2 ? AethSyndrome::nak_remote_access : AethSyndrome::ack), 3 + i};
    s.seth.skip = SackSkip::skip_once;
    s.seth.ack_psn_offset = 5;
    s.seth.ev = s.ev;
    s.seth.src_conn_id = 0x1111;
    s.seth.dst_conn_id = 0x2222;
    s.seth.cack_psn = 0x000010 + i;
    s.seth.cc_type = mrc::kSethCcTypeNscc;
    s.seth.mpr = 8;
    s.seth.sack_offset = 2;
    s.seth.bitmap = 0xF0F0000000000001ull;
    s.cc = {0x1234, 7, false, 3, 0x000400};
    s.neth.reason = static_cast<std::uint8_t>(NackReason::trimmed);
    s.neth.ts_echo = 0x0BEE;
    s.neth.ev = s.ev;
    s.neth.src_conn_id = 0x1111;
    s.neth.dst_conn_id = 0x2222;
    s.neth.nack_psn = 0x000020 + i;
    s.neth.cc_type = mrc::kNethCcType;
    s.peth = {.probe_id = static_cast<std::uint16_t>(0xA500 + i),
              .src_conn_id = 0x1111,
              .dst_conn_id = 0x2222,
              .tx_timestamp = 0x0C0C,
              .ftype = mrc::kFtypeTransmitTimestamp};
    s.erth.op = ErthOp::port_status_update;
    s.erth.port_status_mask = mrc::port_mask_from_planes(0x7F);
    s.erth.tx_timestamp = 0x0D0D;
    s.erth.ftype = mrc::kFtypeTransmitTimestamp;
    s.eeth = {ErthOp::port_status_update, 0x0D0D};
    return s;
}

SampleFrame finish(std::string name, FrameSpec spec, std::size_t payload_len) {
    SampleFrame f{std::move(name), spec, {}, {}};
    f.payload.resize(payload_len);
    for (std::size_t b = 0; b < payload_len; ++b) f.payload[b] = static_cast<std::uint8_t>(b * 7 + 1);
    f.bytes.resize(header_size(spec) + payload_len + 3 + kIcrcSize);
    std::size_t len = 0;
    if (build_frame(f.bytes, spec, f.payload, len) != WireError::ok) throw std::logic_error("sample frame");
    f.bytes.resize(len);
    return f;
}

}  // namespace

std::vector<SampleFrame> make_sample_frames() {
    std::vector<SampleFrame> out;
    std::uint32_t i = 0;
    for (FrameMode mode : {FrameMode::plain, FrameMode::srv6}) {
        for (Opcode op : kAllOpcodes) {
            // An odd payload on WRITE_LAST_WITH_IMM exercises the pad count.
            const std::size_t len = !is_data_opcode(op) ? 0 : (op == Opcode::write_last_imm ? 61 : 64);
            out.push_back(finish(std::string(mode == FrameMode::srv6 ? "srv6/" : "plain/") + opcode_name(op),
                                 base_spec(mode, op, i), len));
            ++i;
        }
    }
    // An SRv6 path of eight switches needs two containers and an SRH.
    FrameSpec s = base_spec(FrameMode::srv6, Opcode::write_middle, i);
    const std::uint16_t path[] = {0x1401, 0x1802, 0x1403, 0x1804, 0x1405, 0x1806, 0x1407, 0x1002};
    bool needed = false;
    if (usid_path_encode(0xFCBB0000, path, s.outer.dst, s.srh, needed) != WireError::ok || !needed)
        throw std::logic_error("sample SRH path");
    s.has_srh = true;
    out.push_back(finish("srv6+srh/WRITE_MIDDLE", s, 64));
    // OpenMRC's credit mode (docs/PROTOCOL.md §11.8): a data packet with a
    // CRTH after its TSETH, and a SACK of cc_type credit with a CGTH.
    FrameSpec d = base_spec(FrameMode::plain, Opcode::write_only, ++i);
    d.bth.cr = true;
    d.crth = {100000 + i, 90000 + i, 64};
    out.push_back(finish("plain+credit/WRITE_ONLY", d, 64));
    FrameSpec k = base_spec(FrameMode::plain, Opcode::sack, ++i);
    k.seth.cc_type = mrc::kSethCcTypeCredit;
    k.cgth = {true, 200000 + i};
    out.push_back(finish("plain+credit/SACK", k, 0));
    // OpenMRC's SEND (docs/PROTOCOL.md §11.9): RETH.VA is the packet's byte
    // offset in the message, R_Key 0, DMALen the message length; METH.RQMSN
    // names the receive. The second ends its message with an immediate and a
    // solicited event.
    FrameSpec sf = base_spec(FrameMode::plain, Opcode::send_first, ++i);
    sf.reth = {0, 0, 8192};
    out.push_back(finish("plain/SEND_FIRST", sf, 64));
    FrameSpec so = base_spec(FrameMode::srv6, Opcode::send_only_imm, ++i);
    so.reth = {0, 0, 61};
    so.bth.solicited = true;
    out.push_back(finish("srv6/SEND_ONLY_WITH_IMM", so, 61));
    // OpenMRC's RDMA READ (docs/PROTOCOL.md §11.10): a request names the
    // responder's memory (RETH VA, R_Key, DMALen) and carries no payload;
    // a response packet's RETH.VA is its byte offset in the read, R_Key 0,
    // DMALen the read's length; METH.RQMSN is the requester's read sequence.
    FrameSpec rq = base_spec(FrameMode::plain, Opcode::read_req, ++i);
    rq.imm = {0x00ABCDEF};  // the response PSN
    out.push_back(finish("plain/READ_REQUEST", rq, 0));
    FrameSpec rr = base_spec(FrameMode::srv6, Opcode::read_resp_only, ++i);
    rr.reth = {0, 0, 61};
    out.push_back(finish("srv6/READ_RESPONSE_ONLY", rr, 61));
    return out;
}

}  // namespace omrc::wire
