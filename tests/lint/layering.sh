#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The layers of docs/ARCHITECTURE.md ("Layers"), checked on the includes:
# each directory includes only itself and what lies below it. In particular
# nothing in lib/ includes drivers/, and a driver includes no other driver.
set -euo pipefail
root=${1:-$(dirname "$0")/../..}
cd "$root"
# directory → the include roots it may use ("drivers/NAME" stands for its own directory)
declare -A allowed=(
  [lib/wire]="wire"
  [lib/routing]="routing wire"
  # Encrypted mode's crypto (AES-GCM, PSP key derivation): pure computation over wire's types.
  [lib/security]="security wire"
  [lib/core]="core security routing wire"
  [lib/log]="log"
  [lib/driver]="driver core routing wire log omrc"
  [lib/runtime]="runtime driver core routing wire log omrc"
  [lib/verbs]="verbs runtime driver core routing wire log omrc"
  # Configuration files: the public types they fill and the fabric's limits.
  [lib/config]="config routing security wire omrc"
  # The C API sits on the public API only (and the logger).
  [lib/capi]="capi log omrc"
  # libibverbs.so.1 (docs/IBVERBS.md): the public API and the logger, like the C API.
  [lib/ibverbs]="ibverbs log omrc"
  # The NCCL net plugin (docs/NCCL.md): the public API and the logger.
  [plugins/nccl]="log omrc"
  # The simulator is no runtime driver: it hosts engines and needs no driver interface.
  [drivers/sim]="drivers/NAME core routing wire"
)
# Every other directory of drivers/ is a driver: itself and what a driver builds on.
for d in drivers/*/; do
  d=${d%/}
  [[ -v allowed[$d] ]] || allowed[$d]="drivers/NAME driver core routing wire log omrc"
done
bad=0
checked=0
for dir in "${!allowed[@]}"; do
  [[ -d $dir ]] || continue
  name=${dir#drivers/}
  roots=" ${allowed[$dir]//drivers\/NAME/drivers\/$name} "
  while IFS=: read -r file line text; do
    inc=$(sed -E 's/.*#include *"([^"]*)".*/\1/' <<<"$text")
    [[ $inc == */* ]] || continue  # a file next to this one
    top=${inc%%/*}
    [[ $top == drivers ]] && top=$(cut -d/ -f1-2 <<<"$inc")
    if [[ $roots != *" $top "* ]]; then
      echo "$file:$line: $dir may not include $inc (allowed: ${roots# })"
      bad=1
    fi
  done < <(grep -rnE '^#include *"' "$dir" --include='*.hpp' --include='*.cpp' || true)
  checked=$((checked + 1))
done
# The composition of the built-in drivers names each driver's registration, nothing else.
while IFS=: read -r line text; do
  inc=$(sed -E 's/.*#include *"([^"]*)".*/\1/' <<<"$text")
  if [[ $inc != driver/registry.hpp && ! $inc =~ ^drivers/[a-z0-9_]+/factory\.hpp$ ]]; then
    echo "drivers/builtin.cpp:$line: includes $inc (only driver/registry.hpp and drivers/*/factory.hpp)"
    bad=1
  fi
done < <(grep -nE '^#include *"' drivers/builtin.cpp || true)
# Nothing in lib/ names a driver (docs/ARCHITECTURE.md, "Adding a driver"):
# what the layers above need of one (its argument keys, its LID codec)
# comes from its registration, so no string literal in lib/ spells a
# driver's name. Comments may.
for d in drivers/*/; do
  name=$(basename "$d")
  [[ $name == sim ]] && continue  # the simulator is no runtime driver
  while IFS=: read -r file line text; do
    code=${text%%//*}
    [[ $code == *"\"$name\""* ]] || continue
    echo "$file:$line: lib/ names the driver \"$name\" (register what lib/ needs with the driver instead)"
    bad=1
  done < <(grep -rnF "\"$name\"" lib --include='*.hpp' --include='*.cpp' || true)
done
if ((bad)); then
  echo "layering violation: see the lines above (docs/ARCHITECTURE.md, \"Layers\")" >&2
  exit 1
fi
echo "layering check: $checked directories clean"
