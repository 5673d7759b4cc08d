#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs a CMake build tree into a scratch prefix and builds the consumers
# (C++ and C) with pkg-config and with find_package(OpenMRC). Checks that no DPDK flags
# leak to consumers.   check_install.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(realpath "$(dirname "$(find "$prefix" -name openmrc.pc | head -1)")/..")
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cflags=$(pkg-config --define-prefix --cflags openmrc)
if grep -qiE 'dpdk|rte_|-march|-include' <<<"$cflags"; then
  echo "pkg-config cflags leak driver flags: $cflags" >&2
  exit 1
fi
c++ -std=c++20 "$here/consumer.cpp" -o "$prefix/consumer_pc" $cflags $(pkg-config --define-prefix --libs openmrc)
LD_LIBRARY_PATH="$libdir" "$prefix/consumer_pc"
# The C API: omrc.h compiled as strict C11, linked by the C compiler.
cc -std=c11 -Wall -Wextra -pedantic -Werror "$here/consumer.c" -o "$prefix/consumer_c_pc" $cflags \
  $(pkg-config --define-prefix --libs openmrc)
LD_LIBRARY_PATH="$libdir" "$prefix/consumer_c_pc"
cmake -S "$here" -B "$prefix/cmake-consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/cmake-consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$prefix/cmake-consumer/consumer"
LD_LIBRARY_PATH="$libdir" "$prefix/cmake-consumer/c_consumer"
# The DPDK driver's own library, where the build has it: an application links
# it beside libomrc (no DPDK flags needed to compile against the header).
if compgen -G "$libdir/libomrc_dpdk.so*" >/dev/null; then
  c++ -std=c++20 "$here/dpdk_consumer.cpp" -o "$prefix/dpdk_consumer" $cflags -L"$libdir" -lomrc_dpdk \
    $(pkg-config --define-prefix --libs openmrc)
  LD_LIBRARY_PATH="$libdir" "$prefix/dpdk_consumer"
fi
echo "install check: pkg-config and CMake consumers (C++ and C) built and ran"
