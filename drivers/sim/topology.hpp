// SPDX-License-Identifier: BSD-3-Clause
// Fabric builders: MRC's multi-plane two-tier Clos (default: 131,072 hosts ×
// 8 planes of 100G, 512 T0 with 256 down / 256 up, 256 T1 per plane), a
// single-plane two-tier leaf-spine, and a three-tier k-ary fat-tree. Host h
// is NIC h; its port p attaches to plane p.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/config.hpp"
#include "drivers/sim/network.hpp"
#include "routing/fabric.hpp"

namespace omrc::sim {

enum class TopologyKind : std::uint8_t {
    clos,        ///< multi-plane two-tier Clos (MRC)
    leaf_spine,  ///< the same with one plane
    fat_tree,    ///< three tiers, k pods, ECMP only
};
[[nodiscard]] const char* to_string(TopologyKind k) noexcept;

struct TopologyConfig {
    TopologyKind kind = TopologyKind::clos;
    std::uint32_t planes = 8;             ///< clos only (leaf_spine and fat_tree have one)
    std::uint32_t t0 = 512;               ///< T0 (leaf) switches per plane
    std::uint32_t t1 = 256;               ///< T1 (spine) switches per plane; each T0 has one uplink to each
    std::uint32_t hosts_per_t0 = 256;
    std::uint32_t k = 16;                 ///< fat_tree arity (even): k³/4 hosts
    std::uint64_t host_link_bps = 100'000'000'000;    ///< NIC port ↔ T0, per plane
    std::uint64_t fabric_link_bps = 100'000'000'000;  ///< between switches
    std::uint64_t host_link_delay_ns = 100;
    std::uint64_t fabric_link_delay_ns = 500;
    QueueConfig host_down{};              ///< switch → NIC (last hop: ECN never marks)
    QueueConfig uplink{.ecn_threshold_bytes = 50 * 1024};    ///< T0 → T1, edge → agg, agg → core
    QueueConfig downlink{.ecn_threshold_bytes = 50 * 1024};  ///< T1 → T0, core → agg, agg → edge

    [[nodiscard]] std::uint32_t plane_count() const noexcept { return kind == TopologyKind::clos ? planes : 1; }
    [[nodiscard]] std::uint32_t hosts() const noexcept {
        return kind == TopologyKind::fat_tree ? k * k * k / 4 : t0 * hosts_per_t0;
    }
    /// Empty when buildable; otherwise what is wrong.
    [[nodiscard]] std::string validate() const;
    /// The lib/routing description SRv6 engines need (clos and leaf_spine).
    [[nodiscard]] routing::FabricDesc fabric_desc() const noexcept;
};

/// Indices into the Simulator for a built fabric.
struct Topology {
    TopologyConfig cfg;
    std::uint32_t hosts = 0;
    std::uint32_t planes = 1;
    std::uint32_t first_switch = 0;
    std::vector<std::uint32_t> uplink_ports;  ///< global port index of every lowest-tier uplink (T0→T1, edge→agg)

    /// Switch ids (clos / leaf-spine).
    [[nodiscard]] std::uint32_t t0_switch(std::uint32_t plane, std::uint32_t i) const noexcept {
        return first_switch + plane * (cfg.t0 + cfg.t1) + i;
    }
    [[nodiscard]] std::uint32_t t1_switch(std::uint32_t plane, std::uint32_t j) const noexcept {
        return first_switch + plane * (cfg.t0 + cfg.t1) + cfg.t0 + j;
    }
    /// Local port of T0 i's uplink to T1 j.
    [[nodiscard]] std::uint32_t t0_uplink_local(std::uint32_t j) const noexcept { return cfg.hosts_per_t0 + j; }
    /// Links a frame crosses from src to dst (hosts).
    [[nodiscard]] std::uint32_t links_between(std::uint32_t src, std::uint32_t dst) const noexcept;
};

/// Inner IPv6 address of host h: fd00:6f6d::/96 + h (ECMP switches read h back).
[[nodiscard]] wire::Ipv6Addr host_addr(std::uint32_t host) noexcept;
[[nodiscard]] wire::MacAddr host_mac(std::uint32_t host, std::uint32_t plane) noexcept;

/// Builds the fabric into `sim` (NICs first: NIC id = host). `engine_config`
/// gives each host's engine configuration, `memory` its placement target.
Topology build_topology(Simulator& sim, const TopologyConfig& cfg,
                        const std::function<core::EngineConfig(std::uint32_t host)>& engine_config,
                        const std::function<core::PlacementTarget*(std::uint32_t host)>& memory);

}  // namespace omrc::sim
