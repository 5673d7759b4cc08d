#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs test_ibverbs_api (built against the system's libibverbs) on OpenMRC's
# libibverbs.so.1 with a one-device loopback configuration.
set -euo pipefail
libdir=$1
prog=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$(dirname "$0")/../../bench/ibverbs/make_config.sh" loopback "$work/devices.toml" "$work"
OMRC_IBV_CONFIG=$work/devices.toml LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$prog"
