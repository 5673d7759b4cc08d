#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Writes a device configuration file (docs/CONFIG.md): for udp and memif two OpenMRC devices,
# omrc0 (server) and omrc1 (client), for running ibverbs programs and
# omrc-perf against each other on this machine:
#   make_config.sh udp   OUT.toml DIR   two udp devices on [::1], 4 planes, free port blocks
#   make_config.sh memif OUT.toml DIR   two DPDK net_memif devices, 2 planes, sockets in DIR (root)
#   make_config.sh loopback OUT.toml DIR   one loopback device, omrc0, 4 planes (its QPs reach only each
#                                       other, in one process: the C API test and rdma-core's suite)
# Both devices get min_ev_timeout_ns = $OMRC_MIN_EV_TIMEOUT_NS (default 4 ms):
# their endpoints share this machine's cores with the other side and every
# other process, and a descheduled endpoint stalls for a scheduler slice
# (docs/CONFIG.md); the engine's default of 20 us would resend everything in
# flight at every such stall.
# Exit 77 when the medium is not available here.
set -euo pipefail
medium=$1
cfg=$2
dir=$3
tag=$$
min_ev_timeout_ns=${OMRC_MIN_EV_TIMEOUT_NS:-4000000}
free_block() {  # 4 planes × 16 consecutive UDP ports, aligned to 16, all free on ::1
  python3 - <<'EOF'
import random, socket
for _ in range(200):
    base = random.randrange(20000, 60000 - 64) // 16 * 16
    socks = []
    try:
        for p in range(base, base + 64):
            s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.bind(("::1", p)); socks.append(s)
        print(base); break
    except OSError:
        pass
    finally:
        for s in socks: s.close()
EOF
}

case $medium in
  udp)
    b0=$(free_block); b1=$(free_block)
    while (( b1 > b0 - 64 && b1 < b0 + 64 )); do b1=$(free_block); done
    cat >"$cfg" <<EOF
# Two OpenMRC devices on the udp driver, 4 planes each, on [::1].
[defaults]
driver = "udp"
planes = 4
min_ev_timeout_ns = $min_ev_timeout_ns

[[device]]
name = "omrc0"
[device.args]
local = "[::1]:$b0"

[[device]]
name = "omrc1"
[device.args]
local = "[::1]:$b1"
EOF
    ;;
  memif)
    [[ $(id -u) -eq 0 ]] || { echo "SKIP: memif needs root"; exit 77; }
    pkg-config --exists libdpdk 2>/dev/null || { echo "SKIP: no DPDK"; exit 77; }
    sock=$dir/memif
    mac_s0=02:4d:00:00:00:01; mac_s1=02:4d:00:00:01:01
    mac_c0=02:4d:00:00:00:02; mac_c1=02:4d:00:00:01:02
    cat >"$cfg" <<EOF
# Two OpenMRC devices on DPDK net_memif, 2 planes each (a memif pair per plane).
[defaults]
min_ev_timeout_ns = $min_ev_timeout_ns

[[device]]
name = "omrc0"
driver = "dpdk"
planes = 2
[device.args]
eal = "--no-huge -m 1024 --no-pci --log-level=*:warning --file-prefix omrc-ibv-s-$tag --vdev net_memif0,role=server,socket=$sock-0.sock,bsize=8192,mac=$mac_s0 --vdev net_memif1,role=server,socket=$sock-1.sock,bsize=8192,mac=$mac_s1"
next_hop_macs = "$mac_c0,$mac_c1"

[[device]]
name = "omrc1"
driver = "dpdk"
planes = 2
[device.args]
eal = "--no-huge -m 1024 --no-pci --log-level=*:warning --file-prefix omrc-ibv-c-$tag --vdev net_memif0,role=client,socket=$sock-0.sock,bsize=8192,mac=$mac_c0 --vdev net_memif1,role=client,socket=$sock-1.sock,bsize=8192,mac=$mac_c1"
next_hop_macs = "$mac_s0,$mac_s1"
EOF
    ;;
  loopback)
    cat >"$cfg" <<'EOF'
[[device]]
name = "omrc0"
driver = "loopback"
planes = 4
EOF
    ;;
  *) echo "usage: $0 udp|memif|loopback OUT.toml DIR"; exit 2 ;;
esac

