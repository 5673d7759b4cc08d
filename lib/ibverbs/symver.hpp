// SPDX-License-Identifier: BSD-3-Clause
// Symbol versions. Most entry points carry one version, given by the version
// script (libibverbs.map). The 33 that rdma-core exports in two versions —
// the current one (IBVERBS_1.1) and the ABI of 2006 (IBVERBS_1.0) — are
// defined here as omrc_<name> and bound to <name>@@IBVERBS_1.1 by this
// macro, next to their definition; the IBVERBS_1.0 versions live in
// unsupported.cpp (they fail: programs that old are not supported).
#pragma once

#define OMRC_IBV_DUAL(name) __asm__(".symver omrc_" #name ", " #name "@@IBVERBS_1.1");
#define OMRC_IBV_COMPAT_1_0(name) __asm__(".symver omrc_compat_" #name ", " #name "@IBVERBS_1.0");
