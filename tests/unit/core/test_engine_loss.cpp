// SPDX-License-Identifier: BSD-3-Clause
// The sender's loss detection (lib/core/engine_loss.cpp): by path order, by
// send order, by timeout. Cases in the order of the functions they
// exercise, named Function__case.
#include <catch2/catch.hpp>

#include "core/psn.hpp"
#include "support/crafted_sender.hpp"

using namespace omrc;
using namespace omrc::core;
using namespace omrc::test;
using wire::Opcode;

TEST_CASE("Engine::detect_losses_by_send_order__a_later_packet_on_the_plane_arrived", "[unit][core]") {
    // W goes first; 100 µs later (beyond the send-order window before any
    // RTT sample: a quarter of the initial EV timeout) a burst goes. A SACK
    // shows one of the burst received, on W's plane but another EV, and W
    // missing: W is lost by send order (path order has nothing on W's EV).
    Tx t;
    const auto first = t.post(1, 1);
    REQUIRE(first.size() == 1);
    const std::uint32_t w = first[0].f.bth.psn;
    t.pair.now += 100'000;
    const auto burst = t.post(16, 2, kTxMtu);
    REQUIRE(burst.size() == 16);
    const SentFrame* x = nullptr;
    for (const auto& b : burst)
        if (b.plane == first[0].plane && b.f.ev != first[0].f.ev) {
            x = &b;
            break;
        }
    REQUIRE(x != nullptr);
    const auto k = static_cast<unsigned>(psn_diff(x->f.bth.psn, w));  // bit k of a bitmap from w
    t.peer->deliver(CraftedPeer::build(t.peer->sack_spec(psn_add(w, -1), 1, 1ull << k, x->f.bth.psn, x->f.ev)));
    CHECK(t.peer->qp().stats.losses_send_order == 1);
    CHECK(t.peer->qp().stats.losses_send_order_cross_plane == 0);
    CHECK(t.peer->qp().stats.losses_path_order == 0);
    const auto again = CraftedPeer::only(t.peer->sent(), Opcode::write_only);
    REQUIRE(again.size() == 1);
    CHECK(again[0]->f.bth.psn == w);
    CHECK(again[0]->f.bth.rtx);
}

TEST_CASE("Engine::infer_losses_on_path__a_later_packet_on_the_same_ev_proves_an_earlier_loss", "[unit][core]") {
    Tx t;
    const auto out = t.post(40);
    REQUIRE(out.size() == 40);
    // Two packets on one EV: the first is lost, the later one arrives.
    std::size_t w = 0, x = 0;
    for (std::size_t i = 0; i < out.size() && x == 0; ++i)
        for (std::size_t j = i + 1; j < out.size(); ++j)
            if (out[j].f.ev == out[i].f.ev) {
                w = i;
                x = j;
                break;
            }
    REQUIRE(x != 0);
    // cack just before w; the bitmap says everything after w up to 40 arrived.
    const std::uint32_t cack = psn_add(out[w].f.bth.psn, -1);
    std::uint64_t bitmap = 0;
    for (std::size_t k = w + 1; k < out.size() && k - w < 64; ++k) bitmap |= 1ull << (k - w);  // bit 0 = w
    t.peer->deliver(CraftedPeer::build(t.peer->sack_spec(cack, 1, bitmap, out[x].f.bth.psn, out[x].f.ev)));
    CHECK(t.peer->qp().stats.losses_path_order == 1);
    const auto again = t.peer->sent();
    REQUIRE(again.size() == 1);
    CHECK(again[0].f.bth.psn == out[w].f.bth.psn);
    CHECK(again[0].f.bth.rtx);
}

TEST_CASE("Engine::sweep_untracked__a_packet_no_ev_tracks_is_lost_after_1_5_ev_timeouts", "[unit][core]") {
    // A denied EV hands what it carries to the window sweep: no EV timer
    // covers it, the sweep finds it half an EV timeout later than the timers
    // find the others.
    EngineConfig cfg;
    cfg.ev_timeout_ns = 100'000;
    Tx t(Tx::base_attr(), cfg);
    const auto out = t.post(4);
    REQUIRE(out.size() == 4);
    const core::TimeNs sent_at = t.pair.now;
    REQUIRE(t.pair.engines[1]->submit(CmdDenyEv{t.qb, out[0].f.ev}, t.pair.now).err == 0);
    CHECK(t.peer->qp().untracked == 1);
    t.peer->at(sent_at + cfg.ev_timeout_ns);
    CHECK(t.peer->qp().stats.losses_timeout == 3);  // the EV timers of the other three
    t.peer->at(sent_at + cfg.ev_timeout_ns + cfg.ev_timeout_ns / 2 - 1);
    CHECK(t.peer->qp().stats.losses_timeout == 3);
    t.peer->at(sent_at + cfg.ev_timeout_ns + cfg.ev_timeout_ns / 2);
    CHECK(t.peer->qp().stats.losses_timeout == 4);
}
