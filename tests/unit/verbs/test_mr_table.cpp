// SPDX-License-Identifier: BSD-3-Clause
// verbs/mr_table: registration rules, key allocation, the overflow-safe
// bounds check and placement.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <random>
#include <set>
#include <unordered_set>
#include <vector>

#include "verbs/mr_table.hpp"

using namespace omrc;
using omrc::core::PlaceStatus;
using omrc::verbs::KeyGenerator;
using omrc::verbs::MrEntry;
using omrc::verbs::MrTable;

namespace {

constexpr std::uint32_t kLw = core::kAccessLocalWrite;
constexpr std::uint32_t kRw = core::kAccessRemoteWrite;
constexpr std::uint32_t kRr = core::kAccessRemoteRead;
constexpr std::uint32_t kRa = core::kAccessRemoteAtomic;
constexpr std::uint32_t kPd = 1;

std::uint64_t addr_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

/// A span of `len` bytes at `p` that is never read: place() must refuse it first.
std::span<const std::uint8_t> unread_span(const std::uint8_t* p, std::uint64_t len) {
    return {p, static_cast<std::size_t>(len)};
}

}  // namespace

TEST_CASE("add__basics", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(1));
    std::vector<std::uint8_t> buf(64);
    MrEntry e;
    REQUIRE(t.add(kPd, addr_of(buf.data()), buf.size(), kLw | kRw, e) == 0);
    CHECK(e.rkey != 0);
    CHECK(e.lkey != 0);
    CHECK(e.addr == addr_of(buf.data()));
    CHECK(e.length == 64);
    CHECK(e.pd == kPd);
    REQUIRE(t.find_rkey(e.rkey) != nullptr);
    REQUIRE(t.find_lkey(e.lkey) != nullptr);
    CHECK(t.find_lkey(e.lkey)->rkey == e.rkey);
    CHECK(t.size() == 1);
    CHECK(t.stats().registered == 1);
}

TEST_CASE("add__zero_length", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(1));
    MrEntry e;
    CHECK(t.add(kPd, 0x1000, 0, kLw, e) == EINVAL);
}

TEST_CASE("add__range_wraps", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(1));
    MrEntry e;
    CHECK(t.add(kPd, UINT64_MAX - 9, 11, kLw, e) == EINVAL);  // would end at 2^64 + 1
    CHECK(t.add(kPd, UINT64_MAX - 9, 10, kLw, e) == 0);       // ends exactly at 2^64
    CHECK(t.add(kPd, 1, UINT64_MAX, kLw, e) == 0);
    CHECK(t.add(kPd, 2, UINT64_MAX, kLw, e) == EINVAL);
}

TEST_CASE("add__access_flags", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(1));
    MrEntry e;
    CHECK(t.add(kPd, 0x1000, 16, 1u << 4, e) == EINVAL);  // unknown bit
    CHECK(t.add(kPd, 0x1000, 16, 0, e) == 0);             // local read only
    CHECK(t.add(kPd, 0x1000, 16, kRr, e) == 0);           // REMOTE_READ needs no LOCAL_WRITE
    CHECK(t.add(kPd, 0x1000, 16, kLw | kRw | kRr | kRa, e) == 0);
}

TEST_CASE("add__local_write_rule", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(1));
    MrEntry e;
    CHECK(t.add(kPd, 0x1000, 16, kRw, e) == EINVAL);
    CHECK(t.add(kPd, 0x1000, 16, kRa, e) == EINVAL);
    CHECK(t.add(kPd, 0x1000, 16, kRw | kRr, e) == EINVAL);
    CHECK(t.add(kPd, 0x1000, 16, kLw | kRw, e) == 0);
    CHECK(t.add(kPd, 0x1000, 16, kLw | kRa, e) == 0);
}

TEST_CASE("remove__basics", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(1));
    MrEntry e;
    REQUIRE(t.add(kPd, 0x1000, 16, kLw, e) == 0);
    CHECK(t.remove(e.rkey) == 0);
    CHECK(t.find_rkey(e.rkey) == nullptr);
    CHECK(t.find_lkey(e.lkey) == nullptr);
    CHECK(t.remove(e.rkey) == EINVAL);
    CHECK(t.size() == 0);
    CHECK(t.stats().deregistered == 1);
}

TEST_CASE("range_inside__edges", "[unit][verbs]") {
    constexpr std::uint64_t base = 1000, len = 100;  // [1000, 1100)
    CHECK(MrTable::range_inside(base, len, 1000, 100));
    CHECK(MrTable::range_inside(base, len, 1099, 1));    // end − 1, 1 byte
    CHECK_FALSE(MrTable::range_inside(base, len, 1099, 2));  // end − 1 + 2
    CHECK_FALSE(MrTable::range_inside(base, len, 999, 1));   // start − 1
    CHECK_FALSE(MrTable::range_inside(base, len, 999, 2));
    CHECK_FALSE(MrTable::range_inside(base, len, 1000, 101));
    CHECK(MrTable::range_inside(base, len, 1100, 0));
    CHECK_FALSE(MrTable::range_inside(base, len, 1101, 0));
    CHECK_FALSE(MrTable::range_inside(base, len, 1000, 0xFFFFFFFFull));
    // va + len wraps past 2^64 and would land inside after truncation.
    CHECK_FALSE(MrTable::range_inside(base, len, UINT64_MAX - 5, 1010));
    CHECK_FALSE(MrTable::range_inside(UINT64_MAX - 99, 100, UINT64_MAX - 10, 20));
    CHECK(MrTable::range_inside(UINT64_MAX - 99, 100, UINT64_MAX - 10, 11));
}

TEST_CASE("check_local__basics", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(2));
    MrEntry e;
    REQUIRE(t.add(kPd, 0x10000, 0x1000, kLw, e) == 0);
    CHECK(t.check_local(kPd, e.lkey, 0x10000, 0x1000, 0));
    CHECK(t.check_local(kPd, e.lkey, 0x10FFF, 1, kLw));
    CHECK_FALSE(t.check_local(kPd, e.lkey, 0x10FFF, 2, 0));      // end − 1 + 2
    CHECK_FALSE(t.check_local(kPd, e.lkey, 0xFFFF, 1, 0));       // start − 1
    CHECK_FALSE(t.check_local(kPd + 1, e.lkey, 0x10000, 1, 0));  // another PD
    CHECK_FALSE(t.check_local(kPd, e.rkey, 0x10000, 1, 0));      // an rkey is not an lkey
    CHECK_FALSE(t.check_local(kPd, e.lkey, 0x10000, 1, kRw));    // access missing
    MrEntry ro;
    REQUIRE(t.add(kPd, 0x20000, 0x1000, 0, ro) == 0);
    CHECK_FALSE(t.check_local(kPd, ro.lkey, 0x20000, 1, kLw));
}

TEST_CASE("place__basics", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(3));
    std::vector<std::uint8_t> mem(256, 0);
    MrEntry e;
    REQUIRE(t.add(kPd, addr_of(mem.data()), mem.size(), kLw | kRw, e) == 0);
    const std::vector<std::uint8_t> data{1, 2, 3, 4, 5};
    CHECK(t.place(kPd, e.rkey, addr_of(mem.data()) + 10, data) == PlaceStatus::ok);
    CHECK(std::equal(data.begin(), data.end(), mem.begin() + 10));
    CHECK(mem[9] == 0);
    CHECK(mem[15] == 0);
    CHECK(t.stats().placed_pkts == 1);
    CHECK(t.stats().placed_bytes == 5);
}

TEST_CASE("place__bounds", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(4));
    std::vector<std::uint8_t> mem(256, 0);
    MrEntry e;
    REQUIRE(t.add(kPd, addr_of(mem.data()), 128, kLw | kRw, e) == 0);  // only the first half
    const std::uint64_t base = addr_of(mem.data());
    const std::vector<std::uint8_t> two{0xAA, 0xBB};
    const std::vector<std::uint8_t> one{0xCC};
    CHECK(t.place(kPd, e.rkey, base + 127, one) == PlaceStatus::ok);
    CHECK(mem[127] == 0xCC);
    CHECK(t.place(kPd, e.rkey, base + 127, two) == PlaceStatus::out_of_bounds);  // end − 1 + 2
    CHECK(t.place(kPd, e.rkey, base - 1, one) == PlaceStatus::out_of_bounds);    // start − 1
    CHECK(t.place(kPd, e.rkey, base, unread_span(mem.data(), 0xFFFFFFFFull)) == PlaceStatus::out_of_bounds);
    CHECK(t.place(kPd, e.rkey, base + 1, unread_span(mem.data(), UINT64_MAX)) ==
          PlaceStatus::out_of_bounds);  // va + len wraps around to base
    CHECK(mem[128] == 0);
    CHECK(mem[126] == 0);
    CHECK(t.stats().rejected[static_cast<std::size_t>(PlaceStatus::out_of_bounds)] == 4);
}

TEST_CASE("place__wrap_at_top_of_address_space", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(5));
    MrEntry e;
    REQUIRE(t.add(kPd, UINT64_MAX - 15, 16, kLw | kRw, e) == 0);  // never written: every place is refused
    std::uint8_t src[32] = {};
    CHECK(t.place(kPd, e.rkey, UINT64_MAX - 3, std::span<const std::uint8_t>(src, 8)) == PlaceStatus::out_of_bounds);
    CHECK(t.place(kPd, e.rkey, UINT64_MAX, std::span<const std::uint8_t>(src, 2)) == PlaceStatus::out_of_bounds);
}

TEST_CASE("place__pd_mismatch", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(6));
    std::vector<std::uint8_t> mem(16, 0);
    MrEntry e;
    REQUIRE(t.add(kPd, addr_of(mem.data()), mem.size(), kLw | kRw, e) == 0);
    const std::vector<std::uint8_t> data{9};
    CHECK(t.place(kPd + 1, e.rkey, addr_of(mem.data()), data) == PlaceStatus::pd_mismatch);
    CHECK(mem[0] == 0);
}

TEST_CASE("place__no_remote_write", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(7));
    std::vector<std::uint8_t> mem(16, 0);
    const std::vector<std::uint8_t> data{9};
    for (std::uint32_t access : {0u, kLw, kLw | kRr, kLw | kRa}) {
        MrEntry e;
        REQUIRE(t.add(kPd, addr_of(mem.data()), mem.size(), access, e) == 0);
        CHECK(t.place(kPd, e.rkey, addr_of(mem.data()), data) == PlaceStatus::no_access);
    }
    CHECK(mem[0] == 0);
}

TEST_CASE("place__bad_rkey", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(8));
    std::vector<std::uint8_t> mem(16, 0);
    MrEntry e;
    REQUIRE(t.add(kPd, addr_of(mem.data()), mem.size(), kLw | kRw, e) == 0);
    const std::vector<std::uint8_t> data{9};
    CHECK(t.place(kPd, e.rkey ^ 1, addr_of(mem.data()), data) == PlaceStatus::bad_rkey);
    CHECK(t.place(kPd, e.lkey, addr_of(mem.data()), data) == PlaceStatus::bad_rkey);
    REQUIRE(t.remove(e.rkey) == 0);
    CHECK(t.place(kPd, e.rkey, addr_of(mem.data()), data) == PlaceStatus::bad_rkey);  // deregistered
    CHECK(mem[0] == 0);
}

TEST_CASE("place__zero_length_is_not_checked", "[unit][verbs]") {
    MrTable t(KeyGenerator::from_seed(9));
    CHECK(t.place(kPd, 0xDEAD, 0, {}) == PlaceStatus::ok);
    CHECK(t.stats().placed_pkts == 0);
}

TEST_CASE("keys__unique_no_reuse_within_quarantine_no_fixed_delta", "[unit][verbs]") {
    constexpr std::size_t kCycles = 100'000;
    constexpr std::size_t kLive = 64;
    const std::uint64_t seed = GENERATE(1u, 0xC0FFEEu);
    CAPTURE(seed);
    MrTable t(KeyGenerator::from_seed(seed));
    std::mt19937_64 pick(seed);
    std::vector<MrEntry> live;
    std::unordered_set<std::uint32_t> live_r, live_l;
    std::deque<std::uint32_t> recent_r, recent_l;  // last kKeyQuarantine released keys
    std::unordered_set<std::uint32_t> recent_r_set, recent_l_set;
    std::set<std::int64_t> deltas;
    std::uint32_t prev_rkey = 0;

    auto release = [](std::uint32_t k, std::deque<std::uint32_t>& q, std::unordered_set<std::uint32_t>& s) {
        q.push_back(k);
        s.insert(k);
        if (q.size() > verbs::kKeyQuarantine) {
            s.erase(q.front());
            q.pop_front();
        }
    };
    std::size_t violations = 0;
    for (std::size_t i = 0; i < kCycles; ++i) {
        if (live.size() == kLive) {
            const std::size_t victim = pick() % live.size();
            const MrEntry gone = live[victim];
            live[victim] = live.back();
            live.pop_back();
            REQUIRE(t.remove(gone.rkey) == 0);
            live_r.erase(gone.rkey);
            live_l.erase(gone.lkey);
            release(gone.rkey, recent_r, recent_r_set);
            release(gone.lkey, recent_l, recent_l_set);
        }
        MrEntry e;
        REQUIRE(t.add(kPd, 0x1000, 64, kLw | kRw, e) == 0);
        violations += e.rkey == 0 || e.lkey == 0 || live_r.count(e.rkey) || live_l.count(e.lkey) ||
                      recent_r_set.count(e.rkey) || recent_l_set.count(e.lkey);
        live_r.insert(e.rkey);
        live_l.insert(e.lkey);
        live.push_back(e);
        if (i > 0) deltas.insert(static_cast<std::int64_t>(e.rkey) - static_cast<std::int64_t>(prev_rkey));
        prev_rkey = e.rkey;
    }
    CHECK(violations == 0);
    CHECK(t.size() == kLive);
    // Random keys: consecutive differences almost never repeat.
    CHECK(deltas.size() > (kCycles - 1) * 99 / 100);
}
