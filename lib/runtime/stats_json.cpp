// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/stats_json.hpp"

#include <span>
#include <vector>

#include <nlohmann/json.hpp>

namespace omrc::runtime {

namespace {

/// An algorithm's state (CongestionControl::report) as a JSON object.
class CcStateJson final : public core::CcStateWriter {
public:
    void flag(std::string_view name, bool v) override { j_[std::string(name)] = v; }
    void count(std::string_view name, std::uint64_t v) override { j_[std::string(name)] = v; }
    void value(std::string_view name, double v) override { j_[std::string(name)] = v; }
    nlohmann::json take() { return std::move(j_); }

private:
    nlohmann::json j_ = nlohmann::json::object();
};

nlohmann::json ev_json(std::size_t slot, const core::EvSlot& s) {
    const core::EvCounters& c = s.counters;
    return {{"slot", slot},       {"ev", s.ev},         {"plane", s.plane},
            {"state", core::to_string(s.state)},
            {"sent", c.sent},     {"acked", c.acked},   {"lost", c.lost},
            {"timeouts", c.timeouts}, {"ecn", c.ecn},   {"trims", c.trims},
            {"retirements", c.retirements}, {"skips", c.skips}, {"parked", s.parked}};
}

/// One plane of one or more QPs: what was sent on it, its EVs, its groups' probing.
struct PlaneView {
    core::PlaneCounters c{};
    std::uint64_t evs_active = 0, evs_skipping = 0, evs_parked = 0, evs_assumed_bad = 0;
    std::uint64_t retirements = 0, restorations = 0, probes = 0, probe_answers = 0;
};

/// Adds `qp`'s planes (those below out.size()) to `out`.
void add_planes(const core::Qp& qp, std::span<PlaneView> out) {
    for (std::size_t p = 0; p < out.size() && p < qp.plane_counters.size(); ++p) {
        const core::PlaneCounters& c = qp.plane_counters[p];
        core::PlaneCounters& a = out[p].c;
        a.data_sent += c.data_sent;
        a.data_resent += c.data_resent;
        a.data_bytes_sent += c.data_bytes_sent;
        a.acked += c.acked;
        a.lost += c.lost;
        a.ecn_echoes += c.ecn_echoes;
        a.trims += c.trims;
    }
    const core::PathSet& paths = qp.paths;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        const core::EvSlot& s = paths.slot(i);
        if (s.plane >= out.size()) continue;
        PlaneView& v = out[s.plane];
        ++(s.parked ? v.evs_parked : s.state == core::EvState::skip ? v.evs_skipping : v.evs_active);
    }
    for (const core::BadEv& b : paths.bad())
        if (b.plane < out.size()) ++out[b.plane].evs_assumed_bad;
    for (const core::ProbeGroup& g : paths.groups()) {
        if (g.plane >= out.size()) continue;
        PlaneView& v = out[g.plane];
        v.retirements += g.retirements;
        v.restorations += g.restorations;
        v.probes += g.probes;
        v.probe_answers += g.answers;
    }
}

/// The fields a QP's planes and the device's planes share.
nlohmann::json plane_json(std::uint32_t plane, const PlaneView& v) {
    return {{"plane", plane},
            {"data_sent", v.c.data_sent},
            {"data_resent", v.c.data_resent},
            {"data_bytes_sent", v.c.data_bytes_sent},
            {"acked", v.c.acked},
            {"lost", v.c.lost},
            {"ecn_echoes", v.c.ecn_echoes},
            {"trims", v.c.trims},
            {"evs_parked", v.evs_parked},
            {"evs_assumed_bad", v.evs_assumed_bad}};
}

/// Per plane: what the QP sent on it (Qp::plane_counters), its EVs, its RTT.
nlohmann::json planes_json(const core::Qp& qp) {
    std::vector<PlaneView> views(qp.paths.planes());
    add_planes(qp, views);
    nlohmann::json out = nlohmann::json::array();
    for (std::uint32_t p = 0; p < views.size(); ++p) {
        nlohmann::json j = plane_json(p, views[p]);
        const bool sampled = (qp.rtt.planes_sampled() >> p) & 1u;
        j["evs_active"] = views[p].evs_active;
        j["evs_skipping"] = views[p].evs_skipping;
        const core::RttStats& rtt = qp.rtt.plane(static_cast<std::uint8_t>(p));
        j["rtt_min_ns"] = sampled ? rtt.min_ns : 0;
        j["rtt_max_ns"] = sampled ? rtt.max_ns : 0;
        out.push_back(std::move(j));
    }
    return out;
}

/// Per (plane, T1) group (one per plane where the fabric is not known): the
/// EVs on it now, the per-slot counters of those EVs, and its probe stream.
nlohmann::json groups_json(const core::Qp& qp) {
    const core::PathSet& paths = qp.paths;
    const std::uint32_t per_plane = paths.groups_per_plane();
    struct Acc {
        std::uint32_t evs = 0, bad = 0;
        std::uint64_t sent = 0, acked = 0, lost = 0, timeouts = 0;
    };
    std::vector<Acc> acc(static_cast<std::size_t>(paths.planes()) * per_plane);
    auto at = [&](std::uint32_t plane, std::uint32_t group) -> Acc* {
        if (plane >= paths.planes() || group >= per_plane) return nullptr;
        return &acc[static_cast<std::size_t>(plane) * per_plane + group];
    };
    for (std::size_t i = 0; i < paths.size(); ++i) {
        const core::EvSlot& s = paths.slot(i);
        if (Acc* a = at(s.plane, paths.group_of(s.ev))) {
            ++a->evs;
            a->sent += s.counters.sent;
            a->acked += s.counters.acked;
            a->lost += s.counters.lost;
            a->timeouts += s.counters.timeouts;
        }
    }
    for (const core::BadEv& b : paths.bad())
        if (Acc* a = at(b.plane, b.group)) ++a->bad;
    nlohmann::json out = nlohmann::json::array();
    for (std::uint32_t p = 0; p < paths.planes(); ++p) {
        for (std::uint32_t g = 0; g < per_plane; ++g) {
            const Acc& a = *at(p, g);
            nlohmann::json j = {{"plane", p},
                                {"t1", paths.groups_per_plane() > 1 ? nlohmann::json(g) : nlohmann::json(nullptr)},
                                {"evs", a.evs},
                                {"evs_assumed_bad", a.bad},
                                {"slot_sent", a.sent},
                                {"slot_acked", a.acked},
                                {"slot_lost", a.lost},
                                {"slot_timeouts", a.timeouts},
                                {"retirements", 0},
                                {"restorations", 0},
                                {"probes", 0},
                                {"probe_answers", 0},
                                {"probing", false},
                                {"last_failure_ns", nullptr}};
            for (const core::ProbeGroup& pg : paths.groups()) {
                if (pg.plane != p || pg.group != g) continue;
                j["retirements"] = pg.retirements;
                j["restorations"] = pg.restorations;
                j["probes"] = pg.probes;
                j["probe_answers"] = pg.answers;
                j["probing"] = a.bad != 0;
                if (pg.failed_ns != 0) j["last_failure_ns"] = pg.failed_ns;
            }
            out.push_back(std::move(j));
        }
    }
    return out;
}

}  // namespace

const char* to_string(core::QpState s) noexcept {
    switch (s) {
        case core::QpState::reset: return "reset";
        case core::QpState::init: return "init";
        case core::QpState::rtr: return "rtr";
        case core::QpState::rts: return "rts";
        case core::QpState::err: return "err";
    }
    return "unknown";
}

nlohmann::json engine_json(const core::Engine& engine) { return engine_json(engine.stats(), engine.local_plane_mask()); }

nlohmann::json engine_json(const core::EngineStats& s, std::uint32_t local_plane_mask) {
    nlohmann::json wire_errors = nlohmann::json::object();
    for (std::size_t i = 1; i < s.rx_wire_errors.size(); ++i)
        wire_errors[std::string(wire::to_string(static_cast<wire::WireError>(i)))] = s.rx_wire_errors[i];
    nlohmann::json drops = nlohmann::json::object();
    for (std::size_t i = 0; i < s.rx_drops.size(); ++i)
        drops[core::to_string(static_cast<core::DropReason>(i))] = s.rx_drops[i];
    return {{"rx_frames", s.rx_frames},
            {"tx_frames", s.tx_frames},
            {"tx_ctrl_frames", s.tx_ctrl_frames},
            {"rx_wire_errors", std::move(wire_errors)},
            {"rx_drops", std::move(drops)},
            {"port_status_sent", s.port_status_sent},
            {"port_status_received", s.port_status_received},
            {"path_alarms_sent", s.path_alarms_sent},
            {"path_alarms_received", s.path_alarms_received},
            {"path_alarms_believed", s.path_alarms_believed},
            {"ep_responses_sent", s.ep_responses_sent},
            {"ep_responses_received", s.ep_responses_received},
            {"ep_requests_observed", s.ep_requests_observed},
            {"ctrl_queue_overflow", s.ctrl_queue_overflow},
            {"psp_seal_failures", s.psp_seal_failures},
            {"cm_frames_received", s.cm_frames_received},
            {"cm_frames_sent", s.cm_frames_sent},
            {"cm_unroutable", s.cm_unroutable},
            {"local_plane_mask", local_plane_mask}};
}

nlohmann::json cm_json(const core::ConnManager& cm) {
    const core::CmStats& s = cm.stats();
    static_assert(sizeof(core::CmStats) == 14 * sizeof(std::uint64_t), "CmStats changed: add the new counter here");
    return {{"live", cm.live()},
            {"timewait", cm.timewait()},
            {"rx_messages", s.rx_messages},
            {"tx_messages", s.tx_messages},
            {"retransmits", s.retransmits},
            {"cookies_sent", s.cookies_sent},
            {"cookies_bad", s.cookies_bad},
            {"requests", s.requests},
            {"established", s.established},
            {"rejects_sent", s.rejects_sent},
            {"rejects_received", s.rejects_received},
            {"replays", s.replays},
            {"duplicates", s.duplicates},
            {"stray", s.stray},
            {"timeouts", s.timeouts},
            {"key_mismatches", s.key_mismatches}};
}

nlohmann::json qp_json(const core::Qp& qp) {
    const core::QpStats& s = qp.stats;
    nlohmann::json stats = {
        {"data_pkts_sent", s.data_pkts_sent},       {"data_pkts_resent", s.data_pkts_resent},
        {"data_bytes_sent", s.data_bytes_sent},     {"pkts_sacked", s.pkts_sacked},
        {"sacks_received", s.sacks_received},       {"nacks_received", s.nacks_received},
        {"trims_nacked", s.trims_nacked},           {"ecn_echoes", s.ecn_echoes},
        {"losses_path_order", s.losses_path_order}, {"losses_timeout", s.losses_timeout},
        {"losses_send_order", s.losses_send_order}, {"losses_send_order_cross_plane", s.losses_send_order_cross_plane},
        {"ev_parked_with_plane", s.ev_parked_with_plane},
        {"ev_timeouts", s.ev_timeouts},             {"ev_retirements", s.ev_retirements},
        {"ev_restorations", s.ev_restorations},     {"probes_sent", s.probes_sent},
        {"probe_answers", s.probe_answers},         {"send_completions", s.send_completions},
        {"data_pkts_received", s.data_pkts_received}, {"data_bytes_received", s.data_bytes_received},
        {"duplicates", s.duplicates},               {"trims_received", s.trims_received},
        {"ecn_received", s.ecn_received},           {"sacks_sent", s.sacks_sent},
        {"nacks_sent", s.nacks_sent},               {"naks_sent", s.naks_sent},
        {"recv_completions", s.recv_completions},   {"imm_waiting_for_recv", s.imm_waiting_for_recv},
        {"send_msgs_received", s.send_msgs_received},   {"rnr_naks_sent", s.rnr_naks_sent},
        {"rnr_naks_received", s.rnr_naks_received},     {"rnr_waits", s.rnr_waits},
        {"reads_completed", s.reads_completed},         {"read_resp_pkts_placed", s.read_resp_pkts_placed},
        {"reads_answered", s.reads_answered},           {"read_source_lost", s.read_source_lost},
        {"always_skip_received", s.always_skip_received}, {"restores_received", s.restores_received},
        {"penalties_received", s.penalties_received}, {"transport_acks_received", s.transport_acks_received},
        {"pkts_acked_by_dreq", s.pkts_acked_by_dreq},
        {"transport_acks_sent", s.transport_acks_sent}, {"ev_probes_sent", s.ev_probes_sent},
        {"ev_probe_answers", s.ev_probe_answers},   {"last_ev_probe_rtt_ns", s.last_ev_probe_rtt_ns},
        {"psp_sealed", s.psp_sealed},               {"psp_opened", s.psp_opened},
        {"psp_tx_rotations", s.psp_tx_rotations},   {"psp_rx_rotations", s.psp_rx_rotations}};
    // Why each retirement happened (RetireCause names; `none` never counts).
    nlohmann::json& causes = stats["ev_retirements_by_cause"] = nlohmann::json::object();
    for (std::size_t c = 1; c < core::kRetireCauses; ++c)
        causes[core::to_string(static_cast<core::RetireCause>(c))] = s.ev_retirements_by_cause[c];
    nlohmann::json evs = nlohmann::json::array();
    for (std::size_t i = 0; i < qp.paths.size(); ++i) evs.push_back(ev_json(i, qp.paths.slot(i)));
    nlohmann::json bad = nlohmann::json::array();
    for (const core::BadEv& b : qp.paths.bad())
        bad.push_back({{"ev", b.ev}, {"plane", b.plane}, {"probe_successes", b.successes}});
    nlohmann::json j = {{"qpn", qp.qpn},
            {"conn_id", qp.conn_id},
            {"state", to_string(qp.state)},
            {"dest_qpn", qp.attr.dest_qp_num},
            {"snd_una", qp.snd_una},
            {"snd_nxt", qp.snd_nxt},
            {"sq_outstanding", qp.sq_count},
            {"rq_posted", qp.rq.size()},
            {"inflight_bytes", qp.inflight_bytes},
            {"peer_ooo_pkts", qp.peer_ooo_pkts},
            {"cwnd_bytes", qp.cc ? qp.cc->window_bytes() : 0},
            {"cc", qp.cc && qp.cc_info != nullptr ? std::string(qp.cc_info->name) : std::string("none")},
            {"rcv_cack", qp.rcv_cack},
            {"stats", std::move(stats)},
            {"planes", planes_json(qp)},
            {"paths",
             {{"policy", std::string(core::path_policy_name(qp.paths.policy()))},
              {"backups", qp.paths.backups()}, {"stale_starts", qp.paths.stale_starts()},
              {"reps_explored", qp.paths.reps_explored()}, {"reps_recycled", qp.paths.reps_recycled()},
              {"reps_freezes", qp.paths.reps_freezes()},
              {"retirements", qp.paths.retirements()},
              {"restorations", qp.paths.restorations()},
              {"parked", qp.paths.parked()},
              {"assumed_bad", std::move(bad)},
              {"groups", groups_json(qp)},
              {"evs", std::move(evs)}}}};
    if (qp.cc && qp.cc_info != nullptr) {
        // The algorithm's own state (credit: its cumulative byte counts), under its name.
        CcStateJson state;
        qp.cc->report(state);
        if (nlohmann::json o = state.take(); !o.empty()) j[std::string(qp.cc_info->name)] = std::move(o);
    }
    return j;
}

nlohmann::json driver_json(const driver::Driver& drv) { return driver_json(drv, drv.stats()); }

nlohmann::json driver_json(const driver::Driver& drv, const driver::DriverStats& s) {
    nlohmann::json links = nlohmann::json::array();
    for (std::uint32_t p = 0; p < drv.planes(); ++p) links.push_back(drv.link_up(p));
    std::vector<std::pair<std::string, std::uint64_t>> named;
    drv.counters(named);
    nlohmann::json counters = nlohmann::json::object();
    for (const auto& [name, value] : named) counters[name] = value;
    return {{"name", drv.name()},
            {"counters", std::move(counters)},
            {"planes", drv.planes()},
            {"icrc", driver::to_string(drv.icrc())},
            {"link_up", std::move(links)},
            {"rx_frames", s.rx_frames},
            {"tx_frames", s.tx_frames},
            {"rx_bytes", s.rx_bytes},
            {"tx_bytes", s.tx_bytes},
            {"tx_dropped_link_down", s.tx_dropped_link_down},
            {"tx_dropped_full", s.tx_dropped_full},
            {"rx_dropped_full", s.rx_dropped_full},
            {"tx_release_count", drv.tx_release_count()}};
}

nlohmann::json path_events_json(const PathEventCounts& c, const core::EngineStats& s) {
    nlohmann::json j = nlohmann::json::object();
    for (std::size_t k = 0; k < c.by_kind.size(); ++k)
        j[core::to_string(static_cast<core::PathEventKind>(k))] = c.by_kind[k];
    j["logged"] = c.logged;
    j["log_suppressed"] = c.suppressed;
    j["dropped"] = s.path_events_dropped;
    return j;
}

nlohmann::json planes_summary_json(const driver::Driver& drv, std::span<const core::Qp* const> qps) {
    std::vector<PlaneView> views(drv.planes());
    for (const core::Qp* qp : qps) add_planes(*qp, views);
    nlohmann::json out = nlohmann::json::array();
    for (std::uint32_t p = 0; p < views.size(); ++p) {
        const PlaneView& v = views[p];
        nlohmann::json j = plane_json(p, v);
        j["link_up"] = drv.link_up(p);
        j["evs_active"] = v.evs_active + v.evs_skipping;  // in use, skipped this rotation or not
        j["retirements"] = v.retirements;
        j["restorations"] = v.restorations;
        j["probes"] = v.probes;
        j["probe_answers"] = v.probe_answers;
        out.push_back(std::move(j));
    }
    return out;
}

nlohmann::json progress_json(const ProgressStats& s) {
    return {{"passes", s.passes},         {"rx_bursts", s.rx_bursts},   {"rx_frames", s.rx_frames},
            {"tx_bursts", s.tx_bursts},   {"tx_frames", s.tx_frames},   {"tx_partial", s.tx_partial},
            {"tx_kept_frames", s.tx_kept_frames}, {"timer_runs", s.timer_runs},
            {"link_events", s.link_events}, {"completions", s.completions},
            {"completions_held", s.completions_held}};
}

nlohmann::json exchange_json(const ExchangeStats& s) {
    return {{"rx_own", s.rx_own},
            {"rx_foreign", s.rx_foreign},
            {"handed_in", s.handed_in},
            {"endpoint_copies", s.endpoint_copies},
            {"dropped_ring_full", s.dropped_ring_full},
            {"dropped_too_large", s.dropped_too_large}};
}

void add(core::EngineStats& into, const core::EngineStats& s) noexcept {
    // A counter added to EngineStats must be summed here too.
    static_assert(sizeof(core::EngineStats) ==
                      sizeof(std::uint64_t) * (17 + static_cast<std::size_t>(wire::WireError::count_) +
                                               static_cast<std::size_t>(core::DropReason::count_)),
                  "EngineStats changed: sum the new counter in add()");
    into.rx_frames += s.rx_frames;
    into.tx_frames += s.tx_frames;
    into.tx_ctrl_frames += s.tx_ctrl_frames;
    for (std::size_t i = 0; i < s.rx_wire_errors.size(); ++i) into.rx_wire_errors[i] += s.rx_wire_errors[i];
    for (std::size_t i = 0; i < s.rx_drops.size(); ++i) into.rx_drops[i] += s.rx_drops[i];
    into.port_status_sent += s.port_status_sent;
    into.port_status_received += s.port_status_received;
    into.ep_responses_sent += s.ep_responses_sent;
    into.ep_responses_received += s.ep_responses_received;
    into.ep_requests_observed += s.ep_requests_observed;
    into.ctrl_queue_overflow += s.ctrl_queue_overflow;
    into.psp_seal_failures += s.psp_seal_failures;
    into.path_events_dropped += s.path_events_dropped;
    into.path_alarms_sent += s.path_alarms_sent;
    into.path_alarms_received += s.path_alarms_received;
    into.path_alarms_believed += s.path_alarms_believed;
    into.cm_frames_received += s.cm_frames_received;
    into.cm_frames_sent += s.cm_frames_sent;
    into.cm_unroutable += s.cm_unroutable;
}

void add(ProgressStats& into, const ProgressStats& s) noexcept {
    static_assert(sizeof(ProgressStats) == 11 * sizeof(std::uint64_t), "ProgressStats changed: sum the new counter");
    into.passes += s.passes;
    into.rx_bursts += s.rx_bursts;
    into.rx_frames += s.rx_frames;
    into.tx_bursts += s.tx_bursts;
    into.tx_frames += s.tx_frames;
    into.tx_partial += s.tx_partial;
    into.tx_kept_frames += s.tx_kept_frames;
    into.timer_runs += s.timer_runs;
    into.link_events += s.link_events;
    into.completions += s.completions;
    into.completions_held += s.completions_held;
}

void add(PathEventCounts& into, const PathEventCounts& s) noexcept {
    for (std::size_t k = 0; k < s.by_kind.size(); ++k) into.by_kind[k] += s.by_kind[k];
    into.logged += s.logged;
    into.suppressed += s.suppressed;
}

void add(driver::DriverStats& into, const driver::DriverStats& s) noexcept {
    into.rx_frames += s.rx_frames;
    into.tx_frames += s.tx_frames;
    into.rx_bytes += s.rx_bytes;
    into.tx_bytes += s.tx_bytes;
    into.tx_dropped_link_down += s.tx_dropped_link_down;
    into.tx_dropped_full += s.tx_dropped_full;
    into.rx_dropped_full += s.rx_dropped_full;
}

}  // namespace omrc::runtime
