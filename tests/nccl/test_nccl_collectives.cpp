// SPDX-License-Identifier: BSD-3-Clause
// Collectives built only from isend, irecv and test, ranks as threads of
// one process over the plugin's loopback device: a ring allreduce and an
// all-to-all, checked byte for byte.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "plugin_fixture.hpp"

using namespace omrc::nccl::test;

namespace {

struct RankResult {
    Status status;
    bool exact = false;
    std::string failure;
};

/// Runs `body(rank)` on `nranks` threads.
template <class Body>
std::vector<RankResult> run_ranks(int nranks, Body body) {
    std::vector<RankResult> results(static_cast<std::size_t>(nranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; ++r) threads.emplace_back([&, r] { results[r] = body(r); });
    for (auto& t : threads) t.join();
    return results;
}

}  // namespace

TEST_CASE("ring allreduce over 4 rank threads is exact for every size", "[nccl_coll]") {
    constexpr int kRanks = 4;
    MemoryExchange ex;
    // Counts: fewer floats than ranks (empty chunks: zero-byte messages),
    // a chunk that is not a multiple of anything, several slices per step.
    const std::vector<std::size_t> counts = {1, 3, 1000, 12345, 1u << 20};
    auto results = run_ranks(kRanks, [&](int rank) {
        RankResult res;
        auto net = open_net(rank % 2 == 0 ? kNewestVersion : 9);  // ranks may load different versions
        if (!net) {
            res.status = Status::error(ncclSystemError, "open_net");
            return res;
        }
        const auto deadline = seconds_from_now(50);
        RingComms comms;
        res.status = ring_connect(*net, 0, rank, kRanks, ex, "allreduce", &comms, deadline);
        res.exact = res.status.ok();
        for (std::size_t count : counts) {
            if (!res.status.ok()) break;
            std::vector<float> data(count), tmp(count / kRanks + 1);
            for (std::size_t i = 0; i < count; ++i) data[i] = allreduce_input(rank, i);
            Registered dm, tm;
            res.status =
                register_buffer(*net, comms.send_next, comms.recv_prev, data.data(), count * sizeof(float), &dm);
            if (res.status.ok())
                res.status =
                    register_buffer(*net, nullptr, comms.recv_prev, tmp.data(), tmp.size() * sizeof(float), &tm);
            SliceOptions o;
            o.slice_bytes = 256 << 10;
            if (res.status.ok())
                res.status =
                    ring_allreduce(*net, comms, data.data(), dm, tmp.data(), tm, count, rank, kRanks, o, deadline);
            deregister_buffer(*net, comms.send_next, comms.recv_prev, dm);
            deregister_buffer(*net, nullptr, comms.recv_prev, tm);
            for (std::size_t i = 0; i < count && res.status.ok(); ++i)
                if (data[i] != allreduce_expected(kRanks, i)) {
                    res.exact = false;
                    res.failure = "count " + std::to_string(count) + ": element " + std::to_string(i) + " is " +
                                  std::to_string(data[i]) + ", expected " +
                                  std::to_string(allreduce_expected(kRanks, i));
                    break;
                }
        }
        ring_close(*net, comms);
        return res;
    });
    for (int r = 0; r < kRanks; ++r) {
        INFO("rank " << r << ": " << describe(results[r].status) << " " << results[r].failure);
        CHECK(results[r].status.ok());
        CHECK(results[r].exact);
    }
}

TEST_CASE("all-to-all over 4 rank threads is exact", "[nccl_coll]") {
    constexpr int kRanks = 4;
    MemoryExchange ex;
    auto results = run_ranks(kRanks, [&](int rank) {
        RankResult res;
        auto net = open_net();
        if (!net) {
            res.status = Status::error(ncclSystemError, "open_net");
            return res;
        }
        const auto deadline = seconds_from_now(50);
        MeshComms mesh;
        res.status = mesh_connect(*net, 0, rank, kRanks, ex, "a2a", &mesh, deadline);
        res.exact = res.status.ok();
        for (std::size_t block : {std::size_t{0}, std::size_t{1}, std::size_t{4099}, std::size_t{256} << 10}) {
            if (!res.status.ok()) break;
            bool exact = false;
            res.status = all_to_all(*net, mesh, rank, kRanks, block, &exact, deadline);
            if (!exact) {
                res.exact = false;
                res.failure = "block " + std::to_string(block) + " differs";
            }
        }
        mesh_close(*net, mesh);
        return res;
    });
    for (int r = 0; r < kRanks; ++r) {
        INFO("rank " << r << ": " << describe(results[r].status) << " " << results[r].failure);
        CHECK(results[r].status.ok());
        CHECK(results[r].exact);
    }
}
