// SPDX-License-Identifier: BSD-3-Clause
// Connection establishment: listen, connect, accept and the closes. With
// OMRC_NCCL_SETUP=cm listen goes to the connection manager (cm_setup.hpp)
// and its handle says so; connect follows the handle, accept the listen
// comm, and the connect stages of both kinds share one table here. By
// default they are non-blocking state machines over TCP (socket.hpp)
// exchanging the messages of handshake.hpp. NCCL calls connect
// and accept again and again until they return a comm; each call moves the
// exchange as far as it can without waiting.
//
// Over TCP:
//
//   connector (send comm)                      listener (recv comm)
//   connect: QP, CTS ring, TCP connect ──────▶ accept: TCP accept
//            HELLO (QPN, PSN, address, ring) ─▶        QP, done ring, RTR, RTS
//                                           ◀─ REPLY (QPN, PSN, address, ring)
//            RTR, RTS, READY ────────────────▶        comm ready
//            comm ready
//
// The socket then stays open for the life of the comm (protocol.cpp's
// liveness check).
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include <fmt/format.h>

#include "cm_setup.hpp"
#include "comm.hpp"
#include "core.hpp"
#include "handle.hpp"
#include "log.hpp"

namespace omrc::nccl {

std::uint64_t now_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

/// A random non-zero value (nonces, stage keys, PSNs).
std::uint64_t random_u64() {
    static std::mutex mu;
    static std::mt19937_64 rng{(std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}() ^ now_ns()};
    const std::lock_guard lock(mu);
    std::uint64_t v = 0;
    while (v == 0) v = rng();
    return v;
}

/// How long a handshake may take once it started (OMRC_NCCL_CONNECT_TIMEOUT_MS).
std::uint64_t handshake_timeout_ns() {
    static const std::uint64_t ns = [] {
        std::uint64_t ms = 300'000;
        if (const char* v = std::getenv("OMRC_NCCL_CONNECT_TIMEOUT_MS"); v != nullptr && *v != '\0') {
            char* end = nullptr;
            const unsigned long long x = std::strtoull(v, &end, 10);
            if (end != nullptr && *end == '\0' && x > 0)
                ms = x;
            else
                log_line(Level::warn, fmt::format("OMRC_NCCL_CONNECT_TIMEOUT_MS='{}' is no positive number of "
                                                  "milliseconds; using {}",
                                                  v, ms));
        }
        return ms * 1'000'000;
    }();
    return ns;
}

namespace {

PeerInfo my_info(const Comm& c, std::uint64_t nonce, std::uint32_t psn, const void* ring, std::uint32_t ring_bytes) {
    PeerInfo i;
    i.nonce = nonce;
    i.address = c.dev->device->address();
    i.qpn = c.qp->qp_num();
    i.conn_id = c.qp->conn_id();
    i.psn = psn;
    i.ring_addr = reinterpret_cast<std::uintptr_t>(ring);
    i.ring_rkey = c.ring_mr->rkey();
    i.ring_bytes = ring_bytes;
    i.mtu = local_mtu(*c.dev);
    return i;
}

std::uint32_t random_psn() { return static_cast<std::uint32_t>(random_u64() & 0xffffff); }

// ---- connect --------------------------------------------------------------

/// A connection in progress on the connecting side.
struct Connecting {
    enum class State { tcp, hello, reply_header, reply_body, ready };
    NetDevice* dev = nullptr;
    ListenHandle handle;
    std::uint8_t handle_bytes[kHandleBytes] = {};  ///< as first seen (the stage aside)
    Channel ch;
    State state = State::tcp;
    MsgHeader header;
    std::unique_ptr<SendComm> comm;
    std::uint32_t psn = 0;
    std::uint64_t deadline_ns = 0;
    std::unique_ptr<CmConnecting> cm;  ///< set: over the connection manager (the fields above unused)
};

std::mutex g_connecting_mu;
std::map<std::uint64_t, std::unique_ptr<Connecting>> g_connecting;  ///< by connect stage

/// Moves a connection on. ncclSuccess with *out set once it is ready, with
/// *out NULL while it waits, or an error (the connection is then dropped).
ncclResult_t step(Connecting& k, SendComm** out) {
    *out = nullptr;
    if (k.cm) return cm_connect_step(*k.cm, out);
    const std::string where = k.handle.listener.to_string();
    std::string error;
    if (now_ns() > k.deadline_ns)
        return fail(ncclRemoteError, "connect to {}: no answer within {} ms (OMRC_NCCL_CONNECT_TIMEOUT_MS)", where,
                    handshake_timeout_ns() / 1'000'000);
    if (k.state == Connecting::State::tcp) {
        const int rc = tcp_connect_poll(k.ch.fd());
        if (rc == EINPROGRESS) return ncclSuccess;
        if (rc != 0) return fail(ncclRemoteError, "connect to {}: {}", where, std::strerror(rc));
        k.state = Connecting::State::hello;
    }
    if (k.state == Connecting::State::hello) {
        const int rc = k.ch.flush();
        if (rc == EAGAIN) return ncclSuccess;
        if (rc != 0) return fail(ncclRemoteError, "connect to {}: sending hello: {}", where, std::strerror(rc));
        k.state = Connecting::State::reply_header;
    }
    if (k.state == Connecting::State::reply_header) {
        const int rc = k.ch.read_until(kMsgHeaderBytes);
        if (rc == EAGAIN) return ncclSuccess;
        if (rc != 0)
            return fail(ncclRemoteError, "connect to {}: the listener closed the connection before its reply ({})",
                        where, std::strerror(rc));
        if (decode_header(k.ch.input().data(), &k.header, &error) != 0)
            return fail(ncclRemoteError, "connect to {}: {}", where, error);
        if (k.header.type != MsgType::reply && k.header.type != MsgType::reject)
            return fail(ncclRemoteError, "connect to {}: message type {} where a reply was due", where,
                        static_cast<int>(k.header.type));
        k.state = Connecting::State::reply_body;
    }
    if (k.state == Connecting::State::reply_body) {
        const int rc = k.ch.read_until(kMsgHeaderBytes + k.header.body_bytes);
        if (rc == EAGAIN) return ncclSuccess;
        if (rc != 0) return fail(ncclRemoteError, "connect to {}: reading the reply: {}", where, std::strerror(rc));
        const std::uint8_t* body = k.ch.input().data() + kMsgHeaderBytes;
        if (k.header.type == MsgType::reject) {
            int err = 0;
            std::string reason;
            decode_reject(body, k.header.body_bytes, &err, &reason);
            return fail(ncclRemoteError, "connect to {}: the listener refused: {} ({})", where, reason,
                        std::strerror(err));
        }
        PeerInfo peer;
        if (decode_info(body, k.header.body_bytes, kDoneRingBytes, &peer, &error) != 0)
            return fail(ncclRemoteError, "connect to {}: bad reply: {}", where, error);
        if (peer.nonce != k.handle.nonce)
            return fail(ncclRemoteError, "connect to {}: the reply is for listener {:#x}, the handle names {:#x}",
                        where, peer.nonce, k.handle.nonce);
        {
            const std::lock_guard lock(k.dev->mu);
            if (connect_endpoint(*k.comm, peer, k.psn, &error) != 0)
                return fail(ncclSystemError, "connect to {}: {}", where, error);
        }
        k.comm->peer = fmt::format("{} qpn {:#x}", where, peer.qpn);
        k.ch.clear_input();
        k.ch.queue(encode_ready());
        k.state = Connecting::State::ready;
    }
    const int rc = k.ch.flush();
    if (rc == EAGAIN) return ncclSuccess;
    if (rc != 0) return fail(ncclRemoteError, "connect to {}: sending ready: {}", where, std::strerror(rc));
    k.comm->fd = k.ch.release();
    *out = k.comm.release();
    return ncclSuccess;
}

ncclResult_t start_connect(NetDevice& d, const ListenHandle& h, const void* handle_bytes,
                           std::unique_ptr<Connecting>* out) {
    auto k = std::make_unique<Connecting>();
    k->dev = &d;
    k->handle = h;
    std::memcpy(k->handle_bytes, handle_bytes, kHandleBytes);
    k->deadline_ns = now_ns() + handshake_timeout_ns();
    std::string error;
    int fd = -1;
    if (const int rc = tcp_connect_start(h.listener, &fd, &error))
        return fail(rc == ECONNREFUSED || rc == ENETUNREACH || rc == EHOSTUNREACH ? ncclRemoteError : ncclSystemError,
                    "connect: {}", error);
    k->ch = Channel(fd);
    k->comm = std::make_unique<SendComm>(&d);
    k->psn = random_psn();
    {
        const std::lock_guard lock(d.mu);
        if (create_endpoint(*k->comm, k->comm->ring, kCtsRingBytes, &error) != 0)
            return fail(ncclSystemError, "connect to {}: {}", h.listener.to_string(), error);
        k->ch.queue(encode_info(MsgType::hello, my_info(*k->comm, h.nonce, k->psn, k->comm->ring, kCtsRingBytes)));
    }
    *out = std::move(k);
    return ncclSuccess;
}

// ---- listen / accept --------------------------------------------------------

/// A connection being accepted.
struct Accepting {
    enum class State { hello_header, hello_body, reply, ready };
    Channel ch;
    std::string from;
    State state = State::hello_header;
    MsgHeader header;
    std::unique_ptr<RecvComm> comm;
    std::uint64_t deadline_ns = 0;
};

struct ListenComm {
    std::uint32_t magic = kListenCommMagic;
    NetDevice* dev = nullptr;
    std::unique_ptr<CmListener> cm;  ///< set: listening on the connection manager (no socket)
    int fd = -1;
    SockAddr addr;
    std::uint64_t nonce = 0;
    std::mutex mu;  ///< NCCL accepts from one thread, but nothing says so
    std::unique_ptr<Accepting> pending;
    ~ListenComm() {
        magic = kDeadMagic;
        close_fd(fd);
    }
};

/// Drops the connection being accepted (a stray or broken peer) and lets the
/// listener wait for the next one; answers with REJECT when it can.
void drop(ListenComm& l, const std::string& why, int err = EPROTO) {
    log_line(Level::warn, fmt::format("accept on {}: dropping the connection from {}: {}", l.addr.to_string(),
                                      l.pending->from, why));
    l.pending->ch.queue(encode_reject(err, why));
    (void)l.pending->ch.flush();
    l.pending.reset();
}

/// ncclSuccess with *out set once a comm is ready, NULL while waiting; an
/// error only for failures of this side (a bad peer is dropped instead).
ncclResult_t accept_step(ListenComm& l, RecvComm** out) {
    *out = nullptr;
    if (l.cm) return cm_accept_step(*l.cm, out);
    if (!l.pending) {
        int fd = -1;
        const int rc = tcp_accept(l.fd, &fd);
        if (rc == EAGAIN) return ncclSuccess;
        if (rc != 0) return fail(ncclSystemError, "accept on {}: {}", l.addr.to_string(), std::strerror(rc));
        l.pending = std::make_unique<Accepting>();
        l.pending->ch = Channel(fd);
        l.pending->from = peer_name(fd);
        l.pending->deadline_ns = now_ns() + handshake_timeout_ns();
    }
    Accepting& a = *l.pending;
    std::string error;
    if (now_ns() > a.deadline_ns) {
        drop(l, fmt::format("no hello within {} ms", handshake_timeout_ns() / 1'000'000), ETIMEDOUT);
        return ncclSuccess;
    }
    if (a.state == Accepting::State::hello_header) {
        const int rc = a.ch.read_until(kMsgHeaderBytes);
        if (rc == EAGAIN) return ncclSuccess;
        if (rc != 0) {
            drop(l, fmt::format("closed before its hello ({})", std::strerror(rc)));
            return ncclSuccess;
        }
        if (decode_header(a.ch.input().data(), &a.header, &error) != 0 || a.header.type != MsgType::hello) {
            drop(l, error.empty() ? "the first message is no hello" : error);
            return ncclSuccess;
        }
        a.state = Accepting::State::hello_body;
    }
    if (a.state == Accepting::State::hello_body) {
        const int rc = a.ch.read_until(kMsgHeaderBytes + a.header.body_bytes);
        if (rc == EAGAIN) return ncclSuccess;
        if (rc != 0) {
            drop(l, fmt::format("closed during its hello ({})", std::strerror(rc)));
            return ncclSuccess;
        }
        PeerInfo peer;
        if (decode_info(a.ch.input().data() + kMsgHeaderBytes, a.header.body_bytes, kCtsRingBytes, &peer, &error) !=
            0) {
            drop(l, "bad hello: " + error);
            return ncclSuccess;
        }
        if (peer.nonce != l.nonce) {
            drop(l, fmt::format("its handle names listener {:#x}, this is {:#x}", peer.nonce, l.nonce));
            return ncclSuccess;
        }
        a.comm = std::make_unique<RecvComm>(l.dev);
        const std::uint32_t psn = random_psn();
        std::vector<std::uint8_t> reply;
        int rc2 = 0;
        {
            const std::lock_guard lock(l.dev->mu);
            rc2 = create_endpoint(*a.comm, a.comm->ring, kDoneRingBytes, &error);
            if (rc2 == 0) rc2 = connect_endpoint(*a.comm, peer, psn, &error);
            if (rc2 == 0)
                reply = encode_info(MsgType::reply, my_info(*a.comm, l.nonce, psn, a.comm->ring, kDoneRingBytes));
        }
        if (rc2 != 0) {
            const std::string why = fmt::format("setting up the receiving QP: {}", error);
            drop(l, why, rc2);
            return fail(ncclSystemError, "accept on {}: {}", l.addr.to_string(), why);
        }
        a.comm->peer = fmt::format("{} qpn {:#x}", a.from, peer.qpn);
        a.ch.clear_input();
        a.ch.queue(reply);
        a.state = Accepting::State::reply;
    }
    if (a.state == Accepting::State::reply) {
        const int rc = a.ch.flush();
        if (rc == EAGAIN) return ncclSuccess;
        if (rc != 0) {
            drop(l, fmt::format("sending the reply: {}", std::strerror(rc)));
            return ncclSuccess;
        }
        a.state = Accepting::State::ready;
    }
    const int rc = a.ch.read_until(kMsgHeaderBytes);
    if (rc == EAGAIN) return ncclSuccess;
    if (rc != 0) {
        drop(l, fmt::format("closed before it was ready ({})", std::strerror(rc)));
        return ncclSuccess;
    }
    MsgHeader h;
    if (decode_header(a.ch.input().data(), &h, &error) != 0 || h.type != MsgType::ready || h.body_bytes != 0) {
        drop(l, error.empty() ? "the message after the reply is no ready" : error);
        return ncclSuccess;
    }
    a.comm->fd = a.ch.release();
    *out = a.comm.release();
    l.pending.reset();
    return ncclSuccess;
}

}  // namespace

ncclResult_t net_listen(int dev, void* handle, void** listen_comm) {
    if (handle == nullptr || listen_comm == nullptr)
        return fail(ncclInvalidArgument, "listen: NULL handle or listenComm pointer");
    *listen_comm = nullptr;
    NetDevice* d = DeviceTable::instance().at(dev);
    if (d == nullptr)
        return fail(ncclInvalidArgument, "listen: no device {} ({} devices)", dev, DeviceTable::instance().count());
    auto l = std::make_unique<ListenComm>();
    l->dev = d;
    if (setup_mode() == SetupMode::cm && d->planes > kCmHandleMaxPlanes) {
        static std::atomic<bool> said{false};
        if (!said.exchange(true))
            log_line(Level::info, fmt::format("listen on device {}: its {} planes do not fit a connection-manager "
                                              "handle (at most {}); listening over TCP",
                                              d->config.name, d->planes, kCmHandleMaxPlanes));
    } else if (setup_mode() == SetupMode::cm) {
        if (const ncclResult_t rc = cm_listen(*d, handle, &l->cm); rc != ncclSuccess) return rc;
        *listen_comm = l.release();
        return ncclSuccess;
    }
    l->nonce = random_u64();
    std::string error;
    if (const int rc = tcp_listen(d->listen_ip, &l->fd, &l->addr, &error))
        return fail(ncclSystemError, "listen on device {}: {} ({})", d->config.name, error, std::strerror(rc));
    ListenHandle h;
    h.listener = l->addr;
    h.nonce = l->nonce;
    write_handle(h, handle);
    *listen_comm = l.release();
    return ncclSuccess;
}

ncclResult_t net_connect(int dev, void* handle, void** send_comm) {
    if (handle == nullptr || send_comm == nullptr)
        return fail(ncclInvalidArgument, "connect: NULL handle or sendComm pointer");
    *send_comm = nullptr;
    NetDevice* d = DeviceTable::instance().at(dev);
    if (d == nullptr)
        return fail(ncclInvalidArgument, "connect: no device {} ({} devices)", dev, DeviceTable::instance().count());
    ListenHandle h;
    CmHandle cmh;
    std::string error;
    const bool cm = handle_version(handle) == kCmHandleVersion;
    if (cm ? read_cm_handle(handle, &cmh, &error) != 0 : read_handle(handle, &h, &error) != 0)
        return fail(ncclInvalidArgument, "connect: {}", error);

    const std::lock_guard lock(g_connecting_mu);
    std::uint64_t stage = cm ? cmh.stage : h.stage;
    if (stage == 0) {
        std::unique_ptr<Connecting> k;
        if (cm) {
            k = std::make_unique<Connecting>();
            k->dev = d;
            std::memcpy(k->handle_bytes, handle, kHandleBytes);
            if (const ncclResult_t rc = cm_connect_start(*d, cmh, &k->cm); rc != ncclSuccess) return rc;
        } else if (const ncclResult_t rc = start_connect(*d, h, handle, &k); rc != ncclSuccess) {
            return rc;
        }
        stage = random_u64();
        write_handle_stage(handle, stage);
        g_connecting.emplace(stage, std::move(k));
    }
    const auto it = g_connecting.find(stage);
    if (it == g_connecting.end())
        return fail(ncclInvalidArgument,
                    "connect: the handle names connection {:#x}, which this process has not "
                    "started (or which failed before)",
                    stage);
    Connecting& k = *it->second;
    std::uint8_t now[kHandleBytes];
    std::memcpy(now, handle, kHandleBytes);
    write_handle_stage(now, 0);
    if (k.dev != d || std::memcmp(now, k.handle_bytes, kHandleBytes) != 0)
        return fail(ncclInvalidArgument, "connect: the handle changed while its connection was in progress");
    SendComm* c = nullptr;
    const ncclResult_t rc = step(k, &c);
    if (rc != ncclSuccess || c != nullptr) {
        // The connection is done either way; SendComm's destructor takes the
        // device's mutex, which this thread does not hold here.
        g_connecting.erase(it);
    }
    if (c != nullptr) *send_comm = static_cast<Comm*>(c);
    return rc;
}

ncclResult_t net_accept(void* listen_comm, void** recv_comm) {
    if (recv_comm == nullptr) return fail(ncclInvalidArgument, "accept: NULL recvComm pointer");
    *recv_comm = nullptr;
    if (magic_at(listen_comm) != kListenCommMagic)
        return fail(ncclInvalidArgument, "accept: {} is not a listen comm of this plugin", listen_comm);
    auto* l = static_cast<ListenComm*>(listen_comm);
    const std::lock_guard lock(l->mu);
    RecvComm* c = nullptr;
    const ncclResult_t rc = accept_step(*l, &c);
    if (c != nullptr) *recv_comm = static_cast<Comm*>(c);
    return rc;
}

ncclResult_t net_close_listen(void* listen_comm) {
    if (magic_at(listen_comm) != kListenCommMagic)
        return fail(ncclInvalidArgument, "closeListen: {} is not a listen comm of this plugin", listen_comm);
    delete static_cast<ListenComm*>(listen_comm);
    return ncclSuccess;
}

ncclResult_t net_close_send(void* send_comm) {
    SendComm* c = as_send_comm(send_comm);
    if (c == nullptr) return fail(ncclInvalidArgument, "closeSend: {} is not a send comm of this plugin", send_comm);
    delete c;
    return ncclSuccess;
}

ncclResult_t net_close_recv(void* recv_comm) {
    RecvComm* c = as_recv_comm(recv_comm);
    if (c == nullptr) return fail(ncclInvalidArgument, "closeRecv: {} is not a recv comm of this plugin", recv_comm);
    delete c;
    return ncclSuccess;
}

}  // namespace omrc::nccl
