// SPDX-License-Identifier: BSD-3-Clause
// One rank of a multi-process job, as NCCL's proxy would drive the plugin:
// dlopen libnccl-net-omrc.so, init, handles through files, collectives
// built from isend/irecv/test. Started by the [nccl_udp] tests, one process
// per rank, each with its own udp device (OMRC_NCCL_DRIVER=udp).
//
//   nccl_rank PLUGIN_SO DIR RANK RANKS SCENARIO [ABI_VERSION]
//
// Scenarios (the exit status says how it went; the reason goes to stderr):
//   collectives  ring allreduces and all-to-alls of several sizes, checked
//                byte for byte                        → 0 when all exact
//   victim       connects the ring, takes part in one allreduce, writes
//                DIR/victimRANK.ready and sleeps until killed
//   survivor     connects the ring, one allreduce, writes
//                DIR/survivorRANK.ready, then allreduces until the plugin
//                reports an error (the victim was killed)
//                                                     → 0 on that error,
//                                                       3 when none came
//   init         init, then one line per device with its v12 properties
//                                                     → 0, or 2 when init fails
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "harness/collectives.hpp"
#include "harness/plugin_loader.hpp"

using namespace omrc::nccl::test;

namespace {

int fail(int rank, const std::string& what) {
    std::fprintf(stderr, "rank %d: %s\n", rank, what.c_str());
    return 1;
}

/// One allreduce of `count` floats, checked. Registered for this call only.
Status allreduce_checked(Net& net, RingComms& comms, int rank, int nranks, std::size_t count, bool* exact,
                         Clock::time_point deadline) {
    std::vector<float> data(count), tmp(count / static_cast<std::size_t>(nranks) + 1);
    for (std::size_t i = 0; i < count; ++i) data[i] = allreduce_input(rank, i);
    Registered dm, tm;
    Status st = register_buffer(net, comms.send_next, comms.recv_prev, data.data(), count * sizeof(float), &dm);
    if (st.ok()) st = register_buffer(net, nullptr, comms.recv_prev, tmp.data(), tmp.size() * sizeof(float), &tm);
    SliceOptions o;
    o.slice_bytes = 512 << 10;
    if (st.ok()) st = ring_allreduce(net, comms, data.data(), dm, tmp.data(), tm, count, rank, nranks, o, deadline);
    deregister_buffer(net, comms.send_next, comms.recv_prev, dm);
    deregister_buffer(net, nullptr, comms.recv_prev, tm);
    *exact = true;
    for (std::size_t i = 0; i < count && st.ok(); ++i)
        if (data[i] != allreduce_expected(nranks, i)) {
            *exact = false;
            break;
        }
    return st;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 6) {
        std::fprintf(stderr, "usage: %s PLUGIN_SO DIR RANK RANKS collectives|victim|survivor [ABI_VERSION]\n", argv[0]);
        return 64;
    }
    const std::string dir = argv[2];
    const int rank = std::atoi(argv[3]);
    const int nranks = std::atoi(argv[4]);
    const std::string scenario = argv[5];
    const int version = argc > 6 ? std::atoi(argv[6]) : kNewestVersion;
    Plugin plugin(argv[1]);
    if (!plugin.ok()) return fail(rank, "dlopen: " + plugin.error());
    auto net = plugin.net(version);
    if (!net) return fail(rank, "no ncclNetPlugin_v" + std::to_string(version));
    if (scenario == "init") {
        if (const ncclResult_t rc = net->init(); rc != ncclSuccess) {
            std::printf("init: error %d\n", static_cast<int>(rc));
            return 2;
        }
        auto* v12 = static_cast<ncclNet_v12_t*>(plugin.symbol(12));
        int ndev = 0;
        v12->devices(&ndev);
        std::printf("devices %d\n", ndev);
        for (int d = 0; d < ndev; ++d) {
            ncclNetProperties_v12_t p{};
            if (v12->getProperties(d, &p) != ncclSuccess) return fail(rank, "getProperties");
            std::printf("device %d name=%s speed=%d railId=%d planeId=%d\n", d, p.name, p.speed, p.railId, p.planeId);
        }
        return 0;
    }
    if (net->init() != ncclSuccess) return fail(rank, "init failed");
    FileExchange ex(dir);
    const auto deadline = Clock::now() + std::chrono::seconds(45);
    RingComms ring;
    // Whichever way main returns, the comms are closed first (as NCCL closes
    // them when a communicator is destroyed, failed or not).
    struct Closer {
        Net& net;
        RingComms& ring;
        ~Closer() { ring_close(net, ring); }
    } closer{*net, ring};
    Status st = ring_connect(*net, 0, rank, nranks, ex, "job", &ring, deadline);
    if (!st.ok()) return fail(rank, "ring: " + describe(st));
    bool exact = false;

    if (scenario == "collectives") {
        for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{300'000}, std::size_t{2} << 20}) {
            st = allreduce_checked(*net, ring, rank, nranks, count, &exact, deadline);
            if (!st.ok()) return fail(rank, "allreduce of " + std::to_string(count) + " floats: " + describe(st));
            if (!exact) return fail(rank, "allreduce of " + std::to_string(count) + " floats: wrong sums");
        }
        MeshComms mesh;
        st = mesh_connect(*net, 0, rank, nranks, ex, "job", &mesh, deadline);
        if (!st.ok()) return fail(rank, "mesh: " + describe(st));
        for (std::size_t block : {std::size_t{0}, std::size_t{4099}, std::size_t{128} << 10}) {
            st = all_to_all(*net, mesh, rank, nranks, block, &exact, deadline);
            if (!st.ok()) return fail(rank, "all-to-all of " + std::to_string(block) + " bytes: " + describe(st));
            if (!exact) return fail(rank, "all-to-all of " + std::to_string(block) + " bytes: wrong bytes");
        }
        mesh_close(*net, mesh);
        ring_close(*net, ring);
        net->finalize();
        std::printf("rank %d: allreduces and all-to-alls exact\n", rank);
        return 0;
    }

    st = allreduce_checked(*net, ring, rank, nranks, 4096, &exact, deadline);
    if (!st.ok() || !exact) return fail(rank, "first allreduce: " + describe(st));
    // Past the first allreduce: the test kills the victim once every rank says so.
    std::ofstream(dir + "/" + scenario + std::to_string(rank) + ".ready") << rank << "\n";
    if (scenario == "victim") {
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (scenario == "survivor") {
        while (Clock::now() < deadline) {
            st = allreduce_checked(*net, ring, rank, nranks, 1u << 20, &exact, deadline);
            if (!st.ok()) {
                if (st.rc != ncclRemoteError && st.rc != ncclSystemError)
                    return fail(rank, "unexpected " + describe(st));
                std::printf("rank %d: the dead peer surfaced as %s\n", rank, describe(st).c_str());
                return 0;
            }
        }
        return fail(rank, "no error although a rank died") + 2;
    }
    return fail(rank, "unknown scenario " + scenario);
}
