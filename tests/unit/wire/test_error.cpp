// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "wire/error.hpp"

using namespace omrc::wire;

TEST_CASE("to_string(WireError)__every_reason_named_once", "[unit][wire]") {
    std::set<std::string> names;
    for (int e = 0; e < static_cast<int>(WireError::count_); ++e) {
        const std::string n(to_string(static_cast<WireError>(e)));
        CHECK(n != "unknown");
        names.insert(n);
    }
    CHECK(names.size() == static_cast<std::size_t>(WireError::count_));
}
