// SPDX-License-Identifier: BSD-3-Clause
// runtime::FrameExchange on its own: who owns a frame (route()), the hand-over
// rings between workers, and what each worker counts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/config.hpp"
#include "runtime/frame_exchange.hpp"
#include "wire/bth.hpp"
#include "wire/frame.hpp"
#include "wire/sample_frames.hpp"

using namespace omrc;
using runtime::FrameExchange;

namespace {

/// A plain-mode sample frame of `op`, with its BTH offset.
struct Frame {
    std::vector<std::uint8_t> bytes;
    std::size_t bth = 0;
    std::size_t ip = 0;

    void set_dest_qp(std::uint32_t qpn) {
        bytes[bth + 5] = static_cast<std::uint8_t>(qpn >> 16);
        bytes[bth + 6] = static_cast<std::uint8_t>(qpn >> 8);
        bytes[bth + 7] = static_cast<std::uint8_t>(qpn);
    }
    void set_psn(std::uint32_t psn) {
        bytes[bth + 9] = static_cast<std::uint8_t>(psn >> 16);
        bytes[bth + 10] = static_cast<std::uint8_t>(psn >> 8);
        bytes[bth + 11] = static_cast<std::uint8_t>(psn);
    }
    [[nodiscard]] wire::Ipv6Addr source() const {
        wire::Ipv6Addr a;
        std::memcpy(a.data(), bytes.data() + ip + 8, a.size());
        return a;
    }
    [[nodiscard]] wire::RxFrame view(std::uint8_t plane = 0) const {
        wire::RxFrame f{};
        f.data = bytes.data();
        f.len = static_cast<std::uint32_t>(bytes.size());
        f.plane = plane;
        return f;
    }
};

Frame sample(wire::Opcode op) {
    for (const wire::SampleFrame& s : wire::make_sample_frames()) {
        if (s.name.rfind("plain/", 0) != 0) continue;
        wire::ParsedFrame p;
        if (wire::parse_frame(s.bytes, {}, p) != wire::WireError::ok || p.bth.opcode != op) continue;
        return {s.bytes, std::size_t{p.ip_offset} + 40 + 8, p.ip_offset};
    }
    FAIL("no plain sample frame of that opcode");
    return {};
}

constexpr std::uint32_t qpn(std::uint32_t generation, std::uint32_t shard, std::uint32_t index, std::uint32_t bits) {
    return generation << (12 + bits) | shard << 12 | index;
}

}  // namespace

TEST_CASE("frame_exchange__route: a QP's frame to the shard its DestQP names, a response to its request id's",
          "[workers]") {
    FrameExchange x(4);
    REQUIRE(x.shard_bits() == 2);
    Frame data = sample(wire::Opcode::write_only);
    for (std::uint32_t shard = 0; shard < 4; ++shard) {
        data.set_dest_qp(qpn(5, shard, 17, 2));
        for (std::uint32_t self = 0; self < 4; ++self) {
            const runtime::FrameRoute r = x.route(data.view(), self);
            CHECK(r.owner == shard);
            CHECK(r.observer_mask == 0);
        }
    }
    Frame resp = sample(wire::Opcode::ep_response);
    for (std::uint32_t shard = 0; shard < 4; ++shard) {
        resp.set_psn(0x4000 | (0x1230 + shard));  // the request id in PSN[15:0], its low bits the shard
        CHECK(x.route(resp.view(), 3).owner == shard);
    }
    // A frame too short to hold BTH stays with the worker that got it (its parser counts it).
    wire::RxFrame cut = data.view();
    cut.len = static_cast<std::uint32_t>(data.bth + 4);
    CHECK(x.route(cut, 2).owner == 2);
}

TEST_CASE("frame_exchange__endpoint_requests: the lowest worker with a QP of the peer answers, the others observe",
          "[workers]") {
    FrameExchange x(4);
    const Frame req = sample(wire::Opcode::ep_request);
    const wire::Ipv6Addr peer = req.source();
    // No QP towards the source: the receiving worker keeps it (and its engine drops it).
    CHECK(x.route(req.view(), 1).owner == 1);
    x.add_peer(peer, 3);
    x.add_peer(peer, 1);
    x.add_peer(peer, 1);
    runtime::FrameRoute r = x.route(req.view(), 0);
    CHECK(r.owner == 1);
    CHECK(r.observer_mask == (1u << 3));
    x.remove_peer(peer, 1);  // one of worker 1's two QPs goes: it still has one
    CHECK(x.route(req.view(), 0).owner == 1);
    x.remove_peer(peer, 1);
    r = x.route(req.view(), 0);
    CHECK(r.owner == 3);
    CHECK(r.observer_mask == 0);
}

TEST_CASE("frame_exchange__hand_over: frames copied into the owner's ring, drained in order, every one counted",
          "[workers]") {
    FrameExchange x(2, 8);
    Frame data = sample(wire::Opcode::write_only);
    std::vector<std::vector<std::uint8_t>> sent;
    for (std::uint32_t i = 0; i < 8; ++i) {
        data.set_psn(100 + i);
        REQUIRE(x.hand_over(0, 1, data.view(static_cast<std::uint8_t>(i % 3)), i == 5));
        sent.push_back(data.bytes);
    }
    CHECK(x.has_inbound(1));
    CHECK_FALSE(x.has_inbound(0));
    // The ring of 8 is full: the next frame is refused and counted, never half-written.
    CHECK_FALSE(x.hand_over(0, 1, data.view(), false));
    CHECK(x.stats(0).dropped_ring_full == 1);
    // Changing the sender's buffer now changes nothing handed over.
    std::fill(data.bytes.begin(), data.bytes.end(), 0xEE);

    std::vector<wire::RxFrame> views(3);
    std::size_t seen = 0;
    const std::size_t n = x.drain(1, views, 100, [&](std::span<const wire::RxFrame> burst) {
        CHECK(burst.size() <= 3);
        for (const wire::RxFrame& f : burst) {
            REQUIRE(seen < sent.size());
            CHECK(std::vector<std::uint8_t>(f.data, f.data + f.len) == sent[seen]);
            CHECK(f.plane == seen % 3);
            CHECK(f.no_reply == (seen == 5));
            ++seen;
        }
    });
    CHECK(n == 8);
    CHECK(seen == 8);
    CHECK(x.stats(1).handed_in == 8);
    CHECK_FALSE(x.has_inbound(1));
    // Room again once drained.
    CHECK(x.hand_over(0, 1, data.view(), false));

    // A frame longer than a slot is refused and counted.
    std::vector<std::uint8_t> big(runtime::kExchangeFrameBytes + 1, 0);
    wire::RxFrame f{};
    f.data = big.data();
    f.len = static_cast<std::uint32_t>(big.size());
    CHECK_FALSE(x.hand_over(1, 0, f, false));
    CHECK(x.stats(1).dropped_too_large == 1);
}

TEST_CASE("frame_exchange__split: a header-split frame is handed over whole", "[workers]") {
    FrameExchange x(2, 4);
    const Frame data = sample(wire::Opcode::write_only);
    // Split as a driver with header split delivers it: headers in data, the payload elsewhere, the tail after.
    const std::uint32_t tail = 4;          // the ICRC (a 64-byte payload needs no pad)
    const std::uint32_t payload_len = 64;  // the sample's payload
    const std::uint32_t split = static_cast<std::uint32_t>(data.bytes.size()) - payload_len - tail;
    std::vector<std::uint8_t> head(data.bytes.begin(), data.bytes.begin() + split);
    head.insert(head.end(), data.bytes.end() - tail, data.bytes.end());
    std::vector<std::uint8_t> payload(data.bytes.begin() + split, data.bytes.end() - tail);
    wire::RxFrame f{};
    f.data = head.data();
    f.len = static_cast<std::uint32_t>(head.size());
    f.split = split;
    f.payload = payload.data();
    f.payload_len = payload_len;
    REQUIRE(f.frame_len() == data.bytes.size());
    REQUIRE(x.hand_over(0, 1, f, false));
    std::vector<wire::RxFrame> views(4);
    const std::size_t n = x.drain(1, views, 4, [&](std::span<const wire::RxFrame> burst) {
        REQUIRE(burst.size() == 1);
        CHECK(std::vector<std::uint8_t>(burst[0].data, burst[0].data + burst[0].len) == data.bytes);
        CHECK(burst[0].payload == nullptr);
    });
    CHECK(n == 1);
}
