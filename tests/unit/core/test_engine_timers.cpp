// SPDX-License-Identifier: BSD-3-Clause
// The sender's timers (lib/core/engine_timers.cpp): EV timeouts, the retry
// budget, probes. Cases in the order of the functions they exercise, named
// Function__case.
#include <catch2/catch.hpp>

#include "core/psn.hpp"
#include "support/crafted_sender.hpp"

using namespace omrc;
using namespace omrc::core;
using namespace omrc::test;
using wire::Opcode;

TEST_CASE("Engine::sender_timers__an_ev_timeout_resends_what_it_carried", "[unit][core]") {
    EngineConfig cfg;
    cfg.ev_timeout_ns = 100'000;
    Tx t(Tx::base_attr(), cfg);
    const auto out = t.post(1);
    REQUIRE(out.size() == 1);
    const core::TimeNs sent_at = t.pair.now;
    CHECK(t.pair.engines[1]->next_wakeup() <= sent_at + 100'000);
    t.peer->at(sent_at + 99'999);
    CHECK(t.peer->sent().empty());
    t.peer->at(sent_at + 100'000);
    const auto again = t.peer->sent();
    const auto data = CraftedPeer::only(again, Opcode::write_only);
    REQUIRE(data.size() == 1);
    CHECK(data[0]->f.bth.psn == out[0].f.bth.psn);
    CHECK(data[0]->f.bth.rtx);
    CHECK(t.peer->qp().stats.ev_timeouts == 1);
    CHECK(t.peer->qp().stats.losses_timeout == 1);
    // The only packet of the EV was lost: its loss record stands out from
    // the QP's, so the EV is retired, the resend takes another, and the EV
    // is probed one probe interval later.
    if (t.peer->qp().stats.ev_retirements == 1) {
        CHECK(data[0]->f.ev != out[0].f.ev);
        CHECK(CraftedPeer::only(again, Opcode::probe).empty());
        t.peer->at(sent_at + 100'000 + cfg.probe_interval_ns);
        const auto probes = CraftedPeer::only(t.peer->sent(), Opcode::probe);
        REQUIRE(probes.size() == 1);
        CHECK(probes[0]->f.ev == out[0].f.ev);
        // Both changes are path events for the runtime to log.
        std::vector<PathEvent> events(8);
        events.resize(t.peer->engine().poll_path_events(events));
        REQUIRE(events.size() == 2);
        CHECK(events[0].kind == PathEventKind::retired);
        CHECK(events[0].cause == RetireCause::timeout);
        CHECK(events[0].ev == out[0].f.ev);
        CHECK(events[0].qpn == t.qb);
        CHECK(events[0].at_ns == sent_at + 100'000);
        CHECK(events[1].kind == PathEventKind::probe_sent);
        CHECK(events[1].ev == out[0].f.ev);
        CHECK(t.peer->engine().poll_path_events(events) == 0);
    }
}

TEST_CASE("Engine::sender_timers__no_progress_for_the_retry_budget_is_retry_exc_err", "[unit][core]") {
    QpAttr a = Tx::base_attr();
    a.timeout_ns = 1'000'000;
    a.retry_cnt = 1;  // budget 2 ms
    Tx t(a);
    REQUIRE(t.post(2, 5).size() == 2);
    REQUIRE(t.post(1, 6).size() == 1);
    const core::TimeNs start = t.pair.now;
    for (core::TimeNs now = start; now < start + 2'100'000; now += 50'000) {
        t.peer->at(now);
        (void)t.peer->sent();  // resends go nowhere
    }
    const auto wc = t.peer->completions();
    REQUIRE(wc.size() == 2);
    CHECK(wc[0].wr_id == 5);
    CHECK(wc[0].status == WcStatus::retry_exc_err);
    CHECK(wc[1].wr_id == 6);
    CHECK(wc[1].status == WcStatus::wr_flush_err);
    CHECK(t.peer->qp().state == QpState::err);
}
