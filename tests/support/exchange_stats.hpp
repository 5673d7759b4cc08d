// SPDX-License-Identifier: BSD-3-Clause
// The workers' frame-exchange counters of a device, summed over its workers
// (stats_json's device.per_worker[].exchange), read once the rings are seen
// empty.
//
// Worker threads keep running while a test reads the counters: a frame one
// worker handed over and its owner has not drained yet counts in rx_foreign
// and not yet in handed_in. settled_exchange() re-reads until every frame
// handed over is seen handed in (or the wait runs out, and the caller's check
// of handed == foreign + copies fails with the last figures).
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#include <nlohmann/json.hpp>

#include "omrc/verbs.hpp"

namespace omrc::test {

struct ExchangeSums {
    std::uint64_t foreign = 0;  ///< frames the workers' queues delivered for another worker
    std::uint64_t copies = 0;   ///< endpoint-request copies sent to observing workers
    std::uint64_t handed = 0;   ///< frames the workers took from the rings
    std::uint64_t own = 0;      ///< frames delivered on the owning worker's queue
    std::uint64_t no_qp = 0;    ///< engine drops for an unknown QP, all workers
    nlohmann::json stats;       ///< the stats_json these sums came from
};

inline ExchangeSums exchange_sums(const Device& d) {
    ExchangeSums h;
    h.stats = nlohmann::json::parse(d.stats_json());
    for (const auto& w : h.stats["device"]["per_worker"]) {
        h.foreign += w["exchange"]["rx_foreign"].get<std::uint64_t>();
        h.copies += w["exchange"]["endpoint_copies"].get<std::uint64_t>();
        h.handed += w["exchange"]["handed_in"].get<std::uint64_t>();
        h.own += w["exchange"]["rx_own"].get<std::uint64_t>();
        h.no_qp += w["engine"]["rx_drops"]["no_qp"].get<std::uint64_t>();
    }
    return h;
}

/// exchange_sums() once handed == foreign + copies, re-read every 10 ms for at most `wait`.
inline ExchangeSums settled_exchange(const Device& d, std::chrono::milliseconds wait = std::chrono::milliseconds(2000)) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
        ExchangeSums h = exchange_sums(d);
        if (h.handed == h.foreign + h.copies || std::chrono::steady_clock::now() >= deadline) return h;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

}  // namespace omrc::test
