// SPDX-License-Identifier: BSD-3-Clause
// Typed reads of TOML values for the configuration files (device_config.cpp):
// every value is read against its dotted path ("device 'omrc0'.qp.evs"),
// and the first thing wrong becomes the one error of the parse, with the
// file, the path, what was expected and the line it is on.
//
// toml++ is compiled into this library header-only. lib/config is built
// with hidden visibility (-fvisibility=hidden -fvisibility-inlines-hidden):
// toml++'s symbols and these helpers stay out of libomrc's exported
// interface, so an application using another toml++ build never meets ours.
// Only include/omrc/config.hpp's functions are exported (device_config.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#undef TOML_HEADER_ONLY
#define TOML_HEADER_ONLY 1
#ifndef TOML_ENABLE_FORMATTERS
#define TOML_ENABLE_FORMATTERS 0
#endif
#include <toml++/toml.h>

namespace omrc::config {

/// "a string", "an integer", ... for messages.
const char* type_name(const toml::node& n) noexcept;

/// The first error of a parse: "SOURCE: PATH: WHAT (line N)" (toml_reader.cpp).
class Errors {
public:
    explicit Errors(std::string_view source) : source_(source) {}

    /// Records "SOURCE: PATH: WHAT (line N); HINT" if it is the first error
    /// (no path, line or hint: those parts are left out); returns false.
    bool fail(std::string_view path, const toml::node* at, std::string_view what, std::string_view hint = {});
    bool fail(std::string_view path, const toml::source_region& at, std::string_view what,
              std::string_view hint = {});

    [[nodiscard]] bool ok() const noexcept { return message_.empty(); }
    [[nodiscard]] const std::string& message() const noexcept { return message_; }
    [[nodiscard]] std::string_view source() const noexcept { return source_; }

private:
    std::string source_;
    std::string message_;
};

/// "PATH.KEY" (PATH may be empty).
std::string join_path(std::string_view path, std::string_view key);

/// Readers: each checks the node's type and range and stores into `out`, or
/// records an error (and leaves `out` alone) and returns false.
bool read_uint(Errors& e, std::string_view path, const toml::node& n, std::uint64_t min, std::uint64_t max,
               std::uint64_t& out);
template <class T>
bool read_uint(Errors& e, std::string_view path, const toml::node& n, std::uint64_t min, std::uint64_t max, T& out) {
    std::uint64_t v = 0;
    if (!read_uint(e, path, n, min, max, v)) return false;
    out = static_cast<T>(v);
    return true;
}
/// A float or an integer in (min, max] (min exclusive: a rate or ratio of 0 means nothing).
bool read_positive(Errors& e, std::string_view path, const toml::node& n, double max, double& out);
bool read_bool(Errors& e, std::string_view path, const toml::node& n, bool& out);
bool read_string(Errors& e, std::string_view path, const toml::node& n, std::string& out);
/// One of `names`; `out` receives its index.
bool read_choice(Errors& e, std::string_view path, const toml::node& n, std::span<const std::string_view> names,
                 std::size_t& out);
/// A table (a sub-table of a device: qp, fabric, args).
const toml::table* read_table(Errors& e, std::string_view path, const toml::node& n);

/// One key a table accepts and what reads it.
struct Key {
    std::string_view name;
    std::function<bool(const toml::node&, const std::string& path)> read;
};

/// Reads every key of `t` through `keys` (in the table's key order); a key
/// not in `keys` is "PATH.K: unknown key". False at the first error.
bool read_keys(Errors& e, std::string_view path, const toml::table& t, std::span<const Key> keys);

}  // namespace omrc::config
