// SPDX-License-Identifier: BSD-3-Clause
// Engine, encrypted mode (docs/PROTOCOL.md §12): a QP's PSP security
// associations, sealing the frames it sends, opening the ones it receives,
// and key rotation. The AES-GCM work is lib/security's; the frame layout
// lib/wire/psp.hpp's.
#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>

#include "core/engine.hpp"
#include "core/psn.hpp"
#include "security/psp_keys.hpp"
#include "wire/icrc.hpp"

namespace omrc::core {

namespace {
/// Largest sealed frame: the biggest plain frame (4096-byte payload, SRv6
/// headers, every extension header) plus PSP's overhead, with room to spare.
constexpr std::size_t kSealSlotBytes = 4096 + 512;
/// Frames with fewer encrypted bytes are gathered and sealed in one call.
constexpr std::size_t kGatherBelowBytes = 512;

}  // namespace

bool Engine::derive_rx_epoch(const Qp& qp, std::uint32_t spi, QpSecurity::RxEpoch& ep) const {
    const std::uint32_t sel = wire::spi_key_select(spi);
    if ((rx_masters_present_ & (1u << sel)) == 0) return false;
    // A QP keyed by the connection manager derives from its own master key,
    // and only for the select it was keyed under.
    const QpSecurity& s = *qp.sec;
    if (s.rx_master_own && sel != s.rx_master_select) return false;
    const security::MasterKey& master = s.rx_master_own ? s.rx_master : rx_masters_[sel];
    if (!security::psp_key_schedule(master, spi, qp.sec->version, ep.key)) return false;
    ep.window = ReplayWindow(cfg_.security.replay_window);
    ep.spi = spi;
    ep.live = true;
    return true;
}

void Engine::derive_receiver_masters() {
    for (std::uint32_t k = 0; k < 2; ++k)
        if ((cfg_.security.present & (1u << k)) != 0 &&
            security::receiver_master_key(cfg_.security.master_keys[k],
                                          std::span<const std::uint8_t, 16>(cfg_.local_addr.data(), 16), rx_masters_[k]))
            rx_masters_present_ |= static_cast<std::uint8_t>(1u << k);
}

int Engine::set_security(Qp& qp, const QpAttr& a) {
    if (a.psp_version != wire::PspVersion::aes_gcm_128 && a.psp_version != wire::PspVersion::aes_gcm_256) return EINVAL;
    if (a.psp_peer_key_select > 1) return EINVAL;
    auto sec = std::make_unique<QpSecurity>();
    sec->version = a.psp_version;
    const bool had = qp.sec != nullptr;
    qp.sec = std::move(sec);
    QpSecurity& s = *qp.sec;
    auto fail = [&] {
        qp.sec.reset();
        if (had) --secure_qps_;
        return EINVAL;
    };
    if (a.psp_nonces) {
        // Connection keys (§13.4): this QP's receive master key from our nonce.
        const std::uint8_t sel = cfg_.security.key_select;
        if ((rx_masters_present_ & (1u << sel)) == 0 ||
            !security::connection_master_key(rx_masters_[sel], a.psp_rx_nonce, s.rx_master))
            return fail();
        s.rx_master_own = true;
        s.rx_master_select = sel;
    }
    // Receive: our SPI of epoch 0, under the master key we name.
    if (!derive_rx_epoch(qp, wire::psp_spi(cfg_.security.key_select, 0, qp.qpn), s.cur)) return fail();
    // Transmit: the peer's SPI of epoch 0, with the key it gave us or the one
    // we derive under the peer's receiver master key (its address's).
    s.tx_spi = wire::psp_spi(a.psp_peer_key_select, 0, a.dest_qp_num);
    s.tx_first_epoch = 0;
    s.tx_iv = std::uint64_t{rng_.next_u32()} << 32;
    if (a.psp_tx_key_set) {
        if (!s.tx.set_key(std::span(a.psp_tx_key).first(wire::psp_key_bytes(a.psp_version)))) return fail();
        s.tx_key_given = true;
    } else {
        if ((cfg_.security.present & (1u << a.psp_peer_key_select)) == 0) return fail();
        if (!security::receiver_master_key(cfg_.security.master_keys[a.psp_peer_key_select],
                                           std::span<const std::uint8_t, 16>(a.peer_addr.data(), 16), s.peer_master))
            return fail();
        if (a.psp_nonces) {
            // The peer's connection master key, from the nonce it sent.
            security::MasterKey receiver = s.peer_master;
            const bool ok = security::connection_master_key(receiver, a.psp_tx_nonce, s.peer_master);
            security::wipe(receiver.data(), receiver.size());
            if (!ok) return fail();
        }
        if (!security::psp_key_schedule(s.peer_master, s.tx_spi, a.psp_version, s.tx)) return fail();
    }
    // The key the attributes carried is in the AES schedule now; do not keep a copy.
    qp.attr.psp_tx_key.fill(0);
    if (!had) ++secure_qps_;
    return kOk;
}

void Engine::clear_security(Qp& qp) noexcept {
    if (!qp.sec) return;
    qp.sec.reset();
    assert(secure_qps_ > 0 && "secure_qps_ counts QPs with Qp::sec");
    --secure_qps_;
}

SubmitResult Engine::rotate_key(const CmdRotateKey& c) {
    Qp* qp = qp_by_num(c.qpn);
    if (qp == nullptr || !qp->sec || qp->state != QpState::rts) return {EINVAL};
    QpSecurity& s = *qp->sec;
    if (s.tx_key_given) return {EOPNOTSUPP};
    // The peer retires our epoch before last when it sees the new one: every
    // packet first sent under it must be acknowledged by then.
    if (s.tx_rotated && psn_diff(qp->snd_una, s.tx_epoch_psn) < 0) return {EBUSY};
    const std::uint32_t epoch = (wire::spi_epoch(s.tx_spi) + 1) & wire::kSpiEpochMask;
    // 127 rotations at most: the 128th would bring the first SPI (and its key) back.
    if (epoch == s.tx_first_epoch) return {ENOSPC};
    const std::uint32_t spi = wire::psp_spi(wire::spi_key_select(s.tx_spi), epoch, wire::spi_qpn(s.tx_spi));
    security::AesGcm next;
    if (!security::psp_key_schedule(s.peer_master, spi, s.version, next)) return {EINVAL};
    s.tx = std::move(next);
    s.tx_spi = spi;
    s.tx_iv = std::uint64_t{rng_.next_u32()} << 32;
    s.tx_epoch_psn = qp->snd_nxt;
    s.tx_rotated = true;
    ++qp->stats.psp_tx_rotations;
    return {kOk};
}

bool Engine::seal_frame(Qp& qp, wire::GatherFrame& g) {
    QpSecurity& s = *qp.sec;
    // Where the IPv6 header before UDP lies in every frame of the QP, data
    // and control alike (an encrypted QP has no SRH: modify_qp refuses it).
    const std::size_t ip_off = qp.data_tmpl.icrc_offset();
    const std::size_t bth_end = ip_off + wire::Ipv6Hdr::kSize + wire::UdpHdr::kSize + wire::BthHdr::kSize;
    const std::size_t clear_len = ip_off + wire::kPspClearBytesAfterIp;
    if (clear_len > wire::GatherFrame::kMaxHeader || bth_end > g.header_len || g.tail_len < wire::kIcrcSize) return false;
    if (seal_used_ == seal_slots_.size()) seal_slots_.push_back(std::make_unique<std::uint8_t[]>(kSealSlotBytes));
    std::uint8_t* slot = seal_slots_[seal_used_].get();

    // What gets encrypted: extension headers, payload, pad (not the plain ICRC).
    const std::size_t ext_len = g.header_len - bth_end;
    const std::size_t pad_len = g.tail_len - wire::kIcrcSize;
    std::size_t ct_len = ext_len + pad_len;
    for (std::size_t i = 0; i < g.segment_count; ++i) ct_len += g.segments[i].len;
    if (ct_len + wire::kPspIcvSize > kSealSlotBytes) return false;

    if (++s.tx_iv == 0) ++s.tx_iv;  // 2^64 frames under one key: never reached; IV 0 is never sent
    const wire::PspHdr h{.version = s.version, .spi = s.tx_spi, .iv = s.tx_iv};
    // The sealed frame's outer UDP to BTH, built aside (the extension headers
    // it will cover are still to be sealed) and written over the plain
    // headers in place once they are.
    wire::PspUdpToBth udp_to_bth;
    const std::size_t udp_off = ip_off + wire::Ipv6Hdr::kSize;
    wire::psp_udp_to_bth(std::span(g.header).subspan(udp_off).first<wire::UdpHdr::kSize + wire::BthHdr::kSize>(), h,
                         udp_to_bth);
    // Nonce = SPI || IV as the header carries them; AAD = PSP header, inner UDP, BTH.
    const std::span<const std::uint8_t, security::kGcmNonceBytes> nonce(udp_to_bth.data() + wire::kPspNonceOffset,
                                                                         security::kGcmNonceBytes);
    const std::span<const std::uint8_t> aad(udp_to_bth.data() + wire::kPspAadOffset, wire::kPspAadBytes);
    const std::span<std::uint8_t, security::kGcmTagBytes> tag(slot + ct_len, security::kGcmTagBytes);
    bool sealed = false;
    if (ct_len <= kGatherBelowBytes) {
        // A short frame (extension headers, a small payload) is gathered into
        // the slot and sealed there in one call: the library's one-shot call
        // costs about half its init/update/finalize sequence on short input
        // (perf on bench/engine_cost's 8-byte psp row).
        std::size_t at = 0;
        auto put = [&](const std::uint8_t* p, std::size_t len) {
            if (len != 0) std::memcpy(slot + at, p, len);
            at += len;
        };
        put(g.header.data() + bth_end, ext_len);
        for (std::size_t i = 0; i < g.segment_count; ++i) put(g.segments[i].data, g.segments[i].len);
        put(g.tail.data(), pad_len);
        const std::span<const std::uint8_t> gathered(slot, ct_len);
        sealed = s.tx.seal(nonce, aad, {&gathered, 1}, slot, tag);
    } else {
        // Long frames: the pieces go straight in (no copy of the payload).
        // (The piece list is built here only: zeroing it costs a short
        // frame's seal about 3 % of the whole 8-byte row.)
        std::array<std::span<const std::uint8_t>, wire::GatherFrame::kMaxSegments + 2> pieces;
        std::size_t np = 0;
        auto add = [&](const std::uint8_t* p, std::size_t len) {
            if (len != 0) pieces[np++] = {p, len};
        };
        add(g.header.data() + bth_end, ext_len);
        for (std::size_t i = 0; i < g.segment_count; ++i) add(g.segments[i].data, g.segments[i].len);
        add(g.tail.data(), pad_len);
        sealed = s.tx.seal(nonce, aad, std::span(pieces).first(np), slot, tag);
    }
    if (!sealed) return false;
    ++seal_used_;
    (void)wire::psp_seal_headers(std::span(g.header).first(clear_len), ip_off, cfg_.mode, udp_to_bth);
    g.header_len = static_cast<std::uint16_t>(clear_len);
    g.segments[0] = {slot, static_cast<std::uint32_t>(ct_len + wire::kPspIcvSize)};
    g.segment_count = 1;
    g.payload_in_engine_memory = true;  // a zero-copy driver copies it
    std::uint32_t crc = 0;
    if (cfg_.compute_icrc) {
        const std::span<const std::uint8_t> body(slot, ct_len + wire::kPspIcvSize);
        crc = wire::icrc_compute_pieces(std::span(g.header).subspan(ip_off, clear_len - ip_off), {&body, 1}, 0);
    }
    wire::store_le32(g.tail.data(), crc);
    g.tail_len = wire::kIcrcSize;
    ++qp.stats.psp_sealed;
    return true;
}

QpSecurity::RxEpoch* Engine::rx_epoch_for(Qp& qp, std::uint32_t spi) {
    QpSecurity& s = *qp.sec;
    if (s.cur.live && spi == s.cur.spi) return &s.cur;
    if (s.prev.live && spi == s.prev.spi) return &s.prev;
    const std::uint32_t ahead = (wire::spi_epoch(spi) - wire::spi_epoch(s.cur.spi)) & wire::kSpiEpochMask;
    // The peer's next epochs (it may have rotated more than once with nothing
    // in flight), under the same master key as the current one: each derived
    // once, kept until a frame under it verifies. No frame makes the engine
    // derive more than these kMaxEpochsAhead keys per move of the peer.
    if (ahead >= 1 && ahead <= kMaxEpochsAhead && wire::spi_key_select(spi) == wire::spi_key_select(s.cur.spi)) {
        QpSecurity::RxEpoch& n = s.next[ahead - 1];
        if (n.live && n.spi == spi) return &n;
        if (derive_rx_epoch(qp, spi, n)) return &n;
        n.live = false;
        drop(DropReason::psp_unknown_spi);
        return nullptr;
    }
    // Behind us (half the epoch space back): retired. Anything else names no SA of ours.
    drop(ahead >= (wire::kSpiEpochMask + 1) / 2 ? DropReason::psp_old_epoch : DropReason::psp_unknown_spi);
    return nullptr;
}

Engine::Opened Engine::open_frame(const wire::RxFrame& in, wire::RxFrame& out, Qp*& qp_out) {
    std::span<const std::uint8_t> f(in.data, in.len);
    if (in.payload != nullptr) {
        // Header split (rare): make a sealed one contiguous (the split point
        // is not ours to trust; the layout walk checks all).
        if (!wire::is_psp_frame(f)) return Opened::plain;
        if (in.split > in.len) {
            ++stats_.rx_wire_errors[static_cast<std::size_t>(wire::WireError::bad_split)];
            return Opened::dropped;
        }
        rx_flat_.resize(in.frame_len());
        std::memcpy(rx_flat_.data(), in.data, in.split);
        std::memcpy(rx_flat_.data() + in.split, in.payload, in.payload_len);
        std::memcpy(rx_flat_.data() + in.split + in.payload_len, in.data + in.split, in.len - in.split);
        f = rx_flat_;
    }
    wire::PspLayout l;
    if (const wire::WireError e = wire::locate_psp(f, l); e != wire::WireError::ok) {
        if (!l.sealed) return Opened::plain;  // not port 1000: the plain parser judges it
        ++stats_.rx_wire_errors[static_cast<std::size_t>(e)];
        return Opened::dropped;
    }
    if (cfg_.verify_icrc &&
        !wire::icrc_verify(f.subspan(l.ip_offset, l.icrc_offset + wire::kIcrcSize - l.ip_offset))) {
        ++stats_.rx_wire_errors[static_cast<std::size_t>(wire::WireError::bad_icrc)];
        return Opened::dropped;
    }
    const std::uint32_t spi = l.psp.spi;
    Qp* qp = qp_by_num(wire::spi_qpn(spi));
    // The SPI must name an encrypted QP of ours, the one BTH names, with this version.
    if (qp == nullptr || !qp->sec || wire::spi_qpn(spi) != l.dest_qp || l.psp.version != qp->sec->version) {
        drop(DropReason::psp_unknown_spi);
        return Opened::dropped;
    }
    QpSecurity& s = *qp->sec;
    QpSecurity::RxEpoch* ep = rx_epoch_for(*qp, spi);
    if (ep == nullptr) return Opened::dropped;
    if (ep->window.check(l.psp.iv) != ReplayWindow::Verdict::fresh) {
        drop(DropReason::psp_replay);
        return Opened::dropped;
    }
    // The plain frame: headers up to BTH rebuilt, then the decrypted bytes, then an ICRC slot.
    const std::size_t plain_len = f.size();  // ≥ the plain frame (sealed = plain + overhead)
    if (rx_plain_.size() < plain_len) rx_plain_.resize(std::max<std::size_t>(plain_len, kSealSlotBytes));
    const std::size_t n = wire::psp_write_plain_part(f, l, rx_plain_);
    if (n == 0) {
        ++stats_.rx_wire_errors[static_cast<std::size_t>(wire::WireError::psp_truncated)];
        return Opened::dropped;
    }
    const std::span<const std::uint8_t> ct = l.cipher(f);
    if (!ep->key.open(l.nonce(f), l.aad(f), {&ct, 1}, rx_plain_.data() + n, l.icv(f))) {
        drop(DropReason::psp_bad_tag);
        return Opened::dropped;
    }
    ep->window.commit(l.psp.iv);
    if (ep != &s.cur && ep != &s.prev) {
        // The peer has moved on: every epoch before the one it left is retired.
        s.prev = std::move(s.cur);
        s.cur = std::move(*ep);
        for (QpSecurity::RxEpoch& cand : s.next) cand.live = false;
        ++qp->stats.psp_rx_rotations;
    }
    ++qp->stats.psp_opened;
    wire::store_le32(rx_plain_.data() + n + l.ct_len, 0);  // not checked: the sealed frame's was
    out = wire::RxFrame{rx_plain_.data(), static_cast<std::uint32_t>(n + l.ct_len + wire::kIcrcSize), in.plane};
    out.telemetry = in.telemetry;
    out.no_reply = in.no_reply;
    qp_out = qp;
    return Opened::opened;
}

}  // namespace omrc::core
