// SPDX-License-Identifier: BSD-3-Clause
// The congestion-control registry: the list of the algorithms, one line
// each (each registration is defined beside its implementation, in
// cc_<name>.cpp), and the look-ups everything else names them through.
#include <algorithm>
#include <cmath>

#include "core/cc.hpp"

namespace omrc::core {

extern const CcAlgorithmInfo kCcFixed, kCcNscc, kCcDcqcn, kCcHpcc, kCcCredit;

namespace {

/// Every algorithm: one registration each.
constexpr const CcAlgorithmInfo* kAlgorithms[] = {
    &kCcFixed,
    &kCcNscc,
    &kCcDcqcn,
    &kCcHpcc,
    &kCcCredit,
};

}  // namespace

bool CcParam::accepts(double v) const noexcept {
    if (kind == Kind::positive) return v > 0 && v <= max;
    return v >= min && v <= max && std::floor(v) == v;
}

std::span<const CcAlgorithmInfo* const> cc_algorithms() noexcept { return kAlgorithms; }

const CcAlgorithmInfo* find_cc(CcAlgorithm id) noexcept {
    for (const CcAlgorithmInfo* a : kAlgorithms)
        if (a->id == id) return a;
    return nullptr;
}

const CcAlgorithmInfo* find_cc(std::string_view name) noexcept {
    for (const CcAlgorithmInfo* a : kAlgorithms)
        if (a->name == name) return a;
    return nullptr;
}

const CcParam* find_cc_param(std::string_view key) noexcept {
    for (const CcAlgorithmInfo* a : kAlgorithms)
        for (const CcParam& p : a->params)
            if (p.key == key) return &p;
    return nullptr;
}

std::string_view cc_name(CcAlgorithm id) noexcept {
    const CcAlgorithmInfo* a = find_cc(id);
    return a != nullptr ? a->name : "unknown";
}

std::unique_ptr<CongestionControl> make_cc(const CcConfig& cfg, std::uint32_t planes, std::uint32_t mtu_bytes,
                                           std::uint64_t ack_hold_ns) {
    const CcAlgorithmInfo* a = find_cc(cfg.algorithm);
    if (a == nullptr) return nullptr;
    return a->make(cfg, {.planes = planes, .mtu_bytes = mtu_bytes, .ack_hold_ns = ack_hold_ns});
}

}  // namespace omrc::core
