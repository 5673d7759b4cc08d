/* SPDX-License-Identifier: BSD-3-Clause */
/* nccl_net_abi.h compiled as C (strict C11): the sizes and a few offsets of
 * its structs as a C compiler lays them out, for test_nccl_abi.cpp to
 * compare with the C++ layout the plugin is built with. */
#include <stddef.h>

#include "nccl_net_abi.h"

size_t omrc_nccl_abi_c_layout(size_t* out, size_t max) {
    const size_t v[] = {
        sizeof(ncclNetProperties_v8_t),  sizeof(ncclNetProperties_v9_t),  sizeof(ncclNetProperties_v10_t),
        sizeof(ncclNetProperties_v11_t), sizeof(ncclNetProperties_v12_t), sizeof(ncclNet_v8_t),
        sizeof(ncclNet_v9_t),            sizeof(ncclNet_v10_t),           sizeof(ncclNet_v11_t),
        sizeof(ncclNet_v12_t),           offsetof(ncclNetProperties_v12_t, planeId),
        offsetof(ncclNet_v11_t, finalize), sizeof(ncclNetAttr_v12_t),     sizeof(ncclNetDeviceHandle_v12_t),
    };
    size_t n = sizeof(v) / sizeof(v[0]);
    for (size_t i = 0; i < n && i < max; ++i) out[i] = v[i];
    return n;
}
