// SPDX-License-Identifier: BSD-3-Clause
// The connection manager's protocol state machine (docs/PROTOCOL.md §13.5),
// sans-IO like the engine: time comes in as `now`, randomness from a seed,
// messages in through on_message() and out through poll_outgoing(), what
// the application must act on through poll_event(). It knows nothing of
// frames or QPs: the engine carries its messages (opcode 0x64 to QPN 1) and
// the verbs layer moves QPs when its events say so.
//
// Requester: connect() sends a REQ, resent on a timer until a REP, a COOKIE
// (resent at once with the cookie) or a REJ; a REP becomes a `reply` event,
// and confirm() sends the RTU. Responder: a REQ for a listened-to service
// that passes the cookie, security and limit checks becomes a `request`
// event; accept() sends the REP (resent until the RTU), reject() a REJ.
// Every refusal before that point keeps no state. Either end disconnects
// with DREQ/DREP. Ended connections stay in a time-wait table, so a replayed
// REQ or DREQ is recognised.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/rng.hpp"
#include "core/types.hpp"
#include "security/cookie_mac.hpp"
#include "wire/cm_msg.hpp"
#include "wire/ipv6.hpp"

namespace omrc::core {

/// Timers and limits of a ConnManager.
struct CmLimits {
    TimeNs rto_ns = 1'000'000;           ///< first resend of a REQ, REP or DREQ; doubled per attempt
    TimeNs max_rto_ns = 64'000'000;      ///< the doubling stops here
    std::uint32_t retries = 15;          ///< resends before the connection fails (timeout; IBTA CM's default)
    TimeNs accept_timeout_ns = 2'000'000'000;  ///< a request not accepted nor rejected, a REP not confirmed: fails
    TimeNs cookie_slot_ns = 1'000'000'000;     ///< a cookie is valid in its slot and the next
    TimeNs timewait_ns = 2'000'000'000;  ///< ended connections remembered (≥ 2 cookie slots: a replay finds one or the other)
    std::uint32_t max_connections = 4096;      ///< live entries at most; beyond: REJ no_resources
    std::uint32_t max_timewait = 16384;        ///< time-wait entries at most (the oldest go first)
    std::uint32_t max_cookie_rounds = 3;       ///< COOKIEs a requester follows per connect
};

/// How a listener treats cookies (§13.5).
enum class CmCookies : std::uint8_t {
    always,      ///< every REQ must echo a valid cookie: one more round trip, no state for forged sources
    under_load,  ///< only once the backlog is half full
    never,
};

struct CmListen {
    std::uint32_t backlog = 128;     ///< requests not yet accepted or rejected, at most
    std::uint32_t per_peer = 8;      ///< pending requests and unconfirmed REPs per peer address, at most
    CmCookies cookies = CmCookies::always;
    bool require_encryption = false; ///< refuse a plain REQ (security_required)
};

/// What encrypted setup needs from the engine: its keys (docs/PROTOCOL.md §13.4).
class CmKeys {
public:
    virtual ~CmKeys() = default;
    /// Whether master key `select` (0/1) is configured here.
    [[nodiscard]] virtual bool has_key(std::uint8_t select) const = 0;
    /// The key check of a message we send, under our connection master key (select, nonce).
    virtual bool own_check(std::uint8_t select, const std::array<std::uint8_t, 16>& nonce,
                           std::span<const std::uint8_t> context, std::array<std::uint8_t, 16>& out) = 0;
    /// The key check `peer` must have sent, under its connection master key.
    virtual bool peer_check(const wire::Ipv6Addr& peer, std::uint8_t select, const std::array<std::uint8_t, 16>& nonce,
                            std::span<const std::uint8_t> context, std::array<std::uint8_t, 16>& out) = 0;
};

enum class CmEventKind : std::uint8_t {
    request,       ///< responder: a REQ passed every check; accept() or reject()
    reply,         ///< requester: the REP (key checked); set the QP up, then confirm()
    established,   ///< responder: the RTU came
    rejected,      ///< a REJ came, or this end refused the REP (key_mismatch): `reason`
    disconnected,  ///< DREQ or DREP (or a DREQ that got no answer)
    failed,        ///< no answer after every resend, or the application did not answer in time: `reason` timeout
};

struct CmEvent {
    CmEventKind kind = CmEventKind::request;
    std::uint32_t id = 0;              ///< our comm id of the connection
    wire::Ipv6Addr peer{};
    wire::CmReject reason = wire::CmReject::none;
    bool local = false;                ///< rejected: this end refused (the reason is ours)
    wire::CmMessage msg{};             ///< request: the REQ; reply: the REP; rejected: the REJ (if any);
                                       ///< disconnected: the peer's DREQ (if it sent one)
};

struct CmOutgoing {
    wire::Ipv6Addr to{};
    wire::CmMessage msg{};
    /// Whose planes, MACs and host address the message: the peer's REQ, or
    /// the route connect() was given. A DREP to a DREQ repeated after the
    /// connection ended has none (planes 0): answer where the DREQ came from.
    wire::CmMessage about{};
};

struct CmStats {
    std::uint64_t rx_messages = 0;
    std::uint64_t tx_messages = 0;
    std::uint64_t retransmits = 0;
    std::uint64_t cookies_sent = 0;
    std::uint64_t cookies_bad = 0;         ///< REQs with a cookie that did not verify (expired or forged)
    std::uint64_t requests = 0;            ///< request events
    std::uint64_t established = 0;         ///< both sides (RTU received, confirm())
    std::uint64_t rejects_sent = 0;
    std::uint64_t rejects_received = 0;
    std::uint64_t replays = 0;             ///< REQs naming a connection in time-wait
    std::uint64_t duplicates = 0;          ///< REQs and REPs of a live connection, answered again
    std::uint64_t stray = 0;               ///< messages for no connection of ours (dropped)
    std::uint64_t timeouts = 0;
    std::uint64_t key_mismatches = 0;
};

class ConnManager {
public:
    ConnManager(const CmLimits& limits, std::uint64_t seed, CmKeys* keys);

    /// 0, EADDRINUSE (already listened to).
    int listen(std::uint64_t service_id, const CmListen& how);
    /// 0, ENOENT. Requests already taken stay.
    int unlisten(std::uint64_t service_id);
    /// Sends a REQ to `peer` with `req`'s parameters (qpn .. private data;
    /// ids, cookie and key check are filled here); `route` holds the peer's
    /// planes, MACs and host (how to reach it). 0 and `id`; EINVAL (bad
    /// fields, encryption without our key), ENOMEM (max_connections).
    int connect(const wire::Ipv6Addr& peer, const wire::CmMessage& route, const wire::CmMessage& req, TimeNs now,
                std::uint32_t& id);
    /// Responder, after `request`: sends the REP with `rep`'s parameters. 0, ENOENT, EINVAL (wrong state).
    int accept(std::uint32_t id, const wire::CmMessage& rep, TimeNs now);
    /// Responder, after `request`: REJ (consumer or no_resources, with private data). 0, ENOENT, EINVAL.
    int reject(std::uint32_t id, wire::CmReject reason, std::span<const std::uint8_t> private_data, TimeNs now);
    /// Requester, after `reply`: sends the RTU. 0, ENOENT, EINVAL.
    int confirm(std::uint32_t id, TimeNs now);
    /// Either end of a connection past its REQ: DREQ (resent until the DREP). 0, ENOENT.
    /// `rcv_psn`: the QP's receive edge (every PSN before it arrived), which
    /// the DREQ carries so that the peer completes the sends that arrived
    /// before their ACK reached it; none when no QP stands behind the connection.
    int disconnect(std::uint32_t id, TimeNs now, std::optional<std::uint32_t> rcv_psn = std::nullopt);

    void on_message(const wire::Ipv6Addr& from, const wire::CmMessage& m, TimeNs now);
    void on_timer(TimeNs now);
    [[nodiscard]] TimeNs next_wakeup() const noexcept;

    bool poll_outgoing(CmOutgoing& out);
    bool poll_event(CmEvent& out);
    [[nodiscard]] bool has_outgoing() const noexcept { return !out_.empty(); }
    [[nodiscard]] bool has_events() const noexcept { return !events_.empty(); }

    [[nodiscard]] const CmStats& stats() const noexcept { return stats_; }
    /// Live connections (every state but time-wait).
    [[nodiscard]] std::size_t live() const noexcept { return conns_.size(); }
    [[nodiscard]] std::size_t timewait() const noexcept { return timewait_ids_.size(); }
    /// The REQ (responder) or REP (requester) a live connection got from its peer; null when none yet.
    [[nodiscard]] const wire::CmMessage* peer_message(std::uint32_t id) const noexcept;

private:
    enum class State : std::uint8_t { req_sent, reply_wait, established, req_received, rep_sent, dreq_sent };
    struct Conn {
        std::uint32_t id = 0;
        std::uint32_t peer_id = 0;     ///< 0 until known
        wire::Ipv6Addr peer{};
        std::uint64_t service_id = 0;
        bool requester = false;
        State state = State::req_sent;
        wire::CmMessage sent{};        ///< the message resent on the timer
        wire::CmMessage got{};         ///< the peer's REQ (responder) or REP (requester)
        wire::CmMessage route{};       ///< the peer's planes, MACs and host (its REQ, or what connect() was given)
        std::uint32_t attempts = 0;
        std::uint32_t cookie_rounds = 0;
        TimeNs rto = 0;
        TimeNs next_ns = kNever;       ///< resend or expiry
    };
    struct Listener {
        std::uint64_t service_id = 0;
        CmListen how{};
    };
    struct TimeWait {
        wire::Ipv6Addr peer{};
        std::uint32_t peer_id = 0;
        std::uint32_t id = 0;
        TimeNs until = 0;
    };
    /// A peer's end of a connection: its address and its id.
    struct PeerKey {
        wire::Ipv6Addr peer{};
        std::uint32_t peer_id = 0;
        bool operator==(const PeerKey&) const = default;
    };
    struct PeerKeyHash {
        std::size_t operator()(const PeerKey& k) const noexcept;
    };

    Conn* find(std::uint32_t id) noexcept;
    Conn* find_peer(const wire::Ipv6Addr& peer, std::uint32_t peer_id) noexcept;
    const Listener* listener(std::uint64_t service_id) const noexcept;
    std::uint32_t new_id();
    void send(const wire::Ipv6Addr& to, const wire::CmMessage& m, const wire::CmMessage& about);
    void send_reject(const wire::Ipv6Addr& to, const wire::CmMessage& req, wire::CmReject reason);
    void arm(Conn& c, TimeNs now);
    /// Sets c's timer (kNever: none) and queues it in timers_.
    void set_timer(Conn& c, TimeNs at);
    /// Every state change of a connection goes through here (it keeps the
    /// listeners' counts of half-open requests).
    void set_state(Conn& c, State s);
    /// Adds (+1) or removes (-1) c from the counts of its state.
    void count(const Conn& c, int delta);
    Conn& insert(const Conn& c);
    void end(std::uint32_t id, TimeNs now);
    void event(CmEventKind kind, const Conn& c, wire::CmReject reason = wire::CmReject::none, bool local = false,
               const wire::CmMessage* msg = nullptr);
    bool in_timewait(const wire::Ipv6Addr& peer, std::uint32_t peer_id, TimeNs now) const noexcept;
    void drop_oldest_timewait();
    const TimeWait* timewait_of(std::uint32_t id) const noexcept;
    void make_cookie(const wire::Ipv6Addr& from, const wire::CmMessage& req, std::uint32_t slot,
                     std::array<std::uint8_t, 16>& out) const;
    bool cookie_ok(const wire::Ipv6Addr& from, const wire::CmMessage& req, TimeNs now) const;
    static std::array<std::uint8_t, 13> check_context(const wire::CmMessage& m) noexcept;
    void on_req(const wire::Ipv6Addr& from, const wire::CmMessage& m, TimeNs now);
    void on_rep(const wire::Ipv6Addr& from, const wire::CmMessage& m, TimeNs now);

    CmLimits limits_;
    Rng rng_;
    CmKeys* keys_;
    std::array<std::uint8_t, 32> cookie_secret_{};
    mutable security::CookieMac cookie_mac_;
    /// next_wakeup()'s answer, kept until a call that can move a timer
    /// (connect .. on_timer) marks it stale.
    mutable TimeNs wake_cached_ = kNever;
    mutable bool wake_dirty_ = true;  ///< keyed with cookie_secret_ once (make_cookie is const)
    std::vector<Listener> listeners_;
    std::unordered_map<std::uint32_t, Conn> conns_;  ///< live connections by our id
    /// Responder connections by the peer's end (a repeated REQ finds its own).
    std::unordered_map<PeerKey, std::uint32_t, PeerKeyHash> responders_;
    /// Requests received and not yet accepted or rejected, per service (the backlog).
    std::unordered_map<std::uint64_t, std::uint32_t> backlog_;
    /// Responder connections in req_received or rep_sent per peer address
    /// (PeerKey with peer_id 0): the per-peer limit.
    std::unordered_map<PeerKey, std::uint32_t, PeerKeyHash> half_open_;
    /// (due time, id) of every timer set, soonest first. A connection's timer
    /// is the entry matching its next_ns; others are stale and dropped when
    /// they come up (next_wakeup and on_timer).
    using TimerEntry = std::pair<TimeNs, std::uint32_t>;
    mutable std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<>> timers_;
    // Time-wait: the entries by our id, the same ids oldest first (every
    // entry lasts timewait_ns, so this is also expiry order), and the latest
    // expiry by the peer's end. A REQ from a flood looks up the peer index
    // once instead of scanning up to max_timewait entries.
    std::unordered_map<std::uint32_t, TimeWait> timewait_ids_;
    std::deque<std::uint32_t> timewait_order_;
    std::unordered_map<PeerKey, TimeNs, PeerKeyHash> timewait_peers_;
    std::deque<CmOutgoing> out_;
    std::deque<CmEvent> events_;
    CmStats stats_{};
};

}  // namespace omrc::core
