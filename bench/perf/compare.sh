#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Side-by-side measurements in one run (docs/PERFORMANCE.md, "omrc-perf and
# the udp driver"): omrc-perf write_bw 64 KiB between two processes over
# DPDK net_memif and over the udp driver vs iperf3 TCP on loopback, and
# omrc-perf write_lat 8 B over memif and over udp vs sockperf UDP ping-pong. Every row is one function `row_<name>` that prints
#   <name>|<metric>|<value>|<unit>|<command>
# so a new row (e.g. a DPDK memif one) is one more function plus one more
# name in ROWS; RATIOS lists "numerator:denominator" row pairs.
#
# Usage: bench/perf/compare.sh [--perf PATH] [--seconds N] [--rows "a b c"]
# Needs iperf3 and sockperf (scripts/deps). Each pair of processes shares
# the machine's cores; the table says how many there are.
set -uo pipefail

PERF=build/release/bench/perf/omrc-perf
SECONDS_PER_ROW=5
ROWS="omrc_bw_memif omrc_bw_udp iperf3_tcp omrc_lat_memif omrc_lat_udp sockperf_udp"
RATIOS="omrc_bw_memif:iperf3_tcp omrc_bw_udp:iperf3_tcp omrc_lat_memif:sockperf_udp omrc_lat_udp:sockperf_udp"
while (($#)); do
  case $1 in
    --perf) PERF=$2; shift 2 ;;
    --seconds) SECONDS_PER_ROW=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --ratios) RATIOS=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
TMP=$(mktemp -d)
BG=()
cleanup() { for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"; }
trap cleanup EXIT

free_port() { echo $((20000 + RANDOM % 30000)); }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
# Waits until FILE contains TEXT (5 s).
wait_for() { for _ in $(seq 1 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1; }

# ---- rows -------------------------------------------------------------------

row_omrc_bw_udp() {
  local port; port=$(free_port)
  "$PERF" write_bw -p "$port" --planes 4 >"$TMP/bw_srv.log" 2>&1 & BG+=($!)
  wait_for "$TMP/bw_srv.log" "Waiting for a client" || { echo "omrc_bw_udp|error|0||server did not start"; return; }
  local cmd="$PERF write_bw ::1 -p $port --planes 4 -s 65536 -D $SECONDS_PER_ROW --report_gbits"
  $cmd --out_json "$TMP/bw.json" >"$TMP/bw.log" 2>&1 || { echo "omrc_bw_udp|error|0||$(tail -1 "$TMP/bw.log")"; return; }
  echo "omrc_bw_udp|write_bw 64 KiB, BW average|$(json "$TMP/bw.json" "round(d['results'][0]['bw_avg'],3)")|Gb/s|$cmd"
  echo "omrc_bw_udp_peak|write_bw 64 KiB, BW peak|$(json "$TMP/bw.json" "round(d['results'][0]['bw_peak'],3)")|Gb/s|$cmd"
}

row_iperf3_tcp() {
  local port; port=$(free_port)
  iperf3 -s -1 -p "$port" >"$TMP/iperf_srv.log" 2>&1 & BG+=($!)
  sleep 0.3
  local cmd="iperf3 -c ::1 -p $port -t $SECONDS_PER_ROW -J"
  $cmd >"$TMP/iperf.json" 2>&1 || { echo "iperf3_tcp|error|0||iperf3 failed"; return; }
  echo "iperf3_tcp|TCP stream, received|$(json "$TMP/iperf.json" "round(d['end']['sum_received']['bits_per_second']/1e9,3)")|Gb/s|$cmd"
}

row_omrc_lat_udp() {
  local port; port=$(free_port)
  "$PERF" write_lat -p "$port" --planes 4 >"$TMP/lat_srv.log" 2>&1 & BG+=($!)
  wait_for "$TMP/lat_srv.log" "Waiting for a client" || { echo "omrc_lat_udp|error|0||server did not start"; return; }
  local cmd="$PERF write_lat ::1 -p $port --planes 4 -s 8 -D $SECONDS_PER_ROW"
  $cmd --out_json "$TMP/lat.json" >"$TMP/lat.log" 2>&1 || { echo "omrc_lat_udp|error|0||$(tail -1 "$TMP/lat.log")"; return; }
  echo "omrc_lat_udp|write_lat 8 B, typical (median) half RTT|$(json "$TMP/lat.json" "round(d['results'][0]['t_typical_us'],2)")|us|$cmd"
  echo "omrc_lat_udp_avg|write_lat 8 B, average|$(json "$TMP/lat.json" "round(d['results'][0]['t_avg_us'],2)")|us|$cmd"
  echo "omrc_lat_udp_p99|write_lat 8 B, 99th percentile|$(json "$TMP/lat.json" "round(d['results'][0]['p99_us'],2)")|us|$cmd"
}

row_sockperf_udp() {
  # sockperf 3.7 takes IPv4 only, and 14 B is its smallest message (its own header).
  local port; port=$(free_port)
  sockperf server -i 127.0.0.1 -p "$port" >"$TMP/sp_srv.log" 2>&1 & BG+=($!)
  sleep 0.3
  local cmd="sockperf ping-pong -i 127.0.0.1 -p $port -m 14 -t $SECONDS_PER_ROW"
  $cmd >"$TMP/sp.log" 2>&1 || { echo "sockperf_udp|error|0||sockperf failed"; return; }
  local p50 avg p99
  p50=$(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' "$TMP/sp.log")
  avg=$(sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' "$TMP/sp.log")
  p99=$(sed -n 's/.*percentile 99.000 = *\([0-9.]*\).*/\1/p' "$TMP/sp.log")
  echo "sockperf_udp|UDP ping-pong 14 B, median one-way|$p50|us|$cmd"
  echo "sockperf_udp_avg|UDP ping-pong 14 B, average|$avg|us|$cmd"
  echo "sockperf_udp_p99|UDP ping-pong 14 B, 99th percentile|$p99|us|$cmd"
}

# DPDK net_memif between two processes: one memif pair per plane, each
# process with its own EAL. memif buffers of 8 KiB hold a whole 4 KiB-payload
# frame (DPDK 22.11's memif mis-delivers frames chained over several buffers).
memif_eal() {  # memif_eal ROLE TAG
  local a="--no-huge -m 1024 --no-pci --log-level=*:warning" p
  for p in 0 1; do a+=" --vdev net_memif$p,role=$1,socket=$TMP/memif-$2-$p.sock,bsize=8192"; done
  echo "$a"
}

row_omrc_bw_memif() {
  local port; port=$(free_port)
  "$PERF" write_bw --driver dpdk --eal "$(memif_eal server bw)" -p "$port" >"$TMP/mbw_srv.log" 2>&1 & BG+=($!)
  wait_for "$TMP/mbw_srv.log" "Waiting for a client" || { echo "omrc_bw_memif|error|0||server did not start"; return; }
  local cmd="$PERF write_bw 127.0.0.1 --driver dpdk --eal '$(memif_eal client bw)' -p $port -s 65536 -D $SECONDS_PER_ROW --report_gbits"
  "$PERF" write_bw 127.0.0.1 --driver dpdk --eal "$(memif_eal client bw)" -p "$port" -s 65536 -D "$SECONDS_PER_ROW" \
    --report_gbits --out_json "$TMP/mbw.json" >"$TMP/mbw.log" 2>&1 || { echo "omrc_bw_memif|error|0||$(tail -1 "$TMP/mbw.log")"; return; }
  echo "omrc_bw_memif|write_bw 64 KiB over memif, BW average|$(json "$TMP/mbw.json" "round(d['results'][0]['bw_avg'],3)")|Gb/s|$cmd"
  echo "omrc_bw_memif_peak|write_bw 64 KiB over memif, BW peak|$(json "$TMP/mbw.json" "round(d['results'][0]['bw_peak'],3)")|Gb/s|$cmd"
}

row_omrc_lat_memif() {
  local port; port=$(free_port)
  "$PERF" write_lat --driver dpdk --eal "$(memif_eal server lat)" -p "$port" >"$TMP/mlat_srv.log" 2>&1 & BG+=($!)
  wait_for "$TMP/mlat_srv.log" "Waiting for a client" || { echo "omrc_lat_memif|error|0||server did not start"; return; }
  local cmd="$PERF write_lat 127.0.0.1 --driver dpdk --eal '$(memif_eal client lat)' -p $port -s 8 -D $SECONDS_PER_ROW"
  "$PERF" write_lat 127.0.0.1 --driver dpdk --eal "$(memif_eal client lat)" -p "$port" -s 8 -D "$SECONDS_PER_ROW" \
    --out_json "$TMP/mlat.json" >"$TMP/mlat.log" 2>&1 || { echo "omrc_lat_memif|error|0||$(tail -1 "$TMP/mlat.log")"; return; }
  echo "omrc_lat_memif|write_lat 8 B over memif, typical (median) half RTT|$(json "$TMP/mlat.json" "round(d['results'][0]['t_typical_us'],2)")|us|$cmd"
  echo "omrc_lat_memif_avg|write_lat 8 B over memif, average|$(json "$TMP/mlat.json" "round(d['results'][0]['t_avg_us'],2)")|us|$cmd"
  echo "omrc_lat_memif_p99|write_lat 8 B over memif, 99th percentile|$(json "$TMP/mlat.json" "round(d['results'][0]['p99_us'],2)")|us|$cmd"
}

# ---- run --------------------------------------------------------------------

for tool in iperf3 sockperf python3; do
  command -v "$tool" >/dev/null || { echo "compare.sh: $tool is missing (scripts/deps installs it)" >&2; exit 1; }
done
[[ -x $PERF ]] || { echo "compare.sh: no omrc-perf at $PERF (--perf PATH)" >&2; exit 1; }

echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$TMP/rows"
for r in $ROWS; do
  "row_$r" | tee -a "$TMP/rows" >/dev/null
  for p in "${BG[@]}"; do wait "$p" 2>/dev/null; done
  BG=()
done
printf '\n| row | metric | value | unit |\n|---|---|---|---|\n'
while IFS='|' read -r name metric value unit cmd; do printf '| %s | %s | %s | %s |\n' "$name" "$metric" "$value" "$unit"; done <"$TMP/rows"
printf '\n| ratio | value |\n|---|---|\n'
for pair in $RATIOS; do
  a=${pair%%:*} b=${pair##*:}
  va=$(awk -F'|' -v n="$a" '$1==n {print $3}' "$TMP/rows")
  vb=$(awk -F'|' -v n="$b" '$1==n {print $3}' "$TMP/rows")
  if [[ -n $va && -n $vb ]]; then
    printf '| %s / %s | %s |\n' "$a" "$b" "$(python3 -c "print(round($va/$vb,3) if $vb else 'n/a')")"
  fi
done
printf '\nCommands:\n'
cut -d'|' -f1,5 "$TMP/rows" | sort -u -t'|' -k2,2 | sed 's/^/  /'
