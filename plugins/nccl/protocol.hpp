// SPDX-License-Identifier: BSD-3-Clause
// The data protocol between a send comm and its recv comm, one RC QP pair
// (docs/NCCL.md, "Protocol"):
//
//  1. irecv (receiver): a CTS record — per receive its address, size, rkey
//     and tag, the request's sequence number — goes by RDMA WRITE_WITH_IMM
//     (inline) into slot seq % 32 of the sender's CTS ring; the immediate is
//     the sequence number.
//  2. The sender takes the CTS from its receive completion — never by
//     polling the ring: OpenMRC places packets in any order, only the
//     completion says the record is whole — and copies it out.
//  3. isend (sender) matches the oldest CTS: a single receive takes any tag
//     and its data goes as one RDMA WRITE_WITH_IMM whose immediate is the
//     size (< 2^31); the receives of a multi-receive are matched by tag, each
//     send's data goes as an RDMA WRITE, and when all are matched a done
//     record (the sizes, the sequence number) goes by WRITE_WITH_IMM into
//     slot seq % 32 of the receiver's completion ring with immediate
//     2^31 | seq.
//  4. The receiver's receive completion for that WRITE_WITH_IMM means every
//     byte of the message (and of every earlier one) is placed: the request
//     is done with the sizes the immediate or the done record gives.
//  5. The sender's request is done when its (last) WRITE_WITH_IMM completes:
//     the receiver has acknowledged all of it.
//
// Both ends pre-post receives for the immediates and post a new one for each
// they consume. Everything read from a ring or an immediate is checked
// (magic, sequence, count, sizes against what was posted); a violation fails
// the comm with ncclRemoteError.
#pragma once

#include <cstdint>

#include "device_table.hpp"

namespace omrc::nccl {

/// Requests (CTS slots) in flight per comm: NCCL_NET_MAX_REQUESTS.
inline constexpr std::uint32_t kSlots = NCCL_NET_MAX_REQUESTS;

inline constexpr std::uint32_t kCtsMagic = 0x4f4d4354;   // "OMCT"
inline constexpr std::uint32_t kDoneMagic = 0x4f4d444e;  // "OMDN"
/// Immediate of a done record: this bit and the low 31 bits of the sequence.
inline constexpr std::uint32_t kImmRecord = 0x80000000u;

/// One receive of a CTS record.
struct CtsEntry {
    std::uint64_t addr;
    std::uint32_t rkey;
    std::uint32_t size;  ///< ≤ kMaxMessageBytes
    std::int32_t tag;
    std::uint32_t reserved;
};

struct CtsRecord {
    std::uint32_t magic;
    std::uint32_t seq;
    std::uint32_t n;  ///< 1..kMaxRecvs entries follow
    std::uint32_t reserved;
    CtsEntry entries[kMaxRecvs];
};

struct DoneRecord {
    std::uint32_t magic;
    std::uint32_t seq;
    std::uint32_t n;
    std::uint32_t reserved;
    std::uint32_t sizes[kMaxRecvs];
};

static_assert(sizeof(CtsEntry) == 24 && sizeof(CtsRecord) == 16 + 24 * kMaxRecvs, "CTS record layout");
static_assert(sizeof(DoneRecord) == 16 + 4 * kMaxRecvs, "done record layout");

/// Bytes of a record with n entries (what goes on the wire, inline).
constexpr std::uint32_t cts_bytes(std::uint32_t n) { return 16 + 24 * n; }
constexpr std::uint32_t done_bytes(std::uint32_t n) { return 16 + 4 * n; }

/// The rings: what each side registers for its peer to write into.
inline constexpr std::uint32_t kCtsRingBytes = sizeof(CtsRecord) * kSlots;
inline constexpr std::uint32_t kDoneRingBytes = sizeof(DoneRecord) * kSlots;

/// Receives each QP keeps posted for incoming immediates (≥ 2 × kSlots).
inline constexpr std::uint32_t kPostedRecvs = 2 * kSlots;

}  // namespace omrc::nccl
