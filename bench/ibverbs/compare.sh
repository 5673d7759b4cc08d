#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's ib_write_bw over OpenMRC's libibverbs.so.1 against omrc-perf
# write_bw, over the same two devices of one configuration file, in one run:
# ROUNDS rounds, each running ib_write_bw then omrc-perf (interleaved, so
# drift of a shared machine hits both), and the ratio of the medians.
#
#   compare.sh [--lib DIR] [--perf OMRC_PERF] [--medium udp|memif] [--size B]
#              [--iters N] [--rounds R] [--client-env VAR=VALUE]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lib=$root/build/release/lib/openmrc/ibverbs
perf=$root/build/release/bench/perf/omrc-perf
medium=udp size=65536 iters=20000 rounds=5 client_env=()
while (($#)); do
  case $1 in
    --lib) lib=$2; shift 2 ;;
    --perf) perf=$2; shift 2 ;;
    --medium) medium=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --client-env) client_env+=("$2"); shift 2 ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
done
command -v ib_write_bw >/dev/null || { echo "ib_write_bw not installed (Debian: perftest)"; exit 77; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cfg=$work/devices.toml
"$root/bench/ibverbs/make_config.sh" "$medium" "$cfg" "$work"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ibv() { env OMRC_IBV_CONFIG="$cfg" LD_LIBRARY_PATH="$lib" "$@"; }

gbps() { awk -v s="$size" '$1 == s {print $4}' "$1"; }
one_ibv() {
  local port; port=$(free_port)
  ibv timeout 300 ib_write_bw -d omrc0 -p "$port" -F --report_gbits -s "$size" -n "$iters" >"$work/s.log" 2>&1 &
  local s=$!
  sleep 0.5
  ibv "${client_env[@]}" timeout 300 ib_write_bw -d omrc1 -p "$port" -F --report_gbits -s "$size" -n "$iters" \
    localhost >"$work/c.log" 2>&1 || { cat "$work/c.log" "$work/s.log" >&2; exit 1; }
  wait "$s"
  gbps "$work/c.log"
}
one_perf() {
  local port; port=$(free_port)
  "$perf" write_bw --config "$cfg" --device omrc0 -p "$port" >"$work/s.log" 2>&1 &
  local s=$!
  sleep 0.5
  "$perf" write_bw --config "$cfg" --device omrc1 -p "$port" -s "$size" -n "$iters" --report_gbits localhost \
    >"$work/c.log" 2>&1 || { cat "$work/c.log" "$work/s.log" >&2; exit 1; }
  wait "$s"
  gbps "$work/c.log"
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "medium $medium, $size B WRITEs, $iters per run, $rounds rounds; $(nproc) CPUs; $(uname -r)"
a=() b=()
for r in $(seq "$rounds"); do
  x=$(one_ibv); y=$(one_perf)
  a+=("$x"); b+=("$y")
  printf 'round %d: ib_write_bw %6.2f Gb/s   omrc-perf write_bw %6.2f Gb/s\n' "$r" "$x" "$y"
done
ma=$(printf '%s\n' "${a[@]}" | median)
mb=$(printf '%s\n' "${b[@]}" | median)
awk -v a="$ma" -v b="$mb" 'BEGIN { printf "median: ib_write_bw %.2f Gb/s, omrc-perf %.2f Gb/s, ratio %.3f\n", a, b, a / b }'
