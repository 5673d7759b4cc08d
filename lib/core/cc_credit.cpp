// SPDX-License-Identifier: BSD-3-Clause
// Receiver credit (pull), written from the public descriptions of China
// Mobile GSE's receiver-driven dynamic queue scheduling (DQSQ) and UEC's
// receiver credit (RCCC, after EQDS: Olteanu et al., NSDI 2022). Where this
// differs from them:
//  - the grant and the request ride the SACK and the data packets the
//    engine sends anyway (OpenMRC's CGTH and CRTH extension headers,
//    docs/PROTOCOL.md §11.8), never packets of their own but one case: a QP granted credit with nothing left to acknowledge gets
//    a SACK that carries the grant (no timestamp echo, no RTT sample);
//  - the receiver schedules per QP, not per (sender, VOQ/PKTC): a QP is the
//    unit the engine knows; its fair share is per QP;
//  - unscheduled bytes are charged to the receiver's pacing budget when they
//    arrive, so grants resume only once the first bursts have drained;
//  - no per-switch VOQs or credit messages inside the fabric (GSE's DQSQ
//    also schedules at the fabric's egress; here only the NIC pulls).
#include <algorithm>
#include <cmath>

#include "core/cc_credit.hpp"
#include "wire/mrc_choices.hpp"

namespace omrc::core {

namespace {
double line_bytes_per_ns(const CcConfig& cfg, std::uint32_t planes) {
    return static_cast<double>(cfg.link_rate_bps) / 8e9 * static_cast<double>(std::max<std::uint32_t>(planes, 1));
}
}  // namespace

Credit::Credit(const CcConfig& cfg, std::uint32_t planes, std::uint32_t mtu_bytes, std::uint64_t ack_hold_ns) {
    const double rate = line_bytes_per_ns(cfg, planes);
    const double bdp = rate * static_cast<double>(std::max<std::uint64_t>(cfg.base_rtt_ns, 1));
    unscheduled_max_ = cfg.credit.unscheduled_bytes != 0 ? cfg.credit.unscheduled_bytes
                                                         : static_cast<std::uint64_t>(bdp);
    window_ = std::max<std::uint64_t>(mtu_bytes, static_cast<std::uint64_t>(4 * bdp + rate * static_cast<double>(ack_hold_ns)));
}

void Credit::on_demand(std::uint64_t bytes, bool new_data, bool idle) noexcept {
    if (new_data && idle) burst_left_ = unscheduled_max_;
    demand_ += bytes;
    // Only new data of an idle start goes unscheduled: a retransmission is
    // asked for (R grows by its bytes: a trimmed packet's credit is asked
    // for again, not lost).
    if (new_data && burst_left_ != 0) {
        const std::uint64_t u = std::min(burst_left_, bytes);
        unsched_ += u;
        burst_left_ -= u;
    }
}

bool Credit::may_send(std::uint32_t len, bool nothing_in_flight) const noexcept {
    if (off_) return true;
    const std::uint64_t avail_u = unsched_ - sent_u_;
    const std::uint64_t avail_g = granted_ > sent_g_ ? granted_ - sent_g_ : 0;
    if (avail_u + avail_g >= len) return true;
    // Liveness: nothing in flight (no SACK will come) and a request the
    // receiver has not heard; no earlier unpaid packet.
    return nothing_in_flight && request_bytes() > request_sent_ && sent_g_ <= granted_;
}

std::uint32_t Credit::on_sent(std::uint32_t len, bool nothing_in_flight) noexcept {
    (void)nothing_in_flight;
    const auto u = static_cast<std::uint32_t>(std::min<std::uint64_t>(len, unsched_ - sent_u_));
    sent_u_ += u;
    sent_g_ += len - u;  // beyond G only for a liveness send
    request_sent_ = std::max(request_sent_, request_bytes());
    return u;
}

void Credit::on_grant(std::uint64_t cumulative) noexcept {
    if (cumulative <= granted_) return;
    granted_ = cumulative;
    // The receiver knows us now: the rest of the start goes on its credit.
    burst_left_ = 0;
}

void CreditScheduler::configure(double rate_bytes_per_ns, std::uint64_t ahead_bytes, std::uint64_t quantum_bytes,
                                TimeNs expire_ns) noexcept {
    expire_ns_ = std::max<TimeNs>(expire_ns, 1);
    rate_ = std::max(rate_bytes_per_ns, 1e-9);
    ahead_ = static_cast<double>(std::max<std::uint64_t>(ahead_bytes, 1));
    quantum_ = std::max<std::uint64_t>(quantum_bytes, 1);
    if (!started_) budget_ = ahead_;  // a receiver starts with its bucket full
}

void CreditScheduler::accrue(TimeNs now) noexcept {
    if (!started_) {
        started_ = true;
        last_ns_ = now;
        return;
    }
    if (now <= last_ns_) return;
    budget_ = std::min(ahead_, budget_ + rate_ * static_cast<double>(now - last_ns_));
    last_ns_ = now;
}

void CreditScheduler::on_request(std::uint32_t id, std::uint64_t request, std::uint64_t used, TimeNs now) {
    if (id >= entries_.size()) entries_.resize(id + 1);
    Entry& e = entries_[id];
    if (now > e.touched_ns + expire_ns_) e.used = std::max(e.used, e.granted);  // expired before this packet
    e.used = std::max(e.used, used);
    e.touched_ns = std::max(e.touched_ns, now);
    if (request <= e.request) return;  // an older packet's (they reorder)
    e.request = request;
    if (!e.active && e.request > e.granted) {
        e.active = true;
        active_.push_back(id);
    }
}

void CreditScheduler::forgive_expired(TimeNs now) noexcept {
    for (Entry& e : entries_)
        if (e.granted > e.used && now > e.touched_ns + expire_ns_) e.used = e.granted;
}

std::uint64_t CreditScheduler::unused_credit(TimeNs now) const noexcept {
    std::uint64_t sum = 0;
    for (const Entry& e : entries_)
        if (e.granted > e.used && now <= e.touched_ns + expire_ns_) sum += e.granted - e.used;
    return sum;
}

TimeNs CreditScheduler::next_grant_ns(TimeNs now) const noexcept {
    if (rate_ <= 0) return kNever;
    // A QP holding unused credit is forgiven `expire` after its last arrival or grant.
    TimeNs t = kNever;
    for (const Entry& e : entries_)
        if (e.granted > e.used) t = std::min(t, std::max(now, e.touched_ns + expire_ns_ + 1));
    if (active_.empty()) return t;
    // At the cap, arrivals lower it (and run the scheduler), and so does the expiry above.
    if (cap_blocked_) return t;
    const Entry& e = entries_[active_.front()];
    const double g = static_cast<double>(std::min(e.request - e.granted, quantum_));
    const TimeNs from = started_ ? std::max(now, last_ns_) : now;
    if (budget_ >= g) return std::min(t, from);
    return std::min(t, from + static_cast<TimeNs>(std::ceil((g - budget_) / rate_)));
}

void CreditScheduler::forget(std::uint32_t id) noexcept {
    if (id >= entries_.size()) return;
    if (entries_[id].active) active_.erase(std::find(active_.begin(), active_.end(), id));
    entries_[id] = {};
}

void Credit::report(CcStateWriter& out) const {
    // Cumulative bytes (docs/PROTOCOL.md §11.6, §11.8); off = the peer's SACKs carried no grant.
    out.flag("off", off_);
    out.count("demand_bytes", demand_bytes());
    out.count("request_bytes", request_bytes());
    out.count("granted_bytes", granted_bytes());
    out.count("sent_scheduled_bytes", sent_scheduled_bytes());
    out.count("sent_unscheduled_bytes", sent_unscheduled_bytes());
}

namespace {

constexpr double kMaxBytes = static_cast<double>(std::uint64_t{1} << 40);

constexpr CcParam kParams[] = {
    cc_param<&CcConfig::credit, &CreditConfig::unscheduled_bytes>(
        "credit_unscheduled_bytes", CcParam::Kind::integer, 0, kMaxBytes,
        "sender: bytes sent before any grant when starting from idle; 0 = one BDP"),
    cc_param<&CcConfig::credit, &CreditConfig::quantum_bytes>(
        "credit_quantum_bytes", CcParam::Kind::integer, 64, static_cast<double>(std::uint64_t{1} << 30),
        "receiver: credit per QP per round-robin turn"),
    cc_param<&CcConfig::credit, &CreditConfig::ahead_bytes>(
        "credit_ahead_bytes", CcParam::Kind::integer, 0, kMaxBytes,
        "receiver: grants not yet used, at most; 0 = one BDP plus the ACK hold"),
    cc_param<&CcConfig::credit, &CreditConfig::rate_ratio>("credit_rate_ratio", CcParam::Kind::positive, 0, 1,
                                                           "receiver: grants pace at this fraction of the line rate"),
};

}  // namespace

extern const CcAlgorithmInfo kCcCredit{
    .id = CcAlgorithm::credit,
    .name = "credit",
    .description = "receiver credit: an unscheduled first burst, then only what the receiver grants",
    .params = kParams,
    .make = &make_cc_as<Credit>,
    .seth_cc_type = wire::mrc::kSethCcTypeCredit,
    .receiver_credit = true,
};

}  // namespace omrc::core
