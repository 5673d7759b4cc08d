// SPDX-License-Identifier: BSD-3-Clause
// Checks the Linux SRv6 routers of the fabric test on their own, before any
// OpenMRC endpoint is attached: builds one OpenMRC SRv6 WRITE frame with the
// library's own codec and uSID template (what the engine would send on that
// EV), writes it on one host port with an AF_PACKET socket and waits for it
// on the other host's port. The frame must arrive with the outer destination
// shifted down to the receiving NIC's address (fcbb:0:<host port uSID>::),
// the hop limit lowered once per router, and everything else OpenMRC checks
// (inner headers, EV, payload, ICRC) untouched.
//
//   fabric_probe --send-if h0p0 --recv-if h1p0 --src-host 0 --dst-host 1
//                --plane 0 --path 1 --next-hop-mac 02:0f:00:10:00:00 [--expect-drop]
//
// Exit status: 0 as expected, 1 not as expected, 2 usage or socket errors.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "routing/fabric.hpp"
#include "wire/frame.hpp"

namespace {

using omrc::wire::Ipv6Addr;
using omrc::wire::MacAddr;

std::string addr_str(const Ipv6Addr& a) {
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, a.data(), buf, sizeof buf);
    return buf;
}

bool parse_mac(const std::string& s, MacAddr& out) {
    unsigned b[6];
    char tail = 0;
    if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
        return false;
    for (int i = 0; i < 6; ++i) out[i] = static_cast<std::uint8_t>(b[i]);
    return true;
}

/// A raw socket bound to one interface; returns -1 and prints why on failure.
int open_port(const std::string& ifname, int& ifindex, MacAddr& mac) {
    const int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (fd < 0) {
        std::perror("fabric_probe: socket(AF_PACKET)");
        return -1;
    }
    ifreq ifr{};
    std::snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname.c_str());
    if (ioctl(fd, SIOCGIFINDEX, &ifr) != 0) {
        std::fprintf(stderr, "fabric_probe: no interface %s: %s\n", ifname.c_str(), std::strerror(errno));
        close(fd);
        return -1;
    }
    ifindex = ifr.ifr_ifindex;
    if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) {
        std::perror("fabric_probe: SIOCGIFHWADDR");
        close(fd);
        return -1;
    }
    std::memcpy(mac.data(), ifr.ifr_hwaddr.sa_data, 6);
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = ifindex;
    if (bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
        std::perror("fabric_probe: bind");
        close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Send one OpenMRC SRv6 frame across the Linux uSID fabric and check what arrives"};
    std::string send_if, recv_if, nh_mac_text;
    std::uint32_t src_host = 0, dst_host = 1, plane = 0, path = 0;
    omrc::routing::FabricDesc fabric{0xFCBB0000, 2, 2, 2, 1};
    bool expect_drop = false;
    int timeout_ms = 1000;
    app.add_option("--send-if", send_if, "host port the frame leaves on")->required();
    app.add_option("--recv-if", recv_if, "host port it must arrive on")->required();
    app.add_option("--src-host", src_host, "sending host index");
    app.add_option("--dst-host", dst_host, "receiving host index");
    app.add_option("--plane", plane, "plane of the EV");
    app.add_option("--path", path, "path field of the EV (T1 = path modulo T1 count)");
    app.add_option("--next-hop-mac", nh_mac_text, "Ethernet destination: the T0's port MAC")->required();
    app.add_option("--planes", fabric.planes);
    app.add_option("--t0", fabric.t0_per_plane);
    app.add_option("--t1", fabric.t1_per_plane);
    app.add_option("--hosts-per-t0", fabric.hosts_per_t0);
    app.add_option("--timeout-ms", timeout_ms);
    app.add_flag("--expect-drop", expect_drop, "pass when the frame does not arrive");
    CLI11_PARSE(app, argc, argv);

    MacAddr nh_mac{};
    if (!parse_mac(nh_mac_text, nh_mac)) {
        std::fprintf(stderr, "fabric_probe: bad MAC %s\n", nh_mac_text.c_str());
        return 2;
    }
    if (const std::string e = fabric.validate(); !e.empty() || plane >= fabric.planes) {
        std::fprintf(stderr, "fabric_probe: bad layout or plane: %s\n", e.c_str());
        return 2;
    }
    omrc::routing::UsidTemplate tmpl;
    if (omrc::routing::UsidTemplate::make(fabric, src_host, dst_host, tmpl) != omrc::wire::WireError::ok) {
        std::fprintf(stderr, "fabric_probe: hosts out of range\n");
        return 2;
    }

    int send_index = 0, recv_index = 0;
    MacAddr send_mac{}, recv_mac{};
    const int tx = open_port(send_if, send_index, send_mac);
    const int rx = open_port(recv_if, recv_index, recv_mac);
    if (tx < 0 || rx < 0) return 2;

    // The frame the engine would send on this EV: a WRITE_ONLY with a random
    // payload that also tells our frame apart from anything else on the port.
    std::mt19937_64 rng(std::random_device{}());
    const auto salt = static_cast<std::uint16_t>(rng());
    omrc::wire::FrameSpec s;
    s.mode = omrc::wire::FrameMode::srv6;
    s.eth.src = send_mac;
    s.eth.dst = nh_mac;
    s.ev = omrc::routing::make_ev(plane, path, salt);
    s.ip.src = Ipv6Addr{0xfd, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, static_cast<std::uint8_t>(0xa0 + src_host)};
    s.ip.dst = Ipv6Addr{0xfd, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, static_cast<std::uint8_t>(0xa0 + dst_host)};
    s.ip.set_dscp(omrc::wire::kDscpData);
    s.outer = s.ip;
    s.outer.set_ecn(2);
    s.outer.dst = tmpl.apply(s.ev);
    s.bth.opcode = omrc::wire::Opcode::write_only;
    s.bth.dest_qp = 0x100;
    s.bth.psn = static_cast<std::uint32_t>(rng() & 0xFFFFFF);
    s.bth.ack_req = true;
    s.meth = {0, 1};
    s.reth = {0x7f0000000000ull, 0x1234, 256};
    std::vector<std::uint8_t> payload(256);
    for (auto& b : payload) b = static_cast<std::uint8_t>(rng());
    std::vector<std::uint8_t> frame(omrc::wire::header_size(s) + payload.size() + 8);
    std::size_t len = 0;
    if (omrc::wire::build_frame(frame, s, payload, len) != omrc::wire::WireError::ok) {
        std::fprintf(stderr, "fabric_probe: build_frame failed\n");
        return 2;
    }
    frame.resize(len);
    const Ipv6Addr sent_da = s.outer.dst;
    const Ipv6Addr want_da = omrc::routing::nic_usid_address(fabric, dst_host, plane);
    const int routers = tmpl.crosses_t1() ? 3 : 1;

    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = send_index;
    to.sll_halen = 6;
    std::memcpy(to.sll_addr, nh_mac.data(), 6);
    if (sendto(tx, frame.data(), frame.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) !=
        static_cast<ssize_t>(frame.size())) {
        std::perror("fabric_probe: sendto");
        return 2;
    }

    const std::string what = "plane " + std::to_string(plane) + " path " + std::to_string(path) + " (T1 " +
                             std::to_string(path % fabric.t1_per_plane) + ") " + send_if + " -> " + recv_if;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::vector<std::uint8_t> buf(16384);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd pfd{rx, POLLIN, 0};
        if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
        sockaddr_ll from{};
        socklen_t flen = sizeof from;
        const ssize_t n = recvfrom(rx, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &flen);
        if (n <= 0 || from.sll_pkttype == PACKET_OUTGOING) continue;
        omrc::wire::ParsedFrame got;
        const auto err = omrc::wire::parse_frame(std::span(buf.data(), static_cast<std::size_t>(n)), {}, got);
        // Other traffic (router ND/MLD) is skipped; ours is recognised by EV and PSN.
        if (err != omrc::wire::WireError::ok || got.mode != omrc::wire::FrameMode::srv6 || got.ev != s.ev ||
            got.bth.psn != s.bth.psn)
            continue;
        if (expect_drop) {
            std::printf("FAIL %s: arrived, but the path should be down\n", what.c_str());
            return 1;
        }
        std::vector<std::string> bad;
        if (got.outer.dst != want_da) bad.push_back("outer DA " + addr_str(got.outer.dst) + ", want " + addr_str(want_da));
        if (got.outer.hop_limit != s.outer.hop_limit - routers)
            bad.push_back("hop limit " + std::to_string(got.outer.hop_limit) + ", want " +
                          std::to_string(s.outer.hop_limit - routers));
        if (got.eth.dst != recv_mac) bad.push_back("Ethernet destination is not the receiving port's MAC");
        if (got.ip.src != s.ip.src || got.ip.dst != s.ip.dst || got.ip.hop_limit != s.ip.hop_limit)
            bad.push_back("inner IPv6 header changed");
        if (got.outer.src != s.outer.src) bad.push_back("outer source changed");
        if (!std::equal(got.payload.begin(), got.payload.end(), payload.begin(), payload.end()))
            bad.push_back("payload changed");
        if (got.reth.va != s.reth.va || got.bth.dest_qp != s.bth.dest_qp) bad.push_back("transport headers changed");
        if (!bad.empty()) {
            std::printf("FAIL %s:", what.c_str());
            for (const auto& b : bad) std::printf(" %s;", b.c_str());
            std::printf("\n");
            return 1;
        }
        std::printf("ok   %s: DA %s -> %s, hop limit %u -> %u, EV 0x%08x, ICRC valid\n", what.c_str(),
                    addr_str(sent_da).c_str(), addr_str(got.outer.dst).c_str(), s.outer.hop_limit,
                    got.outer.hop_limit, got.ev);
        return 0;
    }
    if (expect_drop) {
        std::printf("ok   %s: DA %s dropped, as expected\n", what.c_str(), addr_str(sent_da).c_str());
        return 0;
    }
    std::printf("FAIL %s: DA %s: nothing arrived within %d ms\n", what.c_str(), addr_str(sent_da).c_str(), timeout_ms);
    return 1;
}
