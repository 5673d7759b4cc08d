// SPDX-License-Identifier: BSD-3-Clause
// Verbs-level test support: devices on one loopback fabric in virtual time,
// QP connection with attributes exchanged in process, the checks of a
// transfer (support/transfer.hpp), CQ draining.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "drivers/loopback/loopback.hpp"
#include "omrc/omrc.hpp"
#include "support/transfer.hpp"

namespace omrc::test {

using namespace omrc;

inline std::uint64_t addr_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

/// Devices on one loopback fabric in virtual time: one clock for all of them.
class VirtualNet {
public:
    VirtualNet(std::uint32_t endpoints, std::uint32_t planes, std::uint64_t seed, std::uint64_t rate_bps = 0)
        : fabric(config(endpoints, planes, seed, rate_bps)) {}
    /// Any virtual-clock fabric (queues per endpoint for workers, steering, ...).
    explicit VirtualNet(const loopback::FabricConfig& c) : fabric(c) {}

    std::unique_ptr<Device> open(std::uint32_t endpoint, std::uint64_t seed, DeviceOptions o = {}) {
        o.driver_context = &fabric;
        o.args["endpoint"] = std::to_string(endpoint);
        o.seed = seed;
        o.clock = [this] { return now_ns; };
        int err = -1;
        auto dev = Device::open("loopback", o, &err);
        REQUIRE(err == 0);
        REQUIRE(dev != nullptr);
        return dev;
    }

    /// Progresses `devs` and jumps virtual time from event to event until
    /// done() or `budget_ns` of virtual time have passed.
    bool run(std::initializer_list<Device*> devs, const std::function<bool()>& done, std::uint64_t budget_ns) {
        const std::uint64_t deadline = now_ns + budget_ns;
        for (std::size_t pass = 0; pass < 20'000'000; ++pass) {
            for (Device* d : devs) d->progress();
            if (done()) return true;
            std::uint64_t next = fabric.next_event_ns();
            for (Device* d : devs) next = std::min(next, d->next_wakeup_ns());
            if (next == UINT64_MAX) return done();
            now_ns = std::max(now_ns, next);
            if (now_ns > deadline) return done();
        }
        return done();
    }

    std::uint64_t now_ns = 1'000'000;
    loopback::Fabric fabric;

private:
    static loopback::FabricConfig config(std::uint32_t endpoints, std::uint32_t planes, std::uint64_t seed,
                                         std::uint64_t rate_bps) {
        loopback::FabricConfig c;
        c.queue.rate_bps = rate_bps;
        c.endpoints = endpoints;
        c.planes = planes;
        c.seed = seed;
        c.mode = loopback::ClockMode::virtual_clock;
        return c;
    }
};

inline QpInitAttr init_attr(Cq& scq, Cq& rcq, QpCap cap = {}) {
    QpInitAttr a;
    a.send_cq = &scq;
    a.recv_cq = &rcq;
    a.cap = cap;
    return a;
}

/// RESET→INIT→RTR→RTS for both QPs, attributes exchanged in process
/// (connect_qps, which also checks each QP's state after each step).
inline void connect(Qp& a, const Device& da, Qp& b, const Device& db, const QpAttr& base = {}) {
    std::string step;
    const int rc = connect_qps(a, da, b, db, base, &step);
    INFO(step);
    REQUIRE(rc == 0);
}

/// The WRITE_WITH_IMM transfer of the driver tests: `bytes` as 64 KiB
/// WRITEs over 64 EVs, the last carrying `imm`, with a retry budget for a
/// starved CI core (correctness is under test, not timing).
inline TransferSpec imm_transfer_spec(std::size_t bytes, std::uint64_t seed, std::uint32_t imm) {
    TransferSpec spec;
    spec.bytes = bytes;
    spec.msg_bytes = 64u << 10;
    spec.seed = seed;
    spec.last_imm = imm;
    spec.qp.timeout_ns = 500'000'000;
    spec.qp.evs = 64;
    return spec;
}

/// What every transfer must show: set up, every WRITE completed exactly
/// once and successfully, the destination byte-exact.
inline void check_transfer(const TransferResult& r) {
    INFO("setup: " << r.setup_step << " (" << r.setup_error << ")");
    REQUIRE(r.setup_error == 0);
    CHECK(r.post_error == 0);
    CHECK_FALSE(r.timed_out);
    CHECK(r.completions == r.messages);
    CAPTURE(to_string(r.first_error));
    CHECK(r.errors == 0);
    CHECK(r.each_once);
    CHECK(r.exact);  // not src == dst: Catch would print the buffers
}

/// A transfer that ended with a WRITE_WITH_IMM (TransferSpec::last_imm):
/// one receive completion with the immediate, and by then every byte placed
/// (its completion covers the message and every earlier one on the QP).
inline void check_immediate(const TransferResult& r, std::uint32_t imm, std::size_t msg_bytes) {
    REQUIRE(r.received.size() == 1);
    const Wc& wc = r.received[0];
    CHECK(wc.status == WcStatus::success);
    CHECK(wc.opcode == WcOpcode::recv_rdma_with_imm);
    CHECK(wc.imm_data == imm);
    CHECK(wc.wr_id == kImmRecvWrId);
    CHECK(wc.byte_len == msg_bytes);
    CHECK(r.placed_at_imm);
}

inline std::vector<Wc> drain(Cq& cq) {
    std::vector<Wc> out;
    Wc wc[16];
    for (std::size_t n; (n = cq.poll(wc)) != 0;) out.insert(out.end(), wc, wc + n);
    return out;
}

}  // namespace omrc::test
