// SPDX-License-Identifier: BSD-3-Clause
#include "drivers/dpdk/eal.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <rte_alarm.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_interrupts.h>
#include <rte_lcore.h>
#include <rte_log.h>

#include "log/log.hpp"

namespace omrc::dpdk {

namespace {

std::mutex eal_mutex;
bool eal_ready = false;  // guarded by eal_mutex
std::atomic<unsigned> prefix_counter{0};
std::string generated_runtime_dir;  // guarded by eal_mutex; removed at exit

void remove_runtime_dir() {
    std::error_code ec;
    if (!generated_runtime_dir.empty()) std::filesystem::remove_all(generated_runtime_dir, ec);
}

/// Start of the --file-prefix values eal_arguments() generates.
std::string own_prefix_stem() { return "omrc-" + std::to_string(::getpid()) + "-"; }

bool has_option(const std::vector<std::string>& args, std::initializer_list<const char*> names) {
    for (const std::string& a : args)
        for (const char* n : names) {
            const std::string name(n);
            if (a == name || (a.size() > name.size() && a.compare(0, name.size(), name) == 0 && a[name.size()] == '='))
                return true;
        }
    return false;
}

}  // namespace

std::vector<std::string> split_args(const std::string& text) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : text) {
        if (c == ' ' || c == '\t' || c == '\n') {
            if (!cur.empty()) out.push_back(std::move(cur));
            cur.clear();
        } else {
            cur.push_back(c);
        }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
    return out;
}

std::vector<std::string> eal_arguments(const std::string& given, bool telemetry) {
    std::string text = given;
    if (text.empty())
        if (const char* env = std::getenv("OMRC_EAL_ARGS"); env != nullptr) text = env;
    if (text.empty()) text = "--no-huge -m 512 --no-pci";
    std::vector<std::string> args{"omrc"};
    for (std::string& a : split_args(text)) args.push_back(std::move(a));
    if (!has_option(args, {"--file-prefix", "--in-memory"})) {
        args.emplace_back("--file-prefix");
        args.push_back(own_prefix_stem() + std::to_string(prefix_counter++));
    }
    if (!has_option(args, {"-l", "-c", "--lcores"})) {
        // One main lcore on the CPU we run on now: the EAL starts no worker
        // threads, and the affinity it sets is undone after init.
        const int cpu = sched_getcpu();
        args.emplace_back("-l");
        args.push_back(std::to_string(cpu >= 0 ? cpu : 0));
    }
    // Telemetry is a socket and a thread per client: off unless asked for
    // (telemetry=1 serves the /omrc commands, drivers/dpdk/telemetry.hpp).
    if (!telemetry && !has_option(args, {"--no-telemetry", "--telemetry"})) args.emplace_back("--no-telemetry");
    if (!has_option(args, {"--proc-type"})) {
        args.emplace_back("--proc-type");
        args.emplace_back("primary");
    }
    return args;
}

int ensure_eal(const std::vector<std::string>& args) {
    std::lock_guard lock(eal_mutex);
    if (eal_ready) return 0;
    std::vector<char*> argv;
    std::vector<std::string> copy = args;  // rte_eal_init may permute argv
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);

    cpu_set_t saved;
    const bool have_affinity = pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) == 0;
    const int rc = rte_eal_init(static_cast<int>(argv.size() - 1), argv.data());
    const int err = rte_errno;
    if (have_affinity) (void)pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
    if (rc < 0 && err != EALREADY) {
        std::string joined;
        for (const std::string& a : args) joined += a + " ";
        log::logger().error("dpdk: rte_eal_init({}) failed: {}", joined, rte_strerror(err));
        return err != 0 ? err : EINVAL;
    }
    if (rc >= 0) {
        // Our own EAL logs to stderr only. Its default stream also writes to
        // syslog, and a PMD thread logging there while the process exits
        // (memif: the peer went away) deadlocks in glibc: the exiting thread
        // flushes that stream under the stdio list lock, and needs syslog's
        // lock, which the PMD thread holds while it needs the list lock.
        (void)rte_openlog_stream(stderr);
    }
    if (rc < 0) {
        log::logger().info("dpdk: the EAL was initialised by the application; attaching to it");
    } else if (std::any_of(args.begin(), args.end(), [](const std::string& a) {
                   return a.rfind(own_prefix_stem(), 0) == 0;
               })) {
        // A prefix of our own making: its runtime directory goes with the process.
        generated_runtime_dir = rte_eal_get_runtime_dir();
        std::atexit(&remove_runtime_dir);
    }
    eal_ready = true;
    return 0;
}

namespace {

/// Gives back the lcore a thread registered, when the thread exits.
struct ThreadLcore {
    bool registered = false;
    bool tried = false;
    ~ThreadLcore() {
        if (registered) rte_thread_unregister();
    }
};

}  // namespace

void attach_thread() {
    if (rte_lcore_id() != LCORE_ID_ANY) return;  // an EAL lcore, or registered before
    thread_local ThreadLcore self;
    if (self.tried) return;
    self.tried = true;
    if (rte_thread_register() == 0) {
        self.registered = true;
        log::logger().debug("dpdk: this thread is now lcore {} (mempool caches)", rte_lcore_id());
        return;
    }
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
        log::logger().warn("dpdk: cannot make a data-path thread an lcore ({}): its mbufs bypass the mempool caches",
                           rte_strerror(rte_errno));
}

namespace {

/// One task handed to the interrupt thread; lives on the caller's stack
/// until `done`.
struct InterruptTask {
    const std::function<int()>* task = nullptr;
    int rc = 0;
    bool done = false;  ///< guarded by `mutex`
    std::mutex mutex;
    std::condition_variable cv;
};

void run_interrupt_task(void* arg) {
    auto* t = static_cast<InterruptTask*>(arg);
    const int rc = (*t->task)();
    std::lock_guard lock(t->mutex);
    t->rc = rc;
    t->done = true;
    t->cv.notify_one();  // under the lock: the caller's stack frame outlives this call
}

}  // namespace

int on_interrupt_thread(const std::function<int()>& task) {
    if (rte_thread_is_intr() != 0) return task();
    InterruptTask t;
    t.task = &task;
    if (const int e = rte_eal_alarm_set(1, &run_interrupt_task, &t); e != 0) {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            log::logger().warn("dpdk: no EAL alarm ({}): net_memif calls run on the caller's thread",
                               rte_strerror(-e));
        return task();
    }
    std::unique_lock lock(t.mutex);
    t.cv.wait(lock, [&] { return t.done; });
    return t.rc;
}

}  // namespace omrc::dpdk
