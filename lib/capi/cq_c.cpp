// SPDX-License-Identifier: BSD-3-Clause
// The C API's completion queues and completion status names.
#include <algorithm>
#include <array>
#include <cerrno>
#include <memory>

#include "capi/boundary.hpp"
#include "capi/convert.hpp"
#include "capi/handles.hpp"
#include "log/log.hpp"

using omrc::capi::guarded;

int omrc_cq_create(struct omrc_device* dev, int cqe, struct omrc_cq** out) {
    if (out != nullptr) *out = nullptr;
    if (dev == nullptr || out == nullptr) return EINVAL;
    return guarded("omrc_cq_create", [&] {
        auto handle = std::make_unique<omrc_cq>();
        int err = 0;
        handle->cq = dev->dev->create_cq(cqe, &err);
        if (handle->cq == nullptr) return err != 0 ? err : EIO;
        handle->dev = dev;
        ++dev->live_cqs;
        *out = handle.release();
        return 0;
    });
}

int omrc_cq_destroy(struct omrc_cq* cq) {
    if (cq == nullptr) return EINVAL;
    if (cq->live_qps != 0) {
        (void)guarded("omrc_cq_destroy", [&] {
            omrc::log::logger().error("omrc_cq_destroy: qps still use the cq ({} send/recv uses)", cq->live_qps);
            return 0;
        });
        return EBUSY;
    }
    return guarded("omrc_cq_destroy", [&] {
        --cq->dev->live_cqs;
        delete cq;
        return 0;
    });
}

int omrc_cq_poll(struct omrc_cq* cq, struct omrc_wc* out, int n) {
    if (cq == nullptr || n < 0 || (out == nullptr && n > 0)) return -EINVAL;
    int got = 0;
    const int rc = guarded("omrc_cq_poll", [&] {
        std::array<omrc::Wc, 32> chunk;
        while (got < n) {
            const std::size_t want = std::min<std::size_t>(chunk.size(), static_cast<std::size_t>(n - got));
            const std::size_t k = cq->cq->poll(std::span<omrc::Wc>(chunk.data(), want));
            for (std::size_t i = 0; i < k; ++i) out[got++] = omrc::capi::to_c(chunk[i]);
            if (k < want) break;
        }
        return 0;
    });
    return rc != 0 ? -rc : got;
}

const char* omrc_wc_status_str(int status) {
    switch (status) {
        case OMRC_WC_SUCCESS:
        case OMRC_WC_LOC_LEN_ERR:
        case OMRC_WC_LOC_QP_OP_ERR:
        case OMRC_WC_LOC_PROT_ERR:
        case OMRC_WC_WR_FLUSH_ERR:
        case OMRC_WC_BAD_RESP_ERR:
        case OMRC_WC_LOC_ACCESS_ERR:
        case OMRC_WC_REM_INV_REQ_ERR:
        case OMRC_WC_REM_ACCESS_ERR:
        case OMRC_WC_REM_OP_ERR:
        case OMRC_WC_RETRY_EXC_ERR:
        case OMRC_WC_RNR_RETRY_EXC_ERR:
        case OMRC_WC_GENERAL_ERR: return omrc::to_string(static_cast<omrc::WcStatus>(status));
        default: return "unknown";
    }
}
