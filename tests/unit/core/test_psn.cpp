// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include "core/psn.hpp"

using namespace omrc::core;

TEST_CASE("psn_add__wraps_at_24_bits", "[unit][core]") {
    CHECK(psn_add(0xFFFFFF, 1) == 0);
    CHECK(psn_add(0, -1) == 0xFFFFFF);
    CHECK(psn_add(0xFFFFF0, 0x20) == 0x10);
    CHECK(psn_add(5, 3 * (1 << 24)) == 5);
}

TEST_CASE("psn_diff__signed_across_wrap", "[unit][core]") {
    CHECK(psn_diff(0x000002, 0xFFFFFE) == 4);
    CHECK(psn_diff(0xFFFFFE, 0x000002) == -4);
    CHECK(psn_diff(7, 7) == 0);
    CHECK(psn_diff(0x800000, 0) == 0x800000);
    CHECK(psn_diff(0x800001, 0) == -0x7FFFFF);
    CHECK(psn_lt(0xFFFFFF, 0));
    CHECK(psn_le(3, 3));
    CHECK_FALSE(psn_lt(1, 0xFFFFFF));
}

TEST_CASE("psn_diff__consistent_with_add", "[unit][core]") {
    for (std::uint32_t base : {0u, 1u, 0x7FFFFFu, 0xFFFF00u, 0xFFFFFFu})
        for (std::int64_t d = -5000; d <= 5000; d += 37) CHECK(psn_diff(psn_add(base, d), base) == d);
}
