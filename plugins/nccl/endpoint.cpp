// SPDX-License-Identifier: BSD-3-Clause
// The verbs side of a comm: its CQ, its QP (with the device configuration's
// QP defaults: path policy, EVs, MTU, window, timeout, congestion control),
// the ring MR its peer writes into, and the receives for the peer's
// immediates.
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "comm.hpp"

namespace omrc::nccl {

namespace {

/// Each comm's CQ: completions of up to kSlots × (kMaxRecvs + 1) send WRs and
/// kPostedRecvs receives (a CQ grows rather than losing one anyway).
constexpr int kCqEntries = 1024;
constexpr std::uint32_t kDefaultMtu = 4096;
constexpr std::uint64_t kRecvWrId = ~std::uint64_t{0};

}  // namespace

std::uint32_t local_mtu(const NetDevice& d) { return d.config.qp.mtu_bytes != 0 ? d.config.qp.mtu_bytes : kDefaultMtu; }

int post_imm_recv(Comm& c) {
    RecvWr wr;
    wr.wr_id = kRecvWrId;  // the immediate's receive consumes no buffer
    return c.qp->post_recv(wr);
}

int create_endpoint(Comm& c, void* ring, std::uint32_t ring_bytes, std::string* error) {
    NetDevice& d = *c.dev;
    int err = 0;
    c.cq = d.device->create_cq(kCqEntries, &err);
    if (!c.cq) {
        *error = fmt::format("create_cq: {}", std::strerror(err));
        return err;
    }
    QpInitAttr init;
    init.send_cq = init.recv_cq = c.cq.get();
    init.cap.max_send_wr = kSlots * (kMaxRecvs + 1) * 2;
    init.cap.max_recv_wr = kPostedRecvs * 2;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = cts_bytes(kMaxRecvs);
    c.qp = d.pd->create_qp(init, &err);
    if (!c.qp) {
        *error = fmt::format("create_qp: {}", std::strerror(err));
        return err;
    }
    c.ring_mr = d.pd->reg_mr(ring, ring_bytes, AccessFlags::local_write | AccessFlags::remote_write, &err);
    if (!c.ring_mr) {
        *error = fmt::format("reg_mr(ring): {}", std::strerror(err));
        return err;
    }
    QpAttr a;
    a.qp_state = QpState::init;
    a.qp_access_flags = AccessFlags::local_write | AccessFlags::remote_write;
    if (const int rc = c.qp->modify(a, QpAttrMask::state | QpAttrMask::access_flags)) {
        *error = fmt::format("modify(INIT): {}", std::strerror(rc));
        return rc;
    }
    for (std::uint32_t i = 0; i < kPostedRecvs; ++i)
        if (const int rc = post_imm_recv(c)) {
            *error = fmt::format("post_recv: {}", std::strerror(rc));
            return rc;
        }
    return 0;
}

QpAttr qp_defaults_attr(const NetDevice& d) {
    const QpDefaults& q = d.config.qp;
    QpAttr a;
    a.qp_access_flags = AccessFlags::local_write | AccessFlags::remote_write;
    a.mtu_bytes = local_mtu(d);
    a.mpr = q.mpr;
    a.path_policy = q.path_policy;
    a.evs = q.evs;
    a.backup_evs = q.backup_evs;
    if (q.timeout_ns != 0) a.timeout_ns = q.timeout_ns;
    a.retry_cnt = q.retry_cnt;
    a.cc = q.cc;
    return a;
}

int connect_endpoint(Comm& c, const PeerInfo& peer, std::uint32_t my_psn, std::string* error) {
    QpAttr a = qp_defaults_attr(*c.dev);
    a.qp_state = QpState::rtr;
    a.dest_qp_num = peer.qpn;
    a.dest_conn_id = peer.conn_id;
    a.rq_psn = peer.psn;
    a.peer = peer.address;
    a.mtu_bytes = std::min(local_mtu(*c.dev), peer.mtu);
    if (const int rc = c.qp->modify(a, QpAttrMask::state | QpAttrMask::path | QpAttrMask::dest_qpn |
                                           QpAttrMask::rq_psn | QpAttrMask::mtu | QpAttrMask::mpr)) {
        *error = fmt::format("modify(RTR): {}", std::strerror(rc));
        return rc;
    }
    a.qp_state = QpState::rts;
    a.sq_psn = my_psn;
    if (const int rc = c.qp->modify(
            a, QpAttrMask::state | QpAttrMask::sq_psn | QpAttrMask::timeout | QpAttrMask::retry_cnt | QpAttrMask::cc)) {
        *error = fmt::format("modify(RTS): {}", std::strerror(rc));
        return rc;
    }
    if (c.qp->state() != QpState::rts) {
        *error = "the QP is not in RTS after modify(RTS)";
        return EPROTO;
    }
    c.peer_ring_addr = peer.ring_addr;
    c.peer_ring_rkey = peer.ring_rkey;
    return 0;
}

}  // namespace omrc::nccl
