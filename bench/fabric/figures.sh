#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Re-runs the scenarios behind docs/SIMULATOR.md §5 and refreshes docs/img/sim_*.png.
# Usage: bench/fabric/figures.sh [path/to/omrc-fabric] [work dir]
set -eu
BIN=${1:-build/release/bench/fabric/omrc-fabric}
OUT=${2:-build/release/fabric-figures}
S=bench/fabric/scenarios
IMG=docs/img
mkdir -p "$OUT" "$IMG"
run() { name=$1; shift; "$BIN" "$@" --out "$OUT/$name" > "$OUT/$name.txt"; cat "$OUT/$name.txt"; }
run perm_1024_adaptive $S/perm_1024.toml
run perm_1024_spray $S/perm_1024.toml --policy spray
run perm_1024_ecmp $S/perm_1024.toml --policy ecmp
run t1_loss $S/t1_loss_allreduce.toml
run nic_port_loss $S/nic_port_loss.toml
run flap_base $S/link_flap_allreduce_base.toml
run flap $S/link_flap_allreduce.toml
# (a): the three policies' FCT CDFs on one plot.
gnuplot <<GP
set terminal pngcairo size 900,500 font ',10' noenhanced
set output '$IMG/sim_perm_1024_fct_cdf.png'
set datafile separator ','
set title 'perm_1024: 1024-host permutation of 2 MB at 100G, FCT CDF'
set xlabel 'FCT (µs)'
set ylabel 'fraction of flows'
set grid
set key bottom right
set arrow 1 from 178,0 to 178,1 nohead dt 2
plot '$OUT/perm_1024_adaptive/fct.csv' using 2:1 with steps lw 2 title 'adaptive (MRC)', \
     '$OUT/perm_1024_spray/fct.csv' using 2:1 with steps lw 2 title 'oblivious spray', \
     '$OUT/perm_1024_ecmp/fct.csv' using 2:1 with steps lw 2 title 'ECMP (one EV per QP)'
GP
cp "$OUT/perm_1024_adaptive/link_util.png" $IMG/sim_perm_1024_adaptive_link_util.png
cp "$OUT/perm_1024_ecmp/link_util.png" $IMG/sim_perm_1024_ecmp_link_util.png
cp "$OUT/t1_loss/steps.png" $IMG/sim_t1_loss_steps.png
cp "$OUT/t1_loss/throughput.png" $IMG/sim_t1_loss_throughput.png
cp "$OUT/nic_port_loss/tracked_host.png" $IMG/sim_nic_port_loss_tracked_host.png
cp "$OUT/flap/steps.png" $IMG/sim_link_flap_steps.png
