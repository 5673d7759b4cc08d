// SPDX-License-Identifier: BSD-3-Clause
// Ranks as processes: start them with posix_spawn (never fork a process
// whose plugin may already run threads), wait for them with a deadline,
// kill what is left.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace omrc::nccl::test {

/// The environment of this process with `set` replacing or adding entries.
inline std::vector<std::string> environment_with(const std::map<std::string, std::string>& set) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string kv(*e);
        const std::string key = kv.substr(0, kv.find('='));
        if (set.count(key) == 0) env.push_back(kv);
    }
    for (const auto& [k, v] : set) env.push_back(k + "=" + v);
    return env;
}

/// Starts `argv[0]` with argv and env; with `output`, its stdout and stderr
/// go to that file. The pid, or -1.
inline pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& output = {}) {
    std::vector<char*> a, e;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    for (const auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
    e.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (!output.empty()) {
        posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
    }
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, a[0], &actions, nullptr, a.data(), e.data());
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0 ? pid : -1;
}

/// Waits for every pid until the deadline; the ones still running then are
/// killed. Exit codes by pid: the exit status, 128 + signal, or -1 for a
/// process that had to be killed at the deadline.
inline std::map<pid_t, int> wait_all_processes(const std::vector<pid_t>& pids,
                                               std::chrono::steady_clock::time_point deadline) {
    std::map<pid_t, int> codes;
    while (codes.size() < pids.size() && std::chrono::steady_clock::now() < deadline) {
        for (pid_t p : pids) {
            if (codes.count(p) != 0) continue;
            int status = 0;
            if (::waitpid(p, &status, WNOHANG) == p)
                codes[p] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    for (pid_t p : pids) {
        if (codes.count(p) != 0) continue;
        ::kill(p, SIGKILL);
        int status = 0;
        ::waitpid(p, &status, 0);
        codes[p] = -1;
    }
    return codes;
}

/// A fresh directory under $TMPDIR (or /tmp) for handle files.
inline std::string make_temp_dir(const char* prefix) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    return ::mkdtemp(buf.data()) != nullptr ? std::string(buf.data()) : std::string();
}

}  // namespace omrc::nccl::test
