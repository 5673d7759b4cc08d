// SPDX-License-Identifier: BSD-3-Clause
// NCCL's call sequences, replayed through a net plugin: connecting comms
// (listen, handle exchange, connect/accept polled until both return comms),
// memory registration, and collectives built only from isend, irecv and
// test — a ring allreduce (reduce-scatter then all-gather, float32 sum, each
// step cut into slices with several in flight, as NCCL's proxy does) and an
// all-to-all over a full mesh. Every wait is bounded by a deadline.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "exchange.hpp"
#include "net_api.hpp"

namespace omrc::nccl::test {

/// The outcome of a step: ncclSuccess, or the first error and where.
struct Status {
    ncclResult_t rc = ncclSuccess;
    std::string what;
    [[nodiscard]] bool ok() const noexcept { return rc == ncclSuccess; }
    static Status error(ncclResult_t rc, std::string what) {
        return {rc == ncclSuccess ? ncclSystemError : rc, std::move(what)};
    }
};

inline std::string describe(const Status& s) {
    return s.ok() ? std::string("ok") : "error " + std::to_string(static_cast<int>(s.rc)) + ": " + s.what;
}

/// Polls connect (towards `peer_handle`) and accept (on `listen_comm`) until
/// both returned a comm, as NCCL's proxy does. Either side may be skipped
/// (nullptr handle / listen comm). *connect_polls / *accept_polls count the
/// calls that returned no comm yet.
inline Status connect_accept(Net& net, int dev, Handle* peer_handle, void* listen_comm, void** send_comm,
                             void** recv_comm, Clock::time_point deadline, int* connect_polls = nullptr,
                             int* accept_polls = nullptr) {
    if (send_comm != nullptr) *send_comm = nullptr;
    if (recv_comm != nullptr) *recv_comm = nullptr;
    bool need_send = peer_handle != nullptr, need_recv = listen_comm != nullptr;
    while (need_send || need_recv) {
        if (Clock::now() > deadline) return Status::error(ncclSystemError, "connect/accept timed out");
        if (need_send) {
            if (const ncclResult_t rc = net.connect(dev, peer_handle->data(), send_comm); rc != ncclSuccess)
                return Status::error(rc, "connect");
            if (*send_comm != nullptr)
                need_send = false;
            else if (connect_polls != nullptr)
                ++*connect_polls;
        }
        if (need_recv) {
            if (const ncclResult_t rc = net.accept(listen_comm, recv_comm); rc != ncclSuccess)
                return Status::error(rc, "accept");
            if (*recv_comm != nullptr)
                need_recv = false;
            else if (accept_polls != nullptr)
                ++*accept_polls;
        }
        std::this_thread::yield();
    }
    return {};
}

/// Tests requests until all are done. sizes (if given) receives each one's
/// first reported size.
inline Status wait_all(Net& net, std::vector<void*>& reqs, Clock::time_point deadline,
                       std::vector<int>* sizes = nullptr) {
    if (sizes != nullptr) sizes->assign(reqs.size(), -1);
    std::size_t left = 0;
    for (void* r : reqs) left += r != nullptr;
    while (left > 0) {
        if (Clock::now() > deadline) return Status::error(ncclSystemError, "requests not done before the deadline");
        bool moved = false;
        for (std::size_t i = 0; i < reqs.size(); ++i) {
            if (reqs[i] == nullptr) continue;
            int done = 0;
            int sz[NCCL_NET_MAX_REQUESTS] = {};
            if (const ncclResult_t rc = net.test(reqs[i], &done, sz); rc != ncclSuccess)
                return Status::error(rc, "test");
            if (done) {
                if (sizes != nullptr) (*sizes)[i] = sz[0];
                reqs[i] = nullptr;
                --left;
                moved = true;
            }
        }
        if (!moved) std::this_thread::yield();
    }
    return {};
}

/// The comms of one rank in a ring: to the next rank, from the previous one.
struct RingComms {
    void* listen = nullptr;
    void* send_next = nullptr;
    void* recv_prev = nullptr;
};

/// Listens, publishes the handle as "<tag>.ring.<rank>", connects to the next
/// rank's and accepts the previous rank's.
inline Status ring_connect(Net& net, int dev, int rank, int nranks, Exchange& ex, const std::string& tag,
                           RingComms* out, Clock::time_point deadline) {
    Handle mine(NCCL_NET_HANDLE_MAXSIZE, 0);
    if (const ncclResult_t rc = net.listen(dev, mine.data(), &out->listen); rc != ncclSuccess)
        return Status::error(rc, "listen");
    ex.put(tag + ".ring." + std::to_string(rank), mine);
    Handle next;
    if (!ex.get(tag + ".ring." + std::to_string((rank + 1) % nranks), &next, deadline))
        return Status::error(ncclSystemError, "the next rank's handle never came");
    return connect_accept(net, dev, &next, out->listen, &out->send_next, &out->recv_prev, deadline);
}

inline void ring_close(Net& net, RingComms& c) {
    if (c.send_next != nullptr) net.close_send(c.send_next);
    if (c.recv_prev != nullptr) net.close_recv(c.recv_prev);
    if (c.listen != nullptr) net.close_listen(c.listen);
    c = RingComms{};
}

/// Memory handles NCCL would hold: a buffer registered on the comm it is sent
/// through and on the comm it is received through.
struct Registered {
    void* send_mh = nullptr;
    void* recv_mh = nullptr;
};

inline Status register_buffer(Net& net, void* send_comm, void* recv_comm, void* data, std::size_t bytes,
                              Registered* out) {
    if (send_comm != nullptr)
        if (const ncclResult_t rc = net.reg_mr(send_comm, data, bytes, NCCL_PTR_HOST, &out->send_mh); rc != ncclSuccess)
            return Status::error(rc, "regMr(send)");
    if (recv_comm != nullptr)
        if (const ncclResult_t rc = net.reg_mr(recv_comm, data, bytes, NCCL_PTR_HOST, &out->recv_mh); rc != ncclSuccess)
            return Status::error(rc, "regMr(recv)");
    return {};
}

inline void deregister_buffer(Net& net, void* send_comm, void* recv_comm, Registered& r) {
    if (r.send_mh != nullptr) net.dereg_mr(send_comm, r.send_mh);
    if (r.recv_mh != nullptr) net.dereg_mr(recv_comm, r.recv_mh);
    r = Registered{};
}

/// One transfer of a ring step: a chunk cut into slices, at most `window`
/// of them in flight in each direction.
struct SliceOptions {
    std::size_t slice_bytes = 1u << 20;
    int window = 8;  ///< ≤ NCCL_NET_MAX_REQUESTS
};

/// Sends [send, send+send_bytes) to the next rank while receiving
/// recv_bytes from the previous one into recv, both in slices.
inline Status exchange_step(Net& net, RingComms& c, const std::uint8_t* send, std::size_t send_bytes, void* send_mh,
                            std::uint8_t* recv, std::size_t recv_bytes, void* recv_mh, const SliceOptions& o,
                            Clock::time_point deadline) {
    auto slices = [&](std::size_t bytes) {
        return std::max<std::size_t>(1, (bytes + o.slice_bytes - 1) / o.slice_bytes);
    };
    const std::size_t ns = slices(send_bytes), nr = slices(recv_bytes);
    std::size_t sent = 0, recvd = 0, s_done = 0, r_done = 0;
    std::vector<void*> s_reqs, r_reqs;  // in flight
    while (s_done < ns || r_done < nr) {
        if (Clock::now() > deadline) return Status::error(ncclSystemError, "ring step not done before the deadline");
        bool moved = false;
        while (recvd < nr && static_cast<int>(r_reqs.size()) < o.window) {
            const std::size_t off = recvd * o.slice_bytes;
            std::size_t len = std::min(o.slice_bytes, recv_bytes - std::min(recv_bytes, off));
            void* data = recv + std::min(off, recv_bytes);
            int tag = 0;
            void* req = nullptr;
            if (const ncclResult_t rc = net.irecv(c.recv_prev, 1, &data, &len, &tag, &recv_mh, &req); rc != ncclSuccess)
                return Status::error(rc, "irecv");
            if (req == nullptr) break;
            r_reqs.push_back(req);
            ++recvd;
            moved = true;
        }
        while (sent < ns && static_cast<int>(s_reqs.size()) < o.window) {
            const std::size_t off = sent * o.slice_bytes;
            const std::size_t len = std::min(o.slice_bytes, send_bytes - std::min(send_bytes, off));
            void* req = nullptr;
            if (const ncclResult_t rc = net.isend(
                    c.send_next, const_cast<std::uint8_t*>(send) + std::min(off, send_bytes), len, 0, send_mh, &req);
                rc != ncclSuccess)
                return Status::error(rc, "isend");
            if (req == nullptr) break;  // the peer has not posted this receive yet
            s_reqs.push_back(req);
            ++sent;
            moved = true;
        }
        for (auto* reqs : {&s_reqs, &r_reqs}) {
            for (std::size_t i = 0; i < reqs->size();) {
                int done = 0, size = 0;
                if (const ncclResult_t rc = net.test((*reqs)[i], &done, &size); rc != ncclSuccess)
                    return Status::error(rc, "test");
                if (!done) {
                    ++i;
                    continue;
                }
                reqs->erase(reqs->begin() + static_cast<std::ptrdiff_t>(i));
                (reqs == &s_reqs ? s_done : r_done) += 1;
                moved = true;
            }
        }
        if (!moved) std::this_thread::yield();
    }
    return {};
}

/// Ring allreduce (sum) of `count` floats in place: n−1 reduce-scatter steps
/// then n−1 all-gather steps. `tmp` holds count / nranks + 1 floats at least.
/// data and tmp are registered: data on both ring comms, tmp on recv_prev.
inline Status ring_allreduce(Net& net, RingComms& c, float* data, const Registered& data_mh, float* tmp,
                             const Registered& tmp_mh, std::size_t count, int rank, int nranks, const SliceOptions& o,
                             Clock::time_point deadline) {
    if (nranks == 1) return {};
    const auto n = static_cast<std::size_t>(nranks);
    auto begin = [&](std::size_t chunk) { return count * chunk / n; };
    auto length = [&](std::size_t chunk) { return begin(chunk + 1) - begin(chunk); };
    auto mod = [&](long x) { return static_cast<std::size_t>(((x % nranks) + nranks) % nranks); };
    for (int s = 0; s < nranks - 1; ++s) {  // reduce-scatter
        const std::size_t out = mod(rank - s), in = mod(rank - s - 1);
        Status st = exchange_step(net, c, reinterpret_cast<const std::uint8_t*>(data + begin(out)),
                                  length(out) * sizeof(float), data_mh.send_mh, reinterpret_cast<std::uint8_t*>(tmp),
                                  length(in) * sizeof(float), tmp_mh.recv_mh, o, deadline);
        if (!st.ok()) return st;
        float* dst = data + begin(in);
        for (std::size_t i = 0; i < length(in); ++i) dst[i] += tmp[i];
    }
    for (int s = 0; s < nranks - 1; ++s) {  // all-gather
        const std::size_t out = mod(rank + 1 - s), in = mod(rank - s);
        Status st =
            exchange_step(net, c, reinterpret_cast<const std::uint8_t*>(data + begin(out)), length(out) * sizeof(float),
                          data_mh.send_mh, reinterpret_cast<std::uint8_t*>(data + begin(in)),
                          length(in) * sizeof(float), data_mh.recv_mh, o, deadline);
        if (!st.ok()) return st;
    }
    return {};
}

/// The input of rank r's allreduce, and the sum every rank must end with:
/// small integers, so float sums are exact.
inline float allreduce_input(int rank, std::size_t i) {
    return static_cast<float>((i * 7 + static_cast<std::size_t>(rank) * 13) % 1024);
}
inline float allreduce_expected(int nranks, std::size_t i) {
    float s = 0;
    for (int r = 0; r < nranks; ++r) s += allreduce_input(r, i);
    return s;
}

/// The comms of one rank in a full mesh: send[j] to rank j, recv[j] from it.
struct MeshComms {
    std::vector<void*> listen, send, recv;
};

inline Status mesh_connect(Net& net, int dev, int rank, int nranks, Exchange& ex, const std::string& tag, MeshComms* m,
                           Clock::time_point deadline) {
    const auto n = static_cast<std::size_t>(nranks);
    m->listen.assign(n, nullptr);
    m->send.assign(n, nullptr);
    m->recv.assign(n, nullptr);
    for (int j = 0; j < nranks; ++j) {
        if (j == rank) continue;
        Handle h(NCCL_NET_HANDLE_MAXSIZE, 0);
        if (const ncclResult_t rc = net.listen(dev, h.data(), &m->listen[j]); rc != ncclSuccess)
            return Status::error(rc, "listen");
        ex.put(tag + ".mesh." + std::to_string(rank) + ".from." + std::to_string(j), h);
    }
    std::vector<Handle> peers(n);
    for (int j = 0; j < nranks; ++j)
        if (j != rank &&
            !ex.get(tag + ".mesh." + std::to_string(j) + ".from." + std::to_string(rank), &peers[j], deadline))
            return Status::error(ncclSystemError, "a peer's handle never came");
    // All connects and accepts polled together: NCCL's order of peers differs
    // from rank to rank too.
    std::size_t left = 2 * (n - 1);
    while (left > 0) {
        if (Clock::now() > deadline) return Status::error(ncclSystemError, "mesh connect timed out");
        for (int j = 0; j < nranks; ++j) {
            if (j == rank) continue;
            if (m->send[j] == nullptr) {
                if (const ncclResult_t rc = net.connect(dev, peers[j].data(), &m->send[j]); rc != ncclSuccess)
                    return Status::error(rc, "connect");
                left -= m->send[j] != nullptr;
            }
            if (m->recv[j] == nullptr) {
                if (const ncclResult_t rc = net.accept(m->listen[j], &m->recv[j]); rc != ncclSuccess)
                    return Status::error(rc, "accept");
                left -= m->recv[j] != nullptr;
            }
        }
        std::this_thread::yield();
    }
    return {};
}

inline void mesh_close(Net& net, MeshComms& m) {
    for (void* c : m.send)
        if (c != nullptr) net.close_send(c);
    for (void* c : m.recv)
        if (c != nullptr) net.close_recv(c);
    for (void* c : m.listen)
        if (c != nullptr) net.close_listen(c);
    m = MeshComms{};
}

inline std::uint8_t a2a_byte(int from, int to, std::size_t i) {
    return static_cast<std::uint8_t>(
        (static_cast<std::size_t>(from) * 31 + static_cast<std::size_t>(to) * 17 + i * 13 + (i >> 8)) & 0xff);
}

/// All-to-all of `block` bytes per pair: rank r's block j goes to rank j,
/// whose block r it becomes. Fills the input itself and checks what arrived
/// byte for byte; *exact says whether it matched.
inline Status all_to_all(Net& net, MeshComms& m, int rank, int nranks, std::size_t block, bool* exact,
                         Clock::time_point deadline) {
    const auto n = static_cast<std::size_t>(nranks);
    std::vector<std::uint8_t> in(block * n), out(block * n, 0);
    for (std::size_t j = 0; j < n; ++j)
        for (std::size_t i = 0; i < block; ++i) in[j * block + i] = a2a_byte(rank, static_cast<int>(j), i);
    std::vector<Registered> in_mh(n), out_mh(n);
    std::vector<void*> reqs;
    Status st;
    for (int j = 0; j < nranks && st.ok(); ++j) {
        if (j == rank) {
            if (block != 0) std::memcpy(out.data() + j * block, in.data() + j * block, block);
            continue;
        }
        st = register_buffer(net, m.send[j], nullptr, in.data() + j * block, block, &in_mh[j]);
        if (st.ok()) st = register_buffer(net, nullptr, m.recv[j], out.data() + j * block, block, &out_mh[j]);
    }
    for (int j = 0; j < nranks && st.ok(); ++j) {
        if (j == rank) continue;
        void* data = out.data() + j * block;
        std::size_t size = block;
        int tag = 0;
        void* req = nullptr;
        while (st.ok() && req == nullptr) {
            if (const ncclResult_t rc = net.irecv(m.recv[j], 1, &data, &size, &tag, &out_mh[j].recv_mh, &req);
                rc != ncclSuccess)
                st = Status::error(rc, "irecv");
        }
        reqs.push_back(req);
    }
    // Sends wait for their receives: post them in a loop, testing meanwhile.
    std::vector<bool> posted(n, false);
    std::size_t to_post = n - 1;
    while (st.ok() && to_post > 0) {
        if (Clock::now() > deadline)
            st = Status::error(ncclSystemError, "all-to-all sends not posted before the deadline");
        for (int j = 0; j < nranks && st.ok(); ++j) {
            if (j == rank || posted[j]) continue;
            void* req = nullptr;
            if (const ncclResult_t rc = net.isend(m.send[j], in.data() + j * block, block, 0, in_mh[j].send_mh, &req);
                rc != ncclSuccess)
                st = Status::error(rc, "isend");
            else if (req != nullptr) {
                reqs.push_back(req);
                posted[j] = true;
                --to_post;
            }
        }
        // Progress the receives already posted while sends wait.
        for (std::size_t i = 0; i < reqs.size() && st.ok(); ++i) {
            if (reqs[i] == nullptr) continue;
            int done = 0;
            if (const ncclResult_t rc = net.test(reqs[i], &done, nullptr); rc != ncclSuccess)
                st = Status::error(rc, "test");
            else if (done)
                reqs[i] = nullptr;
        }
        std::this_thread::yield();
    }
    if (st.ok()) st = wait_all(net, reqs, deadline);
    for (int j = 0; j < nranks; ++j) {
        if (j == rank) continue;
        deregister_buffer(net, m.send[j], nullptr, in_mh[j]);
        deregister_buffer(net, nullptr, m.recv[j], out_mh[j]);
    }
    bool ok = true;
    for (std::size_t j = 0; j < n && ok; ++j)
        for (std::size_t i = 0; i < block && ok; ++i) ok = out[j * block + i] == a2a_byte(static_cast<int>(j), rank, i);
    *exact = ok;
    return st;
}

}  // namespace omrc::nccl::test
