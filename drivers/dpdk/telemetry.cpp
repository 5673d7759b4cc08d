// SPDX-License-Identifier: BSD-3-Clause
#include "drivers/dpdk/telemetry.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <fmt/format.h>
#include <iterator>
#include <map>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_telemetry.h>

#include "driver/args.hpp"
#include "log/log.hpp"

namespace omrc::dpdk::telemetry {

// ---- Snapshot ----

void Snapshot::publish(std::string json) {
    auto doc = std::make_shared<const std::string>(std::move(json));
    {
        std::lock_guard lock(mutex_);
        json_.swap(doc);  // the previous document is freed below, outside the lock
        ++generation_;
        when_ = std::chrono::steady_clock::now();
        wanted_.store(false, std::memory_order_relaxed);
    }
    published_cv_.notify_all();
}

void Snapshot::close() {
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }
    published_cv_.notify_all();
}

Snapshot::Reading Snapshot::read(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    const std::uint64_t asked_at = generation_;
    if (!closed_) {
        wanted_.store(true, std::memory_order_relaxed);
        published_cv_.wait_for(lock, wait, [&] { return generation_ != asked_at || closed_; });
    }
    Reading r;
    r.json = json_;
    r.generation = generation_;
    r.fresh = generation_ != asked_at;
    r.closed = closed_;
    if (json_) r.age = std::chrono::steady_clock::now() - when_;
    return r;
}

// ---- The registry ----

namespace {

struct Entry {
    DeviceInfo info;
    std::shared_ptr<Snapshot> snapshot;
};

struct Registry {
    std::mutex mutex;
    std::map<unsigned, Entry> devices;  // guarded by mutex
    unsigned next = 0;                  // guarded by mutex
};

/// Never destroyed: DPDK's telemetry threads may still call in while the
/// process runs its exit handlers.
Registry& registry() {
    static auto* r = new Registry;
    return *r;
}

int on_command(const char* cmd, const char* params, rte_tel_data* d) { return reply_into(cmd, params, d); }

void register_commands() {
    for (const CommandInfo& c : commands()) {
        const std::string name(c.name), help(c.help);
        if (const int rc = rte_telemetry_register_cmd(name.c_str(), &on_command, help.c_str()); rc != 0)
            log::logger().warn("dpdk: telemetry command {} not registered: {}", name, rte_strerror(-rc));
    }
}

}  // namespace

Registration::Registration(Registration&& other) noexcept
    : index_(other.index_), snapshot_(std::move(other.snapshot_)) {}

Registration& Registration::operator=(Registration&& other) noexcept {
    if (this != &other) {
        reset();
        index_ = other.index_;
        snapshot_ = std::move(other.snapshot_);
    }
    return *this;
}

Registration::~Registration() { reset(); }

void Registration::reset() noexcept {
    if (!snapshot_) return;
    {
        Registry& reg = registry();
        std::lock_guard lock(reg.mutex);
        reg.devices.erase(index_);
    }
    snapshot_->close();  // readers holding it return at once
    snapshot_.reset();
}

Registration register_device(DeviceInfo info) {
    static std::once_flag commands_once;
    std::call_once(commands_once, &register_commands);
    Registration r;
    r.snapshot_ = std::make_shared<Snapshot>();
    Registry& reg = registry();
    std::lock_guard lock(reg.mutex);
    r.index_ = reg.next++;
    reg.devices.emplace(r.index_, Entry{std::move(info), r.snapshot_});
    return r;
}

std::string socket_path() { return std::string(rte_eal_get_runtime_dir()) + "/dpdk_telemetry.v2"; }

// ---- Shaping JSON to what rte_tel_data holds ----

std::string tel_name(std::string_view name) {
    std::string out;
    for (char c : name.substr(0, kMaxString)) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '/';
        out.push_back(ok ? c : '_');
    }
    if (out.empty()) out = "_";
    return out;
}

std::string tel_string(std::string_view text) {
    // DPDK 22.11 escapes '"', '\\' and \n \r \t, drops other control
    // characters and indexes a table with bytes above 0x7f as negative chars:
    // printable ASCII only.
    std::string out;
    const bool cut = text.size() > kMaxString;
    for (char c : text.substr(0, cut ? kMaxString - 3 : text.size())) out.push_back(c >= 0x20 && c <= 0x7e ? c : '?');
    if (cut) out += "...";
    return out;
}

Json shape_scalar(const Json& v) {
    switch (v.type()) {
        case Json::value_t::null: return nullptr;
        case Json::value_t::boolean: return Json(static_cast<std::int64_t>(v.get<bool>() ? 1 : 0));
        case Json::value_t::number_unsigned: return v;
        case Json::value_t::number_integer: {
            const auto x = v.get<std::int64_t>();
            if (x >= 0) return Json(static_cast<std::uint64_t>(x));
            if (x >= INT_MIN) return Json(x);
            return Json(std::to_string(x));
        }
        case Json::value_t::string: return Json(tel_string(v.get_ref<const std::string&>()));
        default: return Json(tel_string(v.dump()));  // floats, and deeper levels as their text
    }
}

Json shape_container(const Json& v, std::size_t& omitted) {
    if (v.is_object()) {
        Json out = Json::object();
        for (const auto& item : v.items()) {
            if (item.value().is_null()) continue;
            if (out.size() == kMaxDictEntries) {
                ++omitted;
                continue;
            }
            out[tel_name(item.key())] = shape_scalar(item.value());
        }
        return out;
    }
    // An array: one kind for all, the narrowest that holds every element.
    Json items = Json::array();
    for (const Json& e : v) {
        if (items.size() == kMaxArrayEntries) {
            ++omitted;
            continue;
        }
        items.push_back(e.is_null() ? Json("null") : shape_scalar(e));
    }
    const bool all_u64 = std::all_of(items.begin(), items.end(), [](const Json& e) { return e.is_number_unsigned(); });
    if (all_u64) return items;
    const bool all_int = std::all_of(items.begin(), items.end(), [](const Json& e) {
        return e.is_number_integer() && (!e.is_number_unsigned() || e.get<std::uint64_t>() <= INT_MAX);
    });
    for (Json& e : items) {
        if (all_int) e = Json(e.get<std::int64_t>());
        else if (!e.is_string()) e = Json(tel_string(e.dump()));
    }
    return items;
}

namespace {
/// `,"truncated":<u64>`, at most.
constexpr std::size_t kTruncatedRoom = 34;
}  // namespace

TelDict::TelDict(std::size_t budget_bytes, std::size_t max_entries)
    : budget_(budget_bytes > kTruncatedRoom ? budget_bytes - kTruncatedRoom : 0),
      max_entries_(max_entries > 0 ? max_entries - 1 : 0) {}

bool TelDict::put(std::string_view name, const Json& value, bool count_omitted) {
    if (value.is_null()) return true;
    const std::string key = tel_name(name);
    std::size_t inner_omitted = 0;
    Json shaped = value.is_structured() ? shape_container(value, inner_omitted) : shape_scalar(value);
    const std::size_t cost = (dict_.empty() ? 0 : 1) + key.size() + 3 + shaped.dump().size();
    const bool is_new = !dict_.contains(key);
    if ((is_new && dict_.size() + reserved_entries_ >= max_entries_) || bytes_ + cost + reserved_bytes_ > budget_) {
        if (count_omitted) ++omitted_;
        return false;
    }
    if (is_new) bytes_ += cost;  // a repeated name replaces: the budget stays an upper bound
    omitted_ += inner_omitted;
    dict_[key] = std::move(shaped);
    return true;
}

void TelDict::reserve(std::size_t bytes, std::size_t entries) {
    reserved_bytes_ = bytes;
    reserved_entries_ = entries;
}

void TelDict::release() { reserved_bytes_ = reserved_entries_ = 0; }

Json TelDict::finish() && {
    if (omitted_ != 0) dict_["truncated"] = static_cast<std::uint64_t>(omitted_);
    return std::move(dict_);
}

// ---- Parameters ----

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

}  // namespace

bool parse_params(std::string_view text, std::span<const Param> spec, std::span<std::optional<std::uint64_t>> out,
                  std::string& error) {
    for (auto& o : out) o.reset();
    text = trim(text);
    if (!text.empty()) {
        for (std::string_view raw : driver::split(text, ',', driver::Empty::keep)) {
            const std::string_view item = trim(raw);
            if (item.empty()) {
                error = "empty parameter";
                return false;
            }
            std::size_t slot = spec.size();
            std::string_view value = item;
            if (const std::size_t eq = item.find('='); eq != std::string_view::npos) {
                const std::string_view name = trim(item.substr(0, eq));
                value = trim(item.substr(eq + 1));
                for (std::size_t i = 0; i < spec.size(); ++i)
                    if (spec[i].name == name) slot = i;
                if (slot == spec.size()) {
                    error = spec.empty() ? fmt::format("unknown parameter {}: none taken", name)
                                         : fmt::format("unknown parameter {}", name);
                    return false;
                }
                if (out[slot]) {
                    error = fmt::format("{} given twice", name);
                    return false;
                }
            } else {
                slot = 0;
                while (slot < spec.size() && out[slot]) ++slot;
                if (slot == spec.size()) {
                    error = spec.empty() ? "no parameters taken" : "too many parameters";
                    return false;
                }
            }
            std::uint64_t v = 0;
            if (!driver::parse_uint(value, v)) {
                error = fmt::format("{}={} is not an unsigned integer", spec[slot].name, value);
                return false;
            }
            if (v > spec[slot].max) {
                error = fmt::format("{}={} must be at most {}", spec[slot].name, value, spec[slot].max);
                return false;
            }
            out[slot] = v;
        }
    }
    for (std::size_t i = 0; i < spec.size(); ++i)
        if (spec[i].required && !out[i]) {
            error = fmt::format("missing {}", spec[i].name);
            return false;
        }
    return true;
}

// ---- The commands ----

namespace {

using Args = std::array<std::optional<std::uint64_t>, 3>;

Json error_reply(std::string_view message, std::string_view usage = {}) {
    Json j = Json::object();
    j["error"] = tel_string(message);
    if (!usage.empty()) j["usage"] = tel_string(usage);
    return j;
}

/// A device's newest document, as the commands see it.
struct Picked {
    unsigned index = 0;
    Snapshot::Reading reading;
    Json doc;
};

/// The device `dev` (default: the lowest index open) and its snapshot, or
/// an error reply.
std::optional<Picked> pick(const std::optional<std::uint64_t>& dev, Json& error) {
    Picked p;
    std::shared_ptr<Snapshot> snap;
    {
        Registry& reg = registry();
        std::lock_guard lock(reg.mutex);
        if (reg.devices.empty()) {
            error = error_reply("no OpenMRC dpdk device is open");
            return std::nullopt;
        }
        auto it = dev ? reg.devices.find(static_cast<unsigned>(*dev)) : reg.devices.begin();
        if (it == reg.devices.end()) {
            std::string open;
            for (const auto& [i, e] : reg.devices) open += (open.empty() ? "" : ",") + std::to_string(i);
            error = error_reply(fmt::format("no device {} (open: {}; see /omrc/devices)", *dev, open));
            return std::nullopt;
        }
        p.index = it->first;
        snap = it->second.snapshot;
    }
    p.reading = snap->read(kSnapshotWait);
    if (p.reading.closed) {
        error = error_reply(fmt::format("device {} closed", p.index));
        return std::nullopt;
    }
    if (!p.reading.json) {
        error = error_reply(fmt::format("device {} has no stats yet: its thread did not call progress() in {} ms",
                                        p.index, kSnapshotWait.count()));
        return std::nullopt;
    }
    p.doc = Json::parse(*p.reading.json, nullptr, false);
    if (!p.doc.is_object()) {
        error = error_reply(fmt::format("device {}: its stats document is not a JSON object", p.index));
        return std::nullopt;
    }
    return p;
}

/// Which device and snapshot the reply comes from, and how old it is.
void add_origin(TelDict& out, const Picked& p) {
    out.add("dev", p.index);
    out.add("snapshot", p.reading.generation);
    out.add("age_ms", std::chrono::duration_cast<std::chrono::milliseconds>(p.reading.age).count());
    out.add("stale", !p.reading.fresh);  // 1: the owning thread did not answer in time; this is the older one
}

/// Parses `params` for a command; false with `error` set.
template <std::size_t N>
bool parse(std::string_view params, const std::array<Param, N>& spec, std::string_view usage, Args& args,
           Json& error) {
    std::string why;
    if (parse_params(params, spec, std::span(args.data(), N), why)) return true;
    error = error_reply(why, usage);
    return false;
}

Json no_qp(std::uint64_t qpn, unsigned dev) {
    return error_reply(fmt::format("no QP {} on device {} (see /omrc/qps,{})", qpn, dev, dev));
}

const Json* find_qp(const Json& doc, std::uint64_t qpn) {
    if (!doc.contains("qps") || !doc["qps"].is_array()) return nullptr;
    for (const Json& q : doc["qps"])
        if (q.is_object() && q.contains("qpn") && q["qpn"].is_number_unsigned() && q["qpn"].get<std::uint64_t>() == qpn)
            return &q;
    return nullptr;
}

std::string indexed(std::string_view prefix, const Json& element, std::string_view key, std::size_t fallback) {
    const std::string k(key);
    if (element.is_object() && element.contains(k) && element[k].is_number_unsigned())
        return fmt::format("{}{}", prefix, element[k].get<std::uint64_t>());
    return fmt::format("{}{}", prefix, fallback);
}

constexpr std::array<Param, 1> kDevParam{{{"dev", false, UINT32_MAX}}};

Json cmd_devices(std::string_view params) {
    Args args;
    Json error;
    if (!parse(params, std::array<Param, 0>{}, "/omrc/devices", args, error)) return error;
    std::vector<std::pair<unsigned, DeviceInfo>> devices;
    {
        Registry& reg = registry();
        std::lock_guard lock(reg.mutex);
        for (const auto& [i, e] : reg.devices) devices.emplace_back(i, e.info);
    }
    TelDict out;
    out.add("count", devices.size());
    for (const auto& [i, info] : devices) {
        std::string ports;
        for (const std::string& p : info.ports) ports += (ports.empty() ? "" : ",") + p;
        out.add(fmt::format("dev{}", i),
                Json{{"index", i},
                     {"driver", info.driver},
                     {"planes", info.planes},
                     {"ports", ports},
                     {"workers", info.workers},
                     {"steering", info.steering}});
    }
    return std::move(out).finish();
}

/// /omrc/device, /omrc/driver, /omrc/engine: one object of the document, its
/// nested objects as containers.
Json section(std::string_view params, std::string_view key, std::string_view usage) {
    Args args;
    Json error;
    if (!parse(params, kDevParam, usage, args, error)) return error;
    const std::optional<Picked> p = pick(args[0], error);
    if (!p) return error;
    const std::string k(key);
    if (!p->doc.contains(k) || !p->doc[k].is_object())
        return error_reply(fmt::format("the stats document has no {}", k));
    TelDict out;
    add_origin(out, *p);
    for (const auto& item : p->doc[k].items()) out.add(item.key(), item.value());
    return std::move(out).finish();
}

Json cmd_device(std::string_view params) { return section(params, "device", "/omrc/device[,<dev>]"); }
Json cmd_driver(std::string_view params) { return section(params, "driver", "/omrc/driver[,<dev>]"); }
Json cmd_engine(std::string_view params) { return section(params, "engine", "/omrc/engine[,<dev>]"); }

Json cmd_planes(std::string_view params) {
    Args args;
    Json error;
    if (!parse(params, kDevParam, "/omrc/planes[,<dev>]", args, error)) return error;
    const std::optional<Picked> p = pick(args[0], error);
    if (!p) return error;
    if (!p->doc.contains("planes") || !p->doc["planes"].is_array())
        return error_reply("the stats document has no planes");
    TelDict out;
    add_origin(out, *p);
    const Json& planes = p->doc["planes"];
    for (std::size_t i = 0; i < planes.size(); ++i) out.add(indexed("plane", planes[i], "plane", i), planes[i]);
    return std::move(out).finish();
}

Json cmd_qps(std::string_view params) {
    Args args;
    Json error;
    if (!parse(params, kDevParam, "/omrc/qps[,<dev>]", args, error)) return error;
    const std::optional<Picked> p = pick(args[0], error);
    if (!p) return error;
    Json qpns = Json::array();
    if (p->doc.contains("qps") && p->doc["qps"].is_array())
        for (const Json& q : p->doc["qps"])
            if (q.is_object() && q.contains("qpn")) qpns.push_back(q["qpn"]);
    TelDict out;
    add_origin(out, *p);
    out.add("count", qpns.size());
    out.add("qpns", qpns);
    return std::move(out).finish();
}

constexpr std::array<Param, 2> kQpParams{{{"qpn", true, UINT32_MAX}, {"dev", false, UINT32_MAX}}};

Json cmd_qp(std::string_view params) {
    constexpr std::string_view usage = "/omrc/qp,<qpn>[,<dev>] (or qpn=<qpn>,dev=<dev>)";
    Args args;
    Json error;
    if (!parse(params, kQpParams, usage, args, error)) return error;
    const std::optional<Picked> p = pick(args[1], error);
    if (!p) return error;
    const Json* qp = find_qp(p->doc, *args[0]);
    if (qp == nullptr) return no_qp(*args[0], p->index);
    TelDict out;
    add_origin(out, *p);
    // The QP's own fields and its stats, then one container per plane, then
    // the paths' summary and one container per (plane, T1) group. The EVs
    // are /omrc/paths'.
    for (const auto& item : qp->items())
        if (item.key() != "planes" && item.key() != "paths") out.add(item.key(), item.value());
    if (qp->contains("planes") && (*qp)["planes"].is_array()) {
        const Json& planes = (*qp)["planes"];
        for (std::size_t i = 0; i < planes.size(); ++i) out.add(indexed("plane", planes[i], "plane", i), planes[i]);
    }
    if (qp->contains("paths") && (*qp)["paths"].is_object()) {
        const Json& paths = (*qp)["paths"];
        for (const auto& item : paths.items())
            if (!item.value().is_structured()) out.add("paths_" + item.key(), item.value());
        if (paths.contains("evs") && paths["evs"].is_array()) out.add("evs", paths["evs"].size());
        if (paths.contains("groups") && paths["groups"].is_array()) {
            const Json& groups = paths["groups"];
            for (std::size_t i = 0; i < groups.size(); ++i) out.add(fmt::format("group{}", i), groups[i]);
        }
    }
    return std::move(out).finish();
}

constexpr std::array<Param, 3> kPathsParams{
    {{"qpn", true, UINT32_MAX}, {"dev", false, UINT32_MAX}, {"from", false, UINT32_MAX}}};

Json cmd_paths(std::string_view params) {
    constexpr std::string_view usage = "/omrc/paths,<qpn>[,<dev>[,<from>]] (or qpn=,dev=,from=)";
    Args args;
    Json error;
    if (!parse(params, kPathsParams, usage, args, error)) return error;
    const std::optional<Picked> p = pick(args[1], error);
    if (!p) return error;
    const Json* qp = find_qp(p->doc, *args[0]);
    if (qp == nullptr) return no_qp(*args[0], p->index);
    if (!qp->contains("paths") || !(*qp)["paths"].is_object()) return error_reply("the QP has no paths");
    const Json& paths = (*qp)["paths"];
    static const Json kNone = Json::array();
    const Json& evs = paths.contains("evs") && paths["evs"].is_array() ? paths["evs"] : kNone;
    const std::size_t from = static_cast<std::size_t>(args[2].value_or(0));
    TelDict out;
    add_origin(out, *p);
    out.add("qpn", *args[0]);
    for (const auto& item : paths.items())
        if (item.key() != "evs" && item.key() != "groups") out.add(item.key(), item.value());
    out.add("evs_total", evs.size());
    out.add("from", from);
    // As many EVs as the reply holds, from `from` on; "next" says where the
    // next page starts (DPDK would drop what does not fit without a word).
    out.reserve(2 * 30, 2);  // ,"shown":N and ,"next":N
    std::size_t shown = 0;
    for (std::size_t i = from; i < evs.size(); ++i) {
        if (!out.try_add(indexed("slot", evs[i], "slot", i), evs[i])) break;  // a page boundary, not a truncation
        ++shown;
    }
    out.release();
    out.add("shown", shown);
    if (from + shown < evs.size()) out.add("next", from + shown);
    return std::move(out).finish();
}

constexpr CommandInfo kCommands[] = {
    {"/omrc/devices", "OpenMRC dpdk devices open in this process: index, driver, planes, ports. No parameters"},
    {"/omrc/device", "A device's counters: progress loop, MRs, CQs, path events. Parameters: [dev]"},
    {"/omrc/driver", "A device's driver and per-port counters. Parameters: [dev]"},
    {"/omrc/engine", "A device's engine counters: frames, wire errors, drops by reason. Parameters: [dev]"},
    {"/omrc/planes", "Per plane over a device's QPs: link, data sent, acked, lost, EVs, probes. Parameters: [dev]"},
    {"/omrc/qps", "The QPNs of a device. Parameters: [dev]"},
    {"/omrc/qp", "One QP: state, stats, per-plane counters, path groups. Parameters: qpn[,dev]"},
    {"/omrc/paths", "One QP's EVs, as many as 16 KiB holds; 'next' pages on. Parameters: qpn[,dev[,from]]"},
};

using Handler = Json (*)(std::string_view params);
constexpr Handler kHandlers[] = {&cmd_devices, &cmd_device, &cmd_driver, &cmd_engine,
                                 &cmd_planes,  &cmd_qps,    &cmd_qp,     &cmd_paths};
static_assert(std::size(kCommands) == std::size(kHandlers));

// ---- Into rte_tel_data ----

void add_scalar(rte_tel_data* d, const std::string& name, const Json& v) {
    if (v.is_string()) (void)rte_tel_data_add_dict_string(d, name.c_str(), v.get_ref<const std::string&>().c_str());
    else if (v.is_number_unsigned()) (void)rte_tel_data_add_dict_u64(d, name.c_str(), v.get<std::uint64_t>());
    else if (v.is_number_integer())
        (void)rte_tel_data_add_dict_int(d, name.c_str(), static_cast<int>(v.get<std::int64_t>()));
}

/// A shaped container (shape_container's output) as a new rte_tel_data.
rte_tel_data* container(const Json& v) {
    rte_tel_data* c = rte_tel_data_alloc();
    if (c == nullptr) return nullptr;
    if (v.is_object()) {
        (void)rte_tel_data_start_dict(c);
        for (const auto& item : v.items()) add_scalar(c, item.key(), item.value());
        return c;
    }
    const bool strings = !v.empty() && v[0].is_string();
    const bool ints = !v.empty() && v[0].is_number_integer() && !v[0].is_number_unsigned();
    (void)rte_tel_data_start_array(c, strings ? RTE_TEL_STRING_VAL : ints ? RTE_TEL_INT_VAL : RTE_TEL_U64_VAL);
    for (const Json& e : v) {
        if (strings) (void)rte_tel_data_add_array_string(c, e.get_ref<const std::string&>().c_str());
        else if (ints) (void)rte_tel_data_add_array_int(c, static_cast<int>(e.get<std::int64_t>()));
        else (void)rte_tel_data_add_array_u64(c, e.get<std::uint64_t>());
    }
    return c;
}

}  // namespace

std::span<const CommandInfo> commands() { return kCommands; }

Json reply(std::string_view cmd, std::string_view params) {
    try {
        for (std::size_t i = 0; i < std::size(kCommands); ++i)
            if (kCommands[i].name == cmd) return kHandlers[i](params);
        return error_reply(fmt::format("unknown command {}", cmd));
    } catch (const std::exception& e) {
        return error_reply(fmt::format("internal error: {}", e.what()));
    }
}

int reply_into(const char* cmd, const char* params, rte_tel_data* d) noexcept {
    try {
        const Json r = reply(cmd != nullptr ? cmd : "", params != nullptr ? params : "");
        (void)rte_tel_data_start_dict(d);
        for (const auto& item : r.items()) {
            if (!item.value().is_structured()) {
                add_scalar(d, item.key(), item.value());
                continue;
            }
            rte_tel_data* c = container(item.value());
            if (c != nullptr && rte_tel_data_add_dict_container(d, item.key().c_str(), c, 0) != 0) rte_tel_data_free(c);
        }
    } catch (...) {
        (void)rte_tel_data_start_dict(d);
        (void)rte_tel_data_add_dict_string(d, "error", "out of memory");
    }
    return 0;
}

}  // namespace omrc::dpdk::telemetry
