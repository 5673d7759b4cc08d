// SPDX-License-Identifier: BSD-3-Clause
// Retirements and what they tell (lib/core/engine_path_alarms.cpp), on an
// SRv6 fabric where the EV names the T1: a QP's failed (plane, T1) takes its
// other EVs through that T1 with it, and the engine's other QPs toward the
// same T0 leave it before they send there. Cases in the order of the
// functions, named Function__case.
#include <catch2/catch.hpp>

#include <map>

#include "core/psn.hpp"
#include "routing/fabric.hpp"
#include "support/crafted_sender.hpp"

using namespace omrc;
using namespace omrc::core;
using omrc::test::EnginePair;
using omrc::test::random_bytes;
using omrc::test::write_all;

namespace {

constexpr std::uint8_t kDeadPlane = 0;
constexpr std::uint16_t kDeadT1 = 1;
constexpr std::uint32_t kT1s = 4;

/// Two hosts under different T0s of a 2-plane fabric of 4 T1s: every path crosses a T1.
EngineConfig fabric_config() {
    EngineConfig c;
    c.mode = wire::FrameMode::srv6;
    c.planes = 2;
    c.fabric = {.planes = 2, .t0_per_plane = 2, .t1_per_plane = kT1s, .hosts_per_t0 = 1};
    c.path_alarm_ns = 10'000'000;  // longer than the first transfer
    return c;
}

QpAttr attr() {
    QpAttr a;
    a.cc.algorithm = CcAlgorithm::fixed;
    a.cc.fixed_window_bytes = 1u << 20;
    a.evs = 16;
    a.mtu_bytes = 1024;
    return a;
}

bool through_dead_t1(std::uint32_t ev) {
    return routing::ev_plane(ev) == kDeadPlane && routing::ev_path(ev) % kT1s == kDeadT1;
}

/// Drops engine 0's data frames through (kDeadPlane, kDeadT1); counts the
/// data frames each destination QP was sent there.
struct DeadT1 {
    std::map<std::uint32_t, std::uint64_t> sent_through;  ///< destination QPN → data frames
    void install(EnginePair& pair) {
        pair.hook = [this](int from, std::uint8_t, std::vector<std::uint8_t>& bytes) {
            wire::ParsedFrame f;
            if (from != 0 || wire::parse_frame(bytes, {}, f) != wire::WireError::ok) return test::Fate{};
            if (!wire::is_data_opcode(f.bth.opcode) || !through_dead_t1(f.ev)) return test::Fate{};
            ++sent_through[f.bth.dest_qp];
            return test::Fate{true, 0};
        };
    }
};

}  // namespace

TEST_CASE("Engine::retire_slot__a_failed_t1_takes_the_qp_s_other_evs_through_it", "[unit][core]") {
    EnginePair pair(fabric_config());
    DeadT1 dead;
    dead.install(pair);
    auto [qa, qb] = pair.connect(attr());
    const auto src = random_bytes(512u << 10, 5);
    CHECK(write_all(pair, qa, src, 64u << 10) == src);
    const Qp& q = *pair.engines[0]->find_qp(qa);
    CHECK(q.stats.ev_retirements_with_group > 0);
    // No active slot is left on the dead T1 (its EVs went together).
    for (std::size_t i = 0; i < q.paths.size(); ++i)
        if (!q.paths.slot(i).parked) CHECK_FALSE(through_dead_t1(q.paths.slot(i).ev));
    (void)qb;
}

TEST_CASE("Engine::apply_path_alarms__another_qp_leaves_the_t1_before_it_sends_there", "[unit][core]") {
    EnginePair pair(fabric_config());
    DeadT1 dead;
    dead.install(pair);
    auto [qa1, qb1] = pair.connect(attr());
    auto [qa2, qb2] = pair.connect(attr());
    // The first QP finds the dead T1 by its own losses.
    const auto src = random_bytes(512u << 10, 6);
    CHECK(write_all(pair, qa1, src, 64u << 10) == src);
    REQUIRE(dead.sent_through[qb1] > 0);
    const std::size_t done = pair.completions[0].size();
    // The second, to the same T0, sends nothing through it.
    std::vector<std::uint8_t> dst(src.size(), 0);
    pair.memory[1].add(0x78, dst.data(), dst.size());
    const auto wrs = test::make_write_wrs(src.data(), dst.data(), src.size(), 0x78, 64u << 10);
    REQUIRE(pair.engines[0]->submit(CmdPostSend{qa2, wrs}, pair.now).err == 0);
    REQUIRE(pair.run([&] { return pair.completions[0].size() >= done + wrs.size(); }, pair.now + 1'000'000'000));
    CHECK(dst == src);
    const Qp& q2 = *pair.engines[0]->find_qp(qa2);
    CHECK(q2.stats.ev_retirements_by_cause[static_cast<std::size_t>(RetireCause::path_alarm)] > 0);
    CHECK(dead.sent_through[qb2] == 0);
    CHECK(q2.stats.data_pkts_resent == 0);
}
