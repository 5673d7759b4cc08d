// SPDX-License-Identifier: BSD-3-Clause
// The C API's protection domains and memory registrations.
#include <cerrno>
#include <memory>

#include "capi/boundary.hpp"
#include "capi/handles.hpp"
#include "log/log.hpp"

using omrc::capi::guarded;

int omrc_pd_alloc(struct omrc_device* dev, struct omrc_pd** out) {
    if (out != nullptr) *out = nullptr;
    if (dev == nullptr || out == nullptr) return EINVAL;
    return guarded("omrc_pd_alloc", [&] {
        auto handle = std::make_unique<omrc_pd>();
        int err = 0;
        handle->pd = dev->dev->alloc_pd(&err);
        if (handle->pd == nullptr) return err != 0 ? err : EIO;
        handle->dev = dev;
        ++dev->live_pds;
        *out = handle.release();
        return 0;
    });
}

int omrc_pd_dealloc(struct omrc_pd* pd) {
    if (pd == nullptr) return EINVAL;
    if (pd->live_mrs != 0 || pd->live_qps != 0 || pd->live_srqs != 0) {
        (void)guarded("omrc_pd_dealloc", [&] {
            omrc::log::logger().error("omrc_pd_dealloc: {} mr(s), {} qp(s) and {} srq(s) of the pd are still alive",
                                      pd->live_mrs, pd->live_qps, pd->live_srqs);
            return 0;
        });
        return EBUSY;
    }
    return guarded("omrc_pd_dealloc", [&] {
        --pd->dev->live_pds;
        delete pd;
        return 0;
    });
}

int omrc_mr_reg(struct omrc_pd* pd, void* addr, size_t length, uint32_t access, struct omrc_mr** out) {
    if (out != nullptr) *out = nullptr;
    if (pd == nullptr || out == nullptr) return EINVAL;
    return guarded("omrc_mr_reg", [&] {
        auto handle = std::make_unique<omrc_mr>();
        int err = 0;
        handle->mr = pd->pd->reg_mr(addr, length, access, &err);
        if (handle->mr == nullptr) return err != 0 ? err : EIO;
        handle->pd = pd;
        ++pd->live_mrs;
        *out = handle.release();
        return 0;
    });
}

int omrc_mr_dereg(struct omrc_mr* mr) {
    if (mr == nullptr) return EINVAL;
    return guarded("omrc_mr_dereg", [&] {
        const int rc = mr->mr->deregister();
        --mr->pd->live_mrs;
        delete mr;
        return rc;
    });
}

uint32_t omrc_mr_lkey(const struct omrc_mr* mr) { return mr == nullptr ? 0 : mr->mr->lkey(); }
uint32_t omrc_mr_rkey(const struct omrc_mr* mr) { return mr == nullptr ? 0 : mr->mr->rkey(); }
void* omrc_mr_addr(const struct omrc_mr* mr) { return mr == nullptr ? nullptr : mr->mr->addr(); }
size_t omrc_mr_length(const struct omrc_mr* mr) { return mr == nullptr ? 0 : mr->mr->length(); }
