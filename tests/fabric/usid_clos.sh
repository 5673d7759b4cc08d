#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The real SRv6 uSID fabric test (docs/FABRIC-TEST.md): a two-plane, two-tier Clos of Linux SRv6 routers in network
# namespaces (tests/fabric/topology.sh), checked first on its own with
# OpenMRC frames (fabric_probe), then carrying an OpenMRC transfer between two
# DPDK devices while a T0–T1 link and then a whole receiver port go down
# (fabric_transfer).
#
#   usid_clos.sh --probe PATH [--transfer PATH] [--routers-only] [--pmd tap|af_packet]
#                [--driver dpdk|udp] [--keep] [-- fabric_transfer options...]
#
# --pmd tap (default): each NIC port is a DPDK net_tap whose kernel side is
#   wired to the host's veth by tc (u32 + mirred); the tap's link state is
#   what the driver reads, so downing it is a port failure OpenMRC sees.
# --pmd af_packet: net_af_packet straight on the veths. DPDK 22.11's
#   af_packet PMD always reports link up, so the port-failure step is skipped.
# --keep: leave the namespaces in place (for debugging; remove them with
#   `ip netns del` on every omf<pid>-* namespace).
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root, no network
# namespaces, no kernel SRv6 End with NEXT-C-SID, no DPDK build).
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROBE="" TRANSFER="" ROUTERS_ONLY=0 PMD=tap KEEP=0 DRIVER=dpdk
EXTRA=()

skip() { echo "usid_clos: SKIP: $*"; exit 77; }
fail() { echo "usid_clos: FAIL: $*"; exit 1; }

# Internal: wire DPDK tap ports to veths, both ways (run in the hosts namespace
# by fabric_transfer --on-open, once the taps exist). Arguments: tap=veth...
if [[ ${1:-} == --plumb ]]; then
    shift
    for pair in "$@"; do
        tap=${pair%%=*} veth=${pair#*=}
        for dev in "$tap" "$veth"; do tc qdisc add dev "$dev" clsact || exit 1; done
        tc filter add dev "$tap" ingress u32 match u32 0 0 action mirred egress redirect dev "$veth" || exit 1
        tc filter add dev "$veth" ingress u32 match u32 0 0 action mirred egress redirect dev "$tap" || exit 1
    done
    exit 0
fi

while [[ $# -gt 0 ]]; do
    case $1 in
        --probe) PROBE=$2; shift 2 ;;
        --transfer) TRANSFER=$2; shift 2 ;;
        --routers-only) ROUTERS_ONLY=1; shift ;;
        --pmd) PMD=$2; shift 2 ;;
        --driver) DRIVER=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        --) shift; EXTRA=("$@"); break ;;
        *) echo "usage: $0 --probe PATH [--transfer PATH] [--routers-only] [--pmd tap|af_packet] [--keep] [-- ...]" >&2
           exit 2 ;;
    esac
done
[[ -x $PROBE ]] || { echo "usid_clos: --probe: no executable fabric_probe at '$PROBE'" >&2; exit 2; }
[[ $PMD == tap || $PMD == af_packet ]] || { echo "usid_clos: --pmd tap|af_packet" >&2; exit 2; }
[[ $DRIVER == dpdk || $DRIVER == udp ]] || { echo "usid_clos: --driver dpdk|udp" >&2; exit 2; }
if [[ $ROUTERS_ONLY == 0 && ! -x $TRANSFER ]]; then
    skip "no fabric_transfer (built only with the DPDK driver)"
fi

[[ $(id -u) == 0 ]] || skip "needs root (network namespaces)"
command -v ip >/dev/null && command -v tc >/dev/null || skip "needs iproute2 (ip, tc)"

# Unique per run, so parallel runs never meet.
FAB_PREFIX="omf$$"
# shellcheck source=topology.sh
. "$HERE/topology.sh"
cleanup() {
    if [[ $KEEP == 1 ]]; then
        echo "usid_clos: --keep: namespaces left: ${FAB_NAMESPACES[*]}"
    else
        fab_destroy
    fi
    # The EAL's runtime directory of this run's --file-prefix.
    rm -rf "/var/run/dpdk/$FAB_PREFIX"
    [[ -n ${WORK:-} ]] && rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# What the kernel offers.
ip netns add "$FAB_PREFIX-try" 2>/dev/null || skip "cannot create network namespaces"
FAB_NAMESPACES+=("$FAB_PREFIX-try")
ip -n "$FAB_PREFIX-try" link set lo up
if ! ip -n "$FAB_PREFIX-try" -6 route add fcbb:0:1400::/48 encap seg6local action End flavors next-csid \
        lblen 32 nflen 16 dev lo 2>/dev/null; then
    skip "the kernel (or iproute2) has no SRv6 End with NEXT-C-SID (seg6local ... flavors next-csid)"
fi
ip netns del "$FAB_PREFIX-try"
FAB_NAMESPACES=()

echo "usid_clos: building the fabric ($FAB_PLANES planes x $FAB_T0 T0 x $FAB_T1 T1, namespaces $FAB_PREFIX-*)"
fab_build || fail "could not build the topology"
H=$(fab_ns_hosts)

# ---------------------------------------------------------------------------
# 1. The routers alone: one OpenMRC frame per plane, T1 and direction. Each
#    must arrive shifted to the receiving NIC's address, and the T1 the EV
#    chose (and only it) must have run its uN behaviour once.
probe() {  # plane src dst path [--expect-drop]
    ip netns exec "$H" "$PROBE" --send-if "$(fab_host_if "$2" "$1")" --recv-if "$(fab_host_if "$3" "$1")" \
        --src-host "$2" --dst-host "$3" --plane "$1" --path "$4" --next-hop-mac "$(fab_mac_t0_down "$1" "$2")" \
        --planes "$FAB_PLANES" --t0 "$FAB_T0" --t1 "$FAB_T1" --hosts-per-t0 1 "${@:5}"
}
echo "usid_clos: router check"
errors=0
for ((p = 0; p < FAB_PLANES; p++)); do
    for ((j = 0; j < FAB_T1; j++)); do
        for dir in "0 1" "1 0"; do
            read -r a b <<<"$dir"
            declare -a before=()
            for ((k = 0; k < FAB_T1; k++)); do before[k]=$(fab_un_packets "$(fab_ns_t1 $p $k)" "$(fab_prefix $p 2 $k)"); done
            probe $p "$a" "$b" $j || errors=$((errors + 1))
            for ((k = 0; k < FAB_T1; k++)); do
                now=$(fab_un_packets "$(fab_ns_t1 $p $k)" "$(fab_prefix $p 2 $k)")
                want=$((before[k] + (k == j ? 1 : 0)))
                if [[ $now != "$want" ]]; then
                    echo "FAIL plane $p path $j: T1 $k uN counter ${before[k]} -> $now (want $want)"
                    errors=$((errors + 1))
                fi
            done
        done
    done
done
[[ $errors == 0 ]] || { fab_dump; fail "router check: $errors error(s)"; }
echo "usid_clos: router check passed: every plane and T1 forwards OpenMRC frames to the right NIC"

LINK_DOWN_NS=$(fab_ns_t0 0 0)  # host 0's T0 on plane 0 ...
LINK_DOWN_IF=up1               # ... loses its uplink to T1 1
link_down_check() {
    if ip -n "$LINK_DOWN_NS" link show "$LINK_DOWN_IF" | grep -q ",UP"; then
        echo "usid_clos: the T0-T1 link never went down (the transfer did not get that far)"
        return
    fi
    echo "usid_clos: fabric after the link failure: plane 0 T1 1 dropped from host 0's T0, T1 0 still forwarding"
    probe 0 0 1 1 --expect-drop && probe 0 0 1 0 || fail "the failed link is not where the test expects it"
}

# Acknowledgements leave the dead path: after the link fails, nothing from
# host 0 reaches plane 0's T1 1 (its uplink from host 0's T0 is the dead
# link), so every frame its uN route still processes is the receiver's,
# on its way to host 0 and dropped there. The counter is read by the link-down
# command right after the link goes down and again after the transfer: the
# difference is what the receiver sent into the dead path after the failure.
WORK=$(mktemp -d)
COUNT_DEAD="$WORK/count_dead_t1.sh"
printf '#!/bin/sh\nip -n %s -6 -s route show %s | sed -n "s/.* packets \\([0-9]*\\) .*/\\1/p"\n' \
    "$(fab_ns_t1 0 1)" "$(fab_prefix 0 2 1)" >"$COUNT_DEAD"
chmod +x "$COUNT_DEAD"
LINK_DOWN_CMD="ip -n $LINK_DOWN_NS link set $LINK_DOWN_IF down && $COUNT_DEAD > $WORK/dead_at_down"
ACK_LEAK_MAX=8  # acknowledgements already queued in the receiver when the link failed
ack_leak_check() {
    [[ -s $WORK/dead_at_down ]] || { echo "usid_clos: FAIL: the dead T1's counter was not read at the link failure"; return 1; }
    local at_down end
    at_down=$(cat "$WORK/dead_at_down"); end=$("$COUNT_DEAD")
    echo "usid_clos: frames into the dead path (plane 0 T1 1) after the link failure: $((end - at_down)) (${at_down} -> ${end}; at most $ACK_LEAK_MAX)"
    ((end - at_down <= ACK_LEAK_MAX)) || { echo "usid_clos: FAIL: the receiver kept acknowledging into the dead path"; return 1; }
}

if [[ $ROUTERS_ONLY == 1 ]]; then
    ip -n "$LINK_DOWN_NS" link set "$LINK_DOWN_IF" down || fail "link down"
    link_down_check
    echo "usid_clos: PASS (routers only)"
    exit 0
fi

# ---------------------------------------------------------------------------
# 2. Two OpenMRC devices on the fabric: host 0 (sender) and host 1 (receiver),
#    one DPDK port per plane, all in the hosts namespace, one process.
if [[ $DRIVER == udp ]]; then
    # The udp driver's SRv6 mode: raw sockets straight on the host veths, no DPDK.
    ports=("" "")
    for ((h = 0; h < 2; h++)); do
        for ((p = 0; p < FAB_PLANES; p++)); do ports[h]+="${ports[h]:+,}$(fab_host_if $h $p)"; done
    done
    nh() { local p out=""; for ((p = 0; p < FAB_PLANES; p++)); do out+="${out:+,}$(fab_mac_t0_down $p "$1")"; done; echo "$out"; }
    args=(--driver udp --ports-a "${ports[0]}" --ports-b "${ports[1]}" --next-hop-a "$(nh 0)" --next-hop-b "$(nh 1)"
          --planes "$FAB_PLANES" --t0 "$FAB_T0" --t1 "$FAB_T1" --hosts-per-t0 1 --host-a 0 --host-b 1
          --link-down-cmd "$LINK_DOWN_CMD" --failed-plane 0 --failed-t1 1
          --timeout-s 150 --plane-down-cmd "ip link set $(fab_host_if 1 1) down" --down-plane 1)
    PMD="udp driver, raw sockets on the host veths,"
else
vdevs=() plumb=() ports=("" "")
for ((h = 0; h < 2; h++)); do
    for ((p = 0; p < FAB_PLANES; p++)); do
        k=$((h * FAB_PLANES + p))
        if [[ $PMD == tap ]]; then
            [[ -c /dev/net/tun ]] || skip "no /dev/net/tun for net_tap"
            vdevs+=(--vdev "net_tap$k,iface=t${h}p$p,mac=$(fab_mac_host $h $p)")
            plumb+=("t${h}p$p=$(fab_host_if $h $p)")
            ports[h]+="${ports[h]:+,}net_tap$k"
        else
            vdevs+=(--vdev "net_af_packet$k,iface=$(fab_host_if $h $p),blocksz=4096,framesz=4096,framecnt=1024,qdisc_bypass=1")
            ports[h]+="${ports[h]:+,}net_af_packet$k"
        fi
    done
done
nh() { local p out=""; for ((p = 0; p < FAB_PLANES; p++)); do out+="${out:+,}$(fab_mac_t0_down $p "$1")"; done; echo "$out"; }
# net_tap's init complains that it has no multiq qdisc (no rte_flow, which is not needed): quiet.
EAL="--no-huge -m 1024 --no-pci --file-prefix $FAB_PREFIX --log-level=lib.eal:error --log-level=pmd.net.tap:critical ${vdevs[*]}"

args=(--eal "$EAL" --ports-a "${ports[0]}" --ports-b "${ports[1]}" --next-hop-a "$(nh 0)" --next-hop-b "$(nh 1)"
      --planes "$FAB_PLANES" --t0 "$FAB_T0" --t1 "$FAB_T1" --hosts-per-t0 1 --host-a 0 --host-b 1
      --link-down-cmd "$LINK_DOWN_CMD" --failed-plane 0 --failed-t1 1
      --timeout-s 150)
if [[ $PMD == tap ]]; then
    # DPDK 22.11's net_tap takes frames up to 1522 bytes: 1 KiB payloads.
    args+=(--mtu 1024 --on-open "$HERE/usid_clos.sh --plumb ${plumb[*]}"
           --plane-down-cmd "ip link set t1p1 down && ip link set $(fab_host_if 1 1) down" --down-plane 1)
else
    echo "usid_clos: af_packet ports: the receiver-port failure step is skipped (the PMD never reports link down)"
    # 4 KiB ring frames (they must fit the driver's mbufs): 2 KiB payloads.
    args+=(--mtu 2048 --plane-down-cmd "")
fi
fi
echo "usid_clos: transfer ($PMD ports)"
# In the background so that a signal reaches the trap (and the cleanup) at once.
ip netns exec "$H" "$TRANSFER" "${args[@]}" "${EXTRA[@]}" &
wait $!
rc=$?

echo "usid_clos: uN packets per T1 (every T1 must have carried the transfer):"
used=0
for ((p = 0; p < FAB_PLANES; p++)); do
    for ((j = 0; j < FAB_T1; j++)); do
        n=$(fab_un_packets "$(fab_ns_t1 $p $j)" "$(fab_prefix $p 2 $j)")
        echo "  plane $p T1 $j ($(fab_prefix $p 2 $j)): $n"
        [[ ${n:-0} -gt 1000 ]] && used=$((used + 1))
    done
done
[[ $used == $((FAB_PLANES * FAB_T1)) ]] || { echo "usid_clos: FAIL: a T1 carried (almost) nothing"; rc=1; }
ack_leak_check || rc=1
link_down_check
case $rc in
    0) echo "usid_clos: PASS" ;;
    *) fail "fabric_transfer exited with $rc" ;;
esac
