// SPDX-License-Identifier: BSD-3-Clause
// Fault-matrix row 33: devices of 2 and 4 workers through rows 1, 2, 9, 10
// and 12, through the public verbs API on a loopback fabric with one queue
// per worker in virtual time (the workers driven by progress(), so every
// run is deterministic). Each worker of the sender owns one QP, whose peer
// QP lives on the next worker of the receiver; the fabric steers each frame
// to its QP's worker (by_qpn) or spreads frames over the queues by RSS on
// the entropy (spread), when the workers hand them to each other. Besides
// what each row says: no frame reaches an engine that does not own its QP,
// and every frame handed between workers arrives (counted).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "fault/fault_common.hpp"
#include "support/verbs_net.hpp"

using namespace omrc;
using namespace omrc::test;

namespace {

struct Net {
    std::uint64_t now_ns = 1'000'000;
    loopback::Fabric fabric;
    std::unique_ptr<Device> dev[2];

    Net(std::uint32_t workers, loopback::QueueSteering steering, std::uint64_t seed) : fabric(config(workers, steering, seed)) {
        for (std::uint32_t e = 0; e < 2; ++e) {
            DeviceOptions o;
            o.driver_context = &fabric;
            o.args["endpoint"] = std::to_string(e);
            o.seed = seed * 10 + e;
            o.workers = workers;
            o.clock = [this] { return now_ns; };
            int err = -1;
            dev[e] = Device::open("loopback", o, &err);
            REQUIRE(err == 0);
        }
    }
    static loopback::FabricConfig config(std::uint32_t workers, loopback::QueueSteering steering, std::uint64_t seed) {
        loopback::FabricConfig f = fabric8(seed);
        f.endpoints = 2;
        f.queues = workers;
        f.steering = steering;
        f.mode = loopback::ClockMode::virtual_clock;
        return f;
    }
    /// Progresses both devices from event to event until done() or `budget_ns` more of virtual time.
    bool run(const std::function<bool()>& done, std::uint64_t budget_ns, const std::function<std::uint64_t()>& hint = {}) {
        const std::uint64_t deadline = now_ns + budget_ns;
        for (;;) {
            dev[0]->progress();
            dev[1]->progress();
            if (done()) return true;
            std::uint64_t next = std::min({fabric.next_event_ns(), dev[0]->next_wakeup_ns(), dev[1]->next_wakeup_ns()});
            if (hint) next = std::min(next, hint());
            if (next == UINT64_MAX) return done();
            now_ns = std::max(now_ns + 1, next);
            if (now_ns > deadline) return done();
        }
    }
};

/// One QP pair per worker, each with a guarded destination and its own messages.
struct Flows {
    struct Flow {
        std::unique_ptr<Qp> qa, qb;
        GuardedTransfer t;
        std::unique_ptr<Mr> smr, dmr;
        std::vector<std::size_t> sizes, offsets;
        std::vector<std::uint32_t> seen;  ///< completions per message
        std::size_t posted = 0, done = 0;
        std::vector<WcStatus> statuses;   ///< in completion order
    };
    std::unique_ptr<Pd> pa, pb;
    std::unique_ptr<Cq> ca, cb;
    std::vector<Flow> flows;
    std::size_t depth = 16;
    std::size_t post_limit = SIZE_MAX;   ///< messages each flow may have posted so far (a steady stream raises it)
    std::uint32_t unsignaled_every = 0;  ///< every k-th message unsignalled (0: none)

    Flows(Net& net, std::uint32_t workers, std::size_t bytes_each, std::size_t lo, std::size_t hi, std::uint64_t seed,
          QpAttr attr) {
        Device& a = *net.dev[0];
        Device& b = *net.dev[1];
        pa = a.alloc_pd();
        pb = b.alloc_pd();
        ca = a.create_cq(1 << 16);
        cb = b.create_cq(1 << 16);
        flows.resize(workers);
        for (std::uint32_t i = 0; i < workers; ++i) {
            Flow& f = flows[i];
            QpCap cap;
            cap.max_send_wr = 1024;
            QpInitAttr ia = init_attr(*ca, *ca, cap);
            ia.worker = static_cast<int>(i);
            f.qa = pa->create_qp(ia);
            ia = init_attr(*cb, *cb, cap);
            ia.worker = static_cast<int>((i + 1) % workers);
            f.qb = pb->create_qp(ia);
            REQUIRE(f.qa != nullptr);
            REQUIRE(f.qb != nullptr);
            f.t = make_guarded(bytes_each, seed + i);
            f.sizes = message_sizes(bytes_each, lo, hi, seed + i);
            std::size_t off = 0;
            for (std::size_t s : f.sizes) {
                f.offsets.push_back(off);
                off += s;
            }
            f.seen.assign(f.sizes.size(), 0);
            f.smr = pa->reg_mr(f.t.src.data(), f.t.src.size(), AccessFlags::local_write);
            f.dmr = pb->reg_mr(f.t.dst(), f.t.src.size(), AccessFlags::local_write | AccessFlags::remote_write);
            REQUIRE(f.smr != nullptr);
            REQUIRE(f.dmr != nullptr);
            connect(*f.qa, a, *f.qb, b, attr);
        }
    }

    void post() {
        for (Flow& f : flows) {
            while (f.posted < f.sizes.size() && f.posted < post_limit && f.posted - f.done < depth) {
                const std::size_t i = f.posted;
                const Sge sge{addr_of(f.t.src.data()) + f.offsets[i], static_cast<std::uint32_t>(f.sizes[i]), f.smr->lkey()};
                SendWr w;
                w.wr_id = i;
                const bool unsignaled = unsignaled_every != 0 && i % unsignaled_every == 0 && i + 1 < f.sizes.size();
                w.send_flags = unsignaled ? 0 : SendFlags::signaled;
                w.sg_list = {&sge, 1};
                w.remote_addr = addr_of(f.t.dst()) + f.offsets[i];
                w.rkey = f.dmr->rkey();
                if (f.qa->post_send(w) != 0) break;
                ++f.posted;
                if (unsignaled) ++f.done;  // its slot frees with the next signalled one
            }
        }
    }

    void poll() {
        Wc wc[64];
        for (std::size_t k = ca->poll(wc), i = 0; i < k; ++i)
            for (Flow& f : flows) {
                if (f.qa->qp_num() != wc[i].qp_num) continue;
                f.statuses.push_back(wc[i].status);
                if (wc[i].wr_id < f.seen.size()) ++f.seen[wc[i].wr_id];
                const bool was_unsignaled = unsignaled_every != 0 && wc[i].wr_id % unsignaled_every == 0 &&
                                            wc[i].wr_id + 1 < f.sizes.size();
                if (!was_unsignaled) ++f.done;  // an unsignalled WR counted at post, and completes only in error
            }
    }

    [[nodiscard]] bool finished() const {
        return std::all_of(flows.begin(), flows.end(), [](const Flow& f) { return f.done == f.sizes.size(); });
    }

    /// Byte-exact, canaries intact, every message completed once and successfully.
    void check_delivered() const {
        for (std::size_t i = 0; i < flows.size(); ++i) {
            const Flow& f = flows[i];
            CAPTURE(i);
            CHECK(f.t.byte_exact());
            CHECK(f.t.guards_intact());
            CHECK(std::all_of(f.statuses.begin(), f.statuses.end(), [](WcStatus s) { return s == WcStatus::success; }));
            std::size_t once = 0;
            for (std::size_t m = 0; m < f.seen.size(); ++m) {
                const bool was_unsignaled =
                    unsignaled_every != 0 && m % unsignaled_every == 0 && m + 1 < f.sizes.size();
                once += f.seen[m] == (was_unsignaled ? 0u : 1u);
            }
            CHECK(once == f.seen.size());
        }
    }
};

nlohmann::json stats(const Device& d) { return nlohmann::json::parse(d.stats_json()); }

/// Every frame at the engine that owns its QP; everything handed over arrived.
void check_workers(const Net& net, loopback::QueueSteering steering) {
    for (const auto& d : net.dev) {
        const auto s = stats(*d);
        std::uint64_t foreign = 0, handed = 0, copies = 0;
        for (const auto& w : s["device"]["per_worker"]) {
            CAPTURE(w["worker"]);
            CHECK(w["engine"]["rx_drops"]["no_qp"] == 0);
            CHECK(w["engine"]["rx_drops"]["wrong_source"] == 0);
            CHECK(w["exchange"]["dropped_ring_full"] == 0);
            CHECK(w["exchange"]["dropped_too_large"] == 0);
            foreign += w["exchange"]["rx_foreign"].get<std::uint64_t>();
            copies += w["exchange"]["endpoint_copies"].get<std::uint64_t>();
            handed += w["exchange"]["handed_in"].get<std::uint64_t>();
        }
        CHECK(handed == foreign + copies);
        if (steering == loopback::QueueSteering::spread) CHECK(foreign > 0);
        WARN("device " << s["device"]["driver"] << ": frames handed between workers " << foreign << ", endpoint copies "
                       << copies);
    }
}

/// Sums a counter of qp stats over a device's QPs.
std::uint64_t qp_sum(const Device& d, const char* key) {
    const auto s = stats(d);  // bound: a range over a temporary's member would dangle
    std::uint64_t n = 0;
    for (const auto& q : s["qps"]) n += q["stats"][key].get<std::uint64_t>();
    return n;
}

std::uint64_t sent_on_plane(const Device& d, std::uint32_t plane) {
    const auto s = stats(d);
    std::uint64_t n = 0;
    for (const auto& q : s["qps"]) n += q["planes"][plane]["data_sent"].get<std::uint64_t>();
    return n;
}

QpAttr adaptive() {
    QpAttr a;
    a.path_policy = PathPolicy::adaptive;
    a.evs = 64;
    a.mpr = 8;
    return a;
}

}  // namespace

TEST_CASE("row 33 (row 1): 10% random loss, 256 MiB of WRITEs 4 KiB-8 MiB, a QP on every worker",
          "[fault][fault_long][workers]") {
    const std::uint32_t workers = GENERATE(2u, 4u);
    const auto steering = GENERATE(loopback::QueueSteering::by_qpn, loopback::QueueSteering::spread);
    const std::uint64_t seed = 3301;
    CAPTURE(workers, static_cast<int>(steering), seed);
    const std::size_t each = (256u << 20) / workers;
    std::uint64_t lossless_ns = 0;
    {
        Net net(workers, steering, seed);
        Flows f(net, workers, each, 4 << 10, 8 << 20, seed, adaptive());
        f.depth = 32;
        const std::uint64_t start = net.now_ns;
        REQUIRE(net.run([&] { f.post(); f.poll(); return f.finished(); }, 10'000'000'000));
        lossless_ns = net.now_ns - start;
        f.check_delivered();
    }
    Net net(workers, steering, seed);
    loopback::Impairment imp;
    imp.loss.rate = 0.10;
    net.fabric.set_impairment_all(imp);
    Flows f(net, workers, each, 4 << 10, 8 << 20, seed, adaptive());
    f.depth = 32;
    const std::uint64_t start = net.now_ns;
    REQUIRE(net.run([&] { f.post(); f.poll(); return f.finished(); }, 60'000'000'000));
    f.check_delivered();
    check_workers(net, steering);
    const double goodput = static_cast<double>(lossless_ns) / static_cast<double>(net.now_ns - start);
    CAPTURE(lossless_ns, net.now_ns - start, goodput);
    WARN("row 33 (row 1): " << workers << " workers: goodput with 10% loss = " << goodput << " of lossless");
    CHECK(goodput >= 0.5);
}

TEST_CASE("row 33 (row 2): bursty loss plus 2% loss of control frames, a QP on every worker", "[fault][workers]") {
    const std::uint32_t workers = GENERATE(2u, 4u);
    const auto steering = GENERATE(loopback::QueueSteering::by_qpn, loopback::QueueSteering::spread);
    const std::uint64_t seed = 3302;
    CAPTURE(workers, static_cast<int>(steering), seed);
    Net net(workers, steering, seed);
    loopback::Impairment data;
    data.burst_loss.p_good_to_bad = 0.002;
    data.burst_loss.p_bad_to_good = 1.0 / 16;
    data.burst_loss.loss_bad = 1.0;
    net.fabric.set_impairment(0, 1, data);
    loopback::Impairment acks;
    acks.loss.rate = 0.02;
    acks.loss.select = loopback::Select::control;
    net.fabric.set_impairment(1, 0, acks);
    Flows f(net, workers, (32u << 20) / workers, 4 << 10, 1 << 20, seed, adaptive());
    f.unsignaled_every = 3;
    REQUIRE(net.run([&] { f.post(); f.poll(); return f.finished(); }, 10'000'000'000));
    // Stale and duplicate SACKs still arriving add no completion.
    std::size_t completions = 0;
    for (const auto& fl : f.flows) completions += fl.statuses.size();
    net.run([&] { f.poll(); return false; }, 2'000'000);
    std::size_t after = 0;
    for (const auto& fl : f.flows) after += fl.statuses.size();
    CHECK(after == completions);
    f.check_delivered();
    check_workers(net, steering);
    std::uint64_t burst = 0;
    for (std::uint32_t p = 0; p < 8; ++p) burst += net.fabric.link_counters(0, 1, p).lost_burst;
    CHECK(burst > 0);
}

TEST_CASE("row 33 (row 9): 5% of data trimmed on one plane, a QP on every worker", "[fault][workers]") {
    const std::uint32_t workers = GENERATE(2u, 4u);
    const auto steering = GENERATE(loopback::QueueSteering::by_qpn, loopback::QueueSteering::spread);
    const std::uint64_t seed = 3309;
    CAPTURE(workers, static_cast<int>(steering), seed);
    Net net(workers, steering, seed);
    loopback::Impairment imp;
    imp.trim.rate = 0.05;
    imp.trim.size_bytes = 128;
    net.fabric.set_impairment(0, 1, 2, imp);
    Flows f(net, workers, (64u << 20) / workers, 4 << 10, 1 << 20, seed, adaptive());
    REQUIRE(net.run([&] { f.post(); f.poll(); return f.finished(); }, 10'000'000'000));
    f.check_delivered();
    check_workers(net, steering);
    const std::uint64_t trimmed = net.fabric.link_counters(0, 1, 2).trimmed;
    REQUIRE(trimmed > 0);
    CHECK(qp_sum(*net.dev[1], "trims_received") == trimmed);
    CHECK(qp_sum(*net.dev[0], "trims_nacked") == trimmed);
    CHECK(qp_sum(*net.dev[0], "data_pkts_resent") == trimmed);  // NACK → only those PSNs
    CHECK(qp_sum(*net.dev[0], "ev_retirements") == 0);          // trims alone never retire a path
}

TEST_CASE("row 33 (row 10): a plane blackholed, then restored, a QP on every worker", "[fault][workers]") {
    const std::uint32_t workers = GENERATE(2u, 4u);
    const auto steering = GENERATE(loopback::QueueSteering::by_qpn, loopback::QueueSteering::spread);
    const std::uint64_t seed = 3310;
    CAPTURE(workers, static_cast<int>(steering), seed);
    Net net(workers, steering, seed);
    // A steady stream on every QP: one 32 KiB WRITE every 200 µs for 400 ms,
    // plane 4 dark from 50 to 300 ms.
    const std::uint64_t period = 200'000;
    const std::uint64_t t_black = net.now_ns + 50'000'000, t_restore = t_black + 250'000'000, t_end = t_restore + 100'000'000;
    loopback::Impairment dark;
    dark.blackhole = true;
    net.fabric.schedule_impairment(t_black, 0, 1, 4, dark);
    net.fabric.schedule_impairment(t_restore, 0, 1, 4, loopback::Impairment{});
    const std::size_t msgs = (t_end - net.now_ns) / period;
    Flows f(net, workers, msgs * (32u << 10), 32u << 10, 32u << 10, seed, adaptive());
    const std::uint64_t first_post = net.now_ns;
    f.post_limit = 0;
    std::vector<std::uint64_t> last_done(workers, net.now_ns);
    std::vector<std::size_t> done_seen(workers, 0);
    std::uint64_t max_gap = 0;
    std::uint64_t sent4_at_restore = 0, back_ns = 0;
    net.run([&] {
        f.post_limit = (net.now_ns - first_post) / period + 1;  // one more WRITE per flow every period
        f.post();
        f.poll();
        for (std::uint32_t i = 0; i < workers; ++i) {
            if (f.flows[i].done != done_seen[i]) {
                max_gap = std::max(max_gap, net.now_ns - last_done[i]);
                last_done[i] = net.now_ns;
                done_seen[i] = f.flows[i].done;
            }
        }
        if (net.now_ns >= t_restore && back_ns == 0) {
            const std::uint64_t sent4 = sent_on_plane(*net.dev[0], 4);
            if (sent4_at_restore == 0) sent4_at_restore = sent4 + 1;
            else if (sent4 + 1 > sent4_at_restore) back_ns = net.now_ns;
        }
        return f.finished();
    }, 2'000'000'000, [&] { return first_post + f.post_limit * period; });
    REQUIRE(f.finished());
    f.check_delivered();
    check_workers(net, steering);
    for (const auto& fl : f.flows) CHECK(fl.qa->state() == QpState::rts);
    const std::uint64_t rto = DeviceOptions{}.ev_timeout_ns;
    CAPTURE(max_gap, rto);
    CHECK(max_gap <= period + rto + 1'000'000);
    REQUIRE(back_ns != 0);
    CAPTURE(back_ns - t_restore);
    CHECK(back_ns - t_restore <= DeviceOptions{}.probe_interval_ns + rto + 20'000);
}

TEST_CASE("row 33 (row 12): every path down longer than the retry budget, a QP on every worker", "[fault][workers]") {
    const std::uint32_t workers = GENERATE(2u, 4u);
    const auto steering = GENERATE(loopback::QueueSteering::by_qpn, loopback::QueueSteering::spread);
    const std::uint64_t seed = 3312;
    CAPTURE(workers, static_cast<int>(steering), seed);
    Net net(workers, steering, seed);
    QpAttr attr = adaptive();
    attr.timeout_ns = 2'000'000;
    attr.retry_cnt = 4;
    Flows f(net, workers, 8u << 20, 64 << 10, 1 << 20, seed, attr);
    f.unsignaled_every = 2;  // errors are reported anyway
    f.depth = 1024;
    loopback::Impairment dark;
    dark.blackhole = true;
    net.fabric.set_impairment(0, 1, dark);
    const std::uint64_t start = net.now_ns;
    // Every error completes, signalled or not: count them all.
    std::size_t expected = 0;
    for (const auto& fl : f.flows) expected += fl.sizes.size();
    REQUIRE(net.run([&] {
        f.post();
        f.poll();
        std::size_t n = 0;
        for (const auto& fl : f.flows) n += fl.statuses.size();
        return n == expected;
    }, 1'000'000'000));
    const std::uint64_t budget = attr.timeout_ns * (attr.retry_cnt + 1);
    const std::uint64_t took = net.now_ns - start;
    CAPTURE(took, budget);
    CHECK(took >= budget - budget / 10);
    CHECK(took <= budget + budget / 10);
    for (const auto& fl : f.flows) {
        REQUIRE(!fl.statuses.empty());
        CHECK(fl.statuses.front() == WcStatus::retry_exc_err);
        CHECK(std::all_of(fl.statuses.begin() + 1, fl.statuses.end(), [](WcStatus s) { return s == WcStatus::wr_flush_err; }));
        CHECK(std::all_of(fl.seen.begin(), fl.seen.end(), [](std::uint32_t x) { return x == 1; }));
        CHECK(fl.qa->state() == QpState::err);
    }
    // No hang and nothing more afterwards.
    net.run([&] { f.poll(); return false; }, 10'000'000);
    std::size_t n = 0;
    for (const auto& fl : f.flows) n += fl.statuses.size();
    CHECK(n == expected);
}
