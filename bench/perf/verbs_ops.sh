#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# SEND and READ against WRITE in one run (docs/PERFORMANCE.md, "SEND, READ
# and WRITE"): omrc-perf between two processes over the udp driver,
# ROUNDS interleaved rounds of write_bw / send_bw / read_bw at SIZE bytes
# (SECONDS each) and write_lat / send_lat / read_lat at 8 B (ITERS each),
# then the medians and the ratios the issue asks for. read_lat times whole
# round trips (as ib_read_lat), write_lat and send_lat half round trips.
#
# Usage: bench/perf/verbs_ops.sh [--perf PATH] [--rounds R] [--size B] [--seconds S] [--iters N] [--planes P]
set -euo pipefail
perf=build/release/bench/perf/omrc-perf
rounds=3 size=65536 seconds=3 iters=2000 planes=4
while (($#)); do
  case $1 in
    --perf) perf=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --planes) planes=$2; shift 2 ;;
    *) echo "usage: $0 [--perf PATH] [--rounds R] [--size B] [--seconds S] [--iters N] [--planes P]" >&2; exit 64 ;;
  esac
done
[[ -x $perf ]] || { echo "no omrc-perf at $perf (build first)" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000))

# one TEST ARGS...: a server and a client; prints the client's value
# (bw_avg in Gb/s, or t_typical in µs).
one() {
  local test=$1; shift
  port=$((port + 1))
  "$perf" "$test" -p "$port" --planes "$planes" --driver udp >"$work/server.log" 2>&1 &
  local spid=$!
  sleep 0.3
  "$perf" "$test" ::1 -p "$port" --planes "$planes" --driver udp --out_json "$work/out.json" "$@" >"$work/client.log" 2>&1 ||
    { cat "$work/client.log" "$work/server.log" >&2; return 1; }
  wait "$spid" || true
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(round(r["bw_avg"] if "bw_avg" in r else r["t_typical_us"], 2))' "$work/out.json"
}

declare -A vals
tests_bw=(write_bw send_bw read_bw)
tests_lat=(write_lat send_lat read_lat)
for ((r = 1; r <= rounds; ++r)); do
  for t in "${tests_bw[@]}"; do vals[$t]+="$(one "$t" -s "$size" -D "$seconds" --report_gbits) "; done
  for t in "${tests_lat[@]}"; do vals[$t]+="$(one "$t" -s 8 -n "$iters") "; done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "machine: $(nproc) cores; omrc-perf over udp, $planes planes, $rounds interleaved rounds"
declare -A med
for t in "${tests_bw[@]}" "${tests_lat[@]}"; do
  med[$t]=$(median <<<"${vals[$t]}")
  unit=Gb/s; [[ $t == *_lat ]] && unit="us (t_typical)"
  printf '%-10s median %-9s %s   rounds: %s\n' "$t" "${med[$t]}" "$unit" "${vals[$t]}"
done
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
echo "send_bw / write_bw at $size B: $(ratio "${med[send_bw]}" "${med[write_bw]}") (goal >= 0.9)"
echo "read_bw / write_bw at $size B: $(ratio "${med[read_bw]}" "${med[write_bw]}") (goal >= 0.9)"
echo "send_lat / write_lat at 8 B: $(ratio "${med[send_lat]}" "${med[write_lat]}") (goal <= 1.2)"
echo "read_lat (whole round trip) / (2 x write_lat) at 8 B: $(ratio "${med[read_lat]}" "(2 * ${med[write_lat]})")"
