// SPDX-License-Identifier: BSD-3-Clause
// One RDMA WRITE transfer between two devices through the public verbs API:
// the post / progress / poll loop that the driver tests, the real-time tests
// and the fabric test share (the shape of rdma-core's traffic() helper).
//
//   const TransferResult r = transfer(*a, *b, spec);
//   CHECK(r.completions == r.messages); CHECK(r.errors == 0); CHECK(r.exact);
//
// WriteTransfer is the same in two steps, for a caller that watches the
// devices while the transfer runs (TransferHooks) or reads the buffers after.
// No Catch2 here: tools (tests/fabric) use it as well; the caller checks the
// result.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "omrc/verbs.hpp"

namespace omrc::test {

/// RESET → INIT → RTR → RTS for QPs `a` (of device `da`) and `b` (of `db`),
/// attributes exchanged in process. `base` supplies the path, MTU, window,
/// timeout, retries and congestion control; the PSNs are fixed (a: sends
/// from 1000, b: from 2000). Returns 0, or the errno of the first transition
/// that failed (EPROTO: it returned 0 but the QP is not in the new state)
/// with `*step` naming it.
inline int connect_qps(Qp& a, const Device& da, Qp& b, const Device& db, const QpAttr& base = {},
                       std::string* step = nullptr) {
    auto failed = [&](const char* what, int rc) {
        if (step != nullptr) *step = what;
        return rc;
    };
    for (Qp* q : {&a, &b}) {
        QpAttr init = base;
        init.qp_state = QpState::init;
        // base's access flags when set, else what every test so far needs.
        init.qp_access_flags = base.qp_access_flags != 0
                                   ? base.qp_access_flags
                                   : AccessFlags::local_write | AccessFlags::remote_write | AccessFlags::remote_read;
        if (const int rc = q->modify(init, QpAttrMask::state | QpAttrMask::access_flags)) return failed("modify(INIT)", rc);
        if (q->state() != QpState::init) return failed("state after modify(INIT)", EPROTO);
    }
    struct Side {
        Qp* self;
        Qp* peer;
        const Device* peer_dev;
        std::uint32_t psn_in, psn_out;
    };
    for (const Side& s : {Side{&a, &b, &db, 2000, 1000}, Side{&b, &a, &da, 1000, 2000}}) {
        QpAttr rtr = base;
        rtr.qp_state = QpState::rtr;
        rtr.dest_qp_num = s.peer->qp_num();
        rtr.dest_conn_id = s.peer->conn_id();
        rtr.rq_psn = s.psn_in;
        rtr.peer = s.peer_dev->address();
        // base's encryption when it names one, else the devices' default.
        const std::uint32_t enc = base.encryption != Encryption::device_default ? QpAttrMask::encryption : 0;
        if (const int rc = s.self->modify(rtr, QpAttrMask::state | QpAttrMask::path | QpAttrMask::dest_qpn |
                                                   QpAttrMask::rq_psn | QpAttrMask::mtu | QpAttrMask::mpr | enc))
            return failed("modify(RTR)", rc);
        QpAttr rts = base;
        rts.qp_state = QpState::rts;
        rts.sq_psn = s.psn_out;
        if (const int rc = s.self->modify(rts, QpAttrMask::state | QpAttrMask::sq_psn | QpAttrMask::timeout |
                                                   QpAttrMask::retry_cnt | QpAttrMask::cc))
            return failed("modify(RTS)", rc);
        if (s.self->state() != QpState::rts) return failed("state after modify(RTS)", EPROTO);
    }
    return 0;
}

/// What to transfer: `bytes` from a buffer of device a into one of device b,
/// as WRITEs of `msg_bytes`, `depth` of them outstanding.
struct TransferSpec {
    std::size_t bytes = 8u << 20;       ///< rounded up to a multiple of msg_bytes
    std::size_t msg_bytes = 64u << 10;  ///< per WRITE (≤ 2^31)
    std::size_t depth = 16;             ///< WRITEs outstanding at the sender
    std::uint64_t seed = 1;             ///< of the source bytes
    QpAttr qp{};                        ///< connection attributes (see connect_qps)
    QpCap cap{};                        ///< both QPs' capacities
    int cqe = 1024;                     ///< each side's CQ
    /// The last WRITE is a WRITE_WITH_IMM carrying this; the receiver posts
    /// one receive (wr_id kImmRecvWrId) for it.
    std::optional<std::uint32_t> last_imm;
    /// Stop at the first completion in error (else count errors and go on).
    bool stop_on_error = false;
    /// Device b progresses on a thread of its own while the transfer runs
    /// (real-time drivers); otherwise the caller's thread progresses both.
    bool peer_thread = false;
    std::chrono::milliseconds timeout{60'000};  ///< wall clock, the whole transfer
    /// The workers of the two QPs (QpInitAttr::worker; -1: the devices' turn).
    int worker_a = -1;
    int worker_b = -1;
};

/// The receive the last WRITE's immediate consumes.
inline constexpr std::uint64_t kImmRecvWrId = 77;

/// Called while the transfer runs, on the caller's thread.
struct TransferHooks {
    /// Each sender completion; `done` counts them, this one included.
    std::function<void(const Wc& wc, std::size_t done)> on_send_completion;
    /// After every pass of the loop; returning false stops the transfer.
    std::function<bool()> on_pass;
};

struct TransferResult {
    int setup_error = 0;                 ///< errno of the setup step that failed (0: set up)
    std::string setup_step;              ///< which one ("reg_mr(src)", "modify(RTR)", ...)
    std::size_t messages = 0;            ///< WRITEs to post
    std::size_t posted = 0;
    int post_error = 0;                  ///< post_send's errno, if it refused a WRITE
    std::size_t completions = 0;         ///< at the sender
    std::size_t errors = 0;              ///< of them not successful
    WcStatus first_error = WcStatus::success;
    bool each_once = true;               ///< no WR completed twice
    std::vector<Wc> received;            ///< the receiver's completions (the immediate's)
    bool placed_at_imm = false;          ///< every byte was in place when the immediate's completion came
    bool timed_out = false;
    bool stopped = false;                ///< TransferHooks::on_pass ended it
    bool exact = false;                  ///< destination == source, every byte, at the end
    double seconds = 0;                  ///< wall clock of the loop
};

class WriteTransfer {
public:
    /// Creates the PDs, CQs, QPs and MRs on both devices and connects the
    /// QPs; a failure is in result().setup_error and run() does nothing.
    WriteTransfer(Device& a, Device& b, const TransferSpec& spec) : a_(a), b_(b), spec_(spec) {
        spec_.msg_bytes = std::max<std::size_t>(spec_.msg_bytes, 1);
        r_.messages = (spec_.bytes + spec_.msg_bytes - 1) / spec_.msg_bytes;
        spec_.bytes = r_.messages * spec_.msg_bytes;
        src_.resize(spec_.bytes);
        dst_.assign(spec_.bytes, 0);
        std::mt19937_64 rng(spec_.seed);
        for (std::size_t i = 0; i < src_.size(); i += 8) {
            const std::uint64_t x = rng();
            std::memcpy(src_.data() + i, &x, std::min<std::size_t>(8, src_.size() - i));
        }
        seen_.assign(r_.messages, 0);
        setup();
    }
    WriteTransfer(const WriteTransfer&) = delete;
    WriteTransfer& operator=(const WriteTransfer&) = delete;

    TransferResult run(const TransferHooks& hooks = {}) {
        if (r_.setup_error != 0) return r_;
        std::atomic<bool> stop{false};
        std::thread peer;
        if (spec_.peer_thread)
            peer = std::thread([&] {
                while (!stop.load(std::memory_order_relaxed))
                    if (b_.progress() == 0) std::this_thread::yield();
            });
        const auto start = std::chrono::steady_clock::now();
        const auto deadline = start + spec_.timeout;
        const bool want_imm = spec_.last_imm.has_value();
        Wc wc[32];
        while (r_.completions < r_.messages || (want_imm && !imm_done())) {
            if (std::chrono::steady_clock::now() > deadline) {
                r_.timed_out = true;
                break;
            }
            if (!post()) break;
            std::size_t moved = a_.progress();
            if (!spec_.peer_thread) moved += b_.progress();
            for (std::size_t k = ca_->poll(wc), i = 0; i < k; ++i) on_send(wc[i], hooks);
            // The peer's thread owns device b, its CQ included.
            if (want_imm && !spec_.peer_thread)
                for (std::size_t k = cb_->poll(wc), i = 0; i < k; ++i) on_recv(wc[i]);
            if (spec_.stop_on_error && r_.errors > 0) break;
            if (hooks.on_pass && !hooks.on_pass()) {
                r_.stopped = true;
                break;
            }
            if (moved == 0 && spec_.peer_thread) std::this_thread::yield();
        }
        r_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        stop = true;
        if (peer.joinable()) peer.join();
        r_.exact = src_ == dst_;
        return r_;
    }

    [[nodiscard]] const TransferResult& result() const noexcept { return r_; }
    [[nodiscard]] const std::vector<std::uint8_t>& source() const noexcept { return src_; }
    [[nodiscard]] const std::vector<std::uint8_t>& destination() const noexcept { return dst_; }
    [[nodiscard]] Qp* sender_qp() const noexcept { return qa_.get(); }
    [[nodiscard]] Qp* receiver_qp() const noexcept { return qb_.get(); }

private:
    static std::uint64_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

    void setup() {
        int err = 0;
        auto fail = [&](const char* step, int e) {
            r_.setup_error = e != 0 ? e : EINVAL;
            r_.setup_step = step;
        };
        pa_ = a_.alloc_pd(&err);
        pb_ = b_.alloc_pd(&err);
        if (!pa_ || !pb_) return fail("alloc_pd", err);
        ca_ = a_.create_cq(spec_.cqe, &err);
        cb_ = b_.create_cq(spec_.cqe, &err);
        if (!ca_ || !cb_) return fail("create_cq", err);
        QpInitAttr ia;
        ia.cap = spec_.cap;
        ia.send_cq = ia.recv_cq = ca_.get();
        ia.worker = spec_.worker_a;
        qa_ = pa_->create_qp(ia, &err);
        ia.send_cq = ia.recv_cq = cb_.get();
        ia.worker = spec_.worker_b;
        qb_ = pb_->create_qp(ia, &err);
        if (!qa_ || !qb_) return fail("create_qp", err);
        smr_ = pa_->reg_mr(src_.data(), src_.size(), AccessFlags::local_write, &err);
        if (!smr_) return fail("reg_mr(src)", err);
        dmr_ = pb_->reg_mr(dst_.data(), dst_.size(), AccessFlags::local_write | AccessFlags::remote_write, &err);
        if (!dmr_) return fail("reg_mr(dst)", err);
        if (const int rc = connect_qps(*qa_, a_, *qb_, b_, spec_.qp, &r_.setup_step)) {
            r_.setup_error = rc;
            return;
        }
        if (spec_.last_imm) {
            rmr_ = pb_->reg_mr(&sink_, 1, AccessFlags::local_write, &err);
            if (!rmr_) return fail("reg_mr(recv)", err);
            const Sge sge{addr(&sink_), 1, rmr_->lkey()};
            RecvWr rw;
            rw.wr_id = kImmRecvWrId;
            rw.sg_list = {&sge, 1};
            if (const int rc = qb_->post_recv(rw)) return fail("post_recv", rc);
        }
    }

    /// Tops the sender up to `depth` outstanding WRITEs. False: post_send refused one.
    bool post() {
        while (r_.posted < r_.messages && r_.posted - r_.completions < spec_.depth) {
            const std::size_t i = r_.posted;
            const Sge sge{addr(src_.data()) + i * spec_.msg_bytes, static_cast<std::uint32_t>(spec_.msg_bytes),
                          smr_->lkey()};
            SendWr w;
            w.wr_id = i;
            w.send_flags = SendFlags::signaled;
            w.sg_list = {&sge, 1};
            w.remote_addr = addr(dst_.data()) + i * spec_.msg_bytes;
            w.rkey = dmr_->rkey();
            if (spec_.last_imm && i + 1 == r_.messages) {
                w.opcode = WrOpcode::rdma_write_with_imm;
                w.imm_data = *spec_.last_imm;
            }
            if (const int rc = qa_->post_send(w)) {
                r_.post_error = rc;
                return false;
            }
            ++r_.posted;
        }
        return true;
    }

    void on_send(const Wc& wc, const TransferHooks& hooks) {
        ++r_.completions;
        if (wc.status != WcStatus::success && r_.errors++ == 0) r_.first_error = wc.status;
        if (wc.wr_id < seen_.size() && ++seen_[wc.wr_id] > 1) r_.each_once = false;
        if (hooks.on_send_completion) hooks.on_send_completion(wc, r_.completions);
    }

    void on_recv(const Wc& wc) {
        r_.received.push_back(wc);
        // WRITE_WITH_IMM: its completion means this message and every earlier one is placed.
        if (wc.status == WcStatus::success) r_.placed_at_imm = src_ == dst_;
    }

    [[nodiscard]] bool imm_done() const { return !r_.received.empty(); }

    Device& a_;
    Device& b_;
    TransferSpec spec_;
    TransferResult r_;
    std::vector<std::uint8_t> src_, dst_;
    std::vector<std::uint32_t> seen_;  ///< completions per wr_id
    std::uint8_t sink_ = 0;            ///< the immediate's receive buffer
    // Parents first: members die in reverse order, so QPs and MRs go before
    // the CQs and PDs they belong to (a Pd or Device with live children aborts).
    std::unique_ptr<Pd> pa_, pb_;
    std::unique_ptr<Cq> ca_, cb_;
    std::unique_ptr<Mr> smr_, dmr_, rmr_;
    std::unique_ptr<Qp> qa_, qb_;
};

/// Sets up and runs one transfer (see WriteTransfer).
inline TransferResult transfer(Device& a, Device& b, const TransferSpec& spec, const TransferHooks& hooks = {}) {
    WriteTransfer t(a, b, spec);
    return t.run(hooks);
}

}  // namespace omrc::test
