// SPDX-License-Identifier: BSD-3-Clause
#include "verbs/mr_table.hpp"

#include <cerrno>
#include <cstring>
#include <limits>

namespace omrc::verbs {

namespace {
constexpr std::uint32_t kKnownAccess =
    core::kAccessLocalWrite | core::kAccessRemoteWrite | core::kAccessRemoteRead | core::kAccessRemoteAtomic;
}

void MrTable::Quarantine::add(std::uint32_t key) {
    if (capacity_ == 0) return;
    if (ring_.size() < capacity_) {
        ring_.push_back(key);
    } else {
        set_.erase(ring_[next_]);
        ring_[next_] = key;
        next_ = (next_ + 1) % capacity_;
    }
    set_.insert(key);
}

MrTable::MrTable(KeyGenerator keys, std::size_t quarantine)
    : keys_(keys), rkey_quarantine_(quarantine), lkey_quarantine_(quarantine) {}

template <typename Map>
std::uint32_t MrTable::fresh_key(const Map& live, const Quarantine& q) noexcept {
    // Rejection sampling: with n live keys and k quarantined, a draw is
    // refused with probability (n + k + 1) / 2^32.
    for (;;) {
        const std::uint32_t k = keys_.next_u32();
        if (k != 0 && live.count(k) == 0 && !q.contains(k)) return k;
    }
}

int MrTable::add(std::uint32_t pd, std::uint64_t addr, std::uint64_t length, std::uint32_t access, MrEntry& out) {
    if (length == 0 || length - 1 > std::numeric_limits<std::uint64_t>::max() - addr) return EINVAL;
    if ((access & ~kKnownAccess) != 0) return EINVAL;
    if ((access & (core::kAccessRemoteWrite | core::kAccessRemoteAtomic)) && !(access & core::kAccessLocalWrite))
        return EINVAL;
    MrEntry e{addr, length, pd, access, 0, 0};
    e.rkey = fresh_key(by_rkey_, rkey_quarantine_);
    e.lkey = fresh_key(by_lkey_, lkey_quarantine_);
    by_rkey_.emplace(e.rkey, e);
    by_lkey_.emplace(e.lkey, e.rkey);
    ++stats_.registered;
    out = e;
    return 0;
}

int MrTable::remove(std::uint32_t rkey) {
    auto it = by_rkey_.find(rkey);
    if (it == by_rkey_.end()) return EINVAL;
    const std::uint32_t lkey = it->second.lkey;
    by_lkey_.erase(lkey);
    by_rkey_.erase(it);
    rkey_quarantine_.add(rkey);
    lkey_quarantine_.add(lkey);
    ++stats_.deregistered;
    return 0;
}

const MrEntry* MrTable::find_rkey(std::uint32_t rkey) const noexcept {
    auto it = by_rkey_.find(rkey);
    return it == by_rkey_.end() ? nullptr : &it->second;
}

const MrEntry* MrTable::find_lkey(std::uint32_t lkey) const noexcept {
    auto it = by_lkey_.find(lkey);
    return it == by_lkey_.end() ? nullptr : find_rkey(it->second);
}

bool MrTable::check_local(std::uint32_t pd, std::uint32_t lkey, std::uint64_t addr, std::uint64_t len,
                          std::uint32_t need_access) const noexcept {
    const MrEntry* e = find_lkey(lkey);
    return e != nullptr && e->pd == pd && (e->access & need_access) == need_access &&
           range_inside(e->addr, e->length, addr, len);
}

core::PlaceStatus MrTable::check_remote(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va,
                                        std::uint64_t len) const noexcept {
    const MrEntry* e = find_rkey(rkey);
    if (e == nullptr) return core::PlaceStatus::bad_rkey;
    if (e->pd != pd) return core::PlaceStatus::pd_mismatch;
    if (!(e->access & core::kAccessRemoteWrite)) return core::PlaceStatus::no_access;
    if (!range_inside(e->addr, e->length, va, len)) return core::PlaceStatus::out_of_bounds;
    return core::PlaceStatus::ok;
}

core::PlaceStatus MrTable::place(std::uint32_t pd, std::uint32_t rkey, std::uint64_t va,
                                 std::span<const std::uint8_t> bytes) {
    return place_counted(stats_, pd, rkey, va, bytes);
}

core::PlaceStatus MrTable::place_counted(MrTableStats& stats, std::uint32_t pd, std::uint32_t rkey, std::uint64_t va,
                                         std::span<const std::uint8_t> bytes) const noexcept {
    if (bytes.empty()) return core::PlaceStatus::ok;
    const core::PlaceStatus s = check_remote(pd, rkey, va, bytes.size());
    if (s != core::PlaceStatus::ok) {
        ++stats.rejected[static_cast<std::size_t>(s)];
        return s;
    }
    std::memcpy(reinterpret_cast<void*>(static_cast<std::uintptr_t>(va)), bytes.data(), bytes.size());
    ++stats.placed_pkts;
    stats.placed_bytes += bytes.size();
    return s;
}

}  // namespace omrc::verbs

namespace omrc::verbs {

core::PlaceStatus MrTable::place_local_counted(MrTableStats& stats, std::uint32_t pd, std::uint32_t lkey,
                                               std::uint8_t* addr, std::span<const std::uint8_t> bytes) const noexcept {
    if (bytes.empty()) return core::PlaceStatus::ok;
    const auto va = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(addr));
    if (!check_local(pd, lkey, va, bytes.size(), core::kAccessLocalWrite)) {
        ++stats.rejected[static_cast<std::size_t>(core::PlaceStatus::bad_rkey)];
        return core::PlaceStatus::bad_rkey;
    }
    std::memcpy(addr, bytes.data(), bytes.size());
    ++stats.placed_pkts;
    stats.placed_bytes += bytes.size();
    return core::PlaceStatus::ok;
}

core::PlaceStatus MrTable::read_source_counted(MrTableStats& stats, std::uint32_t pd, std::uint32_t rkey,
                                               std::uint64_t va, std::uint64_t len,
                                               const std::uint8_t*& out) const noexcept {
    out = nullptr;
    core::PlaceStatus s = core::PlaceStatus::ok;
    const MrEntry* e = find_rkey(rkey);
    if (e == nullptr) s = core::PlaceStatus::bad_rkey;
    else if (e->pd != pd) s = core::PlaceStatus::pd_mismatch;
    else if (!(e->access & core::kAccessRemoteRead)) s = core::PlaceStatus::no_access;
    else if (!range_inside(e->addr, e->length, va, len)) s = core::PlaceStatus::out_of_bounds;
    if (s != core::PlaceStatus::ok) {
        ++stats.rejected[static_cast<std::size_t>(s)];
        return s;
    }
    out = reinterpret_cast<const std::uint8_t*>(static_cast<std::uintptr_t>(va));
    return s;
}

}  // namespace omrc::verbs
