#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# omrc-perf smoke test: server and client over the udp driver on ::1 for a
# few sizes (write_bw, write_lat, send_bw, send_lat, read_bw, read_lat), checking exit codes, the perftest table
# and the JSON report; the in-process loopback mode; devices from
# configuration files (examples/configs/); and that a client facing no
# server, a server that is not omrc-perf, or a silent one, and a bad
# configuration file fail quickly. Given omrc-pcap, also its opening of an
# encrypted --cm capture (and tshark's dissector on what it wrote).
# Usage: perf_smoke.sh <omrc-perf> [<omrc-pcap>]
set -uo pipefail
PERF=${1:?usage: perf_smoke.sh <omrc-perf> [<omrc-pcap>]}
PCAPTOOL=${2:-}
CONFIGS=$(cd "$(dirname "$0")/../../examples/configs" && pwd)
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
pass() { echo "ok: $*"; }

json_check() {  # json_check FILE PYTHON-EXPRESSION-ON-d
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

# Starts a server on a free port; sets PORT and SERVER_PID. Args: test, extra options.
start_server() {
  local test=$1; shift
  for attempt in 1 2 3 4 5; do
    PORT=$((20000 + RANDOM % 30000))
    "$PERF" "$test" -p "$PORT" "$@" >"$TMP/server.log" 2>&1 &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    for _ in $(seq 1 100); do
      grep -q "Waiting for a client" "$TMP/server.log" 2>/dev/null && return 0
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.05
    done
    kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null
  done
  echo "cannot start a server: $(cat "$TMP/server.log")" >&2
  return 1
}

# Waits at most 30 s for the server to exit (then kills it); returns its status (124 when killed).
wait_server() {
  for _ in $(seq 1 300); do
    kill -0 "$SERVER_PID" 2>/dev/null || { wait "$SERVER_PID"; return; }
    sleep 0.1
  done
  kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null
  return 124
}

run_pair() {  # run_pair TEST SIZE ITERS HEADER-REGEX
  local test=$1 size=$2 iters=$3 header=$4
  start_server "$test" --planes 2 --out_json "$TMP/server.json" || { fail "$test $size: server did not start"; return; }
  timeout 60 "$PERF" "$test" ::1 -p "$PORT" --planes 2 -s "$size" -n "$iters" --out_json "$TMP/client.json" \
    >"$TMP/client.log" 2>&1
  local crc=$?
  wait_server
  local src=$?
  if [[ $crc -ne 0 || $src -ne 0 ]]; then
    fail "$test $size: client exit $crc, server exit $src"; cat "$TMP/client.log" "$TMP/server.log" >&2; return
  fi
  for log in client server; do
    grep -Eq "$header" "$TMP/$log.log" || { fail "$test $size: no table header in the $log output"; cat "$TMP/$log.log" >&2; }
    grep -Eq "^ $size +$iters " "$TMP/$log.log" || { fail "$test $size: no '$size $iters' row in the $log output"; cat "$TMP/$log.log" >&2; }
  done
  if [[ $test == *_bw ]]; then
    json_check "$TMP/client.json" "d['test']=='$test' and d['driver']=='udp' and d['results'][0]['bytes']==$size and d['results'][0]['iterations']==$iters and 0 < d['results'][0]['bw_avg'] <= d['results'][0]['bw_peak'] and d['results'][0]['msg_rate_mpps'] > 0" \
      || fail "$test $size: client JSON"
  else
    json_check "$TMP/client.json" "d['test']=='$test' and d['results'][0]['bytes']==$size and d['results'][0]['iterations']==$iters and 0 < d['results'][0]['t_min_us'] <= d['results'][0]['t_typical_us'] <= d['results'][0]['p99_us'] <= d['results'][0]['p999_us'] <= d['results'][0]['t_max_us']" \
      || fail "$test $size: client JSON"
  fi
  json_check "$TMP/server.json" "d['results'][0]['bytes']==$size and d['results'][0]['iterations']==$iters" \
    || fail "$test $size: server JSON"
  pass "$test $size bytes x $iters over udp"
}

BW_HEADER='#bytes +#iterations +BW peak\[MB/sec\] +BW average\[MB/sec\] +MsgRate\[Mpps\]'
LAT_HEADER='#bytes #iterations +t_min\[usec\] +t_max\[usec\] +t_typical\[usec\] +t_avg\[usec\] +t_stdev\[usec\] +99% percentile\[usec\] +99.9% percentile\[usec\]'
for size in 64 4096 65536; do run_pair write_bw $size 200 "$BW_HEADER"; done
for size in 8 8192; do run_pair write_lat $size 200 "$LAT_HEADER"; done
# SEND / RECV (docs/PROTOCOL.md §11.9): the server keeps receives posted.
for size in 64 65536; do run_pair send_bw $size 200 "$BW_HEADER"; done
run_pair send_lat 8 200 "$LAT_HEADER"
# RDMA READ (docs/PROTOCOL.md §11.10): the client reads the server's buffer.
for size in 64 65536; do run_pair read_bw $size 200 "$BW_HEADER"; done
run_pair read_lat 8 200 "$LAT_HEADER"

# --cm: the QPs connected by the connection manager over the fabric (docs/PROTOCOL.md §13), plain and
# encrypted (one master key file for both ends); the client's memory check and both ends' CM counters.
cm_pair() {  # cm_pair TEST LABEL SIZE EXTRA-OPTIONS...
  local test=$1 label=$2 size=$3; shift 3
  start_server "$test" --planes 2 --stats "$TMP/server.stats" "$@" || { fail "$label: server did not start"; return; }
  # -t 32: 200 messages over 4 QPs reach every QP (the default 128 outstanding would fill two).
  timeout 60 "$PERF" "$test" ::1 -p "$PORT" --planes 2 -s "$size" -n 200 -q 4 -t 32 --cm --stats "$TMP/client.stats" "$@" \
    >"$TMP/client.log" 2>&1
  local crc=$?
  wait_server
  local src=$?
  if [[ $crc -ne 0 || $src -ne 0 ]]; then
    fail "$label: client exit $crc, server exit $src"; cat "$TMP/client.log" "$TMP/server.log" >&2; return
  fi
  # Four QPs: at least a REQ, the REQ again with its cookie, and the RTU each from the client.
  json_check "$TMP/client.stats" "d['engine']['cm_frames_sent'] >= 12 and d['engine']['cm_frames_received'] >= 8" \
    || fail "$label: the client's CM counters"
  json_check "$TMP/server.stats" "d['engine']['cm_frames_sent'] >= 8 and d['engine']['rx_drops']['cm_invalid'] == 0" \
    || fail "$label: the server's CM counters"
  json_check "$TMP/client.stats" "len(d['qps']) == 4 and all(q['stats']['data_pkts_sent'] > 0 for q in d['qps'])" \
    || fail "$label: not every QP carried data"
  if [[ " $* " == *" --encrypt "* ]]; then
    # Every QP's frames sealed by the client and opened by the server, none refused.
    json_check "$TMP/client.stats" "all(q['stats']['psp_sealed'] > 0 and q['stats']['psp_opened'] > 0 for q in d['qps'])" \
      || fail "$label: the client's QPs did not seal and open"
    json_check "$TMP/server.stats" "all(q['stats']['psp_opened'] > 0 for q in d['qps']) and d['engine']['rx_drops']['psp_bad_tag'] == 0 and d['engine']['rx_drops']['psp_unknown_spi'] == 0" \
      || fail "$label: the server's QPs did not open every frame"
  fi
  pass "$label"
}
cm_pair write_bw "write_bw --cm --check (4 QPs)" 65536 --check
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/master.key"
cm_pair write_bw "write_bw --cm --encrypt aes-gcm-256 --check (4 QPs)" 65536 --check --encrypt aes-gcm-256 \
  --master-key-file "$TMP/master.key"
cm_pair send_bw "send_bw --cm --check (4 QPs)" 4096 --check

# An encrypted --cm transfer captured at the server (--pcap: every frame it
# sends and receives), opened by omrc-pcap with the master key file: every
# sealed frame opens (the connection keys from the nonces of the captured
# REQs and REPs), none without the key or with another; the capture written
# again in plain form parses whole, and the dissector shows its WRITEs.
if [[ -n $PCAPTOOL ]]; then
  if start_server write_bw --planes 2 --encrypt aes-gcm-256 --master-key-file "$TMP/master.key" --pcap "$TMP/sealed.pcap" &&
     timeout 60 "$PERF" write_bw ::1 -p "$PORT" --planes 2 -s 8192 -n 50 -q 2 -t 8 --cm --check --encrypt aes-gcm-256 \
       --master-key-file "$TMP/master.key" >"$TMP/client.log" 2>&1 && wait_server; then
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/other.key"
    "$PCAPTOOL" -q --json "$TMP/sealed.pcap" | tail -1 >"$TMP/nokey.json"
    "$PCAPTOOL" -q --json "$TMP/sealed.pcap" --master-key-file "$TMP/other.key" | tail -1 >"$TMP/wrongkey.json"
    "$PCAPTOOL" -q --json "$TMP/sealed.pcap" --master-key-file "$TMP/master.key" --write-opened "$TMP/opened.pcap" |
      tail -1 >"$TMP/key.json"
    "$PCAPTOOL" -q --json "$TMP/opened.pcap" | tail -1 >"$TMP/opened.json"
    json_check "$TMP/nokey.json" "d['summary']['sealed'].get('no_key', 0) > 50 and list(d['summary']['sealed']) == ['no_key']" \
      || fail "omrc-pcap without a key: $(cat "$TMP/nokey.json")"
    json_check "$TMP/wrongkey.json" "list(d['summary']['sealed']) == ['bad_tag']" \
      || fail "omrc-pcap with another key: $(cat "$TMP/wrongkey.json")"
    json_check "$TMP/key.json" "list(d['summary']['sealed']) == ['opened'] and d['summary']['not_parsed'] == 0 and d['summary']['icrc_ok'] == d['summary']['frames'] and d['summary']['opcodes']['WRITE_FIRST']['frames'] > 0 and d['summary']['opcodes']['CM']['frames'] > 0" \
      || fail "omrc-pcap with the key: $(cat "$TMP/key.json")"
    json_check "$TMP/opened.json" "d['summary']['sealed'] == {} and d['summary']['not_parsed'] == 0 and d['summary']['icrc_ok'] == d['summary']['frames']" \
      || fail "omrc-pcap on the opened capture: $(cat "$TMP/opened.json")"
    if command -v tshark >/dev/null 2>&1 && tshark -v 2>/dev/null | grep -q 'with Lua'; then
      lua=$(cd "$(dirname "$0")/../../tools/wireshark" && pwd)/omrc.lua
      WIRESHARK_CONFIG_DIR=$TMP/ws tshark -n -X "lua_script:$lua" -r "$TMP/opened.pcap" -Y 'omrc.opcode == 0xc6' \
        -T fields -e omrc.reth.rkey -e omrc_psp.spi 2>/dev/null >"$TMP/tshark.txt"
      if [[ -s $TMP/tshark.txt ]] && awk -F'\t' '$1 == "" || $2 != "" { bad = 1 } END { exit bad }' "$TMP/tshark.txt"; then
        pass "omrc-pcap --write-opened: tshark's dissector shows the WRITEs' RETH, no PSP header left"
      else
        fail "tshark on the opened capture: $(head -3 "$TMP/tshark.txt")"
      fi
    fi
    pass "omrc-pcap --master-key-file: an encrypted --cm capture opened"
  else
    fail "the encrypted --cm capture run"; cat "$TMP/client.log" "$TMP/server.log" >&2
  fi
fi

# Both ends in one process over the loopback driver.
if timeout 60 "$PERF" write_bw --driver loopback -n 100 -s 4096 >"$TMP/lo.log" 2>&1 && grep -Eq "^ 4096 +100 " "$TMP/lo.log"; then
  pass "write_bw over loopback"
else
  fail "write_bw over loopback"; cat "$TMP/lo.log" >&2
fi

# Devices from a configuration file: udp.toml's omrc0 (server, ports 14800..14863) and omrc1 (client,
# 15808..15871), 4 planes each, the file's QP attributes (128 EVs, adaptive, MTU 4096).
udp_port_taken() {  # udp_port_taken PORT: true while some socket holds [::1]:PORT
  python3 -c "import socket,sys; s=socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
try: s.bind(('::1', $1))
except OSError: sys.exit(0)
sys.exit(1)"
}
# config_run LABEL CFG HOOK [client options...]: write_bw, 64 KiB × 200, from CFG's omrc1 (client) to
# its omrc0 (server, JSON in server.json); HOOK runs once the server is up. Fails (and returns 1) on a
# server that does not start or an exit status other than 0; checks the client's result row.
config_run() {
  local label=$1 cfg=$2 hook=$3
  shift 3
  if ! start_server write_bw --config "$cfg" --device omrc0 --out_json "$TMP/server.json"; then
    fail "$label: server did not start"; return 1
  fi
  "$hook"
  timeout 60 "$PERF" write_bw ::1 -p "$PORT" --config "$cfg" --device omrc1 -s 65536 -n 200 "$@" \
    >"$TMP/client.log" 2>&1
  local crc=$?
  wait_server
  local src=$?
  if [[ $crc -ne 0 || $src -ne 0 ]]; then
    fail "$label: client exit $crc, server exit $src"; cat "$TMP/client.log" "$TMP/server.log" >&2; return 1
  fi
  grep -Eq "^ 65536 +200 " "$TMP/client.log" || { fail "$label: no '65536 200' row"; cat "$TMP/client.log" >&2; }
}
udp_ports_held() {
  udp_port_taken 14800 && udp_port_taken 14863 || fail "--config: the server does not hold udp.toml's ports 14800..14863"
}
config_pair() {
  config_run --config "$CONFIGS/udp.toml" udp_ports_held --out_json "$TMP/client.json" || return
  grep -Eq "Config +: .*/udp.toml \(device omrc0, frame mode plain\)" "$TMP/server.log" || { fail "--config: server header"; cat "$TMP/server.log" >&2; }
  grep -Eq "Config +: .*/udp.toml \(device omrc1, frame mode plain\)" "$TMP/client.log" || { fail "--config: client header"; cat "$TMP/client.log" >&2; }
  json_check "$TMP/client.json" "d['driver']=='udp' and d['device']=='omrc1' and d['planes']==4 and d['evs']==128 and d['policy']=='adaptive' and d['mtu']==4096 and d['results'][0]['bw_avg'] > 0" \
    || fail "--config: client JSON"
  json_check "$TMP/server.json" "d['device']=='omrc0' and d['planes']==4 and d['results'][0]['iterations']==200" \
    || fail "--config: server JSON"
  pass "write_bw between udp.toml's omrc0 and omrc1"
}
config_pair

# Receiver credit over the udp driver: both devices of udp.toml with
# [defaults.qp.cc] algorithm = "credit" (its request and grant ride in the
# frame bytes, docs/PROTOCOL.md §11.8). The client's QP must have sent on
# grants, with its credit gate on.
credit_pair() {
  local cfg=$TMP/udp-credit.toml
  sed 's/^\[defaults.qp\]$/[defaults.qp.cc]\nalgorithm = "credit"\n\n[defaults.qp]/' "$CONFIGS/udp.toml" >"$cfg"
  grep -q '^algorithm = "credit"$' "$cfg" || { fail "credit: could not write $cfg"; return; }
  config_run credit "$cfg" true --stats "$TMP/credit-stats.json" || return
  json_check "$TMP/credit-stats.json" "any(q['cc']=='credit' and not q['credit']['off'] and q['credit']['granted_bytes'] > 0 and q['credit']['sent_scheduled_bytes'] > q['credit']['sent_unscheduled_bytes'] and q['stats']['data_bytes_sent'] >= 200 * 65536 for q in d['qps'])" \
    || { fail "credit: the client's stats show no QP that sent on grants"; python3 -m json.tool "$TMP/credit-stats.json" | grep -A8 '"credit"' >&2; }
  pass "write_bw under receiver credit between udp.toml's omrc0 and omrc1"
}
credit_pair

# A loopback device from a file: both ends in one process, the file's fabric (4 planes).
if timeout 60 "$PERF" write_lat --config "$CONFIGS/loopback.toml" -n 100 -s 8 >"$TMP/lo-cfg.log" 2>&1 &&
   grep -Eq "^ 8 +100 " "$TMP/lo-cfg.log" && grep -Eq "Planes +: 4" "$TMP/lo-cfg.log"; then
  pass "write_lat over loopback.toml"
else
  fail "write_lat over loopback.toml"; cat "$TMP/lo-cfg.log" >&2
fi

# --stats-interval: one per-plane line on stderr per interval while write_bw runs.
if timeout 60 "$PERF" write_bw --driver loopback --planes 4 -D 1 -s 4096 --stats-interval 200 >"$TMP/iv.log" 2>"$TMP/iv.err"; then
  lines=$(grep -Ec '^stats [0-9]+\.[0-9]{3}s \| p0 [0-9.]+ Gb/s rtx [0-9]+ lost [0-9]+ ev [0-9]+/[0-9]+ \| p1 .* \| p3 ' "$TMP/iv.err")
  moving=$(grep -Ec '\| p0 [0-9]*[1-9][0-9]*\.[0-9]+ Gb/s|\| p0 0\.[0-9]*[1-9][0-9]* Gb/s' "$TMP/iv.err")
  if ((lines >= 3 && moving >= 3)); then pass "--stats-interval: $lines per-plane lines"; else
    fail "--stats-interval: $lines lines, $moving with traffic"; cat "$TMP/iv.err" >&2; fi
else
  fail "--stats-interval run"; cat "$TMP/iv.log" "$TMP/iv.err" >&2
fi

# expect_quick_failure NAME MAX-SECONDS REGEX CMD...: non-zero exit, in time, with that message.
expect_quick_failure() {
  local name=$1 max=$2 regex=$3; shift 3
  local t0=$SECONDS
  timeout 30 "$@" >"$TMP/bad.log" 2>&1
  local rc=$? took=$((SECONDS - t0))
  if [[ $rc -ne 1 ]]; then fail "$name: exit $rc (not 1)"; cat "$TMP/bad.log" >&2; return; fi
  if ((took > max)); then fail "$name: took ${took}s"; return; fi
  grep -Eq "$regex" "$TMP/bad.log" || { fail "$name: no '$regex' in the error"; cat "$TMP/bad.log" >&2; return; }
  pass "$name: exit $rc after ${took}s"
}

# Nothing listens on this port.
DEAD=$((20000 + RANDOM % 30000))
while python3 -c "import socket,sys; s=socket.socket(socket.AF_INET6); sys.exit(0 if s.connect_ex(('::1',$DEAD)) else 1)"; [[ $? -ne 0 ]]; do DEAD=$((DEAD + 1)); done
expect_quick_failure "no server" 5 "cannot connect" "$PERF" write_bw ::1 -p "$DEAD"

# A server that is not omrc-perf, and one that accepts and stays silent.
fake_server() {  # fake_server MODE → sets FAKE_PORT
  python3 - "$1" >"$TMP/fake.port" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_INET6); s.bind(('::1', 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
if sys.argv[1] == 'garbage':
    c.sendall(b'HTTP/1.0 400 Bad Request\r\n\r\n' + b'x' * 64)
time.sleep(20)
PY
  PIDS+=($!)
  for _ in $(seq 1 100); do [[ -s $TMP/fake.port ]] && break; sleep 0.05; done
  FAKE_PORT=$(cat "$TMP/fake.port")
}
fake_server garbage
expect_quick_failure "peer is not omrc-perf" 5 "not omrc-perf" "$PERF" write_bw ::1 -p "$FAKE_PORT"
fake_server silent
expect_quick_failure "silent peer" 5 "no 'hello' message" "$PERF" write_lat ::1 -p "$FAKE_PORT" --oob_timeout_ms 1000

# Configuration files that cannot be used: the reason, exit status 1, before anything is opened.
printf '[[device]]\nname = "omrc0"\ndriver = "udp"\n[device.qp]\nevs = 0\n' >"$TMP/bad.toml"
expect_quick_failure "bad configuration file" 2 \
  "^omrc-perf: error: $TMP/bad.toml: device 'omrc0'.qp.evs: must be 1..4096, got 0 \(line 5\)\$" \
  "$PERF" write_bw --config "$TMP/bad.toml"
printf '[[device]]\nname = "omrc0"\ndriver = udp\n' >"$TMP/syntax.toml"
expect_quick_failure "configuration file with a TOML error" 2 "^omrc-perf: error: $TMP/syntax.toml:3:10: " \
  "$PERF" write_bw --config "$TMP/syntax.toml"
expect_quick_failure "missing configuration file" 2 \
  "^omrc-perf: error: $TMP/none.toml: cannot open: No such file or directory\$" "$PERF" write_bw --config "$TMP/none.toml"
expect_quick_failure "unknown --device" 2 "no device 'omrc9' \(its devices: omrc0, omrc1\)" \
  "$PERF" write_bw --config "$CONFIGS/udp.toml" --device omrc9
expect_quick_failure "--device without --config" 2 "give --config too" "$PERF" write_bw --device omrc0

if ((fails > 0)); then echo "perf_smoke: $fails failure(s)" >&2; exit 1; fi
echo "perf_smoke: all passed"
