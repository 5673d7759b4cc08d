// SPDX-License-Identifier: BSD-3-Clause
// Connection requests from forged addresses (fault row 25, bench/cm_cost):
// whole CM frames (docs/PROTOCOL.md §13) whose REQ names a random source
// address, connection id, QPN and PSN, with a guessed cookie or none, sent
// to one device's planes from a raw port of a loopback fabric. Free of the
// test framework, so benchmarks use it too.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "drivers/loopback/loopback.hpp"
#include "omrc/verbs.hpp"
#include "wire/cm_msg.hpp"
#include "wire/frame.hpp"

namespace omrc::test {

/// One forged REQ frame from fabric endpoint `from_endpoint` to `target` on
/// `plane` (answers come back to that endpoint's MACs). Throws
/// std::logic_error if the codec refuses it (a bug here).
inline std::vector<std::uint8_t> forged_req_frame(std::mt19937_64& rng, const DeviceAddress& target,
                                                  std::uint64_t service_id, std::uint32_t from_endpoint,
                                                  std::uint8_t plane, bool guessed_cookie) {
    wire::CmMessage m;
    m.type = wire::CmType::req;
    m.src_comm_id = static_cast<std::uint32_t>(rng()) | 1u;
    m.service_id = service_id;
    m.qpn = static_cast<std::uint32_t>(rng()) & 0xFFFFFFu;
    m.psn = static_cast<std::uint32_t>(rng()) & 0xFFFFFFu;
    m.mtu = 4096;
    m.conn_id = static_cast<std::uint16_t>(rng());
    if (guessed_cookie)
        for (auto& b : m.cookie) b = static_cast<std::uint8_t>(rng());
    m.planes = static_cast<std::uint8_t>(target.planes);
    for (std::uint32_t p = 0; p < target.planes; ++p) m.macs[p] = loopback::Fabric::mac(from_endpoint, p);
    std::array<std::uint8_t, wire::kCmMaxMessage + 4> payload{};
    std::size_t len = 0;
    if (m.encode(payload, len) != wire::WireError::ok) throw std::logic_error("forged REQ: encode");
    len += (4 - len % 4) % 4;  // the frame's pad, zeros
    wire::FrameSpec s;
    s.eth.src = loopback::Fabric::mac(from_endpoint, plane);
    s.eth.dst = target.macs[plane];
    for (auto& b : s.ip.src) b = static_cast<std::uint8_t>(rng());  // a different forged source each time
    s.ip.src[0] = 0xfd;
    s.ip.dst = target.addr;
    s.ip.hop_limit = 64;
    s.ev = static_cast<std::uint32_t>(rng()) & 0x0FFF'FFFFu;
    s.bth.opcode = wire::Opcode::cm;
    s.bth.dest_qp = wire::kCmQpn;
    std::vector<std::uint8_t> f(len + 256);
    std::size_t flen = 0;
    if (wire::build_frame(f, s, std::span(payload.data(), len), flen) != wire::WireError::ok)
        throw std::logic_error("forged REQ: build_frame");
    f.resize(flen);
    return f;
}

/// Sends `frame` from a raw loopback port on `plane`; true when accepted.
inline bool send_raw(driver::Driver& port, const std::vector<std::uint8_t>& frame, std::uint8_t plane,
                     std::uint64_t now_ns) {
    wire::GatherFrame g;
    g.plane = plane;
    g.header_len = 0;
    g.segment_count = 1;
    g.segments[0] = {frame.data(), static_cast<std::uint32_t>(frame.size())};
    g.tail_len = 0;
    return port.tx_burst(std::span(&g, 1), now_ns) == 1;
}

}  // namespace omrc::test
