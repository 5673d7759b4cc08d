// SPDX-License-Identifier: BSD-3-Clause
// Engine, connection manager carriage (docs/PROTOCOL.md §13.1): CM frames in
// to the ConnManager, its messages out as frames of their own (no QP: the
// route comes from the message's REQ or from connect()), and its key checks
// from the engine's master keys (§13.4).
#include <bit>
#include <cstring>

#include "core/engine.hpp"
#include "security/psp_keys.hpp"
#include "wire/icrc.hpp"

namespace omrc::core {

void Engine::on_cm(const wire::FrameView& f, const wire::RxFrame& frame, TimeNs now) {
    if (cm_ == nullptr) return drop(DropReason::no_qp);  // another shard's, or no manager configured
    const wire::DethHdr deth = f.ext_header<wire::DethHdr>();
    if (f.bth.dest_qp != wire::kCmQpn || deth.qkey != wire::kCmQkey || deth.src_qp != wire::kCmQpn)
        return drop(DropReason::cm_invalid);
    wire::CmMessage m;
    if (wire::CmMessage::decode(f.payload, m) != wire::WireError::ok) return drop(DropReason::cm_invalid);
    ++stats_.cm_frames_received;
    cm_last_.from = f.ip_src_addr();
    cm_last_.plane = frame.plane;
    std::memcpy(cm_last_.mac.data(), f.frame.data() + 6, 6);  // the Ethernet source
    cm_last_.valid = true;
    cm_->on_message(cm_last_.from, m, now);
}

bool Engine::cm_frame(const CmOutgoing& o, wire::GatherFrame& g) {
    // Planes: those both ends have up, rotated by attempt so that a resend
    // does not keep to a plane that lost the first one.
    const std::uint32_t peer_planes = std::min<std::uint32_t>(o.about.planes, cfg_.planes);
    std::uint8_t plane = 0;
    std::array<std::uint8_t, 6> dst_mac{};
    if (peer_planes == 0) {
        // No route of its own (a DREP to a DREQ after the end): back where the DREQ came from.
        if (!cm_last_.valid || cm_last_.from != o.to) return false;
        plane = cm_last_.plane;
        dst_mac = cm_last_.mac;
    } else {
        const std::uint32_t usable = local_up_ & ((1u << peer_planes) - 1) & peer_plane_mask(o.to);
        if (usable == 0) return false;
        auto k = (o.msg.attempt + o.msg.src_comm_id) % static_cast<std::uint32_t>(std::popcount(usable));
        std::uint32_t bits = usable;
        while (k-- > 0) bits &= bits - 1;
        plane = static_cast<std::uint8_t>(std::countr_zero(bits));
        dst_mac = o.about.macs[plane];
    }
    if ((cfg_.next_hop_mask >> plane) & 1) dst_mac = cfg_.next_hop_macs[plane];

    if (cm_used_ == cm_slots_.size()) cm_slots_.push_back(std::make_unique<CmSlot>());
    CmSlot& slot = *cm_slots_[cm_used_];
    std::size_t len = 0;
    if (o.msg.encode(slot, len) != wire::WireError::ok) return false;  // the manager checked it when it queued it
    const std::size_t pad = (4 - len % 4) % 4;
    std::memset(slot.data() + len, 0, pad);

    wire::FrameSpec s{};
    s.mode = cfg_.mode;
    s.eth.src = cfg_.local_macs[plane];
    std::memcpy(s.eth.dst.data(), dst_mac.data(), 6);
    s.ip.src = cfg_.local_addr;
    s.ip.dst = o.to;
    s.ip.hop_limit = 64;
    s.ip.set_dscp(cfg_.dscp_control);
    s.outer.src = cfg_.local_addr;
    s.outer.hop_limit = 64;
    s.outer.set_dscp(cfg_.dscp_control);
    s.ev = routing::make_ev(plane, o.msg.src_comm_id & routing::kEvPathMask,
                            static_cast<std::uint16_t>(o.msg.src_comm_id >> 16));
    if (cfg_.mode == wire::FrameMode::srv6) {
        routing::UsidTemplate t;
        if (routing::UsidTemplate::make(cfg_.fabric, cfg_.local_host, o.about.host, t) != wire::WireError::ok)
            return false;
        s.outer.dst = t.apply(s.ev);
    }
    s.bth.opcode = wire::Opcode::cm;
    s.bth.dest_qp = wire::kCmQpn;
    s.bth.psn = 0;
    s.deth = {};  // Q_Key kCmQkey, source QP 1
    std::size_t hlen = 0;
    if (wire::build_headers(g.header, s, len, hlen) != wire::WireError::ok) return false;
    ++cm_used_;
    g.plane = plane;
    g.header_len = static_cast<std::uint16_t>(hlen);
    g.segment_count = 1;
    g.segments[0] = {slot.data(), static_cast<std::uint32_t>(len + pad)};
    g.payload_in_engine_memory = true;
    g.telemetry = nullptr;
    const std::uint32_t crc = cfg_.compute_icrc
                                  ? wire::frame_icrc(std::span(g.header).first(hlen), cfg_.mode,
                                                     std::span<const std::uint8_t>(slot.data(), len + pad))
                                  : 0;
    wire::store_le32(g.tail.data(), crc);
    g.tail_len = 4;
    return true;
}

bool Engine::CmKeyring::has_key(std::uint8_t select) const {
    return select < 2 && (e_.rx_masters_present_ & (1u << select)) != 0 &&
           (e_.cfg_.security.present & (1u << select)) != 0;
}

bool Engine::CmKeyring::own_check(std::uint8_t select, const std::array<std::uint8_t, 16>& nonce,
                                  std::span<const std::uint8_t> context, std::array<std::uint8_t, 16>& out) {
    if (!has_key(select)) return false;
    security::MasterKey conn;
    const bool ok = security::connection_master_key(e_.rx_masters_[select], nonce, conn) &&
                    security::cm_key_check(conn, context, out);
    security::wipe(conn.data(), conn.size());
    return ok;
}

bool Engine::CmKeyring::peer_check(const wire::Ipv6Addr& peer, std::uint8_t select,
                                   const std::array<std::uint8_t, 16>& nonce, std::span<const std::uint8_t> context,
                                   std::array<std::uint8_t, 16>& out) {
    if (!has_key(select)) return false;
    security::MasterKey receiver, conn;
    const bool ok = security::receiver_master_key(e_.cfg_.security.master_keys[select],
                                                  std::span<const std::uint8_t, 16>(peer.data(), 16), receiver) &&
                    security::connection_master_key(receiver, nonce, conn) &&
                    security::cm_key_check(conn, context, out);
    security::wipe(receiver.data(), receiver.size());
    security::wipe(conn.data(), conn.size());
    return ok;
}

}  // namespace omrc::core
