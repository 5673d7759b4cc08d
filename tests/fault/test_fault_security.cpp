// SPDX-License-Identifier: BSD-3-Clause
// Fault-matrix rows 27-30 (encrypted mode, docs/PROTOCOL.md §12) on the
// loopback driver with its impairments, in virtual time: 8 planes, adaptive
// spraying over 128 EVs, every frame of the QP sealed (AES-GCM-256).
// Invariants as the matrix says: BX, 1C, G, and every rejected frame
// counted by reason.
#include "fault/fault_common.hpp"

#include "core/psn.hpp"
#include "routing/fabric.hpp"
#include "wire/frame.hpp"
#include "wire/psp.hpp"

using namespace omrc;
using namespace omrc::core;
using namespace omrc::test;

namespace {

EngineConfig keyed(bool verify_icrc = true) {
    EngineConfig c;
    for (std::size_t i = 0; i < 32; ++i) c.security.master_keys[0][i] = static_cast<std::uint8_t>(0x5C + 13 * i);
    c.security.present = 1;
    c.verify_icrc = verify_icrc;
    return c;
}

QpAttr encrypted() {
    QpAttr a;
    a.policy = PathPolicy::adaptive;
    a.evs = 128;
    a.mpr = 8;
    a.encrypt = true;
    return a;
}

std::uint64_t drops(const Engine& e, DropReason r) { return e.stats().rx_drops[static_cast<std::size_t>(r)]; }

}  // namespace

TEST_CASE("row 27: encrypted, an attacker who knows every header field sends WRITEs", "[fault]") {
    const std::uint64_t seed = 2701;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed), keyed());
    const auto qps = h.connect(0, 1, encrypted());
    const std::uint32_t a = qps.first, b = qps.second;  // not a structured binding: lambdas capture them (clang 14)
    const std::size_t total = 32u << 20;
    const auto sizes = message_sizes(total, 64 << 10, 1 << 20, seed);
    GuardedTransfer t = make_guarded(total, seed);
    h.memory[1]->add(t.rkey, t.dst(), t.src.size());
    Poster poster(h, 0, a, write_requests(t, sizes), 16);
    // Every 2 µs the attacker writes 4 KiB of 0xEE at the next PSNs B expects,
    // into the live destination, with the peer's address, B's QPN and the rkey.
    std::vector<std::uint8_t> junk(4096, 0xEE);
    std::uint64_t forged = 0;
    TimeNs next_attack = h.now;
    const bool done = h.run(
        [&] { return h.completions[0].size() == sizes.size(); }, h.now + 10'000'000'000,
        [&] {
            poster.pump();
            if (h.now < next_attack) return;
            next_attack = h.now + 2'000;
            wire::FrameSpec s;
            s.eth.src = h.engines[0]->config().local_macs[0];
            s.eth.dst = h.engines[1]->config().local_macs[0];
            s.ip.src = LoopbackHarness::addr(0);
            s.ip.dst = LoopbackHarness::addr(1);
            s.ev = routing::make_ev(0, 1, 1);
            s.bth.opcode = wire::Opcode::write_only;
            s.bth.dest_qp = b;
            s.bth.psn = psn_add(h.engines[1]->find_qp(b)->rcv_cack, 1 + static_cast<std::int32_t>(forged % 64));
            s.meth = {0, 1};
            s.reth = {reinterpret_cast<std::uint64_t>(t.dst()) + (forged * 4096) % total, t.rkey, 4096};
            std::vector<std::uint8_t> f(4096 + 256);
            std::size_t len = 0;
            REQUIRE(wire::build_frame(f, s, junk, len) == wire::WireError::ok);
            f.resize(len);
            h.engines[1]->on_rx(f, 0, h.now);
            ++forged;
        },
        [&] { return next_attack; });
    REQUIRE(done);
    CHECK(t.byte_exact());
    CHECK(t.guards_intact());
    check_one_completion_each(h.completions[0], sizes.size());
    REQUIRE(forged > 100);
    CHECK(drops(*h.engines[1], DropReason::psp_required) == forged);
    CHECK(h.engines[1]->qp_info(b).state == QpState::rts);
}

TEST_CASE("row 28: encrypted, one bit flipped anywhere in 1% of frames (the ICRC not what stops them)", "[fault]") {
    // The receivers do not check ICRCs: a flipped bit reaches the ICV as
    // if the attacker had recomputed the ICRC.
    const std::uint64_t seed = 2801;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed), keyed(/*verify_icrc=*/false));
    loopback::Impairment imp;
    imp.corrupt.rate = 0.01;
    imp.corrupt.anywhere = true;
    h.fabric.set_impairment_all(imp);
    const auto qps = h.connect(0, 1, encrypted());
    const std::uint32_t a = qps.first, b = qps.second;  // not a structured binding: lambdas capture them (clang 14)
    const std::size_t total = 64u << 20;
    const auto sizes = message_sizes(total, 4 << 10, 4 << 20, seed);
    GuardedTransfer t = make_guarded(total, seed);
    const RunResult r = transfer(h, a, t, sizes, 32, 20'000'000'000);
    REQUIRE(r.finished);
    CHECK(t.byte_exact());
    CHECK(t.guards_intact());
    check_one_completion_each(h.completions[0], sizes.size());
    CHECK(drops(*h.engines[1], DropReason::psp_bad_tag) > 0);
    CHECK(h.engines[1]->stats().rx_wire_errors[static_cast<std::size_t>(wire::WireError::bad_icrc)] == 0);
    (void)b;
}

TEST_CASE("row 29: encrypted, 5% of frames replayed by the network 2 x RTO late", "[fault]") {
    const std::uint64_t seed = 2901;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed), keyed());
    loopback::Impairment imp;
    imp.duplicate.rate = 0.05;
    imp.duplicate.extra_delay_ns = 8'000'000;  // 2 × the QPs' 4 ms timeout: long after the CQE
    h.fabric.set_impairment_all(imp);
    const auto qps = h.connect(0, 1, encrypted());
    const std::uint32_t a = qps.first, b = qps.second;  // not a structured binding: lambdas capture them (clang 14)
    const std::size_t total = 64u << 20;
    const auto sizes = message_sizes(total, 4 << 10, 4 << 20, seed);
    GuardedTransfer t = make_guarded(total, seed);
    const RunResult r = transfer(h, a, t, sizes, 32, 20'000'000'000);
    REQUIRE(r.finished);
    // The late copies arrive after the transfer: let them.
    h.run([] { return false; }, h.now + 20'000'000);
    CHECK(t.byte_exact());
    CHECK(t.guards_intact());
    check_one_completion_each(h.completions[0], sizes.size());
    const QpStats& rx = h.engines[1]->find_qp(b)->stats;
    CHECK(rx.duplicates == 0);  // no copy got as far as the PSN check
    CHECK(drops(*h.engines[1], DropReason::psp_replay) > 100);
    CHECK(drops(*h.engines[0], DropReason::psp_replay) > 0);  // SACKs replayed too
}

TEST_CASE("row 30: encrypted, key rotation under 5% loss with spraying", "[fault]") {
    const std::uint64_t seed = 3001;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed), keyed());
    loopback::Impairment imp;
    imp.loss.rate = 0.05;
    imp.delay.jitter_ns = 20'000;
    h.fabric.set_impairment_all(imp);
    const auto qps = h.connect(0, 1, encrypted());
    const std::uint32_t a = qps.first, b = qps.second;  // not a structured binding: lambdas capture them (clang 14)
    const std::size_t total = 128u << 20;
    const auto sizes = message_sizes(total, 64 << 10, 4 << 20, seed);
    GuardedTransfer t = make_guarded(total, seed);
    h.memory[1]->add(t.rkey, t.dst(), t.src.size());
    Poster poster(h, 0, a, write_requests(t, sizes), 32);
    // Both ends try to rotate every 100 µs; the longest gap between two
    // completions is the stall a rotation may not make longer than one RTO.
    TimeNs next_rotation = h.now, last_completion = h.now, longest_gap = 0;
    std::size_t seen = 0;
    std::uint64_t rotations = 0;
    const bool done = h.run(
        [&] { return h.completions[0].size() == sizes.size(); }, h.now + 30'000'000'000,
        [&] {
            poster.pump();
            if (h.completions[0].size() != seen) {
                longest_gap = std::max(longest_gap, h.now - last_completion);
                last_completion = h.now;
                seen = h.completions[0].size();
            }
            if (h.now < next_rotation) return;
            next_rotation = h.now + 100'000;
            for (int side = 0; side < 2; ++side) {
                const int err = h.engines[side]->submit(CmdRotateKey{side == 0 ? a : b}, h.now).err;
                REQUIRE((err == 0 || err == EBUSY));
                rotations += err == 0;
            }
        },
        [&] { return next_rotation; });
    REQUIRE(done);
    CHECK(t.byte_exact());
    CHECK(t.guards_intact());
    check_one_completion_each(h.completions[0], sizes.size());
    CHECK(rotations >= 10);
    const QpStats& as = h.engines[0]->find_qp(a)->stats;
    const QpStats& bs = h.engines[1]->find_qp(b)->stats;
    CHECK(bs.psp_rx_rotations + 1 >= as.psp_tx_rotations);
    CHECK(as.psp_tx_rotations >= 5);
    // A frame of a retired epoch is never accepted: none needed one (none counted as old,
    // since a sender rotates only once its older epoch's packets are acknowledged).
    CHECK(drops(*h.engines[1], DropReason::psp_old_epoch) == 0);
    CHECK(drops(*h.engines[1], DropReason::psp_bad_tag) == 0);
    INFO("longest gap between completions: " << longest_gap << " ns");
    CHECK(longest_gap <= 4'000'000);  // the QPs' RTO (QpAttr::timeout_ns)
}
