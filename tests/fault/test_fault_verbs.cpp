// SPDX-License-Identifier: BSD-3-Clause
// Fault-matrix rows that concern memory registration and object lifetime,
// through the public verbs API on the loopback driver in virtual time:
// rows 14-18 and 24, and rows 17 and 24 with SEND/RECV and RDMA READ traffic
// (row 32). G = canaries around every MR untouched.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "support/verbs_net.hpp"
#include "wire/frame.hpp"

using namespace omrc;
using namespace omrc::test;

namespace {

constexpr std::size_t kGuard = 4096;
constexpr std::uint8_t kCanary = 0xC5;

/// A buffer with canary pages around an MR-sized middle.
struct Guarded {
    std::vector<std::uint8_t> all;
    std::size_t len;
    explicit Guarded(std::size_t n, std::uint8_t fill = 0) : all(n + 2 * kGuard, kCanary), len(n) {
        std::memset(mid(), fill, n);
    }
    std::uint8_t* mid() { return all.data() + kGuard; }
    [[nodiscard]] bool guards_intact() const {
        return std::all_of(all.begin(), all.begin() + kGuard, [](std::uint8_t x) { return x == kCanary; }) &&
               std::all_of(all.end() - kGuard, all.end(), [](std::uint8_t x) { return x == kCanary; });
    }
    [[nodiscard]] bool all_equal(std::uint8_t v) const {
        return std::all_of(all.begin() + kGuard, all.end() - kGuard, [v](std::uint8_t x) { return x == v; });
    }
};

/// Two devices, one QP each, connected; a source MR at 0 and a guarded destination MR at 1.
struct Pair {
    VirtualNet net;
    std::unique_ptr<Device> dev[2];
    std::unique_ptr<Pd> pd[2];
    std::unique_ptr<Cq> cq[2];
    std::unique_ptr<Qp> qp[2];
    std::vector<std::uint8_t> src;
    Guarded dst;
    std::unique_ptr<Mr> src_mr, dst_mr;

    Pair(std::size_t bytes, std::uint64_t seed, std::uint32_t dst_access = AccessFlags::local_write | AccessFlags::remote_write,
         std::uint32_t qp_access = AccessFlags::local_write | AccessFlags::remote_write, QpAttr base = {})
        : net(3, 8, seed, 100'000'000'000), src(bytes), dst(bytes) {
        std::mt19937_64 rng(seed);
        for (auto& b : src) b = static_cast<std::uint8_t>(rng());
        for (int i = 0; i < 2; ++i) {
            dev[i] = net.open(static_cast<std::uint32_t>(i), seed * 10 + static_cast<std::uint64_t>(i));
            pd[i] = dev[i]->alloc_pd();
            cq[i] = dev[i]->create_cq(4096);
            QpCap cap;
            cap.max_send_wr = 1024;
            qp[i] = pd[i]->create_qp(init_attr(*cq[i], *cq[i], cap));
            REQUIRE(qp[i] != nullptr);
        }
        connect(*qp[0], *dev[0], *qp[1], *dev[1], base);
        if (qp_access != (AccessFlags::local_write | AccessFlags::remote_write)) {
            // connect() grants REMOTE_WRITE; rebuild B's QP access the ibverbs way: back to RESET.
            QpAttr r;
            r.qp_state = QpState::reset;
            REQUIRE(qp[1]->modify(r, QpAttrMask::state) == 0);
            QpAttr init;
            init.qp_state = QpState::init;
            init.qp_access_flags = qp_access;
            REQUIRE(qp[1]->modify(init, QpAttrMask::state | QpAttrMask::access_flags) == 0);
            QpAttr rtr = base;
            rtr.qp_state = QpState::rtr;
            rtr.dest_qp_num = qp[0]->qp_num();
            rtr.dest_conn_id = qp[0]->conn_id();
            rtr.rq_psn = 1000;  // as connect() set it
            rtr.peer = dev[0]->address();
            REQUIRE(qp[1]->modify(rtr, QpAttrMask::state | QpAttrMask::path | QpAttrMask::dest_qpn |
                                           QpAttrMask::rq_psn | QpAttrMask::mtu) == 0);
            QpAttr rts;
            rts.qp_state = QpState::rts;
            rts.sq_psn = 2000;
            REQUIRE(qp[1]->modify(rts, QpAttrMask::state | QpAttrMask::sq_psn) == 0);
        }
        src_mr = pd[0]->reg_mr(src.data(), src.size(), AccessFlags::local_write);
        dst_mr = pd[1]->reg_mr(dst.mid(), bytes, dst_access);
        REQUIRE(src_mr != nullptr);
        REQUIRE(dst_mr != nullptr);
    }

    int write(std::uint64_t wr_id, std::size_t off, std::size_t len, std::uint64_t remote_addr, std::uint32_t rkey) {
        const Sge sge{reinterpret_cast<std::uint64_t>(src.data()) + off, static_cast<std::uint32_t>(len), src_mr->lkey()};
        SendWr w;
        w.wr_id = wr_id;
        w.send_flags = SendFlags::signaled;
        w.sg_list = {&sge, 1};
        w.remote_addr = remote_addr;
        w.rkey = rkey;
        return qp[0]->post_send(w);
    }
    /// A SENDs src [off, off+len) into B's next receive.
    int send(std::uint64_t wr_id, std::size_t off, std::size_t len) {
        const Sge sge{reinterpret_cast<std::uint64_t>(src.data()) + off, static_cast<std::uint32_t>(len), src_mr->lkey()};
        SendWr w;
        w.wr_id = wr_id;
        w.opcode = WrOpcode::send;
        w.send_flags = SendFlags::signaled;
        w.sg_list = {&sge, 1};
        return qp[0]->post_send(w);
    }
    /// B posts a receive of dst [off, off+len).
    int recv(std::uint64_t wr_id, std::size_t off, std::size_t len) {
        const Sge sge{dst_addr(off), static_cast<std::uint32_t>(len), dst_mr->lkey()};
        const RecvWr r{wr_id, {&sge, 1}};
        return qp[1]->post_recv(r);
    }
    /// B READs A's src [off, off+len) into dst at off (A's MR must allow it: allow_remote_read()).
    int read(std::uint64_t wr_id, std::size_t off, std::size_t len) {
        const Sge sge{dst_addr(off), static_cast<std::uint32_t>(len), dst_mr->lkey()};
        SendWr w;
        w.wr_id = wr_id;
        w.opcode = WrOpcode::rdma_read;
        w.send_flags = SendFlags::signaled;
        w.sg_list = {&sge, 1};
        w.remote_addr = reinterpret_cast<std::uint64_t>(src.data()) + off;
        w.rkey = src_mr->rkey();
        return qp[1]->post_send(w);
    }
    /// Random loss at `rate` on everything A sends to B.
    void lose_a_to_b(double rate) {
        loopback::Impairment lossy;
        lossy.loss.rate = rate;
        net.fabric.set_impairment(0, 1, lossy);
    }
    /// A's source MR registered again with REMOTE_READ (B's READs name it).
    void allow_remote_read() {
        src_mr = pd[0]->reg_mr(src.data(), src.size(), AccessFlags::local_write | AccessFlags::remote_read);
        REQUIRE(src_mr != nullptr);
    }
    std::uint64_t dst_addr(std::size_t off = 0) { return reinterpret_cast<std::uint64_t>(dst.mid()) + off; }
    /// Side i tears everything down, children first (QP, its MR, CQ, PD, device).
    void destroy(int i) {
        qp[i].reset();
        (i == 0 ? src_mr : dst_mr).reset();
        cq[i].reset();
        pd[i].reset();
        dev[i].reset();
    }
    /// Runs side i alone until its CQ has given `n` completions (or 1 s of virtual time).
    std::vector<Wc> run_alone(int i, std::size_t n) {
        std::vector<Wc> wcs;
        net.run({dev[i].get()}, [&] {
            auto w = drain(*cq[i]);
            wcs.insert(wcs.end(), w.begin(), w.end());
            return wcs.size() >= n;
        }, 1'000'000'000);
        return wcs;
    }
    bool run(const std::function<bool()>& done, std::uint64_t budget_ns = 1'000'000'000) {
        return net.run({dev[0].get(), dev[1].get()}, done, budget_ns);
    }
    /// Receiver engine counters from stats_json().
    nlohmann::json rx_engine() const { return nlohmann::json::parse(dev[1]->stats_json())["engine"]; }
};

/// QP attributes of the READ cases: both QPs allow REMOTE_READ.
QpAttr read_attr() {
    QpAttr a;
    a.qp_access_flags = AccessFlags::local_write | AccessFlags::remote_write | AccessFlags::remote_read;
    return a;
}

/// Completions of `cq` until `n` have come (or the budget ends), in order.
std::vector<Wc> collect(Pair& p, Cq& cq, std::size_t n, std::uint64_t budget_ns = 2'000'000'000) {
    std::vector<Wc> wcs;
    p.run([&] {
        auto w = drain(cq);
        wcs.insert(wcs.end(), w.begin(), w.end());
        return wcs.size() >= n;
    }, budget_ns);
    return wcs;
}

/// The completions of one queue after an error ended its QP: successes,
/// then only flushes and exactly one `error` (a requester flushes its WRs
/// older than the one a NAK names before that one's error, as the engine
/// does). Returns how many succeeded.
std::size_t check_one_error_then_flushed(const std::vector<Wc>& wcs, WcStatus error) {
    std::size_t succeeded = 0, errors = 0;
    for (std::size_t i = 0; i < wcs.size(); ++i) {
        CAPTURE(i, to_string(wcs[i].status));
        if (wcs[i].status == WcStatus::success) {
            CHECK(succeeded == i);  // no success after the first failure
            ++succeeded;
        } else if (wcs[i].status == error) {
            ++errors;
        } else {
            CHECK(wcs[i].status == WcStatus::wr_flush_err);
        }
    }
    CHECK(errors == 1);
    return succeeded;
}

std::uint64_t drop_count(const nlohmann::json& engine, const char* reason) {
    const auto& d = engine["rx_drops"];
    return d.contains(reason) ? d[reason].get<std::uint64_t>() : 0;
}

}  // namespace

TEST_CASE("row 14: WRITE with a random rkey from a valid peer", "[fault]") {
    const std::uint64_t seed = 1414;
    CAPTURE(seed);
    Pair p(256 << 10, seed);
    std::mt19937 rng(seed);
    std::uint32_t rkey;
    do rkey = rng(); while (rkey == p.dst_mr->rkey());
    REQUIRE(p.write(1, 0, 64 << 10, p.dst_addr(), rkey) == 0);
    std::vector<Wc> wcs;
    REQUIRE(p.run([&] { auto w = drain(*p.cq[0]); wcs.insert(wcs.end(), w.begin(), w.end()); return !wcs.empty(); }));
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].status == WcStatus::rem_access_err);
    CHECK(p.dst.all_equal(0));
    CHECK(p.dst.guards_intact());
    CHECK(drop_count(p.rx_engine(), "remote_access") > 0);
}

TEST_CASE("row 15: out-of-bounds VA and length are rejected", "[fault]") {
    const std::uint64_t seed = 1515;
    CAPTURE(seed);
    const std::size_t n = 64 << 10;
    SECTION("end - 1 + 2") {
        Pair p(n, seed);
        REQUIRE(p.write(1, 0, 2, p.dst_addr(n - 1), p.dst_mr->rkey()) == 0);
        std::vector<Wc> w;
        REQUIRE(p.run([&] { w = drain(*p.cq[0]); return !w.empty(); }));
        CHECK(w[0].status == WcStatus::rem_access_err);
        CHECK(p.dst.all_equal(0));
        CHECK(p.dst.guards_intact());
    }
    SECTION("start - 1") {
        Pair p(n, seed);
        REQUIRE(p.write(1, 0, 16, p.dst_addr() - 1, p.dst_mr->rkey()) == 0);
        std::vector<Wc> w;
        REQUIRE(p.run([&] { w = drain(*p.cq[0]); return !w.empty(); }));
        CHECK(w[0].status == WcStatus::rem_access_err);
        CHECK(p.dst.all_equal(0));
        CHECK(p.dst.guards_intact());
    }
    SECTION("crafted packets: len 2^32-1, VA+len wrapping 2^64, a VA outside its message's MR") {
        // A third endpoint on the fabric injects frames that claim to come
        // from A's address (the receiver cannot tell; its MR checks must hold).
        Pair p(n, seed);
        auto attacker = p.net.fabric.attach(2);
        const auto a_addr = p.dev[0]->address();
        const auto b_addr = p.dev[1]->address();
        std::vector<std::pair<std::uint64_t, std::uint32_t>> cases = {
            {p.dst_addr(), 0xFFFFFFFFu},               // DMALen 2^32 - 1
            {~0ull - 8, 256},                          // VA + len wraps 2^64
            {p.dst_addr(n), 256},                      // just past the MR
            {p.dst_addr() + (1ull << 40), 256},        // far outside
        };
        const std::uint32_t first_psn = 1000;  // B expects PSNs from 1000 (connect())
        std::uint32_t psn = first_psn;
        std::vector<std::vector<std::uint8_t>> frames;
        for (const auto& [va, dmalen] : cases) {
            wire::FrameSpec s;
            s.eth.src = loopback::Fabric::mac(2, 0);
            s.eth.dst = b_addr.macs[0];
            s.ip.src = a_addr.addr;
            s.ip.dst = b_addr.addr;
            s.ev = 0x1000'0001;
            s.bth.opcode = wire::Opcode::write_only;
            s.bth.dest_qp = p.qp[1]->qp_num();
            s.bth.psn = psn++;
            s.reth = {va, p.dst_mr->rkey(), dmalen};
            std::vector<std::uint8_t> f(1024);
            std::size_t len = 0;
            REQUIRE(wire::build_frame(f, s, std::span(p.src.data(), 256), len) == wire::WireError::ok);
            f.resize(len);
            frames.push_back(std::move(f));
        }
        std::vector<wire::GatherFrame> g(frames.size());
        for (std::size_t i = 0; i < frames.size(); ++i) {
            g[i].plane = 0;
            g[i].header_len = 0;
            g[i].segment_count = 1;
            g[i].segments[0] = {frames[i].data(), static_cast<std::uint32_t>(frames[i].size())};
            g[i].tail_len = 0;
        }
        REQUIRE(attacker->tx_burst(g, p.net.now_ns) == g.size());
        p.run([] { return false; }, 1'000'000);
        CHECK(p.dst.all_equal(0));
        CHECK(p.dst.guards_intact());
        const auto e = p.rx_engine();
        CHECK(drop_count(e, "remote_access") == cases.size());
        CHECK(p.qp[1]->state() == QpState::rts);
    }
}

TEST_CASE("row 16: WRITE to an MR without REMOTE_WRITE, or to a QP that does not allow it", "[fault]") {
    const std::uint64_t seed = 1616;
    CAPTURE(seed);
    SECTION("MR without REMOTE_WRITE: REM_ACCESS_ERR") {
        Pair p(64 << 10, seed, AccessFlags::local_write);
        REQUIRE(p.write(1, 0, 4096, p.dst_addr(), p.dst_mr->rkey()) == 0);
        std::vector<Wc> w;
        REQUIRE(p.run([&] { w = drain(*p.cq[0]); return !w.empty(); }));
        CHECK(w[0].status == WcStatus::rem_access_err);
        CHECK(p.dst.all_equal(0));
    }
    SECTION("QP without REMOTE_WRITE: REM_INV_REQ_ERR") {
        Pair p(64 << 10, seed, AccessFlags::local_write | AccessFlags::remote_write, AccessFlags::local_write);
        REQUIRE(p.write(1, 0, 4096, p.dst_addr(), p.dst_mr->rkey()) == 0);
        std::vector<Wc> w;
        REQUIRE(p.run([&] { w = drain(*p.cq[0]); return !w.empty(); }));
        CHECK(w[0].status == WcStatus::rem_inv_req_err);
        CHECK(p.dst.all_equal(0));
    }
}

TEST_CASE("row 17: deregister an MR while WRITEs and retransmits to it are in flight", "[fault]") {
    const std::uint64_t seed = 1717;
    CAPTURE(seed);
    const std::size_t n = 8u << 20;
    Pair p(n, seed);
    p.lose_a_to_b(0.05);  // keeps retransmissions in flight
    for (std::size_t i = 0; i < n / (256 << 10); ++i)
        REQUIRE(p.write(i, i * (256 << 10), 256 << 10, p.dst_addr(i * (256 << 10)), p.dst_mr->rkey()) == 0);
    // Run until part of the data has landed, then deregister at the receiver.
    REQUIRE(p.run([&] { return !p.dst.all_equal(0); }, 10'000'000));
    p.run([] { return false; }, 20'000);
    REQUIRE(p.dst_mr->deregister() == 0);
    const std::vector<std::uint8_t> snapshot(p.dst.all);
    std::vector<Wc> wcs;
    REQUIRE(p.run([&] {
        auto w = drain(*p.cq[0]);
        wcs.insert(wcs.end(), w.begin(), w.end());
        return wcs.size() == n / (256 << 10);
    }, 2'000'000'000));
    CHECK((p.dst.all == snapshot));  // 0 bytes landed after deregister returned
    CHECK(p.dst.guards_intact());
    std::size_t access_errors = 0;
    for (const auto& w : wcs) access_errors += w.status == WcStatus::rem_access_err;
    CHECK(access_errors == 1);  // the first WR that hit the missing MR; the rest are flushed
    // A later WRITE with the old rkey fails too.
    std::vector<Wc> later;
    REQUIRE(p.qp[0]->state() == QpState::err);
}

TEST_CASE("row 18: 10^6 register/deregister cycles across several PDs", "[fault]") {
    VirtualNet net(1, 1, 1818);
    auto dev = net.open(0, 1818);
    std::vector<std::unique_ptr<Pd>> pds;
    for (int i = 0; i < 4; ++i) pds.push_back(dev->alloc_pd());
    std::vector<std::uint8_t> buf(4096);
    std::set<std::uint32_t> live;
    std::map<std::uint32_t, std::uint64_t> last_freed;  // rkey → cycle it was freed
    std::vector<std::unique_ptr<Mr>> held(64);
    std::mt19937 rng(1818);
    constexpr std::uint64_t kCycles = 1'000'000, kGenerations = 4096;
    std::uint64_t reuse_too_soon = 0, collisions = 0;
    std::map<std::int64_t, std::uint64_t> deltas;
    std::uint32_t prev = 0;
    for (std::uint64_t c = 0; c < kCycles; ++c) {
        const std::size_t slot = rng() % held.size();
        if (held[slot]) {
            last_freed[held[slot]->rkey()] = c;
            live.erase(held[slot]->rkey());
            held[slot].reset();
        }
        auto mr = pds[c % pds.size()]->reg_mr(buf.data(), buf.size(), AccessFlags::local_write | AccessFlags::remote_write);
        REQUIRE(mr != nullptr);
        const std::uint32_t k = mr->rkey();
        if (!live.insert(k).second) ++collisions;
        auto it = last_freed.find(k);
        if (it != last_freed.end() && c - it->second < kGenerations) ++reuse_too_soon;
        if (c > 0 && c < 100'000) ++deltas[static_cast<std::int64_t>(k) - static_cast<std::int64_t>(prev)];
        prev = k;
        held[slot] = std::move(mr);
    }
    CHECK(collisions == 0);
    CHECK(reuse_too_soon == 0);
    std::uint64_t most = 0;
    for (const auto& [d, count] : deltas) most = std::max(most, count);
    CHECK(most < 10);  // no fixed delta between consecutive rkeys
}

TEST_CASE("row 24: destroy QP, CQ and PD while the peer still sends", "[fault]") {
    const std::uint64_t seed = 2424;
    CAPTURE(seed);
    QpAttr base;
    base.timeout_ns = 1'000'000;
    base.retry_cnt = 2;
    Pair p(4u << 20, seed, AccessFlags::local_write | AccessFlags::remote_write,
           AccessFlags::local_write | AccessFlags::remote_write, base);
    for (std::size_t i = 0; i < 16; ++i)
        REQUIRE(p.write(i, i * (256 << 10), 256 << 10, p.dst_addr(i * (256 << 10)), p.dst_mr->rkey()) == 0);
    REQUIRE(p.run([&] { return !p.dst.all_equal(0); }, 10'000'000));
    p.destroy(1);  // the receiver tears everything down mid-transfer, children first
    std::vector<Wc> wcs;
    const bool finished = p.net.run({p.dev[0].get()}, [&] {
        auto w = drain(*p.cq[0]);
        wcs.insert(wcs.end(), w.begin(), w.end());
        return wcs.size() == 16;
    }, 1'000'000'000);
    if (!finished) std::printf("%s\nnow %llu\n", p.dev[0]->stats_json().c_str(), (unsigned long long)p.net.now_ns);
    REQUIRE(finished);
    std::size_t errors = 0;
    for (const auto& w : wcs) errors += w.status != WcStatus::success;
    CHECK(errors > 0);  // the peer gets error completions (retry exceeded, then flushed)
    CHECK(std::any_of(wcs.begin(), wcs.end(), [](const Wc& w) { return w.status == WcStatus::retry_exc_err; }));
    CHECK(p.qp[0]->state() == QpState::err);
}

// Row 32: rows 17 and 24 with SEND/RECV and RDMA READ traffic.

TEST_CASE("row 17 (SEND): deregister the receives' MR while SENDs and retransmits to it are in flight", "[fault]") {
    const std::uint64_t seed = 1727;
    CAPTURE(seed);
    const std::size_t n = 8u << 20, msg = 256 << 10, msgs = n / msg;
    Pair p(n, seed);
    p.lose_a_to_b(0.05);  // keeps retransmissions in flight
    for (std::size_t i = 0; i < msgs; ++i) {
        REQUIRE(p.recv(100 + i, i * msg, msg) == 0);
        REQUIRE(p.send(i, i * msg, msg) == 0);
    }
    REQUIRE(p.run([&] { return !p.dst.all_equal(0); }, 10'000'000));
    p.run([] { return false; }, 20'000);
    REQUIRE(p.dst_mr->deregister() == 0);
    const std::vector<std::uint8_t> snapshot(p.dst.all);
    const auto sent = collect(p, *p.cq[0], msgs);
    const auto received = collect(p, *p.cq[1], msgs);
    REQUIRE(sent.size() == msgs);
    REQUIRE(received.size() == msgs);
    CHECK((p.dst.all == snapshot));  // 0 bytes landed after deregister returned
    CHECK(p.dst.guards_intact());
    // The receiver: successes, one local protection error, the rest flushed,
    // in post order (one receive per message, none consumed twice).
    const std::size_t failed_recv = check_one_error_then_flushed(received, WcStatus::loc_prot_err);
    for (std::size_t i = 0; i < received.size(); ++i) {
        CHECK(received[i].wr_id == 100 + i);
        CHECK(received[i].opcode == WcOpcode::recv);
    }
    // The sender: the SEND that hit the missing MR fails with a remote
    // operational error, the rest are flushed; each completed receive was a completed SEND.
    const std::size_t failed_send = check_one_error_then_flushed(sent, WcStatus::rem_op_err);
    CHECK(failed_send >= failed_recv);
    for (std::size_t i = 0; i < failed_recv; ++i) CHECK(std::memcmp(p.dst.mid() + i * msg, p.src.data() + i * msg, msg) == 0);
    CHECK(p.qp[0]->state() == QpState::err);
    CHECK(p.qp[1]->state() == QpState::err);
    CHECK(drop_count(p.rx_engine(), "remote_access") >= 1);
}

TEST_CASE("row 17 (READ): deregister the READs' destination MR while answers are in flight", "[fault]") {
    const std::uint64_t seed = 1737;
    CAPTURE(seed);
    const std::size_t n = 8u << 20, msg = 256 << 10, msgs = n / msg;
    const QpAttr base = read_attr();
    Pair p(n, seed, AccessFlags::local_write, AccessFlags::local_write | AccessFlags::remote_write, base);
    p.allow_remote_read();
    p.lose_a_to_b(0.05);  // the answers (A → B) are lost and asked for again
    for (std::size_t i = 0; i < msgs; ++i) REQUIRE(p.read(i, i * msg, msg) == 0);
    REQUIRE(p.run([&] { return !p.dst.all_equal(0); }, 10'000'000));
    p.run([] { return false; }, 20'000);
    REQUIRE(p.dst_mr->deregister() == 0);
    const std::vector<std::uint8_t> snapshot(p.dst.all);
    const auto wcs = collect(p, *p.cq[1], msgs);
    REQUIRE(wcs.size() == msgs);
    CHECK((p.dst.all == snapshot));  // 0 bytes landed after deregister returned
    CHECK(p.dst.guards_intact());
    const std::size_t failed = check_one_error_then_flushed(wcs, WcStatus::loc_prot_err);
    for (std::size_t i = 0; i < wcs.size(); ++i) {
        CHECK(wcs[i].wr_id == i);
        CHECK(wcs[i].opcode == WcOpcode::rdma_read);
    }
    for (std::size_t i = 0; i < failed; ++i) CHECK(std::memcmp(p.dst.mid() + i * msg, p.src.data() + i * msg, msg) == 0);
    CHECK(p.qp[1]->state() == QpState::err);
    CHECK(drain(*p.cq[0]).empty());  // the responder completes nothing
}

TEST_CASE("row 17 (READ): deregister the MR being read while READs of it are in flight", "[fault]") {
    const std::uint64_t seed = 1747;
    CAPTURE(seed);
    const std::size_t n = 8u << 20, msg = 256 << 10, msgs = n / msg;
    QpAttr base = read_attr();
    base.timeout_ns = 1'000'000;
    base.retry_cnt = 2;
    Pair p(n, seed, AccessFlags::local_write, AccessFlags::local_write | AccessFlags::remote_write, base);
    p.allow_remote_read();
    p.lose_a_to_b(0.05);
    for (std::size_t i = 0; i < msgs; ++i) REQUIRE(p.read(i, i * msg, msg) == 0);
    REQUIRE(p.run([&] { return !p.dst.all_equal(0); }, 10'000'000));
    p.run([] { return false; }, 20'000);
    REQUIRE(p.src_mr->deregister() == 0);
    // Every byte of the source changes once deregistered: an answer built
    // from it after deregister returned would carry the new bytes.
    const std::vector<std::uint8_t> original(p.src);
    const std::vector<std::uint8_t> snapshot(p.dst.mid(), p.dst.mid() + n);
    for (auto& b : p.src) b = static_cast<std::uint8_t>(~b);
    const auto wcs = collect(p, *p.cq[1], msgs);
    REQUIRE(wcs.size() == msgs);
    std::size_t later = 0;
    for (std::size_t i = 0; i < n; ++i) later += p.dst.mid()[i] != snapshot[i] && p.dst.mid()[i] != original[i];
    CHECK(later == 0);
    CHECK(p.dst.guards_intact());
    // The responder stops answering (its QP enters ERR); the requester's
    // READ in progress ends by its retry budget, the rest are flushed.
    check_one_error_then_flushed(wcs, WcStatus::retry_exc_err);
    CHECK(p.qp[0]->state() == QpState::err);
    CHECK(p.qp[1]->state() == QpState::err);
    CHECK(drain(*p.cq[0]).empty());
}

TEST_CASE("row 24 (SEND): destroy QP, CQ and PD while the peer still sends", "[fault]") {
    const std::uint64_t seed = 2434;
    CAPTURE(seed);
    const std::size_t msg = 256 << 10, msgs = 16;
    QpAttr base;
    base.timeout_ns = 1'000'000;
    base.retry_cnt = 2;
    Pair p(msgs * msg, seed, AccessFlags::local_write | AccessFlags::remote_write,
           AccessFlags::local_write | AccessFlags::remote_write, base);
    for (std::size_t i = 0; i < msgs; ++i) {
        REQUIRE(p.recv(100 + i, i * msg, msg) == 0);
        REQUIRE(p.send(i, i * msg, msg) == 0);
    }
    REQUIRE(p.run([&] { return !p.dst.all_equal(0); }, 10'000'000));
    p.destroy(1);  // the receiver tears everything down mid-transfer, receives still posted
    const auto wcs = p.run_alone(0, msgs);
    REQUIRE(wcs.size() == msgs);
    check_one_error_then_flushed(wcs, WcStatus::retry_exc_err);
    CHECK(p.qp[0]->state() == QpState::err);
}

TEST_CASE("row 24 (READ): destroy the responder's objects while READs are in flight, or the requester's while answers are", "[fault]") {
    const std::size_t msg = 256 << 10, msgs = 16;
    QpAttr base = read_attr();
    base.timeout_ns = 1'000'000;
    base.retry_cnt = 2;
    const std::uint64_t seed = 2444;
    CAPTURE(seed);
    Pair p(msgs * msg, seed, AccessFlags::local_write, AccessFlags::local_write | AccessFlags::remote_write, base);
    p.allow_remote_read();
    for (std::size_t i = 0; i < msgs; ++i) REQUIRE(p.read(i, i * msg, msg) == 0);
    REQUIRE(p.run([&] { return !p.dst.all_equal(0); }, 10'000'000));
    SECTION("the responder goes: the requester's READs end by the retry budget") {
        p.destroy(0);
        const auto wcs = p.run_alone(1, msgs);
        REQUIRE(wcs.size() == msgs);
        check_one_error_then_flushed(wcs, WcStatus::retry_exc_err);
        CHECK(p.qp[1]->state() == QpState::err);
        CHECK(p.dst.guards_intact());
    }
    SECTION("the requester goes: the responder's answers fall on nothing, and it stays usable") {
        p.destroy(1);
        // The responder keeps running with its answers half sent: nothing to
        // complete on its side, no crash, no leak (ASan/LSan in the sanitizer build).
        p.net.run({p.dev[0].get()}, [] { return false; }, 20'000'000);
        CHECK(drain(*p.cq[0]).empty());
        // Its memory is still its own: a new MR and QP work on the same device.
        auto mr = p.pd[0]->reg_mr(p.src.data(), p.src.size(), AccessFlags::local_write);
        CHECK(mr != nullptr);
        QpCap cap;
        CHECK(p.pd[0]->create_qp(init_attr(*p.cq[0], *p.cq[0], cap)) != nullptr);
    }
}
