#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Decodes the wire_samples pcap with tshark + tools/wireshark/omrc.lua and
# checks every frame against the deterministic values of
# lib/wire/sample_frames.cpp, both Wireshark's own RoCE (infiniband.bth.*)
# fields and the OpenMRC (omrc.*) fields.
#
#   tests/tshark/tshark_decode.sh WIRE_SAMPLES_BIN LUA_FILE
#
# Exit status: 0 pass, 1 fail, 2 usage, 77 skipped (no tshark / no Lua).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 WIRE_SAMPLES_BIN LUA_FILE" >&2
    exit 2
fi
samples_bin=$1
lua_file=$2

if ! command -v tshark >/dev/null 2>&1; then
    echo "SKIP: tshark not found in PATH"
    exit 77
fi
if ! tshark -v 2>/dev/null | grep -q 'with Lua'; then
    echo "SKIP: this tshark is built without Lua support"
    exit 77
fi
[[ -x $samples_bin ]] || { echo "FAIL: $samples_bin is not executable" >&2; exit 1; }
[[ -r $lua_file ]] || { echo "FAIL: $lua_file is not readable" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/omrc_tshark.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Default preferences only: a user's changed prefs (e.g. the RRoCE port or a
# disabled protocol) must not change the result.
export WIRESHARK_CONFIG_DIR=$tmp/wsconfig
mkdir -p "$WIRESHARK_CONFIG_DIR"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# tshark warns when run as root; anything else on stderr that mentions Lua or
# an error (a script that does not load, a bad field name) is a failure.
check_stderr() {
    local f=$1
    if grep -v -e '^Running as user "root"' "$f" | grep -qi -e 'lua' -e 'error' -e 'invalid'; then
        cat "$f" >&2
        fail "tshark reported errors (above)"
    fi
}

tshark_lua() {
    tshark -n -X "lua_script:$lua_file" "$@"
}

pcap=$tmp/samples.pcap
"$samples_bin" "$pcap" >"$tmp/samples.txt"
[[ -s $pcap ]] || fail "wire_samples wrote no pcap"

# ICRC per frame as wire_samples printed it ("... icrc 0x2d810c7e").
mapfile -t icrcs < <(awk '/ icrc 0x/ { for (i = 1; i < NF; ++i) if ($i == "icrc") print $(i + 1) }' "$tmp/samples.txt")
[[ ${#icrcs[@]} -eq 31 ]] || fail "wire_samples listed ${#icrcs[@]} frames, expected 31"

# --- expected values (lib/wire/sample_frames.cpp) -----------------------------
# kAllOpcodes: WRITE_FIRST..WRITE_ONLY_WITH_IMM, ACK, EP_REQUEST, EP_RESPONSE,
# SACK, NACK, PROBE; plain frames 0-11, srv6 frames 12-23, srv6+SRH
# WRITE_MIDDLE frame 24, then OpenMRC's credit mode in plain frames: a
# WRITE_ONLY with a CRTH (25) and a SACK with a CGTH (26); then OpenMRC's
# SEND: a plain SEND_FIRST (27) and an srv6 SEND_ONLY_WITH_IMM of 61 bytes
# (28), both with R_Key 0; then OpenMRC's READ: a plain READ_REQUEST without
# payload (29) and an srv6 READ_RESPONSE_ONLY of 61 bytes with R_Key 0 (30).
ops=(0xC6 0xC7 0xC8 0xC9 0xCA 0xCB 0xD1 0xD8 0xD9 0xDC 0xDD 0xDE)
fields=(
    infiniband.bth.opcode infiniband.bth.destqp infiniband.bth.psn
    omrc.opcode omrc.ev omrc.ev.plane omrc.ev.path omrc.mode omrc.srh ipv6.routing.type
    omrc.meth.msn omrc.reth.rkey omrc.imm
    omrc.aeth.syndrome omrc.sack.cack_psn omrc.sack.bitmap omrc.nack.nack_psn omrc.probe.id omrc.erth.op omrc.eeth.op
    omrc.payload_len omrc.icrc omrc.icrc.status omrc.crth.request omrc.cgth.grant
)
{
    (IFS=,; echo "frame,${fields[*]}")
    for ((i = 0; i < 31; ++i)); do
        if ((i < 24)); then op=$((ops[i % 12])); elif ((i == 24)); then op=0xC7; elif ((i == 25)); then op=0xCA
        elif ((i == 26)); then op=0xDC; elif ((i == 27)); then op=0xC0; elif ((i == 28)); then op=0xC5
        elif ((i == 29)); then op=0xCC; else op=0xD0; fi
        mode=$(((i < 12 || i > 24) && i != 28 && i != 30 ? 0 : 1))
        srh='' rt=''
        if ((mode == 1)); then srh=0; fi
        if ((i == 24)); then srh=1 rt=4; fi
        qpn=$((0x100 + i))
        if ((op == 0xD8 || op == 0xD9)); then qpn=2; fi
        psn=$((0x10 + i))
        if ((op == 0xDE)); then psn=0; fi  # a probe consumes no PSN
        ev=$(((((i % 8) + 1) << 28) | ((i & 0xFFF) << 16) | (0x0A00 + i)))
        msn='' rkey='' imm='' syn='' cack='' bitmap='' nack='' probe='' erth='' eeth='' plen='' req='' grant=''
        if ((i == 25)); then req=$((100000 + i)); fi
        if ((i == 26)); then grant=$((200000 + i)); fi
        if ((op >= 0xC0 && op <= 0xD0)); then
            msn=$((3 + i))
            rkey=$(printf '0x%08x' $((op >= 0xC6 && op <= 0xCC ? 0x5EC0DE00 + i : 0)))
            plen=64
            if ((op == 0xC9 || op == 0xC5 || op == 0xD0)); then plen=61; fi
            if ((op == 0xCC)); then plen=0; fi
        fi
        if ((op == 0xC9 || op == 0xCB || op == 0xC3 || op == 0xC5)); then imm=$(printf '0x%08x' $((0xC0FFEE00 + i))); fi
        if ((op == 0xD1)); then syn=$(printf '0x%02x' $((i % 2 ? 0x62 : 0))); fi
        if ((op == 0xDC)); then cack=$(printf '0x%06x' $((0x10 + i))) bitmap=0xf0f0000000000001; fi
        if ((op == 0xDD)); then nack=$(printf '0x%06x' $((0x20 + i))); fi
        if ((op == 0xDE)); then probe=$(printf '0x%04x' $((0xA500 + i))); fi
        if ((op == 0xD8)); then erth=0; fi  # PORT_STATUS_UPDATE
        if ((op == 0xD9)); then eeth=0; fi  # answering a PORT_STATUS_UPDATE
        printf '%d,%d,0x%06x,%d,0x%02x,0x%08x,%d,%d,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,1,%s,%s\n' \
            $((i + 1)) "$op" "$qpn" "$psn" "$op" "$ev" $((i % 8)) "$i" "$mode" "$srh" "$rt" \
            "$msn" "$rkey" "$imm" "$syn" "$cack" "$bitmap" "$nack" "$probe" "$erth" "$eeth" "$plen" "${icrcs[i]}" \
            "$req" "$grant"
    done
} >"$tmp/expected.csv"

# --- actual values ---------------------------------------------------------------
args=(-e frame.number)
for f in "${fields[@]}"; do args+=(-e "$f"); done
{
    (IFS=,; echo "frame,${fields[*]}")
    tshark_lua -r "$pcap" -T fields -E separator=, -E occurrence=a -E aggregator='|' "${args[@]}" 2>"$tmp/fields.err"
} >"$tmp/actual.csv" || { cat "$tmp/fields.err" >&2; fail "tshark -T fields failed"; }
check_stderr "$tmp/fields.err"

if ! diff -u "$tmp/expected.csv" "$tmp/actual.csv" >"$tmp/fields.diff"; then
    echo "--- field mismatch (- expected, + tshark) ---" >&2
    cat "$tmp/fields.diff" >&2
    echo "--- mismatching fields ---" >&2
    paste -d '\n' "$tmp/expected.csv" "$tmp/actual.csv" | awk -F, '
        NR == 1 { split($0, name, ","); next }
        NR == 2 { next }
        NR % 2 == 1 { split($0, want, ","); n = NF; next }
        {
            m = NF > n ? NF : n
            for (c = 1; c <= m; ++c)
                if (want[c] != $c) printf "frame %s: %s expected \"%s\", got \"%s\"\n", want[1], name[c], want[c], $c
        }' >&2 || true
    fail "decoded fields differ from sample_frames.cpp"
fi

# --- full tree: no Lua errors, no malformed packets, OpenMRC tree everywhere ----
tshark_lua -r "$pcap" -V >"$tmp/verbose.txt" 2>"$tmp/verbose.err" || { cat "$tmp/verbose.err" >&2; fail "tshark -V failed"; }
check_stderr "$tmp/verbose.err"
if grep -n -e 'Malformed' -e 'Lua Error' "$tmp/verbose.txt" >&2; then
    fail "tshark -V shows malformed packets or Lua errors (above)"
fi
trees=$(grep -c '^OpenMRC, ' "$tmp/verbose.txt" || true)
[[ $trees -eq 31 ]] || fail "OpenMRC tree on $trees frames, expected 31"
# Wireshark's own RoCE tree must stay in place under our tree.
ib=$(grep -c '^InfiniBand$' "$tmp/verbose.txt" || true)
[[ $ib -eq 31 ]] || fail "Wireshark's InfiniBand tree on $ib frames, expected 31"
tshark_lua -r "$pcap" -V -Y 'frame.number == 25' >"$tmp/srh.txt" 2>/dev/null
grep -q 'Routing Header for IPv6 (Segment Routing)' "$tmp/srh.txt" ||
    fail "frame 25 (srv6+srh) does not show the IPv6 Segment Routing header"
grep -q '^OpenMRC, WRITE_MIDDLE, .*, srv6+srh$' "$tmp/srh.txt" ||
    fail "frame 25 OpenMRC summary does not say srv6+srh"

# --- truncated captures: expert info, never a Lua error ---------------------------
# Cut every frame at several snap lengths (inside UDP, BTH, the extension
# headers, the payload) and decode them all in one run.
if command -v editcap >/dev/null 2>&1 && command -v mergecap >/dev/null 2>&1; then
    cuts=()
    for n in 66 70 76 80 86 90 96 104 110 120 150 200; do
        editcap -s "$n" "$pcap" "$tmp/cut$n.pcap" >/dev/null 2>&1
        cuts+=("$tmp/cut$n.pcap")
    done
    mergecap -a -w "$tmp/cut.pcap" "${cuts[@]}"
    tshark_lua -r "$tmp/cut.pcap" -V >"$tmp/cut.txt" 2>"$tmp/cut.err" || { cat "$tmp/cut.err" >&2; fail "tshark on truncated frames failed"; }
    check_stderr "$tmp/cut.err"
    if grep -n -e 'Lua Error' -e 'Malformed Packet: OpenMRC' -e 'Malformed Packet: omrc' "$tmp/cut.txt" >&2; then
        fail "truncated frames cause Lua errors or exceptions in omrc.lua (above)"
    fi
    grep -q 'not captured' "$tmp/cut.txt" || fail "truncated frames show no 'not captured' expert info"
else
    echo "note: editcap/mergecap missing, truncation check skipped"
fi

echo "PASS: 31 frames decoded by $(basename "$lua_file") match sample_frames.cpp"
