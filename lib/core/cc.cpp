// SPDX-License-Identifier: BSD-3-Clause
// make_cc: the one place that maps CcAlgorithm to an implementation.
#include "core/cc.hpp"

namespace omrc::core {

std::unique_ptr<CongestionControl> make_cc(const CcConfig& cfg, std::uint32_t planes, std::uint32_t mtu_bytes,
                                           std::uint64_t ack_hold_ns) {
    switch (cfg.algorithm) {
        case CcAlgorithm::fixed: return std::make_unique<FixedWindow>(cfg.fixed_window_bytes);
        case CcAlgorithm::dcqcn: return std::make_unique<Dcqcn>(cfg, planes, mtu_bytes, ack_hold_ns);
        case CcAlgorithm::hpcc: return std::make_unique<Hpcc>(cfg, planes, mtu_bytes, ack_hold_ns);
        case CcAlgorithm::credit: return std::make_unique<Credit>(cfg, planes, mtu_bytes, ack_hold_ns);
        case CcAlgorithm::nscc: break;
    }
    return std::make_unique<Nscc>(cfg, planes, mtu_bytes, ack_hold_ns);
}

}  // namespace omrc::core
