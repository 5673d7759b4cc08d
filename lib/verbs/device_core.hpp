// SPDX-License-Identifier: BSD-3-Clause
// What a Device owns behind the public API: the driver, the MR table, the
// engine, the progress loop, and the QPN → Qp map that routes completions to
// CQs. Every member is used by the device's owning thread only.
#pragma once

#include <array>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/engine.hpp"
#include "omrc/verbs.hpp"
#include "driver/registry.hpp"
#include "runtime/progress_loop.hpp"
#include "verbs/mr_table.hpp"

namespace omrc::detail {

struct DeviceCore final : runtime::CompletionSink {
    // Declaration order is destruction order reversed: the loop goes first,
    // then the engine (which points at the MR table), then the driver and
    // whatever keeps it alive.
    driver::AttachedDriver attached;
    std::string driver_name;
    std::function<std::uint64_t()> clock;
    DeviceAddress address{};
    /// args "next_hop_macs": the Ethernet destination of every frame sent on
    /// plane p when bit p of the mask is set (a routed fabric's gateway),
    /// instead of the peer's own MAC.
    std::array<MacAddr, kMaxPlanes> next_hop_macs{};
    std::uint32_t next_hop_mask = 0;
    verbs::MrTable mrs;
    std::unique_ptr<core::Engine> engine;
    std::unique_ptr<runtime::ProgressLoop> loop;

    std::unordered_map<std::uint32_t, Qp*> qps;  ///< live QPs by QPN
    std::vector<const Cq*> cqs;                  ///< live CQs (stats)
    std::uint32_t next_pd = 1;
    std::uint32_t children = 0;                  ///< live Pd + Cq
    std::uint64_t completions_orphaned = 0;      ///< completions of a QP that no longer exists

    // Reused by post_send / post_recv so posting does not allocate.
    std::vector<core::SendRequest> send_scratch;
    std::vector<core::RecvRequest> recv_scratch;

    DeviceCore(driver::AttachedDriver drv, std::string name, std::function<std::uint64_t()> clk,
               verbs::KeyGenerator keys)
        : attached(std::move(drv)), driver_name(std::move(name)), clock(std::move(clk)), mrs(keys) {}

    /// Debug builds: the thread inside an owner-thread entry point (the
    /// default id when none is). Two threads inside at once break the
    /// one-thread-at-a-time rule of verbs.hpp and are caught by OwnerScope.
    std::atomic<std::thread::id> owner_inside{};

    [[nodiscard]] std::uint64_t now() const { return clock(); }
    /// Routes one engine completion to its QP's send or receive CQ.
    void on_completion(const core::Completion& c) override;
};

/// Debug builds: asserts that no other thread is inside an owner-thread entry
/// point of the same Device for as long as it lives (eRPC's owner-thread
/// check, relaxed to "one thread at a time": a Device may move between
/// threads when the program orders the moves). Compiled out with NDEBUG.
class OwnerScope {
public:
#ifdef NDEBUG
    explicit OwnerScope(DeviceCore&) noexcept {}
#else
    explicit OwnerScope(DeviceCore& d) noexcept : d_(d) {
        const std::thread::id me = std::this_thread::get_id();
        const std::thread::id before = d_.owner_inside.exchange(me, std::memory_order_acq_rel);
        nested_ = before == me;
        assert((before == std::thread::id{} || nested_) &&
               "a Device is used by two threads at once (verbs.hpp: one thread at a time)");
    }
    ~OwnerScope() {
        if (!nested_) d_.owner_inside.store(std::thread::id{}, std::memory_order_release);
    }

private:
    DeviceCore& d_;
    bool nested_ = false;
#endif
    OwnerScope(const OwnerScope&) = delete;
    OwnerScope& operator=(const OwnerScope&) = delete;
};

/// Logs a destroyed-with-children error and aborts (see verbs.hpp, Ownership).
[[noreturn]] void abort_live_children(const char* object, std::uint32_t children);

}  // namespace omrc::detail
