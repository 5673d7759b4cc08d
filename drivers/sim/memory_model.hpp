// SPDX-License-Identifier: BSD-3-Clause
// Where a simulated NIC's engine places received payload
// (core::PlacementTarget). CountingMemory keeps no bytes — 131,072 simulated
// GPUs need no buffers — and only counts what would have been written;
// BufferMemory holds real regions and checks every write, for byte-exact
// tests on small fabrics.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/types.hpp"

namespace omrc::sim {

/// Accepts every placement (check() keeps PlacementTarget's accepting default).
class CountingMemory final : public core::PlacementTarget {
public:
    core::PlaceStatus place(std::uint32_t, std::uint32_t, std::uint64_t, std::span<const std::uint8_t> bytes) override {
        placed_bytes_ += bytes.size();
        return core::PlaceStatus::ok;
    }
    [[nodiscard]] std::uint64_t placed_bytes() const noexcept { return placed_bytes_; }

private:
    std::uint64_t placed_bytes_ = 0;  ///< payload bytes accepted (duplicates are filtered by the engine first)
};

/// Real memory: regions [va, va + size) under an rkey, writes bounds-checked.
class BufferMemory final : public core::PlacementTarget {
public:
    /// Registers `size` zeroed bytes at virtual address `va` under `rkey`; returns the region.
    std::span<std::uint8_t> add_region(std::uint32_t rkey, std::uint64_t va, std::size_t size) {
        regions_.push_back(Region{rkey, va, std::vector<std::uint8_t>(size, 0)});
        return regions_.back().bytes;
    }
    core::PlaceStatus place(std::uint32_t, std::uint32_t rkey, std::uint64_t va,
                            std::span<const std::uint8_t> bytes) override {
        for (auto& r : regions_) {
            if (r.rkey != rkey) continue;
            if (va < r.va || va - r.va > r.bytes.size() || bytes.size() > r.bytes.size() - (va - r.va))
                return core::PlaceStatus::out_of_bounds;
            if (!bytes.empty()) std::memcpy(r.bytes.data() + (va - r.va), bytes.data(), bytes.size());
            return core::PlaceStatus::ok;
        }
        return core::PlaceStatus::bad_rkey;
    }
    core::PlaceStatus check(std::uint32_t, std::uint32_t rkey, std::uint64_t va, std::uint64_t len) override {
        for (const auto& r : regions_)
            if (r.rkey == rkey)
                return (va >= r.va && va - r.va <= r.bytes.size() && len <= r.bytes.size() - (va - r.va))
                           ? core::PlaceStatus::ok
                           : core::PlaceStatus::out_of_bounds;
        return core::PlaceStatus::bad_rkey;
    }

private:
    struct Region {
        std::uint32_t rkey;
        std::uint64_t va;
        std::vector<std::uint8_t> bytes;
    };
    std::vector<Region> regions_;
};

}  // namespace omrc::sim
