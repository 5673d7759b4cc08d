#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs the net_tap cases of the DPDK tests and the driver conformance suite: they need root, /dev/net/tun and
# tc. Exits 77 (skipped) where any is missing.
set -u
tests=$1
if [[ $(id -u) != 0 || ! -c /dev/net/tun ]] || ! command -v tc >/dev/null; then
  echo "skipped: net_tap needs root, /dev/net/tun and tc"
  exit 77
fi
# net_tap (and af_packet) cases, then the driver conformance suite over
# net_tap, each in a process of its own: ports are stopped, never closed, and
# one process has room for RTE_MAX_ETHPORTS (32) of them.
"$tests" "[dpdk_tap]" --warn NoTests || exit 1
"$tests" "[driver]" --warn NoTests || exit 1
# The zero-copy case again with IOVA as physical addresses (registered pages
# pinned and looked up in /proc/self/pagemap) where the EAL can run so; where
# physical addresses are hidden (some VMs and containers) the EAL selects VA
# again, and the case says which mode it ran in.
set -o pipefail
OMRC_TEST_EAL_EXTRA=--iova-mode=pa "$tests" "dpdk: zero-copy WRITEs over net_af_packet*" --warn NoTests -s |
  grep -E "IOVA as|test case|FAILED"
