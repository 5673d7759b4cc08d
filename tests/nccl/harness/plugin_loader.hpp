// SPDX-License-Identifier: BSD-3-Clause
// Loads libnccl-net-omrc.so the way NCCL does: dlopen, then dlsym of
// ncclNetPlugin_v<N>. The library stays loaded for the rest of the process
// (NCCL never unloads a net plugin either).
#pragma once

#include <dlfcn.h>

#include <memory>
#include <string>

#include "net_api.hpp"

namespace omrc::nccl::test {

class Plugin {
public:
    /// dlopen()s `path`; ok() says whether it worked, error() why not.
    explicit Plugin(const std::string& path) {
        handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle_ == nullptr) error_ = ::dlerror();
    }
    [[nodiscard]] bool ok() const noexcept { return handle_ != nullptr; }
    [[nodiscard]] const std::string& error() const noexcept { return error_; }
    /// The address of ncclNetPlugin_v<version>, or nullptr.
    [[nodiscard]] void* symbol(int version) const {
        if (handle_ == nullptr) return nullptr;
        return ::dlsym(handle_, ("ncclNetPlugin_v" + std::to_string(version)).c_str());
    }
    /// The interface over that symbol, or nullptr when it is missing.
    [[nodiscard]] std::unique_ptr<Net> net(int version) const {
        void* s = symbol(version);
        return s != nullptr ? make_net(s, version) : nullptr;
    }
    /// Any other symbol (the tests check that none leaks out).
    [[nodiscard]] void* raw_symbol(const char* name) const {
        return handle_ != nullptr ? ::dlsym(handle_, name) : nullptr;
    }

private:
    void* handle_ = nullptr;
    std::string error_;
};

}  // namespace omrc::nccl::test
