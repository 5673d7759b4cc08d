// SPDX-License-Identifier: BSD-3-Clause
// Ranks as processes over the udp driver: each nccl_rank process opens its
// own udp device (its own port block on [::1]) through the plugin, and the
// ranks exchange their listen handles through files.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "harness/spawn.hpp"

using namespace omrc::nccl::test;

namespace {

/// Each process's device: one udp device of 2 planes on [::1], its ports
/// picked by the driver (so every process gets blocks of its own).
constexpr const char* kUdpConfig = R"([[device]]
name = "omrc0"
driver = "udp"
planes = 2

[device.qp]
timeout_ns = 100_000_000   # retry budget 0.8 s: a loaded 2-core machine starves processes
)";

/// The environment of the rank processes: the configuration file written
/// into `dir`, or (from_env) the same device from OMRC_NCCL_DRIVER and friends.
std::map<std::string, std::string> udp_env(const std::string& dir, bool from_env) {
    std::map<std::string, std::string> env = {{"OMRC_IBV_CONFIG", ""}, {"OMRC_NCCL_CONNECT_TIMEOUT_MS", "30000"}};
    if (from_env) {
        env["OMRC_NCCL_CONFIG"] = "";
        env["OMRC_NCCL_DRIVER"] = "udp";
        env["OMRC_NCCL_PLANES"] = "2";
        env["OMRC_NCCL_QP_TIMEOUT_MS"] = "100";
    } else {
        std::ofstream(dir + "/omrc.toml") << kUdpConfig;
        env["OMRC_NCCL_CONFIG"] = dir + "/omrc.toml";
        env["OMRC_NCCL_DRIVER"] = "";
    }
    return env;
}

std::vector<pid_t> start_ranks(const std::string& dir, int nranks, const std::function<std::string(int)>& scenario,
                               const std::function<int(int)>& version = nullptr, bool from_env = false) {
    const auto env = environment_with(udp_env(dir, from_env));
    std::vector<pid_t> pids;
    for (int r = 0; r < nranks; ++r) {
        std::vector<std::string> argv = {OMRC_NCCL_RANK_PATH, OMRC_NCCL_PLUGIN_PATH,  dir,
                                         std::to_string(r),   std::to_string(nranks), scenario(r)};
        if (version) argv.push_back(std::to_string(version(r)));
        pids.push_back(spawn(argv, env));
    }
    return pids;
}

}  // namespace

TEST_CASE("ranks as processes over udp: ring allreduce and all-to-all are exact", "[nccl_udp]") {
    const int nranks = GENERATE(2, 4);
    INFO(nranks << " processes");
    const std::string dir = make_temp_dir("omrc-nccl-");
    REQUIRE(!dir.empty());
    // Ranks use different ABI versions, as processes linked against different
    // NCCL releases would. With 2 ranks the device comes from the environment
    // (OMRC_NCCL_DRIVER) instead of a configuration file.
    const auto pids = start_ranks(
        dir, nranks, [](int) { return std::string("collectives"); }, [](int r) { return 12 - r % 5; }, nranks == 2);
    for (pid_t p : pids) REQUIRE(p > 0);
    const auto codes = wait_all_processes(pids, std::chrono::steady_clock::now() + std::chrono::seconds(55));
    for (pid_t p : pids) {
        INFO("pid " << p);
        CHECK(codes.at(p) == 0);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("a rank process killed mid-job: the others get an error instead of hanging", "[nccl_udp]") {
    constexpr int kRanks = 3;
    const std::string dir = make_temp_dir("omrc-nccl-");
    REQUIRE(!dir.empty());
    const auto pids =
        start_ranks(dir, kRanks, [](int r) { return std::string(r == kRanks - 1 ? "victim" : "survivor"); });
    for (pid_t p : pids) REQUIRE(p > 0);
    // Every rank is past its first allreduce (each wrote DIR/<scenario><rank>.ready):
    // the survivors now wait for the victim in the next one. A survivor still in
    // its first allreduce when the victim dies would fail there, not in the loop.
    const auto all_ready = [&] {
        for (int r = 0; r < kRanks; ++r) {
            const std::string scenario = r == kRanks - 1 ? "victim" : "survivor";
            if (!std::filesystem::exists(dir + "/" + scenario + std::to_string(r) + ".ready")) return false;
        }
        return true;
    };
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!all_ready() && std::chrono::steady_clock::now() < limit)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(all_ready());
    const auto killed_at = std::chrono::steady_clock::now();
    ::kill(pids.back(), SIGKILL);
    const std::vector<pid_t> survivors(pids.begin(), pids.end() - 1);
    const auto codes = wait_all_processes(survivors, killed_at + std::chrono::seconds(20));
    const auto took = std::chrono::steady_clock::now() - killed_at;
    for (pid_t p : survivors) {
        INFO("survivor pid " << p);
        CHECK(codes.at(p) == 0);  // 0: test returned an error; 3: no error; -1: hung
    }
    CHECK(took < std::chrono::seconds(10));
    int status = 0;
    ::waitpid(pids.back(), &status, 0);
    std::filesystem::remove_all(dir);
}
