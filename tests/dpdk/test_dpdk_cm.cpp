// SPDX-License-Identifier: BSD-3-Clause
// Fault-matrix row 25 over real DPDK ports (docs/TESTING.md): two dpdk
// devices on net_memif pairs in one process, in real time. B listens with
// room for 15 more QPs; A holds one connection to B on which it times one
// 4 KiB WRITE at a time, then floods B with connection requests, 64 at once,
// wave after wave (each wave's accepted connections torn down before the
// next), while the WRITEs go on. Checked: every request ends established or
// refused with a reason (no_resources from B's application once its QPs run
// out, peer_limit or busy from the listener), none by timeout; a refused QP
// is left in INIT; B is back to its one connection after the flood; the
// existing QP's WRITEs all succeed. Its p99 latency under the flood and
// before it are printed (a WARN), not asserted: these are real-time figures
// on a shared machine (docs/PERFORMANCE.md has them with the command).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "dpdk/dpdk_env.hpp"
#include "dpdk/memif_devices.hpp"
#include "omrc/omrc.hpp"
#include "support/cm_ends.hpp"

using namespace omrc;
using namespace omrc::test;

namespace {

constexpr int kBase = 90;  ///< memif ports of this case (memif_vdevs): no other case uses them
constexpr std::uint64_t kRowService = 0x4F4D5243'00000025ull;
using Clock = std::chrono::steady_clock;

struct Side {
    std::unique_ptr<Device> dev;
    std::unique_ptr<Pd> pd;
    std::unique_ptr<Cq> cq;
    std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(64 << 10, 0);
    std::unique_ptr<Mr> mr;
    explicit Side(std::unique_ptr<Device> d) : dev(std::move(d)) {
        pd = dev->alloc_pd();
        cq = dev->create_cq(1024);
        mr = pd->reg_mr(buf.data(), buf.size(),
                        AccessFlags::local_write | AccessFlags::remote_write | AccessFlags::remote_read);
        REQUIRE(mr != nullptr);
    }
    std::unique_ptr<Qp> qp() { return pd->create_qp(init_attr(*cq, *cq)); }
};

/// Progresses both devices until done() or `limit` of real time.
bool spin(Device& a, Device& b, const std::function<bool()>& done, std::chrono::seconds limit = std::chrono::seconds(20)) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
        a.progress();
        b.progress();
        if (done()) return true;
    }
    return done();
}

double p99_us(std::vector<double> v) {
    REQUIRE(v.size() >= 100);
    std::sort(v.begin(), v.end());
    return v[v.size() * 99 / 100];
}

}  // namespace

TEST_CASE("row 25 (dpdk): net_memif, a peer floods connection requests: refused cleanly, the existing QP goes on",
          "[dpdk]") {
    DeviceOptions small;
    small.max_qps = 16;  // B: the existing QP and 15 more
    Side a(open_dpdk(memif_ports(0, kBase), 2511, {{"vdevs", memif_vdevs(0, kBase)}}));
    Side b(open_dpdk(memif_ports(1, kBase), 2512, {{"vdevs", memif_vdevs(1, kBase)}}, small));
    REQUIRE(wait_links(*a.dev, *b.dev));
    REQUIRE(b.dev->cm_listen(kRowService, {.backlog = 32, .per_peer = 16}) == 0);

    // B's application: accepts while it can create a QP, refuses with
    // no_resources after; a QP whose connection ended goes.
    std::map<std::uint32_t, std::unique_ptr<Qp>> b_qps;  // B's connection id → QP
    std::uint64_t b_refused = 0;
    auto serve_b = [&] {
        CmEvent ev[32];
        for (std::size_t n; (n = b.dev->cm_poll(ev)) != 0;)
            for (std::size_t i = 0; i < n; ++i) {
                if (ev[i].type == CmEventType::connect_request) {
                    auto q = b.qp();
                    if (q == nullptr) {
                        REQUIRE(b.dev->cm_reject(ev[i].id, {}, CmReason::no_resources) == 0);
                        ++b_refused;
                        continue;
                    }
                    CmConnParams acc;
                    cm::put_key(acc, *b.mr, b.buf);
                    REQUIRE(b.dev->cm_accept(ev[i].id, *q, acc) == 0);
                    b_qps[ev[i].id] = std::move(q);
                } else if (ev[i].type == CmEventType::disconnected) {
                    b_qps.erase(ev[i].id);
                }
            }
    };

    // The existing connection.
    auto qa = a.qp();
    REQUIRE(qa != nullptr);
    CmConnParams p;
    p.service_id = kRowService;
    p.peer = b.dev->address();
    std::uint32_t id_main = 0;
    REQUIRE(a.dev->cm_connect(*qa, p, &id_main) == 0);
    std::uint64_t raddr = 0;
    std::uint32_t rkey = 0;
    std::map<std::uint32_t, CmEvent> a_events;  // A's connection id → its last event
    auto poll_a = [&] {
        CmEvent ev[32];
        for (std::size_t n; (n = a.dev->cm_poll(ev)) != 0;)
            for (std::size_t i = 0; i < n; ++i) a_events[ev[i].id] = ev[i];
    };
    REQUIRE(spin(*a.dev, *b.dev, [&] {
        serve_b();
        poll_a();
        return a_events.count(id_main) != 0;
    }));
    REQUIRE(a_events[id_main].type == CmEventType::established);
    cm::get_key(a_events[id_main], raddr, rkey);
    a_events.clear();

    // One timed WRITE at a time on it.
    bool outstanding = false, write_failed = false;
    Clock::time_point posted;
    std::vector<double> lat_us;
    auto ping = [&](bool post = true) {
        Wc wc[8];
        for (std::size_t n; (n = a.cq->poll(wc)) != 0;)
            for (std::size_t i = 0; i < n; ++i) {
                if (wc[i].wr_id != 25) continue;
                write_failed |= wc[i].status != WcStatus::success;
                lat_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - posted).count());
                outstanding = false;
            }
        if (outstanding || !post) return;
        cm::post_write(*qa, *a.mr, a.buf.data(), 4096, raddr, rkey, 25);
        posted = Clock::now();
        outstanding = true;
    };
    REQUIRE(spin(*a.dev, *b.dev, [&] {
        serve_b();
        ping();
        return lat_us.size() >= 3000;
    }));
    const double base_p99 = p99_us(std::vector<double>(lat_us.begin() + 500, lat_us.end()));
    const std::size_t flood_from = lat_us.size();

    // The flood: waves of 64 requests, until 2,000 more WRITEs are timed (at least 4 waves).
    std::map<CmReason, std::uint64_t> refusals;
    std::uint64_t requested = 0, established = 0, waves = 0;
    const auto flood_start = Clock::now();
    while (lat_us.size() - flood_from < 2000 || waves < 4) {
        // A's application issues one request per pass of its loop, 64 in all,
        // beside its progress calls and the timed WRITEs.
        std::map<std::uint32_t, std::unique_ptr<Qp>> wave;
        REQUIRE(spin(*a.dev, *b.dev, [&] {
            if (wave.size() < 64) {
                auto q = a.qp();
                REQUIRE(q != nullptr);
                std::uint32_t id = 0;
                REQUIRE(a.dev->cm_connect(*q, p, &id) == 0);
                wave[id] = std::move(q);
            }
            serve_b();
            poll_a();
            ping();
            return wave.size() == 64 &&
                   std::all_of(wave.begin(), wave.end(), [&](const auto& w) { return a_events.count(w.first) != 0; });
        }));
        requested += 64;
        for (auto& [id, q] : wave) {
            const CmEvent& e = a_events.at(id);
            INFO("wave " << waves << ", connection " << id << ": " << to_string(e.type) << ' ' << to_string(e.reason));
            if (e.type == CmEventType::established) {
                ++established;
                CHECK(q->state() == QpState::rts);
                REQUIRE(a.dev->cm_disconnect(id) == 0);
            } else {
                CHECK(e.type == CmEventType::rejected);
                CHECK((e.reason == CmReason::no_resources || e.reason == CmReason::peer_limit ||
                       e.reason == CmReason::busy));
                CHECK(q->state() == QpState::init);  // nothing moved
                ++refusals[e.reason];
            }
        }
        // The accepted ones end at both sides before the next wave.
        REQUIRE(spin(*a.dev, *b.dev, [&] {
            serve_b();
            poll_a();
            ping();
            return b_qps.size() == 1;
        }));
        a_events.clear();
        ++waves;
    }
    const double flood_s = std::chrono::duration<double>(Clock::now() - flood_start).count();
    // The last WRITE in flight finishes.
    REQUIRE(spin(*a.dev, *b.dev, [&] {
        serve_b();
        ping(false);
        return !outstanding;
    }));
    const double flood_p99 = p99_us(std::vector<double>(lat_us.begin() + static_cast<std::ptrdiff_t>(flood_from), lat_us.end()));
    const nlohmann::json jb = nlohmann::json::parse(b.dev->stats_json());
    WARN("row 25 (dpdk, net_memif): the existing QP's 4 KiB WRITE p99 " << base_p99 << " us before, " << flood_p99
         << " us under the flood (" << flood_p99 / base_p99 << " x); " << requested << " requests in " << waves
         << " waves over " << flood_s << " s: " << established << " established ("
         << static_cast<double>(established) / flood_s << " setups/s), refused no_resources "
         << refusals[CmReason::no_resources] << ", peer_limit " << refusals[CmReason::peer_limit] << ", busy "
         << refusals[CmReason::busy] << "; B's CM " << jb["cm"].dump());
    CHECK_FALSE(write_failed);
    CHECK(established + refusals[CmReason::no_resources] + refusals[CmReason::peer_limit] + refusals[CmReason::busy] ==
          requested);
    CHECK(established == 15 * waves);  // B's QPs: the existing one and 15 per wave
    CHECK(b_refused == refusals[CmReason::no_resources]);
    CHECK(jb["cm"]["live"] == 1);
    CHECK(jb["cm"]["timeouts"] == 0);
    CHECK(jb["qps"].size() == 1);
    CHECK(qa->state() == QpState::rts);
}
