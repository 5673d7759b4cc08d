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
--   sealed (encrypted mode, either frame mode; lib/wire/psp.hpp):
--          ... IPv6(NH=17) | UDP(dst 1000) | PSP(16) | UDP(dst 4791) | BTH |
--          enc(ext | payload | pad) | ICV(16) | ICRC
--          decoded by a second dissector, "OpenMRC PSP" (omrc_psp.*), on
--          UDP port 1000: see "Sealed frames" below.
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
    [0x64] = "CM (OpenMRC connection manager; body not decoded here)",
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
local fx_udp_srcport = Field.new("udp.srcport")
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
-- Pieces both dissectors decode (plain frames, and the clear part of sealed
-- ones: a sealed frame's IPv6 chain, EV and BTH read as a plain frame's)
---------------------------------------------------------------------------

-- Frame mode from the IPv6 chain Wireshark decoded, added to `t`; nil when
-- no IPv6 header was decoded.
local function add_frame_mode(t)
    local nxts = { fx_ipv6_nxt() }
    local mode, has_srh = nil, false
    if #nxts >= 1 then
        mode = 0
        if #nxts >= 2 then
            local prev_nh = nxts[#nxts - 1].value
            if prev_nh == 41 then mode = 1
            elseif prev_nh == 43 then
                mode = 1
                for _, rt in ipairs({ fx_routing_type() }) do
                    if rt.value == 4 then has_srh = true end
                end
            end
        end
        t:add(F.mode, mode):set_generated()
        if mode == 1 then t:add(F.srh, has_srh):set_generated() end
    end
    return mode, has_srh
end

-- The IPv6 header right before the UDP header at `udp_off` in `src`: flow
-- label (EV), ICRC coverage. Returns its offset (nil when it is not there)
-- and the EV (nil when no flow label was found), both added to `t`.
local function add_ip_and_ev(t, src, udp_off, udp_len, bad_udp_len)
    local ip_off = nil
    if udp_off >= IPV6_HDR and math.floor(src(udp_off - IPV6_HDR, 1):uint() / 16) == 6
        and src(udp_off - IPV6_HDR + 6, 1):uint() == 17 then
        ip_off = udp_off - IPV6_HDR
    end
    local flow_lo = nil
    if ip_off ~= nil then
        flow_lo = src(ip_off + 2, 2):uint()
        local ip_plen = src(ip_off + 4, 2):uint()
        if ip_plen ~= udp_len and not bad_udp_len then
            t:add_proto_expert_info(E.bad_len, string.format(
                "UDP length %d differs from the IPv6 payload length %d", udp_len, ip_plen))
        end
    else
        local flows = { fx_ipv6_flow() }
        if #flows > 0 then flow_lo = flows[#flows].value % 0x10000 end
        t:add_proto_expert_info(E.no_ipv6)
    end
    local ev = nil
    if flow_lo ~= nil then
        ev = src(udp_off, 2):uint() * 0x10000 + flow_lo
        local nib, path, salt = ev_parts(ev)
        local ev_item = t:add(F.ev, src(udp_off, 2), ev)
        ev_item:set_generated()
        ev_item:append_text(" (" .. ev_text(ev) .. ")")
        if nib > 0 then ev_item:add(F.ev_plane, nib - 1):set_generated() end
        ev_item:add(F.ev_path, path):set_generated()
        ev_item:add(F.ev_salt, salt):set_generated()
        if nib == 0 then ev_item:add_proto_expert_info(E.bad_ev, "EV[31:28] (plane + 1) is 0") end
    end
    return ip_off, ev
end

-- The trimmed-packet DSCP (40, 41) when an IPv6 header carries it, else nil.
local function trimmed_dscp()
    local trim_dscp = nil
    for _, d in ipairs({ fx_ipv6_dscp() }) do
        if d.value == DSCP_TRIMMED or d.value == DSCP_TRIMMED_LAST_HOP then trim_dscp = d.value end
    end
    return trim_dscp
end

-- The 12-byte BTH at `o` in `src` (the caller checked it was captured), as
-- a subtree of `t`: OpenMRC's view of it (Wireshark's own BTH tree stays
-- under InfiniBand for plain frames). Appends QP, PSN and flags to `info`.
-- Returns qpn, psn, pad count, TS and CR flags.
local function add_bth(t, src, o, opcode, opname, info)
    local bt = t:add(src(o, BTH_HDR), "Base Transport Header")
    bt:add(F.opcode, src(o, 1))
    bt:add(F.bth_padcnt, src(o + 1, 1))
    local tver_item = bt:add(F.bth_tver, src(o + 1, 1))
    if src(o + 1, 1):uint() % 16 ~= 0 then
        tver_item:add_proto_expert_info(E.bad_field, "BTH transport version must be 0")
    end
    local qp_item = bt:add(F.bth_destqp, src(o + 5, 3))
    local fl = bt:add(F.bth_flags, src(o + 8, 1))
    fl:add(F.bth_ackreq, src(o + 8, 1))
    fl:add(F.bth_rtx, src(o + 8, 1))
    fl:add(F.bth_ts, src(o + 8, 1))
    fl:add(F.bth_cr, src(o + 8, 1))
    bt:add(F.bth_psn, src(o + 9, 3))
    local padcnt = math.floor(src(o + 1, 1):uint() / 16) % 4
    local flags = src(o + 8, 1):uint()
    local ts_flag = math.floor(flags / 0x10) % 2 == 1
    local cr_flag = math.floor(flags / 0x40) % 2 == 1
    local qpn = src(o + 5, 3):uint()
    local psn = src(o + 9, 3):uint()
    local fnames = {}
    if flags >= 0x80 then fnames[#fnames + 1] = "AckReq" end
    if math.floor(flags / 0x20) % 2 == 1 then fnames[#fnames + 1] = "RTX" end
    if ts_flag then fnames[#fnames + 1] = "TS" end
    if cr_flag then fnames[#fnames + 1] = "CR" end
    if #fnames > 0 then fl:append_text(" (" .. table.concat(fnames, ", ") .. ")") end
    bt:append_text(string.format(", %s, QP 0x%06x, PSN 0x%06x", opname, qpn, psn))
    info[#info + 1] = string.format("QP=0x%06x PSN=0x%06x", qpn, psn)
    if #fnames > 0 then info[#info + 1] = "[" .. table.concat(fnames, ",") .. "]" end
    if (opcode == OP_EP_REQ or opcode == OP_EP_RESP) and qpn ~= EP_QPN then
        qp_item:add_proto_expert_info(E.bad_field, "Endpoint messages use QPN 2")
    end
    return qpn, psn, padcnt, ts_flag, cr_flag
end

-- The 4-byte ICRC at `at` in `src` (captured; the caller checked), verified
-- over [ip_off, at) when the preference says so and the IPv6 header is known.
local function add_icrc(t, src, ip_off, at, info)
    local ir = src(at, ICRC_LEN)
    local stored = ir:le_uint()
    local icrc_item = t:add_le(F.icrc, ir)
    local status = 0
    if omrc.prefs.verify_icrc and ip_off ~= nil then
        local computed = compute_icrc(src, ip_off, at)
        if computed == stored then
            status = 1
            icrc_item:append_text(" [correct]")
        else
            status = 2
            icrc_item:append_text(" [incorrect]")
            icrc_item:add(F.icrc_computed, computed):set_generated()
            icrc_item:add_proto_expert_info(E.bad_icrc, string.format(
                "Bad ICRC: stored 0x%08x, computed 0x%08x", stored, computed))
            info[#info + 1] = "[BAD ICRC]"
        end
    end
    icrc_item:add(F.icrc_status, status):set_generated()
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

---------------------------------------------------------------------------
-- Sealed frames (encrypted mode, docs/PROTOCOL.md §12; lib/wire/psp.hpp)
---------------------------------------------------------------------------
-- A sealed frame is the plain one in PSP transport mode: the outer UDP
-- header goes to port 1000 (PSP's), then the 16-byte PSP header, then the
-- plain frame's own UDP header (port 4791) and BTH in the clear (crypt
-- offset 5 words) but authenticated, then the encrypted extension headers,
-- payload and pad, the 16-byte ICV and the ICRC over the sealed IPv6 packet.
-- Wireshark 4.0 has no PSP dissector and nothing on UDP port 1000, so this
-- one is registered there (the stock RoCE dissector never sees these
-- frames: their last UDP header is not port 4791, and the postdissector
-- above skips them for the same reason).
--
-- Decryption: not done, and not faked. It needs AES-GCM and, for the key of
-- an SPI, the PSP key derivation (SP 800-108 with AES-CMAC-256). Wireshark
-- links libgcrypt, but its Lua API (4.0 as in Debian 12) exposes no cipher
-- or MAC: no gcrypt binding, no `require`able crypto module in a stock
-- install. A pure-Lua AES would be slow, and a second implementation to get
-- wrong. So the "PSP key file" preference is accepted and only reported as
-- given; the cipher text is shown as bytes. (A C plugin, or the third-party
-- luagcrypt module where installed, could do it.)
local omrc_psp = Proto("omrc_psp", "OpenMRC PSP")

local PSP_PORT = 1000
local PSP_HDR, PSP_ICV = 16, 16
local PSP_CRYPT_OFFSET = 5                         -- 4-byte words: inner UDP (8) + BTH (12)
local PSP_CLEAR = PSP_HDR + UDP_HDR + BTH_HDR      -- PSP header .. end of BTH: the AAD, 36 bytes
local PSP_OVERHEAD = UDP_HDR + PSP_HDR + PSP_ICV   -- what sealing adds to the plain frame's UDP length
-- Versions 2 and 3 are PSP's authentication-only AES-GMAC; OpenMRC sends 0 or 1.
local PSP_VERSIONS = { [0] = "AES-GCM-128", [1] = "AES-GCM-256", [2] = "AES-GMAC-128", [3] = "AES-GMAC-256" }

local FP = {
    next_header = ProtoField.uint8("omrc_psp.next_header", "Next header", base.DEC, { [17] = "UDP" }),
    hdr_ext_len = ProtoField.uint8("omrc_psp.hdr_ext_len", "Header extension length (8-byte units after the first 8)",
        base.DEC),
    reserved = ProtoField.uint8("omrc_psp.reserved", "Reserved", base.HEX, nil, 0xC0),
    crypt_offset = ProtoField.uint8("omrc_psp.crypt_offset", "Crypt offset (4-byte words in the clear after the IV)",
        base.DEC, nil, 0x3F),
    flags = ProtoField.uint8("omrc_psp.flags", "S | D | version | V | 1", base.HEX),
    s = ProtoField.bool("omrc_psp.s", "S (sample)", 8, nil, 0x80),
    d = ProtoField.bool("omrc_psp.d", "D (drop after sampling)", 8, nil, 0x40),
    version = ProtoField.uint8("omrc_psp.version", "Version", base.DEC, PSP_VERSIONS, 0x3C),
    v = ProtoField.bool("omrc_psp.v", "V (virtualization cookie present)", 8, nil, 0x02),
    one = ProtoField.bool("omrc_psp.always_one", "Always 1", 8, nil, 0x01),
    spi = ProtoField.uint32("omrc_psp.spi", "SPI", base.HEX),
    spi_key_select = ProtoField.uint32("omrc_psp.spi.key_select", "Master key select", base.DEC, nil, 0x80000000),
    spi_epoch = ProtoField.uint32("omrc_psp.spi.epoch", "Key epoch (mod 128)", base.DEC, nil, 0x7F000000),
    spi_qpn = ProtoField.uint32("omrc_psp.spi.qpn", "Receiver QPN", base.HEX, nil, 0x00FFFFFF),
    iv = ProtoField.uint64("omrc_psp.iv", "IV (the SA's transmit counter)", base.DEC),
    inner_sport = ProtoField.uint16("omrc_psp.inner_udp.srcport", "Source port", base.DEC),
    inner_dport = ProtoField.uint16("omrc_psp.inner_udp.dstport", "Destination port", base.DEC),
    inner_len = ProtoField.uint16("omrc_psp.inner_udp.length", "Length (the plain frame's)", base.DEC),
    inner_csum = ProtoField.uint16("omrc_psp.inner_udp.checksum", "Checksum", base.HEX),
    encrypted = ProtoField.bytes("omrc_psp.encrypted", "Encrypted payload"),
    encrypted_len = ProtoField.uint32("omrc_psp.encrypted_len", "Encrypted bytes (extension headers, payload, pad)",
        base.DEC),
    icv = ProtoField.bytes("omrc_psp.icv", "ICV (AES-GCM tag)"),
    undecoded = ProtoField.bytes("omrc_psp.undecoded", "Rest of the PSP packet (not decoded)"),
}
local psp_field_list = {}
for _, f in pairs(FP) do psp_field_list[#psp_field_list + 1] = f end
omrc_psp.fields = psp_field_list

local EP = {
    sealed = ProtoExpert.new("omrc_psp.sealed", "Sealed OpenMRC frame (PSP)",
        expert.group.SECURITY, expert.severity.CHAT),
    bad_field = ProtoExpert.new("omrc_psp.bad_field", "PSP header not as OpenMRC sends it",
        expert.group.PROTOCOL, expert.severity.WARN),
    decryption = ProtoExpert.new("omrc_psp.decryption", "PSP decryption not available",
        expert.group.DECRYPTION, expert.severity.NOTE),
}
omrc_psp.experts = { EP.sealed, EP.bad_field, EP.decryption }

omrc_psp.prefs.psp_keys = Pref.string("PSP key file", "",
    "Master keys for decryption. Accepted but not used: this Wireshark's Lua has no AES-GCM (see omrc.lua)")

function omrc_psp.dissector(tvb, pinfo, tree)
    -- Work in the frame's bytes, as the postdissector does: the ICRC covers
    -- the IPv6 header before the outer UDP one, and the EV is in that UDP
    -- header and the flow label. The UDP header that handed us `tvb` is the
    -- udp.srcport whose offset lies 8 bytes before it.
    local src, base, udp_off = tvb, 0, nil
    for _, fi in ipairs({ fx_udp_srcport() }) do
        local s = get_source(fi, nil)
        if s ~= nil and fi.offset + UDP_HDR == tvb:offset() then src, base, udp_off = s, tvb:offset(), fi.offset end
    end

    -- Lengths as in the plain dissector: cap = captured bytes, rep = bytes on
    -- the wire, claimed = per the outer UDP length (UDP already cut `tvb` to it).
    local cap, rep = tvb:len(), tvb:reported_len()
    local udp_len = udp_off ~= nil and src(udp_off + 4, 2):uint() or rep + UDP_HDR
    local claimed = udp_len - UDP_HDR
    local bad_udp_len = udp_len < UDP_HDR
    if bad_udp_len then claimed = rep end
    local limit = math.min(claimed, rep)
    local avail = math.min(limit, cap)

    local t = tree:add(omrc_psp, tvb(0, math.max(avail, 0)))
    pinfo.cols.protocol:set("OpenMRC/PSP")
    local info = {}
    local summary = {}   -- the tree item's title, after "OpenMRC PSP"
    local function finish()
        t:append_text(#summary > 0 and (", " .. table.concat(summary, ", ")) or "")
        pinfo.cols.info:set(#info > 0 and table.concat(info, " ") or "PSP")
    end

    local mode, has_srh = add_frame_mode(t)
    local ip_off, ev = nil, nil
    if udp_off ~= nil then ip_off, ev = add_ip_and_ev(t, src, udp_off, udp_len, bad_udp_len) end
    local short_frame = rep < claimed
    local trim_dscp = trimmed_dscp()

    local off = 0
    local stopped = false
    local trimmed, trim_why = false, nil
    local function have(n, what)
        if off + n <= avail then return true end
        local got = math.max(avail - off, 0)
        if trimmed then
            t:add_proto_expert_info(E.trimmed, string.format("Trimmed sealed data packet (%s): %s absent", trim_why, what))
        elseif off + n <= limit then
            t:add_proto_expert_info(E.not_captured, string.format("%s not captured: %d of %d bytes (snaplen)", what, got, n))
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
    local function tail()
        if ev ~= nil then info[#info + 1] = string.format("EV=0x%08x", ev) end
        if ev ~= nil then summary[#summary + 1] = string.format("EV 0x%08x", ev) end
        if mode ~= nil then summary[#summary + 1] = MODES[mode] .. (has_srh and "+srh" or "") end
        finish()
    end

    -- PSP header (16 bytes: no virtualization cookie in OpenMRC's frames).
    if not have(PSP_HDR, "PSP header") then return tail() end
    local h = t:add(src(base, PSP_HDR), "PSP header")
    local nh, ext_len = src(base, 1):uint(), src(base + 1, 1):uint()
    local b2, b3 = src(base + 2, 1):uint(), src(base + 3, 1):uint()
    local crypt_off, ver, v_bit = b2 % 64, math.floor(b3 / 4) % 16, math.floor(b3 / 2) % 2 == 1
    local odd = {}   -- what is not as OpenMRC sends it
    local nh_item = h:add(FP.next_header, src(base, 1))
    if nh ~= 17 then nh_item:add_proto_expert_info(EP.bad_field, "OpenMRC seals UDP (next header 17)"); odd[#odd + 1] = "next header" end
    local ext_item = h:add(FP.hdr_ext_len, src(base + 1, 1))
    if ext_len ~= 1 then ext_item:add_proto_expert_info(EP.bad_field, "OpenMRC sends 1 (the IV, no cookie)"); odd[#odd + 1] = "hdr ext len" end
    local res_item = h:add(FP.reserved, src(base + 2, 1))
    if b2 >= 64 then res_item:add_proto_expert_info(EP.bad_field, "Reserved bits must be 0") end
    local co_item = h:add(FP.crypt_offset, src(base + 2, 1))
    if crypt_off ~= PSP_CRYPT_OFFSET then
        co_item:add_proto_expert_info(EP.bad_field, "OpenMRC leaves 5 words in the clear (inner UDP header and BTH)")
        odd[#odd + 1] = "crypt offset"
    end
    local fl = h:add(FP.flags, src(base + 3, 1))
    fl:add(FP.s, src(base + 3, 1))
    fl:add(FP.d, src(base + 3, 1))
    local ver_item = fl:add(FP.version, src(base + 3, 1))
    if ver > 1 then ver_item:add_proto_expert_info(EP.bad_field, "OpenMRC uses AES-GCM-128 (0) or AES-GCM-256 (1)") end
    local v_item = fl:add(FP.v, src(base + 3, 1))
    if v_bit then v_item:add_proto_expert_info(EP.bad_field, "OpenMRC sends no virtualization cookie"); odd[#odd + 1] = "V" end
    local one_item = fl:add(FP.one, src(base + 3, 1))
    if b3 % 2 == 0 then one_item:add_proto_expert_info(EP.bad_field, "Byte 3 bit 0 must be 1") end
    local vname = PSP_VERSIONS[ver] or string.format("version %d", ver)
    fl:append_text(" (" .. vname .. ")")
    local spi = src(base + 4, 4):uint()
    local key_sel, epoch, spi_qpn = math.floor(spi / 0x80000000), math.floor(spi / 0x1000000) % 0x80, spi % 0x1000000
    local spi_item = h:add(FP.spi, src(base + 4, 4))
    spi_item:add(FP.spi_key_select, src(base + 4, 4))
    spi_item:add(FP.spi_epoch, src(base + 4, 4))
    spi_item:add(FP.spi_qpn, src(base + 4, 4))
    spi_item:append_text(string.format(" (master key %d, epoch %d, QPN 0x%06x)", key_sel, epoch, spi_qpn))
    local iv = src(base + 8, 8):uint64()   -- UInt64: all 64 bits, a double would round
    h:add(FP.iv, src(base + 8, 8))
    h:append_text(string.format(", %s, SPI 0x%08x, IV %s", vname, spi, tostring(iv)))
    info[#info + 1] = string.format("PSP SPI 0x%08x epoch %d IV %s", spi, epoch, tostring(iv))
    summary[#summary + 1] = string.format("SPI 0x%08x (epoch %d)", spi, epoch)
    summary[#summary + 1] = "IV " .. tostring(iv)
    off = PSP_HDR
    if omrc_psp.prefs.psp_keys ~= "" then
        local k = t:add(src(base + 4, 4), "decryption: not available in this Wireshark's Lua (keys given)")
        k:set_generated()
        k:add_proto_expert_info(EP.decryption, string.format(
            "PSP key file %s given, but this Wireshark's Lua has no AES-GCM: payload not decrypted",
            omrc_psp.prefs.psp_keys))
    end
    if #odd > 0 then
        -- Another PSP user's packet, or a damaged one: where the inner headers
        -- and the cipher text lie is not known; show the rest as bytes.
        t:add_proto_expert_info(EP.bad_field, "Not an OpenMRC sealed frame (" .. table.concat(odd, ", ") ..
            "): the rest is not decoded")
        if avail > off then t:add(FP.undecoded, src(base + off, avail - off)) end
        return tail()
    end

    -- Inner UDP header: the plain frame's, unchanged (clear, authenticated).
    if not have(UDP_HDR, "inner UDP header") then return tail() end
    local iu = t:add(src(base + off, UDP_HDR), "Inner UDP header (the plain frame's)")
    iu:add(FP.inner_sport, src(base + off, 2))
    local dport_item = iu:add(FP.inner_dport, src(base + off + 2, 2))
    local ilen_item = iu:add(FP.inner_len, src(base + off + 4, 2))
    iu:add(FP.inner_csum, src(base + off + 6, 2))
    local inner_dport, inner_len = src(base + off + 2, 2):uint(), src(base + off + 4, 2):uint()
    iu:append_text(string.format(", Src Port %d, Dst Port %d, Len %d", src(base + off, 2):uint(), inner_dport, inner_len))
    if inner_dport ~= omrc.prefs.udp_port then
        dport_item:add_proto_expert_info(EP.bad_field, string.format("OpenMRC frames go to port %d", omrc.prefs.udp_port))
    end
    if not bad_udp_len and inner_len + PSP_OVERHEAD ~= udp_len then
        ilen_item:add_proto_expert_info(E.bad_len, string.format(
            "Inner UDP length %d + %d (outer UDP, PSP, ICV) differs from the outer UDP length %d",
            inner_len, PSP_OVERHEAD, udp_len))
    end
    off = off + UDP_HDR

    -- BTH (clear, authenticated): OpenMRC's view of it, as for a plain frame.
    if not have(BTH_HDR, "BTH") then return tail() end
    local opcode = src(base + off, 1):uint()
    local opname = OPCODES[opcode]
    if opname == nil then
        opname = string.format("opcode 0x%02x", opcode)
        t:add_proto_expert_info(EP.bad_field, "Not an OpenMRC opcode")
    end
    info[#info + 1] = opname
    local qpn, psn, padcnt = add_bth(t, src, base + off, opcode, opname, info)
    summary[#summary + 1] = string.format("%s, QP 0x%06x, PSN 0x%06x", opname, qpn, psn)
    if qpn ~= spi_qpn then
        spi_item:add_proto_expert_info(EP.bad_field, string.format(
            "The SPI names QPN 0x%06x, the BTH DestQP 0x%06x: the SPI is the receiver's", spi_qpn, qpn))
    end
    off = off + BTH_HDR

    -- Encrypted extension headers, payload and pad; ICV; ICRC. A trimmed data
    -- packet keeps the clear part at most; without its ICV it cannot be
    -- authenticated, and a receiver drops it (docs/PROTOCOL.md §12).
    trimmed = is_data(opcode) and (trim_dscp ~= nil or short_frame)
    trim_why = trim_dscp and ("DSCP " .. trim_dscp) or "frame shorter than its UDP length"
    local ct_len = claimed - PSP_CLEAR - PSP_ICV - ICRC_LEN
    if trimmed then
        t:add_proto_expert_info(E.trimmed, string.format(
            "Trimmed sealed data packet (%s): cipher text, ICV and ICRC not delivered (a receiver drops it)",
            trim_why))
        info[#info + 1] = "[TRIMMED]"
    elseif ct_len < 0 then
        t:add_proto_expert_info(E.bad_len, string.format(
            "UDP length %d leaves no room for the 16-byte ICV and the 4-byte ICRC after the BTH", udp_len))
    else
        local ct_item
        if ct_len > 0 and off < avail then
            ct_item = t:add(FP.encrypted, src(base + off, math.min(ct_len, avail - off)))
        else
            ct_item = t:add(src(base + math.min(off, avail), 0), "")
        end
        ct_item:set_text(string.format("Encrypted payload (%d bytes)", ct_len))
        ct_item:add(FP.encrypted_len, ct_len):set_generated()
        if padcnt > 0 then ct_item:append_text(string.format(", pad count %d inside", padcnt)) end
        info[#info + 1] = string.format("Enc=%d", ct_len)
        local icv_off = off + ct_len
        if icv_off + PSP_ICV <= avail then
            t:add(FP.icv, src(base + icv_off, PSP_ICV))
        else
            off = icv_off
            have(PSP_ICV, "ICV")
        end
        -- The ICRC covers the sealed IPv6 packet with a plain frame's masks at
        -- the same byte positions (lib/wire/icrc.cpp does not know PSP): the
        -- "BTH byte 4" mask lands on the SPI's first byte (key select,
        -- epoch). A cheap corruption check only; the ICV authenticates.
        local icrc_rel = icv_off + PSP_ICV
        if icrc_rel + ICRC_LEN <= avail then
            add_icrc(t, src, ip_off, base + icrc_rel, info)
        elseif not stopped then
            off = icrc_rel
            have(ICRC_LEN, "ICRC")
        end
    end
    t:add_proto_expert_info(EP.sealed, string.format("Sealed: %s, SPI 0x%08x (master key %d, epoch %d, QPN 0x%06x), IV %s",
        vname, spi, key_sel, epoch, spi_qpn, tostring(iv)))
    return tail()
end

DissectorTable.get("udp.port"):add(PSP_PORT, omrc_psp)

register_postdissector(omrc)
