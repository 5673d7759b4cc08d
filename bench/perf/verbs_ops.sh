#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# SEND and READ against WRITE in one run (docs/PERFORMANCE.md, "SEND, READ
# and WRITE"): omrc-perf between two processes over the udp driver,
# ROUNDS interleaved rounds of write_bw / send_bw / read_bw at SIZE bytes
# (SECONDS each) and write_lat / send_lat / read_lat at 8 B (ITERS each),
# then the medians and the ratios the issue asks for. read_lat times whole
# round trips (as ib_read_lat), write_lat and send_lat half round trips.
# With --perftest, each round also runs Debian's ib_write_bw, ib_send_bw and
# ib_read_bw (SIZE bytes, SECONDS each) over OpenMRC's libibverbs.so.1 on
# two udp devices of one configuration file (bench/ibverbs/make_config.sh),
# interleaved with omrc-perf's, and reports their ratios too.
#
# Usage: bench/perf/verbs_ops.sh [--perf PATH] [--rounds R] [--size B] [--seconds S] [--iters N] [--planes P]
#                                [--perftest [--lib DIR]]
set -euo pipefail
perf=build/release/bench/perf/omrc-perf
rounds=3 size=65536 seconds=3 iters=2000 planes=4 perftest=0
lib=build/release/lib/openmrc/ibverbs
while (($#)); do
  case $1 in
    --perftest) perftest=1; shift ;;
    --lib) lib=$2; shift 2 ;;
    --perf) perf=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --planes) planes=$2; shift 2 ;;
    *) echo "usage: $0 [--perf PATH] [--rounds R] [--size B] [--seconds S] [--iters N] [--planes P] [--perftest [--lib DIR]]" >&2
       exit 64 ;;
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

# one_ib PROGRAM: Debian's perftest program on omrc0 (server) and omrc1
# (client) through OpenMRC's libibverbs.so.1; prints the client's BW average (Gb/s).
if ((perftest)); then
  command -v ib_write_bw >/dev/null || { echo "ib_write_bw not installed (Debian: perftest)" >&2; exit 77; }
  [[ -e $lib/libibverbs.so.1 ]] || { echo "no $lib/libibverbs.so.1 (build first)" >&2; exit 1; }
  "$(dirname "$0")/../ibverbs/make_config.sh" udp "$work/devices.toml" "$work"
fi
one_ib() {
  local prog=$1
  port=$((port + 1))
  env OMRC_IBV_CONFIG="$work/devices.toml" LD_LIBRARY_PATH="$lib" timeout 120 "$prog" -d omrc0 -p "$port" -F \
    --report_gbits -s "$size" -D "$seconds" >"$work/ib.server" 2>&1 &
  local spid=$!
  sleep 0.5
  env OMRC_IBV_CONFIG="$work/devices.toml" LD_LIBRARY_PATH="$lib" timeout 120 "$prog" -d omrc1 -p "$port" -F \
    --report_gbits -s "$size" -D "$seconds" localhost >"$work/ib.client" 2>&1 ||
    { cat "$work/ib.client" "$work/ib.server" >&2; return 1; }
  wait "$spid" || true
  awk -v s="$size" '$1 == s && NF >= 5 {v = $4} END {print v}' "$work/ib.client"
}

declare -A vals
tests_bw=(write_bw send_bw read_bw)
tests_lat=(write_lat send_lat read_lat)
tests_ib=()
((perftest)) && tests_ib=(ib_write_bw ib_send_bw ib_read_bw)
for ((r = 1; r <= rounds; ++r)); do
  for t in "${tests_bw[@]}"; do vals[$t]+="$(one "$t" -s "$size" -D "$seconds" --report_gbits) "; done
  for t in "${tests_ib[@]}"; do vals[$t]+="$(one_ib "$t") "; done
  for t in "${tests_lat[@]}"; do vals[$t]+="$(one "$t" -s 8 -n "$iters") "; done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "machine: $(nproc) cores; omrc-perf over udp, $planes planes, $rounds interleaved rounds"
declare -A med
for t in "${tests_bw[@]}" "${tests_ib[@]}" "${tests_lat[@]}"; do
  med[$t]=$(median <<<"${vals[$t]}")
  unit=Gb/s; [[ $t == *_lat ]] && unit="us (t_typical)"
  printf '%-10s median %-9s %s   rounds: %s\n' "$t" "${med[$t]}" "$unit" "${vals[$t]}"
done
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
echo "send_bw / write_bw at $size B: $(ratio "${med[send_bw]}" "${med[write_bw]}") (goal >= 0.9)"
echo "read_bw / write_bw at $size B: $(ratio "${med[read_bw]}" "${med[write_bw]}") (goal >= 0.9)"
echo "send_lat / write_lat at 8 B: $(ratio "${med[send_lat]}" "${med[write_lat]}") (goal <= 1.2)"
echo "read_lat (whole round trip) / (2 x write_lat) at 8 B: $(ratio "${med[read_lat]}" "(2 * ${med[write_lat]})")"
if ((perftest)); then
  echo "ib_send_bw / ib_write_bw at $size B: $(ratio "${med[ib_send_bw]}" "${med[ib_write_bw]}") (goal >= 0.9)"
  echo "ib_read_bw / ib_write_bw at $size B: $(ratio "${med[ib_read_bw]}" "${med[ib_write_bw]}") (goal >= 0.9)"
  echo "ib_write_bw / omrc-perf write_bw at $size B: $(ratio "${med[ib_write_bw]}" "${med[write_bw]}")"
fi
