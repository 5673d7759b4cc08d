// SPDX-License-Identifier: BSD-3-Clause
// The connection manager's API (Device::cm_*; docs/PROTOCOL.md §13): the
// protocol runs in worker 0's engine (core::ConnManager, carried as CM
// frames); this layer moves the QPs when its events say so, as librdmacm
// does over ibverbs: the requester's QP to RTS on the reply, the
// responder's on accept, either to ERR when the connection ends.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <openssl/rand.h>

#include "log/log.hpp"
#include "verbs/device_core.hpp"

namespace omrc {

namespace {

core::ConnManager* manager(detail::DeviceCore& d) { return d.workers.front()->engine->conn_manager(); }

/// The CM's encryption code (§13.3) of a resolved choice: 0 off, 1 AES-GCM-128, 2 AES-GCM-256.
std::uint8_t encryption_code(Encryption e) noexcept {
    return e == Encryption::aes_gcm_128 ? 1 : e == Encryption::aes_gcm_256 ? 2 : 0;
}
Encryption encryption_of(std::uint8_t code) noexcept {
    return code == 1 ? Encryption::aes_gcm_128 : code == 2 ? Encryption::aes_gcm_256 : Encryption::off;
}

/// A device's planes, MACs and host, as a REQ or REP carries them (the
/// sender's own) and as the manager's route to a peer holds them.
void describe(const DeviceAddress& a, wire::CmMessage& m) {
    m.planes = static_cast<std::uint8_t>(std::min<std::uint32_t>(a.planes, wire::kCmMaxPlanes));
    for (std::size_t p = 0; p < m.planes; ++p) m.macs[p] = a.macs[p];
    m.host = a.host;
}

DeviceAddress address_of(const wire::CmMessage& m, const wire::Ipv6Addr& from) {
    DeviceAddress a;
    a.addr = from;
    a.planes = m.planes;
    for (std::size_t p = 0; p < m.planes && p < kMaxPlanes; ++p) a.macs[p] = m.macs[p];
    a.host = m.host;
    return a;
}

/// Key nonces and first PSNs: from OpenSSL's CSPRNG, seeded by the
/// operating system (this layer's randomness, not the sans-IO engine's).
/// std::random_device stands in only if OpenSSL fails.
void random_bytes(std::uint8_t* out, std::size_t n) {
    if (RAND_bytes(out, static_cast<int>(n)) == 1) return;
    std::random_device rd;
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(rd());
}
std::array<std::uint8_t, 16> random_nonce() {
    std::array<std::uint8_t, 16> n{};
    random_bytes(n.data(), n.size());
    return n;
}
std::uint32_t random_psn() {
    std::uint8_t b[3];
    random_bytes(b, sizeof b);
    return static_cast<std::uint32_t>(b[0]) | static_cast<std::uint32_t>(b[1]) << 8 | static_cast<std::uint32_t>(b[2]) << 16;
}

CmReason reason_of(wire::CmReject r) noexcept { return static_cast<CmReason>(static_cast<std::uint16_t>(r)); }

/// RESET → INIT with the connection's access flags; INIT stays. EINVAL otherwise.
int to_init(Qp& qp, std::uint32_t access) {
    const QpState st = qp.state();
    if (st == QpState::init) return 0;
    if (st != QpState::reset) return EINVAL;
    QpAttr a;
    a.qp_state = QpState::init;
    a.qp_access_flags = access;
    return qp.modify(a, QpAttrMask::state | QpAttrMask::access_flags);
}

/// INIT → RTR → RTS toward the peer the message `m` describes.
int to_rts(Qp& qp, const CmConnParams& params, const wire::CmMessage& m, const DeviceAddress& peer,
           std::uint32_t mtu, std::uint32_t our_psn, const std::array<std::uint8_t, 16>& our_nonce) {
    QpAttr a = params.qp_attr;
    a.qp_state = QpState::rtr;
    a.dest_qp_num = m.qpn;
    a.dest_conn_id = m.conn_id;
    a.rq_psn = m.psn;
    a.peer = peer;
    a.mtu_bytes = mtu;
    a.encryption = encryption_of(m.encryption);
    a.peer_key_select = m.key_select;
    std::uint32_t mask = QpAttrMask::state | QpAttrMask::path | QpAttrMask::dest_qpn | QpAttrMask::rq_psn |
                         QpAttrMask::mtu | QpAttrMask::mpr | QpAttrMask::min_rnr_timer |
                         QpAttrMask::max_dest_rd_atomic | QpAttrMask::encryption;
    if (m.encryption != 0) {
        a.key_nonce = our_nonce;
        a.peer_key_nonce = m.key_nonce;
        mask |= QpAttrMask::key_nonces;
    }
    if (const int e = qp.modify(a, mask); e != 0) return e;
    a.qp_state = QpState::rts;
    a.sq_psn = our_psn;
    return qp.modify(a, QpAttrMask::state | QpAttrMask::sq_psn | QpAttrMask::timeout | QpAttrMask::retry_cnt |
                            QpAttrMask::rnr_retry | QpAttrMask::cc | QpAttrMask::max_rd_atomic);
}

void to_err(Qp& qp) {
    QpAttr a;
    a.qp_state = QpState::err;
    (void)qp.modify(a, QpAttrMask::state);
}

}  // namespace

namespace detail {

std::optional<std::uint32_t> DeviceCore::receive_edge(const Qp& qp) {
    Worker& w = worker_of(qp);
    const WorkerControl parked(*this, w);
    const core::QpInfo i = w.engine->qp_info(qp.qp_num());
    if (i.state == core::QpState::reset || i.state == core::QpState::init) return std::nullopt;
    return i.rcv_psn;
}

void DeviceCore::peer_receive_edge(const Qp& qp, std::uint32_t rcv_psn) {
    Worker& w = worker_of(qp);
    const WorkerControl parked(*this, w);
    (void)w.engine->on_peer_receive_edge(qp.qp_num(), rcv_psn, now());
    w.loop->kick();  // the completions it produced
}

template <class F>
auto DeviceCore::with_cm(F&& f) {
    Worker& w0 = *workers.front();
    const WorkerControl parked(*this, w0);
    auto r = f(*w0.engine->conn_manager());
    w0.loop->kick();
    return r;
}

}  // namespace detail

const char* to_string(CmReason r) noexcept {
    switch (r) {
        case CmReason::none: return "none";
        case CmReason::no_listener: return "no_listener";
        case CmReason::consumer: return "consumer";
        case CmReason::busy: return "busy";
        case CmReason::peer_limit: return "peer_limit";
        case CmReason::no_resources: return "no_resources";
        case CmReason::security_required: return "security_required";
        case CmReason::security_unavailable: return "security_unavailable";
        case CmReason::key_mismatch: return "key_mismatch";
        case CmReason::stale: return "stale";
        case CmReason::timeout: return "timeout";
        case CmReason::invalid: return "invalid";
    }
    return "?";
}

const char* to_string(CmEventType t) noexcept {
    switch (t) {
        case CmEventType::connect_request: return "connect_request";
        case CmEventType::established: return "established";
        case CmEventType::rejected: return "rejected";
        case CmEventType::unreachable: return "unreachable";
        case CmEventType::disconnected: return "disconnected";
    }
    return "?";
}

int Device::cm_listen(std::uint64_t service_id, const CmListenOptions& o) {
    detail::DeviceCore& d = *core_;
    const detail::OwnerScope owner(d);
    if (manager(d) == nullptr) return EOPNOTSUPP;
    if (o.backlog == 0 || o.per_peer == 0) return EINVAL;
    core::CmListen how;
    how.backlog = o.backlog;
    how.per_peer = o.per_peer;
    how.cookies = o.cookies ? core::CmCookies::always : core::CmCookies::under_load;
    how.require_encryption = o.require_encryption;
    return d.with_cm([&](core::ConnManager& m) { return m.listen(service_id, how); });
}

int Device::cm_unlisten(std::uint64_t service_id) {
    detail::DeviceCore& d = *core_;
    const detail::OwnerScope owner(d);
    if (manager(d) == nullptr) return EOPNOTSUPP;
    return d.with_cm([&](core::ConnManager& m) { return m.unlisten(service_id); });
}

int Device::cm_connect(Qp& qp, const CmConnParams& params, std::uint32_t* id) {
    detail::DeviceCore& d = *core_;
    const detail::OwnerScope owner(d);
    if (manager(d) == nullptr) return EOPNOTSUPP;
    if (id == nullptr || qp.core_ != &d || params.private_len > kCmPrivateDataMax ||
        params.peer.planes != d.address.planes)
        return EINVAL;
    if (d.cm_conn_of(qp) != d.cm_conns.end()) return EBUSY;
    const Encryption want =
        params.encryption == Encryption::device_default ? d.security_default : params.encryption;
    if (const int e = to_init(qp, params.qp_access_flags); e != 0) return e;
    detail::DeviceCore::CmConn c;
    c.qp = &qp;
    c.requester = true;
    c.peer = params.peer;
    c.service_id = params.service_id;
    c.psn = random_psn();
    c.params = params;
    wire::CmMessage route;
    describe(params.peer, route);
    wire::CmMessage req;
    req.service_id = params.service_id;
    req.qpn = qp.qp_num();
    req.conn_id = qp.conn_id();
    req.psn = c.psn;
    req.mtu = static_cast<std::uint16_t>(std::min<std::uint32_t>(params.mtu_bytes, 0xFFFF));
    req.encryption = encryption_code(want);
    if (req.encryption != 0) {
        c.nonce = random_nonce();
        req.key_nonce = c.nonce;
    }
    describe(d.address, req);
    req.private_len = params.private_len;
    req.private_data = params.private_data;
    req.key_select = d.workers.front()->engine->config().security.key_select;
    std::uint32_t cid = 0;
    if (const int e = d.with_cm([&](core::ConnManager& m) { return m.connect(params.peer.addr, route, req, d.now(), cid); });
        e != 0)
        return e;
    d.cm_conns[cid] = c;
    qp.cm_id_ = cid;
    *id = cid;
    return 0;
}

int Device::cm_accept(std::uint32_t id, Qp& qp, const CmConnParams& params) {
    detail::DeviceCore& d = *core_;
    const detail::OwnerScope owner(d);
    if (manager(d) == nullptr) return EOPNOTSUPP;
    auto it = d.cm_conns.find(id);
    if (it == d.cm_conns.end() || it->second.requester || it->second.qp != nullptr) return ENOENT;
    if (qp.core_ != &d || params.private_len > kCmPrivateDataMax) return EINVAL;
    if (d.cm_conn_of(qp) != d.cm_conns.end()) return EBUSY;
    detail::DeviceCore::CmConn& c = it->second;
    const wire::CmMessage& req = c.request.msg;
    // What the requester asked is what is set up; a different explicit choice is refused.
    if (params.encryption != Encryption::device_default && encryption_code(params.encryption) != req.encryption)
        return EINVAL;
    if (const int e = to_init(qp, params.qp_access_flags); e != 0) return e;
    c.psn = random_psn();
    if (req.encryption != 0) c.nonce = random_nonce();
    const std::uint32_t mtu = std::min<std::uint32_t>(req.mtu, params.mtu_bytes);
    if (const int e = to_rts(qp, params, req, c.peer, mtu, c.psn, c.nonce); e != 0) {
        to_err(qp);
        return e;
    }
    c.qp = &qp;
    c.moved = true;
    qp.cm_id_ = id;
    wire::CmMessage rep;
    rep.qpn = qp.qp_num();
    rep.conn_id = qp.conn_id();
    rep.psn = c.psn;
    rep.mtu = static_cast<std::uint16_t>(mtu);
    rep.key_nonce = c.nonce;
    describe(d.address, rep);
    rep.private_len = params.private_len;
    rep.private_data = params.private_data;
    rep.key_select = d.workers.front()->engine->config().security.key_select;
    return d.with_cm([&](core::ConnManager& m) { return m.accept(id, rep, d.now()); });
}

int Device::cm_reject(std::uint32_t id, std::span<const std::uint8_t> private_data, CmReason reason) {
    detail::DeviceCore& d = *core_;
    const detail::OwnerScope owner(d);
    if (manager(d) == nullptr) return EOPNOTSUPP;
    auto it = d.cm_conns.find(id);
    if (it == d.cm_conns.end() || it->second.requester || it->second.qp != nullptr) return ENOENT;
    if (private_data.size() > kCmPrivateDataMax) return EINVAL;
    if (reason != CmReason::consumer && reason != CmReason::no_resources) return EINVAL;
    const int e = d.with_cm(
        [&](core::ConnManager& m) { return m.reject(id, static_cast<wire::CmReject>(reason), private_data, d.now()); });
    if (e == 0) d.cm_conns.erase(it);
    return e;
}

int Device::cm_disconnect(std::uint32_t id) {
    detail::DeviceCore& d = *core_;
    const detail::OwnerScope owner(d);
    if (manager(d) == nullptr) return EOPNOTSUPP;
    auto it = d.cm_conns.find(id);
    if (it == d.cm_conns.end() || it->second.qp == nullptr || it->second.ending) return ENOENT;
    const std::optional<std::uint32_t> edge = d.receive_edge(*it->second.qp);
    if (const int e = d.with_cm([&](core::ConnManager& m) { return m.disconnect(id, d.now(), edge); }); e != 0)
        return e;
    it->second.ending = true;
    if (it->second.moved) to_err(*it->second.qp);
    return 0;
}

std::size_t Device::cm_poll(std::span<CmEvent> out) {
    detail::DeviceCore& d = *core_;
    const detail::OwnerScope owner(d);
    core::ConnManager* cm = manager(d);
    detail::Worker& w0 = *d.workers.front();
    // A worker thread says after each pass whether events wait: without
    // any, it is not parked (an application polls often).
    if (cm != nullptr && (!w0.threaded() || w0.cm_events_waiting.load(std::memory_order_acquire))) {
        std::vector<core::CmEvent> got;
        {
            const detail::WorkerControl parked(d, w0);
            core::CmEvent e;
            while (cm->poll_event(e)) got.push_back(e);
        }
        for (const core::CmEvent& e : got) d.cm_event(e);
    }
    const std::size_t n = std::min(out.size(), d.cm_events.size());
    std::copy_n(d.cm_events.begin(), n, out.begin());
    d.cm_events.erase(d.cm_events.begin(), d.cm_events.begin() + static_cast<std::ptrdiff_t>(n));
    return n;
}

namespace detail {

void DeviceCore::cm_event(const core::CmEvent& e) {
    CmEvent out;
    out.id = e.id;
    auto it = cm_conns.find(e.id);
    auto ended = [&](CmEventType type) {
        out.type = type;
        out.reason = reason_of(e.reason);
        out.local = e.local;
        if (it != cm_conns.end()) {
            out.qp = it->second.qp;
            out.peer = it->second.peer;
            out.service_id = it->second.service_id;
            if (it->second.qp != nullptr && it->second.moved && !it->second.ending) {
                // What the peer's DREQ says arrived completes before the rest is flushed.
                if (type == CmEventType::disconnected && e.msg.type == wire::CmType::dreq && e.msg.has_rcv_psn)
                    peer_receive_edge(*it->second.qp, e.msg.rcv_psn);
                to_err(*it->second.qp);
            }
            cm_conns.erase(it);
        }
        if (type == CmEventType::rejected) {
            out.private_len = e.msg.private_len;
            out.private_data = e.msg.private_data;
        }
        cm_events.push_back(out);
    };
    switch (e.kind) {
        case core::CmEventKind::request: {
            CmConn c;
            c.requester = false;
            c.peer = address_of(e.msg, e.peer);
            c.service_id = e.msg.service_id;
            c.request = e;
            cm_conns[e.id] = c;
            out.type = CmEventType::connect_request;
            out.service_id = e.msg.service_id;
            out.peer = c.peer;
            out.encryption = encryption_of(e.msg.encryption);
            out.mtu_bytes = e.msg.mtu;
            out.private_len = e.msg.private_len;
            out.private_data = e.msg.private_data;
            cm_events.push_back(out);
            return;
        }
        case core::CmEventKind::reply: {
            if (it == cm_conns.end() || it->second.qp == nullptr) return;  // its QP went away meanwhile
            CmConn& c = it->second;
            const DeviceAddress peer = address_of(e.msg, e.peer);
            const std::uint32_t mtu = std::min<std::uint32_t>(e.msg.mtu, c.params.mtu_bytes);
            int err = e.msg.mtu > c.params.mtu_bytes ? EINVAL : 0;
            if (err == 0) err = to_rts(*c.qp, c.params, e.msg, peer, mtu, c.psn, c.nonce);
            if (err != 0) {
                // The reply names what this end cannot set up: end it at both ends.
                log::logger().warn("cm: connection {:#x}: the QP cannot take the reply ({}); disconnecting", e.id,
                                      std::strerror(err));
                c.moved = true;
                const std::optional<std::uint32_t> edge = receive_edge(*c.qp);
                (void)with_cm([&](core::ConnManager& m) { return m.disconnect(e.id, now(), edge); });
                to_err(*c.qp);
                c.ending = true;
                out.type = CmEventType::rejected;
                out.reason = CmReason::invalid;
                out.local = true;
                out.qp = c.qp;
                out.peer = peer;
                out.service_id = c.service_id;
                cm_events.push_back(out);
                return;
            }
            c.moved = true;
            c.peer = peer;
            (void)with_cm([&](core::ConnManager& m) { return m.confirm(e.id, now()); });
            out.type = CmEventType::established;
            out.qp = c.qp;
            out.peer = peer;
            out.service_id = c.service_id;
            out.private_len = e.msg.private_len;
            out.private_data = e.msg.private_data;
            cm_events.push_back(out);
            return;
        }
        case core::CmEventKind::established:
            if (it == cm_conns.end()) return;
            out.type = CmEventType::established;
            out.qp = it->second.qp;
            out.peer = it->second.peer;
            out.service_id = it->second.service_id;
            cm_events.push_back(out);
            return;
        case core::CmEventKind::rejected: return ended(CmEventType::rejected);
        case core::CmEventKind::disconnected: return ended(CmEventType::disconnected);
        case core::CmEventKind::failed: return ended(CmEventType::unreachable);
    }
}

DeviceCore::CmConns::iterator DeviceCore::cm_conn_of(const Qp& qp) {
    auto it = qp.cm_id_ != 0 ? cm_conns.find(qp.cm_id_) : cm_conns.end();
    return it != cm_conns.end() && it->second.qp == &qp ? it : cm_conns.end();
}

void DeviceCore::cm_forget(const Qp& qp) {
    if (auto it = cm_conn_of(qp); it != cm_conns.end()) {
        if (manager(*this) != nullptr && !it->second.ending) {
            const std::optional<std::uint32_t> edge =
                it->second.qp != nullptr ? receive_edge(*it->second.qp) : std::nullopt;
            (void)with_cm([&](core::ConnManager& m) { return m.disconnect(it->first, now(), edge); });
        }
        cm_conns.erase(it);
    }
    // Events already queued that name the QP lose it.
    for (CmEvent& ev : cm_events)
        if (ev.qp == &qp) ev.qp = nullptr;
}

}  // namespace detail

}  // namespace omrc
