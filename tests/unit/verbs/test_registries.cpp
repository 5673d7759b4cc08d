// SPDX-License-Identifier: BSD-3-Clause
// The engine's registries in the public API (lib/verbs/registries.cpp):
// names, parameters by key, policies a Device offers.
#include <catch2/catch.hpp>

#include <cerrno>
#include <string>

#include "omrc/verbs.hpp"

using namespace omrc;

TEST_CASE("cc_algorithms__every_builtin_with_its_keys", "[unit][verbs]") {
    const std::vector<CcAlgorithmInfo> all = cc_algorithms();
    REQUIRE(all.size() >= 5);
    bool dcqcn_g = false;
    for (const CcAlgorithmInfo& a : all) {
        CHECK(std::string(to_string(a.algorithm)) == a.name);
        CcAlgorithm found{};
        CHECK(cc_algorithm_by_name(a.name, &found) == 0);
        CHECK(found == a.algorithm);
        for (const CcParameterInfo& p : a.parameters) dcqcn_g |= a.algorithm == CcAlgorithm::dcqcn && p.key == "dcqcn_g";
    }
    CHECK(dcqcn_g);
}

TEST_CASE("cc_algorithm_by_name__unknown_lists_the_known", "[unit][verbs]") {
    std::string why;
    CcAlgorithm a = CcAlgorithm::fixed;
    CHECK(cc_algorithm_by_name("qcn", &a, &why) == EINVAL);
    CHECK(a == CcAlgorithm::fixed);
    CHECK(why == "no congestion control 'qcn' (known: fixed, nscc, dcqcn, hpcc, credit)");
    CHECK(std::string(to_string(static_cast<CcAlgorithm>(200))) == "unknown");
}

TEST_CASE("set_cc_parameter__reaches_the_typed_field", "[unit][verbs]") {
    CcConfig c;
    CHECK(set_cc_parameter(c, "dcqcn_g", 0.0625) == 0);
    CHECK(c.dcqcn.g == 0.0625);
    CHECK(set_cc_parameter(c, "credit_quantum_bytes", 8192) == 0);
    CHECK(c.credit.quantum_bytes == 8192);
    CHECK(set_cc_parameter(c, "fixed_window_bytes", 65536) == 0);
    CHECK(c.fixed_window_bytes == 65536);
    double v = 0;
    CHECK(get_cc_parameter(c, "credit_quantum_bytes", &v) == 0);
    CHECK(v == 8192);
    CHECK(c.algorithm == CcAlgorithm::nscc);  // nothing else changes
}

TEST_CASE("set_cc_parameter__unknown_key_or_out_of_range", "[unit][verbs]") {
    CcConfig c;
    std::string why;
    CHECK(set_cc_parameter(c, "rate", 1, &why) == EINVAL);
    CHECK(why == "no congestion-control parameter 'rate'");
    CHECK(set_cc_parameter(c, "hpcc_eta", 2, &why) == EINVAL);
    CHECK(why == "hpcc_eta must be > 0 and ≤ 1, got 2");
    CHECK(set_cc_parameter(c, "hpcc_max_stage", 65, &why) == EINVAL);
    CHECK(why == "hpcc_max_stage must be a whole number in 0..64, got 65");
    CHECK(c.hpcc.eta == HpccConfig{}.eta);
    double v = 0;
    CHECK(get_cc_parameter(c, "rate", &v) == EINVAL);
}

TEST_CASE("path_policies__the_public_ones_in_enum_order", "[unit][verbs]") {
    const std::vector<PathPolicyInfo> all = path_policies();
    REQUIRE(all.size() == 3);
    CHECK(all[0].policy == PathPolicy::ecmp);
    CHECK(all[1].policy == PathPolicy::spray);
    CHECK(all[2].policy == PathPolicy::adaptive);
    for (const PathPolicyInfo& p : all) {
        CHECK(std::string(to_string(p.policy)) == p.name);
        CHECK_FALSE(p.description.empty());
        PathPolicy found{};
        CHECK(path_policy_by_name(p.name, &found) == 0);
        CHECK(found == p.policy);
    }
}

TEST_CASE("path_policy_by_name__a_simulator_policy_is_not_offered", "[unit][verbs]") {
    std::string why;
    PathPolicy p = PathPolicy::adaptive;
    CHECK(path_policy_by_name("reps", &p, &why) == EINVAL);
    CHECK(why == "no path policy 'reps' (known: ecmp, spray, adaptive)");
    CHECK(p == PathPolicy::adaptive);
    CHECK(std::string(to_string(static_cast<PathPolicy>(5))) == "unknown");
}
