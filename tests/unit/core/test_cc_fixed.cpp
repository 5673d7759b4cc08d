// SPDX-License-Identifier: BSD-3-Clause
// The fixed window (lib/core/cc_fixed.cpp), built through its registration.
#include <catch2/catch.hpp>

#include "core/cc.hpp"

using namespace omrc::core;

TEST_CASE("FixedWindow__constant", "[unit][core]") {
    CcConfig c;
    c.algorithm = CcAlgorithm::fixed;
    c.fixed_window_bytes = 12345;
    const auto f = make_cc(c, 8, 4096);
    REQUIRE(f != nullptr);
    f->on_loss(1);
    f->on_trim(2);
    f->on_ack({1000, 50'000, true, 3});
    CHECK(f->window_bytes() == 12345);
}

TEST_CASE("FixedWindow__registration_reads_fixed_window_bytes", "[unit][core]") {
    const CcAlgorithmInfo* a = find_cc(CcAlgorithm::fixed);
    REQUIRE(a != nullptr);
    REQUIRE(a->params.size() == 1);
    CHECK(a->params[0].key == "fixed_window_bytes");
    CcConfig c;
    a->params[0].set(c, 65536);
    CHECK(c.fixed_window_bytes == 65536);
    CHECK(a->params[0].get(c) == 65536);
    CHECK_FALSE(a->params[0].accepts(63));
}
