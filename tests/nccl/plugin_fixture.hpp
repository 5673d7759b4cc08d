// SPDX-License-Identifier: BSD-3-Clause
// The in-process tests' plugin: libnccl-net-omrc.so loaded with dlopen once
// per process, its devices from a configuration file (OMRC_NCCL_CONFIG): one
// loopback device of 4 planes (a private fabric on which every comm of every
// rank thread connects), unless the environment names a file already.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <filesystem>
#include <fstream>

#include "harness/collectives.hpp"
#include "harness/plugin_loader.hpp"
#include "harness/spawn.hpp"

namespace omrc::nccl::test {

inline constexpr int kTestPlanes = 4;

/// The device configuration the in-process tests run on (docs/CONFIG.md).
inline constexpr const char* kTestConfig = R"(# omrc_nccl_tests: one loopback device, 4 planes
[[device]]
name = "omrc0"
driver = "loopback"
planes = 4

[device.qp]
# A loaded 2-core machine may starve a rank's thread for many milliseconds:
# the QPs' retry budget (timeout x 8) is 0.8 s.
timeout_ns = 100_000_000
)";

inline Plugin& plugin() {
    static Plugin* p = [] {
        // The tests' own configuration file unless the environment names one.
        if (std::getenv("OMRC_NCCL_CONFIG") == nullptr) {
            // Removed at exit (the plugin reads it once, at init).
            static const struct TempDir {
                std::string path = make_temp_dir("omrc-nccl-test-");
                ~TempDir() { std::filesystem::remove_all(path); }
            } dir;
            const std::string path = dir.path + "/omrc.toml";
            std::ofstream(path) << kTestConfig;
            ::setenv("OMRC_NCCL_CONFIG", path.c_str(), 1);
        }
        // A connection whose peer went quiet fails within seconds, not minutes.
        ::setenv("OMRC_NCCL_CONNECT_TIMEOUT_MS", "20000", 0);
        const char* path = std::getenv("OMRC_NCCL_PLUGIN");
        return new Plugin(path != nullptr ? path : OMRC_NCCL_PLUGIN_PATH);
    }();
    return *p;
}

/// The plugin through ABI version `version`, initialised.
inline std::unique_ptr<Net> open_net(int version = kNewestVersion) {
    auto net = plugin().net(version);
    if (net && net->init() != ncclSuccess) return nullptr;
    return net;
}

/// Do listens run over the connection manager (OMRC_NCCL_SETUP=cm, as the
/// *_cm tests set it)?
inline bool cm_setup() {
    const char* v = std::getenv("OMRC_NCCL_SETUP");
    return v != nullptr && std::string_view(v) == "cm";
}

inline Clock::time_point seconds_from_now(int s) { return Clock::now() + std::chrono::seconds(s); }

/// One connection on device 0: a send comm and the recv comm it talks to.
struct Pair {
    Net* net = nullptr;
    void* listen = nullptr;
    void* send = nullptr;
    void* recv = nullptr;
    Status status;
    int connect_polls = 0, accept_polls = 0;

    explicit Pair(Net& n) : net(&n) {
        Handle h(NCCL_NET_HANDLE_MAXSIZE, 0);
        if (const ncclResult_t rc = n.listen(0, h.data(), &listen); rc != ncclSuccess) {
            status = Status::error(rc, "listen");
            return;
        }
        status = connect_accept(n, 0, &h, listen, &send, &recv, seconds_from_now(20), &connect_polls, &accept_polls);
    }
    ~Pair() {
        if (send != nullptr) net->close_send(send);
        if (recv != nullptr) net->close_recv(recv);
        if (listen != nullptr) net->close_listen(listen);
    }
    Pair(const Pair&) = delete;
    Pair& operator=(const Pair&) = delete;
};

/// A registered host buffer of one comm.
struct Buf {
    Net* net;
    void* comm;
    std::vector<std::uint8_t> bytes;
    void* mh = nullptr;
    ncclResult_t reg = ncclSuccess;
    Buf(Net& n, void* c, std::size_t size, std::uint8_t fill = 0) : net(&n), comm(c), bytes(size, fill) {
        reg = n.reg_mr(c, bytes.data(), bytes.size(), NCCL_PTR_HOST, &mh);
    }
    ~Buf() {
        if (mh != nullptr) net->dereg_mr(comm, mh);
    }
    Buf(const Buf&) = delete;
    Buf& operator=(const Buf&) = delete;
    [[nodiscard]] void* data() { return bytes.data(); }
};

/// isend until the receiver's CTS has arrived (or an error, or the deadline).
inline ncclResult_t isend_when_ready(Net& n, void* comm, void* data, std::size_t size, int tag, void* mh, void** req,
                                     Clock::time_point deadline) {
    *req = nullptr;
    while (Clock::now() < deadline) {
        const ncclResult_t rc = n.isend(comm, data, size, tag, mh, req);
        if (rc != ncclSuccess || *req != nullptr) return rc;
        std::this_thread::yield();
    }
    return ncclSuccess;
}

/// Tests one request until done, an error or the deadline. Returns test's
/// last result; *done says which.
inline ncclResult_t test_until_done(Net& n, void* req, int* done, int* sizes, Clock::time_point deadline) {
    *done = 0;
    while (Clock::now() < deadline) {
        const ncclResult_t rc = n.test(req, done, sizes);
        if (rc != ncclSuccess || *done) return rc;
        std::this_thread::yield();
    }
    return ncclSuccess;
}

}  // namespace omrc::nccl::test
