// SPDX-License-Identifier: BSD-3-Clause
// A double-ended queue in one power-of-two array: push and pop at both ends
// without a node allocation per element (std::deque allocates a node per few
// elements and frees it again). It grows by doubling when full and never
// shrinks, so a steady state allocates nothing. Single-threaded.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace omrc::core {

template <class T>
class Ring {
public:
    Ring() : Ring(4) {}
    explicit Ring(std::size_t initial_capacity) { reserve_pow2(initial_capacity); }

    [[nodiscard]] std::size_t size() const noexcept { return count_; }
    [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
    [[nodiscard]] std::size_t capacity() const noexcept { return buf_.size(); }

    /// Element i from the front (0 = front).
    [[nodiscard]] T& operator[](std::size_t i) noexcept {
        assert(i < count_);
        return buf_[(head_ + i) & mask_];
    }
    [[nodiscard]] const T& operator[](std::size_t i) const noexcept {
        assert(i < count_);
        return buf_[(head_ + i) & mask_];
    }
    [[nodiscard]] T& front() noexcept { return (*this)[0]; }
    [[nodiscard]] const T& front() const noexcept { return (*this)[0]; }
    [[nodiscard]] T& back() noexcept { return (*this)[count_ - 1]; }

    /// A new element at the back, left as it was (assign its fields).
    T& emplace_back() {
        if (count_ == buf_.size()) grow();
        T& slot = buf_[(head_ + count_) & mask_];
        ++count_;
        return slot;
    }
    void push_back(const T& v) { emplace_back() = v; }
    void push_front(const T& v) {
        if (count_ == buf_.size()) grow();
        head_ = (head_ - 1) & mask_;
        buf_[head_] = v;
        ++count_;
    }
    void pop_front() noexcept {
        assert(count_ > 0);
        head_ = (head_ + 1) & mask_;
        --count_;
    }
    void pop_back() noexcept {
        assert(count_ > 0);
        --count_;
    }
    /// Inserts before element `i` (0..size()), moving the shorter side.
    void insert(std::size_t i, const T& v) {
        assert(i <= count_);
        if (count_ == buf_.size()) grow();
        if (i < count_ / 2) {
            head_ = (head_ - 1) & mask_;
            ++count_;
            for (std::size_t k = 0; k < i; ++k) (*this)[k] = std::move((*this)[k + 1]);
        } else {
            ++count_;
            for (std::size_t k = count_ - 1; k > i; --k) (*this)[k] = std::move((*this)[k - 1]);
        }
        (*this)[i] = v;
    }
    /// Removes element `i` (0..size()-1), moving the shorter side.
    void erase(std::size_t i) {
        assert(i < count_);
        if (i < count_ / 2) {
            for (std::size_t k = i; k > 0; --k) (*this)[k] = std::move((*this)[k - 1]);
            head_ = (head_ + 1) & mask_;
        } else {
            for (std::size_t k = i; k + 1 < count_; ++k) (*this)[k] = std::move((*this)[k + 1]);
        }
        --count_;
    }
    void clear() noexcept { head_ = count_ = 0; }

private:
    void reserve_pow2(std::size_t n) {
        std::size_t c = 1;
        while (c < n) c <<= 1;
        buf_.resize(c);
        mask_ = c - 1;
    }
    void grow() {
        std::vector<T> bigger(buf_.size() * 2);
        for (std::size_t i = 0; i < count_; ++i) bigger[i] = std::move((*this)[i]);
        buf_ = std::move(bigger);
        mask_ = buf_.size() - 1;
        head_ = 0;
    }

    std::vector<T> buf_;
    std::size_t mask_ = 0;
    std::size_t head_ = 0;   ///< index of the front element
    std::size_t count_ = 0;
};

}  // namespace omrc::core
