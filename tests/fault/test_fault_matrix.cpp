// SPDX-License-Identifier: BSD-3-Clause
// The fault and bad-input matrix on the loopback driver, in virtual time.
// Each case is named after its row; invariants: BX = byte-exact, 1C = exactly
// one completion per signalled WR with the expected status, G = canaries
// around the destination untouched. Seeds are printed on failure.
#include "fault/fault_common.hpp"

using namespace omrc;
using namespace omrc::core;
using namespace omrc::test;

namespace {

loopback::FabricConfig fabric8(std::uint64_t seed) {
    loopback::FabricConfig f;
    f.planes = 8;
    f.seed = seed;
    f.link_delay_ns = 1'000;
    f.queue.rate_bps = 100'000'000'000;  // 8 × 100 Gb/s
    return f;
}

struct RunResult {
    bool finished = false;
    TimeNs elapsed_ns = 0;
};

/// Sends `t` from endpoint 0 to 1 as `sizes` messages with `depth` outstanding.
RunResult transfer(LoopbackHarness& h, std::uint32_t qpn, GuardedTransfer& t, const std::vector<std::size_t>& sizes,
                   std::size_t depth, TimeNs limit_ns) {
    h.memory[1]->add(t.rkey, t.dst(), t.src.size());
    Poster poster(h, 0, qpn, write_requests(t, sizes), depth);
    const TimeNs start = h.now;
    RunResult r;
    r.finished = h.run([&] { return h.completions[0].size() == sizes.size(); }, h.now + limit_ns,
                       [&] { poster.pump(); });
    r.elapsed_ns = h.now - start;
    return r;
}

QpAttr adaptive_attr() {
    QpAttr a;
    a.policy = PathPolicy::adaptive;
    a.evs = 128;
    a.mpr = 8;
    return a;
}

}  // namespace

TEST_CASE("row 1: 10% random loss on all paths, 1 GiB of WRITEs 4 KiB-8 MiB", "[fault]") {
    const std::uint64_t seed = 101;
    CAPTURE(seed);
    const std::size_t total = std::size_t{1} << 30;
    const auto sizes = message_sizes(total, 4 << 10, 8 << 20, seed);
    TimeNs lossless_ns = 0;
    {
        LoopbackHarness h(2, fabric8(seed));
        auto [a, b] = h.connect(0, 1, adaptive_attr());
        (void)b;
        GuardedTransfer t = make_guarded(total, seed);
        const RunResult r = transfer(h, a, t, sizes, 32, 10'000'000'000);
        REQUIRE(r.finished);
        REQUIRE(t.byte_exact());
        lossless_ns = r.elapsed_ns;
    }
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.loss.rate = 0.10;
    h.fabric.set_impairment_all(imp);
    auto [a, b] = h.connect(0, 1, adaptive_attr());
    (void)b;
    GuardedTransfer t = make_guarded(total, seed);
    const RunResult r = transfer(h, a, t, sizes, 32, 60'000'000'000);
    REQUIRE(r.finished);
    CHECK(t.byte_exact());
    CHECK(t.guards_intact());
    check_one_completion_each(h.completions[0], sizes.size());
    const double goodput_ratio = static_cast<double>(lossless_ns) / static_cast<double>(r.elapsed_ns);
    CAPTURE(lossless_ns, r.elapsed_ns, goodput_ratio);
    const auto& st = h.engines[0]->find_qp(a)->stats;
    WARN("sent " << st.data_pkts_sent << " resent " << st.data_pkts_resent << " po " << st.losses_path_order << " to "
                 << st.losses_timeout << " evto " << st.ev_timeouts << " retire " << st.ev_retirements << " sacks "
                 << st.sacks_received << " nacks " << st.nacks_received);
    CHECK(goodput_ratio >= 0.5);
    WARN("row 1: goodput with 10% loss = " << goodput_ratio << " of lossless (" << lossless_ns / 1000 << " us vs "
                                           << r.elapsed_ns / 1000 << " us virtual)");
}
