// SPDX-License-Identifier: BSD-3-Clause
// Fault-matrix rows (shared/design/FAULT-MATRIX.md row 32) with SEND / RECV
// traffic instead of WRITEs (docs/PROTOCOL.md §11.9), on the loopback driver
// in virtual time: BX (byte-exact into the receives), G (canaries around the
// destination untouched), 1C (exactly one completion per signalled WR) and
// one RECV consumed per message, in message order. Seeds are printed on
// failure. The WRITE versions are in test_fault_matrix.cpp.
#include "fault/fault_common.hpp"

using namespace omrc;
using namespace omrc::core;
using namespace omrc::test;

namespace {

QpAttr adaptive_attr() {
    QpAttr a;
    a.policy = PathPolicy::adaptive;
    a.evs = 128;
    a.mpr = 8;
    return a;
}

/// Runs `total` bytes of SENDs (`lo`..`hi` bytes each) under whatever the
/// caller set on the fabric, and checks BX, G, 1C and one RECV per message.
void run_and_check(LoopbackHarness& h, std::uint32_t a, std::uint32_t b, std::size_t total, std::size_t lo,
                   std::size_t hi, std::uint64_t seed) {
    const auto sizes = message_sizes(total, lo, hi, seed);
    GuardedTransfer t = make_guarded(total, seed);
    const RunResult r = send_transfer(h, a, b, t, sizes, 32, 20'000'000'000);
    REQUIRE(r.finished);
    CHECK(t.byte_exact());
    CHECK(t.guards_intact());
    check_one_completion_each(h.completions[0], sizes.size());
    check_one_receive_each(h.completions[1], sizes);
    // Keep running: late duplicates must add no completion and consume no receive.
    h.run([] { return false; }, h.now + 2'000'000);
    CHECK(h.completions[0].size() == sizes.size());
    CHECK(h.completions[1].size() == sizes.size());
    CHECK(h.engines[1]->find_qp(b)->stats.send_msgs_received == sizes.size());
}

}  // namespace

TEST_CASE("row 1 (SEND): 10% random loss on all paths, SENDs 4 KiB-8 MiB", "[fault]") {
    const std::uint64_t seed = 3101;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.loss.rate = 0.10;
    h.fabric.set_impairment_all(imp);
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    run_and_check(h, a, b, 64u << 20, 4 << 10, 8 << 20, seed);
    CHECK(h.engines[0]->find_qp(a)->stats.data_pkts_resent > 0);
}

TEST_CASE("row 2 (SEND): bursty loss plus 2% loss on the ACK direction only", "[fault]") {
    const std::uint64_t seed = 3202;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment data;
    data.burst_loss.p_good_to_bad = 0.002;
    data.burst_loss.p_bad_to_good = 1.0 / 16;
    data.burst_loss.loss_bad = 1.0;
    h.fabric.set_impairment(0, 1, data);
    loopback::Impairment acks;
    acks.loss.rate = 0.02;
    acks.loss.select = loopback::Select::control;
    h.fabric.set_impairment(1, 0, acks);
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    run_and_check(h, a, b, 64u << 20, 4 << 10, 8 << 20, seed);
}

TEST_CASE("row 4 (SEND): per-path delay skew 0-500 us, no loss", "[fault]") {
    const std::uint64_t seed = 3404;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    for (std::uint32_t p = 0; p < 8; ++p) {
        loopback::Impairment skew;
        skew.delay.extra_ns = p * 500'000 / 7;
        h.fabric.set_impairment(0, 1, p, skew);
        h.fabric.set_impairment(1, 0, p, skew);
    }
    QpAttr attr = adaptive_attr();
    attr.mpr = 32;
    const auto [a, b] = h.connect(0, 1, attr);
    run_and_check(h, a, b, 64u << 20, 64 << 10, 8 << 20, seed);
    const auto& st = h.engines[0]->find_qp(a)->stats;
    CAPTURE(st.data_pkts_resent, st.data_pkts_sent);
    CHECK(st.data_pkts_resent * 100 < st.data_pkts_sent);  // few spurious retransmits, as for WRITEs
}

TEST_CASE("row 5 (SEND): 5% duplication: a duplicate consumes no second receive", "[fault]") {
    const std::uint64_t seed = 3505;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.duplicate.rate = 0.05;
    imp.duplicate.extra_delay_ns = 200'000;
    h.fabric.set_impairment_all(imp);
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    run_and_check(h, a, b, 32u << 20, 4 << 10, 1 << 20, seed);
}

TEST_CASE("row 7 (SEND): 1% single-bit corruption anywhere", "[fault]") {
    const std::uint64_t seed = 3707;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.corrupt.rate = 0.01;
    imp.corrupt.anywhere = true;
    h.fabric.set_impairment_all(imp);
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    run_and_check(h, a, b, 64u << 20, 4 << 10, 8 << 20, seed);
    CHECK(h.engines[1]->stats().rx_wire_errors[static_cast<std::size_t>(wire::WireError::bad_icrc)] > 0);
}

TEST_CASE("row 9 (SEND): 5% of data packets trimmed on one plane", "[fault]") {
    const std::uint64_t seed = 3909;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.trim.rate = 0.05;
    imp.trim.size_bytes = 128;
    h.fabric.set_impairment(0, 1, 2, imp);
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    run_and_check(h, a, b, 64u << 20, 4 << 10, 8 << 20, seed);
    const std::uint64_t trimmed = h.fabric.link_counters(0, 1, 2).trimmed;
    REQUIRE(trimmed > 0);
    CHECK(h.engines[1]->find_qp(b)->stats.trims_received == trimmed);
    CHECK(h.engines[0]->find_qp(a)->stats.data_pkts_resent == trimmed);  // NACK → only those PSNs
}

TEST_CASE("row 10 (SEND): one of 8 planes blackholed, then restored, while SENDs flow", "[fault]") {
    const std::uint64_t seed = 4010;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment dark;
    dark.blackhole = true;
    h.fabric.schedule_impairment(h.now + 2'000'000, 0, 1, 4, dark);
    h.fabric.schedule_impairment(h.now + 200'000'000, 0, 1, 4, loopback::Impairment{});
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    run_and_check(h, a, b, 64u << 20, 4 << 10, 1 << 20, seed);
    CHECK(h.engines[0]->qp_info(a).state == QpState::rts);
}

TEST_CASE("row 12 (SEND): every path down longer than the retry budget", "[fault]") {
    const std::uint64_t seed = 4212;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    QpAttr attr = adaptive_attr();
    attr.timeout_ns = 2'000'000;
    attr.retry_cnt = 4;
    const auto [a, b] = h.connect(0, 1, attr);
    loopback::Impairment dark;
    dark.blackhole = true;
    h.fabric.set_impairment(0, 1, dark);
    GuardedTransfer t = make_guarded(8u << 20, seed);
    const auto sizes = message_sizes(t.src.size(), 64 << 10, 1 << 20, seed);
    const auto rr = recv_requests(t, sizes);
    REQUIRE(h.engines[1]->submit(CmdPostRecv{b, rr}, h.now).err == 0);
    REQUIRE(h.engines[0]->submit(CmdPostSend{a, send_requests(t, sizes)}, h.now).err == 0);
    const TimeNs start = h.now;
    REQUIRE(h.run([&] { return h.completions[0].size() == sizes.size(); }, h.now + 1'000'000'000));
    const TimeNs budget = attr.timeout_ns * (attr.retry_cnt + 1);
    CAPTURE(h.now - start, budget);
    CHECK(h.now - start <= budget + budget / 10);
    CHECK(h.completions[0][0].status == WcStatus::retry_exc_err);
    for (std::size_t i = 1; i < h.completions[0].size(); ++i) CHECK(h.completions[0][i].status == WcStatus::wr_flush_err);
    // Nothing arrived: no receive was consumed, none completed.
    CHECK(h.completions[1].empty());
    CHECK(h.engines[1]->find_qp(b)->rq.size() == sizes.size());
    CHECK(t.guards_intact());
}

TEST_CASE("row 23 (SEND): no receive posted for 50 ms: RNR waits, then every SEND lands", "[fault]") {
    const std::uint64_t seed = 4323;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    QpAttr attr = adaptive_attr();
    attr.min_rnr_timer = 6;  // 80 µs
    const auto [a, b] = h.connect(0, 1, attr);
    GuardedTransfer t = make_guarded(4u << 20, seed);
    const auto sizes = message_sizes(t.src.size(), 4 << 10, 256 << 10, seed);
    REQUIRE(h.engines[0]->submit(CmdPostSend{a, send_requests(t, sizes)}, h.now).err == 0);
    h.run([] { return false; }, h.now + 50'000'000);
    CHECK(h.completions[0].empty());
    CHECK(h.completions[1].empty());
    CHECK(h.engines[0]->qp_info(a).state == QpState::rts);  // RNR waits are not a loss of progress
    CHECK(h.engines[0]->find_qp(a)->stats.rnr_waits > 100);
    CHECK(std::all_of(t.dst(), t.dst() + t.src.size(), [](std::uint8_t x) { return x == 0; }));  // nothing placed
    const auto rr = recv_requests(t, sizes);
    REQUIRE(h.engines[1]->submit(CmdPostRecv{b, rr}, h.now).err == 0);
    REQUIRE(h.run([&] { return h.completions[0].size() == sizes.size() && h.completions[1].size() == sizes.size(); },
                  h.now + 1'000'000'000));
    CHECK(t.byte_exact());
    CHECK(t.guards_intact());
    check_one_completion_each(h.completions[0], sizes.size());
    check_one_receive_each(h.completions[1], sizes);
}
