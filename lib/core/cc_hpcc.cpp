// SPDX-License-Identifier: BSD-3-Clause
// HPCC's sender, written from its public description (Li et al., "HPCC:
// High Precision Congestion Control", SIGCOMM 2019). Where this differs:
//  - the reference window is updated at most once per base RTT, by time,
//    instead of once per window of sequence numbers (the engine sprays a
//    QP's packets over many paths; a sequence-based round is not one RTT);
//  - consecutive records are matched per egress port id, not per hop index:
//    SACKs of one QP come back over different paths, and the utilisation of
//    an egress is only defined between two records of that same egress;
//  - trims and losses are not reacted to (HPCC assumes a lossless fabric;
//    the queue that caused them shows in the next records).
#include <algorithm>

#include "core/cc_hpcc.hpp"

namespace omrc::core {

Hpcc::Hpcc(const CcConfig& cfg, std::uint32_t planes, std::uint32_t mtu_bytes, std::uint64_t ack_hold_ns)
    : p_(cfg.hpcc),
      base_rtt_ns_(std::max<std::uint64_t>(cfg.base_rtt_ns, 1)),
      base_rtt_s_(static_cast<double>(base_rtt_ns_) / 1e9) {
    const double line_bytes_per_s = static_cast<double>(cfg.link_rate_bps) / 8.0 * std::max<std::uint32_t>(planes, 1);
    w_min_ = mtu_bytes;
    // As Dcqcn: what the line rate sends before a SACK can release it.
    w_init_ = std::max(w_min_, line_bytes_per_s * (base_rtt_s_ + static_cast<double>(ack_hold_ns) / 1e9));
    p_.eta = std::clamp(p_.eta, 1e-3, 1.0);
    wai_ = std::max(1.0, p_.wai_ratio * w_init_);
    w_ = w_init_;
    wc_ = w_init_;
    prev_ = std::make_unique<std::array<Prev, kPrevSlots>>();
}

void Hpcc::on_ack(const AckSample& s) {
    if (s.telemetry == nullptr || s.telemetry->hops == 0) return;
    const wire::IntStack& st = *s.telemetry;
    // Normalised in-flight bytes of the busiest hop this SACK reports, and
    // the time between its two records.
    double u_max = -1;
    double tau_s = 0;
    for (std::size_t i = 0; i < std::min<std::size_t>(st.hops, wire::kMaxIntHops); ++i) {
        const wire::IntHop& h = st.hop[i];
        Prev& prev = (*prev_)[slot_of(h.port_id)];
        const bool usable = prev.valid && prev.hop.port_id == h.port_id && h.ts_ns > prev.hop.ts_ns &&
                            h.tx_bytes >= prev.hop.tx_bytes && h.rate_bps != 0;
        if (usable) {
            const double dt_s = static_cast<double>(h.ts_ns - prev.hop.ts_ns) / 1e9;
            const double rate_bytes_per_s = static_cast<double>(h.rate_bps) / 8.0;
            const double tx_rate = static_cast<double>(h.tx_bytes - prev.hop.tx_bytes) / dt_s;
            const double qlen = static_cast<double>(std::min(h.qlen_bytes, prev.hop.qlen_bytes));
            const double u = qlen / (rate_bytes_per_s * base_rtt_s_) + tx_rate / rate_bytes_per_s;
            if (u > u_max) {
                u_max = u;
                tau_s = dt_s;
            }
        }
        // A newer record replaces the previous one (SACKs may arrive out of order).
        if (!prev.valid || prev.hop.port_id != h.port_id || h.ts_ns >= prev.hop.ts_ns) prev = {true, h};
    }
    if (u_max < 0) return;  // no egress seen twice yet
    tau_s = std::min(tau_s, base_rtt_s_);
    u_ = (1 - tau_s / base_rtt_s_) * u_ + (tau_s / base_rtt_s_) * u_max;

    const bool update = !updated_ever_ || s.now >= last_update_ns_ + base_rtt_ns_;
    double w;
    if (u_ >= p_.eta || inc_stage_ >= p_.max_stage) {
        // Multiplicative: what keeps the busiest hop at η, plus W_AI.
        w = wc_ / std::max(u_ / p_.eta, 1e-9) + wai_;
        if (update) inc_stage_ = 0;
    } else {
        w = wc_ + wai_;
        if (update) ++inc_stage_;
    }
    w = std::clamp(w, w_min_, w_init_);
    if (update) {
        wc_ = w;
        updated_ever_ = true;
        last_update_ns_ = s.now;
    }
    w_ = w;
}

void Hpcc::report(CcStateWriter& out) const {
    out.value("utilisation", u_);
    out.value("reference_window_bytes", wc_);
    out.count("stage", inc_stage_);
}

namespace {

constexpr CcParam kParams[] = {
    cc_param<&CcConfig::hpcc, &HpccConfig::eta>("hpcc_eta", CcParam::Kind::positive, 0, 1, "target utilisation"),
    cc_param<&CcConfig::hpcc, &HpccConfig::max_stage>("hpcc_max_stage", CcParam::Kind::integer, 0, 64,
                                                      "additive rounds before a multiplicative adjustment"),
    cc_param<&CcConfig::hpcc, &HpccConfig::wai_ratio>("hpcc_wai_ratio", CcParam::Kind::positive, 0, 1,
                                                      "W_AI / initial window"),
};

}  // namespace

extern const CcAlgorithmInfo kCcHpcc{
    .id = CcAlgorithm::hpcc,
    .name = "hpcc",
    .description = "HPCC: window from INT telemetry (the simulator stamps it; holds its window without)",
    .params = kParams,
    .make = &make_cc_as<Hpcc>,
    .needs_telemetry = true,
};

}  // namespace omrc::core
