// SPDX-License-Identifier: BSD-3-Clause
// The C API's connection manager (include/omrc/omrc.h; verbs.hpp's
// Device::cm_*): parameters and events converted, QPs named by their handles.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

#include "capi/boundary.hpp"
#include "capi/convert.hpp"
#include "capi/handles.hpp"

using omrc::capi::guarded;

namespace {

static_assert(OMRC_CM_PRIVATE_DATA_MAX == omrc::kCmPrivateDataMax);
static_assert(OMRC_CM_EVENT_CONNECT_REQUEST == static_cast<int>(omrc::CmEventType::connect_request) &&
              OMRC_CM_EVENT_ESTABLISHED == static_cast<int>(omrc::CmEventType::established) &&
              OMRC_CM_EVENT_REJECTED == static_cast<int>(omrc::CmEventType::rejected) &&
              OMRC_CM_EVENT_UNREACHABLE == static_cast<int>(omrc::CmEventType::unreachable) &&
              OMRC_CM_EVENT_DISCONNECTED == static_cast<int>(omrc::CmEventType::disconnected));
static_assert(OMRC_CM_REASON_NO_RESOURCES == static_cast<int>(omrc::CmReason::no_resources) &&
              OMRC_CM_REASON_CONSUMER == static_cast<int>(omrc::CmReason::consumer) &&
              OMRC_CM_REASON_INVALID == static_cast<int>(omrc::CmReason::invalid));

/// Every QP attribute a CM setup takes from CmConnParams::qp_attr.
constexpr std::uint32_t kQpAttrFields = OMRC_QP_PATH | OMRC_QP_MPR | OMRC_QP_TIMEOUT | OMRC_QP_RETRY_CNT | OMRC_QP_CC |
                                        OMRC_QP_MIN_RNR_TIMER | OMRC_QP_RNR_RETRY | OMRC_QP_MAX_QP_RD_ATOMIC |
                                        OMRC_QP_MAX_DEST_RD_ATOMIC;

/// EINVAL for an encryption that is no omrc_encryption, private data too long, or bad QP attributes.
int from_c(const omrc_cm_conn_params& in, omrc::CmConnParams& out) noexcept {
    int enc = 0;  // read as an int: a C caller may store any value
    static_assert(sizeof enc == sizeof in.encryption);
    std::memcpy(&enc, &in.encryption, sizeof enc);
    if (enc < OMRC_ENCRYPTION_DEVICE_DEFAULT || enc > OMRC_ENCRYPTION_AES_GCM_256) return EINVAL;
    if (in.private_len > OMRC_CM_PRIVATE_DATA_MAX) return EINVAL;
    if (const int rc = omrc::capi::from_c(in.qp_attr, kQpAttrFields, out.qp_attr); rc != 0) return rc;
    out.service_id = in.service_id;
    out.peer = omrc::capi::from_c(in.peer);
    out.qp_access_flags = in.qp_access_flags;
    out.mtu_bytes = in.mtu_bytes;
    out.encryption = static_cast<omrc::Encryption>(enc);
    out.private_len = in.private_len;
    std::copy_n(in.private_data, in.private_len, out.private_data.begin());
    return 0;
}

}  // namespace

void omrc_cm_listen_options_init(struct omrc_cm_listen_options* o) {
    if (o == nullptr) return;
    const omrc::CmListenOptions d;
    *o = {d.backlog, d.per_peer, d.cookies, d.require_encryption};
}

void omrc_cm_conn_params_init(struct omrc_cm_conn_params* p) {
    if (p == nullptr) return;
    const omrc::CmConnParams d;
    *p = omrc_cm_conn_params{};
    p->service_id = d.service_id;
    p->peer = omrc::capi::to_c(d.peer);
    p->qp_access_flags = d.qp_access_flags;
    p->mtu_bytes = d.mtu_bytes;
    p->encryption = static_cast<omrc_encryption>(d.encryption);
    p->private_len = 0;
    p->qp_attr = omrc::capi::to_c(d.qp_attr);
}

int omrc_cm_listen(struct omrc_device* dev, uint64_t service_id, const struct omrc_cm_listen_options* options) {
    if (dev == nullptr) return EINVAL;
    return guarded("omrc_cm_listen", [&] {
        omrc::CmListenOptions o;
        if (options != nullptr) o = {options->backlog, options->per_peer, options->cookies, options->require_encryption};
        return dev->dev->cm_listen(service_id, o);
    });
}

int omrc_cm_unlisten(struct omrc_device* dev, uint64_t service_id) {
    if (dev == nullptr) return EINVAL;
    return guarded("omrc_cm_unlisten", [&] { return dev->dev->cm_unlisten(service_id); });
}

int omrc_cm_connect(struct omrc_qp* qp, const struct omrc_cm_conn_params* params, uint32_t* id) {
    if (qp == nullptr || params == nullptr || id == nullptr) return EINVAL;
    return guarded("omrc_cm_connect", [&] {
        omrc::CmConnParams p;
        if (const int rc = from_c(*params, p); rc != 0) return rc;
        return qp->pd->dev->dev->cm_connect(*qp->qp, p, id);
    });
}

int omrc_cm_accept(struct omrc_device* dev, uint32_t id, struct omrc_qp* qp, const struct omrc_cm_conn_params* params) {
    if (dev == nullptr || qp == nullptr || qp->pd->dev != dev) return EINVAL;
    return guarded("omrc_cm_accept", [&] {
        omrc::CmConnParams p;
        if (params != nullptr)
            if (const int rc = from_c(*params, p); rc != 0) return rc;
        return dev->dev->cm_accept(id, *qp->qp, p);
    });
}

int omrc_cm_reject(struct omrc_device* dev, uint32_t id, const uint8_t* private_data, size_t len, int reason) {
    if (dev == nullptr || (private_data == nullptr && len != 0)) return EINVAL;
    if (reason != OMRC_CM_REASON_CONSUMER && reason != OMRC_CM_REASON_NO_RESOURCES) return EINVAL;
    return guarded("omrc_cm_reject", [&] {
        const std::span<const std::uint8_t> data =
            len != 0 ? std::span<const std::uint8_t>(private_data, len) : std::span<const std::uint8_t>();
        return dev->dev->cm_reject(id, data, static_cast<omrc::CmReason>(reason));
    });
}

int omrc_cm_disconnect(struct omrc_device* dev, uint32_t id) {
    if (dev == nullptr) return EINVAL;
    return guarded("omrc_cm_disconnect", [&] { return dev->dev->cm_disconnect(id); });
}

int omrc_cm_poll(struct omrc_device* dev, struct omrc_cm_event* out, int n) {
    if (dev == nullptr || n < 0 || (out == nullptr && n > 0)) return -EINVAL;
    int got = 0;
    const int rc = guarded("omrc_cm_poll", [&] {
        omrc::CmEvent ev[16];
        while (got < n) {
            const std::size_t want = std::min<std::size_t>(16, static_cast<std::size_t>(n - got));
            const std::size_t k = dev->dev->cm_poll(std::span(ev, want));
            for (std::size_t i = 0; i < k; ++i) {
                omrc_cm_event& c = out[got++];
                c = omrc_cm_event{};
                c.type = static_cast<int>(ev[i].type);
                c.reason = static_cast<int>(ev[i].reason);
                c.id = ev[i].id;
                const auto h = ev[i].qp != nullptr ? dev->qps.find(ev[i].qp) : dev->qps.end();
                c.qp = h != dev->qps.end() ? h->second : nullptr;
                c.service_id = ev[i].service_id;
                c.peer = omrc::capi::to_c(ev[i].peer);
                c.local = ev[i].local;
                c.encryption = static_cast<omrc_encryption>(ev[i].encryption);
                c.mtu_bytes = ev[i].mtu_bytes;
                c.private_len = ev[i].private_len;
                std::copy_n(ev[i].private_data.begin(), ev[i].private_len, c.private_data);
            }
            if (k < want) break;
        }
        return 0;
    });
    return rc != 0 ? -rc : got;
}
