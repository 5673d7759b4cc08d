// SPDX-License-Identifier: BSD-3-Clause
// A constant window (tests, baselines): the smallest algorithm, and the
// model of one (a class and its registration, nothing else).
#include "core/cc.hpp"

namespace omrc::core {

namespace {

class FixedWindow final : public CongestionControl {
public:
    explicit FixedWindow(std::uint64_t window_bytes) : window_(window_bytes) {}
    void on_ack(const AckSample&) override {}
    void on_trim(TimeNs) override {}
    void on_loss(TimeNs) override {}
    [[nodiscard]] std::uint64_t window_bytes() const override { return window_; }

private:
    std::uint64_t window_;
};

constexpr CcParam kParams[] = {
    cc_param<&CcConfig::fixed_window_bytes>("fixed_window_bytes", CcParam::Kind::integer, 64,
                                            static_cast<double>(std::uint64_t{1} << 40), "the window, bytes"),
};

}  // namespace

extern const CcAlgorithmInfo kCcFixed{
    .id = CcAlgorithm::fixed,
    .name = "fixed",
    .description = "a constant window (fixed_window_bytes)",
    .params = kParams,
    .make = [](const CcConfig& cfg, const CcLink&) -> std::unique_ptr<CongestionControl> {
        return std::make_unique<FixedWindow>(cfg.fixed_window_bytes);
    },
};

}  // namespace omrc::core
