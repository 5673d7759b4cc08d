// SPDX-License-Identifier: BSD-3-Clause
// Engine-level test setup shared by the harnesses: endpoint addresses and
// connecting a QP pair RESET→INIT→RTR→RTS with attributes exchanged in process.
#pragma once

#include <array>
#include <stdexcept>
#include <utility>

#include "core/engine.hpp"

namespace omrc::test {

/// Inner IPv6 address of test endpoint i: fd00:6f6d::(i+1).
inline wire::Ipv6Addr endpoint_addr(std::uint32_t i) {
    wire::Ipv6Addr a{0xfd, 0x00, 0x6f, 0x6d};
    a[15] = static_cast<std::uint8_t>(i + 1);
    return a;
}

/// One end of a connection: its engine, endpoint index, MAC per plane.
struct EngineEnd {
    core::Engine* engine;
    std::uint32_t endpoint;
    core::PlaneMacs macs;
};

/// Creates one QP on each end and connects them; `psn_x` / `psn_y` are the
/// first PSNs each end sends, `attr_x` / `attr_y` each end's attributes
/// (path, MTU, window, CC). Returns {qpn at x, qpn at y}.
inline std::pair<std::uint32_t, std::uint32_t> connect_engines(const EngineEnd& x, const EngineEnd& y,
                                                               std::uint32_t psn_x, std::uint32_t psn_y,
                                                               const core::QpAttr& attr_x, const core::QpAttr& attr_y,
                                                               const core::QpCaps& caps, core::TimeNs now,
                                                               bool y_to_rts = true) {
    const EngineEnd* ends[2] = {&x, &y};
    const core::QpAttr* attrs[2] = {&attr_x, &attr_y};
    const std::uint32_t first_psn[2] = {psn_x, psn_y};
    std::uint32_t qpn[2];
    for (int i = 0; i < 2; ++i) {
        qpn[i] = ends[i]->engine->submit(core::CmdCreateQp{caps}, now).qpn;
        core::QpAttr init{};
        init.access_flags = core::kAccessRemoteWrite | core::kAccessRemoteRead | core::kAccessLocalWrite;
        init.pd = 1;
        ends[i]->engine->submit(core::CmdModifyQp{qpn[i], core::QpState::init, init, core::kAttrAccess}, now);
    }
    for (int i = 0; i < 2; ++i) {
        const EngineEnd& peer = *ends[1 - i];
        core::QpAttr a = *attrs[i];
        a.dest_qp_num = qpn[1 - i];
        a.dest_conn_id = peer.engine->qp_info(qpn[1 - i]).conn_id;
        a.rq_psn = first_psn[1 - i];
        a.sq_psn = first_psn[i];
        a.peer_addr = endpoint_addr(peer.endpoint);
        a.peer_host = peer.endpoint;
        a.peer_macs = peer.macs;
        const std::uint32_t rtr = core::kAttrDestQpn | core::kAttrRqPsn | core::kAttrPath | core::kAttrMtu | core::kAttrMpr |
                                   core::kAttrMinRnrTimer | core::kAttrMaxDestRdAtomic;
        const std::uint32_t rts = core::kAttrSqPsn | core::kAttrTimeout | core::kAttrRetryCnt | core::kAttrCc |
                                  core::kAttrRnrRetry | core::kAttrMaxRdAtomic;
        // Encrypted QPs (docs/PROTOCOL.md §12) set their security attributes at RTR too.
        const std::uint32_t rtr_mask = a.encrypt ? rtr | core::kAttrSecurity : rtr;
        if (ends[i]->engine->submit(core::CmdModifyQp{qpn[i], core::QpState::rtr, a, rtr_mask}, now).err != 0)
            throw std::runtime_error("modify to RTR failed");
        if (i == 1 && !y_to_rts) continue;  // y stays in RTR (a passive responder, as perftest's servers)
        if (ends[i]->engine->submit(core::CmdModifyQp{qpn[i], core::QpState::rts, a, rts}, now).err != 0)
            throw std::runtime_error("modify to RTS failed");
    }
    return {qpn[0], qpn[1]};
}

/// Both ends with the same attributes.
inline std::pair<std::uint32_t, std::uint32_t> connect_engines(const EngineEnd& x, const EngineEnd& y,
                                                               std::uint32_t psn_x, std::uint32_t psn_y,
                                                               const core::QpAttr& attr, const core::QpCaps& caps,
                                                               core::TimeNs now) {
    return connect_engines(x, y, psn_x, psn_y, attr, attr, caps, now);
}

}  // namespace omrc::test
