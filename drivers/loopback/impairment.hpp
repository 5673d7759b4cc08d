// SPDX-License-Identifier: BSD-3-Clause
// Impairments of one loopback link direction (src endpoint → dst endpoint on
// one plane). Each effect has its own selector (all frames, data frames only
// or control frames only; data = BTH opcode 0xC0..0xCB, frames that do not
// parse far enough to show an opcode count as control) and its own seeded
// random stream (rng.hpp). A default-constructed Impairment does nothing.
//
// Effects are applied to each frame in this order (a dropped frame stops):
//   1. blackhole (whole link)      → counted blackholed
//   2. blackhole_evs (EV in list)  → counted blackholed_ev
//   3. loss (independent random)   → counted lost_random
//   4. burst_loss (Gilbert–Elliott)→ counted lost_burst
//   5. corrupt (flip one bit)      → counted corrupted
//   6. trim (data frames)          → counted trimmed
//   then the link's output queue (FabricConfig::queue), the link delay plus
//   delay.extra_ns + jitter, and finally duplicate (a copy of the frame as it
//   leaves the link, delivered duplicate.extra_delay_ns after the original).
#pragma once

#include <cstdint>
#include <vector>

#include "wire/frame.hpp"

namespace omrc::loopback {

/// Which frames an effect applies to.
enum class Select : std::uint8_t {
    all = 0,
    data,     ///< BTH opcode 0xC0..0xCB (SEND_*, WRITE_*)
    control,  ///< every other frame (ACK, SACK, NACK, probe, endpoint messages, unparseable)
};

/// Independent (Bernoulli) loss.
struct RandomLoss {
    double rate = 0.0;  ///< probability in [0, 1] that a selected frame is dropped
    Select select = Select::all;
};

/// Gilbert–Elliott two-state loss. The chain steps once per selected frame
/// (transition first, then the loss draw in the new state), so with
/// loss_bad = 1 and loss_good = 0 loss bursts have mean length 1 / p_bad_to_good.
/// Enabled when p_good_to_bad > 0 or loss_good > 0. The chain starts in good.
struct BurstLoss {
    double p_good_to_bad = 0.0;  ///< per-frame probability of entering the bad state
    double p_bad_to_good = 1.0;  ///< per-frame probability of leaving the bad state
    double loss_good = 0.0;      ///< loss probability while good
    double loss_bad = 1.0;       ///< loss probability while bad
    Select select = Select::all;
    [[nodiscard]] bool enabled() const noexcept { return p_good_to_bad > 0.0 || loss_good > 0.0; }
};

/// Extra one-way delay on top of FabricConfig::link_delay_ns.
struct Delay {
    std::uint64_t extra_ns = 0;   ///< fixed extra delay, ns
    std::uint64_t jitter_ns = 0;  ///< uniform extra delay in [0, jitter_ns] ns per frame; reorders frames
    Select select = Select::all;
};

/// Duplication: a copy of the frame is delivered as well.
struct Duplicate {
    double rate = 0.0;                ///< probability in [0, 1] that a selected frame is duplicated
    std::uint64_t extra_delay_ns = 0; ///< the copy arrives this long after the original, ns ("late duplicate")
    Select select = Select::all;
};

/// Corruption: flips exactly one bit, chosen uniformly.
struct Corrupt {
    double rate = 0.0;  ///< probability in [0, 1] that a selected frame is corrupted
    /// false (default): the bit is one the ICRC protects (the IPv6 header
    /// before UDP through the ICRC, minus the ICRC's masked fields), so every
    /// corrupted frame fails parse_frame — a flip elsewhere would be caught by
    /// the Ethernet FCS on a real link and is the same as a loss. Frames that
    /// do not parse as far as BTH are corrupted anywhere.
    /// true: the bit is anywhere in the frame (Ethernet header included).
    bool anywhere = false;
    Select select = Select::all;
};

/// Trimming of data frames (control frames are never trimmed), as a switch
/// does under congestion: the frame is cut and the DSCP of its first IPv6
/// header rewritten; IPv6 and UDP length fields keep their original values.
struct Trim {
    double rate = 0.0;           ///< probability in [0, 1] that a data frame is trimmed
    /// Bytes kept. 0 = through BTH + METH; a value below that is raised to it,
    /// so a trimmed frame always parses (parse_frame: ok, trim != none).
    std::uint32_t size_bytes = 0;
    std::uint8_t dscp = wire::kDscpTrimmed;  ///< 6-bit DSCP written into the first IPv6 header
};

/// Everything that can happen to frames of one link direction.
/// The EVs through one T1 of a two-tier Clos: EV path bits (bits 27..16)
/// mod `t1_count` equal to `t1`, as routing::UsidTemplate picks the T1.
struct T1Select {
    std::uint32_t t1_count = 0;  ///< 0 = off
    std::uint32_t t1 = 0;
};

struct Impairment {
    bool blackhole = false;               ///< drop every frame
    std::vector<std::uint32_t> blackhole_evs;  ///< drop frames whose EV is listed (any order, duplicates allowed)
    T1Select blackhole_t1{};              ///< drop frames whose EV crosses this T1 (a lost switch)
    Select blackhole_select = Select::all;     ///< selector for both blackholes
    RandomLoss loss{};
    BurstLoss burst_loss{};
    Corrupt corrupt{};
    Trim trim{};
    Delay delay{};
    Duplicate duplicate{};
};

}  // namespace omrc::loopback
