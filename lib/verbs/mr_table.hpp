// SPDX-License-Identifier: BSD-3-Clause
// The MR table of one device: memory registrations by rkey and lkey, key
// allocation, and placement of received payload (core::PlacementTarget).
//
// Threads: owned by its Device. Registration, deregistration and post-time
// lkey checks run on the device's owning thread; placement runs on the
// thread of each worker (MrPlacement), and add()/remove() only while every
// worker is parked (a device without worker threads: the same thread).
// Because placement and remove() never run concurrently, "remove()
// returned" implies "no later placement writes into that memory" without a
// lock.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/types.hpp"
#include "verbs/key_generator.hpp"

namespace omrc::verbs {

/// Deregistered keys that are not handed out again until this many later
/// deregistrations have happened (per key kind).
inline constexpr std::size_t kKeyQuarantine = 4096;

struct MrEntry {
    std::uint64_t addr = 0;
    std::uint64_t length = 0;   ///< bytes; addr + length does not wrap
    std::uint32_t pd = 0;
    std::uint32_t access = 0;   ///< core::AccessFlags bits
    std::uint32_t lkey = 0;
    std::uint32_t rkey = 0;
};

struct MrTableStats {
    std::uint64_t registered = 0;
    std::uint64_t deregistered = 0;
    std::uint64_t placed_pkts = 0;
    std::uint64_t placed_bytes = 0;
    /// place() refusals, indexed by core::PlaceStatus (index 0, ok, stays 0).
    std::array<std::uint64_t, 5> rejected{};
};

class MrTable final : public core::PlacementTarget {
public:
    explicit MrTable(KeyGenerator keys, std::size_t quarantine = kKeyQuarantine);

    /// Registers [addr, addr+length) in `pd`. 0, or EINVAL: length 0, range
    /// wraps past 2^64, access bits outside the four known ones, or
    /// REMOTE_WRITE/REMOTE_ATOMIC without LOCAL_WRITE (the ibverbs rule).
    /// `out` receives the entry with fresh random keys.
    int add(std::uint32_t pd, std::uint64_t addr, std::uint64_t length, std::uint32_t access, MrEntry& out);
    /// Removes the MR of `rkey`; its keys go to quarantine. 0 or EINVAL (not live).
    int remove(std::uint32_t rkey);

    [[nodiscard]] const MrEntry* find_rkey(std::uint32_t rkey) const noexcept;
    [[nodiscard]] const MrEntry* find_lkey(std::uint32_t lkey) const noexcept;

    /// Local use of [addr, addr+len) through `lkey`: the MR is live, belongs
    /// to `pd`, contains the range and has every bit of `need_access`.
    [[nodiscard]] bool check_local(std::uint32_t pd, std::uint32_t lkey, std::uint64_t addr, std::uint64_t len,
                                   std::uint32_t need_access) const noexcept;
    /// Remote write of `len` bytes at `va` through `rkey` from a QP of `pd`.
    [[nodiscard]] core::PlaceStatus check_remote(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va,
                                                 std::uint64_t len) const noexcept;

    /// Checks (check_remote) then copies. A zero-length write touches nothing
    /// and is accepted without checks (InfiniBand: no R_Key validation for
    /// DMA length 0).
    core::PlaceStatus place(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va,
                            std::span<const std::uint8_t> bytes) override;

    /// The engine's whole-message check (check_remote, counted when refused).
    core::PlaceStatus check(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va, std::uint64_t len) override {
        return check_counted(stats_, pd, rkey, va, len);
    }
    /// A SEND's bytes into a receive buffer: the MR of `lkey` is still live
    /// (the receive was checked when posted) and holds the range, then copied.
    core::PlaceStatus place_local(std::uint32_t pd, std::uint32_t lkey, std::uint8_t* addr,
                                  std::span<const std::uint8_t> bytes) override {
        return place_local_counted(stats_, pd, lkey, addr, bytes);
    }
    core::PlaceStatus place_local_counted(MrTableStats& stats, std::uint32_t pd, std::uint32_t lkey, std::uint8_t* addr,
                                          std::span<const std::uint8_t> bytes) const noexcept;
    /// An RDMA READ's bytes [va, va+len) through `rkey`: the MR is live, of
    /// `pd`, has REMOTE_READ and holds the range (refusals counted).
    core::PlaceStatus read_source(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va, std::uint64_t len,
                                  const std::uint8_t*& out) override {
        return read_source_counted(stats_, pd, rkey, va, len, out);
    }
    core::PlaceStatus read_source_counted(MrTableStats& stats, std::uint32_t pd, std::uint32_t rkey, std::uint64_t va,
                                          std::uint64_t len, const std::uint8_t*& out) const noexcept;

    /// place() and check() counting into `stats` instead of the table's
    /// own: what each worker's MrPlacement calls (several threads may do so
    /// at once; none may while the table changes).
    core::PlaceStatus place_counted(MrTableStats& stats, std::uint32_t pd, std::uint32_t rkey, std::uint64_t va,
                                    std::span<const std::uint8_t> bytes) const noexcept;
    core::PlaceStatus check_counted(MrTableStats& stats, std::uint32_t pd, std::uint32_t rkey, std::uint64_t va,
                                    std::uint64_t len) const noexcept {
        const core::PlaceStatus s = len == 0 ? core::PlaceStatus::ok : check_remote(pd, rkey, va, len);
        if (s != core::PlaceStatus::ok) ++stats.rejected[static_cast<std::size_t>(s)];
        return s;
    }

    [[nodiscard]] std::size_t size() const noexcept { return by_rkey_.size(); }
    [[nodiscard]] const MrTableStats& stats() const noexcept { return stats_; }

    /// [va, va+len) ⊆ [base, base+length), computed without overflow. A range
    /// whose end would pass 2^64 is never inside.
    [[nodiscard]] static bool range_inside(std::uint64_t base, std::uint64_t length, std::uint64_t va,
                                           std::uint64_t len) noexcept {
        return va >= base && len <= length && va - base <= length - len;
    }

private:
    /// Recently released keys, oldest evicted first.
    class Quarantine {
    public:
        explicit Quarantine(std::size_t capacity) : capacity_(capacity) {}
        [[nodiscard]] bool contains(std::uint32_t key) const { return set_.count(key) != 0; }
        void add(std::uint32_t key);

    private:
        std::size_t capacity_;
        std::vector<std::uint32_t> ring_;
        std::size_t next_ = 0;  ///< ring_ slot to overwrite once full
        std::unordered_set<std::uint32_t> set_;
    };

    template <typename Map>
    std::uint32_t fresh_key(const Map& live, const Quarantine& q) noexcept;

    KeyGenerator keys_;
    std::unordered_map<std::uint32_t, MrEntry> by_rkey_;
    std::unordered_map<std::uint32_t, std::uint32_t> by_lkey_;  ///< lkey → rkey
    Quarantine rkey_quarantine_;
    Quarantine lkey_quarantine_;
    MrTableStats stats_{};
};

/// One worker's placement into a device's MR table (the worker's engine's
/// PlacementTarget): the table's checks and copy, counted per worker so
/// that workers share no counter. Threads: the worker's; the table changes
/// only while every worker is parked (docs/ARCHITECTURE.md, "Workers").
class MrPlacement final : public core::PlacementTarget {
public:
    explicit MrPlacement(const MrTable& table) : table_(table) {}
    core::PlaceStatus place(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va,
                            std::span<const std::uint8_t> bytes) override {
        return table_.place_counted(stats_, pd, rkey, va, bytes);
    }
    core::PlaceStatus check(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va, std::uint64_t len) override {
        return table_.check_counted(stats_, pd, rkey, va, len);
    }
    core::PlaceStatus place_local(std::uint32_t pd, std::uint32_t lkey, std::uint8_t* addr,
                                  std::span<const std::uint8_t> bytes) override {
        return table_.place_local_counted(stats_, pd, lkey, addr, bytes);
    }
    core::PlaceStatus read_source(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va, std::uint64_t len,
                                  const std::uint8_t*& out) override {
        return table_.read_source_counted(stats_, pd, rkey, va, len, out);
    }
    /// placed_pkts, placed_bytes and rejected (registered/deregistered stay 0).
    [[nodiscard]] const MrTableStats& stats() const noexcept { return stats_; }

private:
    const MrTable& table_;
    MrTableStats stats_{};
};

}  // namespace omrc::verbs
