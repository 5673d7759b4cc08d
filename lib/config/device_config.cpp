// SPDX-License-Identifier: BSD-3-Clause
// Device configuration files (include/omrc/config.hpp, docs/CONFIG.md): TOML
// text → the devices it names, each with its driver, DeviceOptions and the
// QP attributes front ends apply. Every key is checked here (type, range,
// known name); the driver arguments are only converted to text (the driver
// checks them when the device opens).
// This library is compiled with hidden visibility (toml_reader.hpp); the
// public API keeps the default, so libomrc.so exports it.
#pragma GCC visibility push(default)
#include "omrc/config.hpp"
#include "omrc/verbs.hpp"
#pragma GCC visibility pop

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <map>
#include <new>
#include <vector>

#include "routing/fabric.hpp"
#include "security/psp_keys.hpp"
#include "toml_reader.hpp"

namespace omrc {

const DeviceConfig* ConfigFile::find(std::string_view name) const noexcept {
    for (const DeviceConfig& d : devices)
        if (d.name == name) return &d;
    return nullptr;
}

namespace {

using config::Errors;
using config::Key;
using config::read_bool;
using config::read_choice;
using config::read_positive;
using config::read_string;
using config::read_table;
using config::read_uint;

constexpr std::uint64_t kMaxTimerNs = 3'600'000'000'000;  ///< one hour: a bound that catches unit slips
constexpr std::uint64_t kNoMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t kMaxFileBytes = 1u << 20;
constexpr std::size_t kMaxNameChars = 63;

constexpr std::array<std::string_view, 2> kFrameModes{"plain", "srv6"};
constexpr std::array<std::string_view, 3> kWorkerThreads{"auto", "none", "own"};

bool hex_digits(std::string_view s, std::uint32_t& out) {
    if (s.empty() || s.size() > 8) return false;
    std::uint32_t v = 0;
    for (const char c : s) {
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return false;
        v = v << 4 | static_cast<std::uint32_t>(d);
    }
    out = v;
    return true;
}

/// "0xFCBB0000" or "fcbb:0000" (the first 32 bits of an IPv6 prefix).
bool parse_usid_block(std::string_view s, std::uint32_t& out) {
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) return hex_digits(s.substr(2), out);
    const std::size_t colon = s.find(':');
    if (colon == std::string_view::npos) return false;
    const std::string_view hi = s.substr(0, colon), lo = s.substr(colon + 1);
    std::uint32_t h = 0, l = 0;
    if (hi.size() > 4 || lo.size() > 4 || !hex_digits(hi, h) || !hex_digits(lo, l)) return false;
    out = h << 16 | l;
    return true;
}

bool valid_name(std::string_view s) {
    if (s.empty() || s.size() > kMaxNameChars) return false;
    for (const char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.'))
            return false;
    return true;
}

/// How an array value of a driver argument is joined: the separator the
/// driver splits that argument at (docs/DRIVERS.md).
char separator_of(std::string_view key) {
    if (key == "eal") return ' ';
    if (key == "vdevs") return ';';
    return ',';
}

bool arg_text(Errors& e, const std::string& path, std::string_view key, const toml::node& n, std::string& out) {
    if (const auto* s = n.as_string()) {
        out = s->get();
    } else if (const auto* i = n.as_integer()) {
        out = std::to_string(i->get());
    } else if (const auto* b = n.as_boolean()) {
        out = b->get() ? "1" : "0";
    } else if (const auto* a = n.as_array()) {
        out.clear();
        std::size_t index = 0;
        for (const toml::node& item : *a) {
            if (index++ != 0) out += separator_of(key);
            if (const auto* is = item.as_string()) {
                out += is->get();
            } else if (const auto* ii = item.as_integer()) {
                out += std::to_string(ii->get());
            } else {
                return e.fail(fmt::format("{}[{}]", path, index - 1), &item,
                              fmt::format("must be a string or an integer, not {}", config::type_name(item)));
            }
        }
    } else {
        return e.fail(path, &n, fmt::format("must be a string, an integer, a boolean or an array of strings, not {}",
                                            config::type_name(n)));
    }
    return true;
}

bool read_args(Errors& e, const std::string& path, const toml::node& n, DeviceOptions& o) {
    const toml::table* t = read_table(e, path, n);
    if (t == nullptr) return false;
    for (const auto& [k, v] : *t) {
        std::string text;
        if (!arg_text(e, config::join_path(path, k.str()), k.str(), v, text)) return false;
        o.args[std::string(k.str())] = std::move(text);
    }
    return true;
}

bool read_fabric(Errors& e, const std::string& path, const toml::node& n, FabricLayout& f) {
    const toml::table* t = read_table(e, path, n);
    if (t == nullptr) return false;
    const Key keys[] = {
        {"usid_block",
         [&](const toml::node& v, const std::string& p) {
             if (const auto* s = v.as_string()) {
                 std::uint32_t b = 0;
                 if (!parse_usid_block(s->get(), b))
                     return e.fail(p, &v, fmt::format("\"{}\" is not a uSID block (\"fcbb:0000\" or \"0xfcbb0000\")",
                                                      s->get()));
                 if ((b & 0xFFFF0000u) == 0) return e.fail(p, &v, "the top 16 bits of the uSID block must not be 0");
                 f.usid_block = b;
                 return true;
             }
             if (v.is_integer()) return read_uint(e, p, v, 0x10000, kU32, f.usid_block);
             return e.fail(p, &v, fmt::format("must be an integer or a string such as \"fcbb:0000\", not {}",
                                              config::type_name(v)));
         }},
        {"planes", [&](const toml::node& v, const std::string& p) { return read_uint(e, p, v, 1, kMaxPlanes, f.planes); }},
        {"t0_per_plane",
         [&](const toml::node& v, const std::string& p) {
             return read_uint(e, p, v, 1, routing::kMaxUsidIndex, f.t0_per_plane);
         }},
        {"t1_per_plane",
         [&](const toml::node& v, const std::string& p) {
             return read_uint(e, p, v, 1, routing::kMaxUsidIndex, f.t1_per_plane);
         }},
        {"hosts_per_t0",
         [&](const toml::node& v, const std::string& p) {
             return read_uint(e, p, v, 1, routing::kMaxUsidIndex, f.hosts_per_t0);
         }},
    };
    return config::read_keys(e, path, *t, keys);
}

bool read_cc(Errors& e, const std::string& path, const toml::node& n, CcConfig& cc) {
    const toml::table* t = read_table(e, path, n);
    if (t == nullptr) return false;
    // The algorithms and their keys are the library's registrations
    // (cc_algorithms()): nothing here names one.
    const std::vector<CcAlgorithmInfo> algorithms = cc_algorithms();
    std::vector<std::string_view> names;
    for (const CcAlgorithmInfo& a : algorithms) names.push_back(a.name);
    std::vector<Key> keys = {
        {"algorithm",
         [&](const toml::node& v, const std::string& p) {
             std::size_t i = 0;
             if (!read_choice(e, p, v, names, i)) return false;
             cc.algorithm = algorithms[i].algorithm;
             return true;
         }},
        {"base_rtt_ns",
         [&](const toml::node& v, const std::string& p) { return read_uint(e, p, v, 1, kMaxTimerNs, cc.base_rtt_ns); }},
        {"link_rate_gbps",
         [&](const toml::node& v, const std::string& p) {
             double g = 0;
             if (!read_positive(e, p, v, 1e6, g)) return false;
             cc.link_rate_bps = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(g * 1e9)));
             return true;
         }},
    };
    for (const CcAlgorithmInfo& a : algorithms)
        for (const CcParameterInfo& k : a.parameters)
            keys.push_back({k.key, [&e, &k, &cc](const toml::node& v, const std::string& p) {
                                double value = 0;
                                if (k.integer) {
                                    std::uint64_t u = 0;
                                    if (!read_uint(e, p, v, static_cast<std::uint64_t>(k.min),
                                                   static_cast<std::uint64_t>(k.max), u))
                                        return false;
                                    value = static_cast<double>(u);
                                } else if (!read_positive(e, p, v, k.max, value)) {
                                    return false;
                                }
                                std::string why;
                                if (set_cc_parameter(cc, k.key, value, &why) != 0) return e.fail(p, &v, why);
                                return true;
                            }});
    return config::read_keys(e, path, *t, keys);
}

/// 64 hex digits: a master key given in the file, or read from a file of its own.
bool read_key_text(Errors& e, const std::string& path, const toml::node& v, const std::string& text,
                   std::optional<std::array<std::uint8_t, 32>>& key) {
    std::string hex;
    for (const char c : text)
        if (!std::isspace(static_cast<unsigned char>(c))) hex.push_back(c);
    security::MasterKey k{};
    if (!security::parse_master_key(hex, k))
        return e.fail(path, &v, fmt::format("a master key is 64 hex digits (32 bytes), got {} characters", hex.size()));
    key = k;
    return true;
}

bool read_security(Errors& e, const std::string& path, const toml::node& n, DeviceOptions::Security& s) {
    const toml::table* t = read_table(e, path, n);
    if (t == nullptr) return false;
    bool given[2] = {false, false};  // a key may come from the table or its file, not both
    auto key = [&](std::string_view name, int index, bool from_file) {
        return Key{name, [&e, &s, &given, index, from_file](const toml::node& v, const std::string& p) {
                       if (given[index])
                           return e.fail(p, &v, fmt::format("master key {} is given twice (the key and its file)", index));
                       given[index] = true;
                       std::string text;
                       if (!read_string(e, p, v, text)) return false;
                       if (from_file) {
                           std::ifstream in(text);
                           if (!in) return e.fail(p, &v, fmt::format("cannot read the key file \"{}\"", text));
                           text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
                       }
                       return read_key_text(e, p, v, text, s.master_key[index]);
                   }};
    };
    const Key keys[] = {
        key("master_key", 0, false),
        key("master_key_file", 0, true),
        key("master_key_1", 1, false),
        key("master_key_1_file", 1, true),
        {"key_select", [&](const toml::node& v, const std::string& p) { return read_uint(e, p, v, 0, 1, s.key_select); }},
        {"replay_window",
         [&](const toml::node& v, const std::string& p) {
             if (!read_uint(e, p, v, 64, 65536, s.replay_window)) return false;
             if ((s.replay_window & (s.replay_window - 1)) != 0)
                 return e.fail(p, &v, fmt::format("must be a power of two, got {}", s.replay_window));
             return true;
         }},
        {"encryption",
         [&](const toml::node& v, const std::string& p) {
             static constexpr std::string_view kNames[] = {"off", "aes-gcm-128", "aes-gcm-256"};
             std::size_t i = 0;
             if (!read_choice(e, p, v, kNames, i)) return false;
             s.encryption = i == 0 ? Encryption::off : i == 1 ? Encryption::aes_gcm_128 : Encryption::aes_gcm_256;
             return true;
         }},
    };
    return config::read_keys(e, path, *t, keys);
}

bool read_qp(Errors& e, const std::string& path, const toml::node& n, QpDefaults& q) {
    const toml::table* t = read_table(e, path, n);
    if (t == nullptr) return false;
    const std::vector<PathPolicyInfo> policies = path_policies();  // the library's registry
    std::vector<std::string_view> policy_names;
    for (const PathPolicyInfo& p : policies) policy_names.push_back(p.name);
    const Key keys[] = {
        {"path_policy",
         [&](const toml::node& v, const std::string& p) {
             std::size_t i = 0;
             if (!read_choice(e, p, v, policy_names, i)) return false;
             q.path_policy = policies[i].policy;
             return true;
         }},
        {"evs", [&](const toml::node& v, const std::string& p) { return read_uint(e, p, v, 1, 4096, q.evs); }},
        {"backup_evs", [&](const toml::node& v, const std::string& p) { return read_uint(e, p, v, 0, 4096, q.backup_evs); }},
        {"mtu",
         [&](const toml::node& v, const std::string& p) {
             std::uint32_t m = 0;
             if (!read_uint(e, p, v, 0, 4096, m)) return false;
             if (m != 0 && (m < 64 || m % 64 != 0))
                 return e.fail(p, &v, fmt::format("must be 0 or 64..4096 in steps of 64, got {}", m));
             q.mtu_bytes = m;
             return true;
         }},
        {"mpr",
         [&](const toml::node& v, const std::string& p) {
             std::uint32_t m = 0;
             if (!read_uint(e, p, v, 1, 32, m)) return false;
             if ((m & (m - 1)) != 0) return e.fail(p, &v, fmt::format("must be 1, 2, 4, 8, 16 or 32, got {}", m));
             q.mpr = m;
             return true;
         }},
        {"timeout_ns",
         [&](const toml::node& v, const std::string& p) { return read_uint(e, p, v, 0, kMaxTimerNs, q.timeout_ns); }},
        {"retry_cnt", [&](const toml::node& v, const std::string& p) { return read_uint(e, p, v, 0, 7, q.retry_cnt); }},
        {"cc", [&](const toml::node& v, const std::string& p) { return read_cc(e, p, v, q.cc); }},
    };
    return config::read_keys(e, path, *t, keys);
}

/// The keys of one [[device]] (or of [defaults]) onto `dc`, which holds the
/// built-in defaults or [defaults]' values. `name` is read by the caller.
bool read_device(Errors& e, const std::string& path, const toml::table& t, DeviceConfig& dc, bool is_defaults) {
    DeviceOptions& o = dc.options;
    auto number = [&](std::string_view name, auto& field, std::uint64_t min, std::uint64_t max) {
        return Key{name, [&e, &field, min, max](const toml::node& v, const std::string& p) {
                       return read_uint(e, p, v, min, max, field);
                   }};
    };
    auto flag = [&](std::string_view name, bool& field) {
        return Key{name, [&e, &field](const toml::node& v, const std::string& p) { return read_bool(e, p, v, field); }};
    };
    const Key keys[] = {
        {"name",
         [&](const toml::node& v, const std::string& p) {
             if (is_defaults) return e.fail(p, &v, "a device's own key: not allowed in [defaults]");
             return true;  // read (and checked) before the other keys
         }},
        {"driver",
         [&](const toml::node& v, const std::string& p) {
             // The drivers this program has registered (built in, or loaded
             // with their library): nothing here names one.
             const std::vector<std::string> drivers = Device::drivers();
             const std::vector<std::string_view> names(drivers.begin(), drivers.end());
             std::size_t i = 0;
             if (!read_choice(e, p, v, names, i)) return false;
             dc.driver = drivers[i];
             return true;
         }},
        number("planes", o.planes, 0, kMaxPlanes),
        {"frame_mode",
         [&](const toml::node& v, const std::string& p) {
             std::size_t i = 0;
             if (!read_choice(e, p, v, kFrameModes, i)) return false;
             o.frame_mode = i == 0 ? FrameMode::plain : FrameMode::srv6;
             return true;
         }},
        {"local_addr",
         [&](const toml::node& v, const std::string& p) {
             std::string s;
             if (!read_string(e, p, v, s)) return false;
             Ipv6Addr a{};
             if (::inet_pton(AF_INET6, s.c_str(), a.data()) != 1)
                 return e.fail(p, &v, fmt::format("\"{}\" is not an IPv6 address (such as \"fd00::1\")", s));
             o.local_addr = a;
             return true;
         }},
        number("local_host", o.local_host, 0, kU32),
        number("seed", o.seed, 0, kNoMax),
        flag("compute_icrc", o.compute_icrc),
        flag("verify_icrc", o.verify_icrc),
        number("ack_every_pkts", o.ack_every_pkts, 1, 64),
        number("ack_delay_ns", o.ack_delay_ns, 0, kMaxTimerNs),
        number("ev_timeout_ns", o.ev_timeout_ns, 1, kMaxTimerNs),
        number("min_ev_timeout_ns", o.min_ev_timeout_ns, 1, kMaxTimerNs),
        number("probe_interval_ns", o.probe_interval_ns, 1, kMaxTimerNs),
        number("probe_successes_to_restore", o.probe_successes_to_restore, 1, 1024),
        number("ev_track_depth", o.ev_track_depth, 1, 65536),
        number("path_alarm_ns", o.path_alarm_ns, 0, kMaxTimerNs),
        flag("peer_path_alarms", o.peer_path_alarms),
        number("stale_path_packets", o.stale_path_packets, 0, 255),
        number("port_status_repeat_ns", o.port_status_repeat_ns, 1, kMaxTimerNs),
        number("max_qps", o.max_qps, 1, 4096),
        number("rx_burst_frames", o.rx_burst_frames, 1, 1024),
        number("tx_burst_frames", o.tx_burst_frames, 1, 1024),
        number("workers", o.workers, 1, 16),
        {"worker_threads",
         [&](const toml::node& v, const std::string& p) {
             std::size_t i = 0;
             if (!read_choice(e, p, v, kWorkerThreads, i)) return false;
             o.worker_threads = i == 0 ? WorkerThreads::automatic : i == 1 ? WorkerThreads::none : WorkerThreads::own;
             return true;
         }},
        {"cpus",
         [&](const toml::node& v, const std::string& p) {
             const toml::array* a = v.as_array();
             if (a == nullptr) return e.fail(p, &v, "must be an array of CPU numbers, such as [2, 3]");
             o.cpus.clear();
             for (std::size_t i = 0; i < a->size(); ++i) {
                 std::uint32_t cpu = 0;
                 if (!read_uint(e, fmt::format("{}[{}]", p, i), *a->get(i), 0, 1023, cpu)) return false;
                 o.cpus.push_back(static_cast<int>(cpu));
             }
             return true;
         }},
        number("worker_spin_ns", o.worker_spin_ns, 0, kMaxTimerNs),
        number("worker_yield_ns", o.worker_yield_ns, 0, kMaxTimerNs),
        number("worker_sleep_ns", o.worker_sleep_ns, 0, kMaxTimerNs),
        {"args", [&](const toml::node& v, const std::string& p) { return read_args(e, p, v, o); }},
        {"fabric", [&](const toml::node& v, const std::string& p) { return read_fabric(e, p, v, o.fabric); }},
        {"qp", [&](const toml::node& v, const std::string& p) { return read_qp(e, p, v, dc.qp); }},
        {"security", [&](const toml::node& v, const std::string& p) { return read_security(e, p, v, o.security); }},
    };
    return config::read_keys(e, path, t, keys);
}

/// What only the whole device can check (after [defaults] and its own keys).
bool check_device(Errors& e, const std::string& path, const toml::table& t, const DeviceConfig& dc) {
    if (dc.driver.empty())
        return e.fail(path, t.source(), "missing key 'driver'", "give it in the device or in [defaults]");
    const DeviceOptions& o = dc.options;
    // The driver's arguments by the keys it registered: a misspelt key fails
    // here, where the file can point at it, not when the device opens.
    std::vector<std::string> arg_keys;
    if (Device::driver_arg_keys(dc.driver, &arg_keys) == 0) {
        for (const auto& [key, value] : o.args) {
            if (std::find(arg_keys.begin(), arg_keys.end(), key) != arg_keys.end()) continue;
            const toml::node* args = t.get("args");
            const toml::node* at = args != nullptr && args->is_table() ? args->as_table()->get(key) : nullptr;
            return e.fail(config::join_path(config::join_path(path, "args"), key),
                          at != nullptr ? at->source() : t.source(),
                          fmt::format("driver {} has no argument '{}'", dc.driver, key),
                          fmt::format("its arguments: {}", fmt::join(arg_keys, ", ")));
        }
    }
    if (!o.cpus.empty() && o.cpus.size() != o.workers) {
        const toml::node* at = t.get("cpus");
        return e.fail(config::join_path(path, "cpus"), at != nullptr ? at->source() : t.source(),
                      fmt::format("{} CPUs for {} workers", o.cpus.size(), o.workers),
                      "give one CPU per worker, or none (the NUMA node of the first port)");
    }
    if (o.frame_mode == FrameMode::srv6) {
        const routing::FabricDesc f{o.fabric.usid_block, o.fabric.planes, o.fabric.t0_per_plane,
                                    o.fabric.t1_per_plane, o.fabric.hosts_per_t0};
        if (o.local_host >= f.hosts()) {
            const toml::node* at = t.get("local_host");
            return e.fail(config::join_path(path, "local_host"), at != nullptr ? at->source() : t.source(),
                          fmt::format("{} is not a host of the fabric ({} hosts: t0_per_plane × hosts_per_t0)",
                                      o.local_host, f.hosts()));
        }
    }
    return true;
}

bool read_file(Errors& e, const toml::table& root, ConfigFile& out) {
    const toml::node* defaults_node = nullptr;
    const toml::node* devices_node = nullptr;
    const Key top[] = {
        {"defaults",
         [&](const toml::node& v, const std::string&) {
             defaults_node = &v;
             return true;
         }},
        {"device",
         [&](const toml::node& v, const std::string&) {
             devices_node = &v;
             return true;
         }},
    };
    if (!config::read_keys(e, "", root, top)) return false;

    DeviceConfig defaults;
    if (defaults_node != nullptr) {
        const toml::table* t = read_table(e, "defaults", *defaults_node);
        if (t == nullptr || !read_device(e, "defaults", *t, defaults, true)) return false;
    }
    if (devices_node == nullptr) return e.fail("", nullptr, "no device: add a [[device]] table with name and driver");
    const toml::array* list = devices_node->as_array();
    if (list != nullptr && list->empty())
        return e.fail("device", devices_node, "no device: add a [[device]] table with name and driver");
    if (list == nullptr || !list->is_array_of_tables())
        return e.fail("device", devices_node, "must be an array of tables: write [[device]], not [device]");

    std::map<std::string, std::uint32_t, std::less<>> lines;  // name → line of its first device
    std::size_t index = 0;
    for (const toml::node& item : *list) {
        const toml::table& t = *item.as_table();
        ++index;
        const std::string anonymous = fmt::format("device #{}", index);
        const toml::node* name_node = t.get("name");
        if (name_node == nullptr)
            return e.fail(anonymous, t.source(), "missing key 'name'", "every [[device]] names itself (\"omrc0\", ...)");
        std::string name;
        if (!read_string(e, anonymous + ".name", *name_node, name)) return false;
        if (!valid_name(name))
            return e.fail(anonymous + ".name", name_node,
                          fmt::format("\"{}\" is not a device name (1..{} letters, digits, '_', '-', '.')", name,
                                      kMaxNameChars));
        const std::string path = fmt::format("device '{}'", name);
        const std::uint32_t line = t.source().begin.line;
        if (const auto it = lines.find(name); it != lines.end())
            return e.fail(path, t.source(), fmt::format("duplicate name (the first device '{}' is at line {})", name,
                                                        it->second));
        lines.emplace(name, line);
        DeviceConfig dc = defaults;
        dc.name = name;
        if (!read_device(e, path, t, dc, false) || !check_device(e, path, t, dc)) return false;
        out.devices.push_back(std::move(dc));
    }
    return true;
}

void set_error(std::string* error, std::string what) {
    if (error != nullptr) *error = std::move(what);
}

}  // namespace

int parse_config(std::string_view text, std::string_view source_name, ConfigFile* out, std::string* error) {
    if (out == nullptr) {
        set_error(error, "parse_config: no ConfigFile to fill");
        return EINVAL;
    }
    try {
        toml::table root;
        try {
            root = toml::parse(text, source_name);
        } catch (const toml::parse_error& pe) {
            const toml::source_position at = pe.source().begin;
            set_error(error, fmt::format("{}:{}:{}: {}", source_name, at.line, at.column, pe.description()));
            return EINVAL;
        }
        Errors e(source_name);
        ConfigFile file;
        file.source = source_name;
        if (!read_file(e, root, file)) {
            set_error(error, e.message());
            return EINVAL;
        }
        *out = std::move(file);
        return 0;
    } catch (const std::bad_alloc&) {
        set_error(error, fmt::format("{}: out of memory", source_name));
        return ENOMEM;
    }
}

int load_config(const std::string& path, ConfigFile* out, std::string* error) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        set_error(error, fmt::format("{}: cannot open: {}", path, std::strerror(err)));
        return err == ENOENT || err == EACCES ? err : EIO;
    }
    std::string text;
    char buf[16384];
    int err = 0;
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            err = errno;
            break;
        }
        if (n == 0) break;
        if (text.size() + static_cast<std::size_t>(n) > kMaxFileBytes) {
            ::close(fd);
            set_error(error, fmt::format("{}: larger than {} KiB: not a configuration file", path, kMaxFileBytes >> 10));
            return EINVAL;
        }
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    if (err != 0) {
        set_error(error, fmt::format("{}: cannot read: {}", path, std::strerror(err)));
        return err == EACCES ? EACCES : EIO;
    }
    return parse_config(text, path, out, error);
}

}  // namespace omrc
