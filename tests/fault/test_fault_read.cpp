// SPDX-License-Identifier: BSD-3-Clause
// Fault-matrix rows (shared/design/FAULT-MATRIX.md row 32) with RDMA READ
// traffic (docs/PROTOCOL.md §11.10), on the loopback driver in virtual
// time: endpoint 0 reads endpoint 1's memory, so the data flows 1 → 0 in the
// responder's sprayed answers and the requests and acknowledgements 0 → 1.
// BX (byte-exact into the READs' buffers), G (canaries around them
// untouched), 1C (exactly one completion per READ, in post order). Seeds
// are printed on failure. The WRITE versions are in test_fault_matrix.cpp.
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

/// Reads `total` bytes (`lo`..`hi` bytes a READ) under whatever the caller
/// set on the fabric, and checks BX, G and 1C in order.
void run_and_check(LoopbackHarness& h, std::uint32_t a, std::size_t total, std::size_t lo, std::size_t hi,
                   std::uint64_t seed) {
    const auto sizes = message_sizes(total, lo, hi, seed);
    GuardedTransfer t = make_guarded(total, seed);
    const RunResult r = read_transfer(h, a, t, sizes, 16, 20'000'000'000);
    REQUIRE(r.finished);
    CHECK(t.byte_exact());
    CHECK(t.guards_intact());
    check_one_completion_each(h.completions[0], sizes.size());
    for (std::size_t i = 0; i < h.completions[0].size(); ++i) {
        CHECK(h.completions[0][i].wr_id == i);  // in post order
        CHECK(h.completions[0][i].opcode == WcOpcode::rdma_read);
    }
    // Keep running: late duplicates add no completion.
    h.run([] { return false; }, h.now + 2'000'000);
    CHECK(h.completions[0].size() == sizes.size());
    CHECK(h.completions[1].empty());  // the responder completes nothing
    CHECK(h.engines[0]->find_qp(a)->stats.reads_completed == sizes.size());
}

}  // namespace

TEST_CASE("row 1 (READ): 10% random loss on all paths, READs 4 KiB-8 MiB", "[fault]") {
    const std::uint64_t seed = 5101;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.loss.rate = 0.10;
    h.fabric.set_impairment_all(imp);
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    run_and_check(h, a, 64u << 20, 4 << 10, 8 << 20, seed);
    CHECK(h.engines[1]->find_qp(b)->stats.data_pkts_resent > 0);  // the responder resent its answers
}

TEST_CASE("row 2 (READ): bursty loss on the answers plus 2% loss of the requester's acknowledgements", "[fault]") {
    const std::uint64_t seed = 5202;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment data;
    data.burst_loss.p_good_to_bad = 0.002;
    data.burst_loss.p_bad_to_good = 1.0 / 16;
    data.burst_loss.loss_bad = 1.0;
    h.fabric.set_impairment(1, 0, data);
    loopback::Impairment acks;
    acks.loss.rate = 0.02;
    acks.loss.select = loopback::Select::control;
    h.fabric.set_impairment(0, 1, acks);
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    run_and_check(h, a, 64u << 20, 4 << 10, 8 << 20, seed);
    (void)b;
}

TEST_CASE("row 4 (READ): per-path delay skew 0-500 us, no loss", "[fault]") {
    const std::uint64_t seed = 5404;
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
    run_and_check(h, a, 64u << 20, 64 << 10, 8 << 20, seed);
    const auto& st = h.engines[1]->find_qp(b)->stats;
    CAPTURE(st.data_pkts_resent, st.data_pkts_sent);
    CHECK(st.data_pkts_resent * 100 < st.data_pkts_sent);  // few spurious retransmits, as for WRITEs
}

TEST_CASE("row 5 (READ): 5% duplication: a duplicate request is answered once", "[fault]") {
    const std::uint64_t seed = 5505;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.duplicate.rate = 0.05;
    imp.duplicate.extra_delay_ns = 200'000;
    h.fabric.set_impairment_all(imp);
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    const std::size_t before = 0;
    run_and_check(h, a, 32u << 20, 4 << 10, 1 << 20, seed);
    const auto sizes = message_sizes(32u << 20, 4 << 10, 1 << 20, seed);
    CHECK(h.engines[1]->find_qp(b)->stats.reads_answered == before + sizes.size());
}

TEST_CASE("row 7 (READ): 1% single-bit corruption anywhere", "[fault]") {
    const std::uint64_t seed = 5707;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.corrupt.rate = 0.01;
    imp.corrupt.anywhere = true;
    h.fabric.set_impairment_all(imp);
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    run_and_check(h, a, 64u << 20, 4 << 10, 8 << 20, seed);
    CHECK(h.engines[0]->stats().rx_wire_errors[static_cast<std::size_t>(wire::WireError::bad_icrc)] > 0);
    (void)b;
}

TEST_CASE("row 9 (READ): 5% of the answers trimmed on one plane", "[fault]") {
    const std::uint64_t seed = 5909;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.trim.rate = 0.05;
    imp.trim.size_bytes = 128;
    h.fabric.set_impairment(1, 0, 2, imp);
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    run_and_check(h, a, 64u << 20, 4 << 10, 8 << 20, seed);
    const std::uint64_t trimmed = h.fabric.link_counters(1, 0, 2).trimmed;
    REQUIRE(trimmed > 0);
    CHECK(h.engines[0]->find_qp(a)->stats.trims_received == trimmed);
    CHECK(h.engines[1]->find_qp(b)->stats.data_pkts_resent == trimmed);  // NACK → only those PSNs
}

TEST_CASE("row 10 (READ): one of 8 planes blackholed, then restored, while READs flow", "[fault]") {
    const std::uint64_t seed = 6010;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment dark;
    dark.blackhole = true;
    h.fabric.schedule_impairment(h.now + 2'000'000, 1, 0, 4, dark);
    h.fabric.schedule_impairment(h.now + 200'000'000, 1, 0, 4, loopback::Impairment{});
    const auto [a, b] = h.connect(0, 1, adaptive_attr());
    run_and_check(h, a, 64u << 20, 4 << 10, 1 << 20, seed);
    CHECK(h.engines[0]->qp_info(a).state == QpState::rts);
    CHECK(h.engines[1]->qp_info(b).state == QpState::rts);
}

TEST_CASE("row 12 (READ): every answer lost longer than the retry budget", "[fault]") {
    // The requests arrive and are acknowledged; nothing the responder sends
    // back arrives. The READs fail by the requester's retry budget.
    const std::uint64_t seed = 6212;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    QpAttr attr = adaptive_attr();
    attr.timeout_ns = 2'000'000;
    attr.retry_cnt = 4;
    const auto [a, b] = h.connect(0, 1, attr);
    loopback::Impairment dark;
    dark.blackhole = true;
    h.fabric.set_impairment(1, 0, dark);
    GuardedTransfer t = make_guarded(8u << 20, seed);
    const auto sizes = message_sizes(t.src.size(), 64 << 10, 1 << 20, seed);
    h.memory[1]->add(t.rkey, t.src.data(), t.src.size());
    REQUIRE(h.engines[0]->submit(CmdPostSend{a, read_requests(t, sizes)}, h.now).err == 0);
    const TimeNs start = h.now;
    REQUIRE(h.run([&] { return h.completions[0].size() == sizes.size(); }, h.now + 1'000'000'000));
    const TimeNs budget = attr.timeout_ns * (attr.retry_cnt + 1);
    CAPTURE(h.now - start, budget);
    CHECK(h.now - start <= budget + budget / 10);
    CHECK(h.completions[0][0].status == WcStatus::retry_exc_err);
    for (std::size_t i = 1; i < h.completions[0].size(); ++i) CHECK(h.completions[0][i].status == WcStatus::wr_flush_err);
    CHECK(t.guards_intact());
    CHECK(std::all_of(t.dst(), t.dst() + t.src.size(), [](std::uint8_t x) { return x == 0; }));  // nothing placed
    h.memory[1]->remove(t.rkey);
    (void)b;
}
