#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# omrc-pcap (tools/pcap) on three kinds of capture:
#   1. wire_samples' pcap (one frame of every opcode, plain, SRv6, SRv6 with an
#      SRH, credit mode): every frame parses with a good ICRC, the summary's
#      frames and bytes per opcode are those wire_samples lists, the JSON and
#      text summaries agree, and the same frames as pcapng decode the same;
#   2. the sender's capture of a lossy loopback_demo transfer (1 MiB, 1 %
#      loss): every frame parses with a good ICRC, data and SACK opcodes are
#      there, and the counts match what the demo's sender counted (captured
#      frames and bytes, retransmissions as RTX frames);
#   3. a copy of (1) with one payload byte flipped, one frame cut short and
#      one frame that is not IPv6: reported as bad_icrc (headers still shown),
#      truncated_ext and not_ipv6, counted per error, exit status 0 (1 with
#      --strict); an unreadable file and a non-Ethernet capture exit 2.
#
#   tests/pcap/omrc_pcap.sh OMRC_PCAP_BIN WIRE_SAMPLES_BIN LOOPBACK_DEMO_BIN
#
# Exit status: 0 pass, 1 fail, 2 usage.
set -euo pipefail

if [[ $# -ne 3 ]]; then
    echo "usage: $0 OMRC_PCAP_BIN WIRE_SAMPLES_BIN LOOPBACK_DEMO_BIN" >&2
    exit 2
fi
tool=$1
samples_bin=$2
demo=$3
for b in "$tool" "$samples_bin" "$demo"; do
    [[ -x $b ]] || { echo "FAIL: $b is not executable" >&2; exit 1; }
done
command -v python3 >/dev/null 2>&1 || { echo "FAIL: python3 not found" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/omrc_pcap.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The capture helpers: pcap records rewritten (flip, cut, ethertype), pcap to
# pcapng, a pcap with another link type; and checks of omrc-pcap's output.
cat >"$tmp/helper.py" <<'PY'
import json, struct, sys

def read_pcap(path):
    data = open(path, "rb").read()
    assert struct.unpack_from("<I", data, 0)[0] == 0xA1B2C3D4, "expected a little-endian microsecond pcap"
    head, off, recs = data[:24], 24, []
    while off < len(data):
        sec, usec, caplen, length = struct.unpack_from("<IIII", data, off)
        recs.append([sec, usec, length, bytearray(data[off + 16:off + 16 + caplen])])
        off += 16 + caplen
    return head, recs

def write_pcap(path, head, recs):
    with open(path, "wb") as f:
        f.write(head)
        for sec, usec, length, b in recs:
            f.write(struct.pack("<IIII", sec, usec, len(b), length) + bytes(b))

def damage(src, dst, flip, cut, cut_to, not_ip):
    """Frame `flip` (1-based): one payload byte (10 bytes before the frame's
    end, inside a data packet's payload) flipped; frame `cut`: its bytes and
    wire length cut to `cut_to`; frame `not_ip`: ethertype 0x0800."""
    head, recs = read_pcap(src)
    recs[flip - 1][3][-10] ^= 0xFF
    recs[cut - 1][3] = recs[cut - 1][3][:cut_to]
    recs[cut - 1][2] = cut_to
    recs[not_ip - 1][3][12:14] = b"\x08\x00"
    write_pcap(dst, head, recs)

def to_pcapng(src, dst):
    """The same frames as pcapng: section header, one Ethernet interface
    (microsecond timestamps, the default), one enhanced packet block each."""
    _, recs = read_pcap(src)
    def block(btype, body):
        body += b"\0" * (-len(body) % 4)
        n = 12 + len(body)
        return struct.pack("<II", btype, n) + body + struct.pack("<I", n)
    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(0x00000001, struct.pack("<HHI", 1, 0, 65535))
    for sec, usec, length, b in recs:
        ts = sec * 1000000 + usec
        out += block(0x00000006, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(b), length) + bytes(b))
    open(dst, "wb").write(out)

def relink(src, dst, linktype):
    head, recs = read_pcap(src)
    write_pcap(dst, head[:20] + struct.pack("<I", linktype), recs)

def load(jsonl):
    lines = [json.loads(l) for l in open(jsonl)]
    assert lines and "summary" in lines[-1], "the last JSON line is not the summary"
    return lines[:-1], lines[-1]["summary"]

def text_table(path):
    """The summary's opcode table of the text output: {name: (frames, bytes)}."""
    rows, on = {}, False
    for line in open(path):
        f = line.split()
        if f[:3] == ["opcode", "frames", "bytes"]:
            on = True
        elif on and len(f) == 3 and f[1].isdigit():
            rows[f[0]] = (int(f[1]), int(f[2]))
        elif on:
            on = False
    return rows

def check_samples(listing, jsonl, text):
    # wire_samples lists " N mode/OPCODE  BYTES bytes  ...".
    want = {}
    for line in open(listing):
        f = line.split()
        if len(f) > 3 and f[3] == "bytes":
            op = f[1].split("/")[-1]
            frames, nbytes = want.get(op, (0, 0))
            want[op] = (frames + 1, nbytes + int(f[2]))
    frames, s = load(jsonl)
    n = sum(v[0] for v in want.values())
    errs = []
    if n == 0: errs.append("wire_samples listed no frames")
    if len(frames) != n or s["frames"] != n: errs.append(f"{len(frames)} frame lines, summary {s['frames']}, wire_samples wrote {n}")
    if s["parsed"] != n or s["icrc_ok"] != n or s["errors"]: errs.append(f"parsed {s['parsed']}, ICRC ok {s['icrc_ok']}, errors {s['errors']}")
    bad = [f["frame"] for f in frames if f["error"] is not None or f["icrc"] != "ok"]
    if bad: errs.append(f"frames without a good ICRC: {bad}")
    got = {op: (v["frames"], v["wire_bytes"]) for op, v in s["opcodes"].items()}
    if got != want: errs.append(f"per opcode (frames, bytes): omrc-pcap {got}, wire_samples {want}")
    if text_table(text) != want: errs.append(f"text summary table {text_table(text)}, wire_samples {want}")
    if s["srv6"] == 0 or s["srh"] == 0 or s["plain"] == 0: errs.append(f"modes: plain {s['plain']} srv6 {s['srv6']} srh {s['srh']}")
    srh = [f for f in frames if "srh" in f]
    if not srh or not srh[0]["srh"]["segments"]: errs.append("no SRH segments decoded")
    print(f"samples: {n} frames, {len(want)} opcodes, {s['srv6']} srv6 ({s['srh']} with an SRH), every ICRC ok")
    return errs

def check_lossy(demo_out, jsonl):
    text = open(demo_out).read()
    doc = json.loads(text[text.index("{"):])
    counters = doc["driver"]["counters"]
    resent = sum(p["data_resent"] for p in doc["planes"])
    frames, s = load(jsonl)
    ops = s["opcodes"]
    data = sum(v["frames"] for op, v in ops.items() if op.startswith("WRITE_"))
    sacks = ops.get("SACK", {}).get("frames", 0)
    rtx = sum(1 for f in frames if f.get("bth", {}).get("rtx"))
    errs = []
    if s["frames"] != counters["capture.frames"]: errs.append(f"{s['frames']} frames, the capture wrote {counters['capture.frames']}")
    if s["wire_bytes"] != counters["capture.bytes"]: errs.append(f"{s['wire_bytes']} bytes, the capture wrote {counters['capture.bytes']}")
    if s["parsed"] != s["frames"] or s["errors"]: errs.append(f"parsed {s['parsed']} of {s['frames']}, errors {s['errors']}")
    if s["icrc_ok"] != s["frames"]: errs.append(f"{s['icrc_ok']} of {s['frames']} with a good ICRC")
    if data < 256: errs.append(f"{data} data frames, expected at least 256 (1 MiB of 4 KiB)")
    if sacks == 0: errs.append("no SACK")
    if s["retransmitted"] != resent or rtx != resent: errs.append(f"RTX frames: summary {s['retransmitted']}, lines {rtx}, the sender resent {resent}")
    print(f"lossy: {s['frames']} frames ({data} data, {sacks} SACK, {s['retransmitted']} RTX = the sender's resends), every ICRC ok")
    return errs

def check_damaged(jsonl, flip, cut, not_ip):
    frames, s = load(jsonl)
    by = {f["frame"]: f for f in frames}
    errs = []
    f = by[flip]
    if f["error"] != "bad_icrc" or f["icrc"] != "bad" or "bth" not in f: errs.append(f"flipped frame {flip}: {f}")
    if by[cut]["error"] != "truncated_ext": errs.append(f"cut frame {cut}: {by[cut]}")
    if by[not_ip]["error"] != "not_ipv6": errs.append(f"non-IPv6 frame {not_ip}: {by[not_ip]}")
    others = [f["frame"] for f in frames if f["frame"] not in (flip, cut, not_ip) and f["error"] is not None]
    if others: errs.append(f"undamaged frames with errors: {others}")
    want = {"bad_icrc": 1, "truncated_ext": 1, "not_ipv6": 1}
    got = {e: v["frames"] for e, v in s["errors"].items()}
    if got != want or s["not_parsed"] != 3 or s["parsed"] != s["frames"] - 3: errs.append(f"errors {got}, not parsed {s['not_parsed']}")
    print(f"damaged: {got} counted, {s['parsed']} of {s['frames']} parsed")
    return errs

if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "damage": damage(args[0], args[1], *map(int, args[2:]))
    elif cmd == "pcapng": to_pcapng(*args)
    elif cmd == "relink": relink(args[0], args[1], int(args[2]))
    else:
        errs = {"samples": check_samples, "lossy": check_lossy}.get(cmd, None)
        errs = errs(*args) if errs else check_damaged(args[0], *map(int, args[1:]))
        for e in errs: print("  " + e, file=sys.stderr)
        sys.exit(1 if errs else 0)
PY
helper() { python3 "$tmp/helper.py" "$@"; }

# --- 1. wire_samples: every opcode, every mode -----------------------------------
"$samples_bin" "$tmp/samples.pcap" >"$tmp/samples.txt" || fail "wire_samples failed"
"$tool" --json "$tmp/samples.pcap" >"$tmp/samples.jsonl" || fail "omrc-pcap --json exited $?"
"$tool" --strict "$tmp/samples.pcap" >"$tmp/samples.out" || fail "omrc-pcap --strict on wire_samples exited $?"
helper samples "$tmp/samples.txt" "$tmp/samples.jsonl" "$tmp/samples.out" || fail "wire_samples' capture (above)"
lines=$(grep -c ' icrc=ok$' "$tmp/samples.out" || true)
listed=$(grep -c ' bytes  qpn ' "$tmp/samples.txt" || true)
((lines == listed)) || fail "$lines text lines end in icrc=ok, wire_samples wrote $listed frames"
grep -q 'srv6+srh .* SRH\[sl=' "$tmp/samples.out" || fail "no text line shows an SRH"
grep -q ' SACK .* SETH\[cack=.* bitmap=0x' "$tmp/samples.out" || fail "no text line shows a SACK's SETH"
# pcapng: the same frames decode to the same lines.
helper pcapng "$tmp/samples.pcap" "$tmp/samples.pcapng"
"$tool" "$tmp/samples.pcapng" >"$tmp/samples_ng.out" || fail "omrc-pcap on pcapng exited $?"
diff -u "$tmp/samples.out" "$tmp/samples_ng.out" >&2 || fail "pcapng decodes differently from pcap (above)"
echo "samples: the pcapng copy decodes to the same lines"

# --- 2. a lossy transfer --------------------------------------------------------
"$demo" --bytes $((1 << 20)) --loss 0.01 --seed 7 --stats --pcap "$tmp/lossy.pcap" >"$tmp/demo.txt" ||
    { cat "$tmp/demo.txt" >&2; fail "loopback_demo failed"; }
grep -q 'byte-exact' "$tmp/demo.txt" || fail "the transfer was not byte-exact"
"$tool" --json --strict "$tmp/lossy.pcap" >"$tmp/lossy.jsonl" || fail "omrc-pcap --strict on the lossy capture exited $?"
helper lossy "$tmp/demo.txt" "$tmp/lossy.jsonl" || fail "the lossy capture (above)"

# --- 3. damaged frames ------------------------------------------------------------
flip=1 cut=10 not_ip=12  # WRITE_FIRST's payload; a plain SACK cut inside SETH (74 + 20 bytes); a PROBE
helper damage "$tmp/samples.pcap" "$tmp/damaged.pcap" "$flip" "$cut" 94 "$not_ip"
"$tool" --json "$tmp/damaged.pcap" >"$tmp/damaged.jsonl" || fail "omrc-pcap on damaged frames exited $?, expected 0"
helper damaged "$tmp/damaged.jsonl" "$flip" "$cut" "$not_ip" || fail "the damaged capture (above)"
"$tool" "$tmp/damaged.pcap" >"$tmp/damaged.out" || fail "omrc-pcap (text) on damaged frames exited $?, expected 0"
grep -Eq "^ +$flip .* WRITE_FIRST .* icrc=bad error=bad_icrc$" "$tmp/damaged.out" ||
    fail "frame $flip is not shown with its headers and error=bad_icrc"
grep -Eq "^ +$cut .* error=truncated_ext$" "$tmp/damaged.out" || fail "frame $cut is not shown with error=truncated_ext"
grep -Eq '^bad_icrc +1 ' "$tmp/damaged.out" || fail "the text summary does not count bad_icrc"
grep -Eq '^truncated_ext +1 ' "$tmp/damaged.out" || fail "the text summary does not count truncated_ext"
rc=0
"$tool" --strict -q "$tmp/damaged.pcap" >/dev/null || rc=$?
((rc == 1)) || fail "omrc-pcap --strict on damaged frames exited $rc, expected 1"
# --no-icrc: the flipped frame parses, its ICRC unchecked.
"$tool" --no-icrc --json "$tmp/damaged.pcap" >"$tmp/unchecked.jsonl" || fail "omrc-pcap --no-icrc exited $?"
python3 -c '
import json, sys
f = json.loads(open(sys.argv[1]).readline())
sys.exit(0 if f["error"] is None and f["icrc"] == "unchecked" else 1)' "$tmp/unchecked.jsonl" ||
    fail "--no-icrc still rejects the flipped frame"
rc=0
"$tool" "$tmp/missing.pcap" >/dev/null 2>"$tmp/missing.err" || rc=$?
((rc == 2)) || fail "omrc-pcap on a missing file exited $rc, expected 2"
helper relink "$tmp/samples.pcap" "$tmp/raw.pcap" 101  # LINKTYPE_RAW: IP without Ethernet
rc=0
"$tool" "$tmp/raw.pcap" >/dev/null 2>"$tmp/raw.err" || rc=$?
((rc == 2)) || fail "omrc-pcap on a non-Ethernet capture exited $rc, expected 2"
grep -q 'link type' "$tmp/raw.err" || fail "omrc-pcap does not say why it rejects a non-Ethernet capture"
echo "damaged: exit 0 (1 with --strict); a missing file and a non-Ethernet capture exit 2"

echo "PASS: omrc-pcap decodes wire_samples, a lossy transfer and damaged frames with lib/wire's parser"
