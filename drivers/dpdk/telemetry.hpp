// SPDX-License-Identifier: BSD-3-Clause
// OpenMRC stats as DPDK telemetry commands (/omrc/devices, /omrc/planes, ...;
// docs/DRIVERS.md, "Telemetry").
//
// Who owns what:
//  - A process-wide registry holds every open dpdk device under an index
//    (the order devices were opened; a closed device's index is not reused).
//  - Each device has a Snapshot: the newest stats document its owning thread
//    published. The telemetry callbacks run on DPDK's threads (one per
//    connected client) and only ever read snapshots: they never touch the
//    engine or the driver.
//  - A reader sets the snapshot's `wanted` flag and waits (kSnapshotWait) for
//    a newer one; the owning thread sees the flag on its next
//    Device::progress() pass (Driver::stats_wanted(), one relaxed load) and
//    publishes (Driver::publish_stats()). Nobody asking costs nothing more.
//
// DPDK 22.11's rte_tel_data is a dict or an array of u64, int (32 bit) and
// strings (≤ 127 bytes), with one level of containers (a container is a dict
// of scalars or an array of scalars), ≤ 256 dict entries, ≤ 512 array entries,
// and a reply of at most 16 KiB, beyond which DPDK drops entries silently.
// Replies are built as JSON first, shaped to those rules (TelDict,
// shape_container), then copied into the rte_tel_data: the shaping is plain
// code, tested without DPDK.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

struct rte_tel_data;

namespace omrc::dpdk::telemetry {

/// Replies keep the order their fields were added in.
using Json = nlohmann::ordered_json;

/// How long a command waits for the owning thread's next snapshot.
inline constexpr std::chrono::milliseconds kSnapshotWait{200};

/// DPDK 22.11's limits (rte_telemetry.h; the output size is MAX_OUTPUT_LEN in
/// lib/telemetry/telemetry.c, also sent in the socket's greeting).
inline constexpr std::size_t kMaxString = 127;       ///< RTE_TEL_MAX_STRING_LEN less the NUL
inline constexpr std::size_t kMaxDictEntries = 256;  ///< RTE_TEL_MAX_DICT_ENTRIES
inline constexpr std::size_t kMaxArrayEntries = 512; ///< RTE_TEL_MAX_ARRAY_ENTRIES
inline constexpr std::size_t kMaxOutput = 16384;     ///< the whole reply, {"<cmd>":...} included
/// What a reply's dict may take: the output less `{"<command ≤ 56>":` and `}`.
inline constexpr std::size_t kReplyBudget = kMaxOutput - 128;

/// One device's newest stats document. publish() on the owning thread,
/// read() on any other.
class Snapshot {
public:
    /// Someone asked since the last publish() (relaxed: a late answer is fine).
    [[nodiscard]] bool wanted() const noexcept { return wanted_.load(std::memory_order_relaxed); }

    /// The owning thread's document (Device::stats_json()). Holds the mutex
    /// only to swap a pointer; wakes every waiting reader.
    void publish(std::string json);

    /// Called when the device closes: waiting readers return at once.
    void close();

    struct Reading {
        std::shared_ptr<const std::string> json;  ///< null: none published yet
        std::uint64_t generation = 0;             ///< publish() calls so far
        std::chrono::nanoseconds age{0};          ///< since that publish()
        bool fresh = false;                       ///< published after this read asked
        bool closed = false;                      ///< the device closed
    };
    /// Asks for a new document and waits up to `wait` for it; returns the
    /// newest there is (fresh or not).
    [[nodiscard]] Reading read(std::chrono::milliseconds wait);

private:
    std::atomic<bool> wanted_{false};
    std::mutex mutex_;
    std::condition_variable published_cv_;
    std::shared_ptr<const std::string> json_;      // guarded by mutex_
    std::uint64_t generation_ = 0;                 // guarded by mutex_
    std::chrono::steady_clock::time_point when_{};  // guarded by mutex_
    bool closed_ = false;                          // guarded by mutex_
};

/// What /omrc/devices shows of a device (fixed while it is open).
struct DeviceInfo {
    std::string driver;
    std::uint32_t planes = 0;
    std::vector<std::string> ports;  ///< port names, in plane order
    std::uint32_t workers = 1;       ///< queues per port, one per worker
    std::string steering = "none";   ///< how frames reach the workers' queues (DpdkPorts::steering)
};

/// A device's place in the registry; unregisters when it goes.
class Registration {
public:
    Registration() = default;
    Registration(Registration&& other) noexcept;
    Registration& operator=(Registration&& other) noexcept;
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    ~Registration();

    [[nodiscard]] explicit operator bool() const noexcept { return snapshot_ != nullptr; }
    [[nodiscard]] unsigned index() const noexcept { return index_; }
    /// The device's snapshot (null when not registered); lives as long as this.
    [[nodiscard]] Snapshot* snapshot() const noexcept { return snapshot_.get(); }

private:
    friend Registration register_device(DeviceInfo info);
    void reset() noexcept;

    unsigned index_ = 0;
    std::shared_ptr<Snapshot> snapshot_;
};

/// Adds a device under the next index; the first call also registers the
/// /omrc commands with DPDK telemetry (once per process; harmless when the
/// EAL runs without telemetry).
[[nodiscard]] Registration register_device(DeviceInfo info);

/// "<runtime dir>/dpdk_telemetry.v2": where the EAL's telemetry listens
/// (if it runs). Only after the EAL is initialised.
[[nodiscard]] std::string socket_path();

// ---- The parts below are the commands' plain code, exposed for tests. ----

/// The commands, in the order /omrc/devices lists them: name, help text.
struct CommandInfo {
    std::string_view name;
    std::string_view help;  ///< < 128 bytes (rte_telemetry_register_cmd refuses longer)
};
[[nodiscard]] std::span<const CommandInfo> commands();

/// The reply to `cmd` with `params` (the text after the first ',', "" for
/// none), shaped for rte_tel_data: a dict whose values are u64 (JSON
/// unsigned), int (JSON signed, 32 bit), strings (≤ kMaxString bytes of
/// printable ASCII) or containers (a dict of those, or an array of one of
/// those kinds), within kMaxDictEntries and kReplyBudget bytes. Errors are a
/// dict {"error": "..."}. Waits for snapshots (kSnapshotWait at most); never throws.
[[nodiscard]] Json reply(std::string_view cmd, std::string_view params);

/// The same, into `d` (what DPDK calls). Returns 0.
int reply_into(const char* cmd, const char* params, rte_tel_data* d) noexcept;

/// A name DPDK accepts: [A-Za-z0-9_/], others become '_', at most kMaxString bytes.
[[nodiscard]] std::string tel_name(std::string_view name);
/// Printable ASCII only (others become '?'), at most kMaxString bytes (a
/// longer text ends in "...").
[[nodiscard]] std::string tel_string(std::string_view text);
/// A scalar as rte_tel_data holds it: bool → 0/1 (signed), unsigned → u64,
/// signed → u64 when ≥ 0, int when it fits 32 bits, else a string; float →
/// its text; string → tel_string. Null stays null (left out by callers).
[[nodiscard]] Json shape_scalar(const Json& v);
/// One container: an object → a dict of shaped scalars (deeper values as
/// their JSON text, tel_string'd; nulls left out), an array → an array of one
/// kind (all u64, else all int, else all strings). Entries past DPDK's limits
/// are left out and added to `omitted`.
[[nodiscard]] Json shape_container(const Json& v, std::size_t& omitted);

/// A reply dict under construction that stays within DPDK's limits.
class TelDict {
public:
    explicit TelDict(std::size_t budget_bytes = kReplyBudget, std::size_t max_entries = kMaxDictEntries);

    /// Adds `value` under tel_name(name): a scalar shaped, an object or array
    /// as one container, null not at all. False when it does not fit (the
    /// entries or bytes left); it is then counted in omitted().
    bool add(std::string_view name, const Json& value) { return put(name, value, true); }
    /// As add(), but a value that does not fit is not counted as omitted
    /// (the caller pages on instead).
    bool try_add(std::string_view name, const Json& value) { return put(name, value, false); }
    /// Keeps `bytes` and `entries` back from later add()s until release().
    void reserve(std::size_t bytes, std::size_t entries);
    void release();

    [[nodiscard]] std::size_t omitted() const noexcept { return omitted_; }
    /// Rendered size so far (as DPDK writes it: compact JSON).
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
    /// The dict, with "truncated": omitted() last when something was left out.
    [[nodiscard]] Json finish() &&;

private:
    bool put(std::string_view name, const Json& value, bool count_omitted);

    Json dict_ = Json::object();
    std::size_t budget_, max_entries_;
    std::size_t reserved_bytes_ = 0, reserved_entries_ = 0;
    std::size_t bytes_ = 2;  // "{}"
    std::size_t omitted_ = 0;
};

/// One parameter of a command: its name (for name=value) and its range.
struct Param {
    std::string_view name;
    bool required = false;
    std::uint64_t max = UINT32_MAX;
};
/// Parses "5,1" (positional, in `spec` order), "qpn=5,dev=1", or a mix of
/// the two (blanks around items ignored) into `out` (one per spec entry,
/// nullopt when not given). False with `error` set for an empty item, an
/// unknown name, a value that is not an unsigned decimal integer or out of
/// range, a parameter given twice, too many, or a required one missing.
bool parse_params(std::string_view text, std::span<const Param> spec, std::span<std::optional<std::uint64_t>> out,
                  std::string& error);

}  // namespace omrc::dpdk::telemetry
