// SPDX-License-Identifier: BSD-3-Clause
// lib/driver/args: the argument helper of every driver and the device, in
// the order of args.hpp (split, parse_uint, parse_mac, ArgReader).
#include <catch2/catch.hpp>

#include "driver/args.hpp"

using namespace omrc;
using driver::ArgKey;
using driver::ArgMap;
using driver::ArgReader;
using driver::Empty;

namespace {

using Items = std::vector<std::string_view>;

constexpr ArgKey kKeys[] = {{"depth"}, {"name"}, {"ports"}, {"zero_copy"}, {"big"}};

// A driver with two modes: "a" in both, "only1" in mode 1, "only2" in mode 2.
constexpr std::uint32_t kMode1 = 1, kMode2 = 2;
constexpr ArgKey kModeKeys[] = {{"a", kMode1 | kMode2}, {"only1", kMode1}, {"only2", kMode2}};

}  // namespace

TEST_CASE("split__basics", "[unit][driver]") {
    CHECK(driver::split("a,b,c") == Items{"a", "b", "c"});
    CHECK(driver::split("one") == Items{"one"});
    CHECK(driver::split("x;y,z", ';') == Items{"x", "y,z"});
}

TEST_CASE("split__empty_items_kept_or_skipped", "[unit][driver]") {
    CHECK(driver::split("a,,b,") == Items{"a", "", "b", ""});
    CHECK(driver::split("a,,b,", ',', Empty::skip) == Items{"a", "b"});
    CHECK(driver::split("") == Items{""});
    CHECK(driver::split("", ',', Empty::skip).empty());
    CHECK(driver::split(",", ',', Empty::skip).empty());
}

TEST_CASE("parse_uint__whole_decimal_text_only", "[unit][driver]") {
    std::uint64_t v = 7;
    CHECK(driver::parse_uint("0", v));
    CHECK(v == 0);
    CHECK(driver::parse_uint("18446744073709551615", v));
    CHECK(v == UINT64_MAX);
    v = 7;
    for (const char* bad : {"", "-1", "+1", " 1", "1 ", "0x10", "12a", "18446744073709551616"}) {
        INFO(bad);
        CHECK_FALSE(driver::parse_uint(bad, v));
        CHECK(v == 7);  // untouched
    }
}

TEST_CASE("parse_mac__six_hex_pairs", "[unit][driver]") {
    wire::MacAddr m{};
    REQUIRE(driver::parse_mac("02:6d:72:63:0A:ff", m));
    CHECK(m == wire::MacAddr{0x02, 0x6d, 0x72, 0x63, 0x0a, 0xff});
    const wire::MacAddr before = m;
    for (const char* bad : {"", "02:6d:72:63:0a", "02:6d:72:63:0a:ff:00", "02-6d-72-63-0a-ff", "02:6d:72:63:0a:fg",
                            "2:6d:72:63:0a:ff0", " 02:6d:72:63:0a:f"}) {
        INFO(bad);
        CHECK_FALSE(driver::parse_mac(bad, m));
        CHECK(m == before);
    }
}

TEST_CASE("ArgReader__unknown_key_names_the_accepted_ones", "[unit][driver]") {
    const ArgMap args{{"depht", "4"}};
    ArgReader a(args, kKeys);
    CHECK_FALSE(a.ok());
    CHECK(a.error() == "unknown option depht (accepted: depth, name, ports, zero_copy, big)");
}

TEST_CASE("ArgReader__key_of_another_mode", "[unit][driver]") {
    const ArgMap args{{"a", "1"}, {"only2", "1"}};
    ArgReader in1(args, kModeKeys, kMode1, "first");
    CHECK(in1.error() == "option only2 does not apply in first mode (accepted: a, only1)");
    ArgReader in2(args, kModeKeys, kMode2, "second");
    CHECK(in2.ok());
}

TEST_CASE("ArgReader__number_in_range_or_default", "[unit][driver]") {
    const ArgMap args{{"depth", "64"}};
    ArgReader a(args, kKeys);
    std::uint32_t depth = 1, absent = 9;
    std::uint16_t big = 3;
    a.number("depth", depth, 1, 64).number("big", big).number("name", absent);
    CHECK(a.ok());
    CHECK(depth == 64);
    CHECK(big == 3);      // absent: the default stays
    CHECK(absent == 9);
}

TEST_CASE("ArgReader__number_errors_say_what_is_allowed", "[unit][driver]") {
    struct Case {
        const char* value;
        std::uint64_t min, max;
        const char* error;
    };
    for (const Case& c : {Case{"x", 0, 10, "depth=x is not an unsigned integer"},
                          Case{"-3", 0, 10, "depth=-3 is not an unsigned integer"},
                          Case{"11", 1, 10, "depth=11 must be 1..10"},
                          Case{"0", 1, 10, "depth=0 must be 1..10"},
                          Case{"11", 0, 10, "depth=11 must be ≤ 10"},
                          Case{"5", 1024, UINT64_MAX, "depth=5 must be ≥ 1024"},
                          Case{"70000", 0, UINT64_MAX, "depth=70000 must be ≤ 65535"}}) {
        INFO(c.value);
        const ArgMap args{{"depth", c.value}};
        ArgReader a(args, kKeys);
        std::uint16_t depth = 42;
        a.number("depth", depth, c.min, c.max);
        CHECK(a.error() == c.error);
        CHECK(depth == 42);
    }
}

TEST_CASE("ArgReader__first_error_wins", "[unit][driver]") {
    const ArgMap args{{"depth", "x"}, {"big", "5"}, {"zero_copy", "2"}};
    ArgReader a(args, kKeys);
    std::uint32_t depth = 1, big = 1;
    bool zc = true;
    a.number("depth", depth).number("big", big).flag("zero_copy", zc).fail("later");
    CHECK(a.error() == "depth=x is not an unsigned integer");
    CHECK(big == 1);  // read after the error: left alone
    CHECK(zc);
}

TEST_CASE("ArgReader__flag_text_list", "[unit][driver]") {
    const ArgMap args{{"zero_copy", "0"}, {"name", "a b"}, {"ports", "p0,,p1"}};
    ArgReader a(args, kKeys);
    bool zc = true;
    std::string name;
    std::vector<std::string> ports;
    a.flag("zero_copy", zc).text("name", name).list("ports", ports);
    REQUIRE(a.ok());
    CHECK_FALSE(zc);
    CHECK(name == "a b");
    CHECK(ports == std::vector<std::string>{"p0", "p1"});
    CHECK(a.has("name"));
    CHECK_FALSE(a.has("big"));
    REQUIRE(a.find("name") != nullptr);
    CHECK(*a.find("name") == "a b");
    CHECK(a.find("big") == nullptr);

    ArgReader strict(args, kKeys);
    strict.list("ports", ports, ',', Empty::keep);
    CHECK(strict.error() == "ports: empty item in 'p0,,p1'");
    const ArgMap bad_flag{{"zero_copy", "yes"}};
    ArgReader f(bad_flag, kKeys);
    f.flag("zero_copy", zc);
    CHECK(f.error() == "zero_copy=yes must be 0 or 1");
}

TEST_CASE("ArgReader__choice_of_named_values", "[unit][driver]") {
    enum class Icrc { automatic, software, none };
    const ArgMap args{{"name", "none"}};
    ArgReader a(args, kKeys);
    Icrc v = Icrc::automatic, absent = Icrc::software;
    a.choice("name", v, {{"auto", Icrc::automatic}, {"software", Icrc::software}, {"none", Icrc::none}})
        .choice("ports", absent, {{"auto", Icrc::automatic}});
    REQUIRE(a.ok());
    CHECK(v == Icrc::none);
    CHECK(absent == Icrc::software);
    const ArgMap bad{{"name", "hardware"}};
    ArgReader b(bad, kKeys);
    b.choice("name", v, {{"auto", Icrc::automatic}, {"software", Icrc::software}, {"none", Icrc::none}});
    CHECK(b.error() == "name=hardware must be auto, software or none");
    CHECK(v == Icrc::none);
}

TEST_CASE("ArgReader__fail_records_the_driver_s_own_checks", "[unit][driver]") {
    const ArgMap args;
    ArgReader a(args, kKeys);
    CHECK(a.ok());
    a.fail("ports: no such port").fail("second");
    CHECK(a.error() == "ports: no such port");
}
