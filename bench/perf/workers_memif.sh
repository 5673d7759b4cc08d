#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Workers over DPDK net_memif between two processes (docs/PERFORMANCE.md,
# "Workers"), beside the medium's own limit in the same run:
#   omrc   omrc-perf write_bw, N workers per side (--workers N, -q 2N QPs
#          placed on the workers in turn), N queue pairs per memif port,
#          --check (the server's memory compared, CRC-64), 4 KiB MTU
#   pmd    dpdk-testpmd txonly → rxonly over the same kind of memif pair, N
#          queues and N forwarding lcores per side, frames of the same size
#          (4,200 B for a 4 KiB MTU), the same EAL options
#   omrc+M with --encrypt "off M...": the omrc row again with every frame
#          sealed (omrc-perf --encrypt M, one master key for both ends)
# Every round runs every row for every N, interleaved; CPU seconds are each
# process's user + system time (/usr/bin/time), per GB it moved. The table
# gives medians over the rounds, omrc / pmd per N and, for encrypted rows,
# their Gb/s over the plain omrc row's.
#
# Usage: bench/perf/workers_memif.sh [--perf PATH] [--workers "1 2"] [--rounds 3] [--seconds 4]
#                                     [--planes 1] [--cpus-server LIST --cpus-client LIST]
#                                     [--size 65536] [--encrypt "off aes-gcm-256"]
# --cpus-*: taskset lists for the two sides (default: none; a machine with
# 2(N+1) cores or more should give each side its own).
set -uo pipefail

PERF=build/release/bench/perf/omrc-perf
WORKERS="1 2"
ROUNDS=3
SECS=4
PLANES=1
CPUS_S=""
CPUS_C=""
SIZE=65536
ENCRYPT="off"
FRAME=4200  # a 4 KiB-payload WRITE frame: Ethernet, IPv6, UDP, BTH, METH, TSETH, RETH, payload, ICRC
while (($#)); do
  case $1 in
    --perf) PERF=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    --planes) PLANES=$2; shift 2 ;;
    --cpus-server) CPUS_S=$2; shift 2 ;;
    --cpus-client) CPUS_C=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --encrypt) ENCRYPT=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "workers_memif.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v dpdk-testpmd >/dev/null || { echo "workers_memif.sh: needs dpdk-testpmd (scripts/deps)" >&2; exit 2; }
TMP=$(mktemp -d)
BG=()
cleanup() { for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done; [[ -n ${KEEP_TMP:-} ]] && echo "kept $TMP" >&2 || rm -rf "$TMP"; }
trap cleanup EXIT
free_port() { echo $((20000 + RANDOM % 30000)); }
wait_for() { for _ in $(seq 1 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
pin() { [[ -n $1 ]] && echo "taskset -c $1"; }  # pin CPUS: the taskset prefix, or nothing

# One memif pair per plane; 8 KiB buffers hold a whole frame.
eal() {  # eal ROLE TAG
  local a="--no-huge -m 1024 --no-pci --log-level=*:warning --file-prefix omrc-wm-$2-$1-$$" p
  for ((p = 0; p < PLANES; ++p)); do a+=" --vdev net_memif$p,role=$1,socket=$TMP/$2-$p.sock,bsize=8192"; done
  echo "$a"
}

# lcores N: the main lcore and N forwarding ones, floating over the machine's CPUs.
lcores() { echo "(0-$1)@(0-$(($(nproc) - 1)))"; }

# cpu FILE: user + system seconds from /usr/bin/time -f "%U %S".
cpu() { tail -1 "$1" | awk '{print $1 + $2}'; }

# A master key both omrc-perf processes read (encrypted rows).
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/master.key"

row_omrc() {  # row_omrc N ROUND [ENCRYPTION]
  local n=$1 enc=${3:-off} port; port=$(free_port)
  local tag="o$1r$2$enc" name=omrc sec=()
  [[ $enc != off ]] && { name="omrc+$enc"; sec=(--encrypt "$enc" --master-key-file "$TMP/master.key"); }
  $(pin "$CPUS_S") /usr/bin/time -f "%U %S" -o "$TMP/$tag.srv.time" \
    "$PERF" write_bw --driver dpdk --eal "$(eal server "$tag")" --workers "$n" -p "$port" "${sec[@]}" \
    >"$TMP/$tag.srv.log" 2>&1 &
  BG+=($!)
  local srv=$!
  wait_for "$TMP/$tag.srv.log" "Waiting for a client" || { echo "$name|$n|error: server did not start"; return; }
  local cmd="$PERF write_bw 127.0.0.1 --driver dpdk --eal '<memif client>' --workers $n -q $((2 * n)) -p $port -s $SIZE -D $SECS --check --report_gbits ${sec[*]}"
  $(pin "$CPUS_C") /usr/bin/time -f "%U %S" -o "$TMP/$tag.cli.time" \
    "$PERF" write_bw 127.0.0.1 --driver dpdk --eal "$(eal client "$tag")" --workers "$n" -q $((2 * n)) -p "$port" \
    -s "$SIZE" -D "$SECS" --check --report_gbits --out_json "$TMP/$tag.json" "${sec[@]}" >"$TMP/$tag.cli.log" 2>&1 ||
    { echo "$name|$n|error: $(tail -2 "$TMP/$tag.cli.log" | tr '\n' ' ')"; return; }
  wait "$srv" 2>/dev/null
  local gbps gb
  gbps=$(python3 -c "import json; print(json.load(open('$TMP/$tag.json'))['results'][0]['bw_avg'])")
  gb=$(python3 -c "print($gbps * $SECS / 8)")
  echo "$name|$n|$gbps|$(cpu "$TMP/$tag.cli.time")|$(cpu "$TMP/$tag.srv.time")|$gb|$cmd"  # sender (client), receiver
}

row_pmd() {  # row_pmd N ROUND: txonly on the server side's ports, rxonly on the client's
  local n=$1 tag="p$1r$2"
  local common="--nb-cores=$n --rxq=$n --txq=$n --mbuf-size=8192 --total-num-mbufs=16384 --no-lsc-interrupt"
  # The sender first (memif server: it owns the sockets), then the receiver
  # (memif client: it connects once, when its ports start); each runs until
  # it is told to quit.
  mkfifo "$TMP/$tag.rx.in" "$TMP/$tag.tx.in"
  $(pin "$CPUS_S") /usr/bin/time -f "%U %S" -o "$TMP/$tag.tx.time" \
    dpdk-testpmd --lcores "$(lcores "$n")" $(eal server "$tag") -- -i $common --forward-mode=txonly --txpkts=$FRAME \
    <"$TMP/$tag.tx.in" >"$TMP/$tag.tx.log" 2>&1 & BG+=($!)
  local tx=$!
  exec 8>"$TMP/$tag.tx.in"
  wait_for "$TMP/$tag.tx.log" "Checking link statuses" || echo "workers_memif.sh: testpmd sender did not start ($tag)" >&2
  $(pin "$CPUS_C") /usr/bin/time -f "%U %S" -o "$TMP/$tag.rx.time" \
    dpdk-testpmd --lcores "$(lcores "$n")" $(eal client "$tag") -- -i $common --forward-mode=rxonly \
    <"$TMP/$tag.rx.in" >"$TMP/$tag.rx.log" 2>&1 & BG+=($!)
  local rx=$!
  exec 7>"$TMP/$tag.rx.in"
  # Both EALs up and every memif pair connected: the sender's ports report
  # their links up.
  local up=0
  for _ in $(seq 1 40); do
    echo "show port info all" >&8
    sleep 0.25
    up=$(grep -c "Link status: up" "$TMP/$tag.tx.log")
    ((up >= PLANES)) && break
  done
  ((up >= PLANES)) || echo "workers_memif.sh: testpmd memif links not up after 10 s ($tag)" >&2
  echo "start" >&7
  echo "start" >&8
  sleep 1  # both forwarding: the first reading, then SECS seconds to the second
  echo "show port stats all" >&7
  sleep "$SECS"
  echo "show port stats all" >&7
  sleep 0.3
  echo "stop" >&8
  echo "quit" >&8
  echo "stop" >&7
  echo "quit" >&7
  exec 7>&- 8>&-
  wait "$rx" "$tx" 2>/dev/null
  # RX-packets over the measured seconds: the receiver's second "show port
  # stats all" less its first (one RX-packets line per port in each).
  local pkts
  pkts=$(awk -v ports="$PLANES" '/RX-packets:/ {n++; if (n <= ports) a += $2; else if (n <= 2 * ports) b += $2}
    END {print (n >= 2 * ports) ? b - a : 0}' "$TMP/$tag.rx.log")
  if ((pkts <= 0)); then
    echo "pmd|$n|error: the receiver counted no frames (logs: KEEP_TMP=1)"
    return
  fi
  local gbps gb
  gbps=$(python3 -c "print(round($pkts * $FRAME * 8 / $SECS / 1e9, 3))")
  gb=$(python3 -c "print($pkts * $FRAME / 1e9)")
  local cmd="dpdk-testpmd --lcores '$(lcores "$n")' <memif EAL> -- -i $common --forward-mode=txonly|rxonly --txpkts=$FRAME"
  echo "pmd|$n|$gbps|$(cpu "$TMP/$tag.tx.time")|$(cpu "$TMP/$tag.rx.time")|$gb|$cmd"
}

echo "machine: $(nproc) cores, $(uname -r); rounds $ROUNDS, $SECS s a row, $PLANES plane(s), frames $FRAME B"
for ((r = 1; r <= ROUNDS; ++r)); do
  for n in $WORKERS; do
    if [[ -z ${PMD_ONLY:-} ]]; then
      for enc in $ENCRYPT; do row_omrc "$n" "$r" "$enc" | tee -a "$TMP/rows"; done
    fi
    row_pmd "$n" "$r" | tee -a "$TMP/rows"
  done
done

python3 - "$TMP/rows" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("|")
    if len(f) < 7:
        continue
    name, n, gbps, cpu_a, cpu_b, gb = f[0], int(f[1]), float(f[2]), float(f[3]), float(f[4]), float(f[5])
    r = rows.setdefault((name, n), {"gbps": [], "a": [], "b": []})
    r["gbps"].append(gbps)
    if gb > 0:
        r["a"].append(cpu_a / gb)
        r["b"].append(cpu_b / gb)
med = lambda v: statistics.median(v) if v else float("nan")
print()
print(f"{'row':18} {'N':>2} {'Gb/s median':>12} {'(min-max)':>16} {'CPU s/GB sender':>16} {'CPU s/GB receiver':>18} {'omrc/pmd':>9} {'/plain':>7}")
for (name, n), r in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    ratio = plain = ""
    if name.startswith("omrc") and ("pmd", n) in rows and med(rows[("pmd", n)]["gbps"]) > 0:
        ratio = f"{med(r['gbps']) / med(rows[('pmd', n)]['gbps']):.3f}"
    if name.startswith("omrc+") and ("omrc", n) in rows and med(rows[("omrc", n)]["gbps"]) > 0:
        plain = f"{med(r['gbps']) / med(rows[('omrc', n)]['gbps']):.3f}"
    print(f"{name:18} {n:>2} {med(r['gbps']):12.2f} {min(r['gbps']):7.2f}-{max(r['gbps']):<8.2f} "
          f"{med(r['a']):16.3f} {med(r['b']):18.3f} {ratio:>9} {plain:>7}")
EOF
