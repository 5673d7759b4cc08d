// SPDX-License-Identifier: BSD-3-Clause
// The congestion-control registry (lib/core/cc.cpp): every algorithm
// registered once, found by id and by name, its keys reaching its fields.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "core/cc.hpp"
#include "core/cc_credit.hpp"
#include "wire/mrc_choices.hpp"

using namespace omrc::core;

TEST_CASE("cc_algorithms__ids_names_and_keys_are_unique", "[unit][core]") {
    std::set<int> ids;
    std::set<std::string> names, keys;
    for (const CcAlgorithmInfo* a : cc_algorithms()) {
        CHECK(ids.insert(static_cast<int>(a->id)).second);
        CHECK(names.insert(std::string(a->name)).second);
        CHECK_FALSE(a->description.empty());
        CHECK(a->make != nullptr);
        for (const CcParam& p : a->params) {
            CHECK(keys.insert(std::string(p.key)).second);
            CHECK(p.get != nullptr);
            CHECK(p.set != nullptr);
            CHECK(p.max > 0);
        }
    }
    CHECK(names == std::set<std::string>{"fixed", "nscc", "dcqcn", "hpcc", "credit"});
}

TEST_CASE("find_cc__by_id_and_by_name", "[unit][core]") {
    for (const CcAlgorithmInfo* a : cc_algorithms()) {
        CHECK(find_cc(a->id) == a);
        CHECK(find_cc(a->name) == a);
        CHECK(cc_name(a->id) == a->name);
    }
    CHECK(find_cc("qcn") == nullptr);
    CHECK(find_cc(static_cast<CcAlgorithm>(200)) == nullptr);
    CHECK(cc_name(static_cast<CcAlgorithm>(200)) == "unknown");
}

TEST_CASE("find_cc_param__sets_and_gets_its_field", "[unit][core]") {
    CcConfig c;
    const CcParam* g = find_cc_param("dcqcn_g");
    REQUIRE(g != nullptr);
    CHECK(g->kind == CcParam::Kind::positive);
    g->set(c, 0.0625);
    CHECK(c.dcqcn.g == 0.0625);
    CHECK(g->get(c) == 0.0625);
    const CcParam* q = find_cc_param("credit_quantum_bytes");
    REQUIRE(q != nullptr);
    q->set(c, 8192);
    CHECK(c.credit.quantum_bytes == 8192);
    CHECK(find_cc_param("rate") == nullptr);
}

TEST_CASE("CcParam::accepts__integers_in_range_positives_up_to_max", "[unit][core]") {
    const CcParam* stages = find_cc_param("dcqcn_fast_recovery_stages");  // integer 0..64
    REQUIRE(stages != nullptr);
    CHECK(stages->accepts(0));
    CHECK(stages->accepts(64));
    CHECK_FALSE(stages->accepts(65));
    CHECK_FALSE(stages->accepts(1.5));
    const CcParam* eta = find_cc_param("hpcc_eta");  // (0, 1]
    REQUIRE(eta != nullptr);
    CHECK(eta->accepts(1));
    CHECK(eta->accepts(1e-9));
    CHECK_FALSE(eta->accepts(0));
    CHECK_FALSE(eta->accepts(1.01));
}

TEST_CASE("make_cc__each_registration_builds_its_algorithm", "[unit][core]") {
    for (const CcAlgorithmInfo* a : cc_algorithms()) {
        CcConfig c;
        c.algorithm = a->id;
        const auto cc = make_cc(c, 8, 4096, 2'000);
        REQUIRE(cc != nullptr);
        CHECK(cc->window_bytes() >= 4096);
        // The engine's credit path is for the algorithm whose sender is a Credit.
        CHECK(a->receiver_credit == (dynamic_cast<Credit*>(cc.get()) != nullptr));
    }
    CcConfig unknown;
    unknown.algorithm = static_cast<CcAlgorithm>(200);
    CHECK(make_cc(unknown, 8, 4096) == nullptr);
}

TEST_CASE("CcAlgorithmInfo__wire_code_and_needs", "[unit][core]") {
    CHECK(find_cc(CcAlgorithm::credit)->seth_cc_type == omrc::wire::mrc::kSethCcTypeCredit);
    CHECK(find_cc(CcAlgorithm::nscc)->seth_cc_type == omrc::wire::mrc::kSethCcTypeNscc);
    CHECK(find_cc(CcAlgorithm::hpcc)->needs_telemetry);
    CHECK_FALSE(find_cc(CcAlgorithm::dcqcn)->needs_telemetry);
}
