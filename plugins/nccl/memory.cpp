// SPDX-License-Identifier: BSD-3-Clause
// Memory registration: host memory only, one OpenMRC MR in the device's
// protection domain per regMr (LOCAL_WRITE | REMOTE_WRITE: a buffer may be
// sent from and received into). The handle records its device, so deregMr
// needs nothing of the comm it was registered through.
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>

#include "comm.hpp"
#include "core.hpp"
#include "log.hpp"

namespace omrc::nccl {

ncclResult_t net_reg_mr(void* comm, void* data, std::size_t size, int type, void** mhandle) {
    if (mhandle == nullptr) return fail(ncclInvalidArgument, "regMr: NULL mhandle pointer");
    *mhandle = nullptr;
    Comm* c = as_comm(comm);
    if (c == nullptr) return fail(ncclInvalidArgument, "regMr: {} is not a comm of this plugin", comm);
    if (type != NCCL_PTR_HOST)
        return fail(ncclInvalidArgument,
                    "regMr: memory type {:#x}: OpenMRC registers host memory only "
                    "(NCCL_PTR_HOST)",
                    type);
    if (data == nullptr && size != 0) return fail(ncclInvalidArgument, "regMr: NULL address with {} bytes", size);
    auto mh = std::make_unique<MrHandle>();
    mh->dev = c->dev;
    mh->addr = reinterpret_cast<std::uintptr_t>(data);
    mh->size = size;
    if (size != 0) {
        const std::lock_guard lock(c->dev->mu);
        int err = 0;
        mh->mr = c->dev->pd->reg_mr(data, size, AccessFlags::local_write | AccessFlags::remote_write, &err);
        if (!mh->mr)
            return fail(err == ENOMEM ? ncclSystemError : ncclInvalidArgument, "regMr: [{}, +{}): {}", data, size,
                        std::strerror(err));
    }
    *mhandle = mh.release();
    return ncclSuccess;
}

ncclResult_t net_reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type, std::uint64_t /*offset*/, int /*fd*/,
                               void** mhandle) {
    // ptrSupport has no NCCL_PTR_DMABUF, so NCCL registers dma-bufs elsewhere;
    // host memory given this way is registered by its address.
    return net_reg_mr(comm, data, size, type, mhandle);
}

ncclResult_t net_dereg_mr(void* /*comm*/, void* mhandle) {
    if (magic_at(mhandle) != kMrMagic)
        return fail(ncclInvalidArgument, "deregMr: {} is not a memory handle of this plugin", mhandle);
    auto* mh = static_cast<MrHandle*>(mhandle);
    mh->magic = kDeadMagic;
    if (mh->mr) {
        const std::lock_guard lock(mh->dev->mu);
        mh->mr.reset();
    }
    delete mh;
    return ncclSuccess;
}

}  // namespace omrc::nccl
