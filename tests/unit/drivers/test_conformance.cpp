// SPDX-License-Identifier: BSD-3-Clause
// The driver conformance suite (conformance.hpp): frames byte-exact on their
// plane, link state and events, bursts larger than the receive array. Each
// test binary that compiles this file names its drivers in a factory file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "unit/drivers/conformance.hpp"
#include "wire/frame.hpp"
#include "wire/sample_frames.hpp"

using namespace omrc;
using namespace omrc::test::conformance;

namespace {

/// The sample frames a driver carries.
std::vector<wire::SampleFrame> samples_for(const Pair& p) {
    auto all = wire::make_sample_frames();
    if (p.plain_only) std::erase_if(all, [](const wire::SampleFrame& s) { return s.spec.mode != wire::FrameMode::plain; });
    return all;
}

/// A gather frame of a sample, re-addressed to endpoint `to` on `plane`, its
/// payload split over two segments.
struct Owned {
    std::vector<std::uint8_t> bytes;
    wire::GatherFrame g;
};
Owned gather(const wire::SampleFrame& s, const Pair& p, std::uint32_t to, std::uint32_t plane) {
    Owned o;
    wire::FrameSpec spec = s.spec;
    spec.eth.dst = p.mac(to, plane);
    spec.eth.src = p.mac(1 - to, plane);
    // As in every engine frame, the EV names the plane it is sent on (routing::make_ev).
    spec.ev = (spec.ev & 0x0FFFFFFFu) | ((plane + 1) << 28);
    if (p.ip) {
        spec.ip.src = p.ip(1 - to);
        spec.ip.dst = p.ip(to);
    }
    o.bytes.resize(s.bytes.size() + 64);
    std::size_t len = 0;
    REQUIRE(wire::build_frame(o.bytes, spec, s.payload, len) == wire::WireError::ok);
    o.bytes.resize(len);
    const std::size_t h = std::min({wire::header_size(spec), wire::GatherFrame::kMaxHeader, len});
    std::copy_n(o.bytes.begin(), h, o.g.header.begin());
    o.g.header_len = static_cast<std::uint16_t>(h);
    const std::size_t rest = len - h, half = rest / 2;
    o.g.segments[0] = {o.bytes.data() + h, static_cast<std::uint32_t>(half)};
    o.g.segments[1] = {o.bytes.data() + h + half, static_cast<std::uint32_t>(rest - half)};
    o.g.segment_count = 2;
    o.g.tail_len = 0;
    o.g.plane = static_cast<std::uint8_t>(plane);
    return o;
}

/// Receives until `n` frames arrived at `d` or a bounded number of polls.
std::vector<std::vector<std::uint8_t>> receive(Pair& p, driver::Driver& d, std::size_t n, std::vector<std::uint8_t>* planes_seen = nullptr) {
    std::vector<std::vector<std::uint8_t>> got;
    std::vector<driver::RxFrame> rx(16);
    for (int spin = 0; spin < 2'000'000 && got.size() < n; ++spin) {
        p.advance(10'000);
        const std::size_t k = d.rx_burst(rx, p.now());
        for (std::size_t i = 0; i < k; ++i) {
            got.emplace_back(rx[i].data, rx[i].data + rx[i].len);
            if (planes_seen) planes_seen->push_back(rx[i].plane);
        }
    }
    return got;
}

}  // namespace

TEST_CASE("driver conformance: frames arrive byte-exact on their plane", "[unit][driver]") {
    for (const Factory& f : conformance_factories()) {
        INFO(f.name);
        Pair p = f.make(4);
        CHECK(p.a->planes() == 4);
        const auto samples = samples_for(p);
        std::vector<Owned> frames;
        for (std::size_t i = 0; i < samples.size(); ++i) frames.push_back(gather(samples[i], p, 1, static_cast<std::uint32_t>(i % 4)));
        std::vector<wire::GatherFrame> g;
        for (auto& o : frames) g.push_back(o.g);
        const std::uint64_t released_before = p.a->tx_release_count();
        REQUIRE(p.a->tx_burst(g, p.now()) == g.size());
        CHECK(p.a->tx_release_count() - released_before <= g.size());
        std::vector<std::uint8_t> planes;
        const auto got = receive(p, *p.b, frames.size(), &planes);
        if (got.size() != frames.size()) {
            std::vector<std::pair<std::string, std::uint64_t>> ca, cb;
            p.a->counters(ca);
            p.b->counters(cb);
            for (const auto& c : ca) if (c.second) UNSCOPED_INFO("a." << c.first << "=" << c.second);
            for (const auto& c : cb) if (c.second) UNSCOPED_INFO("b." << c.first << "=" << c.second);
        }
        REQUIRE(got.size() == frames.size());
        std::vector<bool> matched(frames.size(), false);
        for (std::size_t i = 0; i < got.size(); ++i) {
            std::size_t j = i;
            if (!p.ordered) {  // the sent frame with these bytes
                j = 0;
                while (j < frames.size() && (matched[j] || frames[j].bytes != got[i])) ++j;
                REQUIRE(j < frames.size());
                matched[j] = true;
            }
            CHECK(got[i] == frames[j].bytes);  // in order on an unimpaired link pair, if ordered
            CHECK(planes[i] == j % 4);
            wire::ParsedFrame pf;
            CHECK(wire::parse_frame(got[i], {}, pf) == wire::WireError::ok);
        }
        CHECK(p.a->stats().tx_frames == frames.size());
        CHECK(p.b->stats().rx_frames == frames.size());
        // Copying drivers release everything they accepted.
        CHECK(p.a->tx_release_count() - released_before == g.size());
    }
}

TEST_CASE("driver conformance: link state and events", "[unit][driver]") {
    for (const Factory& f : conformance_factories()) {
        INFO(f.name);
        Pair p = f.make(2);
        for (std::uint32_t pl = 0; pl < 2; ++pl) CHECK(p.a->link_up(pl));
        std::vector<driver::LinkEvent> ev(8);
        CHECK(p.a->poll_link_events(ev) == 0);
        p.set_link(0, 1, false);
        p.advance(1);
        (void)p.a->rx_burst(std::span<driver::RxFrame>{}, p.now());
        const std::size_t n = p.a->poll_link_events(ev);
        REQUIRE(n == 1);
        CHECK(ev[0].plane == 1);
        CHECK_FALSE(ev[0].up);
        CHECK_FALSE(p.a->link_up(1));
        // A frame sent on the down plane is counted, not delivered.
        const auto samples = samples_for(p);
        Owned o = gather(samples[0], p, 1, 1);
        REQUIRE(p.a->tx_burst(std::span(&o.g, 1), p.now()) == 1);
        CHECK(receive(p, *p.b, 1).empty());
        CHECK(p.a->stats().tx_dropped_link_down == 1);
        p.set_link(0, 1, true);
        (void)p.a->rx_burst(std::span<driver::RxFrame>{}, p.now());
        REQUIRE(p.a->poll_link_events(ev) == 1);
        CHECK(ev[0].up);
    }
}

TEST_CASE("driver conformance: bursts larger than the receive array are split, nothing lost", "[unit][driver]") {
    for (const Factory& f : conformance_factories()) {
        INFO(f.name);
        Pair p = f.make(1);
        const auto samples = samples_for(p);
        std::vector<Owned> frames;
        for (int i = 0; i < 200; ++i) frames.push_back(gather(samples[static_cast<std::size_t>(i) % samples.size()], p, 1, 0));
        std::size_t sent = 0;
        std::vector<std::vector<std::uint8_t>> got;
        for (int round = 0; round < 1000 && got.size() < frames.size(); ++round) {
            while (sent < frames.size()) {
                if (p.a->tx_burst(std::span(&frames[sent].g, 1), p.now()) != 1) break;
                ++sent;
            }
            auto more = receive(p, *p.b, frames.size() - got.size());
            got.insert(got.end(), more.begin(), more.end());
        }
        REQUIRE(got.size() == frames.size());
        std::vector<std::vector<std::uint8_t>> want;
        for (const Owned& o : frames) want.push_back(o.bytes);
        if (!p.ordered) {
            std::sort(got.begin(), got.end());
            std::sort(want.begin(), want.end());
        }
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == want[i]);
    }
}
