// SPDX-License-Identifier: BSD-3-Clause
// Comm objects: creation, the request pool, failure, destruction.
#include "comm.hpp"

#include <algorithm>
#include <chrono>

#include "log.hpp"
#include "socket.hpp"

namespace omrc::nccl {

namespace {

/// Before a connected QP goes away, the device runs a little longer (the
/// device's mutex held): the acknowledgements for the last packets that
/// arrived may still wait for their delay (DeviceOptions::ack_delay_ns), and
/// a peer that never gets them would retransmit into a QP that is gone until
/// its request fails. A NIC sends them on its own; here they leave while the
/// device has work due within one ACK delay, for at most 4 ACK delays (1 ms
/// to 100 ms).
void linger(NetDevice& d) {
    const std::uint64_t ack_delay = d.config.options.ack_delay_ns;
    const auto budget = std::chrono::nanoseconds(std::clamp<std::uint64_t>(4 * ack_delay, 1'000'000, 100'000'000));
    const auto deadline = std::chrono::steady_clock::now() + budget;
    do {
        d.progress_locked();
        if (d.device->next_wakeup_ns() > d.device->now_ns() + ack_delay) break;
    } while (std::chrono::steady_clock::now() < deadline);
}

}  // namespace

Comm::Comm(std::uint32_t kind, NetDevice* d, std::size_t pool) : magic(kind), dev(d), requests(pool) {
    free_requests.reserve(pool);
    for (std::size_t i = pool; i > 0; --i) free_requests.push_back(&requests[i - 1]);
}

Comm::~Comm() { teardown(); }

void Comm::teardown() {
    magic = kDeadMagic;
    for (Request& r : requests) r.magic = kDeadMagic;
    close_fd(fd);
    if (!qp && !ring_mr && !cq) return;
    // The QP goes first (its outstanding WRs are dropped without completion),
    // then the ring nobody may write into any more, then the CQ.
    const std::lock_guard lock(dev->mu);
    if (cm_id != 0) dev->cm_by_id.erase(cm_id);  // its later events go (the QP's destruction sends a DREQ)
    if (qp && qp->state() == QpState::rts) linger(*dev);
    qp.reset();
    ring_mr.reset();
    cq.reset();
}

Request* Comm::alloc_request() {
    if (free_requests.empty()) return nullptr;
    Request* r = free_requests.back();
    free_requests.pop_back();
    *r = Request{};
    r->magic = kRequestMagic;
    r->comm = this;
    return r;
}

void Comm::release_request(Request* r) {
    r->magic = 0;
    free_requests.push_back(r);
}

void Comm::fail(ncclResult_t result, const std::string& reason) {
    if (error != ncclSuccess) return;
    error = result;
    error_reason = reason;
    log_line(Level::warn, fmt::format("{} comm to {} on {} failed: {}", magic == kSendCommMagic ? "send" : "recv", peer,
                                      dev->config.name, reason));
}

Comm* as_comm(void* p) noexcept {
    const std::uint32_t m = magic_at(p);
    return m == kSendCommMagic || m == kRecvCommMagic ? static_cast<Comm*>(p) : nullptr;
}

SendComm* as_send_comm(void* p) noexcept {
    return magic_at(p) == kSendCommMagic ? static_cast<SendComm*>(static_cast<Comm*>(p)) : nullptr;
}

RecvComm* as_recv_comm(void* p) noexcept {
    return magic_at(p) == kRecvCommMagic ? static_cast<RecvComm*>(static_cast<Comm*>(p)) : nullptr;
}

}  // namespace omrc::nccl
