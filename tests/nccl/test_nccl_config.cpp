// SPDX-License-Identifier: BSD-3-Clause
// Where the plugin's devices come from (docs/NCCL.md, "Environment"): a
// device configuration file, or OMRC_NCCL_DRIVER without one; what is wrong
// with either makes init fail with the reason. Each case runs nccl_rank's
// "init" scenario in a process of its own (the device table is per process).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/spawn.hpp"

using namespace omrc::nccl::test;

namespace {

struct InitRun {
    int code = -1;
    std::string output;
};

/// nccl_rank's init scenario with `env` (OMRC_NCCL_CONFIG and
/// OMRC_NCCL_DRIVER cleared unless given).
InitRun run_init(const std::string& dir, std::map<std::string, std::string> env) {
    for (const char* key : {"OMRC_NCCL_CONFIG", "OMRC_IBV_CONFIG", "OMRC_NCCL_DRIVER", "OMRC_NCCL_PLANES"})
        env.emplace(key, "");
    const std::string out = dir + "/init.out";
    const pid_t pid =
        spawn({OMRC_NCCL_RANK_PATH, OMRC_NCCL_PLUGIN_PATH, dir, "0", "1", "init"}, environment_with(env), out);
    InitRun r;
    if (pid < 0) return r;
    r.code = wait_all_processes({pid}, std::chrono::steady_clock::now() + std::chrono::seconds(30)).at(pid);
    std::ifstream f(out);
    std::stringstream ss;
    ss << f.rdbuf();
    r.output = ss.str();
    return r;
}

struct Dir {
    std::string path = make_temp_dir("omrc-nccl-config-");
    ~Dir() { std::filesystem::remove_all(path); }
    [[nodiscard]] std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(path + "/" + name) << text;
        return path + "/" + name;
    }
};

}  // namespace

TEST_CASE("every device of the configuration file is an NCCL device, with its planes in its properties",
          "[nccl_config]") {
    Dir dir;
    REQUIRE(!dir.path.empty());
    const std::string cfg = dir.write("two.toml", R"([defaults]
driver = "loopback"

[[device]]
name = "omrc0"
planes = 1

[[device]]
name = "rail1"
planes = 3

[device.qp.cc]
link_rate_gbps = 400
)");
    const InitRun r = run_init(dir.path, {{"OMRC_NCCL_CONFIG", cfg}});
    INFO(r.output);
    CHECK(r.code == 0);
    CHECK(r.output.find("devices 2") != std::string::npos);
    // One plane of 100 Gb/s: plane 0. Three of 400 Gb/s: every plane (undefined), rail 1.
    CHECK(r.output.find("device 0 name=omrc0 speed=100000 railId=0 planeId=0") != std::string::npos);
    CHECK(r.output.find("device 1 name=rail1 speed=1200000 railId=1 planeId=-1") != std::string::npos);
}

TEST_CASE("OMRC_IBV_CONFIG is read when OMRC_NCCL_CONFIG is not set", "[nccl_config]") {
    Dir dir;
    const std::string cfg = dir.write("ibv.toml", "[[device]]\nname = \"shared\"\ndriver = \"loopback\"\nplanes = 2\n");
    const InitRun r = run_init(dir.path, {{"OMRC_IBV_CONFIG", cfg}});
    INFO(r.output);
    CHECK(r.code == 0);
    CHECK(r.output.find("device 0 name=shared speed=200000") != std::string::npos);
}

TEST_CASE("a configuration that cannot be used makes init fail and says why", "[nccl_config]") {
    Dir dir;
    SECTION("an unknown key, named with the file and its line") {
        const std::string cfg =
            dir.write("typo.toml", "[[device]]\nname = \"omrc0\"\ndriver = \"loopback\"\nplanez = 2\n");
        const InitRun r = run_init(dir.path, {{"OMRC_NCCL_CONFIG", cfg}});
        INFO(r.output);
        CHECK(r.code == 2);
        CHECK(r.output.find("typo.toml") != std::string::npos);
        CHECK(r.output.find("planez") != std::string::npos);
    }
    SECTION("a file that does not exist") {
        const InitRun r = run_init(dir.path, {{"OMRC_NCCL_CONFIG", dir.path + "/missing.toml"}});
        INFO(r.output);
        CHECK(r.code == 2);
        CHECK(r.output.find("missing.toml") != std::string::npos);
    }
    SECTION("an argument the device's driver does not have, named with the file, its line and the driver's keys") {
        const std::string cfg =
            dir.write("args.toml", "[[device]]\nname = \"omrc0\"\ndriver = \"loopback\"\n[device.args]\nbogus = 1\n");
        const InitRun r = run_init(dir.path, {{"OMRC_NCCL_CONFIG", cfg}});
        INFO(r.output);
        CHECK(r.code == 2);
        CHECK(r.output.find("args.toml") != std::string::npos);
        CHECK(r.output.find("driver loopback has no argument 'bogus' (line 5)") != std::string::npos);
        CHECK(r.output.find("its arguments: endpoint, endpoints") != std::string::npos);
    }
    SECTION("a device whose driver refuses an argument's value") {
        const std::string cfg = dir.write(
            "value.toml", "[[device]]\nname = \"omrc0\"\ndriver = \"loopback\"\n[device.args]\nendpoint = 7\n");
        const InitRun r = run_init(dir.path, {{"OMRC_NCCL_CONFIG", cfg}});
        INFO(r.output);
        CHECK(r.code == 2);
        CHECK(r.output.find("device omrc0 (loopback driver) does not open") != std::string::npos);
    }
    SECTION("nothing configured at all") {
        const InitRun r = run_init(dir.path, {});
        INFO(r.output);
        CHECK(r.code == 2);
        CHECK(r.output.find("no device configured") != std::string::npos);
    }
    SECTION("OMRC_NCCL_DRIVER names no driver the fallback knows") {
        const InitRun r = run_init(dir.path, {{"OMRC_NCCL_DRIVER", "dpdk"}});
        INFO(r.output);
        CHECK(r.code == 2);
        CHECK(r.output.find("OMRC_NCCL_DRIVER='dpdk'") != std::string::npos);
    }
    SECTION("OMRC_NCCL_PLANES out of range") {
        const InitRun r = run_init(dir.path, {{"OMRC_NCCL_DRIVER", "loopback"}, {"OMRC_NCCL_PLANES", "16"}});
        INFO(r.output);
        CHECK(r.code == 2);
        CHECK(r.output.find("OMRC_NCCL_PLANES='16'") != std::string::npos);
    }
}
