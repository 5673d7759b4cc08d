// SPDX-License-Identifier: BSD-3-Clause
// Driver arguments (DeviceOptions::args): the one helper every driver and the
// device use to read them, in the manner of DPDK's kvargs.
//
// A driver names the keys it accepts in a table (ArgKey); ArgReader refuses
// any other key with a message that lists the accepted ones. Values are read
// with typed getters that check a range; an absent key leaves the caller's
// default alone. The first error wins and later getters do nothing, so a
// driver reads all its keys and checks ok() once:
//
//   static constexpr ArgKey kKeys[] = {{"endpoint"}, {"planes"}};
//   ArgReader a(options.args, kKeys);
//   a.number("endpoint", endpoint, 0, 255).number("planes", planes, 1, 15);
//   if (!a.ok()) { error = a.error(); return EINVAL; }
//
// A driver with modes (udp: plain, srv6) marks in its one table which modes
// take each key; a key of another mode is refused with a message that says
// so. Numbers are unsigned decimal integers, the whole value (no sign, no
// blanks, no base prefix).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "wire/ethernet.hpp"

namespace omrc::driver {

/// DeviceOptions::args.
using ArgMap = std::map<std::string, std::string, std::less<>>;

/// What split() does with empty items ("a,,b", a trailing separator, an empty text).
enum class Empty : std::uint8_t {
    keep,  ///< they are items (the caller refuses them or gives them a meaning)
    skip,  ///< they are dropped
};

/// "a,b,c" → {"a", "b", "c"}, views into `text`. An empty text is one empty
/// item (keep) or none (skip).
[[nodiscard]] std::vector<std::string_view> split(std::string_view text, char sep = ',', Empty empty = Empty::keep);

/// The whole of `text` as an unsigned decimal integer. False (out untouched)
/// for an empty text, anything but digits, or a value above UINT64_MAX.
[[nodiscard]] bool parse_uint(std::string_view text, std::uint64_t& out);

/// "aa:bb:cc:dd:ee:ff" (hex digits of either case). False (out untouched)
/// for anything else.
[[nodiscard]] bool parse_mac(std::string_view text, wire::MacAddr& out);

/// Every mode of a driver (the default of ArgKey::modes).
inline constexpr std::uint32_t kAllModes = ~0u;

/// A key a driver accepts, and the modes (bit mask) that take it.
struct ArgKey {
    std::string_view name;
    std::uint32_t modes = kAllModes;
};

/// The arguments of one open, checked against a driver's table of keys.
/// Holds references: `args` and `keys` must outlive it.
class ArgReader {
public:
    /// Checks every key of `args` against `keys` in mode `mode` (one bit;
    /// `mode_name` names it in messages). A key missing from the table:
    /// "unknown option K (accepted: A, B, ...)"; a key of other modes only:
    /// "option K does not apply in MODE mode (accepted: ...)".
    ArgReader(const ArgMap& args, std::span<const ArgKey> keys, std::uint32_t mode = kAllModes,
              std::string_view mode_name = {});

    /// True until an error was found.
    [[nodiscard]] bool ok() const noexcept { return error_.empty(); }
    /// The first error, in words ("" while ok()).
    [[nodiscard]] const std::string& error() const noexcept { return error_; }

    /// The value of `key`, or nullptr when it is absent.
    [[nodiscard]] const std::string* find(std::string_view key) const;
    [[nodiscard]] bool has(std::string_view key) const { return find(key) != nullptr; }

    /// An unsigned integer in [min, max] (max also bounded by T) into `out`
    /// when `key` is given; otherwise "K=V is not an unsigned integer",
    /// "K=V must be MIN..MAX", "... ≥ MIN" or "... ≤ MAX".
    template <class T>
    ArgReader& number(std::string_view key, T& out, std::uint64_t min = 0,
                      std::uint64_t max = std::numeric_limits<T>::max()) {
        static_assert(std::is_unsigned_v<T> && !std::is_same_v<T, bool>, "number() reads unsigned integers");
        constexpr std::uint64_t type_max = std::numeric_limits<T>::max();
        std::uint64_t v = 0;
        if (read_number(key, v, min, std::min(max, type_max), type_max)) out = static_cast<T>(v);
        return *this;
    }
    /// "0" or "1" into `out` when `key` is given.
    ArgReader& flag(std::string_view key, bool& out);
    /// The value of the name given, one of `choices`, into `out` when `key`
    /// is given; otherwise "K=V must be A, B or C".
    template <class T>
    ArgReader& choice(std::string_view key, T& out, std::initializer_list<std::pair<std::string_view, T>> choices) {
        const std::string* value = find(key);
        if (value == nullptr || !ok()) return *this;
        std::vector<std::string_view> names;
        for (const auto& [name, v] : choices) {
            if (name == *value) {
                out = v;
                return *this;
            }
            names.push_back(name);
        }
        return fail_choice(key, *value, names);
    }
    /// The value as it is into `out` when `key` is given.
    ArgReader& text(std::string_view key, std::string& out);
    /// The value split at `sep` into `out` when `key` is given. With
    /// Empty::keep an empty item is an error ("K: empty item in 'V'").
    ArgReader& list(std::string_view key, std::vector<std::string>& out, char sep = ',', Empty empty = Empty::skip);

    /// Records an error found by the driver's own checks (kept only if it is
    /// the first one).
    ArgReader& fail(std::string message);

private:
    ArgReader& fail_choice(std::string_view key, const std::string& value, const std::vector<std::string_view>& names);
    bool read_number(std::string_view key, std::uint64_t& out, std::uint64_t min, std::uint64_t max,
                     std::uint64_t type_max);
    [[nodiscard]] std::string accepted(std::span<const ArgKey> keys, std::uint32_t mode) const;

    const ArgMap& args_;
    std::string error_;
};

}  // namespace omrc::driver
