// SPDX-License-Identifier: BSD-3-Clause
// The udp driver's steering for a device with several workers: the kernel
// gives each datagram (plain) or frame (raw) to the socket of the worker
// that owns its QP, by a classic BPF program on a socket group:
//
//   plain  every (plane, port) has one socket per queue, bound with
//          SO_REUSEPORT in queue order (queue q is index q of the port's
//          group); SO_ATTACH_REUSEPORT_CBPF runs the program on the UDP
//          payload, which starts with BTH.
//   raw    every interface has one AF_PACKET socket per queue in one
//          PACKET_FANOUT group (PACKET_FANOUT_CBPF, queue order); the
//          program runs on the frame from its IPv6 header, walks the outer
//          header, an SRH if any, the inner IPv6 header and UDP to BTH.
//
// What the program returns (an index past the group's sockets makes the
// kernel fall back to its hash):
//   a QP's frame              (DestQP >> 12) & mask: the shard the QPN names
//   an endpoint response      request id & mask (BTH.PSN[15:0]'s low bits)
//   an endpoint request       0 (the runtime shows every worker its copy)
//   a plain link self-probe   its one byte: the queue that sent it
// mask = 2^shard_bits − 1 for `queues` queues (core::shard_bits_for), the
// numbering of core::qpn_shard and core::request_id_shard. With
// `steering=spread` a frame goes to queue BTH.PSN % queues instead (the
// runtime hands it to its worker: software dispatch).
#include <linux/filter.h>
#include <linux/if_packet.h>

#include <vector>

#include "core/config.hpp"
#include "drivers/udp/udp_impl.hpp"
#include "wire/bth.hpp"

namespace omrc::udp {

namespace {

constexpr sock_filter stmt(std::uint16_t code, std::uint32_t k) { return {code, 0, 0, k}; }
constexpr sock_filter jump(std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
    return {code, jt, jf, k};
}

/// The shard of the BTH at X (BPF_IND loads) or at offset 0 (`ind` false);
/// spread: BTH.PSN % queues instead, whatever the frame.
void append_bth_steering(std::vector<sock_filter>& p, std::uint32_t mask, std::uint32_t queues, bool spread, bool ind) {
    const std::uint16_t ld_w = ind ? BPF_LD | BPF_W | BPF_IND : BPF_LD | BPF_W | BPF_ABS;
    const std::uint16_t ld_b = ind ? BPF_LD | BPF_B | BPF_IND : BPF_LD | BPF_B | BPF_ABS;
    if (spread) {
        p.push_back(stmt(ld_w, 8));  // flags | PSN
        p.push_back(stmt(BPF_ALU | BPF_AND | BPF_K, 0xFFFFFF));
        p.push_back(stmt(BPF_ALU | BPF_MOD | BPF_K, queues));
        p.push_back(stmt(BPF_RET | BPF_A, 0));
        return;
    }
    p.push_back(stmt(ld_w, 4));                                         // resv8 | DestQP
    p.push_back(stmt(BPF_ALU | BPF_AND | BPF_K, 0xFFFFFF));
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, wire::kEndpointQpn, 3, 0));
    p.push_back(stmt(BPF_ALU | BPF_RSH | BPF_K, core::kQpnShardShift));  // a QP's frame: its shard
    p.push_back(stmt(BPF_ALU | BPF_AND | BPF_K, mask));
    p.push_back(stmt(BPF_RET | BPF_A, 0));
    p.push_back(stmt(ld_b, 0));                                         // endpoint message: the opcode
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(wire::Opcode::ep_response), 0, 3));
    p.push_back(stmt(ld_w, 8));                                         // flags | PSN: the request id
    p.push_back(stmt(BPF_ALU | BPF_AND | BPF_K, mask));
    p.push_back(stmt(BPF_RET | BPF_A, 0));
    p.push_back(stmt(BPF_RET | BPF_K, 0));                              // a request: worker 0
}

std::vector<sock_filter> plain_program(std::uint32_t mask, std::uint32_t queues, bool spread) {
    std::vector<sock_filter> p;
    p.push_back(stmt(BPF_LD | BPF_W | BPF_LEN, 0));
    p.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, kMinDatagramBytes, 2, 0));
    p.push_back(stmt(BPF_LD | BPF_B | BPF_ABS, 0));  // a self-probe: the queue that sent it
    p.push_back(stmt(BPF_RET | BPF_A, 0));
    append_bth_steering(p, mask, queues, spread, false);
    return p;
}

std::vector<sock_filter> raw_program(std::uint32_t mask, std::uint32_t queues, bool spread) {
    constexpr std::uint32_t kIpv6 = 40, kUdp = 8, kSrhFixed = 8;
    std::vector<sock_filter> p;
    // X = offset of BTH: outer IPv6, [SRH], inner IPv6, UDP.
    p.push_back(stmt(BPF_LD | BPF_B | BPF_ABS, 6));  // the outer next header
    p.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, wire::kNextHeaderRouting, 0, 5));
    p.push_back(stmt(BPF_LD | BPF_B | BPF_ABS, kIpv6 + 1));  // SRH hdr_ext_len: 8-byte units past the first 8
    p.push_back(stmt(BPF_ALU | BPF_LSH | BPF_K, 3));
    p.push_back(stmt(BPF_ALU | BPF_ADD | BPF_K, kIpv6 + kSrhFixed + kIpv6 + kUdp));
    p.push_back(stmt(BPF_MISC | BPF_TAX, 0));
    p.push_back(jump(BPF_JMP | BPF_JA, 1, 0, 0));
    p.push_back(stmt(BPF_LDX | BPF_W | BPF_IMM, kIpv6 + kIpv6 + kUdp));  // no SRH: IPv6 in IPv6
    append_bth_steering(p, mask, queues, spread, true);
    return p;
}

}  // namespace

int UdpDriver::Impl::attach_steering(std::string& error) {
    if (cfg.queues <= 1) return 0;
    const std::uint32_t mask = (1u << core::shard_bits_for(cfg.queues)) - 1;
    std::vector<sock_filter> prog =
        raw ? raw_program(mask, cfg.queues, cfg.spread) : plain_program(mask, cfg.queues, cfg.spread);
    sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
    for (const Socket& s : sockets) {
        if (raw) {
            // The group's first member (queue 0) holds the program; the
            // others join it with the same fanout id and mode.
            if (cfg.queue == 0 && ::setsockopt(s.fd, SOL_PACKET, PACKET_FANOUT_DATA, &fprog, sizeof fprog) != 0) {
                error = fmt::format("plane {}: PACKET_FANOUT_DATA (steering by QP): {}", s.plane, std::strerror(errno));
                return errno;
            }
        } else if (cfg.queue == 0 &&
                   ::setsockopt(s.fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fprog, sizeof fprog) != 0) {
            error = fmt::format("port {}: SO_ATTACH_REUSEPORT_CBPF (steering by QP): {}", s.port, std::strerror(errno));
            return errno;
        }
    }
    return 0;
}

int UdpDriver::Impl::join_fanout(Socket& s, std::string& error) {
    // One group per interface: its index in the low 16 bits (unique per
    // interface among OpenMRC's groups), CBPF mode in the high ones.
    const int arg = (s.ifindex & 0xFFFF) | (PACKET_FANOUT_CBPF << 16);
    if (::setsockopt(s.fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg) != 0) {
        error = fmt::format("plane {}: PACKET_FANOUT: {}", s.plane, std::strerror(errno));
        return errno;
    }
    return 0;
}

driver::SteeringInfo UdpDriver::steering() const {
    if (impl_->cfg.queues <= 1) return {};
    return {impl_->cfg.spread ? driver::Steering::spread : driver::Steering::by_qpn,
            impl_->raw ? "fanout_cbpf" : "reuseport_cbpf"};
}

}  // namespace omrc::udp
