// SPDX-License-Identifier: BSD-3-Clause
// Big-endian integers in byte buffers: the listen handle and the handshake
// messages are read by a peer that may run another build (and, in
// principle, another byte order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace omrc::nccl {

template <class T>
void put_be(std::uint8_t* p, T v) noexcept {
    for (std::size_t i = 0; i < sizeof(T); ++i)
        p[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * (sizeof(T) - 1 - i)));
}

template <class T>
T get_be(const std::uint8_t* p) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v = (v << 8) | p[i];
    return static_cast<T>(v);
}

/// Appends to a message being built.
class Writer {
public:
    explicit Writer(std::vector<std::uint8_t>& out) : out_(out) {}
    template <class T>
    Writer& be(T v) {
        const std::size_t at = out_.size();
        out_.resize(at + sizeof(T));
        put_be(out_.data() + at, v);
        return *this;
    }
    Writer& bytes(const std::uint8_t* p, std::size_t n) {
        out_.insert(out_.end(), p, p + n);
        return *this;
    }

private:
    std::vector<std::uint8_t>& out_;
};

/// Reads a received message; reading past its end sets failed() and yields zeros.
class Reader {
public:
    Reader(const std::uint8_t* p, std::size_t n) : p_(p), n_(n) {}
    template <class T>
    T be() {
        if (!take(sizeof(T))) return T{};
        return get_be<T>(p_ + at_ - sizeof(T));
    }
    void bytes(std::uint8_t* out, std::size_t n) {
        if (take(n))
            for (std::size_t i = 0; i < n; ++i) out[i] = p_[at_ - n + i];
    }
    [[nodiscard]] bool failed() const noexcept { return failed_; }
    [[nodiscard]] std::size_t left() const noexcept { return n_ - at_; }

private:
    bool take(std::size_t n) {
        if (failed_ || n_ - at_ < n) {
            failed_ = true;
            return false;
        }
        at_ += n;
        return true;
    }
    const std::uint8_t* p_;
    std::size_t n_;
    std::size_t at_ = 0;
    bool failed_ = false;
};

}  // namespace omrc::nccl
