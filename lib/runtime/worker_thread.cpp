// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/worker_thread.hpp"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <vector>

#include "log/log.hpp"

namespace omrc::runtime {

namespace {

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t seen, std::uint64_t timeout_ns) {
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000ULL), static_cast<long>(timeout_ns % 1'000'000'000ULL)};
    (void)syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, seen, &ts, nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>& word) {
    (void)syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void short_sleep(long ns) {
    const timespec ts{0, ns};
    nanosleep(&ts, nullptr);
}

}  // namespace

WorkerThread::WorkerThread(std::string name, int cpu, Body& body, const IdleConfig& idle,
                           std::function<std::uint64_t()> clock)
    : body_(body), idle_(idle), clock_(std::move(clock)), name_(std::move(name)), cpu_(cpu) {
    thread_ = std::thread([this] { main(); });
}

WorkerThread::~WorkerThread() {
    stop_.store(true, std::memory_order_release);
    kick();
    if (thread_.joinable()) thread_.join();
}

void WorkerThread::main() {
    id_.store(std::this_thread::get_id());
    pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
    if (cpu_ >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu_, &set);
        if (const int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set); e != 0)
            log::logger().warn("worker {}: cannot pin to CPU {}: {}; it runs unpinned", name_, cpu_, std::strerror(e));
        else
            pinned_cpu_.store(cpu_, std::memory_order_relaxed);
    }
    std::uint64_t idle_since = 0;  // 0: the last pass was busy
    while (!stop_.load(std::memory_order_acquire)) {
        if (park_request_.load(std::memory_order_acquire)) {
            wait_parked_released();
            idle_since = 0;
            continue;
        }
        const std::size_t work = body_.pass();
        passes_.fetch_add(1, std::memory_order_relaxed);
        if (work != 0) {
            busy_passes_.fetch_add(1, std::memory_order_relaxed);
            idle_since = 0;
            continue;
        }
        const std::uint64_t now = clock_();
        if (idle_since == 0) idle_since = now;
        const std::uint64_t idle = now - idle_since;
        if (idle < idle_.spin_ns) continue;
        if (idle < idle_.yield_ns || idle_.sleep_ns == 0) {
            yields_.fetch_add(1, std::memory_order_relaxed);
            std::this_thread::yield();
            continue;
        }
        sleep_until(body_.next_wakeup_ns(), now);
    }
}

void WorkerThread::sleep_until(std::uint64_t deadline_ns, std::uint64_t now_ns) {
    std::uint64_t ns = idle_.sleep_ns;
    if (deadline_ns <= now_ns) return;
    if (deadline_ns - now_ns < ns) ns = deadline_ns - now_ns;
    const std::uint32_t seen = doorbell_.load(std::memory_order_acquire);
    sleeping_.store(true, std::memory_order_seq_cst);
    // Work posted between the last pass and the flag above rang no bell:
    // one more pass finds it (kick() after the flag rings it).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!stop_.load(std::memory_order_acquire) && !park_request_.load(std::memory_order_acquire)) {
        if (body_.pass() == 0) {
            sleeps_.fetch_add(1, std::memory_order_relaxed);
            futex_wait(doorbell_, seen, ns);
        }
    }
    sleeping_.store(false, std::memory_order_relaxed);
}

void WorkerThread::kick() noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!sleeping_.load(std::memory_order_seq_cst)) return;
    doorbell_.fetch_add(1, std::memory_order_release);
    futex_wake(doorbell_);
}

void WorkerThread::wait_parked_released() {
    parks_.fetch_add(1, std::memory_order_relaxed);
    parked_.store(true, std::memory_order_release);
    // Parks are short (a QP change, an MR registration): yield, and sleep
    // only when one lasts.
    for (int turns = 0; park_request_.load(std::memory_order_acquire) && !stop_.load(std::memory_order_acquire);
         ++turns) {
        if (turns < 1000) std::this_thread::yield();
        else short_sleep(20'000);
    }
    parked_.store(false, std::memory_order_release);
}

void WorkerThread::park() {
    if (on_this_thread()) return;
    const std::thread::id me = std::this_thread::get_id();
    if (parker_.load(std::memory_order_acquire) == me) {
        ++park_depth_;
        return;
    }
    park_mutex_.lock();
    parker_.store(me, std::memory_order_release);
    park_depth_ = 1;
    park_request_.store(true, std::memory_order_release);
    doorbell_.fetch_add(1, std::memory_order_release);
    futex_wake(doorbell_);
    for (int turns = 0; !parked_.load(std::memory_order_acquire); ++turns) {
        if (turns < 64) continue;
        std::this_thread::yield();
    }
}

void WorkerThread::unpark() {
    if (on_this_thread()) return;
    if (--park_depth_ != 0) return;
    parker_.store(std::thread::id{}, std::memory_order_release);
    park_request_.store(false, std::memory_order_release);
    // Wait until the thread has seen it, so that a park() right after this
    // one cannot mistake the old "parked" for a new one.
    for (int turns = 0; parked_.load(std::memory_order_acquire); ++turns) {
        if (turns < 64) continue;
        std::this_thread::yield();
    }
    park_mutex_.unlock();
}

WorkerThreadStats WorkerThread::stats() const noexcept {
    WorkerThreadStats s;
    s.passes = passes_.load(std::memory_order_relaxed);
    s.busy_passes = busy_passes_.load(std::memory_order_relaxed);
    s.yields = yields_.load(std::memory_order_relaxed);
    s.sleeps = sleeps_.load(std::memory_order_relaxed);
    s.parks = parks_.load(std::memory_order_relaxed);
    s.cpu = pinned_cpu_.load(std::memory_order_relaxed);
    return s;
}

std::vector<int> numa_node_cpus(int node) {
    std::vector<int> cpus;
    if (node < 0) return cpus;
    std::ifstream in("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
    std::string list;
    if (!std::getline(in, list)) return cpus;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    const bool have_mask = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
    std::stringstream ss(list);
    std::string range;
    while (std::getline(ss, range, ',')) {
        int lo = 0, hi = 0;
        if (std::sscanf(range.c_str(), "%d-%d", &lo, &hi) != 2) {
            if (std::sscanf(range.c_str(), "%d", &lo) != 1) continue;
            hi = lo;
        }
        for (int c = lo; c <= hi && c < CPU_SETSIZE; ++c)
            if (!have_mask || CPU_ISSET(c, &allowed)) cpus.push_back(c);
    }
    return cpus;
}

}  // namespace omrc::runtime
