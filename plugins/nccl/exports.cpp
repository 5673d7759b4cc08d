// SPDX-License-Identifier: BSD-3-Clause
// The exported symbols ncclNetPlugin_v8 … ncclNetPlugin_v12: one struct per
// ABI version (nccl_net_abi.h), each entry a thin adapter onto core.hpp.
// Designated initialisers name every member, so the compiler checks that
// each entry lands in the member of its name. getDeviceMr and irecvConsumed
// (device offload) and makeVDevice (virtual NICs) are NULL: NCCL then uses
// the host data path and the physical devices.
// NCCL takes the newest version it knows. Only these symbols leave the
// shared library (exports.map).
#include <climits>
#include <cstring>

#include "core.hpp"
#include "log.hpp"

#define OMRC_NCCL_EXPORT __attribute__((visibility("default")))

namespace omrc::nccl {
namespace {

constexpr const char* kName = "OpenMRC";

// ---- properties, per version -----------------------------------------------

template <class Props>
void fill_common(const Properties& p, Props* out) {
    out->name = p.name;
    out->pciPath = p.pci_path;
    out->guid = p.guid;
    out->ptrSupport = p.ptr_support;
    out->regIsGlobal = p.reg_is_global;
    out->speed = p.speed_mbps;
    out->port = p.port;
    out->latency = p.latency_us;
    out->maxComms = p.max_comms;
    out->maxRecvs = p.max_recvs;
    out->netDeviceType = NCCL_NET_DEVICE_HOST;
    out->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
}

/// v9 and later: forceFlush, the virtual NIC (this device alone), the sizes.
template <class Props>
void fill_v9(const Properties& p, Props* out) {
    fill_common(p, out);
    out->forceFlush = p.force_flush;
    out->vProps.ndevs = 1;
    out->vProps.devs[0] = p.dev;
    out->maxP2pBytes = p.max_p2p_bytes;
    out->maxCollBytes = p.max_coll_bytes;
}

template <class Props, class Fill>
ncclResult_t get_properties(int dev, Props* out, Fill fill) {
    if (out == nullptr) return fail(ncclInvalidArgument, "getProperties: NULL props pointer");
    Properties p;
    if (const ncclResult_t rc = net_properties(dev, &p); rc != ncclSuccess) return rc;
    std::memset(static_cast<void*>(out), 0, sizeof(*out));
    fill(p, out);
    return ncclSuccess;
}

ncclResult_t props_v8(int dev, ncclNetProperties_v8_t* out) {
    return get_properties(dev, out, [](const Properties& p, ncclNetProperties_v8_t* o) { fill_common(p, o); });
}
ncclResult_t props_v9(int dev, ncclNetProperties_v9_t* out) {
    return get_properties(dev, out, [](const Properties& p, ncclNetProperties_v9_t* o) { fill_v9(p, o); });
}
ncclResult_t props_v10(int dev, ncclNetProperties_v10_t* out) {
    return get_properties(dev, out, [](const Properties& p, ncclNetProperties_v10_t* o) { fill_v9(p, o); });
}
ncclResult_t props_v11(int dev, ncclNetProperties_v11_t* out) {
    return get_properties(dev, out, [](const Properties& p, ncclNetProperties_v11_t* o) {
        fill_v9(p, o);
        o->maxMultiRequestSize = p.max_multi_request_size;
    });
}
ncclResult_t props_v12(int dev, ncclNetProperties_v12_t* out) {
    return get_properties(dev, out, [](const Properties& p, ncclNetProperties_v12_t* o) {
        fill_v9(p, o);
        o->maxMultiRequestSize = p.max_multi_request_size;
        o->railId = static_cast<std::int16_t>(p.rail_id);
        o->planeId = static_cast<std::int16_t>(p.plane_id);
    });
}

// ---- init, listen, connect --------------------------------------------------

ncclResult_t init_v8(ncclDebugLogger_t log) { return net_init(log); }
ncclResult_t init_v10(ncclDebugLogger_t log, ncclProfilerCallback_t /*profiler*/) { return net_init(log); }
ncclResult_t init_v11(void** ctx, std::uint64_t comm_id, ncclNetCommConfig_v11_t* config, ncclDebugLogger_t log,
                      ncclProfilerCallback_t /*profiler*/) {
    if (ctx == nullptr) return fail(ncclInvalidArgument, "init: NULL ctx pointer");
    *ctx = nullptr;
    if (const ncclResult_t rc = net_init(log); rc != ncclSuccess) return rc;
    return net_context_create(comm_id, config != nullptr ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF, ctx);
}

ncclResult_t listen_v11(void* ctx, int dev, void* handle, void** listen_comm) {
    if (const ncclResult_t rc = net_context_check(ctx); rc != ncclSuccess) return rc;
    return net_listen(dev, handle, listen_comm);
}

// Device offload (sendDevComm / recvDevComm) is not offered: netDeviceType is
// NCCL_NET_DEVICE_HOST, so NCCL passes no request for one, and the pointers
// are left alone.
ncclResult_t connect_v8(int dev, void* handle, void** send_comm, ncclNetDeviceHandle_v8_t** /*dev_comm*/) {
    return net_connect(dev, handle, send_comm);
}
ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t* /*config*/, void* handle, void** send_comm,
                         ncclNetDeviceHandle_v10_t** /*dev_comm*/) {
    return net_connect(dev, handle, send_comm);
}
ncclResult_t connect_v11(void* ctx, int dev, void* handle, void** send_comm, ncclNetDeviceHandle_v11_t** /*dev_comm*/) {
    if (const ncclResult_t rc = net_context_check(ctx); rc != ncclSuccess) {
        if (send_comm != nullptr) *send_comm = nullptr;
        return rc;
    }
    return net_connect(dev, handle, send_comm);
}
ncclResult_t accept_any(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v8_t** /*dev_comm*/) {
    return net_accept(listen_comm, recv_comm);
}

ncclResult_t finalize_v11(void* ctx) { return net_context_destroy(ctx); }
ncclResult_t set_net_attr_v11(void* ctx, ncclNetAttr_v11_t* /*attr*/) {
    // Hints about peers and flows: every comm already sprays over all planes.
    return net_context_check(ctx);
}

// ---- data -------------------------------------------------------------------

ncclResult_t isend_v8(void* comm, void* data, int size, int tag, void* mhandle, void** request) {
    if (size < 0) {
        if (request != nullptr) *request = nullptr;
        return fail(ncclInvalidArgument, "isend: negative size {}", size);
    }
    return net_isend(comm, data, static_cast<std::size_t>(size), tag, mhandle, request);
}
ncclResult_t isend_v9(void* comm, void* data, std::size_t size, int tag, void* mhandle, void** request) {
    return net_isend(comm, data, size, tag, mhandle, request);
}
ncclResult_t isend_v10(void* comm, void* data, std::size_t size, int tag, void* mhandle, void* /*phandle*/,
                       void** request) {
    return net_isend(comm, data, size, tag, mhandle, request);
}

ncclResult_t irecv_v8(void* comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request) {
    if (request != nullptr) *request = nullptr;
    if (n < 1 || n > NCCL_NET_MAX_REQUESTS || sizes == nullptr)
        return fail(ncclInvalidArgument, "irecv: n = {} with sizes {}", n, static_cast<void*>(sizes));
    std::size_t wide[NCCL_NET_MAX_REQUESTS];
    for (int i = 0; i < n; ++i) {
        if (sizes[i] < 0) return fail(ncclInvalidArgument, "irecv: receive {}: negative size {}", i, sizes[i]);
        wide[i] = static_cast<std::size_t>(sizes[i]);
    }
    return net_irecv(comm, n, data, wide, tags, mhandles, request);
}
ncclResult_t irecv_v9(void* comm, int n, void** data, std::size_t* sizes, int* tags, void** mhandles, void** request) {
    return net_irecv(comm, n, data, sizes, tags, mhandles, request);
}
ncclResult_t irecv_v10(void* comm, int n, void** data, std::size_t* sizes, int* tags, void** mhandles,
                       void** /*phandles*/, void** request) {
    return net_irecv(comm, n, data, sizes, tags, mhandles, request);
}

ncclResult_t iflush_any(void* comm, int n, void** data, int* sizes, void** mhandles, void** request) {
    return net_iflush(comm, n, data, sizes, mhandles, request);
}
ncclResult_t reg_mr_any(void* comm, void* data, std::size_t size, int type, void** mhandle) {
    return net_reg_mr(comm, data, size, type, mhandle);
}
ncclResult_t reg_mr_dmabuf_any(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                               void** mhandle) {
    return net_reg_mr_dmabuf(comm, data, size, type, offset, fd, mhandle);
}

}  // namespace
}  // namespace omrc::nccl

using namespace omrc::nccl;

extern "C" {

// clang-format off
OMRC_NCCL_EXPORT ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = kName,
    .init = init_v8,
    .devices = net_devices,
    .getProperties = props_v8,
    .listen = net_listen,
    .connect = connect_v8,
    .accept = accept_any,
    .regMr = reg_mr_any,
    .regMrDmaBuf = reg_mr_dmabuf_any,
    .deregMr = net_dereg_mr,
    .isend = isend_v8,
    .irecv = irecv_v8,
    .iflush = iflush_any,
    .test = net_test,
    .closeSend = net_close_send,
    .closeRecv = net_close_recv,
    .closeListen = net_close_listen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
};

OMRC_NCCL_EXPORT ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = kName,
    .init = init_v8,
    .devices = net_devices,
    .getProperties = props_v9,
    .listen = net_listen,
    .connect = connect_v8,
    .accept = accept_any,
    .regMr = reg_mr_any,
    .regMrDmaBuf = reg_mr_dmabuf_any,
    .deregMr = net_dereg_mr,
    .isend = isend_v9,
    .irecv = irecv_v9,
    .iflush = iflush_any,
    .test = net_test,
    .closeSend = net_close_send,
    .closeRecv = net_close_recv,
    .closeListen = net_close_listen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
};

OMRC_NCCL_EXPORT ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = kName,
    .init = init_v10,
    .devices = net_devices,
    .getProperties = props_v10,
    .listen = net_listen,
    .connect = connect_v10,
    .accept = accept_any,
    .regMr = reg_mr_any,
    .regMrDmaBuf = reg_mr_dmabuf_any,
    .deregMr = net_dereg_mr,
    .isend = isend_v10,
    .irecv = irecv_v10,
    .iflush = iflush_any,
    .test = net_test,
    .closeSend = net_close_send,
    .closeRecv = net_close_recv,
    .closeListen = net_close_listen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
};

OMRC_NCCL_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = kName,
    .init = init_v11,
    .devices = net_devices,
    .getProperties = props_v11,
    .listen = listen_v11,
    .connect = connect_v11,
    .accept = accept_any,
    .regMr = reg_mr_any,
    .regMrDmaBuf = reg_mr_dmabuf_any,
    .deregMr = net_dereg_mr,
    .isend = isend_v10,
    .irecv = irecv_v10,
    .iflush = iflush_any,
    .test = net_test,
    .closeSend = net_close_send,
    .closeRecv = net_close_recv,
    .closeListen = net_close_listen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
    .finalize = finalize_v11,
    .setNetAttr = set_net_attr_v11,
};

OMRC_NCCL_EXPORT ncclNet_v12_t ncclNetPlugin_v12 = {
    .name = kName,
    .init = init_v11,
    .devices = net_devices,
    .getProperties = props_v12,
    .listen = listen_v11,
    .connect = connect_v11,
    .accept = accept_any,
    .regMr = reg_mr_any,
    .regMrDmaBuf = reg_mr_dmabuf_any,
    .deregMr = net_dereg_mr,
    .isend = isend_v10,
    .irecv = irecv_v10,
    .iflush = iflush_any,
    .test = net_test,
    .closeSend = net_close_send,
    .closeRecv = net_close_recv,
    .closeListen = net_close_listen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
    .finalize = finalize_v11,
    .setNetAttr = set_net_attr_v11,
};
// clang-format on

}  // extern "C"
