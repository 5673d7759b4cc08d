// SPDX-License-Identifier: BSD-3-Clause
// HPCC (lib/core/cc_hpcc.cpp; registered there as "hpcc").
#pragma once

#include <array>
#include <cstddef>

#include "core/cc.hpp"

namespace omrc::core {

/// HPCC (Li et al., SIGCOMM 2019): per SACK, the utilisation of every hop
/// from its INT record and the previous record of the same egress (queue
/// over BDP plus transmit rate over line rate), the largest one smoothed
/// over a base RTT; the window is the reference window scaled by η / U
/// when U ≥ η (or after max_stage additive rounds), else the reference plus
/// W_AI; the reference window is updated at most once per base RTT.
/// Without telemetry it holds its window; trims and losses leave it alone
/// (the next INT records show the queue that caused them).
class Hpcc final : public CongestionControl {
public:
    Hpcc(const CcConfig& cfg, std::uint32_t planes, std::uint32_t mtu_bytes, std::uint64_t ack_hold_ns = 0);
    void on_ack(const AckSample& s) override;
    void on_trim(TimeNs) override {}
    void on_loss(TimeNs) override {}
    [[nodiscard]] std::uint64_t window_bytes() const override { return static_cast<std::uint64_t>(w_); }
    void report(CcStateWriter& out) const override;

    [[nodiscard]] double utilisation() const noexcept { return u_; }
    [[nodiscard]] double reference_window_bytes() const noexcept { return wc_; }
    [[nodiscard]] std::uint32_t stage() const noexcept { return inc_stage_; }

private:
    /// The previous record of one egress, in a table direct mapped by a
    /// hash of its port id. A sprayed QP crosses many egresses (incast_32:
    /// 8 planes × (16 uplinks + 16 T1 downlinks) + 8 last hops); a colliding
    /// egress evicts the record, and the next sample of either is lost.
    /// 1024 slots keep collisions rare at that size (40 KB per QP).
    struct Prev {
        bool valid = false;
        wire::IntHop hop{};
    };
    static constexpr std::size_t kPrevSlots = 1024;
    [[nodiscard]] static std::size_t slot_of(std::uint32_t port_id) noexcept {
        return (port_id * 2654435761u) >> 22;  // Fibonacci hashing to 10 bits
    }

    HpccConfig p_;
    std::uint64_t base_rtt_ns_;   ///< T
    double base_rtt_s_;           ///< T, seconds
    double w_init_;               ///< line rate · (base_rtt + ack_hold), bytes: initial and largest window
    double w_min_;                ///< one MTU
    double wai_;                  ///< W_AI, bytes
    double w_;                    ///< current window, bytes, in [w_min, w_init]
    double wc_;                   ///< reference window, bytes, in [w_min, w_init]
    double u_ = 0;                ///< smoothed normalised in-flight bytes of the busiest hop
    std::uint32_t inc_stage_ = 0;
    bool updated_ever_ = false;
    TimeNs last_update_ns_ = 0;   ///< last reference-window update
    std::unique_ptr<std::array<Prev, kPrevSlots>> prev_;  ///< on the heap: the CC object stays small
};

}  // namespace omrc::core
