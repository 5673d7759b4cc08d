#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs the udp driver's SRv6 (raw socket) tests: one veth pair per plane,
# device A on the "a" ends, device B on the "b" ends. Needs root (CAP_NET_RAW,
# CAP_NET_ADMIN) and veth support; exits 77 (skipped) where either is missing.
# Runs in a network namespace of its own where unshare(1) works, so that no
# route or neighbour of the host is involved; the veths are deleted on every
# exit path either way.
#   run_udp_raw.sh PATH_TO_omrc_udp_raw_tests [catch2 arguments...]
set -u
tests=$1
shift
if [[ $(id -u) != 0 ]] || ! command -v ip >/dev/null; then
    echo "udp_raw: SKIP: needs root and ip(8)"
    exit 77
fi
if [[ -z ${OMRC_UDP_RAW_NETNS:-} ]] && unshare -n true 2>/dev/null; then
    OMRC_UDP_RAW_NETNS=1 exec unshare -n -- "$0" "$tests" "$@"
fi

tag="or$$"
planes=(0 1 2 3)
cleanup() {
    for p in "${planes[@]}"; do ip link del "${tag}a$p" 2>/dev/null; done
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

ifaces_a=() ifaces_b=()
for p in "${planes[@]}"; do
    if ! ip link add "${tag}a$p" type veth peer name "${tag}b$p" 2>/dev/null; then
        echo "udp_raw: SKIP: cannot create a veth pair"
        exit 77
    fi
    for end in a b; do
        i="${tag}${end}$p"
        # No IPv6 on the veths: the kernel sends no neighbour discovery or MLD,
        # so every frame the tests see is one they sent.
        [[ -e /proc/sys/net/ipv6/conf/$i/disable_ipv6 ]] && echo 1 >"/proc/sys/net/ipv6/conf/$i/disable_ipv6"
        ip link set "$i" mtu 9000 up || exit 1
    done
    ifaces_a+=("${tag}a$p") ifaces_b+=("${tag}b$p")
done
OMRC_UDP_RAW_IFACES_A=$(IFS=,; echo "${ifaces_a[*]}")
OMRC_UDP_RAW_IFACES_B=$(IFS=,; echo "${ifaces_b[*]}")
export OMRC_UDP_RAW_IFACES_A OMRC_UDP_RAW_IFACES_B
if [[ $# -eq 0 ]]; then set -- "[udp_raw],[driver]" --warn NoTests; fi
"$tests" "$@"
exit $?
