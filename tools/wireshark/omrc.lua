-- SPDX-License-Identifier: BSD-3-Clause
-- OpenMRC dissector for Wireshark/tshark (tested with 4.0).
--
--   tshark -X lua_script:tools/wireshark/omrc.lua -r FILE.pcap -V
--   (or copy this file into ~/.local/lib/wireshark/plugins/)
--
-- OpenMRC frames are RoCEv2 frames (UDP dst port 4791) whose BTH opcodes lie in
-- the manufacturer-specific range (0xC0-0xD1, 0xD8, 0xD9, 0xDC-0xDE;
-- 0xC0-0xC5 are OpenMRC's SEND, docs/PROTOCOL.md §11.9, and 0xCC-0xD0 its
-- RDMA READ, §11.10).
-- Wireshark's own InfiniBand/RRoCE dissector decodes the BTH of such a frame,
-- calls the opcode "Unknown" and shows everything after the BTH, ICRC
-- included, as one "Vendor Specific or Unknown Header Sequence" byte field.
--
-- How this dissector is chained after Wireshark's RoCE decoding, and why:
-- it is a POSTDISSECTOR. It runs after the whole stock dissection of every
-- frame, finds the last UDP payload through the `udp.payload` field (the
-- FieldInfo gives the data-source tvb and the byte offset) and decodes our
-- headers from those bytes into a separate "OpenMRC" tree. Alternatives that
-- were rejected:
--   * The "infiniband.payload" heuristic list: packet-infiniband.c only
--     consults it for opcodes that carry a payload (SEND/WRITE/...); for an
--     unknown opcode it calls parse_VENDOR(), which adds the byte blob and
--     calls no sub-dissector, so a heuristic dissector never sees our frames.
--   * Taking over udp.port 4791 and calling the "infiniband" dissector
--     ourselves: it replaces the stock RRoCE registration, ignores the
--     infiniband.rroce.port preference and breaks when the stock handle
--     names change between versions.
-- The postdissector leaves Wireshark's tree untouched (infiniband.bth.* stay
-- visible and filterable), needs no "-d"/"-o" options, and also works with
-- tshark -T fields / -Y without -V (Field.new fields are primed by wslua).
--
-- Wire format (normative source: lib/wire/*.hpp in the OpenMRC repository):
--   plain: Eth | IPv6(NH=17) | UDP | BTH | ext | payload | pad | ICRC
--   srv6:  Eth | outer IPv6(NH=41, or NH=43 + SRH type 4 with NH=41) |
--          inner IPv6(NH=17) | UDP | BTH | ext | payload | pad | ICRC
--   EV = UDP source port << 16 | low 16 bits of the (inner) IPv6 flow label;
--        EV[31:28] = plane + 1, EV[27:16] = path, EV[15:0] = salt.
--   ext by opcode: WRITE_* = METH [TSETH if BTH.TS] [CRTH if BTH.CR] RETH
--   [ImmDt if *_WITH_IMM]; ACK = AETH; SACK = SETH + CC state [+ CGTH if SETH
--   cc_type is credit]; NACK = NETH; PROBE = PETH;
--   (BTH.CR = byte 8 bit 6, CRTH and CGTH: OpenMRC's credit mode, not MRC)
--   EP_REQUEST/EP_RESPONSE = ERTH.
--   ICRC = last 4 bytes of the UDP payload, CRC-32 stored little-endian.
--
-- Every read is bounds-checked against the captured bytes and the lengths the
-- headers claim; a short frame gets expert info, never a Lua error.

local omrc = Proto("omrc", "OpenMRC")

---------------------------------------------------------------------------
-- Bit operations: bit32 (Lua 5.2, Wireshark <= 4.2), else native operators
-- (Lua 5.3+), compiled at run time so that Lua 5.2 still parses this file.
---------------------------------------------------------------------------
local bits = bit32
if bits == nil then
    local chunk = load([[return {
        band = function(a, b) return a & b end,
        bxor = function(a, b) return (a ~ b) & 0xFFFFFFFF end,
        rshift = function(a, n) return (a & 0xFFFFFFFF) >> n end,
    }]])
    bits = chunk()
end
local band, bxor, rshift = bits.band, bits.bxor, bits.rshift

---------------------------------------------------------------------------
-- Constants and value strings (names as opcode_name() in lib/wire/bth.cpp)
---------------------------------------------------------------------------
local OPCODES = {
    [0xC0] = "SEND_FIRST",
    [0xC1] = "SEND_MIDDLE",
    [0xC2] = "SEND_LAST",
    [0xC3] = "SEND_LAST_WITH_IMM",
    [0xC4] = "SEND_ONLY",
    [0xC5] = "SEND_ONLY_WITH_IMM",
    [0xC6] = "WRITE_FIRST",
    [0xC7] = "WRITE_MIDDLE",
    [0xC8] = "WRITE_LAST",
    [0xC9] = "WRITE_LAST_WITH_IMM",
    [0xCA] = "WRITE_ONLY",
    [0xCB] = "WRITE_ONLY_WITH_IMM",
    [0xCC] = "READ_REQUEST",
    [0xCD] = "READ_RESPONSE_FIRST",
    [0xCE] = "READ_RESPONSE_MIDDLE",
    [0xCF] = "READ_RESPONSE_LAST",
    [0xD0] = "READ_RESPONSE_ONLY",
    [0xD1] = "ACK",
    [0xD8] = "EP_REQUEST",
    [0xD9] = "EP_RESPONSE",
    [0xDC] = "SACK",
    [0xDD] = "NACK",
    [0xDE] = "PROBE",
}
local OP_ACK, OP_EP_REQ, OP_EP_RESP, OP_SACK, OP_NACK, OP_PROBE = 0xD1, 0xD8, 0xD9, 0xDC, 0xDD, 0xDE
local function is_data(op) return op >= 0xC0 and op <= 0xD0 end
local function is_send(op) return op >= 0xC0 and op <= 0xC5 end
local function is_read_resp(op) return op >= 0xCD and op <= 0xD0 end
local function carries_imm(op) return op == 0xC9 or op == 0xCB or op == 0xC3 or op == 0xC5 end

local MODES = { [0] = "plain", [1] = "srv6" }
local AETH_SYNDROMES = {
    [0x00] = "ACK",
    [0x60] = "NAK: PSN sequence error",
    [0x61] = "NAK: invalid request",
    [0x62] = "NAK: remote access error",
    [0x63] = "NAK: remote operational error",
}
local SACK_SKIP = { [0] = "NONE", [1] = "SKIP_ONCE", [2] = "ALWAYS_SKIP", [3] = "reserved (3)" }
-- SETH cc_type as UET numbers it (lib/wire/mrc_choices.hpp): wire codes, not algorithm
-- names; each algorithm's registration says which one its SACKs carry (seth_cc_type,
-- lib/core/cc_<name>.cpp): credit sends 1, every other algorithm 0.
local CC_TYPES = { [0] = "NSCC", [1] = "credit" }
local NACK_REASONS = {
    [0x01] = "TRIMMED",
    [0x02] = "TRIMMED_LASTHOP",
    [0x06] = "NO_BITMAP",
    [0x07] = "NO_PKT_BUFFER",
    [0x0A] = "NO_RESOURCE",
    [0x0B] = "PSN_OOR_WINDOW",
    [0x19] = "UNEXP_EVENT",
}
-- Endpoint ops, the EETH op position and the 1-based port mask are choices
-- where the public sources disagree (lib/wire/mrc_choices.hpp): keep in step.
local ERTH_OPS = { [0] = "PORT_STATUS_UPDATE", [1] = "EV_PROBE", [2] = "PATH_ALARM (OpenMRC)" }
local EETH_OP_MASK = 0x30
local PORT_MASK_ONE_BASED = true
local FTYPES = { [0] = "no timestamp", [1] = "transmit timestamp" }
local ICRC_STATUS = { [0] = "Unverified", [1] = "Good", [2] = "Bad" }

local EP_QPN = 2
local DSCP_TRIMMED, DSCP_TRIMMED_LAST_HOP = 40, 41
local IPV6_HDR, UDP_HDR, BTH_HDR, ICRC_LEN = 40, 8, 12, 4

---------------------------------------------------------------------------
-- Fields
---------------------------------------------------------------------------
local F = {
    mode = ProtoField.uint8("omrc.mode", "Frame mode", base.DEC, MODES),
    srh = ProtoField.bool("omrc.srh", "SRv6 SRH present"),
    ev = ProtoField.uint32("omrc.ev", "Entropy value (EV)", base.HEX),
    ev_plane = ProtoField.uint8("omrc.ev.plane", "Plane", base.DEC),
    ev_path = ProtoField.uint16("omrc.ev.path", "Path", base.DEC),
    ev_salt = ProtoField.uint16("omrc.ev.salt", "Salt", base.HEX),

    opcode = ProtoField.uint8("omrc.opcode", "Opcode", base.HEX, OPCODES),
    bth_padcnt = ProtoField.uint8("omrc.bth.padcnt", "Pad count", base.DEC, nil, 0x30),
    bth_tver = ProtoField.uint8("omrc.bth.tver", "Transport version", base.DEC, nil, 0x0F),
    bth_destqp = ProtoField.uint24("omrc.bth.destqp", "Destination QP", base.HEX),
    bth_flags = ProtoField.uint8("omrc.bth.flags", "Flags (byte 8)", base.HEX),
    bth_ackreq = ProtoField.bool("omrc.bth.ackreq", "AckReq", 8, nil, 0x80),
    bth_rtx = ProtoField.bool("omrc.bth.rtx", "RTX (retransmission)", 8, nil, 0x20),
    bth_ts = ProtoField.bool("omrc.bth.ts", "TS (TSETH follows METH)", 8, nil, 0x10),
    bth_cr = ProtoField.bool("omrc.bth.cr", "CR (OpenMRC credit: CRTH follows METH [TSETH])", 8, nil, 0x40),
    bth_psn = ProtoField.uint24("omrc.bth.psn", "PSN", base.HEX),

    meth_rqmsn = ProtoField.uint16("omrc.meth.rqmsn", "RQ MSN", base.DEC),
    meth_msn = ProtoField.uint16("omrc.meth.msn", "MSN", base.DEC),

    tseth_ts = ProtoField.uint16("omrc.tseth.ts", "Tx timestamp (128 ns ticks)", base.DEC),
    tseth_tsr = ProtoField.bool("omrc.tseth.tsr", "TSR (resolution other than 128 ns)", 16, nil, 0x8000),
    tseth_type = ProtoField.uint16("omrc.tseth.type", "Format type", base.DEC, FTYPES, 0x000F),

    reth_va = ProtoField.uint64("omrc.reth.va", "Virtual address", base.HEX),
    reth_rkey = ProtoField.uint32("omrc.reth.rkey", "R_Key", base.HEX),
    reth_dmalen = ProtoField.uint32("omrc.reth.dmalen", "DMA length (message bytes)", base.DEC),

    imm = ProtoField.uint32("omrc.imm", "Immediate data", base.HEX),
    read_resp_psn = ProtoField.uint32("omrc.read.resp_psn", "Response PSN", base.HEX, nil, 0x00FFFFFF),

    crth_request = ProtoField.uint32("omrc.crth.request", "Request (cumulative bytes mod 2^32)", base.DEC),
    crth_used = ProtoField.uint32("omrc.crth.used", "Credit used (cumulative bytes mod 2^32)", base.DEC),
    crth_unscheduled = ProtoField.uint16("omrc.crth.unscheduled", "Unscheduled bytes in this packet", base.DEC),
    cgth_valid = ProtoField.bool("omrc.cgth.valid", "V (grant valid)", 8, nil, 0x80),
    cgth_grant = ProtoField.uint32("omrc.cgth.grant", "Grant (cumulative bytes mod 2^32)", base.DEC),

    aeth_syndrome = ProtoField.uint8("omrc.aeth.syndrome", "Syndrome", base.HEX, AETH_SYNDROMES),
    aeth_msn = ProtoField.uint24("omrc.aeth.msn", "MSN", base.DEC),

    sack_prologue = ProtoField.uint16("omrc.sack.prologue", "Type | next header (0)", base.HEX, nil, 0xFF80),
    sack_skip = ProtoField.uint16("omrc.sack.skip", "M (skip)", base.DEC, SACK_SKIP, 0x0060),
    sack_probe_response = ProtoField.bool("omrc.sack.probe_response", "PR (answers a probe)", 16, nil, 0x0002),
    sack_ack_psn_offset = ProtoField.int16("omrc.sack.ack_psn_offset", "ACK PSN offset", base.DEC),
    sack_probe_id = ProtoField.uint16("omrc.sack.probe_id", "Probe id answered", base.HEX),
    sack_ev = ProtoField.uint32("omrc.sack.ev", "Echoed EV", base.HEX),
    sack_src_conn_id = ProtoField.uint16("omrc.sack.src_conn_id", "Source connection id", base.HEX),
    sack_dst_conn_id = ProtoField.uint16("omrc.sack.dst_conn_id", "Destination connection id", base.HEX),
    sack_cack_psn = ProtoField.uint24("omrc.sack.cack_psn", "Cumulative ACK PSN", base.HEX),
    sack_cc_type = ProtoField.uint8("omrc.sack.cc_type", "CC type", base.DEC, CC_TYPES, 0xF0),
    sack_cc_flags = ProtoField.uint8("omrc.sack.cc_flags", "CC flags", base.HEX, nil, 0x0F),
    sack_mpr = ProtoField.uint8("omrc.sack.mpr", "MPR (receive window, x128 packets)", base.DEC),
    sack_offset = ProtoField.int16("omrc.sack.sack_offset", "SACK offset", base.DEC),
    sack_bitmap = ProtoField.uint64("omrc.sack.bitmap", "SACK bitmap", base.HEX),
    sack_psns = ProtoField.string("omrc.sack.received_psns", "PSNs reported received"),

    cc_ts_echo = ProtoField.uint16("omrc.cc.ts_echo", "Timestamp echo (128 ns ticks)", base.DEC),
    cc_ooo_count = ProtoField.uint16("omrc.cc.ooo_count", "Out-of-order count (packets held)", base.DEC, nil, 0x7FFF),
    cc_restore_cwnd = ProtoField.bool("omrc.cc.restore_cwnd", "Restore cwnd (r_c)", 8, nil, 0x80),
    cc_penalty = ProtoField.uint8("omrc.cc.penalty", "Receiver cwnd penalty", base.DEC, nil, 0x7F),
    cc_rcvd_bytes = ProtoField.uint24("omrc.cc.rcvd_bytes", "Received bytes (256-byte units)", base.DEC),

    nack_reason = ProtoField.uint8("omrc.nack.reason", "Reason", base.HEX, NACK_REASONS),
    nack_vendor = ProtoField.uint8("omrc.nack.vendor", "Vendor info", base.HEX),
    nack_ev = ProtoField.uint32("omrc.nack.ev", "Echoed EV", base.HEX),
    nack_src_conn_id = ProtoField.uint16("omrc.nack.src_conn_id", "Source connection id (spdcid)", base.HEX),
    nack_dst_conn_id = ProtoField.uint16("omrc.nack.dst_conn_id", "Destination connection id (dpdcid)", base.HEX),
    nack_nack_psn = ProtoField.uint24("omrc.nack.nack_psn", "NACK PSN", base.HEX),
    nack_cc_type = ProtoField.uint8("omrc.nack.cc_type", "CC type", base.DEC, nil, 0xF0),
    nack_cc_flags = ProtoField.uint8("omrc.nack.cc_flags", "CC flags", base.HEX, nil, 0x0F),
    nack_ts_echo = ProtoField.uint16("omrc.nack.ts_echo", "Timestamp echo (128 ns ticks)", base.DEC),

    probe_vendor = ProtoField.uint8("omrc.probe.vendor", "Vendor info", base.HEX),
    probe_id = ProtoField.uint16("omrc.probe.id", "Probe id", base.HEX),
    probe_src_conn_id = ProtoField.uint16("omrc.probe.src_conn_id", "Source connection id (spdcid)", base.HEX),
    probe_dst_conn_id = ProtoField.uint16("omrc.probe.dst_conn_id", "Destination connection id (dpdcid)", base.HEX),
    probe_ts = ProtoField.uint16("omrc.probe.ts", "Tx timestamp (128 ns ticks)", base.DEC),
    probe_tsr = ProtoField.bool("omrc.probe.tsr", "TSR (resolution other than 128 ns)", 16, nil, 0x8000),
    probe_ftype = ProtoField.uint16("omrc.probe.ftype", "Format type", base.DEC, FTYPES, 0x000F),

    ep_request_id = ProtoField.uint16("omrc.ep.request_id", "Request id (BTH.PSN[15:0])", base.HEX),
    erth_op = ProtoField.uint8("omrc.erth.op", "Operation", base.DEC, ERTH_OPS, 0x03),
    erth_alarm_t1 = ProtoField.uint16("omrc.erth.alarm_t1", "Alarm: T1 index", base.DEC),
    erth_alarm_plane = ProtoField.uint8("omrc.erth.alarm_plane", "Alarm: plane", base.DEC),
    erth_vendor = ProtoField.uint8("omrc.erth.vendor", "Vendor info", base.HEX),
    erth_port_status_mask = ProtoField.uint32("omrc.erth.port_status_mask", "Port status mask", base.HEX),
    erth_planes_up = ProtoField.string("omrc.erth.planes_up", "Planes up"),
    erth_ts = ProtoField.uint16("omrc.erth.ts", "Tx timestamp (128 ns ticks)", base.DEC),
    erth_tsr = ProtoField.bool("omrc.erth.tsr", "TSR (resolution other than 128 ns)", 16, nil, 0x8000),
    erth_ftype = ProtoField.uint16("omrc.erth.ftype", "Format type", base.DEC, FTYPES, 0x000F),
    eeth_op = ProtoField.uint8("omrc.eeth.op", "Operation", base.DEC, ERTH_OPS, EETH_OP_MASK),
    eeth_ts_echo = ProtoField.uint16("omrc.eeth.ts_echo", "Request timestamp echo (128 ns ticks)", base.DEC),

    payload_len = ProtoField.uint32("omrc.payload_len", "Payload length", base.DEC),
    payload = ProtoField.bytes("omrc.payload", "Payload"),
    pad = ProtoField.bytes("omrc.pad", "Pad"),
    icrc = ProtoField.uint32("omrc.icrc", "ICRC", base.HEX),
    icrc_status = ProtoField.uint8("omrc.icrc.status", "ICRC status", base.DEC, ICRC_STATUS),
    icrc_computed = ProtoField.uint32("omrc.icrc.computed", "Computed ICRC", base.HEX),
}
local field_list = {}
for _, f in pairs(F) do field_list[#field_list + 1] = f end
omrc.fields = field_list

local E = {
    not_captured = ProtoExpert.new("omrc.not_captured", "OpenMRC header not fully captured (snaplen)",
        expert.group.MALFORMED, expert.severity.WARN),
    truncated = ProtoExpert.new("omrc.truncated", "OpenMRC header truncated",
        expert.group.MALFORMED, expert.severity.ERROR),
    trimmed = ProtoExpert.new("omrc.trimmed", "Trimmed OpenMRC data packet",
        expert.group.SEQUENCE, expert.severity.NOTE),
    bad_len = ProtoExpert.new("omrc.bad_length", "Bad OpenMRC length",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_field = ProtoExpert.new("omrc.bad_field", "Invalid OpenMRC field value",
        expert.group.PROTOCOL, expert.severity.WARN),
    bad_ev = ProtoExpert.new("omrc.bad_ev", "Invalid EV",
        expert.group.PROTOCOL, expert.severity.WARN),
    bad_icrc = ProtoExpert.new("omrc.bad_icrc", "Bad ICRC",
        expert.group.CHECKSUM, expert.severity.ERROR),
    no_ipv6 = ProtoExpert.new("omrc.no_ipv6", "No IPv6 header right before UDP: EV/ICRC not derived",
        expert.group.PROTOCOL, expert.severity.NOTE),
}
omrc.experts = { E.not_captured, E.truncated, E.trimmed, E.bad_len, E.bad_field, E.bad_ev, E.bad_icrc, E.no_ipv6 }

omrc.prefs.udp_port = Pref.uint("RoCEv2 UDP port", 4791, "UDP destination port of OpenMRC (RoCEv2) frames")
omrc.prefs.verify_icrc = Pref.bool("Verify ICRC", true, "Compute the RoCEv2 invariant CRC and compare")

---------------------------------------------------------------------------
-- Field extractors (must be created at load time)
---------------------------------------------------------------------------
local fx_udp_payload = Field.new("udp.payload")
local fx_ipv6_nxt = Field.new("ipv6.nxt")
local fx_ipv6_flow = Field.new("ipv6.flow")
local fx_ipv6_dscp = Field.new("ipv6.tclass.dscp")
local fx_routing_type = Field.new("ipv6.routing.type")

---------------------------------------------------------------------------
-- CRC-32 (IEEE 802.3, reflected), as ISA-L crc32_gzip_refl(0, ...)
---------------------------------------------------------------------------
local CRC_TABLE = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if c % 2 == 1 then c = bxor(rshift(c, 1), 0xEDB88320) else c = rshift(c, 1) end
    end
    CRC_TABLE[i] = c
end
local function crc32_update(crc, s)
    for k = 1, #s do
        crc = bxor(CRC_TABLE[band(bxor(crc, s:byte(k)), 0xFF)], rshift(crc, 8))
    end
    return crc
end

local function set_byte(s, idx1, value) -- 1-based index into a Lua string
    return s:sub(1, idx1 - 1) .. string.char(value) .. s:sub(idx1 + 1)
end

-- ICRC over: 8 x 0xFF, IPv6 header (TC, flow label, hop limit masked), UDP
-- (checksum masked), BTH (byte 4 masked), ext headers, payload, pad.
local function compute_icrc(src, ip_off, icrc_off)
    local ip = src:raw(ip_off, IPV6_HDR)
    ip = set_byte(ip, 1, band(ip:byte(1), 0xF0) + 0x0F)
    ip = "" .. ip:sub(1, 1) .. "\255\255\255" .. ip:sub(5, 7) .. "\255" .. ip:sub(9)
    local udp = src:raw(ip_off + IPV6_HDR, UDP_HDR)
    udp = udp:sub(1, 6) .. "\255\255"
    local bth = src:raw(ip_off + IPV6_HDR + UDP_HDR, BTH_HDR)
    bth = set_byte(bth, 5, 0xFF)
    local rest_off = ip_off + IPV6_HDR + UDP_HDR + BTH_HDR
    local crc = 0xFFFFFFFF
    crc = crc32_update(crc, string.rep("\255", 8))
    crc = crc32_update(crc, ip)
    crc = crc32_update(crc, udp)
    crc = crc32_update(crc, bth)
    if icrc_off > rest_off then crc = crc32_update(crc, src:raw(rest_off, icrc_off - rest_off)) end
    return bxor(crc, 0xFFFFFFFF)
end

---------------------------------------------------------------------------
-- Helpers
---------------------------------------------------------------------------
local function ev_parts(ev)
    local nib = math.floor(ev / 0x10000000)
    local path = math.floor(ev / 0x10000) % 0x1000
    local salt = ev % 0x10000
    return nib, path, salt
end

local function ev_text(ev)
    local nib, path, salt = ev_parts(ev)
    if nib == 0 then return string.format("invalid: plane nibble 0, path %d, salt 0x%04x", path, salt) end
    return string.format("plane %d, path %d, salt 0x%04x", nib - 1, path, salt)
end

local function psn_list_text(first_psn, bitmap_str)
    -- bitmap bit k (the LSB, last byte on the wire, is k 0) reports PSN first_psn + k; returns compact ranges
    local runs, start, prev = {}, nil, nil
    local function flush()
        if start == nil then return end
        local a, b = start % 0x1000000, prev % 0x1000000
        if a == b then runs[#runs + 1] = string.format("0x%06x", a)
        else runs[#runs + 1] = string.format("0x%06x-0x%06x", a, b) end
    end
    for j = 8, 1, -1 do
        local byte = bitmap_str:byte(j)
        for b = 0, 7 do
            local i = (8 - j) * 8 + b
            local set = math.floor(byte / 2 ^ b) % 2 == 1
            if set then
                if start ~= nil and prev == first_psn + i - 1 then prev = first_psn + i
                else flush(); start, prev = first_psn + i, first_psn + i end
            end
        end
    end
    flush()
    if #runs == 0 then return "(none)" end
    return table.concat(runs, ", ")
end

local function get_source(fi, fallback)
    local ok, src = pcall(function() return fi.source end)
    if ok and src ~= nil then return src end
    return fallback
end

---------------------------------------------------------------------------
-- Dissector
---------------------------------------------------------------------------
function omrc.dissector(tvb, pinfo, tree)
    local payloads = { fx_udp_payload() }
    if #payloads == 0 then return end
    local pl = payloads[#payloads]
    local src = get_source(pl, tvb)
    local base = pl.offset                  -- UDP payload (BTH) offset in src
    local udp_off = base - UDP_HDR
    if udp_off < 0 or src:len() < base + 1 then return end
    if src(udp_off + 2, 2):uint() ~= omrc.prefs.udp_port then return end
    local opcode = src(base, 1):uint()
    local opname = OPCODES[opcode]
    if opname == nil then return end        -- plain RoCE or another vendor: not ours

    -- Lengths: cap = captured bytes, rep = bytes on the wire, claimed = per UDP length.
    local udp_len = src(udp_off + 4, 2):uint()
    local cap = src:len() - base
    local rep = src:reported_len() - base
    local claimed = udp_len - UDP_HDR
    local bad_udp_len = udp_len < UDP_HDR
    if bad_udp_len then claimed = rep end
    local limit = math.min(claimed, rep)    -- bytes that exist in this frame
    local avail = math.min(limit, cap)      -- bytes we can read

    local t = tree:add(omrc, src(base, avail))
    pinfo.cols.protocol:set("OpenMRC")
    if bad_udp_len then
        t:add_proto_expert_info(E.bad_len, string.format("UDP length %d is shorter than the UDP header", udp_len))
    end

    local mode, has_srh = add_frame_mode(t)
    local ip_off, ev = add_ip_and_ev(t, src, udp_off, udp_len, bad_udp_len)

    -- Trimmed by the fabric? (DSCP rewritten, or frame shorter than IPv6/UDP claim)
    local trim_dscp = trimmed_dscp()
    local short_frame = rep < claimed
    local trimmed = is_data(opcode) and (trim_dscp ~= nil or short_frame)
    local trim_why = trim_dscp and ("DSCP " .. trim_dscp) or "frame shorter than its UDP length"

    local info = { opname }
    local off = 0
    local stopped = false

    -- Checks that `n` bytes of `what` can be read at `off`; adds expert info otherwise.
    local function have(n, what)
        if off + n <= avail then return true end
        local got = math.max(avail - off, 0)
        if trimmed and off >= BTH_HDR then
            t:add_proto_expert_info(E.trimmed, string.format("Trimmed data packet (%s): %s absent", trim_why, what))
        elseif off + n <= limit then
            t:add_proto_expert_info(E.not_captured, string.format(
                "%s not captured: %d of %d bytes (snaplen)", what, got, n))
        elseif short_frame then
            t:add_proto_expert_info(E.truncated, string.format(
                "%s truncated: %d of %d bytes (frame shorter than its UDP length)", what, got, n))
        else
            t:add_proto_expert_info(E.bad_len, string.format(
                "%s does not fit: UDP length %d leaves %d of %d bytes", what, udp_len, got, n))
        end
        stopped = true
        return false
    end

    -- BTH (OpenMRC view; Wireshark's own BTH tree stays under InfiniBand).
    local psn, qpn, padcnt, ts_flag, cr_flag = nil, nil, 0, false, false
    if have(BTH_HDR, "BTH") then
        qpn, psn, padcnt, ts_flag, cr_flag = add_bth(t, src, base, opcode, opname, info)
        off = BTH_HDR
    end
    if ev ~= nil then info[#info + 1] = string.format("EV=0x%08x", ev) end

    -- Extension headers
    local function hdr(n, title)
        local r = src(base + off, n)
        local h = t:add(r, title)
        return h, base + off
    end

    if not stopped and is_data(opcode) then
        if have(4, "METH") then
            local h, o = hdr(4, "METH (message extension header)")
            h:add(F.meth_rqmsn, src(o, 2))
            h:add(F.meth_msn, src(o + 2, 2))
            info[#info + 1] = string.format("MSN=%d", src(o + 2, 2):uint())
            off = off + 4
        end
        if not stopped and ts_flag and have(4, "TSETH") then
            local h, o = hdr(4, "TSETH (timestamp extension header)")
            h:add(F.tseth_ts, src(o, 2))
            h:add(F.tseth_tsr, src(o + 2, 2))
            h:add(F.tseth_type, src(o + 2, 2))
            off = off + 4
        end
        if not stopped and cr_flag and have(12, "CRTH") then
            local h, o = hdr(12, "CRTH (OpenMRC credit request header)")
            h:add(F.crth_request, src(o, 4))
            h:add(F.crth_used, src(o + 4, 4))
            h:add(F.crth_unscheduled, src(o + 8, 2))
            info[#info + 1] = string.format("Req=%d", src(o, 4):uint())
            off = off + 12
        end
        if not stopped and have(16, "RETH") then
            local h, o = hdr(16, is_send(opcode)
                and "RETH (SEND: VA is the byte offset in the message, R_Key 0, DMA length the message's)"
                or is_read_resp(opcode)
                and "RETH (READ response: VA is the byte offset in the read, R_Key 0, DMA length the read's)"
                or opcode == 0xCC and "RETH (READ request: the responder's VA and R_Key, DMA length the read's)"
                or "RETH (RDMA extended transport header)")
            h:add(F.reth_va, src(o, 8))
            h:add(F.reth_rkey, src(o + 8, 4))
            h:add(F.reth_dmalen, src(o + 12, 4))
            off = off + 16
        end
        if not stopped and carries_imm(opcode) and have(4, "ImmDt") then
            local h, o = hdr(4, "ImmDt (immediate data)")
            h:add(F.imm, src(o, 4))
            info[#info + 1] = string.format("Imm=0x%08x", src(o, 4):uint())
            off = off + 4
        end
        if not stopped and opcode == 0xCC and have(4, "response PSN") then
            local h, o = hdr(4, "Response PSN (OpenMRC READ request: the PSN its requester expects next)")
            h:add(F.read_resp_psn, src(o, 4))
            off = off + 4
        end
    elseif not stopped and opcode == OP_ACK then
        if have(4, "AETH") then
            local h, o = hdr(4, "AETH (ACK extended transport header)")
            h:add(F.aeth_syndrome, src(o, 1))
            h:add(F.aeth_msn, src(o + 1, 3))
            local syn = src(o, 1):uint()
            local name = AETH_SYNDROMES[syn]
            if name == nil and syn >= 0x20 and syn < 0x40 then
                name = string.format("RNR NAK (timer %d)", syn - 0x20)  -- receiver not ready: no receive posted
            end
            info[#info + 1] = string.format("%s MSN=%d", name or string.format("syndrome 0x%02x", syn),
                src(o + 1, 3):uint())
            off = off + 4
        end
    elseif not stopped and opcode == OP_SACK then
        if have(28, "SETH") then
            local h, o = hdr(28, "SETH (selective ACK extended header)")
            local fw = src(o, 2)
            h:add(F.sack_prologue, fw)
            local skip_item = h:add(F.sack_skip, fw)
            if band(rshift(fw:uint(), 5), 3) == 3 then skip_item:add_proto_expert_info(E.bad_field, "SETH M value 3 is reserved") end
            h:add(F.sack_probe_response, fw)
            local pr = band(fw:uint(), 0x0002) ~= 0
            if pr then h:add(F.sack_probe_id, src(o + 2, 2)) else h:add(F.sack_ack_psn_offset, src(o + 2, 2)) end
            local e = src(o + 4, 4):uint()
            h:add(F.sack_ev, src(o + 4, 4)):append_text(" (" .. ev_text(e) .. ")")
            h:add(F.sack_src_conn_id, src(o + 8, 2))
            h:add(F.sack_dst_conn_id, src(o + 10, 2))
            h:add(F.sack_cack_psn, src(o + 13, 3))
            h:add(F.sack_cc_type, src(o + 16, 1))
            h:add(F.sack_cc_flags, src(o + 16, 1))
            h:add(F.sack_mpr, src(o + 17, 1))
            h:add(F.sack_offset, src(o + 18, 2))
            h:add(F.sack_bitmap, src(o + 20, 8))
            local cack = src(o + 13, 3):uint()
            local soff = src(o + 18, 2):int()
            h:add(F.sack_psns, src(o + 20, 8), psn_list_text(cack + soff, src:raw(o + 20, 8))):set_generated()
            info[#info + 1] = string.format("CACK=0x%06x", cack)
            off = off + 28
            if have(8, "CC state") then
                local c, co = hdr(8, "CC state")
                c:add(F.cc_ts_echo, src(co, 2))
                c:add(F.cc_ooo_count, src(co + 2, 2))
                c:add(F.cc_restore_cwnd, src(co + 4, 1))
                c:add(F.cc_penalty, src(co + 4, 1))
                local rb = c:add(F.cc_rcvd_bytes, src(co + 5, 3))
                rb:append_text(string.format(" (%d bytes mod 2^32)", (src(co + 5, 3):uint() * 256) % 0x100000000))
                off = off + 8
                if math.floor(src(o + 16, 1):uint() / 16) == 1 and have(8, "CGTH") then
                    local g, go = hdr(8, "CGTH (OpenMRC credit grant header)")
                    g:add(F.cgth_valid, src(go, 1))
                    g:add(F.cgth_grant, src(go + 4, 4))
                    info[#info + 1] = string.format("Grant=%d", src(go + 4, 4):uint())
                    off = off + 8
                end
            end
        end
    elseif not stopped and opcode == OP_NACK then
        if have(20, "NETH") then
            local h, o = hdr(20, "NETH (NACK extended header)")
            h:add(F.nack_reason, src(o + 2, 1))
            h:add(F.nack_vendor, src(o + 3, 1))
            local e = src(o + 4, 4):uint()
            h:add(F.nack_ev, src(o + 4, 4)):append_text(" (" .. ev_text(e) .. ")")
            h:add(F.nack_src_conn_id, src(o + 8, 2))
            h:add(F.nack_dst_conn_id, src(o + 10, 2))
            h:add(F.nack_nack_psn, src(o + 13, 3))
            h:add(F.nack_cc_type, src(o + 16, 1))
            h:add(F.nack_cc_flags, src(o + 16, 1))
            h:add(F.nack_ts_echo, src(o + 18, 2))
            local reason = src(o + 2, 1):uint()
            info[#info + 1] = string.format("NACK_PSN=0x%06x %s", src(o + 13, 3):uint(),
                NACK_REASONS[reason] or string.format("reason 0x%02x", reason))
            off = off + 20
        end
    elseif not stopped and opcode == OP_PROBE then
        if have(16, "PETH") then
            local h, o = hdr(16, "PETH (probe extended header)")
            h:add(F.probe_vendor, src(o + 3, 1))
            h:add(F.probe_id, src(o + 4, 2))
            h:add(F.probe_src_conn_id, src(o + 8, 2))
            h:add(F.probe_dst_conn_id, src(o + 10, 2))
            h:add(F.probe_ts, src(o + 12, 2))
            h:add(F.probe_tsr, src(o + 14, 2))
            h:add(F.probe_ftype, src(o + 14, 2))
            info[#info + 1] = string.format("ID=0x%04x", src(o + 4, 2):uint())
            off = off + 16
        end
    elseif not stopped and opcode == OP_EP_REQ then
        if have(16, "ERTH") then
            local h, o = hdr(16, "ERTH (endpoint request header)")
            local op_item = h:add(F.erth_op, src(o + 1, 1))
            local eop = band(src(o + 1, 1):uint(), 0x03)
            if ERTH_OPS[eop] == nil then op_item:add_proto_expert_info(E.bad_field, "Unknown endpoint operation") end
            h:add(F.erth_vendor, src(o + 3, 1))
            local mask = src(o + 4, 4):uint()
            h:add(F.erth_port_status_mask, src(o + 4, 4))
            if eop == 0 then
                local up = {}
                for p = 0, 15 do
                    local bit = PORT_MASK_ONE_BASED and p + 1 or p
                    if band(rshift(mask, bit), 1) == 1 then up[#up + 1] = tostring(p) end
                end
                h:add(F.erth_planes_up, src(o + 4, 4), #up > 0 and table.concat(up, ",") or "(none)"):set_generated()
            elseif eop == 2 then
                h:add(F.erth_alarm_t1, src(o + 8, 2))
                h:add(F.erth_alarm_plane, src(o + 10, 1))
            end
            h:add(F.erth_ts, src(o + 12, 2))
            h:add(F.erth_tsr, src(o + 14, 2))
            h:add(F.erth_ftype, src(o + 14, 2))
            h:add(F.ep_request_id, src(base + 10, 2)):set_generated()
            info[#info + 1] = string.format("%s id=0x%04x", ERTH_OPS[eop] or string.format("op %d", eop), src(base + 10, 2):uint())
            off = off + 16
        end
    elseif not stopped and opcode == OP_EP_RESP then
        if have(36, "EETH") then
            local h, o = hdr(36, "EETH (endpoint response header)")
            local op_item = h:add(F.eeth_op, src(o + 1, 1))
            local eop = rshift(band(src(o + 1, 1):uint(), EETH_OP_MASK), 4)
            if ERTH_OPS[eop] == nil then op_item:add_proto_expert_info(E.bad_field, "Unknown endpoint operation") end
            h:add(F.eeth_ts_echo, src(o + 28, 2))
            h:add(F.ep_request_id, src(base + 10, 2)):set_generated()
            info[#info + 1] = string.format("%s answer id=0x%04x", ERTH_OPS[eop] or string.format("op %d", eop),
                src(base + 10, 2):uint())
            off = off + 36
        end
    end

    -- Payload, pad and ICRC (only when all the headers were decoded). A
    -- trimmed data packet lost its payload in the fabric: no payload or ICRC.
    if trimmed and off >= BTH_HDR then
        if not stopped then
            t:add_proto_expert_info(E.trimmed, string.format(
                "Trimmed data packet (%s): payload not delivered, ICRC not checked", trim_why))
        end
        info[#info + 1] = "[TRIMMED]"
    elseif not stopped then
        local icrc_rel = claimed - ICRC_LEN
        local body = icrc_rel - off         -- payload + pad
        if body < 0 then
            t:add_proto_expert_info(E.bad_len, string.format(
                "UDP length %d leaves no room for the 4-byte ICRC after the headers", udp_len))
        else
            if body < padcnt then
                t:add_proto_expert_info(E.bad_len, string.format(
                    "BTH pad count %d exceeds the %d bytes between headers and ICRC", padcnt, body))
            elseif is_data(opcode) then
                local plen = body - padcnt
                local pl_item = t:add(F.payload_len, plen)
                pl_item:set_generated()
                if plen > 0 and off < avail then
                    t:add(F.payload, src(base + off, math.min(plen, avail - off)))
                end
                if padcnt > 0 and off + plen < avail then
                    t:add(F.pad, src(base + off + plen, math.min(padcnt, avail - off - plen)))
                end
                info[#info + 1] = string.format("Len=%d", plen)
            elseif body ~= 0 then
                t:add_proto_expert_info(E.bad_len, string.format(
                    "%d unexpected bytes between the %s headers and the ICRC", body, opname))
            end
            if icrc_rel + ICRC_LEN <= avail then
                add_icrc(t, src, ip_off, base + icrc_rel, info)
            elseif icrc_rel + ICRC_LEN <= limit then
                t:add_proto_expert_info(E.not_captured, "ICRC not captured (snaplen)")
            else
                t:add_proto_expert_info(E.truncated, "ICRC missing: frame shorter than its UDP length")
            end
        end
    end

    t:append_text(string.format(", %s", opname))
    if qpn ~= nil then t:append_text(string.format(", QP 0x%06x, PSN 0x%06x", qpn, psn)) end
    if ev ~= nil then t:append_text(string.format(", EV 0x%08x", ev)) end
    if mode ~= nil then t:append_text(", " .. MODES[mode] .. (has_srh and "+srh" or "")) end
    pinfo.cols.info:set(table.concat(info, " "))
end

register_postdissector(omrc)
