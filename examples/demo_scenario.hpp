// SPDX-License-Identifier: BSD-3-Clause
// The demo's transfer as a function: two OpenMRC devices on an in-process
// loopback fabric (one 100 Gb/s link per plane each way, 1 µs away, virtual
// time), sprayed RDMA WRITEs through the public verbs API, one plane
// blackholed behind the NIC (no link event) for one or more outages, a
// per-plane throughput timeline and a byte-for-byte check of the
// destination. loopback_demo prints it; tests/fault/test_plane_loss.cpp
// asserts on it, so the demo users run is the scenario the tests check.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "omrc/verbs.hpp"

namespace omrc::demo {

/// One blackhole of the dark plane, as fractions of the ideal transfer
/// time (all planes at line rate) from the start.
struct Outage {
    double dark_at = 0.3;   ///< the plane goes dark (0..1)
    double back_at = 0.6;   ///< the plane comes back (> dark_at)
};

struct Options {
    std::uint64_t bytes = 1ull << 30;  ///< rounded up to whole messages
    std::uint32_t planes = 8;          ///< 2..15, 100 Gb/s each
    std::uint32_t dark_plane = 3;      ///< clamped to planes − 1
    std::uint32_t msg_kib = 1024;      ///< WRITE size
    PathPolicy policy = PathPolicy::adaptive;
    std::uint64_t seed = 1;            ///< fabric, engines and data
    std::uint64_t bucket_ns = 500'000; ///< timeline resolution (virtual ns)
    double loss = 0;                   ///< random loss on every link, both ways
    double trim = 0;                   ///< share of data packets trimmed on every link
    std::vector<Outage> outages{Outage{}};
    std::string pcap_sender, pcap_receiver;  ///< capture files (empty: none)
};

/// One timeline bucket: data frames delivered per plane toward the
/// receiver over (end_ns − length_ns, end_ns], as Gb/s of 4 KiB frames.
struct Bucket {
    std::uint64_t end_ns = 0;     ///< from the start of the transfer
    std::uint64_t length_ns = 0;  ///< bucket_ns, less for the last one
    std::vector<double> gbps;     ///< per plane
};

struct Result {
    std::vector<Bucket> buckets;
    std::uint64_t bytes = 0;           ///< transferred (Options::bytes rounded up to whole messages)
    std::size_t messages = 0;
    std::size_t completed = 0;
    std::uint64_t elapsed_ns = 0;      ///< virtual time of the whole transfer
    double ideal_ns = 0;               ///< the transfer at line rate on every plane
    std::vector<std::pair<std::uint64_t, std::uint64_t>> dark_ns;  ///< each outage's [from, to) from the start
    std::uint64_t crc_source = 0, crc_destination = 0;             ///< CRC-64/ECMA
    bool byte_exact = false;           ///< every WRITE succeeded and the destination equals the source
    std::string error;                 ///< a failed setup call or a WR's error status (empty: none)
    std::string sender_stats_json;     ///< Device::stats_json() of the sender at the end
    /// Goodput: bytes over the whole transfer's virtual time, in Gb/s.
    [[nodiscard]] double gbps() const noexcept;
};

/// Runs the transfer; `on_bucket` (optional) sees each bucket as it closes.
Result run(const Options& o, const std::function<void(const Bucket&)>& on_bucket = {});

}  // namespace omrc::demo
