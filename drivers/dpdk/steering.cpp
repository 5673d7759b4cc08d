// SPDX-License-Identifier: BSD-3-Clause
// Which queue of a port a received frame lands on, for a device with
// several workers (docs/DRIVERS.md, "Running on a NIC pair"):
//
//  1. rte_flow, where every port takes the rules: for each worker w > 0,
//     ETH / IPV6 / UDP dst 4791 / RAW (relative to UDP's end, offset 6: the
//     middle byte of BTH.DestQP, whose high bits are the QPN's shard) → QUEUE
//     w, and the same for UDP dst 1000 (a sealed frame: offset 6 after UDP is
//     the middle byte of the PSP SPI, whose low 24 bits are the QPN, so the
//     same byte and mask). Everything else (worker 0's frames, endpoint
//     messages: DestQP 2) stays on queue 0. Steering by_qpn, method "rte_flow".
//  2. Otherwise the PMD spreads (RSS on the IPv6/UDP headers where it offers
//     it, "rss"; memif delivers on the queue the peer sent from,
//     "memif_queue_pairs"; a PMD without RSS or rules keeps everything on
//     queue 0, "queue0") and the runtime hands each frame to its worker.
//     Steering spread.
//
// `steering=spread` skips 1 (to use software dispatch on a NIC that could
// steer, or to measure it).
#include <algorithm>
#include <cstring>

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>

#include "core/config.hpp"
#include "drivers/dpdk/dpdk_driver.hpp"
#include "log/log.hpp"
#include "wire/psp.hpp"
#include "wire/udp.hpp"

namespace omrc::dpdk {

namespace {

/// BTH.DestQP's middle byte (QPN bits 15..8), from the start of BTH; in a
/// sealed frame the PSP SPI's byte at the same place (QPN bits 15..8 too).
constexpr std::uint32_t kDestQpMidByte = 6;
static_assert(wire::spi_qpn(wire::psp_spi(1, 0x7F, 0xABCDEF)) == 0xABCDEF && kDestQpMidByte == 4 + 2,
              "the SPI (PSP header bytes 4..7, big-endian) ends with the QPN");

}  // namespace

int DpdkPorts::try_flows(Port& p) {
    if (opt_.queues <= 1) return 0;
    const std::uint32_t bits = core::shard_bits_for(opt_.queues);
    const std::uint8_t mask = static_cast<std::uint8_t>(((1u << bits) - 1) << (core::kQpnShardShift - 8));
    for (std::uint32_t w = 1; w < opt_.queues; ++w) {
        for (const std::uint16_t udp_port : {wire::kRoceUdpPort, wire::kPspUdpPort}) {
            rte_flow_attr attr{};
            attr.ingress = 1;
            rte_flow_item_udp udp_spec{};
            rte_flow_item_udp udp_mask{};
            udp_spec.hdr.dst_port = rte_cpu_to_be_16(udp_port);
            udp_mask.hdr.dst_port = 0xFFFF;
            const std::uint8_t value = static_cast<std::uint8_t>(w << (core::kQpnShardShift - 8));
            rte_flow_item_raw raw_spec{};
            rte_flow_item_raw raw_mask{};
            raw_spec.relative = 1;
            raw_spec.offset = static_cast<std::int32_t>(kDestQpMidByte);
            raw_spec.length = 1;
            raw_spec.pattern = &value;
            std::memset(&raw_mask, 0xFF, sizeof raw_mask);
            raw_mask.pattern = &mask;
            raw_mask.length = 1;
            const rte_flow_item pattern[] = {
                {RTE_FLOW_ITEM_TYPE_ETH, nullptr, nullptr, nullptr},
                {RTE_FLOW_ITEM_TYPE_IPV6, nullptr, nullptr, nullptr},
                {RTE_FLOW_ITEM_TYPE_UDP, &udp_spec, nullptr, &udp_mask},
                {RTE_FLOW_ITEM_TYPE_RAW, &raw_spec, nullptr, &raw_mask},
                {RTE_FLOW_ITEM_TYPE_END, nullptr, nullptr, nullptr},
            };
            rte_flow_action_queue queue{static_cast<std::uint16_t>(w)};
            const rte_flow_action actions[] = {
                {RTE_FLOW_ACTION_TYPE_QUEUE, &queue},
                {RTE_FLOW_ACTION_TYPE_END, nullptr},
            };
            rte_flow_error err{};
            if (rte_flow_validate(p.id, &attr, pattern, actions, &err) != 0) {
                log::logger().info("dpdk: port {} ({}) takes no rule steering UDP {} by QPN ({}): frames are spread",
                                   p.id, p.pmd, udp_port, err.message != nullptr ? err.message : rte_strerror(rte_errno));
                remove_flows(p);
                return ENOTSUP;
            }
            rte_flow* f = rte_flow_create(p.id, &attr, pattern, actions, &err);
            if (f == nullptr) {
                log::logger().info("dpdk: port {} ({}): a rule steering UDP {} by QPN failed ({}): frames are spread",
                                   p.id, p.pmd, udp_port, err.message != nullptr ? err.message : rte_strerror(rte_errno));
                remove_flows(p);
                return ENOTSUP;
            }
            p.flows.push_back(f);
        }
    }
    return 0;
}

void DpdkPorts::remove_flows(Port& p) {
    for (rte_flow* f : p.flows) {
        rte_flow_error err{};
        (void)rte_flow_destroy(p.id, f, &err);
    }
    p.flows.clear();
}

int DpdkPorts::set_up_steering(std::string& error) {
    if (opt_.queues <= 1) {
        steering_ = {};
        return 0;
    }
    const bool memif = std::all_of(ports_.begin(), ports_.end(), [](const auto& p) { return p->pmd == "net_memif"; });
    if (opt_.steer_by_qpn && !memif) {
        bool all = true;
        for (auto& p : ports_) all = all && try_flows(*p) == 0;
        if (all) {
            steering_ = {driver::Steering::by_qpn, "rte_flow"};
            return 0;
        }
        for (auto& p : ports_) remove_flows(*p);
    }
    if (memif) {
        steering_ = {driver::Steering::spread, "memif_queue_pairs"};
        return 0;
    }
    // RSS where every port offers it: restart with it.
    bool rss = true;
    for (const auto& p : ports_) {
        rte_eth_dev_info info{};
        rss = rss && rte_eth_dev_info_get(p->id, &info) == 0 && info.flow_type_rss_offloads != 0;
    }
    if (rss) {
        for (auto& p : ports_) {
            (void)rte_eth_dev_stop(p->id);
            if (const int e = configure_port(*p, true, error); e != 0) return e;
        }
        rss_ = true;
        steering_ = {driver::Steering::spread, "rss"};
        return 0;
    }
    // net_tap spreads by the kernel's flow hash over its queues; others keep
    // everything on queue 0 and worker 0 hands the rest over.
    const bool tap = std::all_of(ports_.begin(), ports_.end(), [](const auto& p) { return p->pmd == "net_tap"; });
    steering_ = {driver::Steering::spread, tap ? "kernel_hash" : "pmd"};
    return 0;
}

}  // namespace omrc::dpdk
