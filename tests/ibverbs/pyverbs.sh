#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rdma-core's pyverbs test suite (python3-pyverbs, v44) on OpenMRC's
# libibverbs.so.1 over one device of the given driver, judged by
# pyverbs_suite.py (docs/IBVERBS.md, "rdma-core's test suite").
#   pyverbs.sh LIBDIR loopback|udp
# Exit 77 when Debian's python3 has no pyverbs (python3-pyverbs missing).
set -euo pipefail
libdir=$(cd "$1" && pwd)
medium=$2
here=$(cd "$(dirname "$0")" && pwd)
# Debian's own interpreter: another python3 first on PATH has no pyverbs.
py=/usr/bin/python3
suite=/usr/share/doc/rdma-core/tests
if ! "$py" -c 'import pyverbs.device' 2>/dev/null || [[ ! -f $suite/run_tests.py ]]; then
  echo "SKIP: python3-pyverbs is not installed (scripts/deps installs it)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Debian compresses the larger files of the suite's copy.
cp -r "$suite" "$work/tests"
find "$work/tests" -name '*.py.gz' -exec gunzip {} +
case $medium in
  loopback|udp) "$here/../../bench/ibverbs/make_config.sh" "$medium" "$work/devices.toml" "$work" ;;
  *) echo "pyverbs.sh: unknown medium $medium"; exit 2 ;;
esac
cd "$work"
OMRC_LOG_LEVEL=${OMRC_LOG_LEVEL:-error} OMRC_IBV_CONFIG=$work/devices.toml \
  LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  "$py" "$here/pyverbs_suite.py" "$work" --dev omrc0
