// SPDX-License-Identifier: BSD-3-Clause
// The udp driver: the datagram codec (EV ↔ ports and flow label, header
// rebuild), its arguments, drops by reason on real sockets, and a verbs
// transfer between two devices over ::1. The conformance suite
// (test_conformance.cpp) runs the common driver checks over it too.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "drivers/udp/udp.hpp"
#include "support/exchange_stats.hpp"
#include "support/verbs_net.hpp"
#include "unit/drivers/conformance.hpp"
#include "wire/ev.hpp"
#include "wire/frame.hpp"
#include "wire/sample_frames.hpp"

using namespace omrc;

namespace {

const wire::Ipv6Addr kLoopback{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

std::uint64_t steady_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

/// A plain sample frame addressed from `from` to `to` on `plane`, as a gather frame.
struct Owned {
    std::vector<std::uint8_t> bytes;
    wire::GatherFrame g;
};
/// `ev` = 0: the sample's EV moved to `plane`.
Owned frame_between(const udp::UdpDriver& from, const udp::UdpDriver& to, std::uint32_t plane, std::uint32_t ev = 0,
                    std::size_t sample = 0) {
    auto samples = wire::make_sample_frames();
    std::erase_if(samples, [](const wire::SampleFrame& s) { return s.spec.mode != wire::FrameMode::plain; });
    const wire::SampleFrame& s = samples.at(sample);
    wire::FrameSpec spec = s.spec;
    spec.eth.dst = to.macs()[plane];
    spec.eth.src = from.macs()[plane];
    spec.ip.src = from.address();
    spec.ip.dst = to.address();
    spec.ev = ev != 0 ? ev : (spec.ev & 0x0FFFFFFFu) | ((plane + 1) << 28);
    Owned o;
    o.bytes.resize(s.bytes.size() + 64);
    std::size_t len = 0;
    REQUIRE(wire::build_frame(o.bytes, spec, s.payload, len) == wire::WireError::ok);
    o.bytes.resize(len);
    const std::size_t h = wire::header_size(spec);
    std::copy_n(o.bytes.begin(), h, o.g.header.begin());
    o.g.header_len = static_cast<std::uint16_t>(h);
    o.g.segments[0] = {o.bytes.data() + h, static_cast<std::uint32_t>(len - h)};
    o.g.segment_count = 1;
    o.g.plane = static_cast<std::uint8_t>(plane);
    return o;
}

std::unique_ptr<udp::UdpDriver> open_driver(std::uint32_t planes = 1) {
    udp::UdpConfig c;
    c.planes.assign(planes, udp::PlaneEndpoint{kLoopback, 0});
    return test::conformance::open_driver<udp::UdpDriver>(c);
}

/// Polls `d` until `n` frames arrived or 2 s passed.
std::vector<std::vector<std::uint8_t>> receive(udp::UdpDriver& d, std::size_t n) {
    std::vector<std::vector<std::uint8_t>> got;
    std::vector<driver::RxFrame> rx(16);
    const std::uint64_t deadline = steady_ns() + 2'000'000'000;
    while (got.size() < n && steady_ns() < deadline) {
        const std::size_t k = d.rx_burst(rx, steady_ns());
        for (std::size_t i = 0; i < k; ++i) got.emplace_back(rx[i].data, rx[i].data + rx[i].len);
    }
    return got;
}

/// Sends raw bytes to port `port` of ::1 from a fresh socket bound to `from_port` (0: any).
void send_raw(std::uint16_t port, const std::vector<std::uint8_t>& bytes) {
    const int fd = ::socket(AF_INET6, SOCK_DGRAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in6 to{};
    to.sin6_family = AF_INET6;
    to.sin6_addr = in6addr_loopback;
    to.sin6_port = htons(port);
    CHECK(::sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) ==
          static_cast<ssize_t>(bytes.size()));
    ::close(fd);
}

/// Polls until `pred` holds or 2 s passed.
template <class Pred>
bool poll_until(udp::UdpDriver& d, Pred pred) {
    std::vector<driver::RxFrame> rx(16);
    const std::uint64_t deadline = steady_ns() + 2'000'000'000;
    while (!pred() && steady_ns() < deadline) (void)d.rx_burst(rx, steady_ns());
    return pred();
}

}  // namespace

// ---------------------------------------------------------------------------
// codec

TEST_CASE("udp codec: ev_to_ports / ev_from_ports round trip every EV of a plane", "[unit][udp]") {
    std::mt19937 rng(7);
    for (int i = 0; i < 100'000; ++i) {
        const std::uint32_t plane = rng() % 15;
        const std::uint32_t ev = ((plane + 1) << 28) | (rng() & 0x0FFFFFFFu);
        const udp::EvPorts p = udp::ev_to_ports(ev);
        CHECK(p.src_index < udp::kSocketsPerPlane);
        CHECK(p.dst_index < udp::kSocketsPerPlane);
        CHECK(p.flow_label <= 0xFFFFF);
        CHECK((p.flow_label & 0xFFFF) == wire::ev_to_flow_label(ev));  // the protocol's packing, kept
        const auto sport = static_cast<std::uint16_t>(48000 + p.src_index);
        const auto dport = static_cast<std::uint16_t>(14800 + p.dst_index);
        REQUIRE(udp::ev_from_ports(plane, sport, dport, p.flow_label) == ev);
    }
    CHECK(udp::ev_plane_ok(0x3000'0000u, 2));
    CHECK_FALSE(udp::ev_plane_ok(0x3000'0000u, 1));
    CHECK_FALSE(udp::ev_plane_ok(0x0000'1234u, 0));
}

TEST_CASE("udp codec: plane_mac / mac_base_port", "[unit][udp]") {
    const wire::MacAddr m = udp::plane_mac(14800, 3);
    CHECK(m == wire::MacAddr{0x02, 0x55, 0x39, 0xD0, 0x00, 0x03});
    std::uint16_t port = 0;
    CHECK(udp::mac_base_port(m, port));
    CHECK(port == 14800);
    CHECK_FALSE(udp::mac_base_port({0x02, 0x6d, 0x39, 0xD0, 0, 3}, port));  // not a udp MAC
    CHECK_FALSE(udp::mac_base_port(udp::plane_mac(14801, 0), port));      // unaligned block
    CHECK_FALSE(udp::mac_base_port(udp::plane_mac(0, 0), port));
}

TEST_CASE("udp codec: a rebuilt frame is the engine's frame, byte for byte", "[unit][udp]") {
    for (const wire::SampleFrame& s : wire::make_sample_frames()) {
        if (s.spec.mode != wire::FrameMode::plain) continue;
        INFO(s.name);
        for (std::uint32_t plane : {0u, 5u, 14u}) {
            wire::FrameSpec spec = s.spec;
            spec.ev = (spec.ev & 0x0FFFFFFFu) | ((plane + 1) << 28);
            spec.eth.src = udp::plane_mac(30000, plane);
            spec.eth.dst = udp::plane_mac(14800, plane);
            spec.ip.set_ecn(2);
            std::vector<std::uint8_t> frame(s.bytes.size() + 64);
            std::size_t len = 0;
            REQUIRE(wire::build_frame(frame, spec, s.payload, len) == wire::WireError::ok);
            frame.resize(len);
            wire::GatherFrame g;
            std::copy_n(frame.begin(), udp::kPlainHeaderBytes, g.header.begin());
            g.header_len = udp::kPlainHeaderBytes;
            g.segments[0] = {frame.data() + udp::kPlainHeaderBytes, static_cast<std::uint32_t>(len - udp::kPlainHeaderBytes)};
            g.segment_count = 1;
            g.plane = static_cast<std::uint8_t>(plane);

            udp::TxMeta tx;
            REQUIRE(udp::parse_tx(g, tx) == udp::TxParse::ok);
            CHECK(tx.dst == spec.ip.dst);
            CHECK(tx.src == spec.ip.src);
            CHECK(tx.traffic_class == spec.ip.traffic_class);
            std::vector<std::uint8_t> dgram(udp::kMaxDatagramBytes);
            const std::size_t n = udp::copy_udp_payload(g, dgram);
            REQUIRE(n == len - udp::kPlainHeaderBytes);
            CHECK(std::equal(dgram.begin(), dgram.begin() + static_cast<std::ptrdiff_t>(n),
                             frame.begin() + udp::kPlainHeaderBytes));

            // What the receiving socket reports, then the rebuild.
            udp::RxMeta rx;
            rx.plane = plane;
            rx.src = spec.ip.src;
            rx.dst = tx.dst;
            rx.src_port = static_cast<std::uint16_t>(30000 + tx.src_index);
            rx.dst_port = tx.dst_port;
            rx.traffic_class = tx.traffic_class;
            rx.flow_label = tx.flow_label;
            rx.hop_limit = tx.hop_limit;
            rx.local_mac = spec.eth.dst;
            std::vector<std::uint8_t> rebuilt(udp::kPlainHeaderBytes + n);
            udp::write_rx_headers(std::span<std::uint8_t, udp::kPlainHeaderBytes>(rebuilt.data(), udp::kPlainHeaderBytes),
                                  rx, n);
            std::copy_n(dgram.begin(), n, rebuilt.begin() + udp::kPlainHeaderBytes);
            CHECK(rebuilt == frame);
            wire::ParsedFrame pf;
            CHECK(wire::parse_frame(rebuilt, {}, pf) == wire::WireError::ok);
            CHECK(pf.ev == spec.ev);
        }
    }
}

TEST_CASE("udp codec: parse_tx rejects what it cannot send", "[unit][udp]") {
    auto samples = wire::make_sample_frames();
    const wire::SampleFrame* plain = nullptr;
    const wire::SampleFrame* srv6 = nullptr;
    for (const auto& s : samples) (s.spec.mode == wire::FrameMode::plain ? plain : srv6) = &s;
    REQUIRE(plain != nullptr);
    REQUIRE(srv6 != nullptr);
    auto gather = [](const wire::SampleFrame& s, wire::FrameSpec spec) {
        std::vector<std::uint8_t> f(s.bytes.size() + 64);
        std::size_t len = 0;
        REQUIRE(wire::build_frame(f, spec, s.payload, len) == wire::WireError::ok);
        wire::GatherFrame g;
        const std::size_t h = std::min(len, wire::GatherFrame::kMaxHeader);
        std::copy_n(f.begin(), h, g.header.begin());
        g.header_len = static_cast<std::uint16_t>(h);
        g.plane = 0;
        return g;
    };
    udp::TxMeta m;
    wire::FrameSpec spec = plain->spec;
    spec.ev = 0x1000'0000u | (spec.ev & 0x0FFFFFFFu);
    spec.eth.dst = udp::plane_mac(14800, 0);
    CHECK(udp::parse_tx(gather(*plain, spec), m) == udp::TxParse::ok);
    wire::FrameSpec wrong_mac = spec;
    wrong_mac.eth.dst = {0x02, 0x6d, 0, 0, 0, 1};
    CHECK(udp::parse_tx(gather(*plain, wrong_mac), m) == udp::TxParse::bad_peer_mac);
    wire::FrameSpec wrong_plane = spec;
    wrong_plane.ev = 0x2000'0000u | (spec.ev & 0x0FFFFFFFu);
    CHECK(udp::parse_tx(gather(*plain, wrong_plane), m) == udp::TxParse::ev_plane);
    wire::FrameSpec s6 = srv6->spec;
    s6.eth.dst = udp::plane_mac(14800, 0);
    CHECK(udp::parse_tx(gather(*srv6, s6), m) == udp::TxParse::bad_frame);
    wire::GatherFrame tiny;
    tiny.header_len = 20;
    CHECK(udp::parse_tx(tiny, m) == udp::TxParse::bad_frame);
    std::uint8_t out[8];
    CHECK(udp::copy_udp_payload(gather(*plain, spec), out) == 0);  // too small: nothing written
}

// ---------------------------------------------------------------------------
// arguments

TEST_CASE("udp args: parse_endpoint", "[unit][udp]") {
    udp::PlaneEndpoint e;
    REQUIRE(udp::parse_endpoint("[::1]:14800", e));
    CHECK(e.addr == kLoopback);
    CHECK(e.base_port == 14800);
    REQUIRE(udp::parse_endpoint("[fd00::2]", e));
    CHECK(e.addr[0] == 0xfd);
    CHECK(e.addr[15] == 2);
    CHECK(e.base_port == 0);
    REQUIRE(udp::parse_endpoint("::1", e));
    CHECK_FALSE(udp::parse_endpoint("[::1]:70000", e));
    CHECK_FALSE(udp::parse_endpoint("[::1]14800", e));
    CHECK_FALSE(udp::parse_endpoint("[::1", e));
    CHECK_FALSE(udp::parse_endpoint("127.0.0.1:5", e));
    CHECK_FALSE(udp::parse_endpoint("", e));
}

TEST_CASE("udp args: parse_args", "[unit][udp]") {
    using Args = std::map<std::string, std::string, std::less<>>;
    udp::UdpConfig c;
    std::string err;
    REQUIRE(udp::parse_args({}, 0, c, err) == 0);
    CHECK(c.planes.size() == 1);
    CHECK(c.planes[0].addr == kLoopback);
    CHECK(c.planes[0].base_port == 0);

    REQUIRE(udp::parse_args(Args{{"local", "[::1]:14800"}}, 4, c, err) == 0);
    REQUIRE(c.planes.size() == 4);
    CHECK(c.planes[3].base_port == 14800 + 3 * 16);

    REQUIRE(udp::parse_args(Args{{"local", "[::1]:14800,[::1]:20000"}, {"rx_depth", "8"}, {"tx_slots", "64"}}, 0, c, err) == 0);
    REQUIRE(c.planes.size() == 2);
    CHECK(c.planes[1].base_port == 20000);
    CHECK(c.rx_depth == 8);
    CHECK(c.tx_slots == 64);

    REQUIRE(udp::parse_args(Args{{"planes", "3"}}, 0, c, err) == 0);
    CHECK(c.planes.size() == 3);

    CHECK(udp::parse_args(Args{{"local", "[::1]:14801"}}, 0, c, err) == EINVAL);  // unaligned
    CHECK(udp::parse_args(Args{{"local", "[::1]:14800,[::2]:14816"}}, 0, c, err) == EINVAL);  // two addresses
    CHECK(udp::parse_args(Args{{"local", "[::1]:14800,[::1]:14800"}}, 0, c, err) == EINVAL);  // same block
    CHECK(udp::parse_args(Args{{"local", "[::]:14800"}}, 0, c, err) == EINVAL);  // wildcard
    CHECK(udp::parse_args(Args{{"local", "[::1]:14800"}}, 16, c, err) == EINVAL);  // > 15 planes
    CHECK(udp::parse_args(Args{{"local", "[::1]:65520"}}, 2, c, err) == EINVAL);   // runs past 65535
    CHECK(udp::parse_args(Args{{"local", "[::1]:14800,[::1]:14816"}}, 3, c, err) == EINVAL);  // too few
    CHECK(udp::parse_args(Args{{"rx_depth", "0"}}, 0, c, err) == EINVAL);
    CHECK(udp::parse_args(Args{{"tx_slots", "x"}}, 0, c, err) == EINVAL);
    CHECK(udp::parse_args(Args{{"endpoint", "1"}}, 0, c, err) == EINVAL);  // a loopback key
    CHECK(err.find("endpoint") != std::string::npos);
}

TEST_CASE("udp args: srv6 (raw) mode", "[unit][udp]") {
    using Args = std::map<std::string, std::string, std::less<>>;
    udp::UdpConfig c;
    std::string err;
    REQUIRE(udp::parse_args(Args{{"ifaces", "veth0,veth1"}}, 0, c, err, true) == 0);
    REQUIRE(c.raw());
    REQUIRE(c.ifaces.size() == 2);
    CHECK(c.ifaces[1] == "veth1");
    CHECK(c.planes.size() == 2);
    CHECK(c.planes[0].addr == wire::Ipv6Addr{});  // unset: the driver derives one
    CHECK(c.rx_depth == 32);
    CHECK(c.link_poll_us == 1000);
    REQUIRE(udp::parse_args(Args{{"ifaces", "a"}, {"local", "[fd00::7]"}, {"link_poll_us", "250"}}, 1, c, err, true) == 0);
    CHECK(c.planes[0].addr[15] == 7);
    CHECK(c.link_poll_us == 250);
    CHECK(udp::parse_args(Args{}, 0, c, err, true) == EINVAL);                                  // no ifaces
    CHECK(err.find("ifaces") != std::string::npos);
    CHECK(udp::parse_args(Args{{"ifaces", "a,,b"}}, 0, c, err, true) == EINVAL);                // empty name
    CHECK(udp::parse_args(Args{{"ifaces", "a,a"}}, 0, c, err, true) == EINVAL);                 // twice
    CHECK(udp::parse_args(Args{{"ifaces", "a"}}, 2, c, err, true) == EINVAL);                   // too few
    CHECK(udp::parse_args(Args{{"ifaces", "a"}, {"local", "[fd00::1]:14800"}}, 0, c, err, true) == EINVAL);  // port
    CHECK(udp::parse_args(Args{{"ifaces", "a"}, {"planes", "1"}}, 0, c, err, true) == EINVAL);  // plain-only key
    CHECK(udp::parse_args(Args{{"ifaces", "a"}}, 0, c, err, false) == EINVAL);                 // raw-only key
}

TEST_CASE("udp driver: srv6 mode needs CAP_NET_RAW and a real interface", "[unit][udp]") {
    udp::UdpConfig c;
    c.ifaces = {"omrc-nosuch0"};
    c.planes.assign(1, udp::PlaneEndpoint{});
    std::unique_ptr<udp::UdpDriver> d;
    std::string error;
    const int rc = udp::UdpDriver::open(c, d, error);
    // Root: the interface does not exist; anyone else: no AF_PACKET socket.
    CHECK(rc == (::geteuid() == 0 ? ENODEV : EPERM));
    CHECK(d == nullptr);
    CHECK(!error.empty());
    // Through the runtime: srv6 frame mode with "udp" and no ifaces is refused.
    DeviceOptions o;
    o.frame_mode = FrameMode::srv6;
    int err = 0;
    CHECK(Device::open("udp", o, &err) == nullptr);
    CHECK(err == EINVAL);
}

// ---------------------------------------------------------------------------
// the driver on real sockets

TEST_CASE("udp driver: ports in use and a fixed block", "[unit][udp]") {
    auto a = open_driver(2);
    CHECK(a->base_port(0) % udp::kSocketsPerPlane == 0);
    CHECK(a->base_port(1) % udp::kSocketsPerPlane == 0);
    CHECK(a->macs()[1] == udp::plane_mac(a->base_port(1), 1));
    udp::UdpConfig c;
    c.planes = {udp::PlaneEndpoint{kLoopback, a->base_port(1)}};
    std::unique_ptr<udp::UdpDriver> b;
    std::string error;
    CHECK(udp::UdpDriver::open(c, b, error) == EBUSY);  // the open contract's errno for a taken port
    CHECK(b == nullptr);
    CHECK(error.find(std::to_string(a->base_port(1))) != std::string::npos);
    // Through the registry: the same errno reaches Device::open's caller.
    DeviceOptions o;
    o.args["local"] = "[::1]:" + std::to_string(a->base_port(0));
    o.planes = 1;
    int err = 0;
    CHECK(Device::open("udp", o, &err) == nullptr);
    CHECK(err == EBUSY);
}

TEST_CASE("udp driver: every drop is counted by reason", "[unit][udp]") {
    auto a = open_driver(2);
    auto b = open_driver(2);
    const std::uint16_t port = b->base_port(0);

    SECTION("short datagram") {
        send_raw(port, std::vector<std::uint8_t>(udp::kMinDatagramBytes - 1, 0));
        CHECK(poll_until(*b, [&] { return b->udp_counters().rx_short == 1; }));
    }
    SECTION("truncated datagram") {
        send_raw(static_cast<std::uint16_t>(port + 5), std::vector<std::uint8_t>(udp::kMaxDatagramBytes + 100, 0));
        CHECK(poll_until(*b, [&] { return b->udp_counters().rx_truncated == 1; }));
    }
    SECTION("administratively down plane: tx and rx") {
        Owned o = frame_between(*a, *b, 1);
        b->set_admin_link(1, false);
        REQUIRE(a->tx_burst(std::span(&o.g, 1), steady_ns()) == 1);
        CHECK(poll_until(*b, [&] { return b->udp_counters().rx_link_down == 1; }));
        a->set_admin_link(1, false);
        REQUIRE(a->tx_burst(std::span(&o.g, 1), steady_ns()) == 1);
        CHECK(a->udp_counters().tx_link_down == 1);
        CHECK(a->stats().tx_dropped_link_down == 1);
    }
    SECTION("frames the driver cannot send") {
        Owned bad_mac = frame_between(*a, *b, 0);
        bad_mac.g.header[0] = 0x04;  // Ethernet destination no longer a udp MAC
        Owned bad_ev = frame_between(*a, *b, 0);
        bad_ev.g.plane = 1;          // EV names plane 0
        Owned bad_src = frame_between(*a, *b, 0);
        bad_src.g.header[14 + 8 + 15] = 2;  // IPv6 source ::2, not the device's ::1
        Owned bad_plane = frame_between(*a, *b, 0);
        bad_plane.g.plane = 7;
        std::vector<wire::GatherFrame> g{bad_mac.g, bad_ev.g, bad_plane.g, bad_src.g};
        REQUIRE(a->tx_burst(g, steady_ns()) == 4);
        const udp::UdpCounters c = a->udp_counters();
        CHECK(c.tx_bad_peer_mac == 1);
        CHECK(c.tx_ev_plane == 1);
        CHECK(c.tx_bad_plane == 1);
        CHECK(c.tx_bad_source == 1);
        CHECK(c.tx_frames == 0);
        CHECK(a->tx_release_count() == 4);
    }
    SECTION("driver counters are listed by name") {
        std::vector<std::pair<std::string, std::uint64_t>> named;
        b->counters(named);
        CHECK(named.size() > 20);
        CHECK(std::any_of(named.begin(), named.end(), [](const auto& kv) { return kv.first == "rx_truncated"; }));
    }
}

TEST_CASE("udp driver: a frame crosses every source and destination port index", "[unit][udp]") {
    auto a = open_driver(1);
    auto b = open_driver(1);
    // One EV per (destination index, source index) pair; flow labels include 0.
    std::vector<Owned> frames;
    for (std::uint32_t k = 0; k < 256; ++k)
        frames.push_back(frame_between(*a, *b, 0, 0x1000'0000u | (k << 20) | (k * 2654435761u & 0xFFFFFu)));
    std::vector<wire::GatherFrame> g;
    for (const Owned& o : frames) g.push_back(o.g);
    std::size_t sent = 0;
    std::vector<std::vector<std::uint8_t>> got;
    const std::uint64_t deadline = steady_ns() + 5'000'000'000;
    while ((sent < g.size() || got.size() < g.size()) && steady_ns() < deadline) {
        if (sent < g.size()) sent += a->tx_burst(std::span(g).subspan(sent), steady_ns());
        auto more = receive(*b, 1);
        got.insert(got.end(), more.begin(), more.end());
    }
    REQUIRE(got.size() == frames.size());
    std::vector<std::vector<std::uint8_t>> want;
    for (const Owned& o : frames) want.push_back(o.bytes);
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    CHECK(got == want);
    CHECK(b->udp_counters().rx_frames == 256);
    CHECK(a->udp_counters().tx_frames == 256);
}

// ---------------------------------------------------------------------------
// verbs over udp

TEST_CASE("udp verbs: WRITEs and a WRITE_WITH_IMM between two devices, byte-exact", "[unit][udp]") {
    using namespace omrc::test;
    std::unique_ptr<Device> dev[2];
    for (int i = 0; i < 2; ++i) {
        DeviceOptions o;
        o.args["local"] = "[::1]";
        o.planes = 4;
        o.seed = 100 + static_cast<std::uint64_t>(i);
        int err = -1;
        dev[i] = Device::open("udp", o, &err);
        REQUIRE(err == 0);
        REQUIRE(dev[i] != nullptr);
        CHECK(dev[i]->planes() == 4);
        CHECK(dev[i]->driver_name() == "udp");
    }
    const TransferSpec spec = imm_transfer_spec(8u << 20, 5, 0xC0FFEE);
    const TransferResult r = transfer(*dev[0], *dev[1], spec);
    check_transfer(r);
    check_immediate(r, 0xC0FFEE, spec.msg_bytes);
    const std::string stats = dev[1]->stats_json();
    CHECK(stats.find("\"name\":\"udp\"") != std::string::npos);
    CHECK(stats.find("rx_socket_overflow") != std::string::npos);
}

TEST_CASE("udp verbs: workers, a socket set each: the kernel steers by QP (or spreads), byte-exact", "[unit][udp]") {
    using namespace omrc::test;
    const std::uint32_t workers = GENERATE(2u, 4u);
    const std::string steering = GENERATE(std::string("qpn"), std::string("spread"));
    CAPTURE(workers, steering);
    std::unique_ptr<Device> dev[2];
    for (int i = 0; i < 2; ++i) {
        DeviceOptions o;
        o.args["local"] = "[::1]";
        o.args["steering"] = steering;
        o.planes = 2;
        o.seed = 200 + static_cast<std::uint64_t>(i);
        o.workers = workers;
        o.min_ev_timeout_ns = 50'000'000;  // time-shared CI cores
        o.worker_sleep_ns = 20'000;
        int err = -1;
        dev[i] = Device::open("udp", o, &err);
        REQUIRE(err == 0);
        REQUIRE(dev[i]->worker_threads());
    }
    // One transfer per worker: QPs are placed on the workers in turn, so transfer i runs on worker i of each.
    std::vector<std::unique_ptr<WriteTransfer>> t;
    for (std::uint32_t w = 0; w < workers; ++w) {
        TransferSpec spec = imm_transfer_spec(2u << 20, 10 + w, 0xAB00 + w);
        spec.qp.evs = 16;
        t.push_back(std::make_unique<WriteTransfer>(*dev[0], *dev[1], spec));
        REQUIRE(t.back()->result().setup_error == 0);
    }
    for (auto& x : t) {
        const TransferResult r = x->run();
        check_transfer(r);
        check_immediate(r, r.received.empty() ? 0 : r.received.front().imm_data, 64u << 10);
    }
    for (int i = 0; i < 2; ++i) {
        const ExchangeSums h = settled_exchange(*dev[i]);
        const nlohmann::json& s = h.stats;
        const std::uint64_t foreign = h.foreign, own = h.own;
        CHECK(s["device"]["steering"]["method"] == "reuseport_cbpf");
        for (const auto& w : s["device"]["per_worker"]) {
            CHECK(w["engine"]["rx_drops"]["no_qp"] == 0);
            CHECK(w["exchange"]["dropped_ring_full"] == 0);
        }
        CHECK(h.handed == h.foreign + h.copies);
        CAPTURE(own, foreign);
        if (steering == "qpn") CHECK(foreign == 0);  // the kernel put every frame on its QP's worker's socket
        // Spread by PSN, the receiver's data packets land on every socket and
        // are handed over (the sender's SACKs carry fewer PSNs).
        else if (i == 1) CHECK(foreign > own / 4);
    }
}
