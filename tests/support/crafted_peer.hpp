// SPDX-License-Identifier: BSD-3-Clause
// Engine tests driven with crafted frames: one engine under test ("the
// engine") and a connected QP on a second engine whose identity (addresses,
// QPN, connection id) the test borrows to write frames by hand — data
// packets with chosen PSNs, opcodes and flags, SACKs, NACKs, probes, AETH
// NAKs, port-status updates. Frames go in through on_rx_burst() and what
// the engine sends back is taken from poll_tx() and parsed, so each case
// asserts on the wire output of one engine function.
#pragma once

#include <catch2/catch.hpp>

#include <vector>

#include "core/engine.hpp"
#include "core/psn.hpp"
#include "support/engine_pair.hpp"
#include "wire/frame.hpp"

namespace omrc::test {

/// A frame the engine sent, flattened and parsed (views into `bytes`).
struct SentFrame {
    std::vector<std::uint8_t> bytes;
    wire::ParsedFrame f;
    std::uint8_t plane = 0;
    bool has_telemetry = false;   ///< GatherFrame::telemetry was set (a SACK echoing INT records)
    wire::IntStack telemetry{};   ///< ... a copy of them
};

class CraftedPeer {
public:
    /// Engine 1 of `pair` is under test; engine 0's QP `peer_qpn` is the peer
    /// whose frames are crafted. The engine's QP is `qpn`.
    CraftedPeer(EnginePair& pair, std::uint32_t peer_qpn, std::uint32_t qpn)
        : pair_(pair), peer_(*pair.engines[0]), engine_(*pair.engines[1]), peer_qpn_(peer_qpn), qpn_(qpn) {}

    core::Engine& engine() { return engine_; }
    [[nodiscard]] const core::Qp& qp() const { return *engine_.find_qp(qpn_); }
    [[nodiscard]] const core::Qp& peer_qp() const { return *peer_.find_qp(peer_qpn_); }

    /// Headers of a frame from the peer to the engine's QP on `plane`, EV `ev`.
    [[nodiscard]] wire::FrameSpec spec(wire::Opcode op, std::uint32_t psn, std::uint8_t plane = 0,
                                       std::uint32_t ev = 0x10000001) const {
        wire::FrameSpec s;
        s.mode = peer_.config().mode;
        s.eth.src = peer_.config().local_macs[plane];
        s.eth.dst = engine_.config().local_macs[plane];
        s.ip.src = peer_.config().local_addr;
        s.ip.dst = engine_.config().local_addr;
        s.ip.hop_limit = 64;
        s.ip.set_dscp(wire::is_data_opcode(op) ? wire::kDscpData : wire::kDscpControl);
        s.ev = ev;
        s.bth.opcode = op;
        s.bth.dest_qp = qpn_;
        s.bth.psn = psn & 0xFFFFFF;
        return s;
    }

    /// A data packet of `payload` at byte `offset` of a message of
    /// `msg_len` bytes written to `va` under `rkey` (TSETH with timestamp `ts`).
    [[nodiscard]] wire::FrameSpec data_spec(wire::Opcode op, std::uint32_t psn, std::uint64_t va, std::uint32_t rkey,
                                            std::uint32_t msg_len, std::uint16_t msn = 0,
                                            std::uint8_t plane = 0, std::uint32_t ev = 0x10000001,
                                            std::uint16_t ts = 1) const {
        wire::FrameSpec s = spec(op, psn, plane, ev);
        s.ip.set_ecn(2);
        s.bth.ts = true;
        s.meth = {0, msn};
        s.tseth = {ts, false, wire::mrc::kFtypeTransmitTimestamp};
        s.reth = {va, rkey, msg_len};
        return s;
    }

    /// A SACK from the peer as its receiver half would send it.
    [[nodiscard]] wire::FrameSpec sack_spec(std::uint32_t cack, std::int16_t sack_offset = 1,
                                            std::uint64_t bitmap = 0, std::uint32_t trigger_psn = 0,
                                            std::uint32_t trigger_ev = 0) const {
        wire::FrameSpec s = spec(wire::Opcode::sack, cack & 0xFFFFFF);  // BTH.PSN = cack_psn
        s.seth.src_conn_id = peer_qp().conn_id;
        s.seth.dst_conn_id = qp().conn_id;
        s.seth.cack_psn = cack & 0xFFFFFF;
        s.seth.sack_offset = sack_offset;
        s.seth.bitmap = bitmap;
        s.seth.mpr = static_cast<std::uint8_t>(peer_qp().attr.mpr);
        s.seth.ev = trigger_ev;
        s.seth.ack_psn_offset = static_cast<std::int16_t>(core::psn_diff(trigger_psn, cack));
        return s;
    }

    [[nodiscard]] wire::FrameSpec nack_spec(std::uint32_t psn, wire::NackReason reason, std::uint32_t ev,
                                            std::uint32_t cack) const {
        wire::FrameSpec s = spec(wire::Opcode::nack, psn);
        (void)cack;  // NETH carries no cumulative PSN
        s.neth = {.reason = static_cast<std::uint8_t>(reason),
                  .ev = ev,
                  .src_conn_id = peer_qp().conn_id,
                  .dst_conn_id = qp().conn_id,
                  .nack_psn = psn & 0xFFFFFF,
                  .cc_type = wire::mrc::kNethCcType};
        return s;
    }

    /// The whole frame (headers, payload, pad, ICRC).
    static std::vector<std::uint8_t> build(const wire::FrameSpec& s, std::span<const std::uint8_t> payload = {}) {
        std::vector<std::uint8_t> out(wire::header_size(s) + payload.size() + 8);
        std::size_t len = 0;
        REQUIRE(wire::build_frame(out, s, payload, len) == wire::WireError::ok);
        out.resize(len);
        return out;
    }

    /// Hands `frames` to the engine as one receive burst.
    void deliver(const std::vector<std::vector<std::uint8_t>>& frames, std::uint8_t plane = 0) {
        std::vector<wire::RxFrame> rx;
        for (const auto& f : frames) rx.push_back({f.data(), static_cast<std::uint32_t>(f.size()), plane});
        engine_.on_rx_burst(rx, pair_.now);
    }
    void deliver(const std::vector<std::uint8_t>& frame, std::uint8_t plane = 0) {
        deliver(std::vector<std::vector<std::uint8_t>>{frame}, plane);
    }
    /// One frame with INT records beside it (as the simulator hands them over).
    void deliver(const std::vector<std::uint8_t>& frame, const wire::IntStack& telemetry, std::uint8_t plane = 0) {
        wire::RxFrame rx{frame.data(), static_cast<std::uint32_t>(frame.size()), plane};
        rx.telemetry = &telemetry;
        engine_.on_rx_burst({&rx, 1}, pair_.now);
    }

    /// Runs the engine's timers at `now` (advancing the pair's clock).
    void at(core::TimeNs now) {
        pair_.now = now;
        if (engine_.next_wakeup() <= now) engine_.on_timer(now);
    }

    /// Everything the engine has to send now, parsed.
    std::vector<SentFrame> sent() {
        std::vector<SentFrame> out;
        std::vector<wire::GatherFrame> tx(64);
        for (;;) {
            const std::size_t n = engine_.poll_tx(tx, pair_.now);
            for (std::size_t k = 0; k < n; ++k) {
                SentFrame s;
                s.bytes.resize(tx[k].size());
                tx[k].flatten(s.bytes);
                s.plane = tx[k].plane;
                s.has_telemetry = tx[k].telemetry != nullptr;
                if (s.has_telemetry) s.telemetry = *tx[k].telemetry;
                out.push_back(std::move(s));
            }
            if (n < tx.size()) break;
        }
        // Parse once the bytes stop moving (the spans point into them).
        for (SentFrame& s : out) REQUIRE(wire::parse_frame(s.bytes, {}, s.f) == wire::WireError::ok);
        return out;
    }

    /// The frames of `frames` with opcode `op` (pointers into `frames`).
    static std::vector<const SentFrame*> only(const std::vector<SentFrame>& frames, wire::Opcode op) {
        std::vector<const SentFrame*> out;
        for (const SentFrame& s : frames)
            if (s.f.bth.opcode == op) out.push_back(&s);
        return out;
    }

    /// The same from a temporary (`only(peer.sent(), op)`): the result keeps
    /// the frames alive, so its pointers stay valid. Move-only: a copy would
    /// point into the original.
    struct Picked {
        std::vector<SentFrame> frames;
        std::vector<const SentFrame*> picked;
        Picked(std::vector<SentFrame>&& all, wire::Opcode op) : frames(std::move(all)), picked(only(frames, op)) {}
        Picked(const Picked&) = delete;
        Picked& operator=(const Picked&) = delete;
        Picked(Picked&&) noexcept = default;  // a moved vector keeps its buffer
        [[nodiscard]] std::size_t size() const { return picked.size(); }
        [[nodiscard]] bool empty() const { return picked.empty(); }
        const SentFrame* operator[](std::size_t k) const { return picked[k]; }
        [[nodiscard]] auto begin() const { return picked.begin(); }
        [[nodiscard]] auto end() const { return picked.end(); }
    };
    static Picked only(std::vector<SentFrame>&& frames, wire::Opcode op) { return {std::move(frames), op}; }

    /// Completions the engine has produced so far.
    std::vector<core::Completion> completions() {
        std::vector<core::Completion> out(256);
        out.resize(engine_.poll_completions(out));
        return out;
    }

private:
    EnginePair& pair_;
    core::Engine& peer_;
    core::Engine& engine_;
    std::uint32_t peer_qpn_;
    std::uint32_t qpn_;
};

}  // namespace omrc::test
