// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the engine's receive path. Two engines with a
// connected QP pair; the input picks a reference frame, overwrites bytes of
// its BTH and extension headers (and payload), fixes the lengths and the ICRC
// up so the frame passes the parser, and delivers it to either side — then
// runs timers and drains transmit and completion queues. B's QP takes its
// receives from a shared receive queue holding a few (SEND packets bind
// them). Any crash, sanitizer report or completion for a WR never posted is
// a finding.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/engine.hpp"
#include "wire/frame.hpp"
#include "wire/icrc.hpp"
#include "wire/sample_frames.hpp"

using namespace omrc;

namespace {

class Sink final : public core::PlacementTarget {
public:
    std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(1 << 16);
    core::PlaceStatus place(std::uint32_t, std::uint32_t rkey, std::uint64_t va, std::span<const std::uint8_t> b) override {
        const auto base = reinterpret_cast<std::uint64_t>(buf.data());
        if (rkey != 0x1234) return core::PlaceStatus::bad_rkey;
        if (va < base || b.size() > buf.size() || va - base > buf.size() - b.size()) return core::PlaceStatus::out_of_bounds;
        std::memcpy(reinterpret_cast<void*>(va), b.data(), b.size());
        return core::PlaceStatus::ok;
    }
};

struct World {
    Sink sink[2];
    std::unique_ptr<core::Engine> e[2];
    std::uint32_t qpn[2] = {0, 0};
    std::vector<std::uint8_t> src = std::vector<std::uint8_t>(1 << 16, 0x5A);
    std::vector<std::uint8_t> recv_buf = std::vector<std::uint8_t>(4 * 4096);
    static constexpr std::uint64_t kRecvWrId = 100;  ///< B's SRQ receives: 100..103

    static wire::Ipv6Addr addr(int i) {
        wire::Ipv6Addr a{0xfd};
        a[15] = static_cast<std::uint8_t>(i + 1);
        return a;
    }
    World() {
        for (int i = 0; i < 2; ++i) {
            core::EngineConfig c;
            c.planes = 4;
            c.seed = static_cast<std::uint64_t>(i) + 7;
            c.local_addr = addr(i);
            e[i] = std::make_unique<core::Engine>(c, &sink[i]);
            core::QpCaps caps;
            if (i == 1) {
                caps.srqn = e[i]->submit(core::CmdCreateSrq{0, 8, 2}, 0).srqn;
                core::RecvRequest rr[4];
                for (std::uint32_t k = 0; k < 4; ++k) {
                    rr[k].wr_id = kRecvWrId + k;
                    rr[k].length = 4096;
                    rr[k].sge_count = 1;
                    rr[k].sges[0] = {recv_buf.data() + k * 4096, 4096, 1};
                }
                e[i]->submit(core::CmdPostSrqRecv{caps.srqn, rr}, 0);
            }
            qpn[i] = e[i]->submit(core::CmdCreateQp{caps}, 0).qpn;
            core::QpAttr init;
            init.access_flags = core::kAccessRemoteWrite;
            e[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::init, init, core::kAttrAccess}, 0);
        }
        for (int i = 0; i < 2; ++i) {
            core::QpAttr a;
            a.dest_qp_num = qpn[1 - i];
            a.dest_conn_id = e[1 - i]->qp_info(qpn[1 - i]).conn_id;
            a.peer_addr = addr(1 - i);
            a.evs = 16;
            a.mpr = 1;
            a.timeout_ns = 1'000'000;
            e[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::rtr, a,
                                           core::kAttrDestQpn | core::kAttrRqPsn | core::kAttrPath | core::kAttrMtu | core::kAttrMpr}, 0);
            e[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::rts, a, core::kAttrSqPsn | core::kAttrTimeout}, 0);
        }
        // Something in flight from A, so SACKs and NACKs have PSNs to name.
        core::SendRequest r;
        r.wr_id = 1;
        r.remote_addr = reinterpret_cast<std::uint64_t>(sink[1].buf.data());
        r.rkey = 0x1234;
        r.sge_count = 1;
        r.sges[0] = {src.data(), 20000};
        e[0]->submit(core::CmdPostSend{qpn[0], std::span(&r, 1)}, 0);
        std::vector<wire::GatherFrame> tx(16);
        e[0]->poll_tx(tx, 1000);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const auto samples = wire::make_sample_frames();
    if (size < 3) return 0;
    World w;
    const auto& s = samples[data[0] % samples.size()];
    const int to = data[1] & 1;
    wire::FrameSpec spec = s.spec;
    spec.mode = wire::FrameMode::plain;
    spec.has_srh = false;
    spec.ip.src = World::addr(1 - to);
    spec.ip.dst = World::addr(to);
    spec.bth.dest_qp = (data[1] & 2) ? w.qpn[to] : spec.bth.dest_qp;
    std::vector<std::uint8_t> f(s.bytes.size() + 64);
    std::size_t len = 0;
    if (wire::build_frame(f, spec, s.payload, len) != wire::WireError::ok) return 0;
    f.resize(len);
    // Overwrite from byte 2 of the BTH (keep opcode and flags byte) onwards, before the ICRC.
    const std::size_t from = 14 + 40 + 8 + 2;
    for (std::size_t i = 2; i < size && from + i - 2 < len - 4; ++i) f[from + i - 2] = data[i];
    // Keep transport version 0 and a known opcode so the frame passes the parser.
    const std::size_t ip = 14;
    wire::store_le32(f.data() + len - 4, wire::icrc_compute(std::span(f).subspan(ip, len - 4 - ip)));
    core::TimeNs now = 2000;
    w.e[to]->on_rx(f, 0, now);
    std::vector<wire::GatherFrame> tx(64);
    std::vector<core::Completion> wc(64);
    for (int round = 0; round < 4; ++round) {
        now += 500'000;
        for (auto& e : w.e) {
            e->on_timer(now);
            (void)e->poll_tx(tx, now);
            const std::size_t n = e->poll_completions(wc);
            for (std::size_t k = 0; k < n; ++k)
                if (wc[k].opcode != core::WcOpcode::srq_limit_reached && wc[k].wr_id != 1 &&
                    (wc[k].wr_id < World::kRecvWrId || wc[k].wr_id >= World::kRecvWrId + 4))
                    std::abort();  // a completion for a WR that was never posted
        }
    }
    return 0;
}
