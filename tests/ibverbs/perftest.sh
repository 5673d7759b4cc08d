#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Unmodified ibverbs programs over OpenMRC: Debian's ibverbs-utils and
# perftest, run with LD_LIBRARY_PATH at OpenMRC's libibverbs.so.1.
#
#   perftest.sh LIBDIR OMRC_PERF udp     two udp devices on [::1] (no root)
#   perftest.sh LIBDIR OMRC_PERF memif   two DPDK net_memif devices (root tier)
#
# Checks: ibv_devices and ibv_devinfo list and describe the devices;
# ib_write_bw, ib_write_lat, ib_send_bw, ib_send_lat, ib_read_bw and ib_read_lat,
# server and client in
# two processes, complete at every size 2 B … 8 MiB (-a); ibv_rc_pingpong
# (SEND/RECV) checks the bytes it receives (--chk) at 2 B, 4 KiB and 1 MiB;
# ibv_srq_pingpong (16 QPs on one shared receive queue per side) checks them
# at the same sizes, polling and sleeping on CQ events (-e); ib_send_bw
# --use-srq runs every size over an SRQ; and omrc-perf runs over the same
# configuration file. The bandwidth of the two is compared by
# bench/ibverbs/compare.sh (docs/PERFORMANCE.md), not here: a test asserts
# behaviour, not timings. Exit 77 (skip) when the programs or the medium are
# missing.
set -euo pipefail
libdir=$1
perf=$2
medium=${3:-udp}

for p in ib_write_bw ib_write_lat ib_send_bw ib_send_lat ib_read_bw ib_read_lat ibv_devices ibv_devinfo ibv_rc_pingpong ibv_srq_pingpong; do
  command -v "$p" >/dev/null || { echo "SKIP: $p not installed (Debian: perftest, ibverbs-utils)"; exit 77; }
done
[[ -e $libdir/libibverbs.so.1 ]] || { echo "FAIL: no $libdir/libibverbs.so.1"; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cfg=$work/devices.toml
"$(dirname "$0")/../../bench/ibverbs/make_config.sh" "$medium" "$cfg" "$work" || exit $?

export OMRC_IBV_CONFIG=$cfg
ibv() { LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

# ---- ibverbs-utils ----
out=$(ibv ibv_devices)
echo "$out"
grep -q 'omrc0' <<<"$out" && grep -q 'omrc1' <<<"$out" || fail "ibv_devices does not list omrc0 and omrc1"
out=$(ibv ibv_devinfo -d omrc0 -v)
printf '%s\n' "$out" | sed -n 1,40p
grep -qE 'hca_id:[[:space:]]+omrc0' <<<"$out" || fail "ibv_devinfo: no hca_id omrc0"
grep -qE 'state:[[:space:]]+PORT_ACTIVE' <<<"$out" || fail "ibv_devinfo: port not active"
grep -qE 'link_layer:[[:space:]]+Ethernet' <<<"$out" || fail "ibv_devinfo: link layer not Ethernet"
grep -qE 'fw_ver:[[:space:]]+OpenMRC' <<<"$out" || fail "ibv_devinfo: fw_ver"
grep -qE 'GID\[ *0\]:.*RoCE v2' <<<"$out" || fail "ibv_devinfo: no RoCE v2 GID"
# The system's own library sees none of them (they exist only through OpenMRC's).
sys_list=$(env -u LD_LIBRARY_PATH ibv_devices 2>/dev/null || true)
if grep -q omrc0 <<<"$sys_list"; then fail "system libibverbs lists omrc0"; fi

# ---- perftest: server omrc0, client omrc1 ----
run_pair() {  # run_pair NAME PROGRAM ARGS...: server then client, both must exit 0
  local name=$1 prog=$2; shift 2
  local port; port=$(free_port)
  ibv timeout 120 "$prog" -d omrc0 -p "$port" -F "$@" >"$work/$name.server" 2>&1 &
  local spid=$!
  pids+=("$spid")
  sleep 0.5
  if ! ibv timeout 120 "$prog" -d omrc1 -p "$port" -F "$@" localhost >"$work/$name.client" 2>&1; then
    cat "$work/$name.client" "$work/$name.server"
    fail "$name: client failed"
  fi
  if ! wait "$spid"; then
    cat "$work/$name.server"
    fail "$name: server failed"
  fi
  cat "$work/$name.client"
}

# Every size 2 B … 8 MiB: the table has a row for each.
run_pair bw_all ib_write_bw -a -n 20 --report_gbits
rows=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5' "$work/bw_all.client" | wc -l)
[[ $rows -eq 23 ]] || fail "ib_write_bw -a: $rows size rows, expected 23 (2 B … 8 MiB)"
run_pair lat_all ib_write_lat -a -n 20
rows=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5' "$work/lat_all.client" | wc -l)
[[ $rows -eq 23 ]] || fail "ib_write_lat -a: $rows size rows, expected 23"
# SEND/RECV (OpenMRC's SEND opcodes, docs/PROTOCOL.md §11.9).
run_pair send_bw_all ib_send_bw -a -n 20 --report_gbits
rows=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5' "$work/send_bw_all.client" | wc -l)
[[ $rows -eq 23 ]] || fail "ib_send_bw -a: $rows size rows, expected 23 (2 B … 8 MiB)"
run_pair send_lat_all ib_send_lat -a -n 20
rows=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5' "$work/send_lat_all.client" | wc -l)
[[ $rows -eq 23 ]] || fail "ib_send_lat -a: $rows size rows, expected 23"

# RDMA READ (OpenMRC's READ opcodes, docs/PROTOCOL.md §11.10): the client reads the server's buffer.
run_pair read_bw_all ib_read_bw -a -n 20 --report_gbits
rows=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5' "$work/read_bw_all.client" | wc -l)
[[ $rows -eq 23 ]] || fail "ib_read_bw -a: $rows size rows, expected 23 (2 B … 8 MiB)"
run_pair read_lat_all ib_read_lat -a -n 20
rows=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5' "$work/read_lat_all.client" | wc -l)
[[ $rows -eq 23 ]] || fail "ib_read_lat -a: $rows size rows, expected 23"

# ---- ibv_rc_pingpong: SEND/RECV ping-pong, received bytes validated (--chk) ----
for size in 2 4096 1048576; do
  port=$(free_port)
  ibv timeout 120 ibv_rc_pingpong -d omrc0 -g 0 -p "$port" -n 100 -s "$size" --chk >"$work/pp.server" 2>&1 &
  spid=$!
  pids+=("$spid")
  sleep 0.5
  ibv timeout 120 ibv_rc_pingpong -d omrc1 -g 0 -p "$port" -n 100 -s "$size" --chk localhost >"$work/pp.client" 2>&1 ||
    { cat "$work/pp.client" "$work/pp.server"; fail "ibv_rc_pingpong -s $size: client failed"; }
  wait "$spid" || { cat "$work/pp.server"; fail "ibv_rc_pingpong -s $size: server failed"; }
  grep -q '100 iters in' "$work/pp.client" || { cat "$work/pp.client"; fail "ibv_rc_pingpong -s $size: no summary"; }
  grep -v '^\[' "$work/pp.client"
done

# ---- shared receive queues: ibv_srq_pingpong (16 QPs, one SRQ a side, --chk) and ib_send_bw --use-srq ----
for args in "-s 2" "-s 4096 -e" "-s 1048576 -n 50"; do
  port=$(free_port)
  # shellcheck disable=SC2086  # args are several options
  ibv timeout 120 ibv_srq_pingpong -d omrc0 -g 0 -p "$port" -c $args >"$work/srq.server" 2>&1 &
  spid=$!
  pids+=("$spid")
  sleep 0.5
  # shellcheck disable=SC2086
  ibv timeout 120 ibv_srq_pingpong -d omrc1 -g 0 -p "$port" -c $args localhost >"$work/srq.client" 2>&1 ||
    { cat "$work/srq.client" "$work/srq.server"; fail "ibv_srq_pingpong $args: client failed"; }
  wait "$spid" || { cat "$work/srq.server"; fail "ibv_srq_pingpong $args: server failed"; }
  grep -q 'iters in' "$work/srq.client" || { cat "$work/srq.client"; fail "ibv_srq_pingpong $args: no summary"; }
  echo "ibv_srq_pingpong $args: $(grep 'iters in' "$work/srq.client")"
done
run_pair send_bw_srq ib_send_bw -a -n 20 --use-srq --report_gbits
rows=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5' "$work/send_bw_srq.client" | wc -l)
[[ $rows -eq 23 ]] || fail "ib_send_bw --use-srq -a: $rows size rows, expected 23 (2 B … 8 MiB)"

# ---- omrc-perf over the same configuration file ----
port=$(free_port)
timeout 120 "$perf" write_bw --config "$cfg" --device omrc0 -p "$port" >"$work/perf.server" 2>&1 &
spid=$!
pids+=("$spid")
sleep 0.5
timeout 120 "$perf" write_bw --config "$cfg" --device omrc1 -p "$port" -s 65536 -n 2000 --report_gbits localhost \
  >"$work/perf.client" 2>&1 || { cat "$work/perf.client" "$work/perf.server"; fail "omrc-perf write_bw failed"; }
wait "$spid" || fail "omrc-perf server failed"
ibv=$(awk '$1 == 65536 {print $4}' "$work/bw_all.client")
perf_gbps=$(awk '$1 == 65536 {print $4}' "$work/perf.client")
echo "64 KiB: ib_write_bw ${ibv} Gb/s (-n 20), omrc-perf ${perf_gbps} Gb/s (-n 2000); bench/ibverbs/compare.sh compares them"
echo "PASS: perftest over OpenMRC ($medium)"
