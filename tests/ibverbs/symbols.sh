#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# OpenMRC's libibverbs.so.1 exports exactly what the system's rdma-core
# libibverbs.so.1 exports: every symbol with its version (default @@ or
# compatibility @), every version node, and nothing else.
set -euo pipefail
ours=$1
# (awk reads all of ldconfig's output: an early exit would kill it with SIGPIPE under pipefail)
sys=${2:-$(ldconfig -p | awk '/libibverbs\.so\.1 .*x86-64/ && !found {print $NF; found = 1}')}
[[ -n $sys && -e $sys ]] || { echo "SKIP: no system libibverbs.so.1"; exit 77; }
exports() { nm -D --defined-only "$1" | awk '{print $2, $3}' | sed 's/^[TBDRWV] /F /' | sort; }
diff <(exports "$sys") <(exports "$ours") && {
  echo "ibverbs symbols: $(exports "$ours" | wc -l) exports match $sys"
  exit 0
}
echo "FAIL: exports differ from $sys (< system only, > OpenMRC only)"
exit 1
