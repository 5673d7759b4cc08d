// SPDX-License-Identifier: BSD-3-Clause
// How ranks hand each other their listen handles (NCCL does it through its
// bootstrap network): in memory for ranks that are threads of one process,
// through files in a directory for ranks that are processes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccl_net_abi.h"

namespace omrc::nccl::test {

using Clock = std::chrono::steady_clock;
using Handle = std::vector<std::uint8_t>;  ///< NCCL_NET_HANDLE_MAXSIZE bytes

class Exchange {
public:
    virtual ~Exchange() = default;
    virtual void put(const std::string& key, const Handle& h) = 0;
    /// Waits for `key` until the deadline; false when it never came.
    virtual bool get(const std::string& key, Handle* h, Clock::time_point deadline) = 0;
};

class MemoryExchange final : public Exchange {
public:
    void put(const std::string& key, const Handle& h) override {
        {
            const std::lock_guard lock(mu_);
            map_[key] = h;
        }
        cv_.notify_all();
    }
    bool get(const std::string& key, Handle* h, Clock::time_point deadline) override {
        std::unique_lock lock(mu_);
        if (!cv_.wait_until(lock, deadline, [&] { return map_.count(key) != 0; })) return false;
        *h = map_[key];
        return true;
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::string, Handle> map_;
};

/// One file per key in `dir`, written under a temporary name and renamed,
/// so a reader never sees half a handle.
class FileExchange final : public Exchange {
public:
    explicit FileExchange(std::string dir) : dir_(std::move(dir)) {}
    void put(const std::string& key, const Handle& h) override {
        const std::string tmp = dir_ + "/." + key + ".tmp";
        {
            std::ofstream f(tmp, std::ios::binary);
            f.write(reinterpret_cast<const char*>(h.data()), static_cast<std::streamsize>(h.size()));
        }
        std::rename(tmp.c_str(), (dir_ + "/" + key).c_str());
    }
    bool get(const std::string& key, Handle* h, Clock::time_point deadline) override {
        while (Clock::now() < deadline) {
            std::ifstream f(dir_ + "/" + key, std::ios::binary);
            if (f) {
                h->assign(NCCL_NET_HANDLE_MAXSIZE, 0);
                f.read(reinterpret_cast<char*>(h->data()), NCCL_NET_HANDLE_MAXSIZE);
                if (f.gcount() == NCCL_NET_HANDLE_MAXSIZE) return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        return false;
    }

private:
    std::string dir_;
};

}  // namespace omrc::nccl::test
