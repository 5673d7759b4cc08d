#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A capture of a real transfer, decoded by tshark + tools/wireshark/omrc.lua:
# loopback_demo moves 2 MiB of WRITEs over a fabric with 2 % random loss and
# 5 % of data packets trimmed on every link, and writes what the sender and
# the receiver each sent and received (pcap=FILE). Checks: every frame
# decodes (no Lua error, nothing malformed), every untrimmed frame's ICRC is
# good, the trims reach the receiver as trimmed data packets and come back
# to the sender as NACK TRIMMED, retransmissions carry RTX, SACKs carry
# their bitmap and CC state, and the captures hold exactly the frames the
# drivers counted.
#
#   tests/tshark/tshark_capture.sh LOOPBACK_DEMO_BIN LUA_FILE
#
# Exit status: 0 pass, 1 fail, 2 usage, 77 skipped (no tshark / no Lua).
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 LOOPBACK_DEMO_BIN LUA_FILE" >&2
    exit 2
fi
demo=$1
lua_file=$2
command -v tshark >/dev/null 2>&1 || { echo "SKIP: tshark not found in PATH"; exit 77; }
tshark -v 2>/dev/null | grep -q 'with Lua' || { echo "SKIP: this tshark is built without Lua support"; exit 77; }
[[ -x $demo ]] || { echo "FAIL: $demo is not executable" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/omrc_capture.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export WIRESHARK_CONFIG_DIR=$tmp/wsconfig
mkdir -p "$WIRESHARK_CONFIG_DIR"
fail() { echo "FAIL: $*" >&2; exit 1; }
ts() { tshark -n -X "lua_script:$lua_file" "$@" 2>>"$tmp/tshark.err"; }

"$demo" --bytes $((2 << 20)) --msg-kib 256 --loss 0.02 --trim 0.05 --seed 7 --stats \
    --pcap "$tmp/sender.pcap" --pcap-peer "$tmp/receiver.pcap" >"$tmp/demo.txt" ||
    { cat "$tmp/demo.txt" >&2; fail "loopback_demo failed"; }
grep -q 'byte-exact' "$tmp/demo.txt" || fail "the transfer was not byte-exact"

for side in sender receiver; do
    ts -r "$tmp/$side.pcap" -V >"$tmp/$side.txt"
    if grep -n -e 'Malformed Packet' -e 'Lua Error' "$tmp/$side.txt" >&2; then fail "$side capture: malformed frames or Lua errors"; fi
    ts -r "$tmp/$side.pcap" -T fields -E separator=, -e omrc.opcode -e omrc.icrc.status -e omrc.nack.reason \
        -e omrc.bth.rtx -e omrc.sack.bitmap -e omrc.cc.rcvd_bytes >"$tmp/$side.csv"
done
if grep -v -e '^Running as user "root"' "$tmp/tshark.err" | grep -qi -e 'lua' -e 'error'; then
    cat "$tmp/tshark.err" >&2
    fail "tshark reported errors"
fi

count() { awk -F, "$2" "$tmp/$1.csv" | wc -l; }
# Sender: data out (some resent, flagged RTX), SACKs and NACK TRIMMED in, every ICRC good.
data=$(count sender '$1 ~ /^0xc[6-9ab]$/')
rtx=$(count sender '$1 ~ /^0xc[6-9ab]$/ && $4 == 1')
sacks=$(count sender '$1 == "0xdc" && $5 != "" && $6 != ""')
nack_trim=$(count sender '$1 == "0xdd" && $3 == "0x01"')
bad=$(count sender '$2 != "1"')
echo "sender: $data data frames ($rtx resent), $sacks SACKs, $nack_trim NACK TRIMMED, $bad without a good ICRC"
((data >= 512)) || fail "sender sent $data data frames, expected at least 512 (2 MiB of 4 KiB)"
((rtx > 0)) || fail "no retransmission carries RTX"
((sacks > 0)) || fail "no SACK with bitmap and CC state reached the sender"
((nack_trim > 0)) || fail "no NACK TRIMMED reached the sender"
((bad == 0)) || fail "$bad frames at the sender lack a good ICRC"
# Receiver: trimmed data packets recognised as such (no ICRC to check), the rest good.
frames_where() { ts -r "$tmp/$1.pcap" -Y "$2" -T fields -e frame.number | wc -l; }
trimmed=$(frames_where receiver 'omrc.trimmed')
untrimmed_bad=$(count receiver '$1 !~ /^0xc[6-9ab]$/ && $2 != "1"')
nacks_sent=$(count receiver '$1 == "0xdd"')
echo "receiver: $trimmed trimmed data packets, $nacks_sent NACKs sent, $untrimmed_bad control frames without a good ICRC"
((trimmed > 0)) || fail "no trimmed data packet in the receiver's capture"
# A trimmed packet keeps the IPv6 and UDP lengths of the whole packet, which
# Wireshark's UDP decoder notes as a bad length: on trimmed packets only.
bad_len_rx=$(frames_where receiver '_ws.expert.message contains "Bad length value"')
bad_len_rx_untrimmed=$(frames_where receiver '_ws.expert.message contains "Bad length value" && !omrc.trimmed')
bad_len_tx=$(frames_where sender '_ws.expert.message contains "Bad length value"')
((bad_len_tx == 0)) || fail "$bad_len_tx frames at the sender have a bad UDP length"
((bad_len_rx_untrimmed == 0)) || fail "$bad_len_rx_untrimmed untrimmed frames at the receiver have a bad UDP length"
echo "receiver: $bad_len_rx trimmed packets keep their untrimmed UDP length (Wireshark notes it)"
((untrimmed_bad == 0)) || fail "$untrimmed_bad control frames at the receiver lack a good ICRC"
((nacks_sent > 0)) || fail "the receiver sent no NACK"
# The capture holds every frame the sender's driver carried.
frames=$(tshark -r "$tmp/sender.pcap" -T fields -e frame.number 2>/dev/null | wc -l)
counted=$(python3 - "$tmp/demo.txt" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
doc = json.loads(text[text.index('{'):])
d = doc["driver"]
print(d["counters"]["capture.frames"], d["tx_frames"], d["rx_frames"])
PY
)
read -r captured tx rx <<<"$counted"
echo "sender capture: $frames frames; capture.frames $captured; driver tx $tx + rx $rx"
((frames == captured)) || fail "the pcap holds $frames frames, the capture counted $captured"
((captured == tx + rx)) || fail "the capture saw $captured frames, the driver carried $((tx + rx))"
echo "PASS: a lossy, trimmed transfer decodes frame by frame"
