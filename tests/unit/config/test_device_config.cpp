// SPDX-License-Identifier: BSD-3-Clause
// Device configuration files (include/omrc/config.hpp, docs/CONFIG.md):
// defaults, every key, [defaults] inheritance, every error with its path and
// line, loading files, the example files of examples/configs/, and a device
// opened from a parsed configuration.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "omrc/config.hpp"
#ifdef OMRC_HAVE_DPDK
#include "omrc/dpdk.hpp"
#endif
#include "omrc/omrc.hpp"
#include "support/transfer.hpp"

using namespace omrc;

namespace {

/// Parses `text` as "cfg.toml"; REQUIREs success.
ConfigFile parse_ok(const std::string& text) {
    ConfigFile f;
    std::string error;
    const int rc = parse_config(text, "cfg.toml", &f, &error);
    INFO(error);
    REQUIRE(rc == 0);
    REQUIRE(error.empty());
    return f;
}

/// Parses `text` as "cfg.toml"; REQUIREs EINVAL and returns the message.
std::string parse_error(const std::string& text) {
    ConfigFile f;
    f.source = "untouched";
    std::string error;
    const int rc = parse_config(text, "cfg.toml", &f, &error);
    INFO(text);
    REQUIRE(rc == EINVAL);
    CHECK(f.source == "untouched");  // nothing is filled on failure
    CHECK(f.devices.empty());
    return error;
}

Ipv6Addr ipv6(std::initializer_list<std::uint8_t> head, std::uint8_t last) {
    Ipv6Addr a{};
    std::copy(head.begin(), head.end(), a.begin());
    a[15] = last;
    return a;
}

const char* const kMinimal = R"(
[[device]]
name = "omrc0"
driver = "loopback"
)";

/// A scratch directory removed at the end of the test.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        char tmpl[] = "/tmp/omrc-config-test-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        path = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string write(const std::string& name, const std::string& text) const {
        const std::filesystem::path p = path / name;
        std::ofstream(p) << text;
        return p.string();
    }
};

}  // namespace

TEST_CASE("config: a device with only name and driver gets every default", "[config]") {
    const ConfigFile f = parse_ok(kMinimal);
    CHECK(f.source == "cfg.toml");
    REQUIRE(f.devices.size() == 1);
    const DeviceConfig& d = f.devices[0];
    CHECK(d.name == "omrc0");
    CHECK(d.driver == "loopback");
    const DeviceOptions def;
    const DeviceOptions& o = d.options;
    CHECK(o.args.empty());
    CHECK_FALSE(o.driver_context.has_value());
    CHECK_FALSE(static_cast<bool>(o.clock));
    CHECK(o.planes == def.planes);
    CHECK(o.local_addr == def.local_addr);
    CHECK(o.frame_mode == FrameMode::plain);
    CHECK(o.fabric.usid_block == def.fabric.usid_block);
    CHECK(o.fabric.planes == def.fabric.planes);
    CHECK(o.fabric.t0_per_plane == def.fabric.t0_per_plane);
    CHECK(o.fabric.t1_per_plane == def.fabric.t1_per_plane);
    CHECK(o.fabric.hosts_per_t0 == def.fabric.hosts_per_t0);
    CHECK(o.local_host == def.local_host);
    CHECK(o.seed == def.seed);
    CHECK(o.compute_icrc == def.compute_icrc);
    CHECK(o.verify_icrc == def.verify_icrc);
    CHECK(o.ack_every_pkts == def.ack_every_pkts);
    CHECK(o.ack_delay_ns == def.ack_delay_ns);
    CHECK(o.ev_timeout_ns == def.ev_timeout_ns);
    CHECK(o.probe_interval_ns == def.probe_interval_ns);
    CHECK(o.probe_successes_to_restore == def.probe_successes_to_restore);
    CHECK(o.ev_track_depth == def.ev_track_depth);
    CHECK(o.port_status_repeat_ns == def.port_status_repeat_ns);
    CHECK(o.max_qps == def.max_qps);
    CHECK(o.rx_burst_frames == def.rx_burst_frames);
    CHECK(o.tx_burst_frames == def.tx_burst_frames);
    const QpDefaults q;
    CHECK(d.qp.path_policy == q.path_policy);
    CHECK(d.qp.evs == q.evs);
    CHECK(d.qp.backup_evs == q.backup_evs);
    CHECK(d.qp.mtu_bytes == 0);
    CHECK(d.qp.mpr == q.mpr);
    CHECK(d.qp.timeout_ns == q.timeout_ns);
    CHECK(d.qp.retry_cnt == q.retry_cnt);
    CHECK(d.qp.cc.algorithm == CcAlgorithm::nscc);
    CHECK(d.qp.cc.fixed_window_bytes == q.cc.fixed_window_bytes);
    CHECK(d.qp.cc.base_rtt_ns == q.cc.base_rtt_ns);
    CHECK(d.qp.cc.link_rate_bps == q.cc.link_rate_bps);
    CHECK(d.qp.cc.target_delay_ratio == q.cc.target_delay_ratio);
    CHECK(d.qp.cc.max_window_bdp == q.cc.max_window_bdp);
}

TEST_CASE("config: every key reaches its member", "[config]") {
    const ConfigFile f = parse_ok(R"(
[[device]]
name = "omrc7"
driver = "udp"
planes = 3
frame_mode = "srv6"
local_addr = "fd0f::a1"
local_host = 5
seed = 0x1234_5678_9abc
compute_icrc = false
verify_icrc = false
ack_every_pkts = 64
ack_delay_ns = 0
ev_timeout_ns = 4_000_000
min_ev_timeout_ns = 2_000_000
probe_interval_ns = 1_000_000
probe_successes_to_restore = 5
ev_track_depth = 64
port_status_repeat_ns = 250_000
max_qps = 4096
rx_burst_frames = 1
tx_burst_frames = 1024

[device.args]
ifaces = ["veth0", "veth1", "veth2"]
rx_depth = 64
local = "[fd0f::a1]"
ring_entries = []

[device.fabric]
usid_block = 0xFC000000
planes = 3
t0_per_plane = 4
t1_per_plane = 2
hosts_per_t0 = 2

[device.qp]
path_policy = "spray"
evs = 4096
backup_evs = 0
mtu = 1024
mpr = 32
timeout_ns = 0
retry_cnt = 3

[device.qp.cc]
algorithm = "fixed"
fixed_window_bytes = 262144
base_rtt_ns = 8000
link_rate_gbps = 12.5
target_delay_ratio = 0.5
max_window_bdp = 2
)");
    REQUIRE(f.devices.size() == 1);
    const DeviceConfig& d = f.devices[0];
    const DeviceOptions& o = d.options;
    CHECK(d.name == "omrc7");
    CHECK(d.driver == "udp");
    CHECK(o.planes == 3);
    CHECK(o.frame_mode == FrameMode::srv6);
    CHECK(o.local_addr == ipv6({0xfd, 0x0f}, 0xa1));
    CHECK(o.local_host == 5);
    CHECK(o.seed == 0x123456789abcull);
    CHECK_FALSE(o.compute_icrc);
    CHECK_FALSE(o.verify_icrc);
    CHECK(o.ack_every_pkts == 64);
    CHECK(o.ack_delay_ns == 0);
    CHECK(o.ev_timeout_ns == 4'000'000);
    CHECK(o.min_ev_timeout_ns == 2'000'000);
    CHECK(o.probe_interval_ns == 1'000'000);
    CHECK(o.probe_successes_to_restore == 5);
    CHECK(o.ev_track_depth == 64);
    CHECK(o.port_status_repeat_ns == 250'000);
    CHECK(o.max_qps == 4096);
    CHECK(o.rx_burst_frames == 1);
    CHECK(o.tx_burst_frames == 1024);
    // Driver arguments as text: arrays joined at the driver's separator.
    const std::map<std::string, std::string, std::less<>> args{
        {"ifaces", "veth0,veth1,veth2"}, {"rx_depth", "64"}, {"local", "[fd0f::a1]"}, {"ring_entries", ""}};
    CHECK(o.args == args);
    CHECK(o.fabric.usid_block == 0xFC000000u);
    CHECK(o.fabric.planes == 3);
    CHECK(o.fabric.t0_per_plane == 4);
    CHECK(o.fabric.t1_per_plane == 2);
    CHECK(o.fabric.hosts_per_t0 == 2);
    CHECK(d.qp.path_policy == PathPolicy::spray);
    CHECK(d.qp.evs == 4096);
    CHECK(d.qp.backup_evs == 0);
    CHECK(d.qp.mtu_bytes == 1024);
    CHECK(d.qp.mpr == 32);
    CHECK(d.qp.timeout_ns == 0);
    CHECK(d.qp.retry_cnt == 3);
    CHECK(d.qp.cc.algorithm == CcAlgorithm::fixed);
    CHECK(d.qp.cc.fixed_window_bytes == 262144);
    CHECK(d.qp.cc.base_rtt_ns == 8000);
    CHECK(d.qp.cc.link_rate_bps == 12'500'000'000ull);
    CHECK(d.qp.cc.target_delay_ratio == 0.5);
    CHECK(d.qp.cc.max_window_bdp == 2.0);
}

TEST_CASE("config: driver arguments as text, arrays joined at the driver's separator", "[config]") {
#ifdef OMRC_HAVE_DPDK
    REQUIRE(omrc::dpdk::register_driver() == 0);
    const ConfigFile f = parse_ok(R"(
[[device]]
name = "omrc0"
driver = "dpdk"
[device.args]
eal = ["--no-huge", "-m", "512"]
vdevs = ["net_tap0,iface=a", "net_tap1"]
ports = [0, 1]
zero_copy = false
telemetry = true
rx_desc = 64
mbufs = []
)");
    const std::map<std::string, std::string, std::less<>> args{
        {"eal", "--no-huge -m 512"}, {"vdevs", "net_tap0,iface=a;net_tap1"}, {"ports", "0,1"}, {"zero_copy", "0"},
        {"telemetry", "1"},          {"rx_desc", "64"},                      {"mbufs", ""}};
    CHECK(f.devices.at(0).options.args == args);
#else
    SKIP("the dpdk driver is not in this build");
#endif
}

TEST_CASE("config: the other choices and forms of values", "[config]") {
    auto one = [](const std::string& extra) {
        return parse_ok(std::string(kMinimal) + extra).devices.at(0);
    };
    CHECK(one("frame_mode = \"plain\"\n").options.frame_mode == FrameMode::plain);
    CHECK(one("[device.qp]\npath_policy = \"ecmp\"\n").qp.path_policy == PathPolicy::ecmp);
    CHECK(one("[device.qp]\npath_policy = \"adaptive\"\n").qp.path_policy == PathPolicy::adaptive);
    CHECK(one("[device.qp.cc]\nalgorithm = \"nscc\"\n").qp.cc.algorithm == CcAlgorithm::nscc);
    CHECK(one("[device.qp.cc]\nlink_rate_gbps = 400\n").qp.cc.link_rate_bps == 400'000'000'000ull);
    {
        const DeviceConfig dc = one("[device.qp.cc]\nalgorithm = \"dcqcn\"\ndcqcn_g = 0.0625\ndcqcn_alpha_period_ns = 1000\n"
                                    "dcqcn_cnp_interval_ns = 0\ndcqcn_increase_period_ns = 2000\n"
                                    "dcqcn_byte_counter_bytes = 65536\ndcqcn_fast_recovery_stages = 3\n"
                                    "dcqcn_ai_ratio = 0.002\ndcqcn_hai_ratio = 0.02\n");
        CHECK(dc.qp.cc.algorithm == CcAlgorithm::dcqcn);
        CHECK(dc.qp.cc.dcqcn.g == 0.0625);
        CHECK(dc.qp.cc.dcqcn.alpha_period_ns == 1000);
        CHECK(dc.qp.cc.dcqcn.cnp_interval_ns == 0);
        CHECK(dc.qp.cc.dcqcn.increase_period_ns == 2000);
        CHECK(dc.qp.cc.dcqcn.byte_counter_bytes == 65536);
        CHECK(dc.qp.cc.dcqcn.fast_recovery_stages == 3);
        CHECK(dc.qp.cc.dcqcn.ai_ratio == 0.002);
        CHECK(dc.qp.cc.dcqcn.hai_ratio == 0.02);
        // Untouched keys keep their defaults.
        CHECK(one("[device.qp.cc]\nalgorithm = \"dcqcn\"\n").qp.cc.dcqcn.g == 1.0 / 256);
    }
    CHECK(one("[device.qp]\nmtu = 64\n").qp.mtu_bytes == 64);
    CHECK(one("[device.qp]\nmtu = 4096\n").qp.mtu_bytes == 4096);
    CHECK(one("[device.qp]\nmpr = 1\n").qp.mpr == 1);
    CHECK(one("local_addr = \"::1\"\n").options.local_addr == ipv6({}, 1));
    CHECK(one("seed = 9223372036854775807\n").options.seed == 9223372036854775807ull);
    // The uSID block: an integer, "HHHH:HHHH" or "0x" and up to 8 hex digits.
    CHECK(one("[device.fabric]\nusid_block = \"fcbb:0000\"\n").options.fabric.usid_block == 0xFCBB0000u);
    CHECK(one("[device.fabric]\nusid_block = \"fc00:1\"\n").options.fabric.usid_block == 0xFC000001u);
    CHECK(one("[device.fabric]\nusid_block = \"0xFCBB0000\"\n").options.fabric.usid_block == 0xFCBB0000u);
    CHECK(one("[device.fabric]\nusid_block = 65536\n").options.fabric.usid_block == 0x10000u);
    // Keys in any order, inline tables and dotted keys are TOML's own business.
    const DeviceConfig d = one("qp = { evs = 7, cc = { algorithm = \"fixed\" } }\nargs.endpoint = 0\n");
    CHECK(d.qp.evs == 7);
    CHECK(d.qp.cc.algorithm == CcAlgorithm::fixed);
    CHECK(d.options.args.at("endpoint") == "0");
}

TEST_CASE("config: devices inherit [defaults] and override it", "[config]") {
    const ConfigFile f = parse_ok(R"(
# a comment
[defaults]
driver = "udp"
planes = 4
ev_timeout_ns = 1_000_000

[defaults.args]
planes = 4
pcap = "all.pcap"

[defaults.fabric]
t0_per_plane = 8

[defaults.qp]
evs = 32
mtu = 2048

[defaults.qp.cc]
base_rtt_ns = 5000
algorithm = "fixed"

[[device]]
name = "omrc0"
[device.args]
local = "[::1]:14800"

[[device]]
name = "omrc1"
driver = "loopback"
planes = 2
[device.args]
link_delay_ns = 8
[device.qp]
evs = 64
[device.qp.cc]
algorithm = "nscc"

[[device]]
name = "omrc2"
)");
    REQUIRE(f.devices.size() == 3);
    const DeviceConfig& a = f.devices[0];
    const DeviceConfig& b = f.devices[1];
    const DeviceConfig& c = f.devices[2];
    CHECK(a.name == "omrc0");
    CHECK(b.name == "omrc1");
    CHECK(c.name == "omrc2");
    // omrc0: everything inherited but the one argument it gives.
    CHECK(a.driver == "udp");
    CHECK(a.options.planes == 4);
    CHECK(a.options.ev_timeout_ns == 1'000'000);
    CHECK(a.options.args.at("local") == "[::1]:14800");
    CHECK(a.options.args.at("planes") == "4");
    CHECK(a.options.args.at("pcap") == "all.pcap");
    CHECK(a.options.args.size() == 3);
    CHECK(a.options.fabric.t0_per_plane == 8);
    CHECK(a.options.fabric.t1_per_plane == FabricLayout{}.t1_per_plane);
    CHECK(a.qp.evs == 32);
    CHECK(a.qp.mtu_bytes == 2048);
    CHECK(a.qp.cc.base_rtt_ns == 5000);
    CHECK(a.qp.cc.algorithm == CcAlgorithm::fixed);
    // omrc1: overrides keys at every level; the arguments add up key by key.
    CHECK(b.driver == "loopback");
    CHECK(b.options.planes == 2);
    CHECK(b.options.ev_timeout_ns == 1'000'000);
    CHECK(b.options.args.at("planes") == "4");
    CHECK(b.options.args.at("pcap") == "all.pcap");
    CHECK(b.options.args.at("link_delay_ns") == "8");
    CHECK(b.qp.evs == 64);
    CHECK(b.qp.mtu_bytes == 2048);
    CHECK(b.qp.cc.algorithm == CcAlgorithm::nscc);
    CHECK(b.qp.cc.base_rtt_ns == 5000);
    // omrc2: nothing of its own but its name.
    CHECK(c.driver == "udp");
    CHECK(c.options.args.at("pcap") == "all.pcap");
    CHECK(c.qp.evs == 32);
}

TEST_CASE("config: find() by name", "[config]") {
    const ConfigFile f = parse_ok(R"(
[defaults]
driver = "loopback"
[[device]]
name = "omrc0"
planes = 1
[[device]]
name = "omrc1"
planes = 2
)");
    REQUIRE(f.find("omrc0") != nullptr);
    CHECK(f.find("omrc0")->options.planes == 1);
    REQUIRE(f.find("omrc1") != nullptr);
    CHECK(f.find("omrc1")->options.planes == 2);
    CHECK(f.find("omrc1") == &f.devices[1]);
    CHECK(f.find("omrc2") == nullptr);
    CHECK(f.find("") == nullptr);
    CHECK(f.find("OMRC0") == nullptr);
}

TEST_CASE("config: a TOML syntax error says file:line:col", "[config]") {
    const std::string e = parse_error("[[device]]\nname = \"omrc0\"\ndriver = loopback\n");
    CHECK_THAT(e, Catch::StartsWith("cfg.toml:3:10: "));
    const std::string e2 = parse_error("[[device]]\nname = \"a\"\nname = \"b\"\n");  // TOML: a key given twice
    CHECK_THAT(e2, Catch::StartsWith("cfg.toml:3:"));
    const std::string e3 = parse_error("[[device]\n");
    CHECK_THAT(e3, Catch::StartsWith("cfg.toml:1:"));
}

TEST_CASE("config: every error names the file, the key's dotted path and its line", "[config]") {
    struct Case {
        std::string text;
        std::string error;  ///< the whole message, or its beginning when it ends in "..."
    };
    const std::string dev = "[[device]]\nname = \"omrc0\"\ndriver = \"udp\"\n";  // the key is on line 4
#ifdef OMRC_HAVE_DPDK
    REQUIRE(omrc::dpdk::register_driver() == 0);  // registered drivers are listed, sorted
    const std::string kDriverChoices = "\"dpdk\", \"loopback\", \"udp\"";
#else
    const std::string kDriverChoices = "\"loopback\", \"udp\"";
#endif
    const std::vector<Case> cases = {
        // unknown keys, at every level
        {dev + "plane = 4\n", "cfg.toml: device 'omrc0'.plane: unknown key (line 4); accepted here: name, driver, ..."},
        {dev + "[device.qp]\nevz = 1\n", "cfg.toml: device 'omrc0'.qp.evz: unknown key (line 5); accepted here: "
                                         "path_policy, evs, backup_evs, mtu, mpr, timeout_ns, retry_cnt, cc"},
        {dev + "[device.qp.cc]\nrate = 1\n", "cfg.toml: device 'omrc0'.qp.cc.rate: unknown key (line 5); ..."},
        {dev + "[device.fabric]\nplains = 1\n", "cfg.toml: device 'omrc0'.fabric.plains: unknown key (line 5); ..."},
        {"[defaults.qp]\nevz = 1\n" + dev, "cfg.toml: defaults.qp.evz: unknown key (line 2); ..."},
        {"devices = 1\n" + dev, "cfg.toml: devices: unknown key (line 1); accepted here: defaults, device"},
        // wrong types
        {dev + "planes = \"4\"\n", "cfg.toml: device 'omrc0'.planes: must be an integer, not a string (line 4)"},
        {dev + "compute_icrc = 1\n", "cfg.toml: device 'omrc0'.compute_icrc: must be true or false, not an integer (line 4)"},
        {dev + "local_addr = 1\n", "cfg.toml: device 'omrc0'.local_addr: must be a string, not an integer (line 4)"},
        {dev + "qp = 1\n", "cfg.toml: device 'omrc0'.qp: must be a table, not an integer (line 4)"},
        {dev + "args = \"a=b\"\n", "cfg.toml: device 'omrc0'.args: must be a table, not a string (line 4)"},
        {dev + "[device.args]\nlocal = 1.5\n",
         "cfg.toml: device 'omrc0'.args.local: must be a string, an integer, a boolean or an array of strings, not a "
         "float (line 5)"},
        {dev + "[device.args]\nports = [0, 1.5]\n",
         "cfg.toml: device 'omrc0'.args.ports[1]: must be a string or an integer, not a float (line 5)"},
        {dev + "[device.args.nested]\na = 1\n", "cfg.toml: device 'omrc0'.args.nested: must be a string, ..."},
        {dev + "[device.qp.cc]\nlink_rate_gbps = \"100\"\n",
         "cfg.toml: device 'omrc0'.qp.cc.link_rate_gbps: must be a number, not a string (line 5)"},
        {dev + "[device.fabric]\nusid_block = true\n",
         "cfg.toml: device 'omrc0'.fabric.usid_block: must be an integer or a string such as \"fcbb:0000\", not a "
         "boolean (line 5)"},
        {dev + "ev_timeout_ns = 1979-05-27\n", "cfg.toml: device 'omrc0'.ev_timeout_ns: must be an integer, not a date (line 4)"},
        // out of range
        {dev + "planes = 16\n", "cfg.toml: device 'omrc0'.planes: must be 0..15, got 16 (line 4)"},
        {dev + "planes = -1\n", "cfg.toml: device 'omrc0'.planes: must be 0..15, got -1 (line 4)"},
        {dev + "seed = -1\n", "cfg.toml: device 'omrc0'.seed: must be ≥ 0, got -1 (line 4)"},
        {dev + "ack_every_pkts = 0\n", "cfg.toml: device 'omrc0'.ack_every_pkts: must be 1..64, got 0 (line 4)"},
        {dev + "ack_every_pkts = 65\n", "cfg.toml: device 'omrc0'.ack_every_pkts: must be 1..64, got 65 (line 4)"},
        {dev + "ev_timeout_ns = 0\n", "cfg.toml: device 'omrc0'.ev_timeout_ns: must be 1..3600000000000, got 0 (line 4)"},
        {dev + "probe_interval_ns = 3600000000001\n", "cfg.toml: device 'omrc0'.probe_interval_ns: must be 1..3600000000000, ..."},
        {dev + "probe_successes_to_restore = 0\n", "cfg.toml: device 'omrc0'.probe_successes_to_restore: must be 1..1024, got 0 (line 4)"},
        {dev + "ev_track_depth = 0\n", "cfg.toml: device 'omrc0'.ev_track_depth: must be 1..65536, got 0 (line 4)"},
        {dev + "port_status_repeat_ns = 0\n", "cfg.toml: device 'omrc0'.port_status_repeat_ns: must be 1..3600000000000, ..."},
        {dev + "max_qps = 4097\n", "cfg.toml: device 'omrc0'.max_qps: must be 1..4096, got 4097 (line 4)"},
        {dev + "rx_burst_frames = 0\n", "cfg.toml: device 'omrc0'.rx_burst_frames: must be 1..1024, got 0 (line 4)"},
        {dev + "tx_burst_frames = 1025\n", "cfg.toml: device 'omrc0'.tx_burst_frames: must be 1..1024, got 1025 (line 4)"},
        {dev + "local_host = 4294967296\n", "cfg.toml: device 'omrc0'.local_host: must be 0..4294967295, got 4294967296 (line 4)"},
        {dev + "[device.qp]\nevs = 0\n", "cfg.toml: device 'omrc0'.qp.evs: must be 1..4096, got 0 (line 5)"},
        {dev + "[device.qp]\nbackup_evs = 4097\n", "cfg.toml: device 'omrc0'.qp.backup_evs: must be 0..4096, got 4097 (line 5)"},
        {dev + "[device.qp]\nmtu = 100\n", "cfg.toml: device 'omrc0'.qp.mtu: must be 0 or 64..4096 in steps of 64, got 100 (line 5)"},
        {dev + "[device.qp]\nmtu = 32\n", "cfg.toml: device 'omrc0'.qp.mtu: must be 0 or 64..4096 in steps of 64, got 32 (line 5)"},
        {dev + "[device.qp]\nmtu = 8192\n", "cfg.toml: device 'omrc0'.qp.mtu: must be 0..4096, got 8192 (line 5)"},
        {dev + "[device.qp]\nmpr = 3\n", "cfg.toml: device 'omrc0'.qp.mpr: must be 1, 2, 4, 8, 16 or 32, got 3 (line 5)"},
        {dev + "[device.qp]\nmpr = 64\n", "cfg.toml: device 'omrc0'.qp.mpr: must be 1..32, got 64 (line 5)"},
        {dev + "[device.qp]\nretry_cnt = 8\n", "cfg.toml: device 'omrc0'.qp.retry_cnt: must be 0..7, got 8 (line 5)"},
        {dev + "[device.qp]\ntimeout_ns = -5\n", "cfg.toml: device 'omrc0'.qp.timeout_ns: must be 0..3600000000000, got -5 (line 5)"},
        {dev + "[device.qp.cc]\nfixed_window_bytes = 63\n", "cfg.toml: device 'omrc0'.qp.cc.fixed_window_bytes: must be 64..1099511627776, got 63 (line 5)"},
        {dev + "[device.qp.cc]\nbase_rtt_ns = 0\n", "cfg.toml: device 'omrc0'.qp.cc.base_rtt_ns: must be 1..3600000000000, got 0 (line 5)"},
        {dev + "[device.qp.cc]\nlink_rate_gbps = 0\n", "cfg.toml: device 'omrc0'.qp.cc.link_rate_gbps: must be > 0 and ≤ 1000000, got 0 (line 5)"},
        {dev + "[device.qp.cc]\nlink_rate_gbps = nan\n", "cfg.toml: device 'omrc0'.qp.cc.link_rate_gbps: must be > 0 and ≤ 1000000, got nan (line 5)"},
        {dev + "[device.qp.cc]\ntarget_delay_ratio = -0.5\n", "cfg.toml: device 'omrc0'.qp.cc.target_delay_ratio: must be > 0 and ≤ 100, got -0.5 (line 5)"},
        {dev + "[device.qp.cc]\nmax_window_bdp = inf\n", "cfg.toml: device 'omrc0'.qp.cc.max_window_bdp: must be > 0 and ≤ 1000, got inf (line 5)"},
        {dev + "[device.fabric]\nplanes = 0\n", "cfg.toml: device 'omrc0'.fabric.planes: must be 1..15, got 0 (line 5)"},
        {dev + "[device.fabric]\nt0_per_plane = 1025\n", "cfg.toml: device 'omrc0'.fabric.t0_per_plane: must be 1..1024, got 1025 (line 5)"},
        {dev + "[device.fabric]\nt1_per_plane = 0\n", "cfg.toml: device 'omrc0'.fabric.t1_per_plane: must be 1..1024, got 0 (line 5)"},
        {dev + "[device.fabric]\nhosts_per_t0 = 0\n", "cfg.toml: device 'omrc0'.fabric.hosts_per_t0: must be 1..1024, got 0 (line 5)"},
        {dev + "[device.fabric]\nusid_block = 0xFFFF\n", "cfg.toml: device 'omrc0'.fabric.usid_block: must be 65536..4294967295, got 65535 (line 5)"},
        {dev + "[device.fabric]\nusid_block = \"0000:fcbb\"\n",
         "cfg.toml: device 'omrc0'.fabric.usid_block: the top 16 bits of the uSID block must not be 0 (line 5)"},
        {dev + "[device.fabric]\nusid_block = \"fcbb::\"\n",
         "cfg.toml: device 'omrc0'.fabric.usid_block: \"fcbb::\" is not a uSID block (\"fcbb:0000\" or \"0xfcbb0000\") (line 5)"},
        {dev + "[device.fabric]\nusid_block = \"0x1FCBB0000\"\n", "cfg.toml: device 'omrc0'.fabric.usid_block: \"0x1FCBB0000\" is not a uSID block ..."},
        {dev + "[device.fabric]\nusid_block = \"fcbbb:0\"\n", "cfg.toml: device 'omrc0'.fabric.usid_block: \"fcbbb:0\" is not a uSID block ..."},
        // values that are no member of their set
        {dev + "frame_mode = \"SRv6\"\n", "cfg.toml: device 'omrc0'.frame_mode: must be one of \"plain\", \"srv6\", got \"SRv6\" (line 4)"},
        {dev + "[device.qp]\npath_policy = \"rr\"\n",
         "cfg.toml: device 'omrc0'.qp.path_policy: must be one of \"ecmp\", \"spray\", \"adaptive\", got \"rr\" (line 5)"},
        {dev + "[device.qp.cc]\nalgorithm = \"qcn\"\n",
         "cfg.toml: device 'omrc0'.qp.cc.algorithm: must be one of \"fixed\", \"nscc\", \"dcqcn\", \"hpcc\", \"credit\", got \"qcn\" (line 5)"},
        {dev + "[device.qp.cc]\ndcqcn_g = 2\n", "cfg.toml: device 'omrc0'.qp.cc.dcqcn_g: must be > 0 and ≤ 1, got 2 (line 5)"},
        {dev + "[device.qp.cc]\ndcqcn_alpha_period_ns = 0\n",
         "cfg.toml: device 'omrc0'.qp.cc.dcqcn_alpha_period_ns: must be 1..3600000000000, got 0 (line 5)"},
        {dev + "[device.qp.cc]\ndcqcn_byte_counter_bytes = 100\n",
         "cfg.toml: device 'omrc0'.qp.cc.dcqcn_byte_counter_bytes: must be 4096..1099511627776, got 100 (line 5)"},
        {dev + "[device.qp.cc]\ndcqcn_fast_recovery_stages = 65\n",
         "cfg.toml: device 'omrc0'.qp.cc.dcqcn_fast_recovery_stages: must be 0..64, got 65 (line 5)"},
        // the names and argument keys the drivers registered
        {"[[device]]\nname = \"omrc0\"\ndriver = \"verbs\"\n",
         "cfg.toml: device 'omrc0'.driver: must be one of " + kDriverChoices + ", got \"verbs\" (line 3)"},
        {dev + "[device.args]\nlocal = \"[::1]:4791\"\nrx_dept = 64\n",
         "cfg.toml: device 'omrc0'.args.rx_dept: driver udp has no argument 'rx_dept' (line 6); its arguments: "
         "ifaces, link_poll_us, link_probe_ms, local, next_hop_macs, pcap, planes, ring_entries, rx_depth, "
         "sock_buf_bytes, steering, tx_slots"},
        {"[[device]]\nname = \"omrc0\"\ndriver = \"loopback\"\n[device.args]\nendpoint = 0\nlocal = \"[::1]:4791\"\n",
         "cfg.toml: device 'omrc0'.args.local: driver loopback has no argument 'local' (line 6); its arguments: "
         "endpoint, endpoints, link_delay_ns, next_hop_macs, pcap, planes, steering"},
        {dev + "local_addr = \"10.0.0.1\"\n",
         "cfg.toml: device 'omrc0'.local_addr: \"10.0.0.1\" is not an IPv6 address (such as \"fd00::1\") (line 4)"},
        {dev + "local_addr = \"[::1]\"\n", "cfg.toml: device 'omrc0'.local_addr: \"[::1]\" is not an IPv6 address ..."},
        // what only the whole device shows
        {dev + "frame_mode = \"srv6\"\nlocal_host = 4\n[device.fabric]\nt0_per_plane = 2\nhosts_per_t0 = 2\n",
         "cfg.toml: device 'omrc0'.local_host: 4 is not a host of the fabric (4 hosts: t0_per_plane × hosts_per_t0) (line 5)"},
        // names, drivers, devices
        {"[[device]]\ndriver = \"udp\"\n", "cfg.toml: device #1: missing key 'name' (line 1); ..."},
        {dev + "[[device]]\nname = \"omrc1\"\n", "cfg.toml: device 'omrc1': missing key 'driver' (line 4); give it in the device or in [defaults]"},
        {dev + "[[device]]\nname = 7\n", "cfg.toml: device #2.name: must be a string, not an integer (line 5)"},
        {"[[device]]\nname = \"\"\ndriver = \"udp\"\n", "cfg.toml: device #1.name: \"\" is not a device name (1..63 letters, digits, '_', '-', '.') (line 2)"},
        {"[[device]]\nname = \"omrc 0\"\ndriver = \"udp\"\n", "cfg.toml: device #1.name: \"omrc 0\" is not a device name ..."},
        {dev + "\n[[device]]\nname = \"omrc0\"\ndriver = \"udp\"\n",
         "cfg.toml: device 'omrc0': duplicate name (the first device 'omrc0' is at line 1) (line 5)"},
        {"[defaults]\nname = \"x\"\n" + dev, "cfg.toml: defaults.name: a device's own key: not allowed in [defaults] (line 2)"},
        {"[defaults]\ndriver = \"udp\"\n", "cfg.toml: no device: add a [[device]] table with name and driver"},
        {"", "cfg.toml: no device: add a [[device]] table with name and driver"},
        {"device = []\n", "cfg.toml: device: no device: add a [[device]] table with name and driver (line 1)"},
        {"[device]\nname = \"omrc0\"\ndriver = \"udp\"\n",
         "cfg.toml: device: must be an array of tables: write [[device]], not [device] (line 1)"},
        {"defaults = 1\n" + dev, "cfg.toml: defaults: must be a table, not an integer (line 1)"},
    };
    for (const Case& c : cases) {
        const std::string e = parse_error(c.text);
        INFO(c.text);
        if (c.error.size() > 3 && c.error.compare(c.error.size() - 3, 3, "...") == 0) {
            CHECK_THAT(e, Catch::StartsWith(c.error.substr(0, c.error.size() - 3)));
        } else {
            CHECK(e == c.error);
        }
    }
}

TEST_CASE("config: parse_config without a ConfigFile or an error string", "[config]") {
    std::string error;
    CHECK(parse_config(kMinimal, "x", nullptr, &error) == EINVAL);
    CHECK_FALSE(error.empty());
    ConfigFile f;
    CHECK(parse_config("[[device]]\n", "x", &f, nullptr) == EINVAL);  // no message wanted: none written
    CHECK(parse_config(kMinimal, "x", &f, nullptr) == 0);
    CHECK(f.devices.size() == 1);
    CHECK(f.source == "x");
}

TEST_CASE("config: load_config reads files and says why one cannot be read", "[config]") {
    TempDir dir;
    ConfigFile f;
    std::string error;
    const std::string good = dir.write("good.toml", kMinimal);
    REQUIRE(load_config(good, &f, &error) == 0);
    CHECK(f.source == good);
    REQUIRE(f.devices.size() == 1);
    CHECK(f.devices[0].name == "omrc0");

    const std::string missing = (dir.path / "missing.toml").string();
    CHECK(load_config(missing, &f, &error) == ENOENT);
    CHECK(error == missing + ": cannot open: No such file or directory");
    CHECK(f.source == good);  // left alone

    CHECK(load_config(dir.path.string(), &f, &error) == EIO);  // a directory opens but does not read
    CHECK(error == dir.path.string() + ": cannot read: Is a directory");

    const std::string bad = dir.write("bad.toml", "[[device]]\nname = \"omrc0\"\ndriver = \"udp\"\nplanes = 99\n");
    CHECK(load_config(bad, &f, &error) == EINVAL);
    CHECK(error == bad + ": device 'omrc0'.planes: must be 0..15, got 99 (line 4)");

    const std::string syntax = dir.write("syntax.toml", "[[device]]\nname = 'omrc0\n");
    CHECK(load_config(syntax, &f, &error) == EINVAL);
    CHECK_THAT(error, Catch::StartsWith(syntax + ":2:"));

    const std::string big = dir.write("big.toml", "# " + std::string(1u << 20, 'x') + "\n" + kMinimal);
    CHECK(load_config(big, &f, &error) == EINVAL);
    CHECK(error == big + ": larger than 1024 KiB: not a configuration file");

    if (::geteuid() != 0) {  // root reads whatever the mode says
        const std::string locked = dir.write("locked.toml", kMinimal);
        REQUIRE(::chmod(locked.c_str(), 0) == 0);
        CHECK(load_config(locked, &f, &error) == EACCES);
        CHECK(error == locked + ": cannot open: Permission denied");
    }
}

TEST_CASE("config: the example files of examples/configs/ parse to what they say", "[config]") {
    const std::filesystem::path dir = std::filesystem::path(OMRC_SOURCE_DIR) / "examples" / "configs";
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".toml") names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"dpdk-af_packet.toml", "dpdk-memif.toml", "dpdk-tap.toml", "loopback.toml",
                                            "nic-pair.toml", "udp-srv6.toml", "udp.toml"});
#ifdef OMRC_HAVE_DPDK
    REQUIRE(omrc::dpdk::register_driver() == 0);  // the dpdk examples name it
#else
    SKIP("the dpdk driver is not in this build: its example files name it");
#endif
    std::map<std::string, ConfigFile> files;
    for (const std::string& name : names) {
        ConfigFile f;
        std::string error;
        INFO(name << ": " << error);
        REQUIRE(load_config((dir / name).string(), &f, &error) == 0);
        files[name] = std::move(f);
    }

    SECTION("loopback.toml") {
        const ConfigFile& f = files.at("loopback.toml");
        REQUIRE(f.devices.size() == 1);
        const DeviceConfig& d = f.devices[0];
        CHECK(d.name == "omrc0");
        CHECK(d.driver == "loopback");
        CHECK(d.options.planes == 4);
        CHECK(d.options.args.at("link_delay_ns") == "1000");
        CHECK(d.qp.evs == 64);
        CHECK(d.qp.mtu_bytes == 4096);
    }
    SECTION("udp.toml") {
        const ConfigFile& f = files.at("udp.toml");
        REQUIRE(f.devices.size() == 2);
        for (const DeviceConfig& d : f.devices) {
            CHECK(d.driver == "udp");
            CHECK(d.options.planes == 4);
            CHECK(d.options.frame_mode == FrameMode::plain);
            CHECK(d.qp.path_policy == PathPolicy::adaptive);
            CHECK(d.qp.evs == 128);
            CHECK(d.qp.mtu_bytes == 4096);
        }
        REQUIRE(f.find("omrc0") != nullptr);
        REQUIRE(f.find("omrc1") != nullptr);
        CHECK(f.find("omrc0")->options.args.at("local") == "[::1]:14800");
        CHECK(f.find("omrc1")->options.args.at("local") == "[::1]:15808");
    }
    SECTION("udp-srv6.toml") {
        const ConfigFile& f = files.at("udp-srv6.toml");
        REQUIRE(f.devices.size() == 2);
        const DeviceConfig& a = f.devices[0];
        const DeviceConfig& b = f.devices[1];
        for (const DeviceConfig* d : {&a, &b}) {
            CHECK(d->driver == "udp");
            CHECK(d->options.frame_mode == FrameMode::srv6);
            CHECK(d->options.planes == 2);
            CHECK(d->options.fabric.usid_block == 0xFCBB0000u);
            CHECK(d->options.fabric.planes == 2);
            CHECK(d->options.fabric.t0_per_plane == 2);
            CHECK(d->options.fabric.t1_per_plane == 2);
            CHECK(d->options.fabric.hosts_per_t0 == 1);
            CHECK(d->options.ev_timeout_ns == 4'000'000);
        }
        CHECK(a.options.local_host == 0);
        CHECK(b.options.local_host == 1);
        CHECK(a.options.local_addr == ipv6({0xfd, 0x0f}, 0xa0));
        CHECK(b.options.local_addr == ipv6({0xfd, 0x0f}, 0xa1));
        CHECK(a.options.args.at("ifaces") == "h0p0,h0p1");
        CHECK(b.options.args.at("ifaces") == "h1p0,h1p1");
        CHECK(a.options.args.at("next_hop_macs") == "02:0f:00:10:00:00,02:0f:01:10:00:00");
        CHECK(b.options.args.at("next_hop_macs") == "02:0f:00:11:00:00,02:0f:01:11:00:00");
    }
    SECTION("dpdk-memif.toml") {
        const ConfigFile& f = files.at("dpdk-memif.toml");
        REQUIRE(f.devices.size() == 2);
        const DeviceConfig* s = f.find("server");
        const DeviceConfig* c = f.find("client");
        REQUIRE(s != nullptr);
        REQUIRE(c != nullptr);
        for (const DeviceConfig* d : {s, c}) {
            CHECK(d->driver == "dpdk");
            CHECK(d->options.planes == 2);
            const std::string& eal = d->options.args.at("eal");
            CHECK_THAT(eal, Catch::StartsWith("--no-huge -m 1024 --no-pci --file-prefix omrc-memif-"));
            CHECK_THAT(eal, Catch::Contains("bsize=8192"));
        }
        CHECK_THAT(s->options.args.at("eal"),
                   Catch::Contains("--file-prefix omrc-memif-server") &&
                       Catch::Contains("--vdev net_memif0,role=server,socket=/tmp/omrc-memif-p0.sock,bsize=8192 "
                                       "--vdev net_memif1,role=server,socket=/tmp/omrc-memif-p1.sock,bsize=8192"));
        CHECK_THAT(c->options.args.at("eal"),
                   Catch::Contains("--file-prefix omrc-memif-client") &&
                       Catch::Contains("--vdev net_memif0,role=client,socket=/tmp/omrc-memif-p0.sock,bsize=8192 "
                                       "--vdev net_memif1,role=client,socket=/tmp/omrc-memif-p1.sock,bsize=8192"));
    }
    SECTION("dpdk-tap.toml") {
        const ConfigFile& f = files.at("dpdk-tap.toml");
        REQUIRE(f.devices.size() == 1);
        const DeviceConfig& d = f.devices[0];
        CHECK(d.driver == "dpdk");
        CHECK(d.options.args.at("vdevs") == "net_tap0,iface=omrc-t0;net_tap1,iface=omrc-t1");
        CHECK(d.options.args.at("ports") == "net_tap0,net_tap1");
        CHECK(d.qp.mtu_bytes == 1024);  // net_tap's 1518-byte frames
    }
    SECTION("dpdk-af_packet.toml") {
        const ConfigFile& f = files.at("dpdk-af_packet.toml");
        REQUIRE(f.devices.size() == 1);
        const DeviceConfig& d = f.devices[0];
        CHECK(d.driver == "dpdk");
        CHECK_THAT(d.options.args.at("eal"),
                   Catch::Contains("--vdev net_af_packet0,iface=eth1,blocksz=16384,framesz=8192,framecnt=512"));
        CHECK(d.options.args.at("ports") == "net_af_packet0,net_af_packet1");
    }
    SECTION("nic-pair.toml") {
        const ConfigFile& f = files.at("nic-pair.toml");
        REQUIRE(f.devices.size() == 2);
        for (const DeviceConfig& d : f.devices) {
            CHECK(d.driver == "dpdk");
            CHECK(d.options.planes == 8);
            CHECK(d.options.args.at("ports") == "0,1,2,3,4,5,6,7");
            CHECK(d.options.args.at("zero_copy") == "1");
            CHECK(d.options.args.at("steering") == "qpn");
            CHECK(d.options.workers == 8);
            CHECK(d.options.cpus == std::vector<int>{2, 3, 4, 5, 6, 7, 8, 9});
            CHECK(d.options.worker_sleep_ns == 0);
            CHECK_THAT(d.options.args.at("eal"), Catch::Contains("-a 0000:3b:00.0"));
            CHECK_THAT(d.options.args.at("eal"), !Catch::Contains("--no-huge"));
            CHECK(d.qp.evs == 256);
            CHECK(d.qp.mpr == 16);
            CHECK(d.qp.cc.link_rate_bps == 400'000'000'000ull);
        }
        CHECK(f.devices[0].options.local_addr != f.devices[1].options.local_addr);
    }
}

TEST_CASE("config: a loopback device opened from a parsed configuration carries it", "[config]") {
    const ConfigFile f = parse_ok(R"(
[[device]]
name = "omrc0"
driver = "loopback"
planes = 3
seed = 7
max_qps = 2
[device.args]
link_delay_ns = 500
[device.qp]
path_policy = "spray"
evs = 12
backup_evs = 3
mtu = 1024
mpr = 2
[device.qp.cc]
algorithm = "fixed"
fixed_window_bytes = 65536
)");
    const DeviceConfig& cfg = f.devices.at(0);
    int err = -1;
    auto dev = Device::open(cfg.driver, cfg.options, &err);
    REQUIRE(err == 0);
    REQUIRE(dev != nullptr);
    CHECK(dev->driver_name() == "loopback");
    CHECK(dev->planes() == 3);
    // A transfer between two QPs of the device with the configuration's QP
    // attributes; max_qps = 2 is what the device allows.
    test::TransferSpec spec;
    spec.bytes = 256u << 10;
    spec.msg_bytes = 16u << 10;
    spec.qp.path_policy = cfg.qp.path_policy;
    spec.qp.evs = cfg.qp.evs;
    spec.qp.backup_evs = cfg.qp.backup_evs;
    spec.qp.mtu_bytes = cfg.qp.mtu_bytes;
    spec.qp.mpr = cfg.qp.mpr;
    spec.qp.cc = cfg.qp.cc;
    spec.timeout = std::chrono::milliseconds(20'000);
    // The device's view of the sending QP while the transfer runs.
    nlohmann::json sender;
    test::TransferHooks hooks;
    hooks.on_send_completion = [&](const Wc& wc, std::size_t) {
        if (!sender.is_null()) return;
        const nlohmann::json doc = nlohmann::json::parse(dev->stats_json());
        for (const auto& q : doc["qps"])
            if (q["qpn"] == wc.qp_num) sender = q;
    };
    const test::TransferResult r = test::transfer(*dev, *dev, spec, hooks);
    INFO("setup: " << r.setup_step << " (" << r.setup_error << ")");
    REQUIRE(r.setup_error == 0);
    CHECK_FALSE(r.timed_out);
    CHECK(r.completions == r.messages);
    CHECK(r.errors == 0);
    CHECK(r.exact);
    REQUIRE_FALSE(sender.is_null());
    INFO(sender.dump());
    CHECK(sender["paths"]["policy"] == "spray");
    CHECK(sender["paths"]["evs"].size() == 12);
    CHECK(sender["paths"]["backups"] == 3);
    CHECK(sender["cc"] == "fixed");
    CHECK(sender["cwnd_bytes"] == 65536);
    // A third QP is over max_qps.
    auto pd = dev->alloc_pd();
    auto cq = dev->create_cq(4);
    QpInitAttr init;
    init.send_cq = init.recv_cq = cq.get();
    std::vector<std::unique_ptr<Qp>> qps;
    for (int i = 0; i < 2; ++i) {
        auto q = pd->create_qp(init, &err);
        REQUIRE(q != nullptr);
        qps.push_back(std::move(q));
    }
    CHECK(pd->create_qp(init, &err) == nullptr);
    CHECK(err == ENOMEM);
}
