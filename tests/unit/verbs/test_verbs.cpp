// SPDX-License-Identifier: BSD-3-Clause
// The public verbs API (include/omrc/verbs.hpp) over the loopback driver:
// opening devices, registration, QP state changes, post-time validation, CQ
// routing, and transfers end to end in virtual time.
#include "support/verbs_net.hpp"
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drivers/loopback/loopback.hpp"
#include "omrc/omrc.hpp"

using namespace omrc;
using namespace omrc::test;

namespace {

/// A device with its own private loopback fabric, driven in virtual time.
struct SoloDevice {
    std::uint64_t now_ns = 1'000'000;
    std::unique_ptr<Device> dev;

    explicit SoloDevice(std::uint32_t planes = 4) {
        DeviceOptions o;
        o.planes = planes;
        o.seed = 99;
        o.clock = [this] { return now_ns; };
        int err = -1;
        dev = Device::open("loopback", o, &err);
        REQUIRE(err == 0);
    }
    bool run(const std::function<bool()>& done, std::uint64_t budget_ns = 100'000'000) {
        const std::uint64_t deadline = now_ns + budget_ns;
        for (std::size_t pass = 0; pass < 1'000'000; ++pass) {
            dev->progress();
            if (done()) return true;
            const std::uint64_t next = dev->next_wakeup_ns();
            if (next == UINT64_MAX) return done();
            now_ns = std::max(now_ns, next);
            if (now_ns > deadline) return done();
        }
        return done();
    }
};

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
    std::vector<std::uint8_t> v(n);
    std::mt19937_64 rng(seed);
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
    return v;
}

/// Two QPs connected to each other on one device (a private fabric).
struct SelfPair {
    SoloDevice solo;
    std::unique_ptr<Pd> pd;
    std::unique_ptr<Cq> scq, rcq;
    std::unique_ptr<Qp> a, b;
    std::vector<std::uint8_t> src = std::vector<std::uint8_t>(4096), dst = std::vector<std::uint8_t>(4096);
    std::unique_ptr<Mr> src_mr, dst_mr;

    explicit SelfPair(QpCap cap = {}) {
        pd = solo.dev->alloc_pd();
        scq = solo.dev->create_cq(256);
        rcq = solo.dev->create_cq(256);
        a = pd->create_qp(init_attr(*scq, *rcq, cap));
        b = pd->create_qp(init_attr(*scq, *rcq, cap));
        REQUIRE(a != nullptr);
        REQUIRE(b != nullptr);
        connect(*a, *solo.dev, *b, *solo.dev);
        src_mr = pd->reg_mr(src.data(), src.size(), AccessFlags::local_write);
        dst_mr = pd->reg_mr(dst.data(), dst.size(), AccessFlags::local_write | AccessFlags::remote_write);
        REQUIRE(src_mr != nullptr);
        REQUIRE(dst_mr != nullptr);
    }
    SendWr write(std::uint64_t wr_id, const Sge& sge) const {
        SendWr w;
        w.wr_id = wr_id;
        w.send_flags = SendFlags::signaled;
        w.sg_list = {&sge, 1};
        w.remote_addr = addr_of(dst.data());
        w.rkey = dst_mr->rkey();
        return w;
    }
    Sge sge(std::uint64_t offset, std::uint32_t length) const {
        return {addr_of(src.data()) + offset, length, src_mr->lkey()};
    }
};

}  // namespace

// ---------------------------------------------------------------------------
// Device

TEST_CASE("open__unknown_driver", "[unit][verbs]") {
    int err = 0;
    CHECK(Device::open("no-such-driver", {}, &err) == nullptr);
    CHECK(err == ENODEV);
    const auto names = Device::drivers();
    CHECK(std::find(names.begin(), names.end(), "loopback") != names.end());
}

TEST_CASE("open__bad_options", "[unit][verbs]") {
    int err = 0;
    DeviceOptions o;
    o.args["endpoint"] = "x";
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o.args.clear();
    o.args["colour"] = "blue";
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o.args.clear();
    o.driver_context = 42;  // not a loopback::Fabric*
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o = {};
    o.planes = kMaxPlanes + 1;
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o = {};
    o.planes = 4;
    o.args["planes"] = "2";  // a 2-plane private fabric cannot give 4 planes
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o = {};
    o.args["endpoint"] = "1";  // the private fabric has one endpoint
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o = {};
    o.tx_burst_frames = 0;
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
}

TEST_CASE("open__shared_fabric", "[unit][verbs]") {
    VirtualNet net(3, 8, 1);
    auto dev = net.open(1, 5);
    CHECK(dev->driver_name() == "loopback");
    CHECK(dev->planes() == 8);
    CHECK(dev->now_ns() == net.now_ns);
    const DeviceAddress a = dev->address();
    CHECK(a.planes == 8);
    for (std::uint32_t p = 0; p < 8; ++p) CHECK(a.macs[p] == loopback::Fabric::mac(1, p));
    const Ipv6Addr expected{0xfd, 0x6d, 0x72, 0x63, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1};
    CHECK(a.addr == expected);

    int err = 0;
    DeviceOptions o;
    o.driver_context = &net.fabric;
    o.args["endpoint"] = "1";
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EBUSY);
    o.args["endpoint"] = "3";
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o.args["endpoint"] = "2";
    o.args["link_delay_ns"] = "5";  // describes a private fabric
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o.args.erase("link_delay_ns");
    o.planes = 4;  // fewer planes than the fabric: allowed
    o.local_addr = Ipv6Addr{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9};
    auto dev2 = Device::open("loopback", o, &err);
    REQUIRE(dev2 != nullptr);
    CHECK(dev2->planes() == 4);
    CHECK(dev2->address().addr == o.local_addr);
}

TEST_CASE("create_cq__bounds", "[unit][verbs]") {
    SoloDevice s;
    int err = 0;
    CHECK(s.dev->create_cq(0, &err) == nullptr);
    CHECK(err == EINVAL);
    CHECK(s.dev->create_cq((1 << 20) + 1, &err) == nullptr);
    CHECK(err == EINVAL);
    auto cq = s.dev->create_cq(1, &err);
    REQUIRE(cq != nullptr);
    CHECK(err == 0);
    CHECK(cq->cqe() == 1);
    CHECK(cq->size() == 0);
}

// ---------------------------------------------------------------------------
// Pd / Mr

TEST_CASE("reg_mr__rules", "[unit][verbs]") {
    SoloDevice s;
    auto pd = s.dev->alloc_pd();
    std::vector<std::uint8_t> buf(128);
    int err = 0;
    CHECK(pd->reg_mr(nullptr, 16, AccessFlags::local_write, &err) == nullptr);
    CHECK(err == EINVAL);
    CHECK(pd->reg_mr(buf.data(), 0, AccessFlags::local_write, &err) == nullptr);
    CHECK(err == EINVAL);
    CHECK(pd->reg_mr(buf.data(), buf.size(), AccessFlags::remote_write, &err) == nullptr);
    CHECK(err == EINVAL);
    CHECK(pd->reg_mr(buf.data(), buf.size(), AccessFlags::remote_atomic, &err) == nullptr);
    CHECK(err == EINVAL);
    CHECK(pd->reg_mr(buf.data(), buf.size(), 1u << 7, &err) == nullptr);
    CHECK(err == EINVAL);
    auto a = pd->reg_mr(buf.data(), buf.size(), AccessFlags::local_write | AccessFlags::remote_write, &err);
    REQUIRE(a != nullptr);
    CHECK(err == 0);
    auto b = pd->reg_mr(buf.data(), buf.size(), AccessFlags::remote_read, &err);
    REQUIRE(b != nullptr);
    CHECK(a->rkey() != b->rkey());
    CHECK(a->lkey() != b->lkey());
    CHECK(a->addr() == buf.data());
    CHECK(a->length() == buf.size());
    CHECK(a->registered());
    CHECK(a->deregister() == 0);
    CHECK_FALSE(a->registered());
    CHECK(a->deregister() == EINVAL);
}

// ---------------------------------------------------------------------------
// Qp

TEST_CASE("create_qp__errors", "[unit][verbs]") {
    SoloDevice s, other;
    auto pd = s.dev->alloc_pd();
    auto cq = s.dev->create_cq(16);
    auto foreign = other.dev->create_cq(16);
    int err = 0;
    QpInitAttr a;
    CHECK(pd->create_qp(a, &err) == nullptr);
    CHECK(err == EINVAL);
    CHECK(pd->create_qp(init_attr(*cq, *foreign), &err) == nullptr);
    CHECK(err == EINVAL);
    QpCap cap;
    cap.max_send_sge = kMaxSge + 1;
    CHECK(pd->create_qp(init_attr(*cq, *cq, cap), &err) == nullptr);
    CHECK(err == EINVAL);
    cap = {};
    cap.max_send_wr = 0;
    CHECK(pd->create_qp(init_attr(*cq, *cq, cap), &err) == nullptr);
    CHECK(err == EINVAL);
    auto qp = pd->create_qp(init_attr(*cq, *cq), &err);
    REQUIRE(qp != nullptr);
    CHECK(err == 0);
    CHECK(qp->state() == QpState::reset);
    CHECK(qp->qp_num() != 0);
    CHECK(qp->conn_id() != 0);
}

TEST_CASE("modify__transitions", "[unit][verbs]") {
    SoloDevice s;
    auto pd = s.dev->alloc_pd();
    auto cq = s.dev->create_cq(16);
    auto qp = pd->create_qp(init_attr(*cq, *cq));
    QpAttr a;
    a.qp_state = QpState::rts;
    CHECK(qp->modify(a, QpAttrMask::state | QpAttrMask::sq_psn) == EINVAL);  // RESET→RTS
    a.qp_state = QpState::init;
    CHECK(qp->modify(a, QpAttrMask::state) == EINVAL);                      // access flags missing
    CHECK(qp->modify(a, QpAttrMask::state | (1u << 20)) == EINVAL);         // unknown mask bit
    a.qp_access_flags = 1u << 9;
    CHECK(qp->modify(a, QpAttrMask::state | QpAttrMask::access_flags) == EINVAL);
    a.qp_access_flags = AccessFlags::remote_write | AccessFlags::local_write;
    REQUIRE(qp->modify(a, QpAttrMask::state | QpAttrMask::access_flags) == 0);
    CHECK(qp->state() == QpState::init);

    QpAttr rtr;
    rtr.qp_state = QpState::rtr;
    rtr.dest_qp_num = qp->qp_num();
    rtr.dest_conn_id = qp->conn_id();
    rtr.peer = s.dev->address();
    const std::uint32_t rtr_mask =
        QpAttrMask::state | QpAttrMask::path | QpAttrMask::dest_qpn | QpAttrMask::rq_psn | QpAttrMask::mtu;
    CHECK(qp->modify(rtr, rtr_mask & ~QpAttrMask::path) == EINVAL);
    rtr.peer.planes = s.dev->planes() + 1;
    CHECK(qp->modify(rtr, rtr_mask) == EINVAL);  // peer address of another plane count
    rtr.peer = s.dev->address();
    rtr.mtu_bytes = 100;
    CHECK(qp->modify(rtr, rtr_mask) == EINVAL);
    rtr.mtu_bytes = 1024;
    rtr.mpr = 3;
    CHECK(qp->modify(rtr, rtr_mask | QpAttrMask::mpr) == EINVAL);
    rtr.mpr = 4;
    REQUIRE(qp->modify(rtr, rtr_mask | QpAttrMask::mpr) == 0);
    CHECK(qp->state() == QpState::rtr);

    QpAttr timeout_only;
    timeout_only.timeout_ns = 1'000'000;
    CHECK(qp->modify(timeout_only, QpAttrMask::timeout) == 0);  // no state bit: stays in RTR
    CHECK(qp->state() == QpState::rtr);

    QpAttr err_state;
    err_state.qp_state = QpState::err;
    CHECK(qp->modify(err_state, QpAttrMask::state) == 0);
    CHECK(qp->state() == QpState::err);
    QpAttr reset;
    reset.qp_state = QpState::reset;
    CHECK(qp->modify(reset, QpAttrMask::state) == 0);
    CHECK(qp->state() == QpState::reset);
}

TEST_CASE("post_send__validation", "[unit][verbs]") {
    SelfPair p;
    std::size_t bad = 99;

    SECTION("bad lkey") {
        Sge sge = p.sge(0, 16);
        sge.lkey ^= 0x5A5A5A5A;
        CHECK(p.a->post_send(std::span<const SendWr>(std::array{p.write(1, sge)}), &bad) == EINVAL);
        CHECK(bad == 0);
        sge.lkey = p.dst_mr->rkey();  // an rkey is not an lkey
        CHECK(p.a->post_send(p.write(1, sge)) == EINVAL);
    }
    SECTION("SGE outside its MR") {
        const Sge past_end = p.sge(4095, 2);  // end − 1 + 2
        CHECK(p.a->post_send(p.write(1, past_end)) == EINVAL);
        const Sge before = {addr_of(p.src.data()) - 1, 1, p.src_mr->lkey()};  // start − 1
        CHECK(p.a->post_send(p.write(1, before)) == EINVAL);
        const Sge huge = p.sge(0, UINT32_MAX);
        CHECK(p.a->post_send(p.write(1, huge)) == EINVAL);
    }
    SECTION("MR of another PD") {
        auto pd2 = p.solo.dev->alloc_pd();
        auto mr2 = pd2->reg_mr(p.src.data(), p.src.size(), AccessFlags::local_write);
        const Sge sge = {addr_of(p.src.data()), 16, mr2->lkey()};
        CHECK(p.a->post_send(p.write(1, sge)) == EINVAL);
        mr2.reset();
    }
    SECTION("deregistered MR") {
        const Sge sge = p.sge(0, 16);
        REQUIRE(p.src_mr->deregister() == 0);
        CHECK(p.a->post_send(p.write(1, sge)) == EINVAL);
    }
    SECTION("too many SGEs") {
        std::vector<Sge> sges;
        for (int i = 0; i < 5; ++i) sges.push_back(p.sge(static_cast<std::uint64_t>(i) * 16, 16));
        SendWr w = p.write(1, sges[0]);
        w.sg_list = sges;  // cap.max_send_sge = 4
        CHECK(p.a->post_send(w) == EINVAL);
        w.sg_list = std::span<const Sge>(sges).first(4);
        CHECK(p.a->post_send(w) == 0);
    }
    SECTION("inline longer than max_inline_data") {
        std::vector<std::uint8_t> bytes(257, 7);
        Sge sge = {addr_of(bytes.data()), 257, 0};  // inline: lkey ignored
        SendWr w = p.write(1, sge);
        w.send_flags |= SendFlags::inline_;
        CHECK(p.a->post_send(w) == EINVAL);
        sge.length = 256;
        CHECK(p.a->post_send(w) == 0);
        std::fill(bytes.begin(), bytes.end(), 0);  // reusable at once
        REQUIRE(p.solo.run([&] { return p.scq->size() == 1; }));
        const auto wcs = drain(*p.scq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].status == WcStatus::success);
        CHECK(std::all_of(p.dst.begin(), p.dst.begin() + 256, [](std::uint8_t b) { return b == 7; }));
        CHECK(p.dst[256] == 0);
    }
    SECTION("bad opcode or flags") {
        const Sge sge = p.sge(0, 16);
        SendWr w = p.write(1, sge);
        w.opcode = static_cast<WrOpcode>(9);
        CHECK(p.a->post_send(w) == EINVAL);
        w.opcode = WrOpcode::rdma_write;
        w.send_flags |= 1u << 4;  // IBV_SEND_IP_CSUM: not supported
        CHECK(p.a->post_send(w) == EINVAL);
    }
    SECTION("a bad WR in a batch: the ones before it are posted") {
        const Sge good = p.sge(0, 64), wrong = p.sge(4000, 200);
        const std::array wrs{p.write(10, good), p.write(11, good), p.write(12, wrong), p.write(13, good)};
        CHECK(p.a->post_send(wrs, &bad) == EINVAL);
        CHECK(bad == 2);
        REQUIRE(p.solo.run([&] { return p.scq->size() == 2; }));
        const auto wcs = drain(*p.scq);
        REQUIRE(wcs.size() == 2);
        CHECK(wcs[0].wr_id == 10);
        CHECK(wcs[1].wr_id == 11);
        CHECK(wcs[0].qp_num == p.a->qp_num());
        CHECK(wcs[0].opcode == WcOpcode::rdma_write);
        CHECK(wcs[1].status == WcStatus::success);
    }
    SECTION("QP not in RTS") {
        auto qp = p.pd->create_qp(init_attr(*p.scq, *p.rcq));
        CHECK(qp->post_send(std::span<const SendWr>(std::array{p.write(1, p.sge(0, 8))}), &bad) == EINVAL);
        CHECK(bad == 0);
    }
}

TEST_CASE("post_send__send_queue_full", "[unit][verbs]") {
    QpCap cap;
    cap.max_send_wr = 4;
    SelfPair p(cap);
    const Sge sge = p.sge(0, 8);
    std::vector<SendWr> wrs;
    for (std::uint64_t i = 0; i < 6; ++i) wrs.push_back(p.write(i, sge));
    std::size_t bad = 0;
    CHECK(p.a->post_send(wrs, &bad) == ENOMEM);
    CHECK(bad == 4);
    REQUIRE(p.solo.run([&] { return p.scq->size() == 4; }));
    CHECK(p.a->post_send(std::span<const SendWr>(wrs).subspan(4), &bad) == 0);
}

TEST_CASE("post_send__unsignalled_and_sq_sig_all", "[unit][verbs]") {
    SelfPair p;
    const Sge sge = p.sge(0, 32);
    std::vector<SendWr> wrs;
    for (std::uint64_t i = 0; i < 8; ++i) {
        wrs.push_back(p.write(i, sge));
        if (i != 7) wrs.back().send_flags = 0;
    }
    REQUIRE(p.a->post_send(wrs) == 0);
    REQUIRE(p.solo.run([&] { return p.scq->size() == 1; }));
    p.solo.run([] { return false; }, 1'000'000);  // nothing else may arrive
    auto wcs = drain(*p.scq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].wr_id == 7);

    QpInitAttr all = init_attr(*p.scq, *p.rcq);
    all.sq_sig_all = true;
    auto c = p.pd->create_qp(all), d = p.pd->create_qp(all);
    connect(*c, *p.solo.dev, *d, *p.solo.dev);
    for (auto& w : wrs) w.send_flags = 0;
    REQUIRE(c->post_send(wrs) == 0);
    REQUIRE(p.solo.run([&] { return p.scq->size() == 8; }));
}

TEST_CASE("post_recv__validation", "[unit][verbs]") {
    QpCap cap;
    cap.max_recv_wr = 2;
    SelfPair p(cap);
    std::size_t bad = 99;
    const Sge ok = {addr_of(p.dst.data()), 64, p.dst_mr->lkey()};
    auto ro = p.pd->reg_mr(p.dst.data(), 64, AccessFlags::remote_read);
    const Sge read_only = {addr_of(p.dst.data()), 64, ro->lkey()};
    const Sge outside = {addr_of(p.dst.data()) + 4090, 64, p.dst_mr->lkey()};
    const Sge two[2] = {ok, ok};
    CHECK(p.b->post_recv(RecvWr{1, {&read_only, 1}}) == EINVAL);  // needs LOCAL_WRITE
    CHECK(p.b->post_recv(RecvWr{1, {&outside, 1}}) == EINVAL);
    CHECK(p.b->post_recv(RecvWr{1, two}) == EINVAL);  // max_recv_sge = 1
    const std::array wrs{RecvWr{1, {&ok, 1}}, RecvWr{2, {}}, RecvWr{3, {&ok, 1}}};
    CHECK(p.b->post_recv(wrs, &bad) == ENOMEM);  // max_recv_wr = 2
    CHECK(bad == 2);
    auto fresh = p.pd->create_qp(init_attr(*p.scq, *p.rcq));
    CHECK(fresh->post_recv(wrs, &bad) == EINVAL);  // RESET
    CHECK(bad == 0);
}

TEST_CASE("modify__err_flushes_and_cq_overrun", "[unit][verbs]") {
    SelfPair p;
    auto small = p.solo.dev->create_cq(1);
    auto qp = p.pd->create_qp(init_attr(*p.scq, *small));
    auto peer = p.pd->create_qp(init_attr(*p.scq, *p.rcq));
    connect(*qp, *p.solo.dev, *peer, *p.solo.dev);
    for (std::uint64_t i = 0; i < 3; ++i) REQUIRE(qp->post_recv(RecvWr{100 + i, {}}) == 0);
    QpAttr err;
    err.qp_state = QpState::err;
    REQUIRE(qp->modify(err, QpAttrMask::state) == 0);
    const Sge sge = p.sge(0, 8);
    SendWr w = p.write(7, sge);
    w.send_flags = 0;  // flushed WRs complete even when unsignalled
    REQUIRE(qp->post_send(w) == 0);
    p.solo.dev->progress();
    CHECK(small->overruns() == 2);
    const auto recvs = drain(*small);
    REQUIRE(recvs.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(recvs[i].wr_id == 100 + i);
        CHECK(recvs[i].status == WcStatus::wr_flush_err);
        CHECK(recvs[i].opcode == WcOpcode::recv);  // as providers flush receives
    }
    const auto sends = drain(*p.scq);
    REQUIRE(sends.size() == 1);
    CHECK(sends[0].wr_id == 7);
    CHECK(sends[0].status == WcStatus::wr_flush_err);
    CHECK(std::string(to_string(sends[0].status)) == "wr_flush_err");
}

TEST_CASE("deregister__no_byte_lands_afterwards", "[unit][verbs]") {
    SelfPair p;
    std::fill(p.src.begin(), p.src.end(), 0xEE);
    const std::uint32_t rkey = p.dst_mr->rkey();
    REQUIRE(p.dst_mr->deregister() == 0);
    const Sge sge = p.sge(0, 1024);
    SendWr w = p.write(5, sge);
    w.rkey = rkey;
    REQUIRE(p.a->post_send(w) == 0);
    REQUIRE(p.solo.run([&] { return p.scq->size() == 1; }));
    const auto wcs = drain(*p.scq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].status == WcStatus::rem_access_err);
    CHECK(std::all_of(p.dst.begin(), p.dst.end(), [](std::uint8_t b) { return b == 0; }));
    const auto stats = nlohmann::json::parse(p.solo.dev->stats_json());
    CHECK(stats["device"]["mr"]["rejected"]["bad_rkey"].get<std::uint64_t>() >= 1);
}

TEST_CASE("self_loop__real_clock", "[unit][verbs]") {
    // A device on its own private fabric with the default (real) clock: what
    // an installed application gets with no fabric handle.
    auto dev = Device::open("loopback");
    REQUIRE(dev != nullptr);
    auto pd = dev->alloc_pd();
    auto cq = dev->create_cq(64);
    auto a = pd->create_qp(init_attr(*cq, *cq)), b = pd->create_qp(init_attr(*cq, *cq));
    connect(*a, *dev, *b, *dev);
    const auto src = random_bytes(256 * 1024, 3);
    std::vector<std::uint8_t> dst(src.size());
    auto smr = pd->reg_mr(const_cast<std::uint8_t*>(src.data()), src.size(), 0);
    auto dmr = pd->reg_mr(dst.data(), dst.size(), AccessFlags::local_write | AccessFlags::remote_write);
    const Sge sge{addr_of(src.data()), static_cast<std::uint32_t>(src.size()), smr->lkey()};
    SendWr w;
    w.wr_id = 1;
    w.send_flags = SendFlags::signaled;
    w.sg_list = {&sge, 1};
    w.remote_addr = addr_of(dst.data());
    w.rkey = dmr->rkey();
    REQUIRE(a->post_send(w) == 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (cq->size() == 0 && std::chrono::steady_clock::now() < deadline) dev->progress();
    const auto wcs = drain(*cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].status == WcStatus::success);
    CHECK(dst == src);
}

// ---------------------------------------------------------------------------
// End to end: two devices, one 8-plane loopback fabric, virtual time.

TEST_CASE("e2e__writes_over_8_planes_and_write_with_imm", "[unit][verbs]") {
    const std::uint64_t seed = GENERATE(7u, 2024u);
    CAPTURE(seed);
    VirtualNet net(2, 8, seed, 100'000'000'000);  // 100 Gb/s per plane
    auto d0 = net.open(0, seed * 2 + 1);
    auto d1 = net.open(1, seed * 2 + 2);
    auto pd0 = d0->alloc_pd(), pd1 = d1->alloc_pd();
    auto scq0 = d0->create_cq(256), rcq0 = d0->create_cq(16);
    auto scq1 = d1->create_cq(16), rcq1 = d1->create_cq(16);
    auto q0 = pd0->create_qp(init_attr(*scq0, *rcq0));
    auto q1 = pd1->create_qp(init_attr(*scq1, *rcq1));
    REQUIRE(q0 != nullptr);
    REQUIRE(q1 != nullptr);
    connect(*q0, *d0, *q1, *d1);

    constexpr std::size_t kTotal = 4u << 20, kMsg = 64u << 10;
    const auto src = random_bytes(kTotal, seed);
    std::vector<std::uint8_t> dst(kTotal + 2 * 4096, 0x5C);  // guard pages around the target
    auto smr = pd0->reg_mr(const_cast<std::uint8_t*>(src.data()), src.size(), AccessFlags::local_write);
    auto dmr = pd1->reg_mr(dst.data(), dst.size(), AccessFlags::local_write | AccessFlags::remote_write);
    REQUIRE(smr != nullptr);
    REQUIRE(dmr != nullptr);
    const std::uint64_t target = addr_of(dst.data()) + 4096;

    // 64 WRITEs of 64 KiB, two SGEs each; every fourth one signalled.
    std::vector<std::array<Sge, 2>> sges(kTotal / kMsg);
    std::vector<SendWr> wrs;
    std::size_t signalled = 0;
    for (std::size_t i = 0; i < sges.size(); ++i) {
        const std::uint64_t off = i * kMsg;
        sges[i][0] = {addr_of(src.data()) + off, 1000, smr->lkey()};
        sges[i][1] = {addr_of(src.data()) + off + 1000, kMsg - 1000, smr->lkey()};
        SendWr w;
        w.wr_id = i;
        w.sg_list = sges[i];
        w.remote_addr = target + off;
        w.rkey = dmr->rkey();
        if (i % 4 == 3) {
            w.send_flags = SendFlags::signaled;
            ++signalled;
        }
        wrs.push_back(w);
    }
    const std::uint64_t start_ns = net.now_ns;
    REQUIRE(q0->post_send(wrs) == 0);
    std::vector<Wc> sent;
    const bool done = net.run({d0.get(), d1.get()}, [&] {
        for (const Wc& wc : drain(*scq0)) sent.push_back(wc);
        return sent.size() >= signalled;
    }, 1'000'000'000);
    INFO(d0->stats_json());
    REQUIRE(done);
    // Line rate over 8 planes of 100 Gb/s is 42 µs for 4 MiB of payload.
    CHECK(net.now_ns - start_ns < 60'000);
    CHECK(sent.size() == signalled);
    for (std::size_t k = 0; k < sent.size(); ++k) {
        CHECK(sent[k].wr_id == 4 * k + 3);
        CHECK(sent[k].status == WcStatus::success);
        CHECK(sent[k].opcode == WcOpcode::rdma_write);
        CHECK(sent[k].qp_num == q0->qp_num());
    }
    CHECK(std::equal(src.begin(), src.end(), dst.begin() + 4096));
    CHECK(std::all_of(dst.begin(), dst.begin() + 4096, [](std::uint8_t b) { return b == 0x5C; }));
    CHECK(std::all_of(dst.end() - 4096, dst.end(), [](std::uint8_t b) { return b == 0x5C; }));

    // Every plane carried data.
    const auto stats = nlohmann::json::parse(d0->stats_json());
    REQUIRE(stats["qps"].size() == 1);
    std::array<std::uint64_t, 8> per_plane{};
    for (const auto& ev : stats["qps"][0]["paths"]["evs"])
        per_plane.at(ev["plane"].get<std::size_t>()) += ev["sent"].get<std::uint64_t>();
    for (std::size_t p = 0; p < 8; ++p) {
        CAPTURE(p);
        CHECK(per_plane[p] > 0);
    }
    // Per-plane counters: the QP's planes add up to its totals, the device's
    // summary to its QPs', and every plane has its EVs and its T1 groups.
    const auto& qp = stats["qps"][0];
    REQUIRE(qp["planes"].size() == 8);
    REQUIRE(stats["planes"].size() == 8);
    std::uint64_t plane_sent = 0, plane_resent = 0, plane_bytes = 0, plane_acked = 0, sampled_planes = 0;
    for (std::size_t p = 0; p < 8; ++p) {
        const auto& pl = qp["planes"][p];
        const auto& dev = stats["planes"][p];
        CAPTURE(p, pl.dump(), dev.dump());
        CHECK(pl["plane"] == p);
        CHECK(pl["data_sent"].get<std::uint64_t>() > 0);
        CHECK(pl["evs_active"].get<std::uint64_t>() + pl["evs_skipping"].get<std::uint64_t>() > 0);
        sampled_planes += pl["rtt_min_ns"].get<std::uint64_t>() > 0 ? 1 : 0;
        CHECK(dev["data_sent"] == pl["data_sent"]);  // one QP sends on this device
        CHECK(dev["link_up"] == true);
        plane_sent += pl["data_sent"].get<std::uint64_t>();
        plane_resent += pl["data_resent"].get<std::uint64_t>();
        plane_bytes += pl["data_bytes_sent"].get<std::uint64_t>();
        plane_acked += pl["acked"].get<std::uint64_t>();
    }
    CHECK(sampled_planes > 0);  // RTT samples come from the packets that triggered a SACK: not every plane has one
    CHECK(plane_sent == qp["stats"]["data_pkts_sent"].get<std::uint64_t>());
    CHECK(plane_resent == qp["stats"]["data_pkts_resent"].get<std::uint64_t>());
    CHECK(plane_bytes == qp["stats"]["data_bytes_sent"].get<std::uint64_t>());
    CHECK(plane_acked == qp["stats"]["pkts_sacked"].get<std::uint64_t>());
    std::uint64_t group_evs = 0;
    for (const auto& g : qp["paths"]["groups"]) group_evs += g["evs"].get<std::uint64_t>();
    CHECK(group_evs == qp["paths"]["evs"].size());
    CHECK(stats["device"]["path_events"]["retired"] == 0);  // a clean network retires nothing
    CHECK(stats["engine"]["rx_frames"].get<std::uint64_t>() > 0);
    CHECK(stats["driver"]["tx_frames"].get<std::uint64_t>() >= kTotal / 4096);
    CHECK(stats["device"]["progress"]["tx_frames"].get<std::uint64_t>() ==
          stats["driver"]["tx_frames"].get<std::uint64_t>());

    // WRITE_WITH_IMM consumes a posted receive: right imm and byte_len.
    const Sge rsge{target, 64, dmr->lkey()};
    REQUIRE(q1->post_recv(RecvWr{777, {&rsge, 1}}) == 0);
    constexpr std::uint32_t kImmLen = 100'000;  // not a multiple of the MTU
    const Sge isge{addr_of(src.data()), kImmLen, smr->lkey()};
    SendWr imm;
    imm.wr_id = 1000;
    imm.opcode = WrOpcode::rdma_write_with_imm;
    imm.send_flags = SendFlags::signaled;
    imm.sg_list = {&isge, 1};
    imm.remote_addr = target + 123;
    imm.rkey = dmr->rkey();
    imm.imm_data = 0xC0DE1234;
    REQUIRE(q0->post_send(imm) == 0);
    std::vector<Wc> recv, sent2;
    REQUIRE(net.run({d0.get(), d1.get()}, [&] {
        for (const Wc& wc : drain(*rcq1)) recv.push_back(wc);
        for (const Wc& wc : drain(*scq0)) sent2.push_back(wc);
        return !recv.empty() && !sent2.empty();
    }, 1'000'000'000));
    REQUIRE(recv.size() == 1);
    CHECK(recv[0].wr_id == 777);
    CHECK(recv[0].status == WcStatus::success);
    CHECK(recv[0].opcode == WcOpcode::recv_rdma_with_imm);
    CHECK(recv[0].imm_data == 0xC0DE1234);
    CHECK(recv[0].byte_len == kImmLen);
    CHECK((recv[0].wc_flags & WcFlags::with_imm) != 0);
    CHECK(recv[0].qp_num == q1->qp_num());
    REQUIRE(sent2.size() == 1);
    CHECK(sent2[0].wr_id == 1000);
    CHECK(sent2[0].status == WcStatus::success);
    // The immediate's completion means the whole message is placed.
    CHECK(std::equal(src.begin(), src.begin() + kImmLen, dst.begin() + 4096 + 123));
    CHECK(drain(*rcq0).empty());
    CHECK(drain(*scq1).empty());
}

TEST_CASE("e2e__plane_down_before_traffic", "[unit][verbs]") {
    const std::uint64_t seed = 11;
    CAPTURE(seed);
    VirtualNet net(2, 8, seed);
    auto d0 = net.open(0, 101);
    auto d1 = net.open(1, 102);
    auto pd0 = d0->alloc_pd(), pd1 = d1->alloc_pd();
    auto cq0 = d0->create_cq(64), cq1 = d1->create_cq(64);
    auto q0 = pd0->create_qp(init_attr(*cq0, *cq0));
    auto q1 = pd1->create_qp(init_attr(*cq1, *cq1));
    connect(*q0, *d0, *q1, *d1);
    net.fabric.set_link(0, 3, false);

    const auto src = random_bytes(1u << 20, seed);
    std::vector<std::uint8_t> dst(src.size());
    auto smr = pd0->reg_mr(const_cast<std::uint8_t*>(src.data()), src.size(), 0);
    auto dmr = pd1->reg_mr(dst.data(), dst.size(), AccessFlags::local_write | AccessFlags::remote_write);
    const Sge sge{addr_of(src.data()), static_cast<std::uint32_t>(src.size()), smr->lkey()};
    SendWr w;
    w.wr_id = 9;
    w.send_flags = SendFlags::signaled;
    w.sg_list = {&sge, 1};
    w.remote_addr = addr_of(dst.data());
    w.rkey = dmr->rkey();
    REQUIRE(q0->post_send(w) == 0);
    std::vector<Wc> wcs;
    const bool done = net.run({d0.get(), d1.get()}, [&] {
        for (const Wc& wc : drain(*cq0)) wcs.push_back(wc);
        return !wcs.empty();
    }, 1'000'000'000);
    INFO(d0->stats_json());
    REQUIRE(done);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].status == WcStatus::success);
    CHECK(dst == src);
    const auto stats = nlohmann::json::parse(d0->stats_json());
    CHECK(stats["device"]["progress"]["link_events"].get<std::uint64_t>() == 1);
    CHECK((stats["engine"]["local_plane_mask"].get<std::uint32_t>() & (1u << 3)) == 0);
    CHECK(stats["driver"]["link_up"][3].get<bool>() == false);
}

TEST_CASE("e2e__send_and_send_with_imm_into_receives", "[unit][verbs]") {
    QpCap cap;
    cap.max_recv_sge = 3;
    SelfPair p(cap);
    for (std::size_t i = 0; i < p.src.size(); ++i) p.src[i] = static_cast<std::uint8_t>(i * 31 + 7);
    // Two receives: 3 SGEs (100 + 200 + 1000 bytes, gaps between), then one of 2000 bytes.
    const Sge r0[3] = {{addr_of(p.dst.data()), 100, p.dst_mr->lkey()},
                       {addr_of(p.dst.data()) + 200, 200, p.dst_mr->lkey()},
                       {addr_of(p.dst.data()) + 500, 1000, p.dst_mr->lkey()}};
    const Sge r1{addr_of(p.dst.data()) + 2000, 2000, p.dst_mr->lkey()};
    REQUIRE(p.b->post_recv(std::array{RecvWr{50, r0}, RecvWr{51, {&r1, 1}}}) == 0);
    const Sge s0 = p.sge(0, 1250), s1 = p.sge(1300, 1999);
    SendWr w0 = p.write(1, s0), w1 = p.write(2, s1);
    w0.opcode = WrOpcode::send;
    w0.send_flags |= SendFlags::solicited;
    w1.opcode = WrOpcode::send_with_imm;
    w1.imm_data = 0xBEEF;
    REQUIRE(p.a->post_send(std::array{w0, w1}) == 0);
    std::vector<Wc> recv, sent;
    REQUIRE(p.solo.run([&] {
        for (const Wc& wc : drain(*p.rcq)) recv.push_back(wc);
        for (const Wc& wc : drain(*p.scq)) sent.push_back(wc);
        return recv.size() == 2 && sent.size() == 2;
    }));
    CHECK(sent[0].opcode == WcOpcode::send);
    CHECK(sent[1].opcode == WcOpcode::send);
    CHECK(sent[1].status == WcStatus::success);
    CHECK(recv[0].wr_id == 50);
    CHECK(recv[0].opcode == WcOpcode::recv);
    CHECK(recv[0].byte_len == 1250);
    CHECK(recv[0].solicited);
    CHECK((recv[0].wc_flags & WcFlags::with_imm) == 0);
    CHECK(recv[1].wr_id == 51);
    CHECK(recv[1].byte_len == 1999);
    CHECK_FALSE(recv[1].solicited);
    CHECK((recv[1].wc_flags & WcFlags::with_imm) != 0);
    CHECK(recv[1].imm_data == 0xBEEF);
    CHECK(p.rcq->solicited_events() == 1);
    CHECK(std::equal(p.src.begin(), p.src.begin() + 100, p.dst.begin()));
    CHECK(std::equal(p.src.begin() + 100, p.src.begin() + 300, p.dst.begin() + 200));
    CHECK(std::equal(p.src.begin() + 300, p.src.begin() + 1250, p.dst.begin() + 500));
    CHECK(p.dst[500 + 950] == 0);  // the receive's tail past the message is untouched
    CHECK(std::equal(p.src.begin() + 1300, p.src.begin() + 3299, p.dst.begin() + 2000));
}

TEST_CASE("e2e__send_without_a_receive_waits_rnr_then_completes", "[unit][verbs]") {
    SelfPair p;
    QpAttr rnr;
    rnr.rnr_retry = 7;
    REQUIRE(p.a->modify(rnr, QpAttrMask::rnr_retry) == 0);
    rnr.min_rnr_timer = 1;  // 10 µs
    REQUIRE(p.b->modify(rnr, QpAttrMask::min_rnr_timer) == 0);
    rnr.rnr_retry = 8;
    CHECK(p.a->modify(rnr, QpAttrMask::rnr_retry) == EINVAL);
    const Sge s = p.sge(0, 3000);
    SendWr w = p.write(1, s);
    w.opcode = WrOpcode::send;
    REQUIRE(p.a->post_send(w) == 0);
    p.solo.run([] { return false; }, 500'000);
    CHECK(p.scq->size() == 0);
    const auto stats = nlohmann::json::parse(p.solo.dev->stats_json());
    std::uint64_t rnr_naks = 0;
    for (const auto& q : stats["qps"]) rnr_naks += q["stats"]["rnr_naks_sent"].get<std::uint64_t>();
    CHECK(rnr_naks > 0);
    const Sge r{addr_of(p.dst.data()), 4096, p.dst_mr->lkey()};
    REQUIRE(p.b->post_recv(RecvWr{9, {&r, 1}}) == 0);
    REQUIRE(p.solo.run([&] { return p.scq->size() == 1 && p.rcq->size() == 1; }));
    const auto sent = drain(*p.scq), recv = drain(*p.rcq);
    CHECK(sent[0].status == WcStatus::success);
    CHECK(recv[0].wr_id == 9);
    CHECK(recv[0].byte_len == 3000);
    CHECK(std::equal(p.src.begin(), p.src.begin() + 3000, p.dst.begin()));
}

TEST_CASE("e2e__rdma_read_into_two_sges", "[unit][verbs]") {
    SelfPair p;
    for (std::size_t i = 0; i < p.dst.size(); ++i) p.dst[i] = static_cast<std::uint8_t>(i * 13 + 5);
    const auto readable = p.pd->reg_mr(p.dst.data(), p.dst.size(), AccessFlags::remote_read);
    REQUIRE(readable != nullptr);
    const Sge into[2] = {p.sge(0, 1000), p.sge(2000, 1500)};
    SendWr w;
    w.wr_id = 7;
    w.opcode = WrOpcode::rdma_read;
    w.send_flags = SendFlags::signaled;
    w.sg_list = into;
    w.remote_addr = addr_of(p.dst.data()) + 100;
    w.rkey = readable->rkey();
    REQUIRE(p.a->post_send(w) == 0);
    std::vector<Wc> sent;
    REQUIRE(p.solo.run([&] {
        for (const Wc& wc : drain(*p.scq)) sent.push_back(wc);
        return sent.size() == 1;
    }));
    CHECK(sent[0].wr_id == 7);
    CHECK(sent[0].status == WcStatus::success);
    CHECK(sent[0].opcode == WcOpcode::rdma_read);
    CHECK(sent[0].byte_len == 2500);
    CHECK(std::equal(p.dst.begin() + 100, p.dst.begin() + 1100, p.src.begin()));
    CHECK(std::equal(p.dst.begin() + 1100, p.dst.begin() + 2600, p.src.begin() + 2000));
    CHECK(p.src[1000] == 0);  // between the SGEs: untouched
    CHECK(drain(*p.rcq).empty());  // the responder completes nothing
    // Inline READs and a destination without LOCAL_WRITE are refused at post.
    w.send_flags |= SendFlags::inline_;
    CHECK(p.a->post_send(w) == EINVAL);
    w.send_flags = SendFlags::signaled;
    const Sge ro{addr_of(p.dst.data()), 64, readable->lkey()};
    w.sg_list = {&ro, 1};
    CHECK(p.a->post_send(w) == EINVAL);
}

TEST_CASE("e2e__rdma_read_refused_by_the_responder", "[unit][verbs]") {
    SECTION("an MR without REMOTE_READ: rem_access_err") {
        SelfPair p;
        const Sge into = p.sge(0, 64);
        SendWr w;
        w.opcode = WrOpcode::rdma_read;
        w.send_flags = SendFlags::signaled;
        w.sg_list = {&into, 1};
        w.remote_addr = addr_of(p.dst.data());
        w.rkey = p.dst_mr->rkey();  // REMOTE_WRITE only
        REQUIRE(p.a->post_send(w) == 0);
        std::vector<Wc> sent;
        REQUIRE(p.solo.run([&] {
            for (const Wc& wc : drain(*p.scq)) sent.push_back(wc);
            return !sent.empty();
        }));
        CHECK(sent[0].status == WcStatus::rem_access_err);
        CHECK(sent[0].opcode == WcOpcode::rdma_read);
        CHECK(p.a->state() == QpState::err);
    }
    SECTION("a QP without REMOTE_READ: rem_inv_req_err") {
        SoloDevice solo;
        auto pd = solo.dev->alloc_pd();
        auto scq = solo.dev->create_cq(64), rcq = solo.dev->create_cq(64);
        auto a = pd->create_qp(init_attr(*scq, *rcq, {}));
        auto b = pd->create_qp(init_attr(*scq, *rcq, {}));
        QpAttr base;
        base.qp_access_flags = AccessFlags::local_write | AccessFlags::remote_write;
        connect(*a, *solo.dev, *b, *solo.dev, base);
        std::vector<std::uint8_t> buf(4096, 1), into(64, 0);
        auto src = pd->reg_mr(buf.data(), buf.size(), AccessFlags::remote_read);
        auto dst = pd->reg_mr(into.data(), into.size(), AccessFlags::local_write);
        const Sge sge{addr_of(into.data()), 64, dst->lkey()};
        SendWr w;
        w.opcode = WrOpcode::rdma_read;
        w.send_flags = SendFlags::signaled;
        w.sg_list = {&sge, 1};
        w.remote_addr = addr_of(buf.data());
        w.rkey = src->rkey();
        REQUIRE(a->post_send(w) == 0);
        std::vector<Wc> sent;
        REQUIRE(solo.run([&] {
            for (const Wc& wc : drain(*scq)) sent.push_back(wc);
            return !sent.empty();
        }));
        CHECK(sent[0].status == WcStatus::rem_inv_req_err);
        CHECK(into[0] == 0);
    }
}
