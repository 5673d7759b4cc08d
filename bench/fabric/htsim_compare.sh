#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Side by side: OpenMRC's fabric simulator (omrc-fabric) and UEC's uet-htsim
# (htsim_uec, the Ultra Ethernet transport with NSCC) on one matched fabric,
# the scenario bench/fabric/scenarios/fat_tree_perm_1us_ecmp.toml by default:
# a k = 16 three-tier fat tree (1024 hosts), 100 Gb/s links, 1 us per link,
# hashing (ECMP) switches, trimming queues of 174 KiB, a permutation of
# 2,000,000-byte flows, all starting at 0. htsim runs REPS load balancing
# (and, as reference rows, its oblivious spraying and one-path ECMP);
# omrc-fabric runs each policy given. One table, a row per run:
# p99/ideal, max/ideal, p99 us, max us, wall and CPU seconds.
#
# Needs: a uet-htsim checkout (https://github.com/ultraethernet/uet-htsim, not
# part of this repository; fetch it yourself), cmake and a C++17 compiler to
# build it (done here once, in DIR/htsim/sim/build, if htsim_uec is missing),
# python3 (htsim's permutation generator and the table), and a built
# omrc-fabric (cmake --preset release && cmake --build --preset release
# --target omrc-fabric). A benchmark tool only: no test tier runs it.
#
# Usage (from the repository root):
#   bench/fabric/htsim_compare.sh --htsim-src DIR [--omrc-fabric PATH]
#       [--policies "adaptive reps"] [--htsim-lb "reps oblivious ecmp"]
#       [--scenario FILE] [--out DIR] [--seed N] [--jobs N] [--htsim-extra "ARGS"]
#   --htsim-src DIR     the uet-htsim checkout (its root, or its htsim/sim folder)
#   --omrc-fabric PATH  default build/release/bench/fabric/omrc-fabric
#   --policies LIST     omrc-fabric --policy values, default "adaptive"; a policy the
#                       binary does not know gets a row with its error line
#   --htsim-lb LIST     htsim rows: reps | oblivious | ecmp (oblivious with one path)
#                       | bitmap | mixed; default "reps oblivious ecmp"
#   --scenario FILE     default bench/fabric/scenarios/fat_tree_perm_1us_ecmp.toml
#   --out DIR           logs, JSON, the matrix, table.md; default build/release/htsim-compare
#   --seed N            htsim's -seed and its permutation's seed (default: the scenario's
#                       seed); also passed to omrc-fabric as --seed when given
#   --jobs N            parallel jobs for building htsim (default 1)
#   --htsim-extra ARGS  words appended to every htsim_uec command line
#
# How htsim is matched to the scenario (each value is read from the TOML):
#   topology   htsim_uec's built-in 3-tier fat tree of k^3/4 hosts (k = 16: 1024),
#              -linkspeed (Mb/s), -hop_latency (us, every link), -switch_latency
#   frames     -mtu = mtu_bytes + 126, OpenMRC's per-frame wire overhead on plain
#              (non-SRv6) frames: 98 header bytes through RETH, 4 ICRC, 24 preamble/SFD/
#              IFG/FCS (drivers/sim/scenario.cpp, ideal_fct_ps). htsim's own header is
#              64 bytes, so its payload per packet is mtu_bytes + 62; the flow size is
#              raised by 62 bytes a packet so that htsim sends the same number of
#              packets and the same wire bytes as omrc-fabric (2,000,000 B -> 489
#              frames, 2,061,618 wire bytes, htsim size 2,030,318 B)
#   queues     -q = limit_kb * 1024 / frame, in packets (htsim counts bytes, in units
#              of its packet size): 174 KiB -> 42 packets = 177,324 B
#   ECN        -ecn N N with N = ecn_kb * 1024 / frame: low = high makes htsim's RED a
#              step (mark above N packets), as OpenMRC's single threshold
#   trimming   on (htsim's default), -trimsize = trim_bytes
#   paths      -paths = [qp] evs (entropy values per connection)
#   matrix     htsim's connection_matrices/gen_permutation.py, 1024 flows, start 0
#   end        -end = max_time_us
# Remaining differences (not expressible through htsim_uec's flags) are printed
# under the table. The ideal is omrc-fabric's ideal_fct_us (the cross-pod flow
# alone at line rate), used for every row; omrc-fabric's own fct_p99_over_ideal
# (p99 of per-flow ratios) is listed in the notes.
set -euo pipefail

HTSIM_SRC=""
OMRC=build/release/bench/fabric/omrc-fabric
POLICIES="adaptive"
HTSIM_LB="reps oblivious ecmp"
SCENARIO=bench/fabric/scenarios/fat_tree_perm_1us_ecmp.toml
OUT=build/release/htsim-compare
SEED=""
JOBS=1
HTSIM_EXTRA=""

die() { echo "htsim_compare.sh: $*" >&2; exit 1; }

while (($#)); do
  case $1 in
    --htsim-src) HTSIM_SRC=$2; shift 2 ;;
    --omrc-fabric) OMRC=$2; shift 2 ;;
    --policies) POLICIES=$2; shift 2 ;;
    --htsim-lb) HTSIM_LB=$2; shift 2 ;;
    --scenario) SCENARIO=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --htsim-extra) HTSIM_EXTRA=$2; shift 2 ;;
    -h|--help) awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"; exit 0 ;;
    *) echo "htsim_compare.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

[[ -n $HTSIM_SRC ]] || die "--htsim-src DIR is required (a uet-htsim checkout; try --help)"
[[ -f $SCENARIO ]] || die "no scenario file $SCENARIO"
command -v python3 >/dev/null || die "needs python3"
if [[ -d $HTSIM_SRC/htsim/sim/datacenter ]]; then
  SIM=$HTSIM_SRC/htsim/sim
elif [[ -d $HTSIM_SRC/datacenter && -f $HTSIM_SRC/CMakeLists.txt ]]; then
  SIM=$HTSIM_SRC
else
  die "$HTSIM_SRC is not a uet-htsim checkout (no htsim/sim/datacenter)"
fi
SIM=$(cd "$SIM" && pwd)
GEN=$SIM/datacenter/connection_matrices/gen_permutation.py
[[ -f $GEN ]] || die "no $GEN in the htsim checkout"

# --- the scenario's values -------------------------------------------------
# toml_get SECTION KEY DEFAULT: a flat reader for the scenario's "key = value" lines
# ("" is the top level).
toml_get() {
  awk -v want="$1" -v key="$2" -v def="$3" '
    BEGIN { sec = ""; val = def }
    { sub(/#.*/, "") }
    /^[ \t]*\[/ { s = $0; gsub(/[][ \t]/, "", s); sec = s; next }
    sec == want {
      line = $0
      if (match(line, "^[ \t]*" key "[ \t]*=")) {
        v = substr(line, RLENGTH + 1); gsub(/^[ \t"]+|[ \t"]+$/, "", v); val = v
      }
    }
    END { print val }' "$SCENARIO"
}

kind=$(toml_get topology kind clos)
[[ $kind == fat_tree ]] || die "$SCENARIO: topology kind '$kind'; htsim_uec models only the fat tree here"
K=$(toml_get topology k 16)
HOST_GBPS=$(toml_get topology host_link_gbps 100)
FAB_GBPS=$(toml_get topology fabric_link_gbps 100)
HOST_NS=$(toml_get topology host_link_delay_ns 100)
FAB_NS=$(toml_get topology fabric_link_delay_ns 500)
SW_NS=$(toml_get topology switch_latency_ns 400)
[[ $HOST_GBPS == "$FAB_GBPS" ]] || die "host and fabric links differ in speed; htsim_uec's -linkspeed sets all"
[[ $HOST_NS == "$FAB_NS" ]] || die "host and fabric links differ in delay; htsim_uec's -hop_latency sets all"
LIMIT_KB=$(toml_get queues.uplink limit_kb 512)
ECN_KB=$(toml_get queues.uplink ecn_kb 50)
TRIM=$(toml_get queues.uplink trim true)
TRIM_BYTES=$(toml_get queues.uplink trim_bytes 128)
for s in downlink host_down; do
  [[ $(toml_get queues.$s limit_kb "$LIMIT_KB") == "$LIMIT_KB" ]] ||
    echo "htsim_compare.sh: note: [queues.$s] limit_kb differs from uplink's; htsim gets one size ($LIMIT_KB KiB)" >&2
done
WL_KIND=$(toml_get workload kind permutation)
[[ $WL_KIND == permutation ]] || die "workload '$WL_KIND'; only the permutation is matched"
MSG=$(toml_get workload message_bytes 2097152)
START_US=$(toml_get workload start_us 0)
MTU=$(toml_get qp mtu_bytes 4096)
EVS=$(toml_get qp evs 128)
MAX_US=$(toml_get "" max_time_us 1000000)
SC_SEED=$(toml_get "" seed 1)
HT_SEED=${SEED:-$SC_SEED}

OMRC_OVERHEAD=126   # plain frames: 98 B through RETH + 4 B ICRC + 24 B preamble/SFD/IFG/FCS
HTSIM_HDR=64        # UecSrc::_hdr_size
FRAME=$((MTU + OMRC_OVERHEAD))
PKTS=$(((MSG + MTU - 1) / MTU))
HT_SIZE=$((MSG + PKTS * (OMRC_OVERHEAD - HTSIM_HDR)))
NODES=$((K * K * K / 4))
read -r Q_PKTS ECN_PKTS < <(python3 -c "import sys
f=$FRAME; print(max(1,round($LIMIT_KB*1024/f)), max(1,round(max($ECN_KB,0)*1024/f)))")
HT_MBPS=$((HOST_GBPS * 1000))
HOP_US=$(python3 -c "print($HOST_NS/1000)")
SW_US=$(python3 -c "print($SW_NS/1000)")
HT_TRIM=()
[[ $TRIM == true ]] || HT_TRIM=(-disable_trim)
HT_ECN=()
[[ $ECN_KB == -1 ]] || HT_ECN=(-ecn "$ECN_PKTS" "$ECN_PKTS")
[[ $START_US == 0 ]] || echo "htsim_compare.sh: note: start_us = $START_US; htsim's flows start at 0" >&2

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# --- htsim: build once -------------------------------------------------------
HTSIM=$SIM/build/datacenter/htsim_uec
if [[ ! -x $HTSIM ]]; then
  command -v cmake >/dev/null || die "needs cmake to build htsim"
  echo "htsim_compare.sh: building htsim_uec in $SIM/build (-j$JOBS; log in $OUT/htsim_build.log)"
  { cmake -S "$SIM" -B "$SIM/build" -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$SIM/build" --target htsim_uec -j "$JOBS"; } > "$OUT/htsim_build.log" 2>&1 ||
    die "htsim build failed: $(tail -n 3 "$OUT/htsim_build.log")"
fi

# --- htsim: the connection matrix --------------------------------------------
CM=$OUT/perm_${NODES}n_${HT_SIZE}b_seed${HT_SEED}.cm
python3 "$GEN" "$CM" "$NODES" "$NODES" "$HT_SIZE" 0 "$HT_SEED" > "$OUT/gen_permutation.log"
# gen_permutation.py's fix-up of self-pairs can leave one; refuse a matrix that is no derangement.
awk 'NR > 2 { split($1, a, "->"); if (a[1] == a[2]) bad = 1; s[a[1]]++; d[a[2]]++; n++ }
     END { if (bad || length(s) != n || length(d) != n) exit 1 }' "$CM" ||
  die "$CM is not a permutation without self-pairs; try another --seed"

# run_timed NAME CMD...: stdout to NAME.out, stderr to NAME.err, "wall user sys" to NAME.time,
# the exit status to NAME.rc; never fails.
run_timed() {
  local name=$1; shift
  local rc=0 TIMEFORMAT='%R %U %S'
  { time { "$@" > "$OUT/$name.out" 2> "$OUT/$name.err" || rc=$?; }; } 2> "$OUT/$name.time"
  echo "$rc" > "$OUT/$name.rc"
}
# in_dir DIR CMD...: htsim_uec writes idmap.txt into its working directory; keep it in $OUT.
in_dir() { local d=$1; shift; (cd "$d" && "$@"); }

: > "$OUT/commands.txt"
# --- omrc-fabric, one run per policy ---------------------------------------
OMRC_SEED=()
[[ -z $SEED ]] || OMRC_SEED=(--seed "$SEED")
omrc_ok=1
[[ -x $OMRC ]] || { omrc_ok=0; echo "htsim_compare.sh: no omrc-fabric at $OMRC (build the release preset or pass --omrc-fabric); its rows will say so" >&2; }
for p in $POLICIES; do
  cmd=("$OMRC" "$SCENARIO" --json --policy "$p" "${OMRC_SEED[@]}")
  echo "${cmd[*]}" >> "$OUT/commands.txt"
  if ((omrc_ok)); then
    echo "htsim_compare.sh: omrc-fabric --policy $p"
    run_timed "omrc_$p" "${cmd[@]}"
  else
    echo "no omrc-fabric at $OMRC" > "$OUT/omrc_$p.err"; : > "$OUT/omrc_$p.out"; echo "0 0 0" > "$OUT/omrc_$p.time"; echo 127 > "$OUT/omrc_$p.rc"
  fi
done

# --- htsim_uec, one run per load-balancing algorithm -------------------------
for lb in $HTSIM_LB; do
  case $lb in
    ecmp) lb_args=(-load_balancing_algo oblivious -paths 1) ;;
    reps|oblivious|bitmap|mixed|reps_legacy) lb_args=(-load_balancing_algo "$lb" -paths "$EVS") ;;
    *) die "unknown --htsim-lb entry '$lb' (reps, oblivious, ecmp, bitmap, mixed, reps_legacy)" ;;
  esac
  # shellcheck disable=SC2206  # --htsim-extra is words on purpose
  cmd=("$HTSIM" -tm "$CM" -tiers 3 -linkspeed "$HT_MBPS" -hop_latency "$HOP_US" -switch_latency "$SW_US"
       -mtu "$FRAME" -q "$Q_PKTS" "${HT_ECN[@]}" "${HT_TRIM[@]}" -trimsize "$TRIM_BYTES"
       "${lb_args[@]}" -end "$MAX_US" -seed "$HT_SEED" -o "$OUT/htsim_$lb.dat" $HTSIM_EXTRA)
  echo "${cmd[*]}" >> "$OUT/commands.txt"
  echo "htsim_compare.sh: htsim_uec $lb"
  run_timed "htsim_$lb" in_dir "$OUT" "${cmd[@]}"
done

# --- the table ---------------------------------------------------------------
python3 - "$OUT" "$POLICIES" "$HTSIM_LB" "$NODES" "$MSG" "$MTU" "$OMRC_OVERHEAD" "$HOST_GBPS" "$HOST_NS" "$FAB_NS" "$SW_NS" <<'PY'
import json, math, os, re, sys
out, policies, lbs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
nodes, msg, mtu, ovh, gbps, host_ns, fab_ns, sw_ns = (float(x) for x in sys.argv[4:12])

def percentile(v, q):  # nearest rank, as omrc-fabric's summary
    v = sorted(v)
    r = math.ceil(q * len(v))
    return v[min(max(r, 1), len(v)) - 1]

def read(name, ext):
    p = os.path.join(out, f"{name}.{ext}")
    return open(p).read() if os.path.exists(p) else ""

def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else ""

rows, ideal, omrc_ideal = [], None, False
for p in policies:
    name = f"omrc_{p}"
    t = (read(name, "time").split() + ["0", "0", "0"])[:3]
    rc = int(read(name, "rc").strip() or 1)
    row = {"run": f"omrc-fabric {p}", "wall": float(t[0]), "cpu": float(t[1]) + float(t[2])}
    try:
        j = json.loads(read(name, "out"))
    except ValueError:
        j = None
    if j is None:
        row["note"] = "error: " + (last_line(read(name, "err")) or f"exit {rc}")
    else:
        if ideal is None:
            ideal, omrc_ideal = j["ideal_fct_us"], True
        row.update(p99=j["fct_p99_us"], max=j["fct_max_us"])
        row["note"] = (f"own p99/ideal {j['fct_p99_over_ideal']:.3f}; rtx {j['retransmits_pkts']}, "
                       f"trims {j['trims_pkts']}, ECN {j['ecn_marks_pkts']}")
        if not j.get("completed", True):
            row["note"] = "INCOMPLETE (a flow missed max_time_us); " + row["note"]
    rows.append(row)

if ideal is None:
    # No omrc-fabric run: the same ideal as its summary (drivers/sim/scenario.cpp ideal_fct_ps),
    # for a cross-pod flow (6 links) of plain frames.
    pkts = max(1, math.ceil(msg / mtu))
    bps = gbps * 1e9
    ser = lambda b: b * 8 / bps * 1e6
    frame = min(msg, mtu) + ovh
    ideal = ser(msg + pkts * ovh + 4) + (2 * host_ns + 4 * fab_ns + 5 * sw_ns) / 1000 + ser(frame) * 5

fin = re.compile(r"^Flow (\S+) flowId (\d+) .*? finished at ([-+.\deE]+)")
sta = re.compile(r"^Flow (\S+) flowId (\d+) .*? starting at ([-+.\deE]+)")
tot = re.compile(r"^New: (\d+) Rtx: (\d+) RTS: (\d+) Bounced: (\d+) ACKs: (\d+) NACKs: (\d+)")
for lb in lbs:
    name = f"htsim_{lb}"
    t = (read(name, "time").split() + ["0", "0", "0"])[:3]
    rc = int(read(name, "rc").strip() or 1)
    row = {"run": f"htsim_uec {lb}", "wall": float(t[0]), "cpu": float(t[1]) + float(t[2])}
    starts, ends, totals = {}, {}, None
    for line in read(name, "out").splitlines():
        m = sta.match(line)
        if m:
            starts[m.group(2)] = float(m.group(3))
            continue
        m = fin.match(line)
        if m:
            ends[m.group(2)] = float(m.group(3))
            continue
        m = tot.match(line)
        if m:
            totals = m.groups()
    fct = [ends[f] - starts.get(f, 0.0) for f in ends]
    if fct:
        row.update(p99=percentile(fct, 0.99), max=max(fct))
        with open(os.path.join(out, f"{name}_fct.txt"), "w") as f:
            f.write("\n".join(f"{x:.3f}" for x in sorted(fct)) + "\n")
    note = []
    if len(fct) < nodes:
        note.append(f"INCOMPLETE: {len(fct)}/{int(nodes)} flows finished")
    if rc != 0:
        note.append(f"exit {rc}: " + (last_line(read(name, "err")) or last_line(read(name, "out"))))
    if totals:
        note.append(f"pkts {totals[0]}, rtx {totals[1]}, NACKs {totals[5]}, ACKs {totals[4]}")
    row["note"] = "; ".join(note)
    rows.append(row)

def f3(r, k):
    return f"{r[k] / ideal:.3f}" if k in r else "-"
def f1(r, k):
    return f"{r[k]:.1f}" if k in r else "-"
hdr = ["run", "p99/ideal", "max/ideal", "p99 us", "max us", "wall s", "cpu s", "notes"]
lines = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
for r in rows:
    lines.append("| " + " | ".join([r["run"], f3(r, "p99"), f3(r, "max"), f1(r, "p99"), f1(r, "max"),
                                    f"{r['wall']:.1f}", f"{r['cpu']:.1f}", r.get("note", "")]) + " |")
src = "omrc-fabric's ideal_fct_us" if omrc_ideal else "computed as omrc-fabric would (no omrc-fabric run succeeded)"
lines.append("")
lines.append(f"ideal FCT {ideal:.3f} us ({src}) for every row. p99 is the nearest-rank 99th percentile of the")
lines.append("flows' FCTs (omrc-fabric's definition); omrc-fabric's own p99/ideal (of per-flow ratios) is in the notes.")
lines.append("htsim's FCT ends when the sender has the ACK of the last byte ('finished at'); omrc-fabric's when the")
lines.append("receiver completes the WRITE: htsim's include the last ACK's way back (~6 us on a cross-pod path).")
table = "\n".join(lines)
open(os.path.join(out, "table.md"), "w").write(table + "\n")
print(table)
PY

cat <<EOF

Commands ($OUT/commands.txt):
$(cat "$OUT/commands.txt")

Matched: k = $K fat tree ($NODES hosts, 3 tiers), ${HOST_GBPS} Gb/s and ${HOST_NS} ns on every link, switch latency ${SW_NS} ns,
hashing switches, frame $FRAME B on the wire for $MTU B of OpenMRC payload (htsim: $((FRAME - HTSIM_HDR)) B payload + $HTSIM_HDR B
header; flows of $HT_SIZE B so both send $PKTS packets and the same wire bytes), queues $Q_PKTS packets
($((Q_PKTS * FRAME)) B against ${LIMIT_KB} KiB), ECN step at $ECN_PKTS packets ($((ECN_PKTS * FRAME)) B against ${ECN_KB} KiB),
trimming to $TRIM_BYTES B, $EVS entropy values per connection, all flows start at 0, NSCC with a 1.5 BDP
window and a 0.75 x base-RTT target delay in both.
Not matched (htsim_uec has no flag for them):
  - the permutation itself: htsim's gen_permutation.py (seed $HT_SEED) and omrc-fabric's derangement (seed $SC_SEED)
    are different random permutations of the same kind;
  - FCT end: htsim at the sender's last ACK, omrc-fabric at the receiver's completion;
  - ECN: htsim marks on dequeue, also on the ToR-to-host queue (sender-driven mode always enables it there);
    OpenMRC marks on enqueue and never on the last hop;
  - trimming: a full htsim queue trims, with probability 1/2, the packet at its head instead of the arrival;
    its trimmed-header queue holds 2x the data limit and is served 100000:1 over data (OpenMRC: strict
    priority, priority_limit_kb); htsim has no wire overhead of its own, OpenMRC's 24 B preamble/SFD/
    IFG/FCS are folded into its $FRAME B packet (and so into its queue bytes);
  - ACKs: htsim's receiver acks every 16384 B (4 packets), at once on a CE-marked packet or an ACK request,
    with no timer; OpenMRC coalesces SACKs for up to 2 us / 16 packets and adds that hold to NSCC's
    largest window (htsim's is 1.5 BDP flat; both start every flow at the largest window);
  - NSCC's base RTT: htsim's 2 x 6 links' latency + 6 serialisations of a data packet and of a 64 B ACK;
    omrc-fabric's the unloaded cross-T1 data + ACK round trip with its own ACK size;
  - the ideal is the cross-pod one for every flow (omrc-fabric's ideal_fct_us), so the few flows within a
    ToR or a pod finish below 1.0 in both simulators;
  - hashing: htsim's switches hash (flow id, entropy) with a per-switch salt; OpenMRC hashes the EV its own way;
  - the load balancers themselves (REPS, oblivious spraying, ECMP in htsim; omrc-fabric's policies).
Outputs in $OUT: table.md, commands.txt, per-run .out/.err/.time, htsim_*_fct.txt (sorted FCTs, us).
EOF
