#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The C symbols of libomrc.so are the C API and nothing else: every exported
# symbol without C++ mangling starts with omrc_ and is a function of
# include/omrc/omrc.h, and every function of omrc.h is exported.
#   c_symbols.sh LIBOMRC_SO OMRC_H
set -euo pipefail
lib=$1
header=$2
# ASan names an ODR indicator after each instrumented global of external
# linkage (__odr_asan.<symbol>): judged by the symbol it stands for.
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWDBRVi]$/ {sub(/^__odr_asan\./, "", $3)} $2 ~ /^[TWDBRVi]$/ && $3 !~ /^_Z/ {print $3}' | sort -u)
declared=$(grep -oE '^[a-z_ ]*[a-z0-9_*]+[ *]+(omrc_[a-z0-9_]+)\(' "$header" | grep -oE 'omrc_[a-z0-9_]+\($' | tr -d '(' | sort -u)
bad=0
for sym in $exported; do
  if [[ $sym != omrc_* ]]; then
    echo "exported C symbol without the omrc_ prefix: $sym"
    bad=1
  elif ! grep -qx "$sym" <<<"$declared"; then
    echo "exported C symbol not declared in omrc.h: $sym"
    bad=1
  fi
done
for fn in $declared; do
  if ! grep -qx "$fn" <<<"$exported"; then
    echo "declared in omrc.h, not exported by $(basename "$lib"): $fn"
    bad=1
  fi
done
if ((bad)); then exit 1; fi
echo "C symbols: $(wc -w <<<"$exported") exported, all omrc_ functions of omrc.h"
