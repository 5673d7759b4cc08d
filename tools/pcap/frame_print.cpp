// SPDX-License-Identifier: BSD-3-Clause
#include "frame_print.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <iterator>

#include "routing/fabric.hpp"
#include "wire/cm_msg.hpp"
#include "wire/mrc_choices.hpp"
#include "wire/usid.hpp"

namespace omrc::pcaptool {

namespace {

using wire::Opcode;
using Json = nlohmann::ordered_json;

std::string ip_string(const wire::Ipv6Addr& a) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (inet_ntop(AF_INET6, a.data(), buf, sizeof buf) == nullptr) return "?";
    return buf;
}

std::string mac_string(const wire::MacAddr& m) {
    return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]);
}

const char* mode_name(const wire::ParsedFrame& p) noexcept {
    if (p.mode == wire::FrameMode::plain) return "plain";
    return p.has_srh ? "srv6+srh" : "srv6";
}

const char* trim_name(wire::TrimKind t) noexcept {
    switch (t) {
        case wire::TrimKind::none: return "none";
        case wire::TrimKind::dscp: return "dscp";
        case wire::TrimKind::dscp_last_hop: return "dscp_last_hop";
        case wire::TrimKind::short_length: return "short_length";
    }
    return "none";
}

/// AETH syndromes (IBTA), as wire::AethSyndrome names them; others in hex.
std::string syndrome_name(std::uint8_t s) {
    if (wire::is_rnr_nak(s)) return fmt::format("rnr_nak(timer={})", s & 0x1F);
    switch (static_cast<wire::AethSyndrome>(s)) {
        case wire::AethSyndrome::ack: return "ack";
        case wire::AethSyndrome::rnr_nak: break;  // handled above
        case wire::AethSyndrome::nak_psn_seq_error: return "nak_psn_seq_error";
        case wire::AethSyndrome::nak_invalid_request: return "nak_invalid_request";
        case wire::AethSyndrome::nak_remote_access: return "nak_remote_access";
        case wire::AethSyndrome::nak_remote_op: return "nak_remote_op";
    }
    return fmt::format("0x{:02x}", s);
}

/// NETH reasons (UET PDS codes), as wire::NackReason names them; others in hex.
std::string nack_reason_name(std::uint8_t r) {
    switch (static_cast<wire::NackReason>(r)) {
        case wire::NackReason::trimmed: return "trimmed";
        case wire::NackReason::trimmed_lasthop: return "trimmed_lasthop";
        case wire::NackReason::no_bitmap: return "no_bitmap";
        case wire::NackReason::no_pkt_buffer: return "no_pkt_buffer";
        case wire::NackReason::no_resource: return "no_resource";
        case wire::NackReason::psn_oor_window: return "psn_oor_window";
        case wire::NackReason::unexp_event: return "unexp_event";
    }
    return fmt::format("0x{:02x}", r);
}

/// ERTH/EETH ops; the 2-bit value for one OpenMRC does not know.
std::string erth_op_name(wire::ErthOp op) {
    switch (op) {
        case wire::ErthOp::port_status_update: return "port_status_update";
        case wire::ErthOp::ev_probe: return "ev_probe";
        case wire::ErthOp::path_alarm: return "path_alarm";
    }
    return fmt::format("op{}", static_cast<unsigned>(op));
}

const char* skip_name(wire::SackSkip s) noexcept {
    switch (s) {
        case wire::SackSkip::none: return "none";
        case wire::SackSkip::skip_once: return "skip_once";
        case wire::SackSkip::always_skip: return "always_skip";
    }
    return "none";
}

/// EV[31:28] is plane + 1 (lib/routing's EV layout); 0 names no plane.
bool ev_has_plane(std::uint32_t ev) noexcept { return (ev >> 28) != 0; }

/// The uSIDs of an F3216 container address, when it is one.
bool usids_of(const wire::Ipv6Addr& a, wire::UsidContainer& c) noexcept {
    return wire::usid_container_parse(a, c) == wire::WireError::ok && c.count > 0;
}

std::string flags_text(const wire::BthHdr& b) {
    std::string f;
    const auto add = [&](bool on, const char* name) {
        if (!on) return;
        if (!f.empty()) f += ',';
        f += name;
    };
    add(b.ack_req, "AckReq");
    add(b.rtx, "RTX");
    add(b.ts, "TS");
    add(b.cr, "CR");
    add(b.solicited, "SE");
    add(b.mig_req, "M");
    return f;
}

using Out = std::back_insert_iterator<std::string>;

void ext_text(Out o, const wire::ParsedFrame& p) {
    const Opcode op = p.bth.opcode;
    if (wire::is_data_opcode(op)) {
        if (p.has_meth) fmt::format_to(o, " METH[msn={} rqmsn={}]", p.meth.msn, p.meth.rqmsn);
        if (p.has_tseth) fmt::format_to(o, " TSETH[ts={}{}]", p.tseth.tx_timestamp, p.tseth.tsr ? " tsr" : "");
        if (p.has_crth)
            fmt::format_to(o, " CRTH[request={} used={} unscheduled={}]", p.crth.request, p.crth.used,
                           p.crth.unscheduled);
        if (p.trim != wire::TrimKind::none) return;  // RETH and ImmDt did not survive the trim
        fmt::format_to(o, " RETH[va=0x{:x} rkey=0x{:08x} len={}]", p.reth.va, p.reth.rkey, p.reth.dma_len);
        if (wire::carries_imm(op)) fmt::format_to(o, " IMM[0x{:08x}]", p.imm.imm);
        if (op == Opcode::read_req) fmt::format_to(o, " RESP_PSN[0x{:06x}]", p.imm.imm & 0xFFFFFF);
        return;
    }
    switch (op) {
        case Opcode::ack:
            fmt::format_to(o, " AETH[{} msn={}]", syndrome_name(p.aeth.syndrome), p.aeth.msn);
            break;
        case Opcode::sack: {
            const wire::SethHdr& s = p.seth;
            fmt::format_to(o, " SETH[cack={} sack_off={} bitmap=0x{:016x} ack_off={} ev=0x{:08x} mpr={}", s.cack_psn,
                           s.sack_offset, s.bitmap, s.ack_psn_offset, s.ev, s.mpr);
            if (s.skip != wire::SackSkip::none) fmt::format_to(o, " skip={}", skip_name(s.skip));
            if (s.probe_response) fmt::format_to(o, " PR");
            if (s.cc_type != 0 || s.cc_flags != 0) fmt::format_to(o, " cc_type={} cc_flags={}", s.cc_type, s.cc_flags);
            // CC state counts the bytes received in 256-byte units.
            fmt::format_to(o, "] CC[ts_echo={} ooo={} penalty={}{} rcvd256b={}]", p.cc.ts_echo, p.cc.ooo_count,
                           p.cc.penalty, p.cc.restore_cwnd ? " restore" : "", p.cc.rcvd_bytes);
            if (p.has_cgth) fmt::format_to(o, " CGTH[{}grant={}]", p.cgth.valid ? "" : "invalid ", p.cgth.grant);
            break;
        }
        case Opcode::nack:
            fmt::format_to(o, " NETH[{} psn={} ev=0x{:08x} ts_echo={}]", nack_reason_name(p.neth.reason),
                           p.neth.nack_psn, p.neth.ev, p.neth.ts_echo);
            break;
        case Opcode::probe:
            fmt::format_to(o, " PETH[id={} ts={}]", p.peth.probe_id, p.peth.tx_timestamp);
            break;
        case Opcode::ep_request:
            fmt::format_to(o, " ERTH[{}", erth_op_name(p.erth.op));
            if (p.erth.op == wire::ErthOp::port_status_update)
                fmt::format_to(o, " planes_up=0x{:x}", wire::mrc::planes_from_port_mask(p.erth.port_status_mask));
            else if (p.erth.op == wire::ErthOp::path_alarm)
                fmt::format_to(o, " plane={} t1={}", p.erth.alarm_plane, p.erth.alarm_t1);
            fmt::format_to(o, " ts={}]", p.erth.tx_timestamp);
            break;
        case Opcode::ep_response:
            fmt::format_to(o, " EETH[{} ts_echo={}]", erth_op_name(p.eeth.op), p.eeth.ts_echo);
            break;
        case Opcode::cm: {
            fmt::format_to(o, " DETH[qkey=0x{:08x} src_qp={}]", p.deth.qkey, p.deth.src_qp);
            wire::CmMessage m;
            if (wire::CmMessage::decode(p.payload, m) != wire::WireError::ok) {
                fmt::format_to(o, " CM[malformed]");
                break;
            }
            fmt::format_to(o, " CM[{} src=0x{:08x} dst=0x{:08x} attempt={}", wire::to_string(m.type), m.src_comm_id,
                           m.dst_comm_id, m.attempt);
            if (m.type == wire::CmType::req || m.type == wire::CmType::rep)
                fmt::format_to(o, " service=0x{:x} qpn=0x{:06x} psn={} mtu={} planes={} enc={}", m.service_id, m.qpn,
                               m.psn, m.mtu, m.planes, m.encryption);
            if (m.type == wire::CmType::rej) fmt::format_to(o, " reason={}", wire::to_string(m.reason));
            fmt::format_to(o, "]");
            break;
        }
        default: break;
    }
}

Json ipv6_json(const wire::Ipv6Hdr& h) {
    return Json{{"src", ip_string(h.src)},     {"dst", ip_string(h.dst)},
                {"dscp", h.dscp()},            {"ecn", h.ecn()},
                {"flow_label", h.flow_label},  {"hop_limit", h.hop_limit},
                {"payload_len", h.payload_len}, {"next_header", h.next_header}};
}

void ext_json(Json& j, const wire::ParsedFrame& p) {
    const Opcode op = p.bth.opcode;
    if (wire::is_data_opcode(op)) {
        if (p.has_meth) j["meth"] = {{"msn", p.meth.msn}, {"rqmsn", p.meth.rqmsn}};
        if (p.has_tseth)
            j["tseth"] = {{"tx_timestamp", p.tseth.tx_timestamp}, {"tsr", p.tseth.tsr}, {"type", p.tseth.type}};
        if (p.has_crth)
            j["crth"] = {{"request", p.crth.request}, {"used", p.crth.used}, {"unscheduled", p.crth.unscheduled}};
        if (p.trim != wire::TrimKind::none) return;
        j["reth"] = {{"va", p.reth.va}, {"rkey", p.reth.rkey}, {"dma_len", p.reth.dma_len}};
        if (wire::carries_imm(op)) j["imm"] = p.imm.imm;
        if (op == Opcode::read_req) j["resp_psn"] = p.imm.imm & 0xFFFFFF;
        return;
    }
    switch (op) {
        case Opcode::ack:
            j["aeth"] = {{"syndrome", syndrome_name(p.aeth.syndrome)}, {"syndrome_value", p.aeth.syndrome},
                         {"msn", p.aeth.msn}};
            break;
        case Opcode::sack: {
            const wire::SethHdr& s = p.seth;
            j["seth"] = {{"cack_psn", s.cack_psn},   {"sack_offset", s.sack_offset},
                         {"bitmap", s.bitmap},       {"ack_psn_offset", s.ack_psn_offset},
                         {"ev", s.ev},               {"skip", skip_name(s.skip)},
                         {"probe_response", s.probe_response},
                         {"src_conn_id", s.src_conn_id}, {"dst_conn_id", s.dst_conn_id},
                         {"cc_type", s.cc_type},     {"cc_flags", s.cc_flags},
                         {"mpr", s.mpr}};
            // CC state counts the bytes received in 256-byte units.
            j["cc"] = {{"ts_echo", p.cc.ts_echo},
                       {"ooo_count", p.cc.ooo_count},
                       {"restore_cwnd", p.cc.restore_cwnd},
                       {"penalty", p.cc.penalty},
                       {"rcvd_256b_units", p.cc.rcvd_bytes}};
            if (p.has_cgth) j["cgth"] = {{"valid", p.cgth.valid}, {"grant", p.cgth.grant}};
            break;
        }
        case Opcode::nack:
            j["neth"] = {{"reason", nack_reason_name(p.neth.reason)},
                         {"reason_value", p.neth.reason},
                         {"nack_psn", p.neth.nack_psn},
                         {"ev", p.neth.ev},
                         {"src_conn_id", p.neth.src_conn_id},
                         {"dst_conn_id", p.neth.dst_conn_id},
                         {"cc_type", p.neth.cc_type},
                         {"ts_echo", p.neth.ts_echo}};
            break;
        case Opcode::probe:
            j["peth"] = {{"probe_id", p.peth.probe_id},         {"src_conn_id", p.peth.src_conn_id},
                         {"dst_conn_id", p.peth.dst_conn_id},   {"tx_timestamp", p.peth.tx_timestamp},
                         {"tsr", p.peth.tsr},                   {"ftype", p.peth.ftype}};
            break;
        case Opcode::ep_request:
            j["erth"] = {{"op", erth_op_name(p.erth.op)},
                         {"port_status_mask", p.erth.port_status_mask},
                         {"alarm_plane", p.erth.alarm_plane},
                         {"alarm_t1", p.erth.alarm_t1},
                         {"tx_timestamp", p.erth.tx_timestamp},
                         {"tsr", p.erth.tsr},
                         {"ftype", p.erth.ftype}};
            break;
        case Opcode::ep_response:
            j["eeth"] = {{"op", erth_op_name(p.eeth.op)}, {"ts_echo", p.eeth.ts_echo}};
            break;
        default: break;
    }
}

}  // namespace

std::string frame_text(const FrameRecord& r, const PrintOptions& opts) {
    std::string line;
    Out o(line);
    fmt::format_to(o, "{:>6} {:>11.6f} {:>5}B", r.number, static_cast<double>(r.rel_time_ns) / 1e9, r.wire_bytes);
    if (r.captured_bytes < r.wire_bytes) fmt::format_to(o, " captured={}", r.captured_bytes);
    if (r.seal != SealStatus::plain) fmt::format_to(o, " psp spi={:#010x} {}", r.spi, to_string(r.seal));
    if (!r.has_headers) {
        fmt::format_to(o, " error={}", wire::to_string(r.error));
        return line;
    }
    const wire::ParsedFrame& p = r.parsed;
    fmt::format_to(o, " {}", mode_name(p));
    if (opts.eth) fmt::format_to(o, " eth={}>{}", mac_string(p.eth.src), mac_string(p.eth.dst));
    if (p.mode == wire::FrameMode::srv6) {
        fmt::format_to(o, " outer={}>{}", ip_string(p.outer.src), ip_string(p.outer.dst));
        wire::UsidContainer c;
        if (usids_of(p.outer.dst, c)) {
            fmt::format_to(o, " usids=");
            for (std::uint8_t i = 0; i < c.count; ++i) fmt::format_to(o, "{}{:04x}", i ? "," : "", c.usids[i]);
        }
        if (p.has_srh) {
            fmt::format_to(o, " SRH[sl={} segs=", p.srh.segments_left);
            for (std::uint8_t i = 0; i < p.srh.num_segments; ++i)
                fmt::format_to(o, "{}{}", i ? "," : "", ip_string(p.srh.segments[i]));
            fmt::format_to(o, "]");
        }
    }
    // DSCP of the header the fabric marks (the outer one in srv6 mode), as p.ecn is.
    const wire::Ipv6Hdr& marked = p.mode == wire::FrameMode::srv6 ? p.outer : p.ip;
    fmt::format_to(o, " {}>{} dscp={} ecn={} udp={}>{} ev=0x{:08x}", ip_string(p.ip.src), ip_string(p.ip.dst),
                   marked.dscp(), p.ecn, p.udp.src_port, p.udp.dst_port, p.ev);
    if (ev_has_plane(p.ev)) fmt::format_to(o, " plane={} path={}", routing::ev_plane(p.ev), routing::ev_path(p.ev));
    fmt::format_to(o, " {} qp=0x{:06x} psn={}", wire::opcode_name(p.bth.opcode), p.bth.dest_qp, p.bth.psn);
    if (const std::string f = flags_text(p.bth); !f.empty()) fmt::format_to(o, " flags={}", f);
    if (p.bth.pad_count != 0) fmt::format_to(o, " pad={}", p.bth.pad_count);
    if (p.bth.pkey != wire::kDefaultPkey) fmt::format_to(o, " pkey=0x{:04x}", p.bth.pkey);
    ext_text(o, p);
    if (wire::is_data_opcode(p.bth.opcode) && p.trim == wire::TrimKind::none)
        fmt::format_to(o, " payload={}", p.payload.size());
    if (p.trim != wire::TrimKind::none) fmt::format_to(o, " TRIMMED[{}]", trim_name(p.trim));
    else fmt::format_to(o, " icrc={}", to_string(r.icrc));
    if (r.error != wire::WireError::ok) fmt::format_to(o, " error={}", wire::to_string(r.error));
    return line;
}

Json frame_json(const FrameRecord& r) {
    Json j{{"frame", r.number},
           {"time_ns", r.time_ns},
           {"rel_time_ns", r.rel_time_ns},
           {"wire_bytes", r.wire_bytes},
           {"captured_bytes", r.captured_bytes}};
    j["error"] = r.error == wire::WireError::ok ? Json(nullptr) : Json(std::string(wire::to_string(r.error)));
    j["icrc"] = to_string(r.icrc);
    if (r.seal != SealStatus::plain) j["psp"] = {{"spi", r.spi}, {"status", to_string(r.seal)}};
    if (!r.has_headers) return j;
    const wire::ParsedFrame& p = r.parsed;
    j["mode"] = p.mode == wire::FrameMode::plain ? "plain" : "srv6";
    j["eth"] = {{"src", mac_string(p.eth.src)}, {"dst", mac_string(p.eth.dst)}};
    if (p.mode == wire::FrameMode::srv6) {
        j["outer"] = ipv6_json(p.outer);
        wire::UsidContainer c;
        if (usids_of(p.outer.dst, c)) {
            j["outer"]["usid_block"] = c.block;
            j["outer"]["usids"] = Json::array();
            for (std::uint8_t i = 0; i < c.count; ++i) j["outer"]["usids"].push_back(c.usids[i]);
        }
    }
    if (p.has_srh) {
        Json segs = Json::array();
        for (std::uint8_t i = 0; i < p.srh.num_segments; ++i) segs.push_back(ip_string(p.srh.segments[i]));
        j["srh"] = {{"segments_left", p.srh.segments_left}, {"last_entry", p.srh.last_entry},
                    {"flags", p.srh.flags}, {"tag", p.srh.tag}, {"segments", segs}};
    }
    j["ip"] = ipv6_json(p.ip);
    j["udp"] = {{"src_port", p.udp.src_port}, {"dst_port", p.udp.dst_port}, {"length", p.udp.length}};
    j["ev"] = p.ev;
    if (ev_has_plane(p.ev)) {
        j["plane"] = routing::ev_plane(p.ev);
        j["path"] = routing::ev_path(p.ev);
    }
    j["ecn"] = p.ecn;
    j["trim"] = trim_name(p.trim);
    j["bth"] = {{"opcode", wire::opcode_name(p.bth.opcode)},
                {"opcode_value", static_cast<unsigned>(p.bth.opcode)},
                {"dest_qp", p.bth.dest_qp},
                {"psn", p.bth.psn},
                {"ack_req", p.bth.ack_req},
                {"rtx", p.bth.rtx},
                {"ts", p.bth.ts},
                {"cr", p.bth.cr},
                {"solicited", p.bth.solicited},
                {"pad_count", p.bth.pad_count},
                {"pkey", p.bth.pkey}};
    ext_json(j, p);
    if (wire::is_data_opcode(p.bth.opcode) && p.trim == wire::TrimKind::none) j["payload_bytes"] = p.payload.size();
    if (p.trim == wire::TrimKind::none) j["icrc_value"] = p.icrc;
    return j;
}

}  // namespace omrc::pcaptool
