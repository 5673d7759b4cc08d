#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# libnccl-net-omrc.so exports ncclNetPlugin_v8 … v12 and nothing else (no
# C++ symbol, nothing of libomrc, fmt or spdlog).
#   nccl_symbols.sh LIBNCCL_NET_OMRC_SO
set -euo pipefail
lib=$1
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWDBRVui]$/ {print $3}' | sort)
expected=$(printf 'ncclNetPlugin_v%s\n' 10 11 12 8 9 | sort)
if [[ $exported != "$expected" ]]; then
  echo "exported symbols differ from ncclNetPlugin_v8..v12:"
  diff <(echo "$expected") <(echo "$exported") || true
  exit 1
fi
echo "exports: $(echo $exported)"
