// SPDX-License-Identifier: BSD-3-Clause
// The fault and bad-input matrix on the loopback driver, in virtual time.
// Each case is named after its row; invariants: BX = byte-exact, 1C = exactly
// one completion per signalled WR with the expected status, G = canaries
// around the destination untouched. Seeds are printed on failure.
#include "fault/fault_common.hpp"

#include <cstdlib>
#include <functional>
#include <numeric>

#include "core/psn.hpp"

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

}  // namespace

TEST_CASE("row 1: 10% random loss on all paths, 1 GiB of WRITEs 4 KiB-8 MiB", "[fault][fault_long]") {
    const std::uint64_t seed = 101;
    CAPTURE(seed);
    const std::size_t total = std::size_t{1} << 30;
    const auto sizes = message_sizes(total, 4 << 10, 8 << 20, seed);
    TimeNs lossless_ns = 0;
    {
        LoopbackHarness h(2, fabric8(seed));
        const auto qpns = h.connect(0, 1, adaptive_attr());
        const std::uint32_t a = qpns.first, b = qpns.second;
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
    const auto qpns = h.connect(0, 1, adaptive_attr());
    const std::uint32_t a = qpns.first, b = qpns.second;
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

TEST_CASE("row 2: bursty loss (bursts 4-32) plus 2% loss on the ACK direction only", "[fault]") {
    const std::uint64_t seed = 202;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment data;
    data.burst_loss.p_good_to_bad = 0.002;
    data.burst_loss.p_bad_to_good = 1.0 / 16;  // mean burst 16 packets (bursts of 4-32 are typical)
    data.burst_loss.loss_bad = 1.0;
    h.fabric.set_impairment(0, 1, data);
    loopback::Impairment acks;
    acks.loss.rate = 0.02;
    acks.loss.select = loopback::Select::control;
    h.fabric.set_impairment(1, 0, acks);
    const auto qpns = h.connect(0, 1, adaptive_attr());
    const std::uint32_t a = qpns.first, b = qpns.second;
    (void)b;
    const std::size_t total = 256u << 20;
    const auto sizes = message_sizes(total, 4 << 10, 8 << 20, seed);
    GuardedTransfer t = make_guarded(total, seed);
    const RunResult r = transfer(h, a, t, sizes, 32, 10'000'000'000);
    REQUIRE(r.finished);
    CHECK(t.byte_exact());
    CHECK(t.guards_intact());
    check_one_completion_each(h.completions[0], sizes.size());
    // Keep running: stale and duplicate SACKs still arriving must not add a completion.
    h.run([] { return false; }, h.now + 2'000'000);
    CHECK(h.completions[0].size() == sizes.size());
    CHECK(h.fabric.link_counters(0, 1, 0).lost_burst + h.fabric.link_counters(0, 1, 3).lost_burst > 0);
}

TEST_CASE("row 4: per-path delay skew 0-500 us, no loss: few spurious retransmits", "[fault]") {
    const std::uint64_t seed = 404;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    for (std::uint32_t p = 0; p < 8; ++p) {
        loopback::Impairment skew;
        skew.delay.extra_ns = p * 500'000 / 7;  // plane 0: 0 µs … plane 7: 500 µs
        h.fabric.set_impairment(0, 1, p, skew);
        h.fabric.set_impairment(1, 0, p, skew);
    }
    QpAttr attr = adaptive_attr();
    attr.mpr = 32;  // 4096 packets: reorder depth up to the receive window
    const auto qpns = h.connect(0, 1, attr);
    const std::uint32_t a = qpns.first, b = qpns.second;
    (void)b;
    const std::size_t total = 256u << 20;
    const auto sizes = message_sizes(total, 64 << 10, 8 << 20, seed);
    GuardedTransfer t = make_guarded(total, seed);
    const RunResult r = transfer(h, a, t, sizes, 32, 10'000'000'000);
    REQUIRE(r.finished);
    CHECK(t.byte_exact());
    check_one_completion_each(h.completions[0], sizes.size());
    const auto& st = h.engines[0]->find_qp(a)->stats;
    const double spurious = static_cast<double>(st.data_pkts_resent) / static_cast<double>(st.data_pkts_sent);
    CAPTURE(st.data_pkts_resent, st.data_pkts_sent, spurious);
    CAPTURE(st.losses_path_order, st.losses_send_order, st.losses_timeout, st.resent_on_retirement, st.ev_retirements,
            st.ev_timeouts);
    CHECK(spurious < 0.01);
}

TEST_CASE("row 7: 1% single-bit corruption anywhere", "[fault]") {
    const std::uint64_t seed = 707;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.corrupt.rate = 0.01;
    imp.corrupt.anywhere = true;
    h.fabric.set_impairment_all(imp);
    const auto qpns = h.connect(0, 1, adaptive_attr());
    const std::uint32_t a = qpns.first, b = qpns.second;
    (void)b;
    const std::size_t total = 128u << 20;
    const auto sizes = message_sizes(total, 4 << 10, 8 << 20, seed);
    GuardedTransfer t = make_guarded(total, seed);
    const RunResult r = transfer(h, a, t, sizes, 32, 10'000'000'000);
    REQUIRE(r.finished);
    CHECK(t.byte_exact());
    CHECK(t.guards_intact());
    check_one_completion_each(h.completions[0], sizes.size());
    const auto& errs = h.engines[1]->stats().rx_wire_errors;
    CHECK(errs[static_cast<std::size_t>(wire::WireError::bad_icrc)] > 0);
}

TEST_CASE("row 9: 5% of data packets trimmed on one plane", "[fault]") {
    const std::uint64_t seed = 909;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.trim.rate = 0.05;
    imp.trim.size_bytes = 128;
    h.fabric.set_impairment(0, 1, 2, imp);
    const auto qpns = h.connect(0, 1, adaptive_attr());
    const std::uint32_t a = qpns.first, b = qpns.second;
    const std::size_t total = 128u << 20;
    const auto sizes = message_sizes(total, 4 << 10, 8 << 20, seed);
    GuardedTransfer t = make_guarded(total, seed);
    const RunResult r = transfer(h, a, t, sizes, 32, 10'000'000'000);
    REQUIRE(r.finished);
    CHECK(t.byte_exact());
    check_one_completion_each(h.completions[0], sizes.size());
    const auto& sa = h.engines[0]->find_qp(a)->stats;
    const auto& sb = h.engines[1]->find_qp(b)->stats;
    const std::uint64_t trimmed = h.fabric.link_counters(0, 1, 2).trimmed;
    REQUIRE(trimmed > 0);
    CHECK(sb.trims_received == trimmed);
    CHECK(sa.trims_nacked == trimmed);
    CHECK(sa.data_pkts_resent == trimmed);  // NACK → only those PSNs
    CHECK(sa.ev_retirements == 0);          // trims alone never retire a path
}

TEST_CASE("row 10: one of 8 planes blackholed for 10 s, then restored", "[fault]") {
    const std::uint64_t seed = 1010;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    const auto qpns = h.connect(0, 1, adaptive_attr());
    const std::uint32_t a = qpns.first, b = qpns.second;
    (void)b;
    // A steady stream: one 32 KiB WRITE every 200 µs for 12 s of virtual time.
    const TimeNs period = 200'000;
    const TimeNs t_black = h.now + 1'000'000'000, t_restore = t_black + 10'000'000'000, t_end = t_restore + 1'000'000'000;
    loopback::Impairment dark;
    dark.blackhole = true;
    h.fabric.schedule_impairment(t_black, 0, 1, 4, dark);
    h.fabric.schedule_impairment(t_restore, 0, 1, 4, loopback::Impairment{});
    GuardedTransfer t = make_guarded(32 << 10, seed);
    h.memory[1]->add(t.rkey, t.dst(), t.src.size());
    SteadyStream stream(h, 0, a, t, period, t_end);
    std::vector<TimeNs> completion_times;
    std::size_t seen = 0;
    TimeNs plane_back_ns = 0;
    std::uint64_t sent_on_plane_at_restore = 0, sent_on_plane_at_back = 0, sent_all_at_back = 0;
    h.run([&] { return h.now >= t_end; }, t_end + 1, [&] {
        stream.pump();
        for (; seen < h.completions[0].size(); ++seen) completion_times.push_back(h.now);
        const std::uint64_t sent4 = sent_on_plane(h, 0, a, 4);
        if (h.now >= t_restore && sent_on_plane_at_restore == 0) sent_on_plane_at_restore = sent4 + 1;
        // Back: the plane carries data again (one packet of each 8-packet WRITE).
        if (plane_back_ns == 0 && sent_on_plane_at_restore != 0 && sent4 + 1 > sent_on_plane_at_restore) {
            plane_back_ns = h.now;
            sent_on_plane_at_back = sent4;
            sent_all_at_back = h.engines[0]->find_qp(a)->stats.data_pkts_sent;
        }
    }, [&] { return stream.next_ns(); });
    const std::uint64_t posted = stream.posted();
    for (const auto& c : h.completions[0]) REQUIRE(c.status == WcStatus::success);
    CHECK(h.engines[0]->qp_info(a).state == QpState::rts);
    TimeNs max_gap = 0;
    for (std::size_t i = 1; i < completion_times.size(); ++i) max_gap = std::max(max_gap, completion_times[i] - completion_times[i - 1]);
    const TimeNs rto = h.engines[0]->config().ev_timeout_ns;
    CAPTURE(max_gap, rto, posted, completion_times.size());
    CHECK(max_gap <= period + rto + 1'000'000);
    REQUIRE(plane_back_ns != 0);
    const TimeNs probe_interval = h.engines[0]->config().probe_interval_ns;
    CAPTURE(plane_back_ns - t_restore, probe_interval);
    // The first probe after the restore goes out within one probe interval
    // (or when the one outstanding expires, one EV timeout): the plane is in
    // use again one round trip after its answer.
    CHECK(plane_back_ns - t_restore <= probe_interval + rto + 20'000);
    // From then on it carries its eighth of the packets.
    const std::uint64_t all = h.engines[0]->find_qp(a)->stats.data_pkts_sent - sent_all_at_back;
    const std::uint64_t on_plane = sent_on_plane(h, 0, a, 4) - sent_on_plane_at_back;
    CAPTURE(all, on_plane);
    CHECK(on_plane * 8 >= all * 9 / 10);
}

TEST_CASE("row 10b: one T1 of one plane lost and returned: its share, nothing more", "[fault]") {
    // SRv6 mode on a fabric of 8 planes x 4 T1s (the two hosts under
    // different T0s, so every path crosses a T1): the engine knows which T1
    // each EV takes. T1 2 of plane 5 drops everything both ways for a while.
    const std::uint64_t seed = 1011;
    CAPTURE(seed);
    core::EngineConfig ec;
    ec.mode = wire::FrameMode::srv6;
    ec.fabric = {0xFCBB0000, 8, 2, 4, 1};
    LoopbackHarness h(2, fabric8(seed), ec);
    const auto qpns = h.connect(0, 1, adaptive_attr());
    const std::uint32_t a = qpns.first;
    auto phase = [&](std::uint64_t phase_seed) {
        return transfer_rate(h, a, 256u << 20, phase_seed, static_cast<std::uint32_t>(0x5EC000 + phase_seed));
    };
    const double before = phase(seed);
    loopback::Impairment lost;
    lost.blackhole_t1 = {4, 2};
    h.fabric.set_impairment(0, 1, 5, lost);
    h.fabric.set_impairment(1, 0, 5, lost);
    const double during = phase(seed + 1);
    h.fabric.set_impairment(0, 1, 5, loopback::Impairment{});
    h.fabric.set_impairment(1, 0, 5, loopback::Impairment{});
    h.run([] { return false; }, h.now + 2'000'000);  // probes bring the T1 back
    const double after = phase(seed + 2);
    const auto& st = h.engines[0]->find_qp(a)->stats;
    CAPTURE(before, during, after, st.ev_retirements, st.ev_restorations, st.data_pkts_resent, st.probes_sent);
    const double healthy_share = 31.0 / 32.0;
    CHECK(during >= 0.98 * healthy_share * before);
    CHECK(after >= 0.99 * before);
    CHECK(st.ev_retirements >= 1);
    CHECK(st.ev_restorations == st.ev_retirements);  // every EV came back
    CHECK(h.engines[0]->find_qp(a)->paths.parked() == 0);
    CHECK(h.engines[0]->find_qp(a)->paths.bad().empty());
    CHECK(h.engines[0]->qp_info(a).state == QpState::rts);
}

namespace {

/// WRITE_WITH_IMM requests, one per message, imm = message index.
std::vector<core::SendRequest> imm_requests(GuardedTransfer& t, const std::vector<std::size_t>& sizes) {
    auto wrs = write_requests(t, sizes);
    for (std::size_t i = 0; i < wrs.size(); ++i) {
        wrs[i].with_imm = true;
        wrs[i].imm_data = 0x1000u + static_cast<std::uint32_t>(i);
    }
    return wrs;
}

void post_recvs(LoopbackHarness& h, std::uint32_t ep, std::uint32_t qpn, std::size_t n, std::uint64_t first_id = 0) {
    for (std::size_t i = 0; i < n; ++i) {
        RecvRequest r{first_id + i, 0};
        REQUIRE(h.engines[ep]->submit(CmdPostRecv{qpn, std::span(&r, 1)}, h.now).err == 0);
    }
}

std::size_t recv_completions(const std::vector<Completion>& v) {
    return static_cast<std::size_t>(
        std::count_if(v.begin(), v.end(), [](const Completion& c) { return c.opcode == WcOpcode::recv_rdma_with_imm; }));
}

}  // namespace

TEST_CASE("row 5: 5% duplication and late duplicates after the CQE while the buffer is rewritten", "[fault]") {
    const std::uint64_t seed = 505;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    QpAttr attr = adaptive_attr();
    QpCaps caps;
    caps.max_recv_wr = 1024;
    const auto qpns = h.connect(0, 1, attr, caps);
    const std::uint32_t a = qpns.first, b = qpns.second;
    const TimeNs rto = h.engines[0]->config().ev_timeout_ns;
    loopback::Impairment imp;
    imp.duplicate.rate = 0.05;
    imp.duplicate.extra_delay_ns = 2 * rto;  // copies land long after the completion
    h.fabric.set_impairment(0, 1, imp);
    const std::size_t total = 16u << 20;
    const auto sizes = message_sizes(total, 4 << 10, 1 << 20, seed);
    GuardedTransfer t = make_guarded(total, seed);
    h.memory[1]->add(t.rkey, t.dst(), total);
    post_recvs(h, 1, b, sizes.size() + 8);
    Poster poster(h, 0, a, imm_requests(t, sizes), 32);
    REQUIRE(h.run([&] { return h.completions[0].size() == sizes.size() && recv_completions(h.completions[1]) == sizes.size(); },
                  h.now + 10'000'000'000, [&] { poster.pump(); }));
    CHECK(t.byte_exact());
    // The application reuses the buffer at once; late duplicates keep arriving.
    std::memset(t.dst(), 0xEE, total);
    h.run([] { return false; }, h.now + 4 * rto);
    CHECK(std::all_of(t.dst(), t.dst() + total, [](std::uint8_t x) { return x == 0xEE; }));
    CHECK(t.guards_intact());
    CHECK(h.completions[0].size() == sizes.size());           // no second send CQE
    CHECK(recv_completions(h.completions[1]) == sizes.size()); // no second RECV consumed
    CHECK(h.fabric.link_counters(0, 1, 0).duplicated + h.fabric.link_counters(0, 1, 1).duplicated > 0);
    CHECK(h.engines[1]->find_qp(b)->stats.duplicates > 0);
}

TEST_CASE("row 6: WRITE_IMM chains under heavy reordering", "[fault]") {
    const std::uint64_t seed = 606;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.delay.jitter_ns = 200'000;  // 0-200 µs per packet: deep reordering within and across paths
    h.fabric.set_impairment(0, 1, imp);
    QpCaps caps;
    caps.max_recv_wr = 1024;
    const auto qpns = h.connect(0, 1, adaptive_attr(), caps);
    const std::uint32_t a = qpns.first, b = qpns.second;
    const std::size_t total = 32u << 20;
    const auto sizes = message_sizes(total, 4 << 10, 2 << 20, seed);
    GuardedTransfer t = make_guarded(total, seed);
    h.memory[1]->add(t.rkey, t.dst(), total);
    post_recvs(h, 1, b, sizes.size());
    Poster poster(h, 0, a, imm_requests(t, sizes), 64);
    std::vector<std::size_t> ends(sizes.size());
    std::partial_sum(sizes.begin(), sizes.end(), ends.begin());
    std::size_t checked = 0, bad = 0;
    std::uint32_t expect_imm = 0x1000;
    REQUIRE(h.run([&] {
        for (; checked < h.completions[1].size(); ++checked) {
            const Completion& c = h.completions[1][checked];
            if (c.opcode != WcOpcode::recv_rdma_with_imm) continue;
            // imm values in post order, and everything up to this message already placed
            if (c.imm_data != expect_imm) ++bad;
            const std::size_t msg = c.imm_data - 0x1000u;
            if (msg >= ends.size() || std::memcmp(t.src.data(), t.dst(), ends[msg]) != 0) ++bad;
            ++expect_imm;
        }
        return recv_completions(h.completions[1]) == sizes.size() && h.completions[0].size() == sizes.size();
    }, h.now + 10'000'000'000, [&] { poster.pump(); }));
    CHECK(bad == 0);
    CHECK(t.byte_exact());
}

TEST_CASE("row 8: truncated and malformed frames are dropped by reason without a state change", "[fault]") {
    LoopbackHarness h(2, fabric8(808));
    const auto qpns = h.connect(0, 1, adaptive_attr());
    const std::uint32_t a = qpns.first, b = qpns.second;
    (void)a;
    GuardedTransfer t = make_guarded(64 << 10, 808);
    h.memory[1]->add(t.rkey, t.dst(), t.src.size());
    Engine& rx = *h.engines[1];
    const Qp* qb = rx.find_qp(b);
    // A valid data frame for B's QP, and the frames derived from it.
    wire::FrameSpec s;
    s.eth.dst = loopback::Fabric::mac(1, 0);
    s.ip.src = LoopbackHarness::addr(0);
    s.ip.dst = LoopbackHarness::addr(1);
    s.ev = 0x1001ABCD;
    s.bth.opcode = wire::Opcode::write_only;
    s.bth.dest_qp = b;
    s.bth.psn = psn_add(qb->rcv_cack, 5);
    s.reth = {reinterpret_cast<std::uint64_t>(t.dst()), t.rkey, 256};
    std::vector<std::uint8_t> good(512);
    std::size_t len = 0;
    REQUIRE(wire::build_frame(good, s, std::span(t.src.data(), 256), len) == wire::WireError::ok);
    good.resize(len);
    auto total_drops = [&] {
        std::uint64_t n = 0;
        for (auto x : rx.stats().rx_wire_errors) n += x;
        for (auto x : rx.stats().rx_drops) n += x;
        return n;
    };
    const std::size_t hdr = wire::header_size(s);
    std::vector<std::vector<std::uint8_t>> bad;
    for (std::size_t n = 0; n < hdr + 16; ++n) bad.emplace_back(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    auto mutate = [&](std::size_t off, std::uint8_t v) {
        auto f = good;
        f[off] = v;
        bad.push_back(f);
    };
    mutate(14 + 4, 0xFF);   // IPv6 payload length too large
    mutate(14 + 5, 0x01);   // too small
    mutate(54 + 4, 0x7F);   // UDP length wrong
    mutate(62, 0x42);       // unknown opcode
    mutate(62, 0xFF);
    mutate(14 + 6, 43);     // claims an SRH that is not there
    {
        auto f = good;  // an SRH with bogus lengths / segments left
        std::vector<std::uint8_t> srh = {41, 200, 4, 9, 1, 0, 0, 0};
        f[14 + 6] = 43;
        f.insert(f.begin() + 54, srh.begin(), srh.end());
        bad.push_back(f);
    }
    const std::uint64_t placed = h.memory[1]->placed_bytes;
    std::uint64_t expected = total_drops();
    for (const auto& f : bad) {
        rx.on_rx(f, 0, h.now);
        ++expected;
        REQUIRE(total_drops() == expected);  // every frame dropped, and counted once
    }
    CHECK(h.memory[1]->placed_bytes == placed);
    CHECK(rx.qp_info(b).state == QpState::rts);
    CHECK(rx.stats().rx_wire_errors[static_cast<std::size_t>(wire::WireError::unknown_opcode)] >= 2);
    // The valid frame is still accepted afterwards.
    rx.on_rx(good, 0, h.now);
    CHECK(h.memory[1]->placed_bytes == placed + 256);
}

TEST_CASE("row 11: port link down/up every 2 s for 60 s", "[fault][fault_long]") {
    const std::uint64_t seed = 1111;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    const auto qpns = h.connect(0, 1, adaptive_attr());
    const std::uint32_t a = qpns.first, b = qpns.second;
    (void)b;
    const TimeNs start = h.now, end = start + 61'000'000'000;
    for (int k = 0; k < 30; ++k) {
        h.fabric.schedule_link(start + 1'000'000'000 + static_cast<TimeNs>(k) * 2'000'000'000, 0, 3, false);
        h.fabric.schedule_link(start + 2'000'000'000 + static_cast<TimeNs>(k) * 2'000'000'000, 0, 3, true);
    }
    GuardedTransfer t = make_guarded(32 << 10, seed);
    h.memory[1]->add(t.rkey, t.dst(), t.src.size());
    SteadyStream stream(h, 0, a, t, 2'000'000, end);
    std::uint64_t sent_while_down = 0, peer_told = 0, down_events = 0, last_sent_plane3 = 0;
    bool was_down = false;
    h.run([&] { return h.now >= end; }, end + 1, [&] {
        stream.pump();
        const bool down = !(h.engines[0]->local_plane_mask() & (1u << 3));
        const std::uint64_t sent3 = sent_on_plane(h, 0, a, 3);
        if (down && !was_down) {
            ++down_events;
            last_sent_plane3 = sent3;
        }
        if (down) {
            sent_while_down += sent3 - last_sent_plane3;
            last_sent_plane3 = sent3;
            if (!(h.engines[1]->peer_plane_mask(LoopbackHarness::addr(0)) & (1u << 3))) ++peer_told;
        }
        was_down = down;
    }, [&] { return stream.next_ns(); });
    const std::uint64_t posted = stream.posted();
    CHECK(down_events == 30);
    CHECK(sent_while_down == 0);  // the port's EVs leave the active set on the first event
    CHECK(peer_told > 0);         // the peer learnt the plane is down
    CHECK(h.engines[0]->qp_info(a).state == QpState::rts);
    for (const auto& c : h.completions[0]) REQUIRE(c.status == WcStatus::success);
    CHECK(h.completions[0].size() + 2 >= posted);
    CHECK(h.engines[0]->stats().ctrl_queue_overflow == 0);
    CHECK(h.engines[0]->peer_plane_mask(LoopbackHarness::addr(1)) == ~0u);
    CHECK(h.engines[1]->peer_plane_mask(LoopbackHarness::addr(0)) & (1u << 3));  // back up at the end
}

TEST_CASE("row 12: every path down longer than the retry budget", "[fault]") {
    const std::uint64_t seed = 1212;
    CAPTURE(seed);
    LoopbackHarness h(2, fabric8(seed));
    QpAttr attr = adaptive_attr();
    attr.timeout_ns = 2'000'000;
    attr.retry_cnt = 4;
    const auto qpns = h.connect(0, 1, attr);
    const std::uint32_t a = qpns.first, b = qpns.second;
    (void)b;
    loopback::Impairment dark;
    dark.blackhole = true;
    h.fabric.set_impairment(0, 1, dark);
    GuardedTransfer t = make_guarded(8u << 20, seed);
    const auto sizes = message_sizes(t.src.size(), 64 << 10, 1 << 20, seed);
    h.memory[1]->add(t.rkey, t.dst(), t.src.size());
    auto wrs = write_requests(t, sizes);
    for (std::size_t i = 0; i < wrs.size(); i += 2) wrs[i].signaled = false;  // errors are reported anyway
    const TimeNs start = h.now;
    REQUIRE(h.engines[0]->submit(CmdPostSend{a, wrs}, h.now).err == 0);
    REQUIRE(h.run([&] { return h.completions[0].size() == sizes.size(); }, h.now + 1'000'000'000));
    const TimeNs budget = attr.timeout_ns * (attr.retry_cnt + 1);
    const TimeNs took = h.now - start;
    CAPTURE(took, budget);
    CHECK(took >= budget - budget / 10);
    CHECK(took <= budget + budget / 10);
    CHECK(h.completions[0][0].status == WcStatus::retry_exc_err);
    std::vector<int> seen(sizes.size(), 0);
    for (std::size_t i = 0; i < h.completions[0].size(); ++i) {
        const auto& c = h.completions[0][i];
        ++seen[c.wr_id];
        if (i > 0) CHECK(c.status == WcStatus::wr_flush_err);
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int x) { return x == 1; }));
    // No hang and nothing more afterwards.
    h.run([] { return false; }, h.now + 10'000'000);
    CHECK(h.completions[0].size() == sizes.size());
}

namespace {

/// A control frame from B to A's QP built from scratch (what a forger can do).
std::vector<std::uint8_t> forge(const LoopbackHarness& h, wire::Opcode op, std::uint32_t to_qpn,
                                const std::function<void(wire::FrameSpec&)>& fill) {
    wire::FrameSpec s;
    s.eth.dst = loopback::Fabric::mac(0, 0);
    s.ip.src = LoopbackHarness::addr(1);
    s.ip.dst = LoopbackHarness::addr(0);
    s.ev = 0x1001ABCD;
    s.bth.opcode = op;
    s.bth.dest_qp = to_qpn;
    fill(s);
    std::vector<std::uint8_t> f(512);
    std::size_t len = 0;
    if (wire::build_frame(f, s, {}, len) != wire::WireError::ok) throw std::runtime_error("forge");
    f.resize(len);
    (void)h;
    return f;
}

}  // namespace

TEST_CASE("row 13: forged SACK/NACK/ACK are ignored and counted", "[fault]") {
    LoopbackHarness h(2, fabric8(1313));
    const auto qpns = h.connect(0, 1, adaptive_attr());
    const std::uint32_t a = qpns.first, b = qpns.second;
    GuardedTransfer t = make_guarded(1 << 20, 1313);
    h.memory[1]->add(t.rkey, t.dst(), t.src.size());
    // Put data in flight but deliver nothing back yet.
    loopback::Impairment hold;
    hold.blackhole = true;
    h.fabric.set_impairment(1, 0, hold);
    auto wrs = write_requests(t, {t.src.size()});
    REQUIRE(h.engines[0]->submit(CmdPostSend{a, wrs}, h.now).err == 0);
    h.step();
    Engine& tx = *h.engines[0];
    const Qp* qa = tx.find_qp(a);
    const std::uint16_t ida = tx.qp_info(a).conn_id, idb = h.engines[1]->qp_info(b).conn_id;
    const std::uint32_t una = qa->snd_una, nxt = qa->snd_nxt;
    REQUIRE(nxt != una);
    auto drops = [&](DropReason r) { return tx.stats().rx_drops[static_cast<std::size_t>(r)]; };
    std::vector<std::vector<std::uint8_t>> frames;
    auto sack = [&](std::uint32_t cack, std::int16_t off, std::uint64_t bm, std::uint16_t src, std::uint16_t dst) {
        frames.push_back(forge(h, wire::Opcode::sack, a, [&](wire::FrameSpec& s) {
            s.seth.cack_psn = cack;
            s.seth.sack_offset = off;
            s.seth.bitmap = bm;
            s.seth.src_conn_id = src;
            s.seth.dst_conn_id = dst;
            s.seth.mpr = 255;
        }));
    };
    sack(psn_add(nxt, 10), 1, 0, idb, ida);            // cumulative ack of unsent PSNs
    sack(una, 32767, ~0ull, idb, ida);                 // bitmap far beyond the send edge
    sack(nxt, -32768, ~0ull, idb, ida);                // one past the send edge, huge negative offset
    sack(psn_add(nxt, 0x7FFFFF), 1, ~0ull, idb, ida);  // half the PSN space away
    sack(psn_add(nxt, -1), 1, 0, 0x1234, ida);         // wrong connection ids
    frames.push_back(forge(h, wire::Opcode::nack, a, [&](wire::FrameSpec& s) {
        s.neth = {.reason = 1, .src_conn_id = idb, .dst_conn_id = ida, .nack_psn = psn_add(nxt, 5)};  // NACK for an unsent PSN
    }));
    frames.push_back(forge(h, wire::Opcode::nack, a, [&](wire::FrameSpec& s) {
        s.neth = {.reason = 1, .src_conn_id = 0x4321, .dst_conn_id = 0x1234, .nack_psn = una};  // NACK with the wrong ids
    }));
    frames.push_back(forge(h, wire::Opcode::ack, a, [&](wire::FrameSpec& s) {
        s.bth.psn = psn_add(nxt, 7);  // a NAK names its packet's PSN: this one was never sent
        s.aeth = {static_cast<std::uint8_t>(wire::AethSyndrome::nak_remote_access), 0x7777};  // NAK for no message
    }));
    const auto before = drops(DropReason::forged_ack) + drops(DropReason::bad_conn_id);
    for (const auto& f : frames) tx.on_rx(f, 0, h.now);
    CHECK(drops(DropReason::forged_ack) + drops(DropReason::bad_conn_id) == before + frames.size());
    CHECK(h.completions[0].empty());
    tx.on_timer(h.now);
    CHECK(qa->snd_una == una);
    CHECK(qa->state == QpState::rts);
    CHECK(qa->stats.pkts_sacked == 0);
    // The real transfer still completes once the reverse path works.
    h.fabric.set_impairment(1, 0, loopback::Impairment{});
    REQUIRE(h.run([&] { return h.completions[0].size() == 1; }, h.now + 1'000'000'000));
    CHECK(h.completions[0][0].status == WcStatus::success);
    CHECK(t.byte_exact());
}

TEST_CASE("row 19: off-path spoofing writes nothing", "[fault]") {
    LoopbackHarness h(3, fabric8(1919));
    const auto qpns = h.connect(0, 1, adaptive_attr());
    const std::uint32_t a = qpns.first, b = qpns.second;
    (void)a;
    GuardedTransfer t = make_guarded(1 << 20, 1919);
    h.memory[1]->add(t.rkey, t.dst(), t.src.size());
    Engine& rx = *h.engines[1];
    const Qp* qb = rx.find_qp(b);
    std::mt19937 rng(1919);
    auto data = [&](const wire::Ipv6Addr& from, std::uint32_t psn) {
        wire::FrameSpec s;
        s.eth.dst = loopback::Fabric::mac(1, 0);
        s.ip.src = from;
        s.ip.dst = LoopbackHarness::addr(1);
        s.ev = rng();
        s.bth.opcode = wire::Opcode::write_only;
        s.bth.dest_qp = b;
        s.bth.psn = psn;
        s.reth = {reinterpret_cast<std::uint64_t>(t.dst()), t.rkey, 1024};
        std::vector<std::uint8_t> f(2048);
        std::size_t len = 0;
        REQUIRE(wire::build_frame(f, s, std::span(t.src.data(), 1024), len) == wire::WireError::ok);
        f.resize(len);
        return f;
    };
    const std::uint64_t placed = h.memory[1]->placed_bytes;
    // Valid QPN, random PSNs, from the right address (an off-path attacker spoofing the peer).
    std::uint64_t in_window = 0;
    for (int i = 0; i < 1000; ++i) {
        const std::uint32_t psn = rng() & 0xFFFFFF;
        const std::int32_t d = psn_diff(psn, qb->rcv_cack);
        if (d > 0 && d <= static_cast<std::int32_t>(qb->rcv_window)) {
            ++in_window;
            continue;  // a lucky guess inside the window is indistinguishable without authentication
        }
        rx.on_rx(data(LoopbackHarness::addr(0), psn), 0, h.now);
    }
    // In-window PSNs from a wrong source (the third endpoint).
    for (int i = 1; i <= 200; ++i) rx.on_rx(data(LoopbackHarness::addr(2), psn_add(qb->rcv_cack, i)), 0, h.now);
    CHECK(h.memory[1]->placed_bytes == placed);
    CHECK(std::all_of(t.dst(), t.dst() + t.src.size(), [](std::uint8_t x) { return x == 0; }));
    CHECK(t.guards_intact());
    CHECK(rx.qp_info(b).state == QpState::rts);
    CHECK(rx.stats().rx_drops[static_cast<std::size_t>(DropReason::wrong_source)] == 200);
    CHECK(rx.stats().rx_drops[static_cast<std::size_t>(DropReason::out_of_window)] +
              rx.stats().rx_drops[static_cast<std::size_t>(DropReason::duplicate)] ==
          1000 - in_window);
}

TEST_CASE("row 21: PSN wrap with 1% reordering and delayed duplicates", "[fault]") {
    // The QPs start 256 PSNs before the 24-bit wrap (LoopbackHarness::connect)
    // and send 2^18 small packets: the wrap is crossed with reordering and late
    // duplicates in flight. Three full wraps (3 · 2^24 packets) are the
    // OMRC_STRESS run of this case.
    const std::uint64_t seed = 2121;
    CAPTURE(seed);
    const char* stress = std::getenv("OMRC_STRESS");
    const std::size_t packets = stress ? (std::size_t{3} << 24) + 4096 : std::size_t{1} << 18;
    LoopbackHarness h(2, fabric8(seed));
    loopback::Impairment imp;
    imp.delay.jitter_ns = 20'000;
    imp.duplicate.rate = 0.01;
    imp.duplicate.extra_delay_ns = 300'000;
    h.fabric.set_impairment(0, 1, imp);
    QpAttr attr = adaptive_attr();
    attr.mtu_bytes = 256;
    const auto qpns = h.connect(0, 1, attr);
    const std::uint32_t a = qpns.first, b = qpns.second;
    const std::size_t total = packets * 256;
    // The destination is reused every 16 MiB: a duplicate of an old PSN would land on newer data.
    const std::size_t window = std::min<std::size_t>(total, 16u << 20);
    GuardedTransfer t = make_guarded(window, seed);
    h.memory[1]->add(t.rkey, t.dst(), window);
    std::size_t next = 0, done_bytes = 0;
    std::uint64_t round = 0;
    auto refill = [&] {
        // Rounds of the same buffer with a different pattern each.
        fill_random(t.src, seed + round);
        ++round;
    };
    refill();
    bool ok = true;
    while (done_bytes < total && ok) {
        const std::size_t n = std::min(window, total - done_bytes);
        const auto sizes = message_sizes(n, 64 << 10, 1 << 20, seed + round);
        auto wrs = write_requests(t, sizes, next);
        Poster poster(h, 0, a, wrs, 32);
        const std::size_t target = h.completions[0].size() + sizes.size();
        ok = h.run([&] { return h.completions[0].size() == target; }, h.now + 100'000'000'000, [&] { poster.pump(); });
        const auto* q = h.engines[0]->find_qp(a);
        INFO("round " << round << " now " << h.now << " una " << q->snd_una << " nxt " << q->snd_nxt << " resend "
                      << q->resend.size() << " inflight " << q->inflight_bytes << " sq " << q->sq_count << "/"
                      << q->sq_unsegmented << " state " << int(q->state) << " completions " << h.completions[0].size()
                      << "/" << target << " posted " << poster.posted() << " next_scan " << q->next_scan_ns
                      << " rcv_cack " << h.engines[1]->find_qp(b)->rcv_cack << " cwnd " << q->cc->window_bytes()
                      << " evto " << q->stats.ev_timeouts << " parked " << q->paths.parked());
        REQUIRE(ok);
        REQUIRE(std::memcmp(t.src.data(), t.dst(), n) == 0);
        next += sizes.size();
        done_bytes += n;
        refill();
    }
    // Let the last late duplicates land: nothing may change.
    std::vector<std::uint8_t> snapshot(t.dst(), t.dst() + window);
    h.run([] { return false; }, h.now + 2'000'000);
    CHECK(std::memcmp(snapshot.data(), t.dst(), window) == 0);
    CHECK(t.guards_intact());
    const auto* qa = h.engines[0]->find_qp(a);
    CHECK(qa->stats.data_pkts_sent >= packets);
    CHECK(qa->snd_nxt < 0xFFFF00);  // the PSN space wrapped
    for (const auto& c : h.completions[0]) REQUIRE(c.status == WcStatus::success);
}

TEST_CASE("row 23: WRITE_IMM with no receive posted for 50 ms", "[fault]") {
    LoopbackHarness h(2, fabric8(2323));
    const auto qpns = h.connect(0, 1, adaptive_attr());
    const std::uint32_t a = qpns.first, b = qpns.second;
    GuardedTransfer t = make_guarded(256 << 10, 2323);
    h.memory[1]->add(t.rkey, t.dst(), t.src.size());
    auto wrs = imm_requests(t, {t.src.size()});
    REQUIRE(h.engines[0]->submit(CmdPostSend{a, wrs}, h.now).err == 0);
    // Documented behaviour: the data is placed and acknowledged (the sender
    // completes), the receive completion waits for a receive to be posted.
    h.run([] { return false; }, h.now + 50'000'000);
    REQUIRE(h.completions[0].size() == 1);
    CHECK(h.completions[0][0].status == WcStatus::success);
    CHECK(recv_completions(h.completions[1]) == 0);
    CHECK(t.byte_exact());
    CHECK(h.engines[1]->qp_info(b).state == QpState::rts);
    post_recvs(h, 1, b, 1, 99);
    REQUIRE(h.run([&] { return recv_completions(h.completions[1]) == 1; }, h.now + 1'000'000));
    const Completion& c = h.completions[1].back();
    CHECK(c.wr_id == 99);
    CHECK(c.imm_data == 0x1000u);
    CHECK(c.byte_len == t.src.size());
}
