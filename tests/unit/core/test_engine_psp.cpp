// SPDX-License-Identifier: BSD-3-Clause
// Encrypted mode through the engine's sans-IO API (docs/PROTOCOL.md §12):
// every frame of an encrypted QP leaves sealed and nothing plain is
// accepted; transfers stay byte-exact under loss and reordering; forged,
// tampered and replayed frames are dropped before any state changes and
// counted by reason; keys rotate under loss without a frame accepted under
// a retired epoch; a missing master key fails the set-up. The fault-matrix
// rows 19 and 27-30 in their engine form.
#include <catch2/catch.hpp>

#include <random>

#include "support/engine_pair.hpp"
#include "support/engine_requests.hpp"
#include "wire/bth_peek.hpp"
#include "wire/icrc.hpp"
#include "wire/psp.hpp"

using namespace omrc;
using namespace omrc::core;
using omrc::test::EnginePair;
using omrc::test::Fate;
using omrc::test::random_bytes;

namespace {

EngineConfig keyed_config(std::uint8_t fill = 0x42) {
    EngineConfig c;
    for (std::size_t i = 0; i < 32; ++i) c.security.master_keys[0][i] = static_cast<std::uint8_t>(fill + 3 * i);
    c.security.present = 1;
    return c;
}

QpAttr encrypted_attr(wire::PspVersion v = wire::PspVersion::aes_gcm_256) {
    QpAttr a = omrc::test::fixed_window_attr();
    a.encrypt = true;
    a.psp_version = v;
    return a;
}

std::uint64_t dropped(const Engine& e, DropReason r) { return e.stats().rx_drops[static_cast<std::size_t>(r)]; }
std::uint64_t wire_errors(const Engine& e, wire::WireError r) {
    return e.stats().rx_wire_errors[static_cast<std::size_t>(r)];
}

/// A WRITE transfer of `bytes` in `msg`-byte messages from A to B's guarded memory.
struct Transfer {
    EnginePair& pair;
    std::uint32_t qa, qb;
    std::vector<std::uint8_t> src, dst;
    std::uint32_t rkey = 0x5151;
    std::size_t msgs = 0;
    Transfer(EnginePair& p, std::pair<std::uint32_t, std::uint32_t> q, std::size_t bytes, std::uint64_t seed)
        : pair(p), qa(q.first), qb(q.second), src(random_bytes(bytes, seed)), dst(bytes, 0) {
        pair.memory[1].add(rkey, dst.data(), dst.size());
    }
    void post(std::size_t msg) {
        const auto wrs = omrc::test::make_write_wrs(src.data(), dst.data(), src.size(), rkey, msg);
        msgs += wrs.size();
        REQUIRE(pair.engines[0]->submit(CmdPostSend{qa, wrs}, pair.now).err == 0);
    }
    [[nodiscard]] std::size_t done() const { return pair.completions[0].size(); }
    bool run(core::TimeNs budget = 2'000'000'000) {
        return pair.run([&] { return done() >= msgs; }, pair.now + budget);
    }
};

/// The frame's UDP destination port (the IPv6 header at 14: plain mode).
std::uint16_t udp_dport(const std::vector<std::uint8_t>& f) { return wire::load_be16(&f[14 + 40 + 2]); }

}  // namespace

TEST_CASE("Engine::psp__every_frame_sealed_transfer_byte_exact", "[unit][core][psp]") {
    for (const auto v : {wire::PspVersion::aes_gcm_128, wire::PspVersion::aes_gcm_256}) {
        EnginePair pair(keyed_config());
        std::uint64_t plain_seen = 0, sealed_seen = 0;
        pair.hook = [&](int, std::uint8_t, std::vector<std::uint8_t>& f) {
            (udp_dport(f) == wire::kPspUdpPort ? sealed_seen : plain_seen)++;
            wire::PspLayout l;
            if (udp_dport(f) == wire::kPspUdpPort) REQUIRE(wire::locate_psp(f, l) == wire::WireError::ok);
            return Fate{};
        };
        Transfer t(pair, pair.connect(encrypted_attr(v)), 1 << 20, 7);
        t.post(64 << 10);
        REQUIRE(t.run());
        CHECK(t.dst == t.src);
        CHECK(plain_seen == 0);
        CHECK(sealed_seen > 256);
        for (const Completion& c : pair.completions[0]) CHECK(c.status == WcStatus::success);
        const QpStats& rx = pair.engines[1]->find_qp(t.qb)->stats;
        CHECK(rx.psp_opened >= 256);
        CHECK(pair.engines[0]->find_qp(t.qa)->stats.psp_opened > 0);  // its SACKs came sealed
        for (std::size_t r = static_cast<std::size_t>(DropReason::psp_unknown_spi); r < static_cast<std::size_t>(DropReason::count_); ++r)
            CHECK(pair.engines[1]->stats().rx_drops[r] == 0);
    }
}

TEST_CASE("Engine::psp__payload_not_in_the_clear", "[unit][core][psp]") {
    EnginePair pair(keyed_config());
    // A payload of one repeated 16-byte pattern: in the clear it would show in every data frame.
    Transfer t(pair, pair.connect(encrypted_attr()), 256 << 10, 1);
    for (std::size_t i = 0; i < t.src.size(); ++i) t.src[i] = static_cast<std::uint8_t>("OpenMRC-secret!!"[i % 16]);
    const std::string needle = "OpenMRC-secret!!OpenMRC";
    std::uint64_t leaks = 0;
    pair.hook = [&](int, std::uint8_t, std::vector<std::uint8_t>& f) {
        if (std::search(f.begin(), f.end(), needle.begin(), needle.end()) != f.end()) ++leaks;
        return Fate{};
    };
    t.post(32 << 10);
    REQUIRE(t.run());
    CHECK(t.dst == t.src);
    CHECK(leaks == 0);
}

TEST_CASE("Engine::psp__byte_exact_under_loss_reorder_and_duplicates", "[unit][core][psp]") {
    EnginePair pair(keyed_config());
    std::mt19937_64 rng(99);
    std::vector<std::vector<std::uint8_t>> dups;
    pair.hook = [&](int, std::uint8_t, std::vector<std::uint8_t>&) {
        Fate fate;
        fate.drop = rng() % 100 < 5;
        fate.extra_delay_ns = rng() % 40'000;
        return fate;
    };
    Transfer t(pair, pair.connect(encrypted_attr()), 4 << 20, 3);
    t.post(256 << 10);
    REQUIRE(t.run(8'000'000'000));
    CHECK(t.dst == t.src);
    CHECK(pair.completions[0].size() == t.msgs);
    for (const Completion& c : pair.completions[0]) CHECK(c.status == WcStatus::success);
}

TEST_CASE("Engine::psp__plain_and_forged_frames_rejected_before_any_state_change", "[unit][core][psp]") {
    // Fault row 27 (and row 19 with authentication on): the attacker knows
    // every header field of a live connection — QPN, PSN, rkey, VA — and
    // sends WRITEs, plain and sealed with a key it does not have.
    EnginePair pair(keyed_config());
    Transfer t(pair, pair.connect(encrypted_attr()), 64 << 10, 5);
    std::vector<std::vector<std::uint8_t>> seen;
    pair.hook = [&](int from, std::uint8_t, std::vector<std::uint8_t>& f) {
        if (from == 0) seen.push_back(f);
        return Fate{};
    };
    t.post(16 << 10);
    REQUIRE(t.run());
    REQUIRE(t.dst == t.src);
    const std::uint64_t writes_before = pair.memory[1].writes;
    const QpStats before = pair.engines[1]->find_qp(t.qb)->stats;
    Engine& b = *pair.engines[1];

    // 1. The same WRITEs in the clear (an attacker who read the headers), at the next PSN.
    EnginePair plain(EngineConfig{});
    Transfer pt(plain, plain.connect(omrc::test::fixed_window_attr()), 64 << 10, 6);
    std::vector<std::vector<std::uint8_t>> forged;
    plain.hook = [&](int from, std::uint8_t, std::vector<std::uint8_t>& f) {
        if (from == 0 && wire::load_be16(&f[14 + 40 + 2]) == wire::kRoceUdpPort && f[62] != 0) forged.push_back(f);
        return Fate{};
    };
    pt.post(16 << 10);
    REQUIRE(pt.run());
    REQUIRE(!forged.empty());
    for (auto f : forged) {
        wire::BthPeek pk;
        REQUIRE(wire::peek_bth(f, pk));
        std::memcpy(&f[14 + 8], pair.engines[0]->config().local_addr.data(), 16);  // A's address
        std::memcpy(&f[14 + 24], b.config().local_addr.data(), 16);
        wire::store_be24(&f[62 + 5], t.qb);  // B's QP
        const std::size_t icrc_at = f.size() - 4;
        wire::store_le32(&f[icrc_at], wire::icrc_compute(std::span(f).subspan(14, icrc_at - 14)));
        b.on_rx(f, 0, pair.now);
    }
    CHECK(dropped(b, DropReason::psp_required) == forged.size());

    // 2. Sealed frames of A's, re-sealed under a guessed key: SPI, IV and headers kept.
    std::uint64_t n = 0;
    for (auto f : seen) {
        wire::PspLayout l;
        if (wire::locate_psp(f, l) != wire::WireError::ok) continue;
        wire::store_be64(&f[l.psp_offset + 8], l.psp.iv + 1'000'000);  // fresh IVs: not a replay
        for (std::size_t i = l.ct_offset; i < l.icrc_offset; ++i) f[i] ^= 0x5A;  // cipher text and ICV of a wrong key
        wire::store_le32(&f[l.icrc_offset], wire::icrc_compute(std::span(f).subspan(l.ip_offset, l.icrc_offset - l.ip_offset)));
        b.on_rx(f, 0, pair.now);
        ++n;
    }
    CHECK(dropped(b, DropReason::psp_bad_tag) == n);
    // 3. A sealed frame for a QPN with no encrypted QP, and one whose SPI names another QP than its BTH.
    auto f = seen.front();
    wire::PspLayout l;
    REQUIRE(wire::locate_psp(f, l) == wire::WireError::ok);
    wire::store_be32(&f[l.psp_offset + 4], wire::psp_spi(0, 0, t.qb + 1));
    wire::store_le32(&f[l.icrc_offset], wire::icrc_compute(std::span(f).subspan(l.ip_offset, l.icrc_offset - l.ip_offset)));
    b.on_rx(f, 0, pair.now);
    CHECK(dropped(b, DropReason::psp_unknown_spi) == 1);

    // Nothing moved: no byte written, no packet counted, the QP still RTS, the data intact.
    CHECK(pair.memory[1].writes == writes_before);
    const QpStats& after = b.find_qp(t.qb)->stats;
    CHECK(after.data_pkts_received == before.data_pkts_received);
    CHECK(after.duplicates == before.duplicates);
    CHECK(after.psp_opened == before.psp_opened);
    CHECK(b.qp_info(t.qb).state == QpState::rts);
    CHECK(t.dst == t.src);
}

TEST_CASE("Engine::psp__a_flipped_bit_anywhere_is_dropped_and_counted", "[unit][core][psp]") {
    // Fault row 28: 2 % of frames get one bit flipped anywhere past Ethernet,
    // the ICRC recomputed so that only the ICV can tell; the transfer completes byte-exact.
    EnginePair pair(keyed_config());
    std::mt19937_64 rng(28);
    std::uint64_t flipped = 0;
    pair.hook = [&](int, std::uint8_t, std::vector<std::uint8_t>& f) {
        if (rng() % 50 == 0) {
            wire::PspLayout l;
            if (wire::locate_psp(f, l) == wire::WireError::ok) {
                // Anything the ICV covers: PSP header, inner UDP, BTH, cipher text, ICV.
                const std::size_t at = l.psp_offset + rng() % (l.icrc_offset - l.psp_offset);
                f[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
                wire::store_le32(&f[l.icrc_offset],
                                 wire::icrc_compute(std::span(f).subspan(l.ip_offset, l.icrc_offset - l.ip_offset)));
                ++flipped;
            }
        }
        return Fate{};
    };
    Transfer t(pair, pair.connect(encrypted_attr()), 2 << 20, 9);
    t.post(128 << 10);
    REQUIRE(t.run(8'000'000'000));
    CHECK(t.dst == t.src);
    REQUIRE(flipped > 10);
    std::uint64_t counted = 0;
    for (const auto& e : pair.engines) {
        for (const DropReason r : {DropReason::psp_bad_tag, DropReason::psp_unknown_spi, DropReason::psp_old_epoch,
                                   DropReason::psp_replay})
            counted += dropped(*e, r);
        for (const wire::WireError r : {wire::WireError::psp_bad_header, wire::WireError::psp_bad_inner,
                                        wire::WireError::psp_truncated, wire::WireError::not_roce_port,
                                        wire::WireError::bad_udp_len})
            counted += wire_errors(*e, r);
    }
    CHECK(counted == flipped);  // every flipped frame dropped, none accepted
    CHECK(dropped(*pair.engines[1], DropReason::psp_bad_tag) > 0);
}

TEST_CASE("Engine::psp__replayed_frames_rejected_during_and_after_reconnect", "[unit][core][psp]") {
    // Fault row 29.
    EnginePair pair(keyed_config());
    std::vector<std::vector<std::uint8_t>> captured;
    pair.hook = [&](int from, std::uint8_t, std::vector<std::uint8_t>& f) {
        if (from == 0) captured.push_back(f);
        return Fate{};
    };
    Transfer t(pair, pair.connect(encrypted_attr()), 256 << 10, 11);
    t.post(32 << 10);
    REQUIRE(t.run());
    REQUIRE(t.dst == t.src);
    Engine& b = *pair.engines[1];
    const std::uint64_t writes = pair.memory[1].writes;
    // During the connection: every captured frame again, in order and reversed.
    for (const auto& f : captured) b.on_rx(f, 0, pair.now);
    for (auto it = captured.rbegin(); it != captured.rend(); ++it) b.on_rx(*it, 0, pair.now);
    CHECK(dropped(b, DropReason::psp_replay) == 2 * captured.size());
    CHECK(pair.memory[1].writes == writes);
    // After a reconnect (the QPs destroyed, new ones between the same engines): none opens.
    REQUIRE(b.submit(CmdDestroyQp{t.qb}, pair.now).err == 0);
    REQUIRE(pair.engines[0]->submit(CmdDestroyQp{t.qa}, pair.now).err == 0);
    const auto q2 = pair.connect(encrypted_attr());
    const std::uint64_t unknown = dropped(b, DropReason::psp_unknown_spi);
    for (const auto& f : captured) b.on_rx(f, 0, pair.now);
    CHECK(dropped(b, DropReason::psp_unknown_spi) == unknown + captured.size());
    CHECK(pair.memory[1].writes == writes);
    CHECK(b.find_qp(q2.second)->stats.psp_opened == 0);
}

TEST_CASE("Engine::psp__key_rotation_under_loss_no_retired_epoch_accepted", "[unit][core][psp]") {
    // Fault row 30: both ends rotate their transmit keys again and again
    // while 5 % of frames are lost and paths reorder; byte-exact, and a frame
    // of a retired epoch replayed at the end never opens.
    EnginePair pair(keyed_config());
    std::mt19937_64 rng(30);
    std::vector<std::vector<std::uint8_t>> epoch0;
    pair.hook = [&](int from, std::uint8_t, std::vector<std::uint8_t>& f) {
        wire::PspLayout l;
        if (from == 0 && wire::locate_psp(f, l) == wire::WireError::ok && wire::spi_epoch(l.psp.spi) == 0 &&
            epoch0.size() < 64)
            epoch0.push_back(f);
        Fate fate;
        fate.drop = rng() % 100 < 5;
        fate.extra_delay_ns = rng() % 30'000;
        return fate;
    };
    Transfer t(pair, pair.connect(encrypted_attr()), 8 << 20, 13);
    t.post(128 << 10);
    std::uint64_t rotations = 0, busy = 0;
    const TimeNs end = pair.now + 8'000'000'000;
    while (t.done() < t.msgs && pair.now < end) {
        pair.run([] { return false; }, pair.now + 200'000);  // 200 µs of traffic
        for (int side = 0; side < 2; ++side) {
            const std::uint32_t q = side == 0 ? t.qa : t.qb;
            const int err = pair.engines[side]->submit(CmdRotateKey{q}, pair.now).err;
            if (err == 0) ++rotations;
            else if (err == EBUSY) ++busy;
            else FAIL("rotate_key: " << err);
        }
    }
    REQUIRE(t.done() == t.msgs);
    CHECK(t.dst == t.src);
    CHECK(rotations >= 6);
    const QpStats& bs = pair.engines[1]->find_qp(t.qb)->stats;
    const QpStats& as = pair.engines[0]->find_qp(t.qa)->stats;
    // Each receiver moved with its peer's rotations (the last may have come
    // after the last frame, and so not been seen).
    CHECK(bs.psp_rx_rotations <= as.psp_tx_rotations);
    CHECK(bs.psp_rx_rotations + 1 >= as.psp_tx_rotations);
    CHECK(as.psp_rx_rotations <= bs.psp_tx_rotations);
    CHECK(as.psp_rx_rotations + 1 >= bs.psp_tx_rotations);
    REQUIRE(as.psp_tx_rotations >= 2);
    // Epoch 0 is two rotations behind by now: retired.
    const std::uint64_t old = dropped(*pair.engines[1], DropReason::psp_old_epoch);
    for (const auto& f : epoch0) pair.engines[1]->on_rx(f, 0, pair.now);
    CHECK(dropped(*pair.engines[1], DropReason::psp_old_epoch) == old + epoch0.size());
    for (const Completion& c : pair.completions[0]) CHECK(c.status == WcStatus::success);
}

TEST_CASE("Engine::psp__setup_fails_cleanly_without_the_key", "[unit][core][psp]") {
    // Row 31's engine half: no master key (or not the one the SPIs name) → the
    // move to RTR fails with EINVAL and leaves the QP in INIT, plain.
    EnginePair pair(EngineConfig{});
    CHECK_THROWS(pair.connect(encrypted_attr()));
    EnginePair other(keyed_config());
    QpAttr a = encrypted_attr();
    a.psp_peer_key_select = 1;  // the peer's SPIs name master key 1, which we do not have
    CHECK_THROWS(other.connect(a));
    // A key handed over (as a connection manager would) needs no master key of the peer's.
    EnginePair given(keyed_config());
    Engine& b = *given.engines[1];
    const std::uint32_t qa = given.engines[0]->submit(CmdCreateQp{}, given.now).qpn;
    QpAttr init;
    init.access_flags = kAccessRemoteWrite | kAccessLocalWrite;
    init.pd = 1;
    REQUIRE(given.engines[0]->submit(CmdModifyQp{qa, QpState::init, init, kAttrAccess}, given.now).err == 0);
    QpAttr rtr = encrypted_attr();
    rtr.psp_peer_key_select = 1;
    rtr.psp_tx_key_set = true;
    rtr.psp_tx_key.fill(0x33);
    rtr.dest_qp_num = 77;
    rtr.peer_addr = EnginePair::addr(1);
    const std::uint32_t mask = kAttrDestQpn | kAttrRqPsn | kAttrPath | kAttrMtu | kAttrSecurity;
    CHECK(given.engines[0]->submit(CmdModifyQp{qa, QpState::rtr, rtr, mask}, given.now).err == 0);
    CHECK(given.engines[0]->find_qp(qa)->attr.psp_tx_key == std::array<std::uint8_t, 32>{});  // not kept
    (void)b;
}

TEST_CASE("Engine::psp__rotation_refusals", "[unit][core][psp]") {
    EnginePair pair(keyed_config());
    const auto q = pair.connect(encrypted_attr());
    CHECK(pair.engines[0]->submit(CmdRotateKey{q.first}, pair.now).err == 0);
    CHECK(pair.engines[0]->submit(CmdRotateKey{q.first + 1}, pair.now).err == EINVAL);
    EnginePair plain;
    const auto p = plain.connect(omrc::test::fixed_window_attr());
    CHECK(plain.engines[0]->submit(CmdRotateKey{p.first}, plain.now).err == EINVAL);
}

TEST_CASE("Engine::psp__reflected_frames_do_not_open_at_their_sender", "[unit][core][psp]") {
    // Both ends' first QPs have the same QPN, so both directions use the same
    // SPI; the keys still differ (each receiver's master key is derived from
    // its address), and a frame A sent, turned back to A, does not open there.
    EnginePair pair(keyed_config());
    std::vector<std::vector<std::uint8_t>> sent;
    pair.hook = [&](int from, std::uint8_t, std::vector<std::uint8_t>& f) {
        if (from == 0) sent.push_back(f);
        return Fate{};
    };
    Transfer t(pair, pair.connect(encrypted_attr()), 64 << 10, 21);
    REQUIRE(t.qa == t.qb);
    t.post(16 << 10);
    REQUIRE(t.run());
    REQUIRE(t.dst == t.src);
    Engine& a = *pair.engines[0];
    const std::uint64_t bad = dropped(a, DropReason::psp_bad_tag), opened = a.find_qp(t.qa)->stats.psp_opened;
    std::uint64_t n = 0;
    for (auto f : sent) {
        wire::PspLayout l;
        if (wire::locate_psp(f, l) != wire::WireError::ok) continue;
        // From B's address to A's, as if B had sent it.
        std::memcpy(&f[l.ip_offset + 8], EnginePair::addr(1).data(), 16);
        std::memcpy(&f[l.ip_offset + 24], EnginePair::addr(0).data(), 16);
        wire::store_le32(&f[l.icrc_offset], wire::icrc_compute(std::span(f).subspan(l.ip_offset, l.icrc_offset - l.ip_offset)));
        a.on_rx(f, 0, pair.now);
        ++n;
    }
    CHECK(n > 10);
    CHECK(dropped(a, DropReason::psp_bad_tag) == bad + n);
    CHECK(a.find_qp(t.qa)->stats.psp_opened == opened);
}

TEST_CASE("Engine::psp__rotations_skip_ahead_and_end_before_the_first_key_returns", "[unit][core][psp]") {
    EnginePair pair(keyed_config());
    Transfer t(pair, pair.connect(encrypted_attr()), 256 << 10, 23);
    // Twice with nothing in flight: the receiver takes epoch 2 without having seen 1.
    REQUIRE(pair.engines[0]->submit(CmdRotateKey{t.qa}, pair.now).err == 0);
    REQUIRE(pair.engines[0]->submit(CmdRotateKey{t.qa}, pair.now).err == 0);
    t.post(64 << 10);
    REQUIRE(t.run());
    CHECK(t.dst == t.src);
    CHECK(pair.engines[1]->find_qp(t.qb)->stats.psp_rx_rotations == 1);
    CHECK(dropped(*pair.engines[1], DropReason::psp_unknown_spi) == 0);
    // 127 rotations in all, then ENOSPC: the 128th would bring epoch 0's SPI and key back.
    int done = 2, err = 0;
    while ((err = pair.engines[0]->submit(CmdRotateKey{t.qa}, pair.now).err) == 0) ++done;
    CHECK(err == ENOSPC);
    CHECK(done == 127);
}
