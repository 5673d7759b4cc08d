// SPDX-License-Identifier: BSD-3-Clause
// What NCCL sees of a net plugin, as the test harness and omrc-nccl-bench
// use it: one interface over every ABI version. make_net() wraps the struct
// of one ncclNetPlugin_vN symbol, and each call goes through that version's
// own function pointers with that version's argument types — v8's int
// sizes, v10's profiler handles and comm config, v11's context — exactly as
// NCCL's own adapters call them.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl_net_abi.h"

namespace omrc::nccl::test {

/// NCCL's logger as the harness installs it: lines are kept (the tests look
/// for the plugin's reasons in them) and warnings printed to stderr.
class LogSink {
public:
    static LogSink& instance() {
        static LogSink sink;
        return sink;
    }
    void add(ncclDebugLogLevel level, const char* text) {
        const std::lock_guard lock(mu_);
        if (level == NCCL_LOG_WARN && echo_) std::fprintf(stderr, "NCCL WARN %s\n", text);
        lines_.emplace_back(text);
        if (lines_.size() > 4096) lines_.pop_front();
    }
    /// Whether a line logged so far contains `text`.
    bool contains(const std::string& text) {
        const std::lock_guard lock(mu_);
        for (const std::string& l : lines_)
            if (l.find(text) != std::string::npos) return true;
        return false;
    }
    void clear() {
        const std::lock_guard lock(mu_);
        lines_.clear();
    }
    void set_echo(bool on) {
        const std::lock_guard lock(mu_);
        echo_ = on;
    }

private:
    std::mutex mu_;
    std::deque<std::string> lines_;
    bool echo_ = false;  // the omrc logger prints the plugin's warnings already
};

extern "C" inline void omrc_nccl_test_logger(ncclDebugLogLevel level, unsigned long /*flags*/, const char* /*file*/,
                                             int /*line*/, const char* fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    LogSink::instance().add(level, buf);
}

class Net {
public:
    virtual ~Net() = default;
    [[nodiscard]] virtual int version() const = 0;
    [[nodiscard]] virtual const char* name() const = 0;
    virtual ncclResult_t init() = 0;
    virtual ncclResult_t finalize() = 0;
    virtual ncclResult_t devices(int* ndev) = 0;
    virtual ncclResult_t listen(int dev, void* handle, void** listen_comm) = 0;
    virtual ncclResult_t connect(int dev, void* handle, void** send_comm) = 0;
    virtual ncclResult_t accept(void* listen_comm, void** recv_comm) = 0;
    virtual ncclResult_t reg_mr(void* comm, void* data, std::size_t size, int type, void** mhandle) = 0;
    virtual ncclResult_t dereg_mr(void* comm, void* mhandle) = 0;
    virtual ncclResult_t isend(void* send_comm, void* data, std::size_t size, int tag, void* mhandle,
                               void** request) = 0;
    virtual ncclResult_t irecv(void* recv_comm, int n, void** data, const std::size_t* sizes, int* tags,
                               void** mhandles, void** request) = 0;
    virtual ncclResult_t iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request) = 0;
    virtual ncclResult_t test(void* request, int* done, int* sizes) = 0;
    virtual ncclResult_t close_send(void* send_comm) = 0;
    virtual ncclResult_t close_recv(void* recv_comm) = 0;
    virtual ncclResult_t close_listen(void* listen_comm) = 0;
};

template <class T, int V>
class NetOf final : public Net {
public:
    explicit NetOf(T* p) : p_(p) {}
    /// NCCL finalizes a v11+ context when its communicator goes away.
    ~NetOf() override {
        if constexpr (V >= 11)
            if (ctx_ != nullptr) p_->finalize(ctx_);
    }
    NetOf(const NetOf&) = delete;
    NetOf& operator=(const NetOf&) = delete;
    [[nodiscard]] int version() const override { return V; }
    [[nodiscard]] const char* name() const override { return p_->name; }
    ncclResult_t init() override {
        if constexpr (V >= 11) {
            ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
            return p_->init(&ctx_, 0x0123456789abcdefull, &config, omrc_nccl_test_logger, nullptr);
        } else if constexpr (V == 10) {
            return p_->init(omrc_nccl_test_logger, nullptr);
        } else {
            return p_->init(omrc_nccl_test_logger);
        }
    }
    ncclResult_t finalize() override {
        if constexpr (V >= 11) {
            const ncclResult_t rc = p_->finalize(ctx_);
            ctx_ = nullptr;
            return rc;
        }
        return ncclSuccess;
    }
    ncclResult_t devices(int* ndev) override { return p_->devices(ndev); }
    ncclResult_t listen(int dev, void* handle, void** lc) override {
        if constexpr (V >= 11)
            return p_->listen(ctx_, dev, handle, lc);
        else
            return p_->listen(dev, handle, lc);
    }
    ncclResult_t connect(int dev, void* handle, void** sc) override {
        ncclNetDeviceHandle_v8_t* dev_comm = nullptr;
        if constexpr (V >= 11) {
            return p_->connect(ctx_, dev, handle, sc, &dev_comm);
        } else if constexpr (V == 10) {
            ncclNetCommConfig_v10_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
            return p_->connect(dev, &config, handle, sc, &dev_comm);
        } else {
            return p_->connect(dev, handle, sc, &dev_comm);
        }
    }
    ncclResult_t accept(void* lc, void** rc) override {
        ncclNetDeviceHandle_v8_t* dev_comm = nullptr;
        return p_->accept(lc, rc, &dev_comm);
    }
    ncclResult_t reg_mr(void* comm, void* data, std::size_t size, int type, void** mh) override {
        return p_->regMr(comm, data, size, type, mh);
    }
    ncclResult_t dereg_mr(void* comm, void* mh) override { return p_->deregMr(comm, mh); }
    ncclResult_t isend(void* sc, void* data, std::size_t size, int tag, void* mh, void** req) override {
        if constexpr (V == 8) {
            if (size > 0x7fffffff) return ncclInvalidArgument;  // v8 cannot express it
            return p_->isend(sc, data, static_cast<int>(size), tag, mh, req);
        } else if constexpr (V == 9) {
            return p_->isend(sc, data, size, tag, mh, req);
        } else {
            return p_->isend(sc, data, size, tag, mh, nullptr, req);
        }
    }
    ncclResult_t irecv(void* rc, int n, void** data, const std::size_t* sizes, int* tags, void** mhs,
                       void** req) override {
        // The plugin checks n before it reads the arrays; the harness reads
        // no more of them than a valid n allows either (tests pass bad n).
        const int valid = n < 0 ? 0 : (n > 8 ? 8 : n);
        if constexpr (V == 8) {
            int s[8] = {};
            for (int i = 0; i < valid; ++i) s[i] = static_cast<int>(sizes[i]);
            return p_->irecv(rc, n, data, s, tags, mhs, req);
        } else if constexpr (V == 9) {
            return p_->irecv(rc, n, data, const_cast<std::size_t*>(sizes), tags, mhs, req);
        } else {
            void* phandles[NCCL_NET_MAX_REQUESTS] = {};
            return p_->irecv(rc, n, data, const_cast<std::size_t*>(sizes), tags, mhs, phandles, req);
        }
    }
    ncclResult_t iflush(void* rc, int n, void** data, int* sizes, void** mhs, void** req) override {
        return p_->iflush(rc, n, data, sizes, mhs, req);
    }
    ncclResult_t test(void* req, int* done, int* sizes) override { return p_->test(req, done, sizes); }
    ncclResult_t close_send(void* c) override { return p_->closeSend(c); }
    ncclResult_t close_recv(void* c) override { return p_->closeRecv(c); }
    ncclResult_t close_listen(void* c) override { return p_->closeListen(c); }

private:
    T* p_;
    void* ctx_ = nullptr;
};

/// Wraps the struct an ncclNetPlugin_v<version> symbol points at.
inline std::unique_ptr<Net> make_net(void* symbol, int version) {
    switch (version) {
        case 8: return std::make_unique<NetOf<ncclNet_v8_t, 8>>(static_cast<ncclNet_v8_t*>(symbol));
        case 9: return std::make_unique<NetOf<ncclNet_v9_t, 9>>(static_cast<ncclNet_v9_t*>(symbol));
        case 10: return std::make_unique<NetOf<ncclNet_v10_t, 10>>(static_cast<ncclNet_v10_t*>(symbol));
        case 11: return std::make_unique<NetOf<ncclNet_v11_t, 11>>(static_cast<ncclNet_v11_t*>(symbol));
        case 12: return std::make_unique<NetOf<ncclNet_v12_t, 12>>(static_cast<ncclNet_v12_t*>(symbol));
        default: return nullptr;
    }
}

inline constexpr int kOldestVersion = 8;
inline constexpr int kNewestVersion = 12;

}  // namespace omrc::nccl::test
