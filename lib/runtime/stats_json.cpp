// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/stats_json.hpp"

#include <nlohmann/json.hpp>

namespace omrc::runtime {

namespace {

const char* to_string(core::PathPolicy p) noexcept {
    switch (p) {
        case core::PathPolicy::ecmp: return "ecmp";
        case core::PathPolicy::spray: return "spray";
        case core::PathPolicy::adaptive: return "adaptive";
    }
    return "unknown";
}

nlohmann::json ev_json(std::size_t slot, const core::EvSlot& s) {
    const core::EvCounters& c = s.counters;
    return {{"slot", slot},       {"ev", s.ev},         {"plane", s.plane},
            {"state", core::to_string(s.state)},
            {"sent", c.sent},     {"acked", c.acked},   {"lost", c.lost},
            {"timeouts", c.timeouts}, {"ecn", c.ecn},   {"trims", c.trims},
            {"retirements", c.retirements}, {"skips", c.skips}, {"parked", s.parked}};
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

nlohmann::json engine_json(const core::Engine& engine) {
    const core::EngineStats& s = engine.stats();
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
            {"ep_responses_sent", s.ep_responses_sent},
            {"ep_responses_received", s.ep_responses_received},
            {"ctrl_queue_overflow", s.ctrl_queue_overflow},
            {"local_plane_mask", engine.local_plane_mask()}};
}

nlohmann::json qp_json(const core::Qp& qp) {
    const core::QpStats& s = qp.stats;
    nlohmann::json stats = {
        {"data_pkts_sent", s.data_pkts_sent},       {"data_pkts_resent", s.data_pkts_resent},
        {"data_bytes_sent", s.data_bytes_sent},     {"pkts_sacked", s.pkts_sacked},
        {"sacks_received", s.sacks_received},       {"nacks_received", s.nacks_received},
        {"trims_nacked", s.trims_nacked},           {"ecn_echoes", s.ecn_echoes},
        {"losses_path_order", s.losses_path_order}, {"losses_timeout", s.losses_timeout},
        {"ev_timeouts", s.ev_timeouts},             {"ev_retirements", s.ev_retirements},
        {"ev_restorations", s.ev_restorations},     {"probes_sent", s.probes_sent},
        {"probe_answers", s.probe_answers},         {"send_completions", s.send_completions},
        {"data_pkts_received", s.data_pkts_received}, {"data_bytes_received", s.data_bytes_received},
        {"duplicates", s.duplicates},               {"trims_received", s.trims_received},
        {"ecn_received", s.ecn_received},           {"sacks_sent", s.sacks_sent},
        {"nacks_sent", s.nacks_sent},               {"naks_sent", s.naks_sent},
        {"recv_completions", s.recv_completions},   {"imm_waiting_for_recv", s.imm_waiting_for_recv},
        {"always_skip_received", s.always_skip_received}, {"restores_received", s.restores_received},
        {"penalties_received", s.penalties_received}, {"transport_acks_received", s.transport_acks_received},
        {"transport_acks_sent", s.transport_acks_sent}, {"ev_probes_sent", s.ev_probes_sent},
        {"ev_probe_answers", s.ev_probe_answers},   {"last_ev_probe_rtt_ns", s.last_ev_probe_rtt_ns}};
    nlohmann::json evs = nlohmann::json::array();
    for (std::size_t i = 0; i < qp.paths.size(); ++i) evs.push_back(ev_json(i, qp.paths.slot(i)));
    nlohmann::json bad = nlohmann::json::array();
    for (const core::BadEv& b : qp.paths.bad())
        bad.push_back({{"ev", b.ev}, {"plane", b.plane}, {"probe_successes", b.successes}});
    return {{"qpn", qp.qpn},
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
            {"cc", qp.cc ? qp.cc->name() : "none"},
            {"rcv_cack", qp.rcv_cack},
            {"stats", std::move(stats)},
            {"paths",
             {{"policy", to_string(qp.paths.policy())},
              {"backups", qp.paths.backups()},
              {"retirements", qp.paths.retirements()},
              {"restorations", qp.paths.restorations()},
              {"parked", qp.paths.parked()},
              {"assumed_bad", std::move(bad)},
              {"evs", std::move(evs)}}}};
}

nlohmann::json driver_json(const driver::Driver& drv) {
    const driver::DriverStats s = drv.stats();
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

nlohmann::json progress_json(const ProgressStats& s) {
    return {{"passes", s.passes},         {"rx_bursts", s.rx_bursts},   {"rx_frames", s.rx_frames},
            {"tx_bursts", s.tx_bursts},   {"tx_frames", s.tx_frames},   {"tx_partial", s.tx_partial},
            {"tx_kept_frames", s.tx_kept_frames}, {"timer_runs", s.timer_runs},
            {"link_events", s.link_events}, {"completions", s.completions},
            {"completions_held", s.completions_held}};
}

}  // namespace omrc::runtime
