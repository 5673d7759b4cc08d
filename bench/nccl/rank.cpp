// SPDX-License-Identifier: BSD-3-Clause
// One rank of omrc-nccl-bench: connect the ring, then per size register the
// buffers, check one allreduce, time the others.
#include <algorithm>
#include <chrono>

#include "bench.hpp"

namespace omrc::nccl::bench {

using test::Clock;
using test::Registered;
using test::Status;

std::vector<std::size_t> sizes(const Options& o) {
    std::vector<std::size_t> out;
    for (std::size_t b = o.min_bytes; b <= o.max_bytes; b *= static_cast<std::size_t>(o.factor)) {
        out.push_back(b);
        if (o.factor <= 1) break;
    }
    return out;
}

namespace {

/// Every rank waits for all others: an allreduce of one float per rank.
Status barrier(test::Net& net, test::RingComms& ring, int rank, int nranks, Clock::time_point deadline) {
    float one[4] = {1, 0, 0, 0};
    float tmp[4] = {};
    Registered om, tm;
    Status st = test::register_buffer(net, ring.send_next, ring.recv_prev, one, sizeof(one), &om);
    if (st.ok()) st = test::register_buffer(net, nullptr, ring.recv_prev, tmp, sizeof(tmp), &tm);
    if (st.ok()) st = test::ring_allreduce(net, ring, one, om, tmp, tm, 1, rank, nranks, {}, deadline);
    test::deregister_buffer(net, ring.send_next, ring.recv_prev, om);
    test::deregister_buffer(net, nullptr, ring.recv_prev, tm);
    if (st.ok() && one[0] != static_cast<float>(nranks)) st = Status::error(ncclInternalError, "barrier sum");
    return st;
}

}  // namespace

Status run_rank(test::Net& net, int rank, const Options& o, test::Exchange& ex, std::vector<Row>* rows) {
    const int n = o.ranks;
    // Generous: the largest size on a slow machine takes a while.
    const auto deadline = Clock::now() + std::chrono::minutes(30);
    test::RingComms ring;
    Status st = test::ring_connect(net, 0, rank, n, ex, "bench", &ring, deadline);
    if (!st.ok()) return st;
    test::SliceOptions slices;
    slices.slice_bytes = o.slice_bytes;
    slices.window = o.window;
    for (std::size_t bytes : sizes(o)) {
        const std::size_t count = std::max<std::size_t>(1, bytes / sizeof(float));
        std::vector<float> data(count), tmp(count / static_cast<std::size_t>(n) + 1);
        for (std::size_t i = 0; i < count; ++i) data[i] = test::allreduce_input(rank, i);
        Registered dm, tm;
        st = test::register_buffer(net, ring.send_next, ring.recv_prev, data.data(), count * sizeof(float), &dm);
        if (st.ok())
            st = test::register_buffer(net, nullptr, ring.recv_prev, tmp.data(), tmp.size() * sizeof(float), &tm);
        auto allreduce = [&] {
            return test::ring_allreduce(net, ring, data.data(), dm, tmp.data(), tm, count, rank, n, slices, deadline);
        };
        Row row;
        row.bytes = count * sizeof(float);
        row.count = count;
        // The first allreduce is checked (the inputs then keep growing: later
        // sums are timed, not checked), then warm-up, then the timed ones.
        if (st.ok()) st = barrier(net, ring, rank, n, deadline);
        if (st.ok()) st = allreduce();
        for (std::size_t i = 0; i < count && st.ok(); ++i) row.wrong += data[i] != test::allreduce_expected(n, i);
        for (int w = 1; w < o.warmup && st.ok(); ++w) st = allreduce();
        // Every rank runs the same number: -n, or from the size alone (an
        // estimate at 1 GB/s of bus traffic) within the time budget.
        row.iters = o.iters;
        if (row.iters == 0) {
            const double est_s = std::max(20e-6, static_cast<double>(row.bytes) * 2.0 / 1e9);
            row.iters = std::clamp(static_cast<int>(o.time_budget_ms / 1000.0 / est_s), 3, 50);
        }
        if (st.ok()) st = barrier(net, ring, rank, n, deadline);
        const auto t0 = Clock::now();
        for (int it = 0; it < row.iters && st.ok(); ++it) st = allreduce();
        if (st.ok()) st = barrier(net, ring, rank, n, deadline);
        const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
        test::deregister_buffer(net, ring.send_next, ring.recv_prev, dm);
        test::deregister_buffer(net, nullptr, ring.recv_prev, tm);
        if (!st.ok()) break;
        row.time_us = secs * 1e6 / row.iters;
        row.algbw = static_cast<double>(row.bytes) / (secs / row.iters) / 1e9;
        row.busbw = row.algbw * 2.0 * (n - 1) / n;
        if (rank == 0) {
            print_row(row);
            rows->push_back(row);
        }
    }
    test::ring_close(net, ring);
    return st;
}

}  // namespace omrc::nccl::bench
