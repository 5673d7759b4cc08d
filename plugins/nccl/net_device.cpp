// SPDX-License-Identifier: BSD-3-Clause
// The device entry points: init, devices, getProperties, and the v11+
// per-communicator contexts.
#include <climits>
#include <cstdint>

#include "core.hpp"
#include "device_table.hpp"
#include "log.hpp"
#include "magic.hpp"

namespace omrc::nccl {

namespace {

constexpr std::uint32_t kContextMagic = 0x4f435458;  // "OCTX"

struct Context {
    std::uint32_t magic = kContextMagic;
    std::uint64_t comm_id = 0;
    int traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF;
};

}  // namespace

ncclResult_t net_init(ncclDebugLogger_t logger) {
    set_nccl_logger(logger);
    return DeviceTable::instance().init();
}

ncclResult_t net_devices(int* ndev) {
    if (ndev == nullptr) return fail(ncclInvalidArgument, "devices: NULL ndev pointer");
    *ndev = DeviceTable::instance().count();
    return ncclSuccess;
}

ncclResult_t net_properties(int dev, Properties* p) {
    const NetDevice* d = DeviceTable::instance().at(dev);
    if (d == nullptr)
        return fail(ncclInvalidArgument, "getProperties: no device {} ({} devices)", dev,
                    DeviceTable::instance().count());
    *p = Properties{};
    p->name = const_cast<char*>(d->config.name.c_str());
    p->pci_path = nullptr;  // no PCI function: NCCL places the NIC at the CPU
    p->guid = (std::uint64_t{0x4f4d5243} << 32) | static_cast<std::uint32_t>(dev);  // "OMRC" and the index
    p->ptr_support = NCCL_PTR_HOST;
    p->reg_is_global = 0;
    p->force_flush = 0;
    // Every comm sprays over all the device's planes: its speed is theirs together.
    const double mbps = static_cast<double>(d->planes) * static_cast<double>(d->config.qp.cc.link_rate_bps) / 1e6;
    p->speed_mbps = mbps >= static_cast<double>(INT_MAX) ? INT_MAX : static_cast<int>(mbps);
    p->port = 1;
    p->latency_us = 0;
    p->max_comms = static_cast<int>(d->config.options.max_qps);
    p->max_recvs = kMaxRecvs;
    p->max_p2p_bytes = kMaxMessageBytes;
    p->max_coll_bytes = kMaxMessageBytes;
    p->max_multi_request_size = 1;
    p->dev = dev;
    // NIC k of each host is on rail k (the configuration lists a host's devices
    // in rail order). A device on one plane is on that plane; one that sprays
    // over several planes is on all of them, which NCCL can only be told by
    // leaving the plane undefined (NCCL never connects NICs of two defined,
    // different planes).
    p->rail_id = dev;
    p->plane_id = d->planes == 1 ? 0 : NCCL_NET_ID_UNDEF;
    return ncclSuccess;
}

ncclResult_t net_context_create(std::uint64_t comm_id, int traffic_class, void** ctx) {
    if (ctx == nullptr) return fail(ncclInvalidArgument, "init: NULL ctx pointer");
    auto* c = new Context;
    c->comm_id = comm_id;
    c->traffic_class = traffic_class;
    *ctx = c;
    return ncclSuccess;
}

ncclResult_t net_context_check(void* ctx) {
    if (magic_at(ctx) != kContextMagic)
        return fail(ncclInvalidArgument, "{} is not a context this plugin's init returned", ctx);
    return ncclSuccess;
}

ncclResult_t net_context_destroy(void* ctx) {
    if (const ncclResult_t rc = net_context_check(ctx); rc != ncclSuccess) return rc;
    auto* c = static_cast<Context*>(ctx);
    c->magic = 0;
    delete c;
    return ncclSuccess;
}

}  // namespace omrc::nccl
