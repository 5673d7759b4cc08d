#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# lib/core, lib/wire and lib/security must never read a clock, call the kernel, start
# threads, touch DPDK or use a global RNG (docs/ARCHITECTURE.md §2).
set -euo pipefail
root=${1:-$(dirname "$0")/../..}
dirs=()
for d in lib/core lib/wire lib/security; do [[ -d "$root/$d" ]] && dirs+=("$root/$d"); done
pattern='std::chrono|clock_gettime|gettimeofday|rdtsc|\btime\(|\brand\(|\bsrand\(|random_device|std::thread|pthread_|#include *<(thread|mutex|chrono|random|sys/|unistd\.h|rte_)|\brte_|\bsyscall\(|\bsleep\(|\busleep\('
if grep -rnE "$pattern" "${dirs[@]}" --include='*.hpp' --include='*.cpp'; then
  echo "sans-IO violation: see the lines above" >&2
  exit 1
fi
echo "sans-IO check: ${#dirs[@]} directories clean"
