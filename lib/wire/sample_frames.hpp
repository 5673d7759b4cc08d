// SPDX-License-Identifier: BSD-3-Clause
// Reference frames: one of every opcode in both frame modes (plus one SRv6
// frame with an SRH, and a credit-mode data packet and SACK). Used by the wire_samples example (pcap for Wireshark),
// by tests as a corpus, and as fuzzing seeds. Values are deterministic and
// documented here so decoders can be checked against them:
//   frame i: BTH.DestQP = 0x000100 + i, BTH.PSN = 0x000010 + i,
//            EV = make_ev(plane = i % 8, path = i, salt = 0x0A00 + i).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wire/frame.hpp"

namespace omrc::wire {

struct SampleFrame {
    std::string name;                    ///< e.g. "srv6/WRITE_ONLY"
    FrameSpec spec;
    std::vector<std::uint8_t> payload;   ///< data opcodes only
    std::vector<std::uint8_t> bytes;     ///< the complete frame, ICRC included
};

std::vector<SampleFrame> make_sample_frames();

}  // namespace omrc::wire
