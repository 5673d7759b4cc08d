// SPDX-License-Identifier: BSD-3-Clause
#include "drivers/sim/topology.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "wire/bytes.hpp"

namespace omrc::sim {

const char* to_string(TopologyKind k) noexcept {
    switch (k) {
        case TopologyKind::clos: return "clos";
        case TopologyKind::leaf_spine: return "leaf_spine";
        case TopologyKind::fat_tree: return "fat_tree";
    }
    return "unknown";
}

std::string TopologyConfig::validate() const {
    if (kind == TopologyKind::fat_tree) {
        if (k < 2 || k % 2 != 0 || k > 64) return fmt::format("fat_tree k must be even and 2..64, got {}", k);
    } else {
        const std::string e = fabric_desc().validate();
        if (!e.empty()) return e;
        if (hosts_per_t0 + t1 > 65535 || t0 > 65535) return "too many ports on a switch";
    }
    if (host_link_bps < 1'000'000'000 || fabric_link_bps < 1'000'000'000) return "link rates must be ≥ 1 Gb/s";
    return {};
}

routing::FabricDesc TopologyConfig::fabric_desc() const noexcept {
    routing::FabricDesc f;
    f.planes = plane_count();
    f.t0_per_plane = t0;
    f.t1_per_plane = t1;
    f.hosts_per_t0 = hosts_per_t0;
    return f;
}

std::uint32_t Topology::links_between(std::uint32_t src, std::uint32_t dst) const noexcept {
    if (cfg.kind == TopologyKind::fat_tree) {
        const std::uint32_t half = cfg.k / 2;
        if (src / half == dst / half) return 2;
        if (src / (half * half) == dst / (half * half)) return 4;
        return 6;
    }
    return src / cfg.hosts_per_t0 == dst / cfg.hosts_per_t0 ? 2 : 4;
}

wire::Ipv6Addr host_addr(std::uint32_t host) noexcept {
    wire::Ipv6Addr a{0xfd, 0x00, 0x6f, 0x6d};
    wire::store_be32(a.data() + 12, host);
    return a;
}

wire::MacAddr host_mac(std::uint32_t host, std::uint32_t plane) noexcept {
    return {0x02, static_cast<std::uint8_t>(plane), static_cast<std::uint8_t>(host >> 24),
            static_cast<std::uint8_t>(host >> 16), static_cast<std::uint8_t>(host >> 8), static_cast<std::uint8_t>(host)};
}

Topology build_topology(Simulator& sim, const TopologyConfig& cfg,
                        const std::function<core::EngineConfig(std::uint32_t host)>& engine_config,
                        const std::function<core::PlacementTarget*(std::uint32_t host)>& memory) {
    const std::string err = cfg.validate();
    if (!err.empty()) throw std::invalid_argument("topology: " + err);
    Topology t;
    t.cfg = cfg;
    t.hosts = cfg.hosts();
    t.planes = cfg.plane_count();
    if (sim.config().planes != t.planes) throw std::invalid_argument("topology: SimConfig::planes differs from the topology's");

    const std::uint16_t host_link = sim.add_link_config({cfg.host_link_bps, cfg.host_link_delay_ns * kPsPerNs});
    const std::uint16_t fabric_link = sim.add_link_config({cfg.fabric_link_bps, cfg.fabric_link_delay_ns * kPsPerNs});
    QueueConfig nic_q;  // the NIC's own port queue holds only what it pulled (a few frames)
    nic_q.limit_bytes = nic_q.priority_limit_bytes = UINT64_MAX;
    nic_q.trim = false;
    (void)sim.add_queue_config(nic_q);
    const std::uint8_t q_down = sim.add_queue_config(cfg.host_down);
    const std::uint8_t q_up = sim.add_queue_config(cfg.uplink);
    const std::uint8_t q_dn = sim.add_queue_config(cfg.downlink);

    std::size_t switches = 0, ports = static_cast<std::size_t>(t.hosts) * t.planes;
    if (cfg.kind == TopologyKind::fat_tree) {
        const std::size_t k = cfg.k;
        switches = k * k + k * k / 4;
        ports += switches * k;
    } else {
        switches = static_cast<std::size_t>(t.planes) * (cfg.t0 + cfg.t1);
        ports += static_cast<std::size_t>(t.planes) * (cfg.t0 * (cfg.hosts_per_t0 + cfg.t1) + cfg.t1 * cfg.t0);
    }
    sim.reserve(t.hosts, switches, ports);
    for (std::uint32_t h = 0; h < t.hosts; ++h) (void)sim.add_nic(h, engine_config(h), memory(h));
    t.first_switch = static_cast<std::uint32_t>(sim.switch_count());

    RoutingDims d;
    if (cfg.kind == TopologyKind::fat_tree) {
        const std::uint32_t k = cfg.k, half = k / 2;
        d.k = k;
        // Per pod: half edges then half aggs; then the (k/2)² cores.
        std::vector<std::uint32_t> edge(k * half), agg(k * half), core_sw(half * half);
        for (std::uint32_t pod = 0; pod < k; ++pod) {
            for (std::uint32_t e = 0; e < half; ++e) {
                edge[pod * half + e] = sim.add_switch(Tier::edge, 0, e, pod, 0, k, q_up);
                // edge ports [0, half) face hosts: their queue is the last-hop one.
            }
            for (std::uint32_t a = 0; a < half; ++a) agg[pod * half + a] = sim.add_switch(Tier::agg, 0, a, pod, 0, k, q_up);
        }
        for (std::uint32_t c = 0; c < half * half; ++c) core_sw[c] = sim.add_switch(Tier::core, 0, c, 0, 0, k, q_dn);
        for (std::uint32_t h = 0; h < t.hosts; ++h) {
            const std::uint32_t sw = edge[h / half];
            sim.connect(sim.nic_port(h, 0), sim.switch_port(sw, h % half), host_link);
            sim.set_port_queue(sim.switch_port(sw, h % half), q_down);
        }
        for (std::uint32_t i = 0; i < k * half; ++i)
            for (std::uint32_t e = 0; e < half; ++e) sim.set_port_queue(sim.switch_port(agg[i], e), q_dn);
        for (std::uint32_t pod = 0; pod < k; ++pod)
            for (std::uint32_t e = 0; e < half; ++e)
                for (std::uint32_t a = 0; a < half; ++a) {
                    const std::uint32_t up = sim.switch_port(edge[pod * half + e], half + a);
                    sim.connect(up, sim.switch_port(agg[pod * half + a], e), fabric_link);
                    t.uplink_ports.push_back(up);
                }
        for (std::uint32_t pod = 0; pod < k; ++pod)
            for (std::uint32_t a = 0; a < half; ++a)
                for (std::uint32_t j = 0; j < half; ++j)
                    sim.connect(sim.switch_port(agg[pod * half + a], half + j), sim.switch_port(core_sw[a * half + j], pod),
                                fabric_link);
    } else {
        d.hosts_per_t0 = cfg.hosts_per_t0;
        d.t0 = cfg.t0;
        d.t1 = cfg.t1;
        d.first_switch = t.first_switch;
        for (std::uint32_t p = 0; p < t.planes; ++p) {
            for (std::uint32_t i = 0; i < cfg.t0; ++i)
                (void)sim.add_switch(Tier::t0, static_cast<std::uint8_t>(p), i, 0,
                                     routing::make_usid(p, routing::UsidRole::t0, i), cfg.hosts_per_t0 + cfg.t1, q_up);
            for (std::uint32_t j = 0; j < cfg.t1; ++j)
                (void)sim.add_switch(Tier::t1, static_cast<std::uint8_t>(p), j, 0,
                                     routing::make_usid(p, routing::UsidRole::t1, j), cfg.t0, q_dn);
        }
        for (std::uint32_t p = 0; p < t.planes; ++p) {
            for (std::uint32_t h = 0; h < t.hosts; ++h) {
                const std::uint32_t sw = t.t0_switch(p, h / cfg.hosts_per_t0);
                sim.connect(sim.nic_port(h, p), sim.switch_port(sw, h % cfg.hosts_per_t0), host_link);
                sim.set_port_queue(sim.switch_port(sw, h % cfg.hosts_per_t0), q_down);
            }
            for (std::uint32_t i = 0; i < cfg.t0; ++i)
                for (std::uint32_t j = 0; j < cfg.t1; ++j) {
                    const std::uint32_t up = sim.switch_port(t.t0_switch(p, i), t.t0_uplink_local(j));
                    sim.connect(up, sim.switch_port(t.t1_switch(p, j), i), fabric_link);
                    t.uplink_ports.push_back(up);
                }
        }
    }
    d.usid_block = cfg.fabric_desc().usid_block;
    sim.set_routing_dims(d);
    return t;
}

}  // namespace omrc::sim
