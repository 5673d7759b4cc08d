// SPDX-License-Identifier: BSD-3-Clause
// The dpdk driver's telemetry commands (drivers/dpdk/telemetry.hpp).
//
// [dpdk]: the plain parts (shaping JSON to rte_tel_data's rules, parameters,
// the commands with no device open, the telemetry argument) need no EAL.
// [dpdk_telemetry] (ctest entry dpdk_telemetry, a process of its own: the
// EAL, telemetry on, is process-wide): two devices over net_memif run a
// transfer while another thread asks the EAL's telemetry socket, as
// dpdk-telemetry.py does; the owning thread keeps calling progress(), which
// answers. Then dpdk-telemetry.py itself, where it is installed.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <rte_eal.h>

#include "dpdk/dpdk_env.hpp"
#include "dpdk/memif_devices.hpp"
#include "drivers/dpdk/telemetry.hpp"
#include "omrc/dpdk.hpp"
#include "omrc/omrc.hpp"
#include "support/verbs_net.hpp"

using namespace omrc;
using namespace omrc::test;
namespace tel = omrc::dpdk::telemetry;
using Json = tel::Json;

TEST_CASE("telemetry: names and strings as rte_tel_data takes them", "[dpdk]") {
    CHECK(tel::tel_name("plane0.rx_frames") == "plane0_rx_frames");
    CHECK(tel::tel_name("a/b_C9") == "a/b_C9");
    CHECK(tel::tel_name("") == "_");
    CHECK(tel::tel_name(std::string(300, 'x')).size() == tel::kMaxString);
    CHECK(tel::tel_string("caf\xc3\xa9\n") == "caf???");
    const std::string long_text = tel::tel_string(std::string(500, 'y'));
    CHECK(long_text.size() == tel::kMaxString);
    CHECK(long_text.substr(long_text.size() - 3) == "...");
}

TEST_CASE("telemetry: scalars become u64, int or strings", "[dpdk]") {
    CHECK(tel::shape_scalar(Json(true)) == Json(std::int64_t{1}));
    CHECK(tel::shape_scalar(Json(true)).is_number_integer());
    CHECK_FALSE(tel::shape_scalar(Json(false)).is_number_unsigned());
    CHECK(tel::shape_scalar(Json(std::uint64_t{UINT64_MAX})).get<std::uint64_t>() == UINT64_MAX);
    CHECK(tel::shape_scalar(Json(std::int64_t{7})).is_number_unsigned());
    CHECK(tel::shape_scalar(Json(std::int64_t{-7})) == Json(std::int64_t{-7}));
    CHECK(tel::shape_scalar(Json(std::int64_t{-5'000'000'000})) == Json("-5000000000"));
    CHECK(tel::shape_scalar(Json(2.5)) == Json("2.5"));
    CHECK(tel::shape_scalar(Json(nullptr)).is_null());
}

TEST_CASE("telemetry: one level of containers, deeper levels as text", "[dpdk]") {
    std::size_t omitted = 0;
    const Json obj = tel::shape_container(Json::parse(R"({"a.b": 1, "deep": {"x": [1, 2]}, "none": null, "s": "t"})"),
                                          omitted);
    CHECK(obj == Json::parse(R"({"a_b": 1, "deep": "{\"x\":[1,2]}", "s": "t"})"));
    CHECK(tel::shape_container(Json::parse("[1, 2, 3]"), omitted) == Json::parse("[1, 2, 3]"));
    const Json ints = tel::shape_container(Json::parse("[true, 3, -1]"), omitted);
    CHECK(ints == Json::parse("[1, 3, -1]"));
    for (const Json& e : ints) CHECK_FALSE(e.is_number_unsigned());  // one int array, not u64
    CHECK(tel::shape_container(Json::parse(R"([1, "x", {"k": 1}, null])"), omitted) ==
          Json::parse(R"(["1", "x", "{\"k\":1}", "null"])"));
    CHECK(omitted == 0);

    Json big = Json::array();
    for (int i = 0; i < 600; ++i) big.push_back(i);
    CHECK(tel::shape_container(big, omitted).size() == tel::kMaxArrayEntries);
    CHECK(omitted == 600 - tel::kMaxArrayEntries);
    Json wide = Json::object();
    for (int i = 0; i < 300; ++i) wide["k" + std::to_string(i)] = i;
    omitted = 0;
    CHECK(tel::shape_container(wide, omitted).size() == tel::kMaxDictEntries);
    CHECK(omitted == 300 - tel::kMaxDictEntries);
}

TEST_CASE("telemetry: a reply stays within the output limit and says what it left out", "[dpdk]") {
    tel::TelDict d;
    const Json ev = Json::parse(R"({"slot": 1, "ev": 123456, "state": "active", "sent": 99999, "acked": 99999})");
    std::size_t added = 0;
    for (int i = 0; i < 400; ++i) added += d.add("slot" + std::to_string(i), ev) ? 1 : 0;
    CHECK(added < 400);
    CHECK(d.omitted() == 400 - added);
    const Json out = std::move(d).finish();
    CHECK(out["truncated"] == 400 - added);
    CHECK(out.size() <= tel::kMaxDictEntries);
    CHECK(out.dump().size() <= tel::kReplyBudget);

    tel::TelDict paged;
    paged.reserve(100, 2);
    while (paged.try_add("x" + std::to_string(paged.bytes()), ev)) {
    }
    CHECK(paged.omitted() == 0);  // try_add: a page boundary, not a loss
    paged.release();
    CHECK(paged.add("next", 5));
    CHECK(std::move(paged).finish().dump().size() <= tel::kReplyBudget);
}

TEST_CASE("telemetry: parameters, positional or named, and every way to get them wrong", "[dpdk]") {
    const tel::Param spec[] = {{"qpn", true, UINT32_MAX}, {"dev", false, 100}, {"from", false, UINT32_MAX}};
    std::optional<std::uint64_t> out[3];
    std::string error;
    REQUIRE(tel::parse_params("17", spec, out, error));
    CHECK(out[0] == 17u);
    CHECK_FALSE(out[1].has_value());
    REQUIRE(tel::parse_params(" 17 , 1 ,\t40\n", spec, out, error));
    CHECK((out[0] == 17u && out[1] == 1u && out[2] == 40u));
    REQUIRE(tel::parse_params("from=3,qpn=9", spec, out, error));
    CHECK((out[0] == 9u && !out[1] && out[2] == 3u));
    REQUIRE(tel::parse_params("dev=2,9", spec, out, error));
    CHECK((out[0] == 9u && out[1] == 2u));
    for (const char* bad : {"", "x", "-1", "1,", ",1", "1,,2", "1,2,3,4", "dev=1", "qpn=1,qpn=2", "colour=1", "qpn=",
                            "1,101", "99999999999999999999999", "1;2", "0x10"}) {
        INFO(bad);
        error.clear();
        CHECK_FALSE(tel::parse_params(bad, spec, out, error));
        CHECK_FALSE(error.empty());
    }
    const std::span<const tel::Param> none;
    const std::span<std::optional<std::uint64_t>> nothing;
    CHECK_FALSE(tel::parse_params("1", none, nothing, error));
    CHECK(tel::parse_params("", none, nothing, error));
}

TEST_CASE("telemetry: the commands with no device open", "[dpdk]") {
    for (const tel::CommandInfo& c : tel::commands()) {
        CHECK(c.help.size() < 128);  // rte_telemetry_register_cmd refuses longer
        CHECK(c.name.substr(0, 6) == "/omrc/");
    }
    const Json devices = tel::reply("/omrc/devices", "");
    CHECK(devices["count"] == 0);
    CHECK(devices.size() == 1);
    for (const char* cmd : {"/omrc/planes", "/omrc/engine", "/omrc/qps", "/omrc/driver", "/omrc/device"}) {
        INFO(cmd);
        CHECK(tel::reply(cmd, "").contains("error"));
    }
    CHECK(tel::reply("/omrc/qp", "5").contains("error"));
    CHECK(tel::reply("/omrc/paths", "5,0,0").contains("error"));
    const Json missing = tel::reply("/omrc/qp", "");
    CHECK(missing.contains("error"));
    CHECK(missing.contains("usage"));
    CHECK(tel::reply("/omrc/devices", "1").contains("error"));
    CHECK(tel::reply("/omrc/nothing", "").contains("error"));
}

TEST_CASE("telemetry: the telemetry argument", "[dpdk]") {
    REQUIRE(dpdk::register_driver() == 0);
    DeviceOptions o;
    o.args["eal"] = dpdk_eal_args();
    o.args["telemetry"] = "yes";
    int err = 0;
    CHECK(Device::open("dpdk", o, &err) == nullptr);
    CHECK(err == EINVAL);
    // Asked for, and refused by the EAL arguments: a contradiction, refused
    // before the EAL comes up.
    o.args["telemetry"] = "1";
    o.args["eal"] = dpdk_eal_args() + " --no-telemetry";
    CHECK(Device::open("dpdk", o, &err) == nullptr);
    CHECK(err == EINVAL);
}

namespace {

/// A client of the EAL's telemetry socket, speaking as dpdk-telemetry.py
/// does: one command per message, one JSON reply per message.
class TelClient {
public:
    explicit TelClient(const std::string& path) {
        fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd_ < 0) return;
        sockaddr_un sun{};
        sun.sun_family = AF_UNIX;
        if (path.size() >= sizeof(sun.sun_path)) return;
        std::memcpy(sun.sun_path, path.c_str(), path.size() + 1);
        if (::connect(fd_, reinterpret_cast<const sockaddr*>(&sun), sizeof(sun)) != 0) return;
        timeval tv{};
        tv.tv_sec = 60;  // generous: two shared cores
        (void)::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        greeting_ = receive();
    }
    ~TelClient() {
        if (fd_ >= 0) ::close(fd_);
    }
    TelClient(const TelClient&) = delete;
    TelClient& operator=(const TelClient&) = delete;

    [[nodiscard]] const std::string& greeting() const { return greeting_; }

    /// The raw reply to `cmd` ("" when the socket failed).
    std::string ask(const std::string& cmd) {
        if (::send(fd_, cmd.data(), cmd.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(cmd.size())) return {};
        return receive();
    }

private:
    std::string receive() {
        std::string buf(64 * 1024, '\0');
        const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
        if (n <= 0) return {};
        buf.resize(static_cast<std::size_t>(n));
        return buf;
    }

    int fd_ = -1;
    std::string greeting_;
};

/// The value of a reply {"<cmd>": value}; null when it is not one.
nlohmann::json value_of(const std::string& raw, const std::string& cmd) {
    const nlohmann::json j = nlohmann::json::parse(raw, nullptr, false);
    if (!j.is_object() || !j.contains(cmd)) return nullptr;
    return j[cmd];
}

std::uint64_t data_sent(const nlohmann::json& planes) {
    std::uint64_t sum = 0;
    for (std::uint32_t p = 0; p < kMemifPlanes; ++p) {
        const std::string k = "plane" + std::to_string(p);
        if (planes.is_object() && planes.contains(k) && planes[k].contains("data_sent"))
            sum += planes[k]["data_sent"].get<std::uint64_t>();
    }
    return sum;
}

/// What the client thread saw; the test's thread checks it (Catch2's
/// assertions are for one thread).
struct Session {
    std::string failure;  ///< the client could not go on ("" when it went through)
    std::string greeting;
    std::vector<std::pair<std::string, std::string>> replies;  ///< command, raw reply, in order
    std::string planes;                                       ///< the first /omrc/planes reply with data sent
    std::uint32_t qpn = 0;
    std::vector<std::string> pages;  ///< /omrc/paths replies, page by page

    [[nodiscard]] std::string reply(const std::string& cmd) const {
        for (const auto& [c, r] : replies)
            if (c == cmd) return r;
        return {};
    }
};

void run_session(const std::string& path, Session& s) {
    TelClient c(path);
    s.greeting = c.greeting();
    if (s.greeting.empty()) {
        s.failure = "no greeting from " + path;
        return;
    }
    auto ask = [&](const std::string& cmd) {
        std::string r = c.ask(cmd);
        s.replies.emplace_back(cmd, r);
        return r;
    };
    // The sender has had a completion: its planes show data sent as soon as
    // a snapshot is answered (asked again while the owning thread is slow).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (s.planes.empty() && std::chrono::steady_clock::now() < deadline) {
        const std::string r = ask("/omrc/planes");
        if (r.empty()) {
            s.failure = "the socket closed on /omrc/planes";
            return;
        }
        if (data_sent(value_of(r, "/omrc/planes")) > 0) s.planes = r;
    }
    if (s.planes.empty()) {
        s.failure = "no /omrc/planes reply with data sent in 60 s";
        return;
    }
    ask("/omrc/devices");
    const nlohmann::json qps = value_of(ask("/omrc/qps"), "/omrc/qps");
    if (!qps.is_object() || !qps.contains("qpns") || qps["qpns"].empty()) {
        s.failure = "no QP in /omrc/qps";
        return;
    }
    s.qpn = qps["qpns"][0].get<std::uint32_t>();
    const std::string q = std::to_string(s.qpn);
    ask("/omrc/qp," + q);
    ask("/omrc/engine");
    ask("/omrc/driver");
    ask("/omrc/device");
    ask("/omrc/planes,1");
    for (std::uint64_t from = 0;;) {
        const std::string r = ask("/omrc/paths," + q + ",0," + std::to_string(from));
        s.pages.push_back(r);
        const nlohmann::json v = value_of(r, "/omrc/paths");
        if (!v.is_object() || !v.contains("next") || s.pages.size() > 64) break;
        from = v["next"].get<std::uint64_t>();
    }
    for (const std::string& bad : {std::string("/omrc/qp"), std::string("/omrc/qp,abc"), std::string("/omrc/qp,1,2,3"),
                                   std::string("/omrc/qp,99999999"), std::string("/omrc/planes,7"),
                                   std::string("/omrc/planes,dev=x"), std::string("/omrc/paths,,"),
                                   std::string("/omrc/devices,1"), "/omrc/qp," + std::string(900, '9')})
        ask(bad);
    ask("/omrc/qps");  // the connection still answers after all of them
}

/// Where Debian's dpdk-dev package (or a DPDK build) puts dpdk-telemetry.py;
/// $OMRC_DPDK_TELEMETRY_PY first. "" when none is there.
std::string telemetry_script() {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("OMRC_DPDK_TELEMETRY_PY"); env != nullptr) candidates.emplace_back(env);
    for (const char* p : {"/usr/bin/dpdk-telemetry.py", "/usr/local/bin/dpdk-telemetry.py",
                          "/usr/share/dpdk/usertools/dpdk-telemetry.py"})
        candidates.emplace_back(p);
    for (const std::string& c : candidates)
        if (!c.empty() && std::filesystem::exists(c)) return c;
    return {};
}

}  // namespace

TEST_CASE("telemetry: /omrc commands over the EAL's socket while a transfer runs", "[dpdk_telemetry]") {
    // The first device brings the EAL up with telemetry on (the EAL is the
    // process's; this test case runs alone in its process).
    auto a = open_dpdk(memif_ports(0, 40), 51, {{"vdevs", memif_vdevs(0, 40)}, {"telemetry", "1"}});
    auto b = open_dpdk(memif_ports(1, 40), 52, {{"vdevs", memif_vdevs(1, 40)}, {"telemetry", "1"}});
    const std::string path = tel::socket_path();
    INFO("telemetry socket " << path);
    REQUIRE(std::filesystem::exists(path));
    REQUIRE(wait_links(*a, *b));

    TransferSpec spec;
    spec.bytes = 32u << 20;
    spec.msg_bytes = 1u << 20;
    spec.depth = 8;
    spec.seed = 8;
    spec.qp.timeout_ns = 2'000'000'000;
    spec.qp.mtu_bytes = 4096;
    spec.qp.path_policy = PathPolicy::spray;  // the default EV count (128 and backups): /omrc/paths pages
    spec.timeout = std::chrono::seconds(120);
    WriteTransfer t(*a, *b, spec);
    REQUIRE(t.result().setup_error == 0);

    Session s;
    std::atomic<bool> client_done{false};
    std::thread client;
    auto start_client = [&] {
        client = std::thread([&] {
            run_session(path, s);
            client_done = true;
        });
    };
    TransferHooks hooks;
    hooks.on_send_completion = [&](const Wc&, std::size_t done) {
        if (done == 1) start_client();
    };
    const TransferResult r = t.run(hooks);
    if (!client.joinable()) start_client();  // no completion at all: check_transfer says why
    // The owning thread keeps answering: every reply waits for its next
    // progress() pass.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
    while (!client_done && std::chrono::steady_clock::now() < deadline) {
        if (a->progress() + b->progress() == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    // A client stuck past the deadline still ends: the socket's receive timeout.
    while (!client_done) {
        a->progress();
        b->progress();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    client.join();
    check_transfer(r);
    INFO("client: " << s.failure);
    REQUIRE(s.failure.empty());

    const nlohmann::json greeting = nlohmann::json::parse(s.greeting);
    CHECK(greeting["max_output_len"] == tel::kMaxOutput);
    for (const auto& [cmd, raw] : s.replies) {
        INFO(cmd << " -> " << raw);
        CHECK(raw.size() <= tel::kMaxOutput);
        CHECK(nlohmann::json::parse(raw, nullptr, false).is_object());
    }

    // /omrc/planes: device 0 (the sender), counters no larger than the
    // device's own stats now (they only grow).
    const nlohmann::json planes = value_of(s.planes, "/omrc/planes");
    INFO("planes: " << planes.dump());
    const nlohmann::json own = nlohmann::json::parse(a->stats_json());
    CHECK(planes["dev"] == 0);
    CHECK(planes.contains("snapshot"));
    CHECK(planes.contains("age_ms"));
    CHECK(data_sent(planes) > 0);
    for (std::uint32_t p = 0; p < kMemifPlanes; ++p) {
        const nlohmann::json& mine = planes["plane" + std::to_string(p)];
        const nlohmann::json& theirs = own["planes"][p];
        CHECK(mine["plane"] == p);
        CHECK(mine["link_up"] == 1);
        for (const char* k : {"data_sent", "data_bytes_sent", "acked", "lost"})
            CHECK(mine[k].get<std::uint64_t>() <= theirs[k].get<std::uint64_t>());
    }
    const nlohmann::json planes_b = value_of(s.reply("/omrc/planes,1"), "/omrc/planes");
    CHECK(planes_b["dev"] == 1);
    CHECK(planes_b.contains("plane1"));

    const nlohmann::json devices = value_of(s.reply("/omrc/devices"), "/omrc/devices");
    CHECK(devices["count"] == 2);
    CHECK(devices["dev0"]["driver"] == "dpdk");
    CHECK(devices["dev0"]["planes"] == kMemifPlanes);
    CHECK(devices["dev0"]["ports"] == memif_ports(0, 40));
    CHECK(devices["dev1"]["index"] == 1);

    const nlohmann::json qps = value_of(s.reply("/omrc/qps"), "/omrc/qps");
    CHECK(qps["count"] == 1);
    CHECK(qps["qpns"] == nlohmann::json::array({t.sender_qp()->qp_num()}));

    const nlohmann::json qp = value_of(s.reply("/omrc/qp," + std::to_string(s.qpn)), "/omrc/qp");
    INFO("qp: " << qp.dump());
    CHECK(qp["qpn"] == s.qpn);
    CHECK(qp["stats"]["data_pkts_sent"].get<std::uint64_t>() > 0);
    CHECK(qp["plane0"]["data_sent"].get<std::uint64_t>() + qp["plane1"]["data_sent"].get<std::uint64_t>() > 0);
    CHECK(qp["paths_policy"] == "spray");
    CHECK(qp.contains("group0"));

    const nlohmann::json engine = value_of(s.reply("/omrc/engine"), "/omrc/engine");
    CHECK(engine["tx_frames"].get<std::uint64_t>() > 0);
    CHECK(engine["rx_drops"].is_object());
    const nlohmann::json drv = value_of(s.reply("/omrc/driver"), "/omrc/driver");
    CHECK(drv["counters"]["plane0_tx_frames"].get<std::uint64_t>() > 0);  // '.' is not a telemetry name character
    CHECK(drv["link_up"] == nlohmann::json::array({1, 1}));
    const nlohmann::json dev = value_of(s.reply("/omrc/device"), "/omrc/device");
    CHECK(dev["progress"]["passes"].get<std::uint64_t>() > 0);

    // /omrc/paths: 128+ EVs do not fit one 16 KiB reply; the pages cover
    // every slot once.
    const std::size_t slots = own["qps"][0]["paths"]["evs"].size();
    REQUIRE(slots >= 128);
    CHECK(s.pages.size() >= 2);
    std::set<std::uint64_t> seen;
    std::size_t listed = 0;
    for (const std::string& raw : s.pages) {
        const nlohmann::json page = value_of(raw, "/omrc/paths");
        INFO(raw);
        REQUIRE(page.is_object());
        CHECK(page["evs_total"] == slots);
        CHECK_FALSE(page.contains("truncated"));
        for (const auto& [k, v] : page.items()) {
            if (k.rfind("slot", 0) != 0) continue;
            ++listed;
            seen.insert(v["slot"].get<std::uint64_t>());
            CHECK(v.contains("state"));
            CHECK(v.contains("sent"));
        }
    }
    CHECK(listed == slots);
    CHECK(seen.size() == slots);

    // Bad parameters: an error each, and the server goes on answering.
    for (const std::string& bad : {std::string("/omrc/qp"), std::string("/omrc/qp,abc"), std::string("/omrc/qp,1,2,3"),
                                   std::string("/omrc/qp,99999999"), std::string("/omrc/planes,7"),
                                   std::string("/omrc/planes,dev=x"), std::string("/omrc/paths,,"),
                                   std::string("/omrc/devices,1"), "/omrc/qp," + std::string(900, '9')}) {
        const std::string cmd = bad.substr(0, bad.find(','));
        const nlohmann::json v = value_of(s.reply(bad), cmd);
        INFO(bad << " -> " << s.reply(bad));
        CHECK(v.contains("error"));
    }
    CHECK(s.replies.back().first == "/omrc/qps");
    CHECK(value_of(s.replies.back().second, "/omrc/qps")["count"] == 1);

    // dpdk-telemetry.py, DPDK's own client, where it is installed.
    const std::string script = telemetry_script();
    if (script.empty() || std::system("command -v python3 >/dev/null 2>&1") != 0) {
        WARN("skipped: dpdk-telemetry.py (Debian package dpdk, or $OMRC_DPDK_TELEMETRY_PY) or python3 not found");
        return;
    }
    const std::string prefix = std::filesystem::path(rte_eal_get_runtime_dir()).filename().string();
    const std::string input = "/tmp/omrc-telemetry-py-" + std::to_string(::getpid());
    std::ofstream(input) << "/omrc/planes\n/omrc/qps\n";
    const std::string cmd = "python3 '" + script + "' -f '" + prefix + "' < '" + input + "' 2>&1";
    std::string output;
    std::atomic<bool> py_done{false};
    std::thread py([&] {
        if (FILE* f = ::popen(cmd.c_str(), "r")) {
            char buf[4096];
            while (std::fgets(buf, sizeof(buf), f) != nullptr) output += buf;
            (void)::pclose(f);
        }
        py_done = true;
    });
    while (!py_done) {
        if (a->progress() + b->progress() == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    py.join();
    std::filesystem::remove(input);
    INFO(cmd << "\n" << output);
    nlohmann::json py_planes, py_qps;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        if (const nlohmann::json v = value_of(line, "/omrc/planes"); !v.is_null()) py_planes = v;
        if (const nlohmann::json v = value_of(line, "/omrc/qps"); !v.is_null()) py_qps = v;
    }
    CHECK(data_sent(py_planes) > 0);
    CHECK(py_qps["count"] == 1);
}
