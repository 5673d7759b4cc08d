// SPDX-License-Identifier: BSD-3-Clause
// The data entry points: isend, irecv, iflush and test. Each checks the
// pointers NCCL hands back, takes the device's mutex and leaves the work to
// protocol.cpp.
#include <mutex>

#include "comm.hpp"
#include "core.hpp"
#include "log.hpp"

namespace omrc::nccl {

namespace {

MrHandle* as_mr(void* p) {
    return magic_at(p) == kMrMagic ? static_cast<MrHandle*>(p) : nullptr;
}

}  // namespace

ncclResult_t net_isend(void* send_comm, void* data, std::size_t size, int tag, void* mhandle, void** request) {
    if (request == nullptr) return fail(ncclInvalidArgument, "isend: NULL request pointer");
    *request = nullptr;
    SendComm* c = as_send_comm(send_comm);
    if (c == nullptr) return fail(ncclInvalidArgument, "isend: {} is not a send comm of this plugin", send_comm);
    MrHandle* mh = as_mr(mhandle);
    if (mhandle != nullptr && mh == nullptr)
        return fail(ncclInvalidArgument, "isend: {} is not a memory handle of this plugin", mhandle);
    const std::lock_guard lock(c->dev->mu);
    Request* r = nullptr;
    const ncclResult_t rc = post_send(*c, data, size, tag, mh, &r);
    *request = r;
    return rc;
}

ncclResult_t net_irecv(void* recv_comm, int n, void** data, const std::size_t* sizes, const int* tags, void** mhandles,
                       void** request) {
    if (request == nullptr) return fail(ncclInvalidArgument, "irecv: NULL request pointer");
    *request = nullptr;
    RecvComm* c = as_recv_comm(recv_comm);
    if (c == nullptr) return fail(ncclInvalidArgument, "irecv: {} is not a recv comm of this plugin", recv_comm);
    if (n < 1 || n > kMaxRecvs) return fail(ncclInvalidArgument, "irecv: n = {} (1..{})", n, kMaxRecvs);
    if (mhandles == nullptr) return fail(ncclInvalidArgument, "irecv: NULL mhandles array");
    MrHandle* mhs[kMaxRecvs] = {};
    for (int i = 0; i < n; ++i) {
        mhs[i] = as_mr(mhandles[i]);
        if (mhandles[i] != nullptr && mhs[i] == nullptr)
            return fail(ncclInvalidArgument, "irecv: receive {}: {} is not a memory handle of this plugin", i,
                        mhandles[i]);
    }
    const std::lock_guard lock(c->dev->mu);
    Request* r = nullptr;
    const ncclResult_t rc = post_recv(*c, n, data, sizes, tags, mhs, &r);
    *request = r;
    return rc;
}

ncclResult_t net_iflush(void* recv_comm, int n, void** /*data*/, const int* /*sizes*/, void** /*mhandles*/,
                        void** request) {
    if (request == nullptr) return fail(ncclInvalidArgument, "iflush: NULL request pointer");
    *request = nullptr;
    if (as_recv_comm(recv_comm) == nullptr)
        return fail(ncclInvalidArgument, "iflush: {} is not a recv comm of this plugin", recv_comm);
    if (n < 1 || n > kMaxRecvs) return fail(ncclInvalidArgument, "iflush: n = {} (1..{})", n, kMaxRecvs);
    // Host memory only (ptrSupport NCCL_PTR_HOST, forceFlush 0): what a
    // completed receive placed is visible to the CPU already, there is
    // nothing to flush. A NULL request tells NCCL so.
    return ncclSuccess;
}

ncclResult_t net_test(void* request, int* done, int* sizes) {
    if (done == nullptr) return fail(ncclInvalidArgument, "test: NULL done pointer");
    *done = 0;
    if (magic_at(request) != kRequestMagic)
        return fail(ncclInvalidArgument,
                    "test: {} is not a request this plugin handed out (or was already "
                    "reported done)",
                    request);
    auto* r = static_cast<Request*>(request);
    Comm& c = *r->comm;
    const std::lock_guard lock(c.dev->mu);
    if (!r->done && c.error == ncclSuccess) progress_comm(c);
    if (r->done) {
        if (sizes != nullptr)
            for (int i = 0; i < r->n; ++i) sizes[i] = static_cast<int>(r->sizes[i]);
        *done = 1;
        c.release_request(r);
        return ncclSuccess;
    }
    check_peer(c);
    return c.error;
}

}  // namespace omrc::nccl
