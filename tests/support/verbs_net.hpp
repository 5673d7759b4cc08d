// SPDX-License-Identifier: BSD-3-Clause
// Verbs-level test support: devices on one loopback fabric in virtual time,
// QP connection with attributes exchanged in process, CQ draining.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "drivers/loopback/loopback.hpp"
#include "omrc/omrc.hpp"

namespace omrc::test {

using namespace omrc;

inline std::uint64_t addr_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

/// Devices on one loopback fabric in virtual time: one clock for all of them.
class VirtualNet {
public:
    VirtualNet(std::uint32_t endpoints, std::uint32_t planes, std::uint64_t seed, std::uint64_t rate_bps = 0)
        : fabric(config(endpoints, planes, seed, rate_bps)) {}

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

/// RESET→INIT→RTR→RTS for both QPs, attributes exchanged in process.
inline void connect(Qp& a, const Device& da, Qp& b, const Device& db, const QpAttr& base = {}) {
    for (Qp* q : {&a, &b}) {
        QpAttr init = base;
        init.qp_state = QpState::init;
        init.qp_access_flags = AccessFlags::local_write | AccessFlags::remote_write;
        REQUIRE(q->modify(init, QpAttrMask::state | QpAttrMask::access_flags) == 0);
        CHECK(q->state() == QpState::init);
    }
    struct Side { Qp* self; Qp* peer; const Device* peer_dev; std::uint32_t psn_in, psn_out; };
    for (const Side& s : {Side{&a, &b, &db, 2000, 1000}, Side{&b, &a, &da, 1000, 2000}}) {
        QpAttr rtr = base;
        rtr.qp_state = QpState::rtr;
        rtr.dest_qp_num = s.peer->qp_num();
        rtr.dest_conn_id = s.peer->conn_id();
        rtr.rq_psn = s.psn_in;
        rtr.peer = s.peer_dev->address();
        REQUIRE(s.self->modify(rtr, QpAttrMask::state | QpAttrMask::path | QpAttrMask::dest_qpn |
                                        QpAttrMask::rq_psn | QpAttrMask::mtu | QpAttrMask::mpr) == 0);
        QpAttr rts = base;
        rts.qp_state = QpState::rts;
        rts.sq_psn = s.psn_out;
        REQUIRE(s.self->modify(rts, QpAttrMask::state | QpAttrMask::sq_psn | QpAttrMask::timeout |
                                        QpAttrMask::retry_cnt | QpAttrMask::cc) == 0);
        CHECK(s.self->state() == QpState::rts);
    }
}

inline std::vector<Wc> drain(Cq& cq) {
    std::vector<Wc> out;
    Wc wc[16];
    for (std::size_t n; (n = cq.poll(wc)) != 0;) out.insert(out.end(), wc, wc + n);
    return out;
}

}  // namespace omrc::test
