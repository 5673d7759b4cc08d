// SPDX-License-Identifier: BSD-3-Clause
// The udp driver's SRv6 mode over raw (AF_PACKET) sockets, on veth pairs
// made by tests/udp_raw/run_udp_raw.sh (root): interface MACs and link state,
// drops by reason, our own sends not read back, and a verbs transfer between
// two devices in srv6 frame mode, byte-exact. The driver conformance suite
// runs over the same veths (udp_raw/conformance_udp_raw.cpp).
#include <catch2/catch.hpp>

#include <linux/if_packet.h>
#include <net/ethernet.h>

#include <chrono>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "omrc/verbs.hpp"
#include "support/verbs_net.hpp"
#include "udp_raw/udp_raw_env.hpp"
#include "wire/frame.hpp"
#include "wire/sample_frames.hpp"

using namespace omrc;

namespace {

std::uint64_t now_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

/// Writes `frame` onto interface `iface` as it is (a test-side AF_PACKET socket).
void inject(const std::string& iface, const std::vector<std::uint8_t>& frame) {
    const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_ll ll{};
    ll.sll_family = AF_PACKET;
    ll.sll_ifindex = static_cast<int>(::if_nametoindex(iface.c_str()));
    ll.sll_halen = 6;
    REQUIRE(ll.sll_ifindex != 0);
    const auto n = ::sendto(fd, frame.data(), frame.size(), 0, reinterpret_cast<const sockaddr*>(&ll), sizeof ll);
    ::close(fd);
    REQUIRE(n == static_cast<ssize_t>(frame.size()));
}

/// An engine sample frame addressed from `src` to `dst` (MACs), EV on plane `plane`.
std::vector<std::uint8_t> sample(const wire::MacAddr& src, const wire::MacAddr& dst, std::uint32_t plane, bool srv6) {
    for (const auto& s : wire::make_sample_frames()) {
        if ((s.spec.mode == wire::FrameMode::srv6) != srv6) continue;
        wire::FrameSpec spec = s.spec;
        spec.eth.src = src;
        spec.eth.dst = dst;
        spec.ev = (spec.ev & 0x0FFFFFFFu) | ((plane + 1) << 28);
        std::vector<std::uint8_t> out(s.bytes.size() + 64);
        std::size_t len = 0;
        REQUIRE(wire::build_frame(out, spec, s.payload, len) == wire::WireError::ok);
        out.resize(len);
        return out;
    }
    FAIL("no sample frame");
    return {};
}

wire::GatherFrame as_gather(const std::vector<std::uint8_t>& f, std::uint32_t plane) {
    wire::GatherFrame g;
    const std::size_t h = std::min<std::size_t>(64, f.size());
    std::copy_n(f.begin(), h, g.header.begin());
    g.header_len = static_cast<std::uint16_t>(h);
    g.segments[0] = {f.data() + h, static_cast<std::uint32_t>(f.size() - h)};
    g.segment_count = 1;
    g.plane = static_cast<std::uint8_t>(plane);
    return g;
}

std::vector<std::vector<std::uint8_t>> receive(udp::UdpDriver& d, std::size_t n, int ms = 500) {
    std::vector<std::vector<std::uint8_t>> got;
    std::vector<driver::RxFrame> rx(16);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (got.size() < n && std::chrono::steady_clock::now() < until) {
        const std::size_t k = d.rx_burst(rx, now_ns());
        for (std::size_t i = 0; i < k; ++i) got.emplace_back(rx[i].data, rx[i].data + rx[i].len);
    }
    return got;
}

}  // namespace

TEST_CASE("udp raw: MACs are the interfaces', unknown interfaces and bad frames are refused", "[udp_raw]") {
    REQUIRE(test::wait_all_running(2));
    std::unique_ptr<udp::UdpDriver> a, b;
    std::string error;
    INFO(error);
    REQUIRE(test::open_raw_driver(0, 2, a, error) == 0);
    REQUIRE(test::open_raw_driver(1, 2, b, error) == 0);
    CHECK(a->raw());
    CHECK(a->planes() == 2);
    CHECK(a->macs()[0] != b->macs()[0]);
    CHECK(a->macs()[0] != a->macs()[1]);
    CHECK(a->macs()[0] != wire::MacAddr{});
    CHECK(a->macs()[2] == wire::MacAddr{});
    // No address given: fd00::<plane 0 MAC>.
    CHECK(a->address()[0] == 0xfd);
    const auto macs = a->macs();
    CHECK(std::equal(macs[0].begin(), macs[0].end(), a->address().begin() + 10));
    CHECK(a->link_up(0));
    CHECK(a->link_up(1));

    udp::UdpConfig c;
    c.ifaces = {"omrc-nosuch0"};
    c.planes.assign(1, udp::PlaneEndpoint{});
    std::unique_ptr<udp::UdpDriver> none;
    CHECK(udp::UdpDriver::open(c, none, error) == ENODEV);
    CHECK(error.find("omrc-nosuch0") != std::string::npos);

    // Not Ethernet + IPv6: counted, accepted (consumed), not sent.
    std::vector<std::uint8_t> arp(60, 0);
    arp[12] = 0x08;
    arp[13] = 0x06;
    const wire::GatherFrame g = as_gather(arp, 0);
    CHECK(a->tx_burst(std::span(&g, 1), now_ns()) == 1);
    CHECK(a->udp_counters().tx_bad_frame == 1);
    CHECK(a->udp_counters().tx_frames == 0);
    // Larger than a receive buffer.
    auto big = sample(a->macs()[0], b->macs()[0], 0, true);
    big.resize(udp::kRawMaxFrameBytes + 1);
    const wire::GatherFrame gb = as_gather(big, 0);
    CHECK(a->tx_burst(std::span(&gb, 1), now_ns()) == 1);
    CHECK(a->udp_counters().tx_too_large == 1);
    CHECK(a->tx_release_count() == 2);
}

TEST_CASE("udp raw: every dropped receive is counted by reason, own sends are not read back", "[udp_raw]") {
    REQUIRE(test::wait_all_running(1));
    std::unique_ptr<udp::UdpDriver> a, b;
    std::string error;
    INFO(error);
    REQUIRE(test::open_raw_driver(0, 1, a, error) == 0);
    REQUIRE(test::open_raw_driver(1, 1, b, error) == 0);
    const std::string peer = test::raw_ifaces(1)[0];  // frames written here arrive at A
    const wire::MacAddr ma = a->macs()[0], mb = b->macs()[0];
    const auto good = sample(mb, ma, 0, true);

    auto multicast = good;  // an MLD/ND-like destination 33:33:..
    multicast[0] = 0x33;
    multicast[1] = 0x33;
    auto other = good;      // unicast to someone else
    other[5] ^= 0x5a;
    auto icmp = good;       // ICMPv6 to our MAC (neighbour solicitation and the like)
    icmp[20] = 58;
    auto hbh = good;        // hop-by-hop (MLD)
    hbh[20] = 0;
    std::vector<std::uint8_t> shorty(good.begin(), good.begin() + 30);
    for (const std::vector<std::uint8_t>* f : std::initializer_list<const std::vector<std::uint8_t>*>{
             &multicast, &other, &icmp, &hbh, &shorty, &good})
        inject(peer, *f);
    const auto got = receive(*a, 1);
    REQUIRE(got.size() == 1);
    CHECK(got[0] == good);
    // The drops were read before the good frame (one socket, in order).
    const auto c = a->udp_counters();
    CHECK(c.rx_multicast == 1);
    CHECK(c.rx_other_mac == 1);
    CHECK(c.rx_kernel_noise == 2);
    CHECK(c.rx_short == 1);
    CHECK(c.rx_frames == 1);

    // A's own send reaches B and is not read back by A.
    const auto to_b = sample(ma, mb, 0, false);
    const wire::GatherFrame g = as_gather(to_b, 0);
    REQUIRE(a->tx_burst(std::span(&g, 1), now_ns()) == 1);
    const auto at_b = receive(*b, 1);
    REQUIRE(at_b.size() == 1);
    CHECK(at_b[0] == to_b);
    CHECK(receive(*a, 1, 50).empty());
    CHECK(a->udp_counters().rx_outgoing == 0);
    CHECK(a->udp_counters().rx_frames == 1);

    std::vector<std::pair<std::string, std::uint64_t>> kv;
    a->counters(kv);
    bool listed = false;
    for (const auto& [k, v] : kv) listed = listed || (k == "rx_kernel_noise" && v == 2);
    CHECK(listed);
}

TEST_CASE("udp raw: interface down and up become link events; sends on a down plane are dropped", "[udp_raw]") {
    REQUIRE(test::wait_all_running(2));
    std::unique_ptr<udp::UdpDriver> a, b;
    std::string error;
    INFO(error);
    REQUIRE(test::open_raw_driver(0, 2, a, error, 1000) == 0);  // the default poll period
    REQUIRE(test::open_raw_driver(1, 2, b, error, 1000) == 0);
    std::vector<driver::LinkEvent> ev(8);
    (void)a->rx_burst({}, now_ns());
    CHECK(a->poll_link_events(ev) == 0);
    const std::string b1 = test::raw_ifaces(1)[1];
    // Downing B's end takes the carrier of A's end away: A sees IFF_RUNNING drop.
    REQUIRE(test::set_iface(b1, false));
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (a->link_up(1) && std::chrono::steady_clock::now() < until) (void)a->rx_burst({}, now_ns());
    CHECK_FALSE(a->link_up(1));
    CHECK(a->link_up(0));
    REQUIRE(a->poll_link_events(ev) == 1);
    CHECK(ev[0].plane == 1);
    CHECK_FALSE(ev[0].up);
    const auto f = sample(a->macs()[1], b->macs()[1], 1, true);
    const wire::GatherFrame g = as_gather(f, 1);
    CHECK(a->tx_burst(std::span(&g, 1), now_ns()) == 1);
    CHECK(a->stats().tx_dropped_link_down == 1);
    REQUIRE(test::set_iface(b1, true));
    while (!a->link_up(1) && std::chrono::steady_clock::now() < until + std::chrono::seconds(5))
        (void)a->rx_burst({}, now_ns());
    CHECK(a->link_up(1));
    REQUIRE(a->poll_link_events(ev) == 1);
    CHECK(ev[0].up);
    // The plane carries frames again.
    REQUIRE(test::wait_all_running(2));
    CHECK(a->tx_burst(std::span(&g, 1), now_ns()) == 1);
    const auto got = receive(*b, 1, 2000);
    REQUIRE(got.size() == 1);
    CHECK(got[0] == f);
}

TEST_CASE("udp raw verbs: WRITEs and a WRITE_WITH_IMM between two srv6 devices over veths, byte-exact", "[udp_raw]") {
    using namespace omrc::test;
    constexpr std::uint32_t kPlanes = 4;
    REQUIRE(wait_all_running(kPlanes));
    std::unique_ptr<Device> dev[2];
    for (int i = 0; i < 2; ++i) {
        const auto names = raw_ifaces(i);
        REQUIRE(names.size() >= kPlanes);
        DeviceOptions o;
        o.args["ifaces"] = names[0] + "," + names[1] + "," + names[2] + "," + names[3];
        o.planes = kPlanes;
        o.frame_mode = FrameMode::srv6;
        o.fabric = {0xFCBB0000, kPlanes, 2, 2, 1};
        o.local_host = static_cast<std::uint32_t>(i);
        o.local_addr = {0xfd, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, static_cast<std::uint8_t>(0xa0 + i)};
        o.seed = 200 + static_cast<std::uint64_t>(i);
        int err = -1;
        dev[i] = Device::open("udp", o, &err);
        REQUIRE(err == 0);
        REQUIRE(dev[i] != nullptr);
        CHECK(dev[i]->planes() == kPlanes);
    }
    TransferSpec spec = imm_transfer_spec(16u << 20, 7, 0xBEEF);
    spec.timeout = std::chrono::seconds(90);
    const TransferResult r = transfer(*dev[0], *dev[1], spec);
    check_transfer(r);
    check_immediate(r, 0xBEEF, spec.msg_bytes);
    const std::string stats = dev[1]->stats_json();
    INFO(stats);
    CHECK(stats.find("\"name\":\"udp\"") != std::string::npos);
    CHECK(stats.find("rx_kernel_noise") != std::string::npos);
}

TEST_CASE("udp raw verbs: two workers per srv6 device, a fanout group per interface steering by QP, byte-exact",
          "[udp_raw]") {
    using namespace omrc::test;
    constexpr std::uint32_t kPlanes = 2;
    REQUIRE(wait_all_running(kPlanes));
    const std::string steering = GENERATE(std::string("qpn"), std::string("spread"));
    CAPTURE(steering);
    std::unique_ptr<Device> dev[2];
    for (int i = 0; i < 2; ++i) {
        const auto names = raw_ifaces(i);
        REQUIRE(names.size() >= kPlanes);
        DeviceOptions o;
        o.args["ifaces"] = names[0] + "," + names[1];
        o.args["steering"] = steering;
        o.planes = kPlanes;
        o.frame_mode = FrameMode::srv6;
        o.fabric = {0xFCBB0000, kPlanes, 2, 2, 1};
        o.local_host = static_cast<std::uint32_t>(i);
        o.local_addr = {0xfd, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, static_cast<std::uint8_t>(0xa0 + i)};
        o.seed = 300 + static_cast<std::uint64_t>(i);
        o.workers = 2;
        o.min_ev_timeout_ns = 50'000'000;
        o.worker_sleep_ns = 20'000;
        int err = -1;
        dev[i] = Device::open("udp", o, &err);
        REQUIRE(err == 0);
        REQUIRE(dev[i] != nullptr);
    }
    for (std::uint32_t w = 0; w < 2; ++w) {
        TransferSpec spec = imm_transfer_spec(4u << 20, 20 + w, 0xCAFE + w);
        spec.timeout = std::chrono::seconds(90);
        const TransferResult r = transfer(*dev[0], *dev[1], spec);
        check_transfer(r);
        check_immediate(r, 0xCAFE + w, spec.msg_bytes);
    }
    const auto s = nlohmann::json::parse(dev[1]->stats_json());
    CHECK(s["device"]["steering"]["method"] == "fanout_cbpf");
    std::uint64_t foreign = 0, own = 0;
    // (rx_drops.no_qp is not checked here: late frames of the devices of the
    // case before, on the same veths, find no QP.)
    for (const auto& w : s["device"]["per_worker"]) {
        foreign += w["exchange"]["rx_foreign"].get<std::uint64_t>();
        own += w["exchange"]["rx_own"].get<std::uint64_t>();
    }
    CAPTURE(own, foreign);
    if (steering == "qpn") CHECK(foreign == 0);
    else CHECK(foreign > own / 4);
}
