// SPDX-License-Identifier: BSD-3-Clause
// The data protocol (protocol.hpp): posting CTS records, data and done
// records, and reading the completions that carry them.
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "cm_setup.hpp"
#include "comm.hpp"
#include "log.hpp"
#include "socket.hpp"

namespace omrc::nccl {

namespace {

/// How long a comm waits after its peer's socket closed before it fails
/// requests that are still open: the peer may have closed right after its
/// last message, whose completion is then still on its way through the
/// device.
constexpr std::uint64_t kPeerGoneGraceNs = 200'000'000;
/// How often a waiting comm looks at its socket.
constexpr std::uint64_t kLivenessPeriodNs = 1'000'000;

std::uint64_t addr_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

/// What a failed work completion means for NCCL: the peer or the network
/// (ncclRemoteError) or this side (ncclSystemError).
ncclResult_t result_of(WcStatus s) {
    switch (s) {
        case WcStatus::retry_exc_err:
        case WcStatus::rnr_retry_exc_err:
        case WcStatus::rem_inv_req_err:
        case WcStatus::rem_access_err:
        case WcStatus::rem_op_err:
        case WcStatus::bad_resp_err: return ncclRemoteError;
        default: return ncclSystemError;
    }
}

/// Is [addr, addr + size) inside the registration?
bool covers(const MrHandle* mh, const void* data, std::size_t size) {
    if (size == 0) return true;
    if (mh == nullptr || mh->mr == nullptr || data == nullptr) return false;
    const std::uint64_t a = addr_of(data);
    return a >= mh->addr && size <= mh->size && a - mh->addr <= mh->size - size;
}

void on_cts(SendComm& c, const Wc& wc) {
    const std::uint32_t seq = c.cts_seen;
    if (wc.imm_data != seq) {
        c.fail(ncclRemoteError, fmt::format("protocol: CTS immediate {} where CTS {} was due", wc.imm_data, seq));
        return;
    }
    const CtsRecord& r = c.ring[seq % kSlots];
    if (r.magic != kCtsMagic || r.seq != seq || r.n == 0 || r.n > kMaxRecvs || wc.byte_len != cts_bytes(r.n)) {
        c.fail(ncclRemoteError, fmt::format("protocol: CTS {} malformed (magic {:#x}, seq {}, n {}, {} bytes)", seq,
                                            r.magic, r.seq, r.n, wc.byte_len));
        return;
    }
    for (std::uint32_t i = 0; i < r.n; ++i)
        if (r.entries[i].size > kMaxMessageBytes || (r.entries[i].size != 0 && r.entries[i].rkey == 0)) {
            c.fail(ncclRemoteError, fmt::format("protocol: CTS {} receive {}: size {} rkey {:#x}", seq, i,
                                                r.entries[i].size, r.entries[i].rkey));
            return;
        }
    std::memcpy(&c.cts[seq % kSlots], &r, cts_bytes(r.n));
    ++c.cts_seen;
}

void on_send_done(SendComm& c, const Wc& wc) {
    const std::uint32_t seq = c.completed;
    if (static_cast<std::uint32_t>(wc.wr_id) != seq || c.head == seq) {
        c.fail(ncclInternalError, fmt::format("send completion for slot {} while slot {} was due", wc.wr_id, seq));
        return;
    }
    SendComm::Slot& slot = c.slots[seq % kSlots];
    for (int i = 0; i < slot.nmatched; ++i) slot.reqs[i]->done = true;
    slot = SendComm::Slot{};
    ++c.completed;
}

void on_data(RecvComm& c, const Wc& wc) {
    const std::uint32_t seq = c.landed;
    Request* r = c.posted != seq ? c.by_slot[seq % kSlots] : nullptr;
    if (r == nullptr) {
        c.fail(ncclRemoteError, fmt::format("protocol: data arrived without a posted receive (message {})", seq));
        return;
    }
    if ((wc.imm_data & kImmRecord) == 0) {
        const std::uint32_t size = wc.imm_data;
        if (r->n != 1 || size > r->posted[0] || wc.byte_len != size) {
            c.fail(ncclRemoteError, fmt::format("protocol: message {} of {} bytes (immediate {}) for {} receive(s) "
                                                "of {} bytes",
                                                seq, wc.byte_len, size, r->n, r->posted[0]));
            return;
        }
        r->sizes[0] = size;
    } else {
        const DoneRecord& d = c.ring[seq % kSlots];
        bool ok = (wc.imm_data & ~kImmRecord) == (seq & ~kImmRecord) && d.magic == kDoneMagic && d.seq == seq &&
                  d.n == static_cast<std::uint32_t>(r->n) && wc.byte_len == done_bytes(d.n);
        for (int i = 0; ok && i < r->n; ++i) ok = d.sizes[i] <= r->posted[i];
        if (!ok) {
            c.fail(ncclRemoteError, fmt::format("protocol: done record of message {} malformed (immediate {:#x}, "
                                                "magic {:#x}, seq {}, n {} for {})",
                                                seq, wc.imm_data, d.magic, d.seq, d.n, r->n));
            return;
        }
        for (int i = 0; i < r->n; ++i) r->sizes[i] = d.sizes[i];
    }
    r->done = true;
    c.by_slot[seq % kSlots] = nullptr;
    ++c.landed;
}

void on_completion(Comm& c, const Wc& wc) {
    if (wc.wr_id == kProbeWrId) {
        c.probe_outstanding = false;
        if (wc.status == WcStatus::success || wc.status == WcStatus::wr_flush_err) return;
    }
    if (wc.status == WcStatus::wr_flush_err && c.cm_id != 0 && (c.peer_gone_ns != 0 || cm_peer_gone(c))) {
        // The peer disconnected and our QP went to ERR: as with a closed
        // socket, requests still open fail after the grace period (check_peer).
        if (c.peer_gone_ns == 0) c.peer_gone_ns = now_ns();
        return;
    }
    if (wc.status != WcStatus::success) {
        c.fail(result_of(wc.status),
               fmt::format("OpenMRC work completion {} ({}) on QP {:#x}",
                           wc.opcode == WcOpcode::recv_rdma_with_imm ? "of a receive" : "of an RDMA WRITE",
                           to_string(wc.status), wc.qp_num));
        return;
    }
    if (wc.opcode == WcOpcode::recv_rdma_with_imm) {
        if (c.magic == kSendCommMagic)
            on_cts(static_cast<SendComm&>(c), wc);
        else
            on_data(static_cast<RecvComm&>(c), wc);
        if (c.error == ncclSuccess)
            if (const int rc = post_imm_recv(c))
                c.fail(ncclSystemError, fmt::format("post_recv: {}", std::strerror(rc)));
        return;
    }
    // Successful send completions: only the signalled last WRITE_WITH_IMM of a
    // send slot (CTS records go unsignalled).
    if (c.magic == kSendCommMagic)
        on_send_done(static_cast<SendComm&>(c), wc);
    else
        c.fail(ncclInternalError, fmt::format("unexpected send completion {} on a recv comm", wc.wr_id));
}

void drain(Comm& c) {
    Wc wc[32];
    for (;;) {
        const std::size_t n = c.cq->poll(wc);
        for (std::size_t i = 0; i < n; ++i) on_completion(c, wc[i]);
        if (n < std::size(wc)) return;
    }
}

int post_one(Comm& c, const SendWr& wr) {
    const int rc = c.qp->post_send(wr);
    if (rc != 0) c.fail(ncclSystemError, fmt::format("post_send: {}", std::strerror(rc)));
    return rc;
}

}  // namespace

void progress_comm(Comm& c) {
    c.dev->progress_locked();
    drain(c);
}

void check_peer(Comm& c) {
    if (c.error != ncclSuccess) return;
    const std::uint64_t now = now_ns();
    if (now < c.next_liveness_ns) return;
    c.next_liveness_ns = now + kLivenessPeriodNs;
    if (c.peer_gone_ns == 0) {
        if (c.cm_id != 0 ? cm_peer_gone(c) : tcp_peer_alive(c.fd) != 0)
            c.peer_gone_ns = now;
        else if (c.cm_id != 0)
            cm_probe(c, now);
        return;
    }
    if (now - c.peer_gone_ns >= kPeerGoneGraceNs)
        c.fail(ncclRemoteError, c.cm_id != 0 ? "the peer closed its comm or exited (the connection manager reports "
                                               "it disconnected) while this comm still waited for it"
                                             : "the peer closed its comm or exited (its connection socket is "
                                               "closed) while this comm still waited for it");
}

ncclResult_t post_send(SendComm& c, void* data, std::size_t size, int tag, MrHandle* mh, Request** out) {
    *out = nullptr;
    if (c.error != ncclSuccess) return c.error;
    if (size > kMaxMessageBytes)
        return fail(ncclInvalidArgument, "isend: {} bytes exceed the largest message ({} bytes)", size,
                    kMaxMessageBytes);
    if (!covers(mh, data, size))
        return fail(ncclInvalidArgument, "isend: [{}, +{}) is not inside the registration given (mhandle {})", data,
                    size, static_cast<const void*>(mh));
    if (mh != nullptr && mh->dev != c.dev)
        return fail(ncclInvalidArgument, "isend: mhandle of device {} used on a comm of device {}",
                    mh->dev->config.name, c.dev->config.name);
    // The peer's CTS for this slot, and room to track the slot's completion.
    if (c.head == c.cts_seen || c.head - c.completed >= kSlots) {
        progress_comm(c);
        if (c.error == ncclSuccess && (c.head == c.cts_seen || c.head - c.completed >= kSlots))
            check_peer(c);  // a CTS from a peer that is gone never comes
        if (c.error != ncclSuccess) return c.error;
        if (c.head == c.cts_seen || c.head - c.completed >= kSlots) return ncclSuccess;
    }
    const std::uint32_t seq = c.head;
    SendComm::Slot& slot = c.slots[seq % kSlots];
    const CtsRecord& cts = c.cts[seq % kSlots];
    int idx = -1;
    if (cts.n == 1) {
        idx = 0;  // a single receive takes the send whatever its tag
    } else {
        for (std::uint32_t i = 0; i < cts.n && idx < 0; ++i)
            if ((slot.matched & (1u << i)) == 0 && cts.entries[i].tag == tag) idx = static_cast<int>(i);
        if (idx < 0) {  // its receive is in a later slot: NCCL calls again
            check_peer(c);
            return c.error;
        }
    }
    const CtsEntry& e = cts.entries[idx];
    if (size > e.size)
        return fail(ncclInvalidUsage, "isend: {} bytes (tag {}) for a receive of {} bytes posted by {} (message {})",
                    size, tag, e.size, c.peer, seq);
    Request* r = c.alloc_request();
    if (r == nullptr) return ncclSuccess;
    r->is_send = true;
    r->seq = seq;
    r->sizes[0] = static_cast<std::uint32_t>(size);

    Sge sge{addr_of(data), static_cast<std::uint32_t>(size), mh != nullptr && mh->mr ? mh->mr->lkey() : 0};
    SendWr wr;
    wr.sg_list = size != 0 ? std::span<const Sge>(&sge, 1) : std::span<const Sge>{};
    wr.remote_addr = e.addr;
    wr.rkey = e.rkey;
    slot.reqs[slot.nmatched++] = r;
    slot.matched |= 1u << idx;
    slot.sizes[idx] = static_cast<std::uint32_t>(size);
    if (cts.n == 1) {
        wr.wr_id = seq;
        wr.opcode = WrOpcode::rdma_write_with_imm;
        wr.send_flags = SendFlags::signaled;
        wr.imm_data = static_cast<std::uint32_t>(size);
        if (post_one(c, wr) != 0) return c.error;
        ++c.head;
    } else {
        if (size != 0 && post_one(c, wr) != 0) return c.error;
        if (slot.nmatched == static_cast<int>(cts.n)) {
            DoneRecord d{};
            d.magic = kDoneMagic;
            d.seq = seq;
            d.n = cts.n;
            std::memcpy(d.sizes, slot.sizes, sizeof(d.sizes));
            Sge rec{addr_of(&d), done_bytes(cts.n), 0};
            SendWr last;
            last.wr_id = seq;
            last.opcode = WrOpcode::rdma_write_with_imm;
            last.send_flags = SendFlags::signaled | SendFlags::inline_;
            last.sg_list = {&rec, 1};
            last.remote_addr = c.peer_ring_addr + std::uint64_t{seq % kSlots} * sizeof(DoneRecord);
            last.rkey = c.peer_ring_rkey;
            last.imm_data = kImmRecord | (seq & ~kImmRecord);
            if (post_one(c, last) != 0) return c.error;
            ++c.head;
        }
    }
    c.dev->progress_locked();  // the first frames leave now
    *out = r;
    return ncclSuccess;
}

ncclResult_t post_recv(RecvComm& c, int n, void** data, const std::size_t* sizes, const int* tags, MrHandle** mhs,
                       Request** out) {
    *out = nullptr;
    if (c.error != ncclSuccess) return c.error;
    if (n < 1 || n > kMaxRecvs)
        return fail(ncclInvalidArgument, "irecv: n = {} (1..{} receives at once)", n, kMaxRecvs);
    if (data == nullptr || sizes == nullptr || mhs == nullptr)
        return fail(ncclInvalidArgument, "irecv: NULL data, sizes or mhandles array");
    for (int i = 0; i < n; ++i) {
        if (sizes[i] > kMaxMessageBytes)
            return fail(ncclInvalidArgument, "irecv: receive {}: {} bytes exceed the largest message ({} bytes)", i,
                        sizes[i], kMaxMessageBytes);
        if (!covers(mhs[i], data[i], sizes[i]))
            return fail(ncclInvalidArgument, "irecv: receive {}: [{}, +{}) is not inside the registration given", i,
                        data[i], sizes[i]);
        if (mhs[i] != nullptr && mhs[i]->dev != c.dev)
            return fail(ncclInvalidArgument, "irecv: receive {}: mhandle of device {} used on a comm of device {}", i,
                        mhs[i]->dev->config.name, c.dev->config.name);
        for (int j = 0; n > 1 && tags != nullptr && j < i; ++j)
            if (tags[j] == tags[i])
                return fail(ncclInvalidArgument, "irecv: receives {} and {} of one multi-receive share tag {}", j, i,
                            tags[i]);
    }
    if (n > 1 && tags == nullptr) return fail(ncclInvalidArgument, "irecv: a multi-receive without tags");
    if (c.posted - c.landed >= kSlots) {
        progress_comm(c);
        if (c.error == ncclSuccess && c.posted - c.landed >= kSlots) check_peer(c);
        if (c.error != ncclSuccess) return c.error;
        if (c.posted - c.landed >= kSlots) return ncclSuccess;
    }
    Request* r = c.alloc_request();
    if (r == nullptr) return ncclSuccess;
    const std::uint32_t seq = c.posted;
    CtsRecord cts{};
    cts.magic = kCtsMagic;
    cts.seq = seq;
    cts.n = static_cast<std::uint32_t>(n);
    r->seq = seq;
    r->n = n;
    for (int i = 0; i < n; ++i) {
        CtsEntry& e = cts.entries[i];
        e.addr = addr_of(data[i]);
        e.size = static_cast<std::uint32_t>(sizes[i]);
        e.rkey = mhs[i] != nullptr && mhs[i]->mr ? mhs[i]->mr->rkey() : 0;
        e.tag = tags != nullptr ? tags[i] : 0;
        r->posted[i] = e.size;
    }
    Sge rec{addr_of(&cts), cts_bytes(cts.n), 0};
    SendWr wr;
    wr.wr_id = seq;
    wr.opcode = WrOpcode::rdma_write_with_imm;
    wr.send_flags = SendFlags::inline_;  // unsignalled: only a failure completes
    wr.sg_list = {&rec, 1};
    wr.remote_addr = c.peer_ring_addr + std::uint64_t{seq % kSlots} * sizeof(CtsRecord);
    wr.rkey = c.peer_ring_rkey;
    wr.imm_data = seq;
    if (post_one(c, wr) != 0) {
        c.release_request(r);
        return c.error;
    }
    c.by_slot[seq % kSlots] = r;
    ++c.posted;
    c.dev->progress_locked();
    *out = r;
    return ncclSuccess;
}

}  // namespace omrc::nccl
