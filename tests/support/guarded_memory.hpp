// SPDX-License-Identifier: BSD-3-Clause
// A placement target for engine-level tests: one region per rkey, bounds
// checked without overflow, every placed byte counted.
#pragma once

#include <cstring>
#include <vector>

#include "core/types.hpp"

namespace omrc::test {

/// A placement target over one guarded region per rkey.
class GuardedMemory final : public core::PlacementTarget {
public:
    /// `readable`: RDMA READs may read it (REMOTE_READ).
    void add(std::uint32_t rkey, std::uint8_t* base, std::size_t len, bool readable = true) {
        regions_.push_back({rkey, base, len, readable});
    }
    void remove(std::uint32_t rkey) {
        std::erase_if(regions_, [&](const Region& r) { return r.rkey == rkey; });
    }
    core::PlaceStatus place(std::uint32_t, std::uint32_t rkey, std::uint64_t va,
                            std::span<const std::uint8_t> bytes) override {
        for (const Region& r : regions_) {
            if (r.rkey != rkey) continue;
            const auto base = reinterpret_cast<std::uint64_t>(r.base);
            if (va < base || bytes.size() > r.len || va - base > r.len - bytes.size())
                return core::PlaceStatus::out_of_bounds;
            if (!bytes.empty()) std::memcpy(reinterpret_cast<void*>(va), bytes.data(), bytes.size());
            placed_bytes += bytes.size();
            ++writes;
            return core::PlaceStatus::ok;
        }
        return core::PlaceStatus::bad_rkey;
    }
    /// A whole message range, as an MR table checks it at a message's first packet.
    core::PlaceStatus check(std::uint32_t, std::uint32_t rkey, std::uint64_t va, std::uint64_t len) override {
        for (const Region& r : regions_) {
            if (r.rkey != rkey) continue;
            const auto base = reinterpret_cast<std::uint64_t>(r.base);
            if (va < base || len > r.len || va - base > r.len - len) return core::PlaceStatus::out_of_bounds;
            return core::PlaceStatus::ok;
        }
        return core::PlaceStatus::bad_rkey;
    }
    /// An RDMA READ's source, as an MR table answers it (REMOTE_READ, bounds).
    core::PlaceStatus read_source(std::uint32_t, std::uint32_t rkey, std::uint64_t va, std::uint64_t len,
                                  const std::uint8_t*& out) override {
        out = nullptr;
        for (const Region& r : regions_) {
            if (r.rkey != rkey) continue;
            if (!r.readable) return core::PlaceStatus::no_access;
            const auto base = reinterpret_cast<std::uint64_t>(r.base);
            if (va < base || len > r.len || va - base > r.len - len) return core::PlaceStatus::out_of_bounds;
            out = reinterpret_cast<const std::uint8_t*>(va);
            ++reads;
            return core::PlaceStatus::ok;
        }
        return core::PlaceStatus::bad_rkey;
    }
    std::uint64_t placed_bytes = 0;
    std::uint64_t writes = 0;  ///< successful place() calls
    std::uint64_t reads = 0;   ///< successful read_source() calls

private:
    struct Region {
        std::uint32_t rkey;
        std::uint8_t* base;
        std::size_t len;
        bool readable;
    };
    std::vector<Region> regions_;
};

}  // namespace omrc::test
