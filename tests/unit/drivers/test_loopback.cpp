// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include "drivers/loopback/frame_edit.hpp"
#include "drivers/loopback/loopback.hpp"
#include "drivers/loopback/rng.hpp"
#include "wire/bytes.hpp"
#include "wire/frame.hpp"
#include "wire/frame_view.hpp"
#include "wire/sample_frames.hpp"

using namespace omrc;
using namespace omrc::loopback;
using Bytes = std::vector<std::uint8_t>;

namespace {

/// BTH opcode of a plain-mode frame: Ethernet + IPv6 + UDP.
constexpr std::size_t kPlainOpcodeOffset = 14 + 40 + 8;

const std::vector<wire::SampleFrame>& samples() {
    static const std::vector<wire::SampleFrame> s = wire::make_sample_frames();
    return s;
}

const wire::SampleFrame& sample(std::string_view name) {
    for (const auto& s : samples())
        if (s.name == name) return s;
    FAIL("no sample frame " << name);
    return samples().front();
}

/// A sample frame re-addressed to (dst, plane), with its EV and PSN replaced.
Bytes make_frame(const wire::SampleFrame& s, std::uint32_t src, std::uint32_t dst, std::uint32_t plane,
                 std::uint32_t ev, std::uint32_t psn) {
    wire::FrameSpec spec = s.spec;
    spec.eth.dst = Fabric::mac(dst, plane);
    spec.eth.src = Fabric::mac(src, plane);
    spec.ev = ev;
    spec.bth.psn = psn & 0xFFFFFF;
    Bytes out(wire::header_size(spec) + s.payload.size() + 8);
    std::size_t len = 0;
    REQUIRE(wire::build_frame(out, spec, s.payload, len) == wire::WireError::ok);
    out.resize(len);
    return out;
}

Bytes data_frame(std::uint32_t src, std::uint32_t dst, std::uint32_t plane = 0, std::uint32_t ev = 0x1000A000,
                 std::uint32_t psn = 0) {
    return make_frame(sample("plain/WRITE_ONLY"), src, dst, plane, ev, psn);
}

Bytes ack_frame(std::uint32_t src, std::uint32_t dst, std::uint32_t plane = 0, std::uint32_t ev = 0x1000A000,
                std::uint32_t psn = 0) {
    return make_frame(sample("plain/ACK"), src, dst, plane, ev, psn);
}

/// The whole frame as one payload segment.
wire::GatherFrame gather(const Bytes& b, std::uint32_t plane) {
    wire::GatherFrame g;
    g.plane = static_cast<std::uint8_t>(plane);
    g.segment_count = 1;
    g.segments[0] = {b.data(), static_cast<std::uint32_t>(b.size())};
    return g;
}

std::size_t send(driver::Driver& d, const Bytes& b, std::uint32_t plane, std::uint64_t now) {
    const wire::GatherFrame g = gather(b, plane);
    return d.tx_burst({&g, 1}, now);
}

struct Received {
    Bytes bytes;
    std::uint8_t plane = 0;
    std::uint64_t at_ns = 0;
};

/// Everything deliverable at `now`, copied out.
std::vector<Received> receive(driver::Driver& d, std::uint64_t now) {
    std::vector<Received> out;
    std::array<driver::RxFrame, 16> burst;
    for (;;) {
        const std::size_t n = d.rx_burst(burst, now);
        for (std::size_t i = 0; i < n; ++i)
            out.push_back({Bytes(burst[i].data, burst[i].data + burst[i].len), burst[i].plane, now});
        if (n < burst.size()) return out;
    }
}

/// Calls fn(RxFrame) for everything deliverable at `now` without copying; returns the count.
template <class Fn>
std::size_t for_each_received(driver::Driver& d, std::uint64_t now, Fn&& fn) {
    std::array<driver::RxFrame, 16> burst;
    std::size_t total = 0, n = 0;
    do {
        n = d.rx_burst(burst, now);
        for (std::size_t i = 0; i < n; ++i) fn(burst[i]);
        total += n;
    } while (n == burst.size());
    return total;
}

/// Jumps virtual time from event to event until the driver has nothing pending.
std::vector<Received> drain_timeline(driver::Driver& d) {
    std::vector<Received> out;
    for (std::uint64_t t = d.next_event_ns(); t != UINT64_MAX; t = d.next_event_ns()) {
        auto got = receive(d, t);
        out.insert(out.end(), got.begin(), got.end());
    }
    return out;
}

wire::ParsedFrame parse(const Bytes& b, wire::WireError expect = wire::WireError::ok) {
    wire::ParsedFrame pf;
    REQUIRE(wire::parse_frame(b, {}, pf) == expect);
    return pf;
}

std::uint32_t psn_of(const Bytes& b) { return parse(b).bth.psn; }

FabricConfig virtual_config(std::uint32_t endpoints = 2, std::uint32_t planes = 1, std::uint64_t delay_ns = 1000) {
    FabricConfig c;
    c.endpoints = endpoints;
    c.planes = planes;
    c.link_delay_ns = delay_ns;
    return c;
}

/// Sends `n` copies of `frame` one per ns on a zero-delay link and records which arrived.
std::vector<bool> loss_pattern(Fabric& fab, driver::Driver& tx, driver::Driver& rx, const Bytes& frame,
                               std::size_t n, driver::Driver* other_tx = nullptr, const Bytes* other = nullptr) {
    REQUIRE(fab.config().link_delay_ns == 0);
    std::vector<bool> arrived(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (other_tx != nullptr) send(*other_tx, *other, 0, i);
        send(tx, frame, 0, i);
        arrived[i] = for_each_received(rx, i, [](const driver::RxFrame&) {}) == 1;
    }
    return arrived;
}

std::size_t count_lost(const std::vector<bool>& arrived) {
    return static_cast<std::size_t>(std::count(arrived.begin(), arrived.end(), false));
}

}  // namespace

TEST_CASE("Fabric::mac__address_layout", "[unit][loopback]") {
    CHECK(Fabric::mac(3, 2) == wire::MacAddr{0x02, 0x6d, 0x72, 0x63, 0x02, 0x03});
    CHECK(Fabric::mac(255, 14) == wire::MacAddr{0x02, 0x6d, 0x72, 0x63, 0x0e, 0xff});
}

TEST_CASE("Fabric::Fabric__rejects_bad_config_and_double_attach", "[unit][loopback]") {
    FabricConfig c = virtual_config();
    c.planes = 16;
    CHECK_THROWS_AS(Fabric(c), std::invalid_argument);
    c = virtual_config();
    c.endpoints = 0;
    CHECK_THROWS_AS(Fabric(c), std::invalid_argument);
    c = virtual_config();
    c.mode = ClockMode::real_time;
    c.ring_slots = 100;
    CHECK_THROWS_AS(Fabric(c), std::invalid_argument);

    Fabric fab(virtual_config());
    CHECK_THROWS_AS(fab.attach(2), std::out_of_range);
    auto d0 = fab.attach(0);
    CHECK_THROWS_AS(fab.attach(0), std::logic_error);
    d0.reset();
    CHECK_NOTHROW(d0 = fab.attach(0));
    CHECK(d0->name() == "loopback");
    CHECK(d0->planes() == 1);
    CHECK_THROWS_AS(fab.set_impairment(0, 1, 1, Impairment{}), std::out_of_range);
}

TEST_CASE("Fabric::attach__delivers_to_destination_endpoint_and_plane_byte_exact", "[unit][loopback]") {
    constexpr std::uint32_t kN = 3, kP = 3;
    Fabric fab(virtual_config(kN, kP, 500));
    std::vector<std::unique_ptr<driver::Driver>> d;
    for (std::uint32_t e = 0; e < kN; ++e) d.push_back(fab.attach(e));

    // Every sample frame, every (src, dst, plane), all sent at t = 0.
    std::map<std::uint32_t, std::vector<std::pair<Bytes, std::uint8_t>>> expect;  // per dst, in send order
    std::uint32_t psn = 0;
    for (std::uint32_t s = 0; s < kN; ++s)
        for (std::uint32_t t = 0; t < kN; ++t)
            for (std::uint32_t p = 0; p < kP; ++p)
                for (const auto& sf : samples()) {
                    Bytes b = make_frame(sf, s, t, p, sf.spec.ev, psn++);
                    REQUIRE(send(*d[s], b, p, 0) == 1);
                    expect[t].emplace_back(std::move(b), static_cast<std::uint8_t>(p));
                }
    for (std::uint32_t e = 0; e < kN; ++e) {
        CHECK(receive(*d[e], 499).empty());
        CHECK(d[e]->next_event_ns() == 500);
    }
    CHECK(fab.next_event_ns() == 500);
    for (std::uint32_t e = 0; e < kN; ++e) {
        const auto got = receive(*d[e], 500);
        REQUIRE(got.size() == expect[e].size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            CHECK(got[i].bytes == expect[e][i].first);  // ties in send order
            CHECK(got[i].plane == expect[e][i].second);
        }
        const auto st = d[e]->stats();
        CHECK(st.rx_frames == got.size());
        CHECK(st.tx_frames == kN * kP * samples().size());
        CHECK(d[e]->tx_release_count() == st.tx_frames);
        CHECK(d[e]->next_event_ns() == UINT64_MAX);
    }
    CHECK(fab.link_counters(2, 1, 2).delivered == samples().size());
    const auto ec = fab.endpoint_counters(1);
    CHECK(ec.sent.delivered == kN * kP * samples().size());
    CHECK(ec.received.delivered == kN * kP * samples().size());
    CHECK(ec.driver.rx_frames == kN * kP * samples().size());
}

TEST_CASE("Driver::tx_burst__flattens_gather_lists_and_releases_at_once", "[unit][loopback]") {
    Fabric fab(virtual_config(2, 2, 0));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    const auto& sf = sample("srv6/WRITE_LAST_WITH_IMM");  // odd payload: pad bytes in the tail
    wire::FrameSpec spec = sf.spec;
    spec.eth.dst = Fabric::mac(1, 1);
    Bytes whole(wire::header_size(spec) + sf.payload.size() + 8);
    std::size_t len = 0;
    REQUIRE(wire::build_frame(whole, spec, sf.payload, len) == wire::WireError::ok);
    whole.resize(len);

    wire::GatherFrame g;
    g.plane = 1;
    std::size_t hdr_len = 0;
    REQUIRE(wire::build_headers(g.header, spec, sf.payload.size(), hdr_len) == wire::WireError::ok);
    g.header_len = static_cast<std::uint16_t>(hdr_len);
    g.segment_count = 2;
    g.segments[0] = {sf.payload.data(), 10};
    g.segments[1] = {sf.payload.data() + 10, static_cast<std::uint32_t>(sf.payload.size() - 10)};
    const std::size_t pad = (4 - sf.payload.size() % 4) % 4;
    g.tail_len = static_cast<std::uint8_t>(pad + 4);
    std::copy(whole.end() - static_cast<std::ptrdiff_t>(pad + 4), whole.end(), g.tail.begin());

    const std::array<wire::GatherFrame, 3> burst{g, g, g};
    CHECK(d0->tx_burst(burst, 0) == 3);
    CHECK(d0->tx_release_count() == 3);  // copied: released before tx_burst returns
    const auto got = receive(*d1, 0);
    REQUIRE(got.size() == 3);
    for (const auto& r : got) {
        CHECK(r.bytes == whole);
        CHECK(r.plane == 1);
    }
    parse(got[0].bytes);
}

TEST_CASE("Fabric::attach__unknown_destination_and_invalid_frames_dropped", "[unit][loopback]") {
    Fabric fab(virtual_config(2, 2, 0));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    send(*d0, data_frame(0, 1, /*plane*/ 1), 0, 0);  // endpoint 1's MAC on plane 1, sent on plane 0
    send(*d0, data_frame(0, 5, 0), 0, 0);            // no endpoint 5
    Bytes other = data_frame(0, 1, 0);
    other[0] = 0x04;  // some other MAC
    send(*d0, other, 0, 0);
    send(*d0, data_frame(0, 1, 0), 2, 0);  // plane 2 does not exist
    const Bytes big(9217, 0);
    send(*d0, big, 0, 0);
    CHECK(receive(*d1, 10).empty());
    const auto c = fab.endpoint_counters(0);
    CHECK(c.unknown_destination == 3);
    CHECK(c.invalid_frames == 2);
    CHECK(c.sent.delivered == 0);
    CHECK(d0->tx_release_count() == 5);
}

TEST_CASE("Fabric::set_impairment__extra_delay_honoured_in_virtual_time", "[unit][loopback]") {
    Fabric fab(virtual_config(2, 1, 1000));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    Impairment imp;
    imp.delay.extra_ns = 250;
    fab.set_impairment(0, 1, 0, imp);
    send(*d0, data_frame(0, 1), 0, 100);
    send(*d1, data_frame(1, 0), 0, 100);
    CHECK(d1->next_event_ns() == 1350);
    CHECK(d0->next_event_ns() == 1100);
    CHECK(fab.next_event_ns() == 1100);
    CHECK(receive(*d1, 1349).empty());
    CHECK(receive(*d1, 1350).size() == 1);
    CHECK(receive(*d0, 1099).empty());
    CHECK(receive(*d0, 1100).size() == 1);
    CHECK(fab.next_event_ns() == UINT64_MAX);
}

TEST_CASE("Fabric::set_impairment__jitter_reorders_but_loses_nothing", "[unit][loopback]") {
    constexpr std::uint64_t kDelay = 2000, kJitter = 10000, kGap = 100;
    constexpr std::uint32_t kFrames = 2000;
    Fabric fab(virtual_config(2, 1, kDelay));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    Impairment imp;
    imp.delay.jitter_ns = kJitter;
    fab.set_impairment(0, 1, 0, imp);
    for (std::uint32_t i = 0; i < kFrames; ++i) send(*d0, data_frame(0, 1, 0, 0x1000A000, i), 0, i * kGap);
    const auto got = drain_timeline(*d1);
    REQUIRE(got.size() == kFrames);
    std::set<std::uint32_t> psns;
    std::size_t inversions = 0;
    std::uint64_t min_extra = UINT64_MAX, max_extra = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const std::uint32_t psn = psn_of(got[i].bytes);
        psns.insert(psn);
        if (i > 0 && psn < psn_of(got[i - 1].bytes)) ++inversions;
        const std::uint64_t sent = psn * kGap;
        REQUIRE(got[i].at_ns >= sent + kDelay);
        REQUIRE(got[i].at_ns <= sent + kDelay + kJitter);
        min_extra = std::min(min_extra, got[i].at_ns - sent - kDelay);
        max_extra = std::max(max_extra, got[i].at_ns - sent - kDelay);
    }
    CHECK(psns.size() == kFrames);
    CHECK(inversions > kFrames / 4);
    CHECK(min_extra < kJitter / 100);  // the whole jitter range is used
    CHECK(max_extra > kJitter - kJitter / 100);
    CHECK(fab.link_counters(0, 1, 0).delivered == kFrames);
}

TEST_CASE("Fabric::set_impairment__random_loss_rate", "[unit][loopback]") {
    const Bytes f = data_frame(0, 1);
    Impairment imp;
    imp.loss.rate = 0.05;

    SECTION("rate within tolerance over 100k frames, counted") {
        Fabric fab(virtual_config(2, 1, 0));
        auto d0 = fab.attach(0);
        auto d1 = fab.attach(1);
        fab.set_impairment(0, 1, 0, imp);
        const auto arrived = loss_pattern(fab, *d0, *d1, f, 100000);
        const std::size_t lost = count_lost(arrived);
        CHECK(lost >= 4600);  // 5000 ± 5.8 σ
        CHECK(lost <= 5400);
        CHECK(fab.link_counters(0, 1, 0).lost_random == lost);
        CHECK(fab.link_counters(0, 1, 0).delivered == 100000 - lost);
        CHECK(fab.link_counters(1, 0, 0).lost_random == 0);
    }
    SECTION("same seed same pattern, other seed other pattern, other links do not interfere") {
        auto run = [&](std::uint64_t seed, bool other_traffic, bool other_impairments) {
            FabricConfig c = virtual_config(3, 1, 0);
            c.seed = seed;
            Fabric fab(c);
            auto d0 = fab.attach(0);
            auto d1 = fab.attach(1);
            auto d2 = fab.attach(2);
            Impairment mine = imp;
            if (other_impairments) {  // other impairments of the same link draw from their own streams
                mine.duplicate.rate = 0.5;
                mine.corrupt.rate = 0.5;
            }
            fab.set_impairment(0, 1, 0, mine);
            fab.set_impairment(2, 1, 0, imp);
            const Bytes other = data_frame(2, 1);
            std::vector<bool> arrived(20000);
            for (std::size_t i = 0; i < arrived.size(); ++i) {
                if (other_traffic) send(*d2, other, 0, i);
                send(*d0, f, 0, i);
                std::size_t from0 = 0;
                for_each_received(*d1, i, [&](const driver::RxFrame& r) { from0 += r.data[11] == 0; });  // src MAC
                arrived[i] = from0 > 0;
            }
            return arrived;
        };
        const auto a = run(7, false, false);
        CHECK(a == run(7, false, false));
        CHECK(a == run(7, true, false));
        CHECK(a == run(7, false, true));
        const auto b = run(8, false, false);
        CHECK(a != b);
        CHECK(count_lost(b) > 800);
    }
}

TEST_CASE("Fabric::set_impairment__gilbert_elliott_produces_bursts", "[unit][loopback]") {
    const Bytes f = data_frame(0, 1);
    auto bursts = [](const std::vector<bool>& arrived) {
        std::vector<std::size_t> runs;
        std::size_t run = 0;
        for (bool a : arrived) {
            if (!a) {
                ++run;
            } else if (run > 0) {
                runs.push_back(run);
                run = 0;
            }
        }
        if (run > 0) runs.push_back(run);
        return runs;
    };
    auto mean = [](const std::vector<std::size_t>& v) {
        double s = 0;
        for (std::size_t x : v) s += static_cast<double>(x);
        return s / static_cast<double>(v.size());
    };

    Fabric fab(virtual_config(2, 1, 0));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    Impairment ge;
    ge.burst_loss = {0.01, 0.25, 0.0, 1.0, Select::all};
    fab.set_impairment(0, 1, 0, ge);
    const auto arrived = loss_pattern(fab, *d0, *d1, f, 100000);
    const auto runs = bursts(arrived);
    const std::size_t lost = count_lost(arrived);
    CHECK(fab.link_counters(0, 1, 0).lost_burst == lost);
    // Stationary bad fraction 0.01 / 0.26 = 3.85 %; mean burst 1 / 0.25 = 4.
    CHECK(lost > 3200);
    CHECK(lost < 4500);
    CHECK(runs.size() > 700);
    CHECK(mean(runs) == Approx(4.0).epsilon(0.12));

    // The same loss rate without memory: bursts of ~1.04.
    Impairment random;
    random.loss.rate = static_cast<double>(lost) / 100000.0;
    fab.set_impairment(0, 1, 0, random);
    const auto runs_random = bursts(loss_pattern(fab, *d0, *d1, f, 100000));
    CHECK(mean(runs_random) < 1.2);
}

TEST_CASE("Fabric::set_impairment__data_only_and_control_only_selectors", "[unit][loopback]") {
    Fabric fab(virtual_config(2, 1, 0));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    const Bytes data01 = data_frame(0, 1), ack01 = ack_frame(0, 1);
    const Bytes data10 = data_frame(1, 0), ack10 = ack_frame(1, 0);

    SECTION("all control frames lost on the ACK direction only") {
        Impairment imp;
        imp.loss = {1.0, Select::control};
        fab.set_impairment(1, 0, 0, imp);
        for (std::uint64_t t = 0; t < 100; ++t) {
            send(*d0, data01, 0, t);
            send(*d0, ack01, 0, t);
            send(*d1, data10, 0, t);
            send(*d1, ack10, 0, t);
        }
        CHECK(receive(*d1, 100).size() == 200);
        const auto at0 = receive(*d0, 100);
        REQUIRE(at0.size() == 100);
        for (const auto& r : at0) CHECK(r.bytes == data10);
        CHECK(fab.link_counters(1, 0, 0).lost_random == 100);
    }
    SECTION("data-only selector spares control frames") {
        Impairment imp;
        imp.loss = {1.0, Select::data};
        fab.set_impairment(0, 1, imp);
        for (const auto& sf : samples()) {
            const Bytes b = make_frame(sf, 0, 1, 0, sf.spec.ev, 1);
            send(*d0, b, 0, 0);
            const bool is_data = wire::is_data_opcode(sf.spec.bth.opcode);
            CHECK(receive(*d1, 0).size() == (is_data ? 0u : 1u));
        }
    }
    SECTION("2 % ACK loss leaves data untouched") {
        Impairment imp;
        imp.loss = {0.02, Select::control};
        fab.set_impairment(1, 0, 0, imp);
        std::size_t acks = 0, data = 0;
        for (std::uint64_t t = 0; t < 20000; ++t) {
            send(*d1, ack10, 0, t);
            send(*d1, data10, 0, t);
            for_each_received(*d0, t, [&](const driver::RxFrame& r) {
                (r.data[kPlainOpcodeOffset] == static_cast<std::uint8_t>(wire::Opcode::write_only) ? data : acks)++;
            });
        }
        CHECK(data == 20000);
        CHECK(acks > 20000 - 550);  // 400 ± 7.5 σ lost
        CHECK(acks < 20000 - 250);
    }
}

TEST_CASE("Fabric::set_impairment__duplicates_and_late_duplicates", "[unit][loopback]") {
    constexpr std::uint64_t kDelay = 5000, kRto = 1'000'000;
    Fabric fab(virtual_config(2, 1, kDelay));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);

    SECTION("every frame twice, the copy 2 × RTO later, byte-identical") {
        Impairment imp;
        imp.duplicate = {1.0, 2 * kRto, Select::all};
        fab.set_impairment(0, 1, 0, imp);
        for (std::uint32_t i = 0; i < 10; ++i) send(*d0, data_frame(0, 1, 0, 0x1000A000, i), 0, i * 1000);
        const auto got = drain_timeline(*d1);
        REQUIRE(got.size() == 20);
        for (std::uint32_t i = 0; i < 10; ++i) {
            CHECK(psn_of(got[i].bytes) == i);
            CHECK(got[i].at_ns == i * 1000 + kDelay);
            CHECK(got[10 + i].bytes == got[i].bytes);
            CHECK(got[10 + i].at_ns == i * 1000 + kDelay + 2 * kRto);
        }
        const auto c = fab.link_counters(0, 1, 0);
        CHECK(c.delivered == 10);
        CHECK(c.duplicated == 10);
    }
    SECTION("immediate duplicates at a rate, copy right after the original") {
        Impairment imp;
        imp.duplicate.rate = 0.25;
        fab.set_impairment(0, 1, 0, imp);
        std::size_t total = 0;
        for (std::uint32_t i = 0; i < 4000; ++i) {
            send(*d0, data_frame(0, 1, 0, 0x1000A000, i), 0, i * 10);
            const auto got = receive(*d1, i * 10 + kDelay);
            REQUIRE(!got.empty());
            REQUIRE(got.size() <= 2);
            if (got.size() == 2) CHECK(got[1].bytes == got[0].bytes);
            total += got.size();
        }
        const auto c = fab.link_counters(0, 1, 0);
        CHECK(c.duplicated == total - 4000);
        CHECK(c.duplicated > 850);  // 1000 ± 5.5 σ
        CHECK(c.duplicated < 1150);
    }
}

TEST_CASE("Fabric::set_impairment__corruption_detected_by_parse_frame", "[unit][loopback]") {
    Fabric fab(virtual_config(2, 1, 0));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    Impairment imp;
    imp.corrupt.rate = 1.0;
    fab.set_impairment(0, 1, 0, imp);
    auto hamming = [](const Bytes& a, const Bytes& b) {
        std::size_t n = 0;
        for (std::size_t i = 0; i < a.size(); ++i) n += static_cast<std::size_t>(__builtin_popcount(a[i] ^ b[i]));
        return n;
    };
    std::size_t frames = 0, parse_ok_anywhere = 0;
    std::map<wire::WireError, std::size_t> reasons;
    for (int round = 0; round < 40; ++round)
        for (const auto& sf : samples()) {
            const Bytes b = make_frame(sf, 0, 1, 0, sf.spec.ev, static_cast<std::uint32_t>(round));
            send(*d0, b, 0, 0);
            const auto got = receive(*d1, 0);
            REQUIRE(got.size() == 1);
            REQUIRE(got[0].bytes.size() == b.size());
            CHECK(hamming(got[0].bytes, b) == 1);
            wire::ParsedFrame pf;
            const wire::WireError e = wire::parse_frame(got[0].bytes, {}, pf);
            CHECK(e != wire::WireError::ok);
            ++reasons[e];
            ++frames;
        }
    CHECK(fab.link_counters(0, 1, 0).corrupted == frames);
    CHECK(reasons[wire::WireError::bad_icrc] > frames / 2);

    imp.corrupt.anywhere = true;  // Ethernet header and masked fields too
    fab.set_impairment(0, 1, 0, imp);
    for (int round = 0; round < 40; ++round)
        for (const auto& sf : samples()) {
            const Bytes b = make_frame(sf, 0, 1, 0, sf.spec.ev, 0);
            send(*d0, b, 0, 0);
            const auto got = receive(*d1, 0);
            REQUIRE(got.size() == 1);
            CHECK(hamming(got[0].bytes, b) == 1);
            wire::ParsedFrame pf;
            if (wire::parse_frame(got[0].bytes, {}, pf) == wire::WireError::ok) ++parse_ok_anywhere;
        }
    CHECK(parse_ok_anywhere > 0);
}

TEST_CASE("Fabric::set_impairment__trim_data_frames", "[unit][loopback]") {
    Fabric fab(virtual_config(2, 1, 0));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    std::uint32_t size = 0;
    std::uint8_t dscp = wire::kDscpTrimmed;
    wire::TrimKind kind = wire::TrimKind::dscp;
    SECTION("default size keeps headers through METH") {}
    SECTION("explicit size, last-hop DSCP") {
        size = 100;
        dscp = wire::kDscpTrimmedLastHop;
        kind = wire::TrimKind::dscp_last_hop;
    }
    Impairment imp;
    imp.trim = {1.0, size, dscp};
    fab.set_impairment(0, 1, 0, imp);
    std::size_t trimmed = 0;
    for (const auto& sf : samples()) {
        const Bytes b = make_frame(sf, 0, 1, 0, sf.spec.ev, 3);
        send(*d0, b, 0, 0);
        const auto got = receive(*d1, 0);
        REQUIRE(got.size() == 1);
        const wire::ParsedFrame orig = parse(b);
        const wire::ParsedFrame pf = parse(got[0].bytes);
        if (!wire::is_data_opcode(sf.spec.bth.opcode)) {
            CHECK(got[0].bytes == b);
            continue;
        }
        ++trimmed;
        const std::size_t min_len = orig.ip_offset + 40u + 8u + 12u + 4u;
        // A frame already shorter (a READ request has no payload) keeps its length.
        CHECK(got[0].bytes.size() == std::min(b.size(), std::max<std::size_t>(min_len, size)));
        CHECK(pf.trim == kind);
        CHECK(pf.has_meth);
        CHECK(pf.meth == orig.meth);
        CHECK(pf.bth.psn == 3);
        CHECK(pf.ev == orig.ev);
        CHECK(pf.ip.payload_len == orig.ip.payload_len);  // lengths untouched
        CHECK(pf.udp.length == orig.udp.length);
        CHECK(first_traffic_class(got[0].bytes) >> 2 == dscp);  // first IPv6 header re-marked
    }
    CHECK(fab.link_counters(0, 1, 0).trimmed == trimmed);
    CHECK(trimmed == 18);  // 6 data opcodes in each mode, srv6+srh, plain+credit, 2 SENDs and 2 READs
}

TEST_CASE("Fabric::set_impairment__blackhole_link_and_evs", "[unit][loopback]") {
    Fabric fab(virtual_config(2, 1, 0));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    const std::array<std::uint32_t, 4> evs{0x1000A000, 0x1001A001, 0x2000A000, 0x1000A001};

    SECTION("EV blackhole drops exactly that EV") {
        Impairment imp;
        imp.blackhole_evs = {0x1001A001};
        fab.set_impairment(0, 1, 0, imp);
        std::map<std::uint32_t, std::size_t> seen;
        for (std::uint32_t i = 0; i < 400; ++i) {
            const std::uint32_t ev = evs[i % evs.size()];
            send(*d0, i % 2 ? ack_frame(0, 1, 0, ev, i) : data_frame(0, 1, 0, ev, i), 0, i);
            for (const auto& r : receive(*d1, i)) ++seen[parse(r.bytes).ev];
        }
        CHECK(seen.count(0x1001A001) == 0);
        CHECK(seen[0x1000A000] == 100);
        CHECK(seen[0x2000A000] == 100);
        CHECK(seen[0x1000A001] == 100);
        CHECK(fab.link_counters(0, 1, 0).blackholed_ev == 100);
        // The SRv6 frames carry their EV in the inner header.
        const auto& sf = sample("srv6+srh/WRITE_MIDDLE");
        send(*d0, make_frame(sf, 0, 1, 0, 0x1001A001, 0), 0, 500);
        send(*d0, make_frame(sf, 0, 1, 0, 0x1001A002, 0), 0, 500);
        CHECK(receive(*d1, 500).size() == 1);
    }
    SECTION("link blackhole drops everything one way only") {
        Impairment imp;
        imp.blackhole = true;
        fab.set_impairment(0, 1, imp);
        for (std::uint32_t i = 0; i < 50; ++i) {
            send(*d0, data_frame(0, 1), 0, i);
            send(*d1, data_frame(1, 0), 0, i);
        }
        CHECK(receive(*d1, 100).empty());
        CHECK(receive(*d0, 100).size() == 50);
        CHECK(fab.link_counters(0, 1, 0).blackholed == 50);
        fab.set_impairment_all(Impairment{});
        send(*d0, data_frame(0, 1), 0, 200);
        CHECK(receive(*d1, 200).size() == 1);
    }
    SECTION("control-only blackhole") {
        Impairment imp;
        imp.blackhole = true;
        imp.blackhole_select = Select::control;
        fab.set_impairment(0, 1, 0, imp);
        send(*d0, data_frame(0, 1), 0, 0);
        send(*d0, ack_frame(0, 1), 0, 0);
        const auto got = receive(*d1, 0);
        REQUIRE(got.size() == 1);
        CHECK(got[0].bytes == data_frame(0, 1));
    }
}

TEST_CASE("Fabric::set_link__down_drops_both_ways_and_reports_events", "[unit][loopback]") {
    Fabric fab(virtual_config(2, 2, 0));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    std::array<driver::LinkEvent, 8> ev{};
    CHECK(d1->poll_link_events(ev) == 0);

    fab.set_link(1, 0, false);
    CHECK_FALSE(fab.link_up(1, 0));
    CHECK_FALSE(d1->link_up(0));
    CHECK(d1->link_up(1));
    REQUIRE(d1->poll_link_events(ev) == 1);
    CHECK(ev[0].plane == 0);
    CHECK_FALSE(ev[0].up);
    CHECK(d1->poll_link_events(ev) == 0);
    CHECK(d0->poll_link_events(ev) == 0);

    send(*d0, data_frame(0, 1, 0), 0, 0);  // to the down port
    send(*d1, data_frame(1, 0, 0), 0, 0);  // from the down port
    send(*d0, data_frame(0, 1, 1), 1, 0);  // other plane is fine
    send(*d1, data_frame(1, 0, 1), 1, 0);
    const auto at1 = receive(*d1, 0);
    REQUIRE(at1.size() == 1);
    CHECK(at1[0].plane == 1);
    const auto at0 = receive(*d0, 0);
    REQUIRE(at0.size() == 1);
    CHECK(at0[0].plane == 1);
    CHECK(fab.link_counters(0, 1, 0).link_down == 1);
    CHECK(fab.link_counters(1, 0, 0).link_down == 1);
    CHECK(d1->stats().tx_dropped_link_down == 1);
    CHECK(d0->stats().tx_dropped_link_down == 0);

    fab.set_link(1, 0, true);
    REQUIRE(d1->poll_link_events(ev) == 1);
    CHECK(ev[0].plane == 0);
    CHECK(ev[0].up);
    send(*d0, data_frame(0, 1, 0), 0, 1);
    send(*d1, data_frame(1, 0, 0), 0, 1);
    CHECK(receive(*d1, 1).size() == 1);
    CHECK(receive(*d0, 1).size() == 1);

    // A flap between two polls is reported as two events; a no-op change as none.
    fab.set_link(1, 1, false);
    fab.set_link(1, 1, true);
    fab.set_link(1, 1, true);
    REQUIRE(d1->poll_link_events(ev) == 2);
    CHECK((ev[0].plane == 1 && !ev[0].up && ev[1].plane == 1 && ev[1].up));
}

TEST_CASE("Fabric::schedule_link__and_schedule_impairment_apply_at_virtual_time", "[unit][loopback]") {
    Fabric fab(virtual_config(2, 1, 0));
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    Impairment bh;
    bh.blackhole = true;
    fab.schedule_link(5000, 1, 0, false);
    fab.schedule_link(8000, 1, 0, true);
    fab.schedule_impairment(6000, 0, 1, 0, bh);
    fab.schedule_impairment_all(9000, Impairment{});
    CHECK(fab.next_event_ns() == 5000);
    CHECK(d1->next_event_ns() == 5000);

    const Bytes f = data_frame(0, 1);
    send(*d0, f, 0, 4999);
    CHECK(receive(*d1, 4999).size() == 1);
    send(*d0, f, 0, 5000);  // the change at 5000 is applied first
    CHECK(receive(*d1, 5000).empty());
    std::array<driver::LinkEvent, 4> ev{};
    REQUIRE(d1->poll_link_events(ev) == 1);
    CHECK_FALSE(ev[0].up);
    CHECK(fab.next_event_ns() == 6000);
    fab.advance(8000);
    REQUIRE(d1->poll_link_events(ev) == 1);
    CHECK(ev[0].up);
    send(*d0, f, 0, 8500);  // link up again, but blackholed since 6000
    CHECK(receive(*d1, 8500).empty());
    send(*d0, f, 0, 9000);
    CHECK(receive(*d1, 9000).size() == 1);
    CHECK(fab.next_event_ns() == UINT64_MAX);
    const auto c = fab.link_counters(0, 1, 0);
    CHECK(c.delivered == 2);
    CHECK(c.link_down == 1);
    CHECK(c.blackholed == 1);

    FabricConfig rt = virtual_config();
    rt.mode = ClockMode::real_time;
    rt.max_frame_bytes = 256;
    rt.ring_slots = 4;
    rt.rx_pool_frames = 4;
    Fabric real(rt);
    CHECK_THROWS_AS(real.schedule_link(1, 0, 0, false), std::logic_error);
    CHECK_THROWS_AS(real.advance(1), std::logic_error);
}

TEST_CASE("Fabric::queue__serialization_delay_matches_rate", "[unit][loopback]") {
    FabricConfig c = virtual_config(2, 1, 1000);
    c.queue.rate_bps = 10'000'000'000;  // 10 Gb/s: 0.8 ns per byte
    Fabric fab(c);
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    const Bytes f = data_frame(0, 1);
    const std::uint64_t ser = (f.size() * 8 * 1'000'000'000ull + c.queue.rate_bps - 1) / c.queue.rate_bps;
    for (int i = 0; i < 5; ++i) send(*d0, f, 0, 0);  // back to back: each waits for the previous
    send(*d0, f, 0, 100'000);                        // after the link went idle: no queueing
    const auto got = drain_timeline(*d1);
    REQUIRE(got.size() == 6);
    for (std::uint64_t i = 0; i < 5; ++i) CHECK(got[i].at_ns == (i + 1) * ser + 1000);
    CHECK(got[5].at_ns == 100'000 + ser + 1000);
    // The reverse direction has its own queue.
    send(*d1, data_frame(1, 0), 0, 0);
    CHECK(d0->next_event_ns() == ser + 1000);
}

TEST_CASE("Fabric::queue__drop_tail_limit_and_ecn_threshold", "[unit][loopback]") {
    FabricConfig c = virtual_config(2, 1, 0);
    c.queue.rate_bps = 8'000'000'000;  // one byte per ns
    c.queue.limit_bytes = 1000;
    c.queue.ecn_threshold_bytes = 300;
    Fabric fab(c);
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    const Bytes f = data_frame(0, 1);
    const std::size_t len = f.size();
    // All sent at t = 0: frame i finds a backlog of i * len bytes.
    std::size_t accepted = 0, marked = 0;
    for (std::size_t i = 0; i < 10; ++i) {
        send(*d0, f, 0, 0);
        if (i * len + len <= 1000) {
            ++accepted;
            if (i * len > 300) ++marked;
        }
    }
    const auto got = drain_timeline(*d1);
    REQUIRE(got.size() == accepted);
    for (std::size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].at_ns == (i + 1) * len);
        const wire::ParsedFrame pf = parse(got[i].bytes);  // ICRC masks the traffic class
        CHECK(pf.ecn == (i * len > 300 ? 3 : 0));
        CHECK(pf.ip.dscp() == wire::kDscpData);
    }
    const auto lc = fab.link_counters(0, 1, 0);
    CHECK(lc.queue_dropped == 10 - accepted);
    CHECK(lc.ecn_marked == marked);
    CHECK(marked > 0);
    CHECK(accepted < 10);
}

TEST_CASE("Fabric::queue__trim_on_overflow", "[unit][loopback]") {
    FabricConfig c = virtual_config(2, 1, 100);
    c.queue.rate_bps = 8'000'000'000;
    c.queue.limit_bytes = 500;
    c.queue.overflow = OverflowPolicy::trim;
    c.queue.trim_bytes = 64;
    Fabric fab(c);
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    const Bytes f = data_frame(0, 1);
    const std::size_t fits = 500 / f.size();
    for (std::uint32_t i = 0; i < 8; ++i) send(*d0, data_frame(0, 1, 0, 0x1000A000, i), 0, 0);
    send(*d0, ack_frame(0, 1), 0, 0);  // control frames are not trimmed: dropped
    const auto got = drain_timeline(*d1);
    REQUIRE(got.size() == 8);
    const std::size_t trimmed_len = std::max<std::size_t>(64, 14 + 40 + 8 + 12 + 4);
    // Trimmed headers skip the queue, so they arrive first, in send order.
    for (std::size_t i = 0; i < 8 - fits; ++i) {
        const wire::ParsedFrame pf = parse(got[i].bytes);
        CHECK(pf.trim == wire::TrimKind::dscp);
        CHECK(pf.bth.psn == fits + i);
        CHECK(got[i].bytes.size() == trimmed_len);
        CHECK(got[i].at_ns == trimmed_len + 100);
    }
    for (std::size_t i = 0; i < fits; ++i) {
        const Received& r = got[8 - fits + i];
        CHECK(r.bytes == data_frame(0, 1, 0, 0x1000A000, static_cast<std::uint32_t>(i)));
        CHECK(r.at_ns == (i + 1) * f.size() + 100);
    }
    const auto lc = fab.link_counters(0, 1, 0);
    CHECK(lc.queue_trimmed == 8 - fits);
    CHECK(lc.queue_dropped == 1);
    CHECK(lc.delivered == 8);
}

TEST_CASE("Fabric::real_time__delay_and_jitter_through_heap", "[unit][loopback]") {
    FabricConfig c = virtual_config(2, 1, 50'000);
    c.mode = ClockMode::real_time;
    c.max_frame_bytes = 512;
    c.ring_slots = 512;
    c.rx_pool_frames = 512;
    Fabric fab(c);
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    Impairment imp;
    imp.delay.jitter_ns = 20'000;
    fab.set_impairment(0, 1, 0, imp);
    // The caller's clock drives everything; here a synthetic one.
    for (std::uint32_t i = 0; i < 400; ++i) send(*d0, data_frame(0, 1, 0, 0x1000A000, i), 0, i * 100);
    CHECK(receive(*d1, 49'999).empty());
    CHECK(d1->next_event_ns() >= 50'000);
    std::vector<Received> got;
    for (std::uint64_t t = 50'000; t <= 40'000 + 70'000; t += 500) {
        for (auto& r : receive(*d1, t)) {
            const std::uint64_t sent = psn_of(r.bytes) * 100ull;
            CHECK(t >= sent + 50'000);
            CHECK(t < sent + 70'000 + 500);
            got.push_back(std::move(r));
        }
    }
    CHECK(got.size() == 400);
    std::size_t inversions = 0;
    for (std::size_t i = 1; i < got.size(); ++i) inversions += psn_of(got[i].bytes) < psn_of(got[i - 1].bytes);
    CHECK(inversions > 0);
    CHECK(d1->next_event_ns() == UINT64_MAX);
}

TEST_CASE("Fabric::real_time__ring_full_drops_counted", "[unit][loopback]") {
    FabricConfig c = virtual_config(2, 1, 0);
    c.mode = ClockMode::real_time;
    c.max_frame_bytes = 256;
    c.ring_slots = 64;
    c.rx_pool_frames = 16;
    Fabric fab(c);
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    for (std::uint32_t i = 0; i < 200; ++i) send(*d0, data_frame(0, 1, 0, 0x1000A000, i), 0, 0);
    CHECK(d0->tx_release_count() == 200);
    CHECK(d0->stats().tx_dropped_full == 136);
    const auto lc = fab.link_counters(0, 1, 0);
    CHECK(lc.ring_full == 136);
    CHECK(lc.delivered == 64);
    const auto got = receive(*d1, 1);  // handed out in place from the ring (the pool is not used)
    REQUIRE(got.size() == 64);
    for (std::uint32_t i = 0; i < 64; ++i) CHECK(psn_of(got[i].bytes) == i);
    send(*d0, data_frame(0, 1, 0, 0x1000A000, 999), 0, 2);  // room again
    const auto again = receive(*d1, 2);
    REQUIRE(again.size() == 1);
    CHECK(psn_of(again[0].bytes) == 999);
    CHECK(d1->stats().rx_frames == 65);
}

TEST_CASE("Fabric::real_time__ring_backpressure_accepts_a_prefix", "[unit][loopback]") {
    FabricConfig c = virtual_config(2, 1, 0);
    c.mode = ClockMode::real_time;
    c.max_frame_bytes = 256;
    c.ring_slots = 64;
    c.rx_pool_frames = 16;
    c.ring_backpressure = true;
    Fabric fab(c);
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    std::vector<Bytes> frames;
    std::vector<wire::GatherFrame> burst;
    for (std::uint32_t i = 0; i < 100; ++i) frames.push_back(data_frame(0, 1, 0, 0x1000A000, i));
    for (const Bytes& b : frames) burst.push_back(gather(b, 0));
    // A full ring refuses the rest of the burst: nothing dropped, nothing counted for it.
    CHECK(d0->tx_burst(burst, 0) == 64);
    CHECK(d0->tx_release_count() == 64);
    CHECK(d0->stats().tx_dropped_full == 0);
    CHECK(d0->stats().tx_frames == 64);
    CHECK(fab.link_counters(0, 1, 0).ring_full == 0);
    CHECK(d0->tx_burst(std::span(burst).subspan(64), 0) == 0);
    // Frames lent in place keep their slots until the receiver's next rx_burst.
    std::array<driver::RxFrame, 64> rx;
    REQUIRE(d1->rx_burst(rx, 1) == 64);
    const Bytes first(rx[0].data, rx[0].data + rx[0].len);
    CHECK(d0->tx_burst(std::span(burst).subspan(64), 1) == 0);
    CHECK(first == frames[0]);
    CHECK(d1->rx_burst(rx, 1) == 0);  // releases the 64 slots
    CHECK(d0->tx_burst(std::span(burst).subspan(64), 2) == 36);
    const auto got = receive(*d1, 3);
    REQUIRE(got.size() == 36);
    for (std::uint32_t i = 0; i < 36; ++i) CHECK(got[i].bytes == frames[64 + i]);
    CHECK(d0->stats().tx_dropped_full == 0);
}

TEST_CASE("Fabric::real_time__zero_copy_lends_the_payload_until_the_next_rx_burst", "[unit][loopback]") {
    FabricConfig c = virtual_config(2, 2, 0);
    c.mode = ClockMode::real_time;
    c.max_frame_bytes = 4096 + 256;
    c.ring_slots = 64;
    c.zero_copy = true;
    Fabric fab(c);
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    // A real data frame whose payload (1 KiB) stays in "registered memory".
    wire::SampleFrame big = sample("plain/WRITE_MIDDLE");
    big.payload.assign(1024, 0x3C);
    Bytes whole = make_frame(big, 0, 1, 0, 0x1000A000, 7);
    wire::ParsedFrame pf = parse(whole);
    const std::size_t hlen = static_cast<std::size_t>(pf.payload.data() - whole.data());
    Bytes payload(pf.payload.begin(), pf.payload.end());
    REQUIRE(payload.size() >= c.zero_copy_min_bytes);
    wire::GatherFrame g;
    g.plane = 0;
    g.header_len = static_cast<std::uint16_t>(hlen);
    std::copy_n(whole.begin(), hlen, g.header.begin());
    g.segment_count = 1;
    g.segments[0] = {payload.data(), static_cast<std::uint32_t>(payload.size())};
    g.tail_len = static_cast<std::uint8_t>(whole.size() - hlen - payload.size());
    std::copy(whole.end() - g.tail_len, whole.end(), g.tail.begin());
    REQUIRE(d0->tx_burst({&g, 1}, 0) == 1);
    CHECK(d0->tx_release_count() == 0);  // lent to the receiver
    // A frame copied whole (small payload) behind it is released only with it.
    const Bytes small = data_frame(0, 1, 0, 0x1000A000, 8);
    REQUIRE(send(*d0, small, 0, 0) == 1);
    CHECK(d0->tx_release_count() == 0);

    std::array<driver::RxFrame, 8> rx;
    REQUIRE(d1->rx_burst(rx, 1) == 2);
    CHECK(rx[0].payload == payload.data());  // no copy on the way
    CHECK(rx[0].payload_len == payload.size());
    CHECK(rx[0].split == hlen);
    CHECK(rx[0].frame_len() == whole.size());
    wire::FrameView v;
    REQUIRE(wire::parse_frame_view(rx[0], {}, v) == wire::WireError::ok);
    CHECK(v.bth.psn == 7);
    CHECK(rx[1].payload == nullptr);
    CHECK(Bytes(rx[1].data, rx[1].data + rx[1].len) == small);
    CHECK(d0->tx_release_count() == 0);  // still in use until the receiver's next burst
    CHECK(d1->rx_burst(rx, 2) == 0);
    CHECK(d0->tx_release_count() == 2);
    CHECK(fab.link_counters(0, 1, 0).zero_copy == 1);
    CHECK(fab.link_counters(0, 1, 0).delivered == 2);
    CHECK(d1->stats().rx_bytes == whole.size() + small.size());

    // An impaired link copies everything (the impairments edit frames in place).
    Impairment imp;
    imp.delay.extra_ns = 1;
    fab.set_impairment(0, 1, 1, imp);
    g.plane = 1;
    whole = make_frame(big, 0, 1, 1, 0x1000A000, 9);
    std::copy_n(whole.begin(), hlen, g.header.begin());
    std::copy(whole.end() - g.tail_len, whole.end(), g.tail.begin());
    REQUIRE(d0->tx_burst({&g, 1}, 10) == 1);
    CHECK(d0->tx_release_count() == 3);
    REQUIRE(d1->rx_burst(rx, 20) == 1);
    CHECK(rx[0].payload == nullptr);
    CHECK(Bytes(rx[0].data, rx[0].data + rx[0].len) == whole);
    CHECK(fab.link_counters(0, 1, 1).zero_copy == 0);
}

TEST_CASE("Fabric::real_time__two_threads_exchange_frames", "[unit][loopback]") {
    constexpr std::uint64_t kPerDirection = 100'000;
    constexpr std::uint32_t kSlots = 256;
    FabricConfig c = virtual_config(2, 2, 0);
    c.mode = ClockMode::real_time;
    c.max_frame_bytes = 512;
    c.ring_slots = kSlots;
    c.rx_pool_frames = kSlots;
    Fabric fab(c);
    std::array<std::unique_ptr<driver::Driver>, 2> d{fab.attach(0), fab.attach(1)};
    std::array<std::atomic<std::uint64_t>, 2> received{};  // per receiving endpoint: frames whose slots it freed
    std::array<std::uint64_t, 2> errors{}, total_got{};
    const auto start = std::chrono::steady_clock::now();
    auto now_ns = [start] {
        return static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    };

    // Frame prefixes per (sender, plane), built up front: Catch2 assertions are not thread-safe.
    const std::array<std::array<Bytes, 2>, 2> prefixes{{{data_frame(0, 1, 0), data_frame(0, 1, 1)},
                                                        {data_frame(1, 0, 0), data_frame(1, 0, 1)}}};
    auto endpoint = [&](std::uint32_t me) {
        const std::uint32_t peer = 1 - me;
        const auto& prefix = prefixes[me];
        std::uint64_t sent = 0, got = 0, errs = 0;
        std::array<std::uint64_t, 16> seqs{};
        std::array<wire::GatherFrame, 16> burst{};
        std::array<driver::RxFrame, 32> rx{};
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while ((sent < kPerDirection || got < kPerDirection) && std::chrono::steady_clock::now() < deadline) {
            // Window = ring size, so a correct ring never overflows here.
            const std::uint64_t window = kSlots - (sent - received[peer].load(std::memory_order_acquire));
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>({16, window, kPerDirection - sent}));
            for (std::size_t i = 0; i < n; ++i) {
                seqs[i] = sent + i;
                const Bytes& p = prefix[seqs[i] % 2];
                burst[i] = gather(p, static_cast<std::uint32_t>(seqs[i] % 2));
                burst[i].segment_count = 2;
                burst[i].segments[1] = {reinterpret_cast<const std::uint8_t*>(&seqs[i]), 8};
            }
            if (n > 0) sent += d[me]->tx_burst({burst.data(), n}, now_ns());
            // rx_burst frees the ring slots of the frames it handed out last
            // time (they are lent in place): only those leave the window.
            const std::uint64_t released = got;
            const std::size_t m = d[me]->rx_burst(rx, now_ns());
            for (std::size_t i = 0; i < m; ++i, ++got) {
                std::uint64_t seq = 0;
                const Bytes& expect = prefixes[peer][got % 2];  // planes alternate with the sequence
                if (rx[i].len != expect.size() + 8 || rx[i].plane != got % 2) {
                    ++errs;
                    continue;
                }
                std::memcpy(&seq, rx[i].data + expect.size(), 8);
                if (seq != got || std::memcmp(rx[i].data, expect.data(), expect.size()) != 0) ++errs;
            }
            received[me].store(released, std::memory_order_release);
            if (n == 0 && m == 0) std::this_thread::yield();
        }
        errors[me] = errs;
        total_got[me] = got;
    };
    std::thread t1(endpoint, 1);
    endpoint(0);
    t1.join();
    for (std::uint32_t e = 0; e < 2; ++e) {
        CHECK(total_got[e] == kPerDirection);
        CHECK(errors[e] == 0);
        const auto ec = fab.endpoint_counters(e);
        CHECK(ec.sent.delivered == kPerDirection);
        CHECK(ec.sent.ring_full == 0);
        CHECK(ec.driver.rx_frames == kPerDirection);
        CHECK(ec.driver.tx_frames == kPerDirection);
    }
}

TEST_CASE("frame_edit::flip_random_bit__never_touches_icrc_masked_bits", "[unit][loopback]") {
    // Exhaustive over many draws on the SRH frame (largest header walk).
    const auto& sf = sample("srv6+srh/WRITE_MIDDLE");
    const FrameInfo fi = inspect_frame(sf.bytes);
    REQUIRE(fi.has_bth);
    CHECK(fi.is_data);
    CHECK(fi.ev == sf.spec.ev);
    CHECK(fi.ip_offset == parse(sf.bytes).ip_offset);
    Rng rng(42);
    std::set<std::size_t> bits;
    for (int i = 0; i < 20000; ++i) {
        Bytes b = sf.bytes;
        const std::size_t bit = flip_random_bit(b, fi, false, rng);
        const std::size_t byte = bit / 8;
        REQUIRE(byte >= fi.ip_offset);
        REQUIRE(!(byte == fi.ip_offset && bit % 8 >= 4));
        REQUIRE(!(byte >= fi.ip_offset + 1u && byte <= fi.ip_offset + 3u));
        REQUIRE(byte != fi.ip_offset + 7u);
        REQUIRE(!(byte >= fi.udp_offset + 6u && byte <= fi.udp_offset + 7u));
        REQUIRE(byte != fi.bth_offset + 4u);
        bits.insert(bit);
    }
    CHECK(*bits.rbegin() == sf.bytes.size() * 8 - 1);  // the ICRC itself can be hit
    CHECK(*bits.begin() == fi.ip_offset * 8u);
}

TEST_CASE("Fabric::real_time__control_calls_while_traffic_runs", "[unit][loopback]") {
    FabricConfig c = virtual_config(2, 1, 0);
    c.mode = ClockMode::real_time;
    c.max_frame_bytes = 512;
    c.ring_slots = 256;
    c.rx_pool_frames = 64;
    Fabric fab(c);
    auto d0 = fab.attach(0);
    auto d1 = fab.attach(1);
    const Bytes frame = data_frame(0, 1);
    std::atomic<bool> stop{false}, done{false};
    std::atomic<std::uint64_t> sent{0};
    std::uint64_t got = 0, link_events = 0;

    std::thread sender([&] {
        const wire::GatherFrame g = gather(frame, 0);
        std::uint64_t n = 0;
        while (!stop.load(std::memory_order_acquire)) {
            n += d0->tx_burst({&g, 1}, n);
            sent.store(n, std::memory_order_relaxed);
            if (n % 16 == 0) std::this_thread::yield();
        }
        done.store(true, std::memory_order_release);
    });
    std::thread receiver([&] {
        std::array<driver::RxFrame, 32> rx{};
        std::array<driver::LinkEvent, 8> ev{};
        for (;;) {
            const bool finished = done.load(std::memory_order_acquire);
            std::size_t n = 0, total = 0;
            do {  // once `finished`, everything the sender pushed is visible: drain it all
                n = d1->rx_burst(rx, UINT64_MAX);
                total += n;
            } while (finished && n > 0);
            got += total;
            link_events += d1->poll_link_events(ev);
            if (finished) break;
            if (total == 0) std::this_thread::yield();
        }
    });
    // Control thread: impairment changes and port flaps under traffic.
    std::uint32_t toggles = 0;
    Impairment lossy;
    lossy.loss.rate = 0.5;
    while (sent.load(std::memory_order_relaxed) < 1000) std::this_thread::yield();
    for (int k = 0; k < 300; ++k) {
        fab.set_impairment(0, 1, 0, k % 2 ? lossy : Impairment{});
        const bool up = k % 3 != 0;
        if (fab.link_up(1, 0) != up) ++toggles;
        fab.set_link(1, 0, up);
        (void)fab.link_counters(0, 1, 0);
        const std::uint64_t until = sent.load(std::memory_order_relaxed) + 20;  // let some traffic through
        while (sent.load(std::memory_order_relaxed) < until) std::this_thread::yield();
    }
    // On a loaded machine the receiver may not have run at all so far (every
    // frame then met a full ring): a last lossy phase (the port is up after
    // k = 299) lasts until the impairment has dropped something, or 20 s.
    REQUIRE(fab.link_up(1, 0));
    fab.set_impairment(0, 1, 0, lossy);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (fab.link_counters(0, 1, 0).lost_random == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stop.store(true, std::memory_order_release);
    sender.join();
    receiver.join();
    std::array<driver::LinkEvent, 8> ev{};
    for (std::size_t n = d1->poll_link_events(ev); n > 0; n = d1->poll_link_events(ev)) link_events += n;
    CHECK(toggles == 200);
    CHECK(link_events == toggles);

    const std::uint64_t total = sent.load();
    const auto lc = fab.link_counters(0, 1, 0);
    CHECK(lc.delivered + lc.lost_random + lc.link_down + lc.ring_full == total);  // each frame counted once
    CHECK(got == lc.delivered);
    CHECK(lc.lost_random > 0);
    CHECK(lc.link_down > 0);
    CHECK(d0->stats().tx_frames == total);  // the sender's own port never went down
}
