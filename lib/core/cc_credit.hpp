// SPDX-License-Identifier: BSD-3-Clause
// Receiver credit: the sender's half (Credit) and the receiver's
// (CreditScheduler); lib/core/cc_credit.cpp, registered there as "credit".
#pragma once

#include <algorithm>
#include <deque>
#include <vector>

#include "core/cc.hpp"

namespace omrc::core {

/// Receiver credit, the sender's half (GSE DQSQ / UEC RCCC-EQDS style pull;
/// docs/DESIGNS.md). Cumulative byte counters, so that lost or reordered
/// SACKs and data packets lose nothing: D (demand: every byte queued for
/// sending, new or retransmitted), U (unscheduled allowance: at most
/// unscheduled_bytes of new data per start from idle), G (the largest grant
/// received), S_u and S_g (bytes sent against U and against G). A packet of
/// `len` bytes may go when (U − S_u) + (G − S_g) ≥ len, unscheduled bytes
/// first; every data packet carries the request R = D − U (monotone). One
/// exception keeps the QP live: with nothing in flight and a request the
/// receiver has not heard (R above the one last sent), one packet may go on
/// credit not yet granted (S_g > G by < one packet; the receiver grants it,
/// it is part of R). The window is only a safety bound (four BDPs plus the
/// ACK hold): credit is what paces the sender. A SACK without a grant (a
/// driver that does not carry the credit fields, or a peer not in credit
/// mode) turns the credit gate off for good: the window alone remains.
class Credit final : public CongestionControl {
public:
    Credit(const CcConfig& cfg, std::uint32_t planes, std::uint32_t mtu_bytes, std::uint64_t ack_hold_ns = 0);
    void on_ack(const AckSample&) override {}
    void on_trim(TimeNs) override {}  // the trimmed bytes come back through on_demand (a retransmission)
    void on_loss(TimeNs) override {}
    [[nodiscard]] std::uint64_t window_bytes() const override { return window_; }
    void report(CcStateWriter& out) const override;

    /// `bytes` more to send: a posted message (`new_data`) or a packet queued
    /// for retransmission. `idle`: the QP had nothing in flight and nothing
    /// queued before this (a new message then opens an unscheduled burst).
    void on_demand(std::uint64_t bytes, bool new_data, bool idle) noexcept;
    /// May a `len`-byte packet go now? `nothing_in_flight`: no SACK is coming.
    [[nodiscard]] bool may_send(std::uint32_t len, bool nothing_in_flight) const noexcept;
    /// A `len`-byte packet went (may_send said yes); returns the bytes of it
    /// sent without credit.
    std::uint32_t on_sent(std::uint32_t len, bool nothing_in_flight) noexcept;
    /// A SACK's cumulative grant.
    void on_grant(std::uint64_t cumulative) noexcept;
    /// A SACK came without a grant: the peer (or the driver) does not speak
    /// credit, and no grant will ever come. Credit is off for good: the
    /// sender is bounded by its window alone, as a fixed window.
    void on_no_grant() noexcept { off_ = true; }
    [[nodiscard]] bool off() const noexcept { return off_; }

    [[nodiscard]] std::uint64_t request_bytes() const noexcept { return demand_ - unsched_; }  ///< R
    [[nodiscard]] std::uint64_t demand_bytes() const noexcept { return demand_; }              ///< D
    [[nodiscard]] std::uint64_t unscheduled_allowance() const noexcept { return unsched_; }    ///< U
    [[nodiscard]] std::uint64_t granted_bytes() const noexcept { return granted_; }            ///< G
    [[nodiscard]] std::uint64_t sent_bytes() const noexcept { return sent_u_ + sent_g_; }      ///< S_u + S_g
    [[nodiscard]] std::uint64_t sent_unscheduled_bytes() const noexcept { return sent_u_; }    ///< S_u
    [[nodiscard]] std::uint64_t sent_scheduled_bytes() const noexcept { return sent_g_; }      ///< S_g

private:
    std::uint64_t unscheduled_max_;    ///< bytes of new data an idle start may send unscheduled
    std::uint64_t window_;             ///< 4 · BDP + line rate · ack hold, bytes
    std::uint64_t demand_ = 0;         ///< D
    std::uint64_t unsched_ = 0;        ///< U ≤ D
    std::uint64_t granted_ = 0;        ///< G ≤ the receiver's view of R ≤ D − U
    std::uint64_t sent_u_ = 0;         ///< S_u ≤ U
    std::uint64_t sent_g_ = 0;         ///< S_g ≤ G, or G + one packet after a liveness send
    std::uint64_t burst_left_ = 0;     ///< unscheduled bytes the current idle start may still add to U
    std::uint64_t request_sent_ = 0;   ///< the largest R a data packet carried
    bool off_ = false;                 ///< a SACK came without a grant: no credit gate any more
};

/// Receiver credit, the receiver's half: one per engine, over every QP that
/// sends to it in credit mode. A pacing budget accrues at rate (planes ·
/// link rate · rate_ratio) with the `now` it is given (it reads no clock),
/// capped at `ahead` bytes; arriving unscheduled bytes are charged to it
/// (the link carried them unasked), grants are paid from it. Grants also
/// stop while those not yet used would exceed `ahead`: per QP, its grant
/// less the credit its newest arrived packet says was used by then (a
/// cumulative count, so a lost packet leaves nothing behind), forgotten for
/// a QP that neither sent nor was granted for `expire` (a sender that went
/// away or was granted more than it needed holds no share). The pace alone
/// would let grants pile up while senders are slow to use them, and arrive
/// together later. QPs with
/// demand (largest request seen above their grant) are served round robin,
/// a quantum each (less when their demand is smaller): equal shares of the
/// line rate among the QPs that want it. A QP whose demand reaches zero
/// leaves the rotation: no grant goes to a QP that asked for nothing.
class CreditScheduler {
public:
    /// rate: bytes per ns; ahead, quantum: bytes; expire: ns.
    void configure(double rate_bytes_per_ns, std::uint64_t ahead_bytes, std::uint64_t quantum_bytes,
                   TimeNs expire_ns) noexcept;
    [[nodiscard]] bool configured() const noexcept { return rate_ > 0; }
    /// A data packet of QP `id` carried the cumulative request `request` and
    /// the credit `used` by the time it left (both cumulative bytes).
    void on_request(std::uint32_t id, std::uint64_t request, std::uint64_t used, TimeNs now);
    /// `bytes` arrived without credit (an unscheduled burst).
    void charge(std::uint64_t bytes) noexcept { budget_ -= static_cast<double>(bytes); }
    /// Accrues the budget to `now` and grants round robin while it lasts;
    /// calls grant(id) for every QP whose grant grew. Returns the grants made.
    template <class F>
    std::size_t run(TimeNs now, F&& grant) {
        accrue(now);
        forgive_expired(now);
        std::uint64_t unused = unused_credit(now);
        std::size_t n = 0;
        cap_blocked_ = false;
        while (!active_.empty()) {
            Entry& e = entries_[active_.front()];
            const std::uint64_t pending = e.request - e.granted;
            const std::uint64_t g = std::min(pending, quantum_);
            if (budget_ < static_cast<double>(g)) break;
            if (unused + g > static_cast<std::uint64_t>(ahead_) && unused != 0) {
                cap_blocked_ = true;
                break;
            }
            budget_ -= static_cast<double>(g);
            unused += g;
            if (e.granted <= e.used) e.used = e.granted;  // none of it unused: counting starts here
            e.granted += g;
            e.touched_ns = now;
            ++n;
            const std::uint32_t id = active_.front();
            active_.pop_front();
            if (e.request > e.granted) active_.push_back(id);
            else e.active = false;
            grant(id);
        }
        return n;
    }
    /// Forgives the unused credit of every QP idle for `expire` (as run()
    /// does) and calls lost(id) for each: its grant may never have reached
    /// its sender (a lost SACK), so the caller sends it again.
    template <class F>
    void expire(TimeNs now, F&& lost) {
        for (std::uint32_t id = 0; id < entries_.size(); ++id) {
            Entry& e = entries_[id];
            if (e.granted > e.used && now > e.touched_ns + expire_ns_) {
                e.used = e.granted;
                lost(id);
            }
        }
    }
    /// When run() can next grant, or expire() has a QP to forgive: kNever
    /// with neither demand nor unused credit.
    [[nodiscard]] TimeNs next_grant_ns(TimeNs now) const noexcept;
    [[nodiscard]] std::uint64_t granted(std::uint32_t id) const noexcept {
        return id < entries_.size() ? entries_[id].granted : 0;
    }
    [[nodiscard]] std::uint64_t request(std::uint32_t id) const noexcept {
        return id < entries_.size() ? entries_[id].request : 0;
    }
    /// The largest credit-used count QP `id`'s packets carried (or what a forgiveness set).
    [[nodiscard]] std::uint64_t used(std::uint32_t id) const noexcept {
        return id < entries_.size() ? entries_[id].used : 0;
    }
    [[nodiscard]] std::size_t demanding() const noexcept { return active_.size(); }
    [[nodiscard]] double budget_bytes() const noexcept { return budget_; }
    /// Granted and not yet used, over the QPs that sent or were granted
    /// within `expire` of `now`.
    [[nodiscard]] std::uint64_t unused_credit(TimeNs now) const noexcept;
    /// Drops QP `id`'s state (destroyed, reset, reused).
    void forget(std::uint32_t id) noexcept;

private:
    void accrue(TimeNs now) noexcept;
    /// A QP idle for `expire` holds no unused credit, for good: what it was
    /// granted counts as used (a packet arriving later cannot revive it).
    void forgive_expired(TimeNs now) noexcept;
    struct Entry {
        std::uint64_t request = 0;   ///< largest cumulative request seen
        std::uint64_t granted = 0;   ///< cumulative grant, ≤ request
        std::uint64_t used = 0;      ///< largest credit-used count an arrived packet carried
        TimeNs touched_ns = 0;       ///< last arrival or grant
        bool active = false;         ///< in active_ (request > granted)
    };
    std::vector<Entry> entries_;          ///< by id
    std::deque<std::uint32_t> active_;    ///< round-robin order of the QPs with demand
    double rate_ = 0;                     ///< bytes per ns
    double ahead_ = 0;                    ///< budget cap, bytes
    std::uint64_t quantum_ = 1;           ///< bytes per turn
    TimeNs expire_ns_ = 1;                ///< a QP idle this long holds no unused credit
    bool cap_blocked_ = false;            ///< the last run() stopped at the unused-credit cap
    double budget_ = 0;                   ///< bytes; negative after unscheduled arrivals
    bool started_ = false;                ///< accrual runs from the first run()
    TimeNs last_ns_ = 0;
};

}  // namespace omrc::core
