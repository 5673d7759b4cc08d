#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Decodes the wire_samples pcap with tshark + tools/wireshark/omrc.lua and
# checks every frame against the deterministic values of
# lib/wire/sample_frames.cpp, both Wireshark's own RoCE (infiniband.bth.*)
# fields and the OpenMRC (omrc.*) fields; then the three sealed (PSP,
# encrypted mode) frames wire_samples --psp appends, against the values of
# examples/wire_samples.cpp: the PSP header and SPI fields (omrc_psp.*), the
# clear BTH, the cipher text's length, the ICRC, no malformed packet, and the
# key file preference's note. Where python3 has the `cryptography` package,
# the sealed frames are also opened with it (an AES-GCM and PSP key
# derivation other than the library's) back to the plain frames' bytes.
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
"$samples_bin" --psp "$pcap" >"$tmp/samples.txt"
[[ -s $pcap ]] || fail "wire_samples wrote no pcap"

# ICRC per frame as wire_samples printed it ("... icrc 0x2d810c7e").
mapfile -t icrcs < <(awk '/ icrc 0x/ { for (i = 1; i < NF; ++i) if ($i == "icrc") print $(i + 1) }' "$tmp/samples.txt")
[[ ${#icrcs[@]} -eq 34 ]] || fail "wire_samples listed ${#icrcs[@]} frames, expected 31 plain + 3 sealed"

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
    tshark_lua -r "$pcap" -Y 'frame.number <= 31' -T fields -E separator=, -E occurrence=a -E aggregator='|' "${args[@]}" 2>"$tmp/fields.err"
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
# The plain frames' tree on the 31 plain frames only: a sealed frame's last
# UDP header is port 1000, neither our postdissector nor Wireshark's RoCE
# dissector takes it; the OpenMRC PSP tree is on the 3 sealed ones.
trees=$(grep -c '^OpenMRC, ' "$tmp/verbose.txt" || true)
[[ $trees -eq 31 ]] || fail "OpenMRC tree on $trees frames, expected 31"
# Wireshark's own RoCE tree must stay in place under our tree.
ib=$(grep -c '^InfiniBand$' "$tmp/verbose.txt" || true)
[[ $ib -eq 31 ]] || fail "Wireshark's InfiniBand tree on $ib frames, expected 31"
psp_trees=$(grep -c '^OpenMRC PSP, ' "$tmp/verbose.txt" || true)
[[ $psp_trees -eq 3 ]] || fail "OpenMRC PSP tree on $psp_trees frames, expected 3"
tshark_lua -r "$pcap" -V -Y 'frame.number == 25' >"$tmp/srh.txt" 2>/dev/null
grep -q 'Routing Header for IPv6 (Segment Routing)' "$tmp/srh.txt" ||
    fail "frame 25 (srv6+srh) does not show the IPv6 Segment Routing header"
grep -q '^OpenMRC, WRITE_MIDDLE, .*, srv6+srh$' "$tmp/srh.txt" ||
    fail "frame 25 OpenMRC summary does not say srv6+srh"

# --- sealed frames (wire_samples --psp, examples/wire_samples.cpp kSealed) -------
# Frames 32-34 seal sample frames 4 (plain WRITE_ONLY), 9 (plain SACK) and 17
# (srv6 WRITE_ONLY_WITH_IMM) as Engine::seal_frame does. SPI = key select << 31
# | epoch << 24 | the receiver's QPN (= BTH DestQP); the last IV needs all 64
# bits. Everything after the BTH is cipher text: no METH, no payload length,
# no infiniband.bth.* (Wireshark's RoCE dissector never sees the inner BTH).
psp_fields=(
    omrc_psp.next_header omrc_psp.hdr_ext_len omrc_psp.crypt_offset omrc_psp.s omrc_psp.d omrc_psp.version omrc_psp.v
    omrc_psp.spi omrc_psp.spi.key_select omrc_psp.spi.epoch omrc_psp.spi.qpn omrc_psp.iv
    omrc_psp.inner_udp.dstport omrc_psp.inner_udp.length
    omrc.opcode omrc.bth.destqp omrc.bth.psn omrc.ev omrc.mode omrc.srh ipv6.routing.type
    omrc_psp.encrypted_len omrc.icrc omrc.icrc.status infiniband.bth.opcode omrc.meth.msn omrc.payload_len
)
# Plain frame sizes as wire_samples listed them (" N name BYTES bytes ...").
mapfile -t sizes < <(awk '$4 == "bytes" { print $3 }' "$tmp/samples.txt")
[[ ${#sizes[@]} -eq 34 ]] || fail "wire_samples listed ${#sizes[@]} frame sizes, expected 34"
samples=(4 9 17) selects=(0 1 0) epochs=(3 3 127) ivs=(1 2 81985529216486895) versions=(1 0 1)
{
    (IFS=,; echo "frame,${psp_fields[*]}")
    for ((k = 0; k < 3; ++k)); do
        i=${samples[k]}
        op=$((ops[i % 12]))
        qpn=$((0x100 + i)) psn=$((0x10 + i))
        ev=$(((((i % 8) + 1) << 28) | ((i & 0xFFF) << 16) | (0x0A00 + i)))
        spi=$(((selects[k] << 31) | (epochs[k] << 24) | qpn))
        # The IPv6 header before UDP: at 14 (plain), 54 (srv6: after the outer IPv6 header).
        mode=0 srh='' rt='' ip=14
        if ((i >= 12)); then mode=1 srh=0 ip=54; fi
        plain_bytes=${sizes[i]}
        # Sealing adds outer UDP + PSP + ICV (40 bytes); the UDP length grows by as much.
        ((${sizes[31 + k]} == plain_bytes + 40)) || fail "sealed frame $((32 + k)): ${sizes[31 + k]} bytes, plain $plain_bytes + 40"
        inner_len=$((plain_bytes - ip - 40))
        enc=$((plain_bytes - ip - 40 - 8 - 12 - 4))  # extension headers + payload + pad
        printf '%d,17,1,5,0,0,%d,0,0x%08x,%d,%d,0x%08x,%s,4791,%d,0x%02x,0x%06x,0x%06x,0x%08x,%d,%s,%s,%d,%s,1,,,\n' \
            $((32 + k)) "${versions[k]}" "$spi" "${selects[k]}" "${epochs[k]}" "$qpn" "${ivs[k]}" "$inner_len" \
            "$op" "$qpn" "$psn" "$ev" "$mode" "$srh" "$rt" "$enc" "${icrcs[31 + k]}"
    done
} >"$tmp/psp_expected.csv"
psp_args=(-e frame.number)
for f in "${psp_fields[@]}"; do psp_args+=(-e "$f"); done
{
    (IFS=,; echo "frame,${psp_fields[*]}")
    tshark_lua -r "$pcap" -Y 'frame.number > 31' -T fields -E separator=, -E occurrence=a -E aggregator='|' \
        "${psp_args[@]}" 2>"$tmp/psp_fields.err"
} >"$tmp/psp_actual.csv" || { cat "$tmp/psp_fields.err" >&2; fail "tshark -T fields (sealed frames) failed"; }
check_stderr "$tmp/psp_fields.err"
if ! diff -u "$tmp/psp_expected.csv" "$tmp/psp_actual.csv" >&2; then
    fail "sealed frames' decoded fields differ from wire_samples.cpp (above: - expected, + tshark)"
fi
# The listing's SPI agrees with the one tshark decoded (both from psp_spi()).
for ((k = 0; k < 3; ++k)); do
    want=$(awk -F, -v n=$((32 + k)) '$1 == n { print $9 }' "$tmp/psp_actual.csv")
    grep -q "^$((32 + k)) psp/.* spi $want " "$tmp/samples.txt" || fail "frame $((32 + k)): wire_samples did not list spi $want"
done

# The tree: version names, the cipher text's size, ICV, ICRC good; the column
# summary; no warning of ours on any frame (a bad field, length, ICRC, or
# anything not captured).
tshark_lua -r "$pcap" -V -Y 'frame.number == 32' >"$tmp/psp32.txt" 2>/dev/null
tshark_lua -r "$pcap" -V -Y 'frame.number == 33' >"$tmp/psp33.txt" 2>/dev/null
for want in '^OpenMRC PSP, SPI 0x03000104 (epoch 3), IV 1, WRITE_ONLY, QP 0x000104, PSN 0x000014, EV 0x50040a04, plain$' \
    'Version: AES-GCM-256 (1)' 'SPI: 0x03000104 (master key 0, epoch 3, QPN 0x000104)' 'IV (the SA.s transmit counter): 1$' \
    'Inner UDP header (the plain frame.s), Src Port 20484, Dst Port 4791, Len 112' \
    'Base Transport Header, WRITE_ONLY, QP 0x000104, PSN 0x000014' '^    Encrypted payload (88 bytes)$' \
    '^    ICV (AES-GCM tag): [0-9a-f]\{32\}$' 'ICRC: 0xa39247fc \[correct\]'; do
    grep -q -e "$want" "$tmp/psp32.txt" || fail "frame 32 -V shows no line matching: $want"
done
grep -q 'Version: AES-GCM-128 (0)' "$tmp/psp33.txt" || fail "frame 33 does not name AES-GCM-128"
tshark_lua -r "$pcap" -Y 'frame.number > 31' >"$tmp/psp_cols.txt" 2>/dev/null
for want in 'OpenMRC/PSP 206 PSP SPI 0x03000104 epoch 3 IV 1 WRITE_ONLY QP=0x000104 PSN=0x000014 .* Enc=88 EV=0x50040a04' \
    'PSP SPI 0x83000109 epoch 3 IV 2 SACK QP=0x000109 PSN=0x000019 .*Enc=36' \
    'PSP SPI 0x7f000111 epoch 127 IV 81985529216486895 WRITE_ONLY_WITH_IMM QP=0x000111 PSN=0x000021 .*Enc=92 EV=0x20110a11'; do
    grep -q -e "$want" "$tmp/psp_cols.txt" || { cat "$tmp/psp_cols.txt" >&2; fail "no summary line matching: $want"; }
done
ours='omrc_psp.bad_field || omrc.bad_length || omrc.truncated || omrc.not_captured || omrc.bad_icrc || omrc.bad_field || omrc.bad_ev || omrc.no_ipv6 || _ws.malformed'
bad=$(tshark_lua -r "$pcap" -Y "$ours" 2>/dev/null | wc -l)
((bad == 0)) || { tshark_lua -r "$pcap" -Y "$ours" -V >&2; fail "$bad frames carry OpenMRC warnings or are malformed (above)"; }
sealed_note=$(tshark_lua -r "$pcap" -Y 'omrc_psp.sealed' 2>/dev/null | wc -l)
((sealed_note == 3)) || fail "the 'sealed' expert note is on $sealed_note frames, expected 3"

# A key file: accepted, and the tree says that this Lua cannot decrypt.
echo "(test keys: never read)" >"$tmp/psp.keys"
nokeys='decryption: not available in this Wireshark.s Lua (keys given)'
! grep -q "$nokeys" "$tmp/psp32.txt" || fail "the no-decryption note shows without a key file"
tshark_lua -o "omrc_psp.psp_keys:$tmp/psp.keys" -r "$pcap" -V -Y 'frame.number > 31' >"$tmp/pspkeys.txt" 2>"$tmp/pspkeys.err" ||
    { cat "$tmp/pspkeys.err" >&2; fail "tshark with omrc_psp.psp_keys failed"; }
check_stderr "$tmp/pspkeys.err"
notes=$(grep -c "$nokeys" "$tmp/pspkeys.txt" || true)
((notes == 3)) || fail "the key file note is on $notes sealed frames, expected 3"

# Real cipher text: another AES-GCM and PSP key derivation (SP 800-108 KBKDF,
# AES-CMAC, label "Pv0"/"Pv1", context the SPI) opens each sealed frame under
# wire_samples' test master keys (0x00..0x1f for key select 0, 0x20..0x3f for
# 1) to the plain frame's bytes after its BTH.
if python3 -c 'import cryptography.hazmat.primitives.kdf.kbkdf' >/dev/null 2>&1; then
    python3 - "$pcap" <<'PY' || fail "a sealed frame does not open to its plain frame (above)"
import struct, sys
from cryptography.hazmat.primitives.ciphers import algorithms
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.kbkdf import KBKDFCMAC, CounterLocation, Mode

data = open(sys.argv[1], "rb").read()
off, recs = 24, []
while off < len(data):
    caplen = struct.unpack_from("<I", data, off + 8)[0]
    recs.append(data[off + 16:off + 16 + caplen])
    off += 16 + caplen
errs = 0
for frame, sample, ip in ((32, 4, 14), (33, 9, 14), (34, 17, 54)):
    f, p = recs[frame - 1], recs[sample]
    psp = ip + 40 + 8
    spi, iv = struct.unpack_from(">IQ", f, psp + 4)
    ver = (f[psp + 3] >> 2) & 0x0F
    sel = spi >> 31
    kdf = KBKDFCMAC(algorithm=algorithms.AES, mode=Mode.CounterMode, length=16 if ver == 0 else 32, rlen=4, llen=4,
                    location=CounterLocation.BeforeFixed, label=b"Pv%d" % ver, context=struct.pack(">I", spi), fixed=None)
    key = kdf.derive(bytes(range(32 * sel, 32 * sel + 32)))
    try:
        plain = AESGCM(key).decrypt(f[psp + 4:psp + 16], f[psp + 36:len(f) - 4], f[psp:psp + 36])
    except Exception as e:
        print(f"frame {frame}: does not open: {type(e).__name__}", file=sys.stderr)
        errs += 1
        continue
    if plain != p[ip + 40 + 8 + 12:len(p) - 4]:
        print(f"frame {frame}: opens to other bytes than sample frame {sample + 1}'s", file=sys.stderr)
        errs += 1
sys.exit(1 if errs else 0)
PY
    opened="opened with python3-cryptography"
else
    opened="not opened (python3 has no cryptography package)"
    echo "note: python3 cryptography missing, the sealed frames' cipher text is not checked"
fi

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
    # Sealed frames cut in the PSP header, in the inner UDP header, and before the ICV.
    for what in 'PSP header' 'inner UDP header' 'ICV'; do
        grep -q "$what not captured" "$tmp/cut.txt" || fail "cut sealed frames show no '$what not captured' expert info"
    done
else
    echo "note: editcap/mergecap missing, truncation check skipped"
fi

echo "PASS: 31 frames decoded by $(basename "$lua_file") match sample_frames.cpp; 3 sealed frames match wire_samples.cpp ($opened)"
