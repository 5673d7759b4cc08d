#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs the same scenarios under every load-balancing / congestion-control
# mode of the simulator and writes one side-by-side table plus plots
# (docs/DESIGNS.md). Each run is omrc-fabric's --json summary; the simulator
# is deterministic, so a rerun gives the same table.
#
# Usage: bench/fabric/compare.sh [--bin PATH] [--out DIR] [--modes "m1 m2 ..."]
#                                [--scenarios "file1.toml file2.toml ..."] [--jobs N] [--reuse]
# --reuse keeps the JSON of runs already in DIR (a mode added later runs alone).
# Modes (name: what omrc-fabric is given):
#   adaptive  --policy adaptive   MRC: adaptive spraying (NSCC)
#   spray     --policy spray      oblivious spraying
#   ecmp      --policy ecmp       one path per connection (classic RoCE)
#   planned   --policy planned    NSLB: a controller's conflict-free plan
#   rnl       --policy rnl        RNL: scored paths, incremental migration
#   reps      --policy reps       UET REPS: clean EVs recycled, new ones explored, frozen on failure
#   dcqcn     --cc dcqcn          adaptive spraying under DCQCN
#   hpcc      --cc hpcc           adaptive spraying under HPCC (INT)
#   credit    --cc credit         adaptive spraying, receiver credit (GSE/RCCC)
#   ddc       --routing ddc --policy ecmp   DDC: the fabric sprays cells, NICs use one path
#   ddc_adaptive  --routing ddc --policy adaptive   DDC under MRC's NICs (one chassis per plane:
#             ECMP NICs put each connection in one plane of a multi-plane fabric)
# A mode the binary does not know is reported and left out of the table.
# Output: DIR/table.md, DIR/table.csv, DIR/<metric>.png, DIR/json/<scenario>__<mode>.json.
set -euo pipefail

BIN=build/release/bench/fabric/omrc-fabric
OUT=build/release/fabric-compare
S=bench/fabric/scenarios
MODES="adaptive spray ecmp planned rnl reps dcqcn hpcc credit ddc ddc_adaptive"
SCENARIOS="$S/perm_1024.toml $S/perm_1024_t1_loss.toml $S/perm_1024_link_flap.toml
$S/link_flap_allreduce_base.toml $S/t1_loss_allreduce.toml $S/link_flap_allreduce.toml
$S/all_to_all_64.toml $S/all_to_all_64_t1_loss.toml $S/all_to_all_64_link_flap.toml
$S/incast_32.toml $S/incast_32_t1_loss.toml $S/incast_32_link_flap.toml"
JOBS=1
REUSE=0

while (($#)); do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    --scenarios) SCENARIOS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --reuse) REUSE=1; shift ;;
    -h|--help) sed -n '3,27p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[[ -x $BIN ]] || { echo "compare.sh: no simulator at $BIN (build the release preset, or pass --bin)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "compare.sh: needs python3 (scripts/deps installs it)" >&2; exit 1; }

mode_args() {
  case $1 in
    adaptive|spray|ecmp|planned|rnl|reps) echo "--policy $1" ;;
    dcqcn|hpcc|credit) echo "--cc $1" ;;
    ddc) echo "--routing ddc --policy ecmp" ;;
    ddc_adaptive) echo "--routing ddc --policy adaptive" ;;
    *) return 1 ;;
  esac
}

mkdir -p "$OUT/json" "$OUT/log"
: > "$OUT/skipped.txt"
runs=()
for s in $SCENARIOS; do
  [[ -f $s ]] || { echo "compare.sh: no scenario file $s" >&2; exit 1; }
  for m in $MODES; do
    args=$(mode_args "$m") || { echo "compare.sh: unknown mode '$m' (try --help)" >&2; exit 2; }
    runs+=("$s|$m|$args")
  done
done

run_one() {
  local s=${1%%|*} rest=${1#*|}
  local m=${rest%%|*} args=${rest#*|}
  local name
  name=$(basename "$s" .toml)__$m
  if [[ $REUSE == 1 && -s $OUT/json/$name.json ]]; then echo "  $name (kept)"; return 0; fi
  # shellcheck disable=SC2086  # args are words on purpose
  local rc=0
  "$BIN" "$s" $args --json > "$OUT/json/$name.json" 2> "$OUT/log/$name.txt" || rc=$?
  if [[ $rc == 0 ]]; then
    echo "  $name"
  elif [[ $rc == 2 && -s $OUT/json/$name.json ]]; then
    echo "  $name: a flow did not complete in max_time_us (kept, completed = 0)"
  else
    rm -f "$OUT/json/$name.json"
    echo "$name: $(tail -n 1 "$OUT/log/$name.txt")" >> "$OUT/skipped.txt"
    echo "  $name: not run ($(tail -n 1 "$OUT/log/$name.txt"))"
  fi
}
export -f run_one
export BIN OUT REUSE
echo "compare.sh: ${#runs[@]} runs, $JOBS at a time, into $OUT"
printf '%s\n' "${runs[@]}" | xargs -d '\n' -P "$JOBS" -I{} bash -c 'run_one "$@"' _ {}

python3 - "$OUT" "$MODES" "$SCENARIOS" <<'PY'
import csv, json, os, sys
out, modes, scenarios = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
names = [os.path.basename(s)[:-5] for s in scenarios]
rows = []
for sc in names:
    for m in modes:
        path = os.path.join(out, "json", f"{sc}__{m}.json")
        if not os.path.exists(path):
            continue
        j = json.load(open(path))
        ideal = j.get("ideal_job_us", 0)
        step = j.get("step_mean_during_us", j.get("step_mean_us", 0)) if j.get("steps", 0) > 1 else 0
        before = j.get("step_mean_before_us", 0)
        rows.append({
            "scenario": sc, "mode": m, "completed": int(bool(j["completed"])),
            "job_us": j["job_us"], "job_over_ideal": j["job_over_ideal"],
            # The job's share of what line rate allows (ideal / job): the bandwidth utilisation.
            "utilisation": ideal / j["job_us"] if j["job_us"] > 0 else 0,
            "fct_p50_over_ideal": j["fct_p50_us"] / j["ideal_fct_us"] if j["ideal_fct_us"] > 0 else 0,
            "fct_p99_over_ideal": j["fct_p99_over_ideal"],
            "fct_max_over_ideal": j["fct_max_us"] / j["ideal_fct_us"] if j["ideal_fct_us"] > 0 else 0,
            "step_during_over_before": step / before if before > 0 and "step_mean_during_us" in j else "",
            "t0_t1_util_cov": j["t0_t1_util_cov"],
            "retransmits": j["retransmits_pkts"], "trims": j["trims_pkts"],
            "last_hop_peak_kb": j["last_hop_queue_peak_bytes"] / 1000,
            "fabric_peak_kb": j["fabric_queue_peak_bytes"] / 1000,
            "dead_path_last_drop_us": j.get("dead_path_last_drop_us", ""),
            "migrations": j.get("rnl_moves", 0), "qp_errors": j["qp_errors"],
        })
if not rows:
    sys.exit("compare.sh: no run succeeded")
cols = list(rows[0].keys())
with open(os.path.join(out, "table.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    w.writerows(rows)
def fmt(v):
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 100 else f"{v:.1f}"
    return str(v)
with open(os.path.join(out, "table.md"), "w") as f:
    f.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
    for r in rows:
        f.write("| " + " | ".join(fmt(r[c]) for c in cols) + " |\n")
# One data file per plotted metric: a row per scenario, a column per mode ("-" where not run).
present = [m for m in modes if any(r["mode"] == m for r in rows)]
for metric in ("job_over_ideal", "fct_p99_over_ideal", "t0_t1_util_cov", "utilisation"):
    with open(os.path.join(out, f"{metric}.dat"), "w") as f:
        f.write("scenario " + " ".join(present) + "\n")
        for sc in names:
            vals = []
            for m in present:
                hit = [r for r in rows if r["scenario"] == sc and r["mode"] == m]
                vals.append(f"{hit[0][metric]:.4f}" if hit and hit[0]["completed"] else "-")
            f.write(sc + " " + " ".join(vals) + "\n")
with open(os.path.join(out, "modes.txt"), "w") as f:
    f.write(" ".join(present) + "\n")
PY

if command -v gnuplot >/dev/null; then
  n=$(wc -w < "$OUT/modes.txt")
  for metric in job_over_ideal fct_p99_over_ideal t0_t1_util_cov utilisation; do
    gnuplot <<GP
set terminal pngcairo size 1400,600 font ',10' noenhanced
set output '$OUT/$metric.png'
set title '$metric by scenario and mode (bench/fabric/compare.sh)'
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set datafile missing '-'
set xtics rotate by -30 scale 0
set grid ytics
set key outside right top
$(case $metric in job_over_ideal|fct_p99_over_ideal) echo "set logscale y; set yrange [0.9:*]" ;; *) echo "set yrange [0:*]" ;; esac)
set linetype 1 lc rgb '#1f77b4'
set linetype 2 lc rgb '#ff7f0e'
set linetype 3 lc rgb '#2ca02c'
set linetype 4 lc rgb '#d62728'
set linetype 5 lc rgb '#9467bd'
set linetype 6 lc rgb '#8c564b'
set linetype 7 lc rgb '#e377c2'
set linetype 8 lc rgb '#7f7f7f'
set linetype 9 lc rgb '#bcbd22'
set linetype 10 lc rgb '#17becf'
set linetype cycle 10
plot for [i=2:$((n + 1))] '$OUT/$metric.dat' using i:xtic(1) title columnheader(i) lt (i - 1)
GP
  done
else
  echo "compare.sh: gnuplot not found; table only (scripts/deps installs gnuplot-nox)" >&2
fi
echo "compare.sh: $OUT/table.md ($(($(wc -l < "$OUT/table.md") - 2)) rows), plots $OUT/*.png"
if [[ -s $OUT/skipped.txt ]]; then echo "compare.sh: not run:"; cat "$OUT/skipped.txt"; fi
