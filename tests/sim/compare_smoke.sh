#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/fabric/compare.sh end to end on two small scenarios and three modes:
# every run lands in the table with the mode's own figures, and the plots
# are written when gnuplot is there.
# Usage: tests/sim/compare_smoke.sh <omrc-fabric> <source dir>
set -euo pipefail
BIN=$1
SRC=$2
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
S=$SRC/bench/fabric/scenarios
cd "$SRC"
bench/fabric/compare.sh --bin "$BIN" --out "$OUT" --modes "adaptive rnl ddc" \
  --scenarios "$S/incast_32.toml $S/link_flap_allreduce_base.toml" > "$OUT/compare.log"
fail() { echo "compare_smoke: $*" >&2; cat "$OUT/compare.log" >&2; exit 1; }
rows=$(($(wc -l < "$OUT/table.md") - 2))
[[ $rows == 6 ]] || fail "table.md has $rows rows, want 6"
[[ ! -s $OUT/skipped.txt ]] || fail "runs skipped: $(cat "$OUT/skipped.txt")"
python3 - "$OUT/table.csv" <<'PY' || fail "table.csv is not what the runs said"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {(r["scenario"], r["mode"]): r for r in rows}
assert len(by) == 6, by.keys()
for r in rows:
    assert r["completed"] == "1", r
    assert float(r["job_over_ideal"]) >= 1.0, r
# The modes differ where they should: rnl migrates, the others do not;
# DDC with ECMP NICs leaves an 8-plane fabric's NICs on one plane each.
assert int(by[("incast_32", "rnl")]["migrations"]) > 0
assert int(by[("incast_32", "adaptive")]["migrations"]) == 0
assert float(by[("link_flap_allreduce_base", "ddc")]["job_over_ideal"]) > 4 * float(by[("link_flap_allreduce_base", "adaptive")]["job_over_ideal"])
PY
if command -v gnuplot > /dev/null; then
  for m in job_over_ideal fct_p99_over_ideal t0_t1_util_cov utilisation; do
    [[ -s $OUT/$m.png ]] || fail "no $m.png"
  done
fi
echo "compare_smoke: 6 runs tabled and plotted"
