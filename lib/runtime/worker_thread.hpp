// SPDX-License-Identifier: BSD-3-Clause
// The thread of one worker of a device (docs/ARCHITECTURE.md, "Workers"):
// it runs the worker's passes (driver queue → engine shard → driver queue)
// in a poll loop, pinned to its CPU, until the device closes.
//
// Parking. The device's other threads change what a worker owns (its
// engine's QPs, the MR table its placement reads) only while the worker is
// parked: park() returns once the thread has finished its pass and waits;
// everything it did before is visible to the parker, and everything the
// parker does before unpark() is visible to the thread afterwards (an
// acquire/release hand-over through the flags below). Parks nest on the
// parking thread and are serialised between threads.
//
// Idle. A pass that moved nothing starts the idle clock: the thread keeps
// polling for spin_ns, then yields the CPU between passes until yield_ns,
// then sleeps between passes for at most sleep_ns (less when the worker's
// next timer is sooner; kick() wakes it at once: new work from another
// thread). Frames that arrive while it sleeps wait for the end of the
// sleep: sleep_ns = 0 never sleeps (a dedicated core, DPDK style).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace omrc::runtime {

struct IdleConfig {
    std::uint64_t spin_ns = 20'000;     ///< idle time spent polling before the thread yields
    std::uint64_t yield_ns = 2'000'000; ///< idle time before the thread sleeps between passes
    std::uint64_t sleep_ns = 100'000;   ///< longest sleep between passes (0: never sleep)
};

/// Counters of one worker thread (relaxed atomics: exact, read from any thread).
struct WorkerThreadStats {
    std::uint64_t passes = 0;
    std::uint64_t busy_passes = 0;  ///< passes that moved something
    std::uint64_t yields = 0;
    std::uint64_t sleeps = 0;
    std::uint64_t parks = 0;
    int cpu = -1;                   ///< the CPU it is pinned to (-1: not pinned)
};

class WorkerThread {
public:
    /// What the thread runs.
    struct Body {
        virtual ~Body() = default;
        /// One pass; the work done (frames, completions, posts), 0 when idle.
        virtual std::size_t pass() = 0;
        /// The device clock's time of the worker's next timer (UINT64_MAX: none).
        virtual std::uint64_t next_wakeup_ns() = 0;
    };

    /// Starts the thread, named `name` (15 characters at most are kept),
    /// pinned to `cpu` (-1: not pinned; a CPU the process may not use is
    /// logged and left unpinned). `clock` is the device's.
    WorkerThread(std::string name, int cpu, Body& body, const IdleConfig& idle, std::function<std::uint64_t()> clock);
    /// Stops and joins the thread.
    ~WorkerThread();
    WorkerThread(const WorkerThread&) = delete;
    WorkerThread& operator=(const WorkerThread&) = delete;

    /// Waits until the thread is parked (see the header). From the worker's
    /// own thread (inside a pass) it returns at once: the pass owns everything.
    void park();
    void unpark();
    /// New work for a sleeping thread: wakes it (cheap when it is not asleep).
    void kick() noexcept;
    /// True on the worker's own thread.
    [[nodiscard]] bool on_this_thread() const noexcept { return std::this_thread::get_id() == id_.load(); }

    [[nodiscard]] WorkerThreadStats stats() const noexcept;

private:
    void main();
    void wait_parked_released();
    void sleep_until(std::uint64_t deadline_ns, std::uint64_t now_ns);

    Body& body_;
    IdleConfig idle_;
    std::function<std::uint64_t()> clock_;
    std::string name_;
    int cpu_ = -1;
    std::atomic<bool> stop_{false};
    std::atomic<bool> park_request_{false};
    std::atomic<bool> parked_{false};
    std::atomic<bool> sleeping_{false};
    std::atomic<std::uint32_t> doorbell_{0};  ///< futex word: bumped by kick()
    std::mutex park_mutex_;                    ///< held by the parking thread from park() to unpark()
    std::atomic<std::thread::id> parker_{};
    std::uint32_t park_depth_ = 0;             ///< nesting of the parking thread (under park_mutex_)
    std::atomic<std::thread::id> id_{};
    std::atomic<std::uint64_t> passes_{0}, busy_passes_{0}, yields_{0}, sleeps_{0}, parks_{0};
    std::atomic<int> pinned_cpu_{-1};
    std::thread thread_;  ///< last: started once everything above exists
};

/// The CPUs of NUMA node `node` this process may run on, from
/// /sys/devices/system/node/node<N>/cpulist and the affinity mask; empty
/// when unknown.
[[nodiscard]] std::vector<int> numa_node_cpus(int node);

}  // namespace omrc::runtime
