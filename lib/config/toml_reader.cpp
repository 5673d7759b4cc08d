// SPDX-License-Identifier: BSD-3-Clause
// Typed reads of TOML values with the path and line of every error
// (toml_reader.hpp).
#include "toml_reader.hpp"

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <vector>

namespace omrc::config {

const char* type_name(const toml::node& n) noexcept {
    switch (n.type()) {
        case toml::node_type::table: return "a table";
        case toml::node_type::array: return "an array";
        case toml::node_type::string: return "a string";
        case toml::node_type::integer: return "an integer";
        case toml::node_type::floating_point: return "a float";
        case toml::node_type::boolean: return "a boolean";
        case toml::node_type::date: return "a date";
        case toml::node_type::time: return "a time";
        case toml::node_type::date_time: return "a date-time";
        default: return "nothing";
    }
}

bool Errors::fail(std::string_view path, const toml::source_region& at, std::string_view what,
                  std::string_view hint) {
    if (!message_.empty()) return false;
    message_ = path.empty() ? fmt::format("{}: {}", source_, what) : fmt::format("{}: {}: {}", source_, path, what);
    if (at.begin.line != 0) message_ += fmt::format(" (line {})", at.begin.line);
    if (!hint.empty()) message_ += fmt::format("; {}", hint);
    return false;
}

bool Errors::fail(std::string_view path, const toml::node* at, std::string_view what, std::string_view hint) {
    return fail(path, at != nullptr ? at->source() : toml::source_region{}, what, hint);
}

std::string join_path(std::string_view path, std::string_view key) {
    if (path.empty()) return std::string(key);
    return fmt::format("{}.{}", path, key);
}

bool read_uint(Errors& e, std::string_view path, const toml::node& n, std::uint64_t min, std::uint64_t max,
               std::uint64_t& out) {
    const auto* v = n.as_integer();
    if (v == nullptr) return e.fail(path, &n, fmt::format("must be an integer, not {}", type_name(n)));
    const std::int64_t x = v->get();
    if (x < 0 || static_cast<std::uint64_t>(x) < min || static_cast<std::uint64_t>(x) > max) {
        if (max == static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return e.fail(path, &n, fmt::format("must be ≥ {}, got {}", min, x));
        return e.fail(path, &n, fmt::format("must be {}..{}, got {}", min, max, x));
    }
    out = static_cast<std::uint64_t>(x);
    return true;
}

bool read_positive(Errors& e, std::string_view path, const toml::node& n, double max, double& out) {
    double x = 0;
    if (const auto* f = n.as_floating_point()) {
        x = f->get();
    } else if (const auto* i = n.as_integer()) {
        x = static_cast<double>(i->get());
    } else {
        return e.fail(path, &n, fmt::format("must be a number, not {}", type_name(n)));
    }
    if (!std::isfinite(x) || x <= 0 || x > max)
        return e.fail(path, &n, fmt::format("must be > 0 and ≤ {}, got {}", max, x));
    out = x;
    return true;
}

bool read_bool(Errors& e, std::string_view path, const toml::node& n, bool& out) {
    const auto* v = n.as_boolean();
    if (v == nullptr) return e.fail(path, &n, fmt::format("must be true or false, not {}", type_name(n)));
    out = v->get();
    return true;
}

bool read_string(Errors& e, std::string_view path, const toml::node& n, std::string& out) {
    const auto* v = n.as_string();
    if (v == nullptr) return e.fail(path, &n, fmt::format("must be a string, not {}", type_name(n)));
    out = v->get();
    return true;
}

bool read_choice(Errors& e, std::string_view path, const toml::node& n, std::span<const std::string_view> names,
                 std::size_t& out) {
    std::string s;
    if (!read_string(e, path, n, s)) return false;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (names[i] == s) {
            out = i;
            return true;
        }
    }
    return e.fail(path, &n, fmt::format("must be one of \"{}\", got \"{}\"", fmt::join(names, "\", \""), s));
}

const toml::table* read_table(Errors& e, std::string_view path, const toml::node& n) {
    const auto* t = n.as_table();
    if (t == nullptr) e.fail(path, &n, fmt::format("must be a table, not {}", type_name(n)));
    return t;
}

bool read_keys(Errors& e, std::string_view path, const toml::table& t, std::span<const Key> keys) {
    for (const auto& [k, node] : t) {
        const std::string p = join_path(path, k.str());
        const Key* key = nullptr;
        for (const Key& c : keys)
            if (c.name == k.str()) key = &c;
        if (key == nullptr) {
            std::vector<std::string_view> names;
            for (const Key& c : keys) names.push_back(c.name);
            const toml::source_region at = k.source().begin.line != 0 ? k.source() : node.source();
            e.fail(p, at, "unknown key", fmt::format("accepted here: {}", fmt::join(names, ", ")));
            return false;
        }
        if (!key->read(node, p)) return false;
    }
    return true;
}

}  // namespace omrc::config
