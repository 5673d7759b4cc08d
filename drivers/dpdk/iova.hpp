// SPDX-License-Identifier: BSD-3-Clause
// Payload at its IOVA: a segment of registered memory (MemRegion) cut into
// pieces each contiguous in IOVA, one external buffer each (datapath.cpp).
// In IOVA-as-VA mode a segment is one piece; in PA mode it is cut where a
// page's physical address does not follow the page before it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "drivers/dpdk/dpdk_driver.hpp"

namespace omrc::dpdk {

struct Piece {
    const std::uint8_t* va = nullptr;
    std::uint32_t len = 0;
    std::uint64_t iova = 0;
};

/// Appends the pieces of [va, va+len) (inside `r`) to `out`; false, with
/// `out` cut back, when there would be more than `room` in all.
inline bool pieces_of(const MemRegion& r, const std::uint8_t* va, std::uint32_t len, std::vector<Piece>& out,
                      std::size_t room) {
    const std::size_t before = out.size();
    const auto a = reinterpret_cast<std::uintptr_t>(va);
    if (r.iova_is_va) {
        if (out.size() >= room) return false;
        out.push_back({va, len, static_cast<std::uint64_t>(a)});
        return true;
    }
    std::uintptr_t at = a;
    const std::uintptr_t end = a + len;
    while (at < end) {
        const std::size_t page = (at - r.start) / r.page;
        const std::uint64_t iova = r.iova[page] + (at - r.start) % r.page;
        std::uintptr_t run_end = std::min<std::uintptr_t>(end, r.start + (page + 1) * r.page);
        // Following pages whose IOVA continues this one's stay in the piece.
        for (std::size_t next = page + 1; run_end < end && r.iova[next] == r.iova[next - 1] + r.page; ++next)
            run_end = std::min<std::uintptr_t>(end, r.start + (next + 1) * r.page);
        if (out.size() >= room) {
            out.resize(before);
            return false;
        }
        out.push_back({reinterpret_cast<const std::uint8_t*>(at), static_cast<std::uint32_t>(run_end - at), iova});
        at = run_end;
    }
    return true;
}

}  // namespace omrc::dpdk
