// SPDX-License-Identifier: BSD-3-Clause
// Anti-replay window over a PSP security association's 64-bit IVs: each IV
// is accepted once. The highest IV seen and a bitmap of the `size` IVs at
// and below it; an IV older than the bitmap reaches is refused (a frame
// sent that long ago is either placed already or retransmitted since under a
// new IV, so refusing it loses nothing). Check before decrypting, commit only
// after the tag verified: a forged frame never moves the window.
#pragma once

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <vector>

namespace omrc::core {

class ReplayWindow {
public:
    enum class Verdict : std::uint8_t { fresh, duplicate, too_old };

    /// `size`: IVs remembered below the highest, a power of two ≥ 64.
    explicit ReplayWindow(std::uint32_t size = 4096) : bits_(size / 64, 0), size_(size) {
        assert(std::has_single_bit(size) && size >= 64 && "replay window: a power of two of at least 64 IVs");
    }

    [[nodiscard]] Verdict check(std::uint64_t iv) const noexcept {
        if (iv == 0) return Verdict::too_old;  // PSP IVs start at 1
        if (iv > top_) return Verdict::fresh;
        if (top_ - iv >= size_) return Verdict::too_old;
        return test(iv) ? Verdict::duplicate : Verdict::fresh;
    }

    /// Records `iv` (check() said fresh).
    void commit(std::uint64_t iv) noexcept {
        if (iv > top_) {
            const std::uint64_t advance = iv - top_;
            if (advance >= size_) {
                std::fill(bits_.begin(), bits_.end(), 0);
            } else {
                for (std::uint64_t v = top_ + 1; v < iv; ++v) clear(v);  // at most size_ - 1, once per IV
            }
            top_ = iv;
        }
        set(iv);
    }

    [[nodiscard]] std::uint64_t highest() const noexcept { return top_; }
    [[nodiscard]] std::uint32_t size() const noexcept { return size_; }

private:
    [[nodiscard]] std::size_t word(std::uint64_t iv) const noexcept { return (iv & (size_ - 1)) >> 6; }
    [[nodiscard]] static std::uint64_t bit(std::uint64_t iv) noexcept { return std::uint64_t{1} << (iv & 63); }
    [[nodiscard]] bool test(std::uint64_t iv) const noexcept { return (bits_[word(iv)] & bit(iv)) != 0; }
    void set(std::uint64_t iv) noexcept { bits_[word(iv)] |= bit(iv); }
    void clear(std::uint64_t iv) noexcept { bits_[word(iv)] &= ~bit(iv); }

    std::vector<std::uint64_t> bits_;  ///< bit (iv mod size) of the IVs in (top - size, top]
    std::uint64_t top_ = 0;            ///< highest IV committed; 0 = none
    std::uint32_t size_;
};

}  // namespace omrc::core
