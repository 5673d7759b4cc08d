// SPDX-License-Identifier: BSD-3-Clause
// The plugin's one implementation, in terms of no particular ABI version:
// sizes are size_t, NCCL's profiler handles and contexts are left out.
// exports.cpp adapts each published version (ncclNetPlugin_v8 … v12) to
// these functions; the test harness reaches them only through those
// exports.
//
// Semantics (NCCL's net plugin contract, docs/NCCL.md "Protocol"):
//   - listen never blocks; connect and accept never block either: they
//     return ncclSuccess with a NULL comm until the connection is ready and
//     are then called again with the same arguments;
//   - isend/irecv return ncclSuccess with a NULL request when the operation
//     cannot start yet (no matching receive posted by the peer, or
//     NCCL_NET_MAX_REQUESTS in flight); NCCL retries;
//   - sends and receives match in posting order; within a multi-receive
//     (irecv with n > 1) each send goes to the receive of its tag;
//   - test reports done once and releases the request; sizes receive the
//     bytes actually sent (a receive may be larger than its send).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl_net_abi.h"

namespace omrc::nccl {

/// The union of every version's device properties (the newest's fields).
struct Properties {
    char* name = nullptr;
    char* pci_path = nullptr;
    std::uint64_t guid = 0;
    int ptr_support = NCCL_PTR_HOST;
    int reg_is_global = 0;
    int force_flush = 0;
    int speed_mbps = 0;
    int port = 1;
    float latency_us = 0;
    int max_comms = 0;
    int max_recvs = 0;
    std::size_t max_p2p_bytes = 0;
    std::size_t max_coll_bytes = 0;
    int max_multi_request_size = 0;
    int dev = 0;  ///< vProps: a physical device is a virtual NIC of itself alone
    int rail_id = NCCL_NET_ID_UNDEF;
    int plane_id = NCCL_NET_ID_UNDEF;
};

ncclResult_t net_init(ncclDebugLogger_t logger);
ncclResult_t net_devices(int* ndev);
ncclResult_t net_properties(int dev, Properties* props);

ncclResult_t net_listen(int dev, void* handle, void** listen_comm);
ncclResult_t net_connect(int dev, void* handle, void** send_comm);
ncclResult_t net_accept(void* listen_comm, void** recv_comm);
ncclResult_t net_close_listen(void* listen_comm);

ncclResult_t net_reg_mr(void* comm, void* data, std::size_t size, int type, void** mhandle);
ncclResult_t net_reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                               void** mhandle);
ncclResult_t net_dereg_mr(void* comm, void* mhandle);

ncclResult_t net_isend(void* send_comm, void* data, std::size_t size, int tag, void* mhandle, void** request);
ncclResult_t net_irecv(void* recv_comm, int n, void** data, const std::size_t* sizes, const int* tags, void** mhandles,
                       void** request);
ncclResult_t net_iflush(void* recv_comm, int n, void** data, const int* sizes, void** mhandles, void** request);
/// sizes: NULL, or room for the request's n entries (1 for a send).
ncclResult_t net_test(void* request, int* done, int* sizes);

ncclResult_t net_close_send(void* send_comm);
ncclResult_t net_close_recv(void* recv_comm);

/// v11+: a context per NCCL communicator (init/finalize); the plugin keeps
/// nothing per context beyond what it was given.
ncclResult_t net_context_create(std::uint64_t comm_id, int traffic_class, void** ctx);
ncclResult_t net_context_check(void* ctx);
ncclResult_t net_context_destroy(void* ctx);

}  // namespace omrc::nccl
