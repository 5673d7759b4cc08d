#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A process whose libibverbs.so.1 would be OpenMRC's (its directory first on
# LD_LIBRARY_PATH) opening dpdk ports while ConnectX (mlx5) devices are there
# to probe: the open fails before the EAL starts, naming the devices, the
# library and the two routes that work (drivers/dpdk/ibverbs_clash.hpp). The
# ConnectX device is a fake sysfs entry ($OMRC_SYSFS_PCI_ROOT).
#   ibverbs_clash.sh OMRC_PERF IBVERBS_DIR
set -u
perf=$1
ibverbs_dir=$2
[[ -e $ibverbs_dir/libibverbs.so.1 ]] || { echo "SKIP: no OpenMRC libibverbs.so.1 in $ibverbs_dir"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/pci/0000:17:00.0" "$tmp/drivers/mlx5_core"
echo 0x15b3 >"$tmp/pci/0000:17:00.0/vendor"
ln -s "$tmp/drivers/mlx5_core" "$tmp/pci/0000:17:00.0/driver"
run() {  # run LD_LIBRARY_PATH EAL_ARGS: omrc-perf's open, its output in $tmp/out
  OMRC_SYSFS_PCI_ROOT=$tmp/pci LD_LIBRARY_PATH=$1 timeout 60 "$perf" write_bw --driver dpdk --eal "$2" -p 19999 \
    >"$tmp/out" 2>&1
}
fail=0
run "$ibverbs_dir" "--no-huge -m 256"
rc=$?
if [[ $rc == 0 ]] || ! grep -q "ConnectX port 0000:17:00.0 (mlx5) cannot come up" "$tmp/out" ||
   ! grep -q "OpenMRC's ($ibverbs_dir" "$tmp/out" || ! grep -q "NCCL's net plugin" "$tmp/out"; then
  echo "FAIL: under OpenMRC's libibverbs the open did not fail naming the clash (exit $rc):"; cat "$tmp/out"; fail=1
else
  echo "ok: under OpenMRC's libibverbs: $(grep -o 'ConnectX port.*cannot come up in this process' "$tmp/out")"
fi
# Not probed (--no-pci, or the device blocked): no clash; the open goes on
# (and finds no ports: no vdevs given).
for eal in "--no-huge -m 256 --no-pci" "--no-huge -m 256 -b 0000:17:00.0"; do
  run "$ibverbs_dir" "$eal"
  if grep -q "cannot come up" "$tmp/out"; then echo "FAIL: EAL \"$eal\": a clash reported"; cat "$tmp/out"; fail=1
  else echo "ok: EAL \"$eal\": no clash"; fi
done
# rdma-core's library (or none on LD_LIBRARY_PATH): no clash.
run "" "--no-huge -m 256 --no-pci"
if grep -q "cannot come up" "$tmp/out"; then echo "FAIL: without OpenMRC's libibverbs a clash was reported"; fail=1
else echo "ok: without OpenMRC's libibverbs: no clash"; fi
exit $fail
