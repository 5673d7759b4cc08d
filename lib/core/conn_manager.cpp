// SPDX-License-Identifier: BSD-3-Clause
#include "core/conn_manager.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "wire/bytes.hpp"

namespace omrc::core {

using wire::CmMessage;
using wire::CmReject;
using wire::CmType;

namespace {

/// A REJ from comm id `src` to `dst`.
CmMessage rej(std::uint32_t src, std::uint32_t dst, CmReject reason) {
    CmMessage r;
    r.type = CmType::rej;
    r.src_comm_id = src;
    r.dst_comm_id = dst;
    r.reason = reason;
    return r;
}

}  // namespace

namespace {
std::array<std::uint8_t, 32> secret_from(Rng& rng) {
    std::array<std::uint8_t, 32> s{};
    for (std::size_t i = 0; i < s.size(); i += 8) {
        const std::uint64_t r = rng.next();
        std::memcpy(s.data() + i, &r, 8);
    }
    return s;
}
}  // namespace

ConnManager::ConnManager(const CmLimits& limits, std::uint64_t seed, CmKeys* keys)
    : limits_(limits), rng_(seed), keys_(keys), cookie_secret_(secret_from(rng_)), cookie_mac_(cookie_secret_) {}

int ConnManager::listen(std::uint64_t service_id, const CmListen& how) {
    if (listener(service_id) != nullptr) return EADDRINUSE;
    listeners_.push_back({service_id, how});
    return 0;
}

int ConnManager::unlisten(std::uint64_t service_id) {
    const auto n = std::erase_if(listeners_, [&](const Listener& l) { return l.service_id == service_id; });
    return n == 0 ? ENOENT : 0;
}

const ConnManager::Listener* ConnManager::listener(std::uint64_t service_id) const noexcept {
    for (const Listener& l : listeners_)
        if (l.service_id == service_id) return &l;
    return nullptr;
}

ConnManager::Conn* ConnManager::find(std::uint32_t id) noexcept {
    const auto it = conns_.find(id);
    return it != conns_.end() ? &it->second : nullptr;
}

ConnManager::Conn* ConnManager::find_peer(const wire::Ipv6Addr& peer, std::uint32_t peer_id) noexcept {
    const auto it = responders_.find(PeerKey{peer, peer_id});
    return it != responders_.end() ? find(it->second) : nullptr;
}

const wire::CmMessage* ConnManager::peer_message(std::uint32_t id) const noexcept {
    const auto it = conns_.find(id);
    if (it == conns_.end()) return nullptr;
    return it->second.state == State::req_sent ? nullptr : &it->second.got;
}

void ConnManager::count(const Conn& c, int delta) {
    if (c.requester) return;
    auto bump = [delta](auto& map, const auto& key) {
        auto& n = map[key];
        n = static_cast<std::uint32_t>(static_cast<int>(n) + delta);
        if (n == 0) map.erase(key);
    };
    if (c.state == State::req_received) bump(backlog_, c.service_id);
    if (c.state == State::req_received || c.state == State::rep_sent) bump(half_open_, PeerKey{c.peer, 0});
}

void ConnManager::set_state(Conn& c, State s) {
    count(c, -1);
    c.state = s;
    count(c, +1);
}

void ConnManager::set_timer(Conn& c, TimeNs at) {
    c.next_ns = at;
    if (at != kNever) timers_.push({at, c.id});
}

ConnManager::Conn& ConnManager::insert(const Conn& c) {
    Conn& in = conns_.emplace(c.id, c).first->second;
    if (!in.requester) responders_[PeerKey{in.peer, in.peer_id}] = in.id;
    count(in, +1);
    if (in.next_ns != kNever) timers_.push({in.next_ns, in.id});
    return in;
}

std::uint32_t ConnManager::new_id() {
    for (;;) {
        const std::uint32_t id = rng_.next_u32();
        if (id != 0 && find(id) == nullptr && timewait_of(id) == nullptr) return id;
    }
}

void ConnManager::send(const wire::Ipv6Addr& to, const CmMessage& m, const CmMessage& about) {
    out_.push_back({to, m, about});
    ++stats_.tx_messages;
}

void ConnManager::send_reject(const wire::Ipv6Addr& to, const CmMessage& req, CmReject reason) {
    send(to, rej(rng_.next_u32() | 1, req.src_comm_id, reason), req);  // no connection of ours: any id
    ++stats_.rejects_sent;
}

void ConnManager::arm(Conn& c, TimeNs now) {
    set_timer(c, now + std::max<TimeNs>(c.rto, 1));  // later than now: on_timer's loop ends
    c.rto = std::min(c.rto * 2, limits_.max_rto_ns);
}

void ConnManager::event(CmEventKind kind, const Conn& c, CmReject reason, bool local, const CmMessage* msg) {
    CmEvent e;
    e.kind = kind;
    e.id = c.id;
    e.peer = c.peer;
    e.reason = reason;
    e.local = local;
    if (msg != nullptr) e.msg = *msg;
    else e.msg = c.got;
    events_.push_back(e);
}

void ConnManager::end(std::uint32_t id, TimeNs now) {
    const auto found = conns_.find(id);
    if (found == conns_.end()) return;
    const Conn& c = found->second;
    count(c, -1);
    if (!c.requester) responders_.erase(PeerKey{c.peer, c.peer_id});
    if (limits_.max_timewait > 0) {
        if (timewait_ids_.size() >= limits_.max_timewait) drop_oldest_timewait();
        const TimeWait t{c.peer, c.peer_id, c.id, now + limits_.timewait_ns};
        timewait_ids_[t.id] = t;
        timewait_order_.push_back(t.id);
        timewait_peers_[PeerKey{t.peer, t.peer_id}] = t.until;
    }
    conns_.erase(found);  // its timer entry goes stale
}

void ConnManager::drop_oldest_timewait() {
    const std::uint32_t id = timewait_order_.front();
    timewait_order_.pop_front();
    auto it = timewait_ids_.find(id);
    if (it == timewait_ids_.end()) return;
    // The peer index keeps the latest entry of that peer's end: only this one's own goes.
    auto p = timewait_peers_.find(PeerKey{it->second.peer, it->second.peer_id});
    if (p != timewait_peers_.end() && p->second == it->second.until) timewait_peers_.erase(p);
    timewait_ids_.erase(it);
}

std::size_t ConnManager::PeerKeyHash::operator()(const PeerKey& k) const noexcept {
    // The address's two halves and the id, mixed (splitmix64's finaliser).
    std::uint64_t h = wire::load_be64(k.peer.data()) ^ (wire::load_be64(k.peer.data() + 8) * 0x9E3779B97F4A7C15ull) ^
                      (static_cast<std::uint64_t>(k.peer_id) << 17);
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 31;
    return static_cast<std::size_t>(h);
}

bool ConnManager::in_timewait(const wire::Ipv6Addr& peer, std::uint32_t peer_id, TimeNs now) const noexcept {
    auto it = timewait_peers_.find(PeerKey{peer, peer_id});
    return it != timewait_peers_.end() && it->second > now;
}

const ConnManager::TimeWait* ConnManager::timewait_of(std::uint32_t id) const noexcept {
    auto it = timewait_ids_.find(id);
    return it != timewait_ids_.end() ? &it->second : nullptr;
}

std::array<std::uint8_t, 13> ConnManager::check_context(const CmMessage& m) noexcept {
    std::array<std::uint8_t, 13> c{};
    c[0] = static_cast<std::uint8_t>(m.type);
    wire::store_be32(c.data() + 1, m.src_comm_id);
    wire::store_be64(c.data() + 5, m.service_id);
    return c;
}

void ConnManager::make_cookie(const wire::Ipv6Addr& from, const CmMessage& req, std::uint32_t slot,
                              std::array<std::uint8_t, 16>& out) const {
    std::uint8_t data[4 + 16 + 4 + 8 + 4];
    wire::store_be32(data, slot);
    std::memcpy(data + 4, from.data(), 16);
    wire::store_be32(data + 20, req.src_comm_id);
    wire::store_be64(data + 24, req.service_id);
    wire::store_be32(data + 32, req.qpn);
    wire::store_be32(out.data(), slot);
    if (!cookie_mac_.mac(data, std::span(out).subspan(4))) std::fill(out.begin() + 4, out.end(), 0);
}

bool ConnManager::cookie_ok(const wire::Ipv6Addr& from, const CmMessage& req, TimeNs now) const {
    const auto cur = static_cast<std::uint32_t>(now / limits_.cookie_slot_ns);
    const std::uint32_t slot = wire::load_be32(req.cookie.data());
    if (slot != cur && slot + 1 != cur) return false;
    std::array<std::uint8_t, 16> want{};
    make_cookie(from, req, slot, want);
    // Constant time: the cookie is a MAC.
    std::uint8_t diff = 0;
    for (std::size_t i = 0; i < want.size(); ++i) diff |= static_cast<std::uint8_t>(want[i] ^ req.cookie[i]);
    return diff == 0;
}

int ConnManager::connect(const wire::Ipv6Addr& peer, const CmMessage& route, const CmMessage& req, TimeNs now,
                         std::uint32_t& id) {
    wake_dirty_ = true;
    if (conns_.size() >= limits_.max_connections) return ENOMEM;
    if (req.encryption != 0 && (keys_ == nullptr || !keys_->has_key(req.key_select))) return EINVAL;
    Conn c;
    c.id = new_id();
    c.peer = peer;
    c.service_id = req.service_id;
    c.requester = true;
    c.state = State::req_sent;
    c.route = route;
    c.sent = req;
    c.sent.type = CmType::req;
    c.sent.src_comm_id = c.id;
    c.sent.dst_comm_id = 0;
    c.sent.attempt = 0;
    c.sent.cookie = {};
    c.sent.key_check = {};
    if (req.encryption != 0 &&
        !keys_->own_check(req.key_select, req.key_nonce, check_context(c.sent), c.sent.key_check))
        return EINVAL;
    std::size_t len = 0;
    std::array<std::uint8_t, wire::kCmMaxMessage> scratch{};
    if (c.sent.encode(scratch, len) != wire::WireError::ok) return EINVAL;
    c.rto = limits_.rto_ns;
    c.next_ns = now + c.rto;  // arm()'s, queued by insert()
    c.rto = std::min(c.rto * 2, limits_.max_rto_ns);
    send(peer, c.sent, c.route);
    id = c.id;
    insert(c);
    return 0;
}

int ConnManager::accept(std::uint32_t id, const CmMessage& rep, TimeNs now) {
    wake_dirty_ = true;
    Conn* c = find(id);
    if (c == nullptr) return ENOENT;
    if (c->requester || c->state != State::req_received) return EINVAL;
    CmMessage m = rep;
    m.type = CmType::rep;
    m.src_comm_id = c->id;
    m.dst_comm_id = c->peer_id;
    m.service_id = c->service_id;
    m.attempt = 0;
    m.cookie = {};
    m.key_check = {};
    m.encryption = c->got.encryption;  // what was asked is what is set up (the verbs layer keys the QP so)
    if (m.encryption != 0 &&
        (keys_ == nullptr || !keys_->own_check(m.key_select, m.key_nonce, check_context(m), m.key_check)))
        return EINVAL;
    std::size_t len = 0;
    std::array<std::uint8_t, wire::kCmMaxMessage> scratch{};
    if (m.encode(scratch, len) != wire::WireError::ok) return EINVAL;
    c->sent = m;
    set_state(*c, State::rep_sent);
    c->attempts = 0;
    c->rto = limits_.rto_ns;
    arm(*c, now);
    send(c->peer, m, c->route);
    return 0;
}

int ConnManager::reject(std::uint32_t id, CmReject reason, std::span<const std::uint8_t> private_data, TimeNs now) {
    wake_dirty_ = true;
    Conn* c = find(id);
    if (c == nullptr) return ENOENT;
    if (c->requester || c->state != State::req_received || private_data.size() > wire::kCmPrivateMax) return EINVAL;
    CmMessage r = rej(c->id, c->peer_id, reason);
    r.private_len = static_cast<std::uint8_t>(private_data.size());
    std::copy(private_data.begin(), private_data.end(), r.private_data.begin());
    send(c->peer, r, c->route);
    ++stats_.rejects_sent;
    end(id, now);
    return 0;
}

int ConnManager::confirm(std::uint32_t id, TimeNs now) {
    wake_dirty_ = true;
    Conn* c = find(id);
    if (c == nullptr) return ENOENT;
    if (!c->requester || c->state != State::reply_wait) return EINVAL;
    c->sent = CmMessage{};
    c->sent.type = CmType::rtu;
    c->sent.src_comm_id = c->id;
    c->sent.dst_comm_id = c->peer_id;
    set_state(*c, State::established);
    set_timer(*c, kNever);
    send(c->peer, c->sent, c->route);
    ++stats_.established;
    (void)now;
    return 0;
}

int ConnManager::disconnect(std::uint32_t id, TimeNs now, std::optional<std::uint32_t> rcv_psn) {
    wake_dirty_ = true;
    Conn* c = find(id);
    if (c == nullptr) return ENOENT;
    if (c->peer_id == 0) {  // a REQ not yet answered: nothing on the other side to tell
        end(id, now);
        return 0;
    }
    c->sent = CmMessage{};
    c->sent.type = CmType::dreq;
    c->sent.src_comm_id = c->id;
    c->sent.dst_comm_id = c->peer_id;
    c->sent.has_rcv_psn = rcv_psn.has_value();
    c->sent.rcv_psn = rcv_psn.value_or(0) & 0xFFFFFF;
    set_state(*c, State::dreq_sent);
    c->attempts = 0;
    c->rto = limits_.rto_ns;
    arm(*c, now);
    send(c->peer, c->sent, c->route);
    return 0;
}

void ConnManager::on_message(const wire::Ipv6Addr& from, const CmMessage& m, TimeNs now) {
    wake_dirty_ = true;
    ++stats_.rx_messages;
    if (m.type == CmType::req) return on_req(from, m, now);
    if (m.type == CmType::rep) return on_rep(from, m, now);
    Conn* c = find(m.dst_comm_id);
    if (c == nullptr || c->peer != from || (c->peer_id != 0 && m.src_comm_id != c->peer_id)) {
        // A DREQ repeated after we answered it: answer again.
        const TimeWait* t = timewait_of(m.dst_comm_id);
        if (m.type == CmType::dreq && t != nullptr && t->peer == from && t->peer_id == m.src_comm_id) {
            CmMessage r;
            r.type = CmType::drep;
            r.src_comm_id = t->id;
            r.dst_comm_id = t->peer_id;
            send(from, r, r);
            return;
        }
        ++stats_.stray;
        return;
    }
    switch (m.type) {
        case CmType::cookie:
            if (c->state != State::req_sent || c->cookie_rounds >= limits_.max_cookie_rounds) {
                ++stats_.stray;
                return;
            }
            ++c->cookie_rounds;
            c->sent.cookie = m.cookie;
            ++c->sent.attempt;
            send(c->peer, c->sent, c->route);
            c->rto = limits_.rto_ns;
            arm(*c, now);
            return;
        case CmType::rtu:
            if (c->state != State::rep_sent) return;  // a repeated RTU
            set_state(*c, State::established);
            set_timer(*c, kNever);
            ++stats_.established;
            event(CmEventKind::established, *c);
            return;
        case CmType::rej:
            ++stats_.rejects_received;
            event(CmEventKind::rejected, *c, m.reason, false, &m);
            end(c->id, now);
            return;
        case CmType::dreq: {
            CmMessage r;
            r.type = CmType::drep;
            r.src_comm_id = c->id;
            r.dst_comm_id = c->peer_id;
            send(from, r, c->route);
            event(CmEventKind::disconnected, *c, CmReject::none, false, &m);
            end(c->id, now);
            return;
        }
        case CmType::drep:
            if (c->state != State::dreq_sent) {
                ++stats_.stray;
                return;
            }
            event(CmEventKind::disconnected, *c);
            end(c->id, now);
            return;
        default: return;
    }
}

void ConnManager::on_req(const wire::Ipv6Addr& from, const CmMessage& m, TimeNs now) {
    if (m.dst_comm_id != 0) {
        ++stats_.stray;
        return;
    }
    // Answers a REQ whose cookie does not verify with a fresh one (no state kept).
    auto send_cookie = [&] {
        if (m.cookie != std::array<std::uint8_t, 16>{}) ++stats_.cookies_bad;
        CmMessage ck;
        ck.type = CmType::cookie;
        ck.src_comm_id = rng_.next_u32() | 1;
        ck.dst_comm_id = m.src_comm_id;
        make_cookie(from, m, static_cast<std::uint32_t>(now / limits_.cookie_slot_ns), ck.cookie);
        send(from, ck, m);
        ++stats_.cookies_sent;
    };
    const Listener* l = listener(m.service_id);
    // A listener that always wants a cookie checks it first: a flood from
    // forged addresses then costs one MAC per REQ, never a walk over the
    // live connections (the duplicate and load checks below).
    bool cookie_checked = false;
    if (l != nullptr && l->how.cookies == CmCookies::always) {
        if (!cookie_ok(from, m, now)) return send_cookie();
        cookie_checked = true;
    }
    if (Conn* c = find_peer(from, m.src_comm_id); c != nullptr) {
        // The requester did not get our answer: the REP again (nothing yet
        // to say while the application decides).
        ++stats_.duplicates;
        if (c->state == State::rep_sent || c->state == State::established) send(from, c->sent, c->route);
        return;
    }
    if (in_timewait(from, m.src_comm_id, now)) {
        ++stats_.replays;
        return;
    }
    if (l == nullptr) return send_reject(from, m, CmReject::no_listener);
    const auto b = backlog_.find(m.service_id);
    const auto h = half_open_.find(PeerKey{from, 0});
    const std::uint32_t pending = b != backlog_.end() ? b->second : 0;
    const std::uint32_t of_peer = h != half_open_.end() ? h->second : 0;
    const bool want_cookie = l->how.cookies == CmCookies::under_load && 2 * pending >= l->how.backlog;
    if (!cookie_checked && want_cookie && !cookie_ok(from, m, now)) return send_cookie();
    if (l->how.require_encryption && m.encryption == 0) return send_reject(from, m, CmReject::security_required);
    if (m.encryption != 0) {
        if (keys_ == nullptr || !keys_->has_key(m.key_select)) return send_reject(from, m, CmReject::security_unavailable);
        std::array<std::uint8_t, 16> want{};
        if (!keys_->peer_check(from, m.key_select, m.key_nonce, check_context(m), want) || want != m.key_check) {
            ++stats_.key_mismatches;
            return send_reject(from, m, CmReject::key_mismatch);
        }
    }
    if (of_peer >= l->how.per_peer) return send_reject(from, m, CmReject::peer_limit);
    if (pending >= l->how.backlog) return send_reject(from, m, CmReject::busy);
    if (conns_.size() >= limits_.max_connections) return send_reject(from, m, CmReject::no_resources);
    Conn c;
    c.id = new_id();
    c.peer_id = m.src_comm_id;
    c.peer = from;
    c.service_id = m.service_id;
    c.requester = false;
    c.state = State::req_received;
    c.got = m;
    c.route = m;
    c.next_ns = now + limits_.accept_timeout_ns;
    const Conn& in = insert(c);
    ++stats_.requests;
    event(CmEventKind::request, in);
}

void ConnManager::on_rep(const wire::Ipv6Addr& from, const CmMessage& m, TimeNs now) {
    Conn* c = find(m.dst_comm_id);
    if (c == nullptr || !c->requester || c->peer != from) {
        // A REP for no connection of ours (we gave up, or it is replayed):
        // tell the responder, unless this is one we already ended.
        ++stats_.stray;
        if (timewait_of(m.dst_comm_id) == nullptr) {
            send(from, rej(m.dst_comm_id != 0 ? m.dst_comm_id : 1, m.src_comm_id, CmReject::stale), m);
            ++stats_.rejects_sent;
        }
        return;
    }
    if (c->state == State::established && m.src_comm_id == c->peer_id) {
        ++stats_.duplicates;
        send(from, c->sent, c->route);  // our RTU was lost: again
        return;
    }
    if (c->state != State::req_sent) return;
    c->peer_id = m.src_comm_id;
    c->got = m;
    bool ok = m.encryption == c->sent.encryption;
    if (ok && m.encryption != 0) {
        std::array<std::uint8_t, 16> want{};
        ok = keys_ != nullptr && keys_->has_key(m.key_select) &&
             keys_->peer_check(from, m.key_select, m.key_nonce, check_context(m), want) && want == m.key_check;
    }
    if (!ok) {
        ++stats_.key_mismatches;
        send(from, rej(c->id, c->peer_id, CmReject::key_mismatch), m);
        ++stats_.rejects_sent;
        event(CmEventKind::rejected, *c, CmReject::key_mismatch, true, &m);
        end(c->id, now);
        return;
    }
    set_state(*c, State::reply_wait);
    set_timer(*c, now + limits_.accept_timeout_ns);
    event(CmEventKind::reply, *c);
}

void ConnManager::on_timer(TimeNs now) {
    wake_dirty_ = true;
    while (!timewait_order_.empty()) {
        auto it = timewait_ids_.find(timewait_order_.front());
        if (it != timewait_ids_.end() && it->second.until > now) break;
        drop_oldest_timewait();
    }
    // Due timers in time order; a resend queues the next one later than now.
    while (!timers_.empty() && timers_.top().first <= now) {
        const auto [at, id] = timers_.top();
        timers_.pop();
        Conn* c = find(id);
        if (c == nullptr || c->next_ns != at) continue;  // stale: ended, or set again since
        const bool resends = c->state == State::req_sent || c->state == State::rep_sent || c->state == State::dreq_sent;
        if (resends && c->attempts < limits_.retries) {
            ++c->attempts;
            ++c->sent.attempt;
            ++stats_.retransmits;
            send(c->peer, c->sent, c->route);
            arm(*c, now);
            continue;
        }
        ++stats_.timeouts;
        if (c->state == State::dreq_sent) {
            event(CmEventKind::disconnected, *c);
        } else {
            if (c->peer_id != 0) {  // tell the peer, best effort
                send(c->peer, rej(c->id, c->peer_id, CmReject::timeout), c->route);
                ++stats_.rejects_sent;
            }
            event(CmEventKind::failed, *c, CmReject::timeout, true);
        }
        end(id, now);
    }
}

TimeNs ConnManager::next_wakeup() const noexcept {
    // Timers change only in the calls that set wake_dirty_: between them
    // (every progress pass asks) the last answer stands.
    if (!wake_dirty_) return wake_cached_;
    TimeNs t = kNever;
    if (!timewait_order_.empty())
        if (auto it = timewait_ids_.find(timewait_order_.front()); it != timewait_ids_.end()) t = it->second.until;
    while (!timers_.empty()) {  // drop the stale entries on top
        const auto it = conns_.find(timers_.top().second);
        if (it != conns_.end() && it->second.next_ns == timers_.top().first) break;
        timers_.pop();
    }
    if (!timers_.empty()) t = std::min(t, timers_.top().first);
    wake_cached_ = t;
    wake_dirty_ = false;
    return t;
}

bool ConnManager::poll_outgoing(CmOutgoing& out) {
    if (out_.empty()) return false;
    out = out_.front();
    out_.pop_front();
    return true;
}

bool ConnManager::poll_event(CmEvent& out) {
    if (events_.empty()) return false;
    out = events_.front();
    events_.pop_front();
    return true;
}

}  // namespace omrc::core
