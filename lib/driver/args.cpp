// SPDX-License-Identifier: BSD-3-Clause
#include "driver/args.hpp"

#include <charconv>
#include <fmt/format.h>

namespace omrc::driver {

std::vector<std::string_view> split(std::string_view text, char sep, Empty empty) {
    std::vector<std::string_view> out;
    for (;;) {
        const std::size_t at = text.find(sep);
        const std::string_view item = text.substr(0, at);
        if (!item.empty() || empty == Empty::keep) out.push_back(item);
        if (at == std::string_view::npos) return out;
        text.remove_prefix(at + 1);
    }
}

bool parse_uint(std::string_view text, std::uint64_t& out) {
    std::uint64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc{} || ptr != end) return false;
    out = v;
    return true;
}

bool parse_mac(std::string_view text, wire::MacAddr& out) {
    wire::MacAddr m{};
    if (text.size() != 17) return false;
    for (std::size_t i = 0; i < 6; ++i) {
        const std::string_view byte = text.substr(3 * i, 2);
        if (i < 5 && text[3 * i + 2] != ':') return false;
        const auto [ptr, ec] = std::from_chars(byte.data(), byte.data() + 2, m[i], 16);
        if (ec != std::errc{} || ptr != byte.data() + 2) return false;
    }
    out = m;
    return true;
}

ArgReader::ArgReader(const ArgMap& args, std::span<const ArgKey> keys, std::uint32_t mode, std::string_view mode_name)
    : args_(args) {
    for (const auto& [key, value] : args) {
        const ArgKey* known = nullptr;
        for (const ArgKey& k : keys)
            if (k.name == key) known = &k;
        if (known == nullptr) {
            fail(fmt::format("unknown option {} (accepted: {})", key, accepted(keys, mode)));
        } else if ((known->modes & mode) == 0) {
            fail(fmt::format("option {} does not apply in {} mode (accepted: {})", key, mode_name, accepted(keys, mode)));
        }
    }
}

std::string ArgReader::accepted(std::span<const ArgKey> keys, std::uint32_t mode) const {
    std::string names;
    for (const ArgKey& k : keys)
        if (k.modes & mode) names += fmt::format("{}{}", names.empty() ? "" : ", ", k.name);
    return names;
}

const std::string* ArgReader::find(std::string_view key) const {
    const auto it = args_.find(key);
    return it == args_.end() ? nullptr : &it->second;
}

bool ArgReader::read_number(std::string_view key, std::uint64_t& out, std::uint64_t min, std::uint64_t max,
                            std::uint64_t type_max) {
    const std::string* value = find(key);
    if (value == nullptr || !ok()) return false;
    std::uint64_t v = 0;
    if (!parse_uint(*value, v)) {
        fail(fmt::format("{}={} is not an unsigned integer", key, *value));
        return false;
    }
    if (v >= min && v <= max) {
        out = v;
        return true;
    }
    if (max >= type_max)  // no upper bound of the driver's own
        fail(v < min ? fmt::format("{}={} must be ≥ {}", key, *value, min) : fmt::format("{}={} must be ≤ {}", key, *value, max));
    else if (min == 0)
        fail(fmt::format("{}={} must be ≤ {}", key, *value, max));
    else
        fail(fmt::format("{}={} must be {}..{}", key, *value, min, max));
    return false;
}

ArgReader& ArgReader::flag(std::string_view key, bool& out) {
    const std::string* value = find(key);
    if (value == nullptr || !ok()) return *this;
    if (*value != "0" && *value != "1") return fail(fmt::format("{}={} must be 0 or 1", key, *value));
    out = *value == "1";
    return *this;
}

ArgReader& ArgReader::fail_choice(std::string_view key, const std::string& value,
                                  const std::vector<std::string_view>& names) {
    std::string allowed;
    for (std::size_t i = 0; i < names.size(); ++i)
        allowed += fmt::format("{}{}", i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
    return fail(fmt::format("{}={} must be {}", key, value, allowed));
}

ArgReader& ArgReader::text(std::string_view key, std::string& out) {
    if (const std::string* value = find(key); value != nullptr && ok()) out = *value;
    return *this;
}

ArgReader& ArgReader::list(std::string_view key, std::vector<std::string>& out, char sep, Empty empty) {
    const std::string* value = find(key);
    if (value == nullptr || !ok()) return *this;
    std::vector<std::string> items;
    for (std::string_view item : split(*value, sep, empty)) {
        if (item.empty()) return fail(fmt::format("{}: empty item in '{}'", key, *value));
        items.emplace_back(item);
    }
    out = std::move(items);
    return *this;
}

ArgReader& ArgReader::fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return *this;
}

}  // namespace omrc::driver
