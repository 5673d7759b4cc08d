// SPDX-License-Identifier: BSD-3-Clause
// Comms set up by the connection manager (cm_setup.hpp).
#include "cm_setup.hpp"

#include <arpa/inet.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "log.hpp"

namespace omrc::nccl {

namespace {

/// Requests one listener holds before the CM refuses more (busy), from all
/// peers and from one (NCCL connects many channels between two ranks at once).
constexpr std::uint32_t kListenBacklog = 1024;

std::string address_text(const DeviceAddress& a) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (inet_ntop(AF_INET6, a.addr.data(), buf, sizeof buf) == nullptr) return "?";
    return fmt::format("[{}]", buf);
}

/// The private data of a REJ as text (this plugin puts a reason there).
std::string reject_text(const CmEvent& ev) {
    std::string s;
    for (std::uint8_t i = 0; i < ev.private_len; ++i) {
        const char ch = static_cast<char>(ev.private_data[i]);
        if (ch == '\0') break;
        s.push_back(ch >= 0x20 && ch < 0x7f ? ch : '?');
    }
    return s;
}

void set_ring_private(CmConnParams& p, const Comm& c, const void* ring, std::uint32_t bytes) {
    RingInfo r;
    r.addr = reinterpret_cast<std::uintptr_t>(ring);
    r.rkey = c.ring_mr->rkey();
    r.bytes = bytes;
    encode_ring_info(r, p.private_data.data());
    p.private_len = kRingInfoBytes;
}

/// The attributes both ends' QPs take (the device configuration's defaults).
CmConnParams conn_params(const NetDevice& d) {
    CmConnParams p;
    p.qp_attr = qp_defaults_attr(d);
    p.qp_access_flags = p.qp_attr.qp_access_flags;
    p.mtu_bytes = p.qp_attr.mtu_bytes;
    return p;
}

/// Refuses request `id` with a line of text for the requester (dev->mu held).
void refuse(NetDevice& d, std::uint32_t id, const std::string& why, CmReason reason = CmReason::consumer) {
    const std::size_t n = std::min(why.size(), kCmPrivateDataMax);
    (void)d.device->cm_reject(id, std::span(reinterpret_cast<const std::uint8_t*>(why.data()), n), reason);
    d.cm_by_id.erase(id);
}

/// The oldest event filed for connection `id`, if any (dev->mu held).
bool next_event(NetDevice& d, std::uint32_t id, CmEvent* out) {
    const auto it = d.cm_by_id.find(id);
    if (it == d.cm_by_id.end() || it->second.empty()) return false;
    *out = it->second.front();
    it->second.pop_front();
    return true;
}

}  // namespace

SetupMode setup_mode() {
    const char* v = std::getenv("OMRC_NCCL_SETUP");
    if (v == nullptr || *v == '\0' || std::string_view(v) == "tcp") return SetupMode::tcp;
    if (std::string_view(v) == "cm") return SetupMode::cm;
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
        log_line(Level::warn, fmt::format("OMRC_NCCL_SETUP='{}' is neither tcp nor cm; using tcp", v));
    return SetupMode::tcp;
}

void route_cm_events(NetDevice& d) {
    CmEvent ev[16];
    for (std::size_t n; (n = d.device->cm_poll(ev)) != 0;)
        for (std::size_t i = 0; i < n; ++i) {
            const CmEvent& e = ev[i];
            if (e.type == CmEventType::connect_request) {
                const auto it = d.cm_requests.find(e.service_id);
                if (it == d.cm_requests.end()) {
                    (void)d.device->cm_reject(e.id);  // its listener closed meanwhile
                    continue;
                }
                it->second.push_back(e);
                d.cm_by_id[e.id];  // what happens to the request later is kept too
                continue;
            }
            // Events of connections nobody holds any more (a comm closed) go.
            if (const auto it = d.cm_by_id.find(e.id); it != d.cm_by_id.end()) it->second.push_back(e);
        }
}

// ---- listen / accept ----------------------------------------------------------

CmListener::~CmListener() {
    if (dev == nullptr) return;
    std::unique_ptr<RecvComm> comm = std::move(pending);  // destroyed below, once mu is released
    const std::lock_guard lock(dev->mu);
    (void)dev->device->cm_unlisten(service_id);
    if (const auto it = dev->cm_requests.find(service_id); it != dev->cm_requests.end()) {
        for (const CmEvent& e : it->second) refuse(*dev, e.id, "the listener closed");
        dev->cm_requests.erase(it);
    }
}

ncclResult_t cm_listen(NetDevice& d, void* handle, std::unique_ptr<CmListener>* out) {
    const std::lock_guard lock(d.mu);
    CmHandle h;
    h.device = d.device->address();
    CmListenOptions o;
    o.backlog = kListenBacklog;
    o.per_peer = kListenBacklog;
    o.cookies = false;  // cookies once the backlog is half full (CmListenOptions)
    int rc = EADDRINUSE;
    for (int tries = 0; rc == EADDRINUSE && tries < 8; ++tries) {
        h.service_id = random_u64();
        rc = d.device->cm_listen(h.service_id, o);
    }
    if (rc != 0) return fail(ncclSystemError, "listen on device {}: cm_listen: {}", d.config.name, std::strerror(rc));
    d.cm_requests[h.service_id];
    auto l = std::make_unique<CmListener>();
    l->dev = &d;
    l->service_id = h.service_id;
    write_cm_handle(h, handle);
    *out = std::move(l);
    return ncclSuccess;
}

ncclResult_t cm_accept_step(CmListener& l, RecvComm** out) {
    *out = nullptr;
    NetDevice& d = *l.dev;
    std::unique_ptr<RecvComm> dropped;  // destroyed after mu is released (its teardown takes it)
    const std::lock_guard lock(d.mu);
    d.progress_locked();
    if (l.pending) {
        if (CmEvent ev; next_event(d, l.pending->cm_id, &ev)) {  // its first event decides
            if (ev.type == CmEventType::established) {
                *out = l.pending.release();
                return ncclSuccess;
            }
            log_line(Level::warn, fmt::format("accept on service {:#x}: dropping the connection from {}: {} ({})",
                                              l.service_id, l.pending->peer, to_string(ev.type),
                                              to_string(ev.reason)));
            dropped = std::move(l.pending);
            return ncclSuccess;
        }
        if (now_ns() > l.pending_deadline_ns) {
            log_line(Level::warn,
                     fmt::format("accept on service {:#x}: {} did not confirm within {} ms; dropping it",
                                 l.service_id, l.pending->peer, handshake_timeout_ns() / 1'000'000));
            dropped = std::move(l.pending);
        }
        return ncclSuccess;
    }
    auto& requests = d.cm_requests[l.service_id];
    while (!requests.empty()) {
        const CmEvent ev = requests.front();
        requests.pop_front();
        std::string error;
        RingInfo ring;
        if (decode_ring_info(ev.private_data.data(), ev.private_len, kCtsRingBytes, &ring, &error) != 0) {
            log_line(Level::warn, fmt::format("accept on service {:#x}: refusing a request from {}: {}", l.service_id,
                                              address_text(ev.peer), error));
            refuse(d, ev.id, "bad request: " + error);
            continue;
        }
        auto comm = std::make_unique<RecvComm>(&d);
        if (const int rc = create_endpoint(*comm, comm->ring, kDoneRingBytes, &error); rc != 0) {
            refuse(d, ev.id, "no QP", CmReason::no_resources);
            dropped = std::move(comm);
            return fail(ncclSystemError, "accept on service {:#x}: {}", l.service_id, error);
        }
        CmConnParams p = conn_params(d);
        p.encryption = ev.encryption;  // what the requester asked (the listener's device allows it or refused)
        set_ring_private(p, *comm, comm->ring, kDoneRingBytes);
        if (const int rc = d.device->cm_accept(ev.id, *comm->qp, p); rc != 0) {
            // ENOENT: the request timed out meanwhile (its requester hears so).
            log_line(Level::warn, fmt::format("accept on service {:#x}: cm_accept of the request from {}: {}",
                                              l.service_id, address_text(ev.peer), std::strerror(rc)));
            if (rc != ENOENT) refuse(d, ev.id, "accept failed", CmReason::no_resources);
            d.cm_by_id.erase(ev.id);
            dropped = std::move(comm);
            continue;
        }
        comm->cm_id = ev.id;
        comm->peer_ring_addr = ring.addr;
        comm->peer_ring_rkey = ring.rkey;
        comm->peer = fmt::format("{} connection {}", address_text(ev.peer), ev.id);
        l.pending = std::move(comm);
        l.pending_deadline_ns = now_ns() + handshake_timeout_ns();
        break;
    }
    return ncclSuccess;
}

// ---- connect --------------------------------------------------------------------

ncclResult_t cm_connect_start(NetDevice& d, const CmHandle& h, std::unique_ptr<CmConnecting>* out) {
    auto k = std::make_unique<CmConnecting>();
    k->dev = &d;
    k->handle = h;
    k->deadline_ns = now_ns() + handshake_timeout_ns();
    k->comm = std::make_unique<SendComm>(&d);
    const std::string where = fmt::format("service {:#x} on {}", h.service_id, address_text(h.device));
    std::string error;
    {
        const std::lock_guard lock(d.mu);
        if (create_endpoint(*k->comm, k->comm->ring, kCtsRingBytes, &error) != 0)
            return fail(ncclSystemError, "connect to {}: {}", where, error);
        CmConnParams p = conn_params(d);
        p.service_id = h.service_id;
        p.peer = h.device;
        set_ring_private(p, *k->comm, k->comm->ring, kCtsRingBytes);
        std::uint32_t id = 0;
        if (const int rc = d.device->cm_connect(*k->comm->qp, p, &id); rc != 0)
            return fail(rc == ENOMEM ? ncclSystemError : ncclInvalidUsage, "connect to {}: cm_connect: {}", where,
                        std::strerror(rc));
        k->comm->cm_id = id;
        d.cm_by_id[id];
        k->comm->peer = fmt::format("{} connection {}", where, id);
    }
    *out = std::move(k);
    return ncclSuccess;
}

ncclResult_t cm_connect_step(CmConnecting& k, SendComm** out) {
    *out = nullptr;
    NetDevice& d = *k.dev;
    const std::lock_guard lock(d.mu);
    d.progress_locked();
    SendComm& c = *k.comm;
    CmEvent ev;
    while (next_event(d, c.cm_id, &ev)) {
        switch (ev.type) {
            case CmEventType::established: {
                RingInfo ring;
                std::string error;
                if (decode_ring_info(ev.private_data.data(), ev.private_len, kDoneRingBytes, &ring, &error) != 0)
                    return fail(ncclRemoteError, "connect to {}: bad reply: {}", c.peer, error);
                c.peer_ring_addr = ring.addr;
                c.peer_ring_rkey = ring.rkey;
                *out = k.comm.release();
                return ncclSuccess;
            }
            case CmEventType::rejected: {
                const std::string text = reject_text(ev);
                return fail(ncclRemoteError, "connect to {}: refused{} ({}){}{}", c.peer, ev.local ? " here" : "",
                            to_string(ev.reason), text.empty() ? "" : ": ", text);
            }
            case CmEventType::unreachable:
                return fail(ncclRemoteError, "connect to {}: no answer to the connection request (every resend)",
                            c.peer);
            default:
                return fail(ncclRemoteError, "connect to {}: {} while connecting", c.peer, to_string(ev.type));
        }
    }
    if (now_ns() > k.deadline_ns)
        return fail(ncclRemoteError, "connect to {}: not established within {} ms (OMRC_NCCL_CONNECT_TIMEOUT_MS)",
                    c.peer, handshake_timeout_ns() / 1'000'000);
    return ncclSuccess;
}

// ---- liveness -------------------------------------------------------------------

bool cm_peer_gone(Comm& c) {
    const auto it = c.dev->cm_by_id.find(c.cm_id);
    if (it == c.dev->cm_by_id.end()) return false;
    for (const CmEvent& e : it->second)
        if (e.type == CmEventType::disconnected) return true;
    return false;
}

void cm_probe(Comm& c, std::uint64_t now) {
    if (c.probe_outstanding || now < c.next_probe_ns || c.peer_ring_rkey == 0) return;
    c.next_probe_ns = now + kProbePeriodNs;
    SendWr wr;
    wr.wr_id = kProbeWrId;
    wr.opcode = WrOpcode::rdma_write;  // zero bytes: nothing of the peer's ring changes
    wr.send_flags = SendFlags::signaled;
    wr.remote_addr = c.peer_ring_addr;
    wr.rkey = c.peer_ring_rkey;
    if (c.qp->post_send(wr) == 0) c.probe_outstanding = true;  // a full send queue: the next period
}

}  // namespace omrc::nccl
