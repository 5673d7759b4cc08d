// SPDX-License-Identifier: BSD-3-Clause
// The public face of the engine's registries: cc_algorithms(),
// set_cc_parameter(), path_policies() and their look-ups by name
// (include/omrc/verbs.hpp). Nothing here names an algorithm or a policy:
// the names, keys and ranges are the registrations'.
#include "verbs/registries.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <vector>

#include "core/cc.hpp"

namespace omrc {

// The public enumerators are the registrations' ids.
static_assert(static_cast<int>(CcAlgorithm::fixed) == static_cast<int>(core::CcAlgorithm::fixed) &&
              static_cast<int>(CcAlgorithm::nscc) == static_cast<int>(core::CcAlgorithm::nscc) &&
              static_cast<int>(CcAlgorithm::dcqcn) == static_cast<int>(core::CcAlgorithm::dcqcn) &&
              static_cast<int>(CcAlgorithm::hpcc) == static_cast<int>(core::CcAlgorithm::hpcc) &&
              static_cast<int>(CcAlgorithm::credit) == static_cast<int>(core::CcAlgorithm::credit));
static_assert(static_cast<int>(PathPolicy::ecmp) == static_cast<int>(core::PathPolicy::ecmp) &&
              static_cast<int>(PathPolicy::spray) == static_cast<int>(core::PathPolicy::spray) &&
              static_cast<int>(PathPolicy::adaptive) == static_cast<int>(core::PathPolicy::adaptive));

namespace {

void set_error(std::string* error, std::string what) {
    if (error != nullptr) *error = std::move(what);
}

std::string cc_names() {
    std::vector<std::string_view> names;
    for (const core::CcAlgorithmInfo* a : core::cc_algorithms()) names.push_back(a->name);
    return fmt::format("{}", fmt::join(names, ", "));
}

const core::PathPolicyInfo* device_policy(PathPolicy p) noexcept {
    const core::PathPolicyInfo* info = core::find_path_policy(static_cast<core::PathPolicy>(p));
    return info != nullptr && info->device ? info : nullptr;
}

/// Public and engine CcConfigs have the same fields under the same names:
/// one copy serves both directions (the algorithm by its id).
template <class From, class To>
void copy_cc(const From& c, To& o) noexcept {
    o.algorithm = static_cast<decltype(o.algorithm)>(c.algorithm);
    o.fixed_window_bytes = c.fixed_window_bytes;
    o.base_rtt_ns = c.base_rtt_ns;
    o.link_rate_bps = c.link_rate_bps;
    o.target_delay_ratio = c.target_delay_ratio;
    o.max_window_bdp = c.max_window_bdp;
    o.dcqcn.g = c.dcqcn.g;
    o.dcqcn.alpha_period_ns = c.dcqcn.alpha_period_ns;
    o.dcqcn.cnp_interval_ns = c.dcqcn.cnp_interval_ns;
    o.dcqcn.increase_period_ns = c.dcqcn.increase_period_ns;
    o.dcqcn.byte_counter_bytes = c.dcqcn.byte_counter_bytes;
    o.dcqcn.fast_recovery_stages = c.dcqcn.fast_recovery_stages;
    o.dcqcn.ai_ratio = c.dcqcn.ai_ratio;
    o.dcqcn.hai_ratio = c.dcqcn.hai_ratio;
    o.hpcc.eta = c.hpcc.eta;
    o.hpcc.max_stage = c.hpcc.max_stage;
    o.hpcc.wai_ratio = c.hpcc.wai_ratio;
    o.credit.unscheduled_bytes = c.credit.unscheduled_bytes;
    o.credit.quantum_bytes = c.credit.quantum_bytes;
    o.credit.ahead_bytes = c.credit.ahead_bytes;
    o.credit.rate_ratio = c.credit.rate_ratio;
}

}  // namespace

namespace detail {

core::CcConfig to_core(const CcConfig& c) noexcept {
    core::CcConfig o{};
    copy_cc(c, o);
    return o;
}

CcConfig from_core(const core::CcConfig& c) noexcept {
    CcConfig o{};
    copy_cc(c, o);
    return o;
}

bool to_core(PathPolicy p, core::PathPolicy& out) noexcept {
    const core::PathPolicyInfo* info = device_policy(p);
    if (info == nullptr) return false;
    out = info->id;
    return true;
}

}  // namespace detail

std::vector<CcAlgorithmInfo> cc_algorithms() {
    std::vector<CcAlgorithmInfo> out;
    for (const core::CcAlgorithmInfo* a : core::cc_algorithms()) {
        CcAlgorithmInfo info{static_cast<CcAlgorithm>(a->id), std::string(a->name), std::string(a->description), {}};
        for (const core::CcParam& p : a->params)
            info.parameters.push_back(
                {std::string(p.key), p.kind == core::CcParam::Kind::integer, p.min, p.max, std::string(p.help)});
        out.push_back(std::move(info));
    }
    return out;
}

int cc_algorithm_by_name(std::string_view name, CcAlgorithm* out, std::string* error) {
    const core::CcAlgorithmInfo* a = core::find_cc(name);
    if (a == nullptr) {
        set_error(error, fmt::format("no congestion control '{}' (known: {})", name, cc_names()));
        return EINVAL;
    }
    if (out != nullptr) *out = static_cast<CcAlgorithm>(a->id);
    return 0;
}

const char* to_string(CcAlgorithm a) noexcept {
    // The registrations' names are string literals: data() ends in a NUL.
    return core::cc_name(static_cast<core::CcAlgorithm>(a)).data();
}

int set_cc_parameter(CcConfig& cc, std::string_view key, double value, std::string* error) {
    const core::CcParam* p = core::find_cc_param(key);
    if (p == nullptr) {
        set_error(error, fmt::format("no congestion-control parameter '{}'", key));
        return EINVAL;
    }
    if (!p->accepts(value)) {
        set_error(error, p->kind == core::CcParam::Kind::integer
                             ? fmt::format("{} must be a whole number in {}..{}, got {}", key, p->min, p->max, value)
                             : fmt::format("{} must be > 0 and ≤ {}, got {}", key, p->max, value));
        return EINVAL;
    }
    core::CcConfig c = detail::to_core(cc);
    p->set(c, value);
    cc = detail::from_core(c);
    return 0;
}

int get_cc_parameter(const CcConfig& cc, std::string_view key, double* out) {
    const core::CcParam* p = core::find_cc_param(key);
    if (p == nullptr) return EINVAL;
    if (out != nullptr) *out = p->get(detail::to_core(cc));
    return 0;
}

std::vector<PathPolicyInfo> path_policies() {
    std::vector<PathPolicyInfo> out;
    for (const core::PathPolicyInfo& p : core::kPathPolicies)
        if (p.device) out.push_back({static_cast<PathPolicy>(p.id), std::string(p.name), std::string(p.description)});
    return out;
}

int path_policy_by_name(std::string_view name, PathPolicy* out, std::string* error) {
    const core::PathPolicyInfo* p = core::find_path_policy(name);
    if (p == nullptr || !p->device) {
        std::vector<std::string_view> names;
        for (const core::PathPolicyInfo& q : core::kPathPolicies)
            if (q.device) names.push_back(q.name);
        set_error(error, fmt::format("no path policy '{}' (known: {})", name, fmt::join(names, ", ")));
        return EINVAL;
    }
    if (out != nullptr) *out = static_cast<PathPolicy>(p->id);
    return 0;
}

const char* to_string(PathPolicy p) noexcept {
    const core::PathPolicyInfo* info = device_policy(p);
    return info != nullptr ? info->name.data() : "unknown";
}

}  // namespace omrc
