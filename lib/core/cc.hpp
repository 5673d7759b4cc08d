// SPDX-License-Identifier: BSD-3-Clause
// Congestion control behind a small interface (per QP, window based,
// clocked by SACKs) and the registry of the algorithms: each one's name,
// factory, configuration keys and wire code, registered once (cc.cpp) and
// read by everything that names an algorithm (configuration files,
// omrc-perf, omrc-fabric, stats). An algorithm is one file, cc_<name>.cpp
// (with cc_<name>.hpp where tests or the engine need its type), that
// defines its class and its CcAlgorithmInfo; docs/ARCHITECTURE.md, "Adding
// a congestion-control algorithm".
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>

#include "core/config.hpp"
#include "core/types.hpp"
#include "wire/int_telemetry.hpp"
#include "wire/mrc_choices.hpp"

namespace omrc::core {

/// One SACK's worth of feedback.
struct AckSample {
    std::uint64_t acked_bytes = 0;  ///< payload newly acknowledged by this SACK
    std::uint64_t rtt_ns = 0;       ///< from the echoed TSETH timestamp; 0 = no sample
    bool ecn = false;               ///< the triggering packet carried CE
    TimeNs now = 0;
    /// Bytes the receiver says it got since its previous SACK (CC_STATE
    /// rcvd_bytes), counting packets no bitmap reported; 0 = not known.
    std::uint64_t delivered_bytes = 0;
    /// INT records the receiver echoed with this SACK (an OpenMRC extension
    /// only the simulator fills); valid during on_ack only; null = none.
    const wire::IntStack* telemetry = nullptr;
};

/// Where an algorithm writes its state for the stats document (runtime
/// stats_json: the QP's object under the algorithm's name).
class CcStateWriter {
public:
    virtual void flag(std::string_view name, bool v) = 0;
    virtual void count(std::string_view name, std::uint64_t v) = 0;
    virtual void value(std::string_view name, double v) = 0;

protected:
    ~CcStateWriter() = default;
};

class CongestionControl {
public:
    virtual ~CongestionControl() = default;
    virtual void on_ack(const AckSample& s) = 0;
    /// A trimmed packet was NACKed (congestion, not failure).
    virtual void on_trim(TimeNs now) = 0;
    /// Loss inferred or an EV timed out.
    virtual void on_loss(TimeNs now) = 0;
    /// The receiver asks for a smaller window (CC_STATE penalty, 1..127:
    /// 127 = one packet per round trip).
    virtual void on_penalty(std::uint8_t penalty, TimeNs now) { (void)penalty, (void)now; }
    /// The receiver says the last loss reaction was spurious (CC_STATE
    /// restore_cwnd: a retransmission it already had): undo it.
    virtual void on_restore(TimeNs now) { (void)now; }
    [[nodiscard]] virtual std::uint64_t window_bytes() const = 0;
    /// Its state beyond the window, for the stats document (none by default).
    virtual void report(CcStateWriter& out) const { (void)out; }
};

/// What an algorithm is built for: its QP's link.
struct CcLink {
    std::uint32_t planes = 1;        ///< the NIC's planes (the line rate is planes · CcConfig::link_rate_bps)
    std::uint32_t mtu_bytes = 4096;  ///< payload per packet: the smallest window
    /// How long the receiver may hold a packet before it acknowledges it
    /// (its SACK delay bound): what the sender sends at the full rate in
    /// that time must fit in its window.
    std::uint64_t ack_hold_ns = 0;
};

/// One configuration key of an algorithm: a field of CcConfig under the
/// name configuration files give it ([device.qp.cc], a scenario's [cc]).
struct CcParam {
    enum class Kind : std::uint8_t {
        integer,   ///< a whole number in [min, max]
        positive,  ///< a number in (0, max]
    };
    std::string_view key;
    Kind kind = Kind::integer;
    double min = 0;  ///< integer: the smallest value (exact: every bound is below 2^53)
    double max = 0;
    std::string_view help;
    double (*get)(const CcConfig&) noexcept = nullptr;
    void (*set)(CcConfig&, double) noexcept = nullptr;

    /// Whether `v` is a value of this key (a whole number in range, or positive up to max).
    [[nodiscard]] bool accepts(double v) const noexcept;
};

/// A CcParam for the field CcConfig.*M1 (.*M2 ...), so that a
/// registration names each field once: cc_param<&CcConfig::dcqcn, &DcqcnConfig::g>(...).
template <auto... Members>
[[nodiscard]] constexpr CcParam cc_param(std::string_view key, CcParam::Kind kind, double min, double max,
                                         std::string_view help) noexcept {
    return {key,
            kind,
            min,
            max,
            help,
            [](const CcConfig& c) noexcept { return static_cast<double>((c .* ... .* Members)); },
            [](CcConfig& c, double v) noexcept {
                auto& field = (c .* ... .* Members);
                field = static_cast<std::remove_cvref_t<decltype(field)>>(v);
            }};
}

/// An algorithm's registration: defined beside its implementation
/// (cc_<name>.cpp) and listed once in cc.cpp.
struct CcAlgorithmInfo {
    CcAlgorithm id{};
    std::string_view name;         ///< what configuration files, omrc-perf, omrc-fabric and stats call it
    std::string_view description;  ///< one phrase, for help texts and documentation
    std::span<const CcParam> params;  ///< its configuration keys (each used by this algorithm only)
    std::unique_ptr<CongestionControl> (*make)(const CcConfig& cfg, const CcLink& link) = nullptr;
    /// SETH cc_type its receiver's SACKs carry (lib/wire/mrc_choices.hpp).
    std::uint8_t seth_cc_type = wire::mrc::kSethCcTypeNscc;
    /// It reads INT telemetry (AckSample::telemetry): the simulator's
    /// switches stamp it on data packets while a QP runs the algorithm.
    bool needs_telemetry = false;
    /// Its receiver grants credit: the engine's CreditScheduler paces
    /// grants to QPs running it, and their data packets carry requests
    /// (docs/PROTOCOL.md §11.8). Its sender object is then a Credit.
    bool receiver_credit = false;
};

/// The factory of an algorithm whose class is built as T(cfg, planes, mtu_bytes, ack_hold_ns).
template <class T>
std::unique_ptr<CongestionControl> make_cc_as(const CcConfig& cfg, const CcLink& link) {
    return std::make_unique<T>(cfg, link.planes, link.mtu_bytes, link.ack_hold_ns);
}

/// Every registered algorithm, in the order of cc.cpp's list.
[[nodiscard]] std::span<const CcAlgorithmInfo* const> cc_algorithms() noexcept;
/// The algorithm registered as `id` / called `name`, or null.
[[nodiscard]] const CcAlgorithmInfo* find_cc(CcAlgorithm id) noexcept;
[[nodiscard]] const CcAlgorithmInfo* find_cc(std::string_view name) noexcept;
/// The configuration key `key` of any algorithm, or null.
[[nodiscard]] const CcParam* find_cc_param(std::string_view key) noexcept;
/// The name of `id`, or "unknown".
[[nodiscard]] std::string_view cc_name(CcAlgorithm id) noexcept;

/// The congestion control `cfg.algorithm` names for a QP with `planes`
/// planes and packets of `mtu_bytes`; null when no algorithm has that id.
std::unique_ptr<CongestionControl> make_cc(const CcConfig& cfg, std::uint32_t planes, std::uint32_t mtu_bytes,
                                           std::uint64_t ack_hold_ns = 0);

}  // namespace omrc::core
