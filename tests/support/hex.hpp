// SPDX-License-Identifier: BSD-3-Clause
// Test helpers: hex strings ↔ bytes, so golden vectors read like captures.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace omrc::test {

/// "86 dd 0a" → {0x86, 0xdd, 0x0a}; spaces, ':' and newlines are ignored.
inline std::vector<std::uint8_t> hex(std::string_view s) {
    std::vector<std::uint8_t> out;
    int hi = -1;
    for (char c : s) {
        int v;
        if (c >= '0' && c <= '9') v = c - '0';
        else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
        else if (c == ' ' || c == ':' || c == '\n' || c == '\t' || c == '|') continue;
        else throw std::invalid_argument("bad hex character");
        if (hi < 0) {
            hi = v;
        } else {
            out.push_back(static_cast<std::uint8_t>(hi << 4 | v));
            hi = -1;
        }
    }
    if (hi >= 0) throw std::invalid_argument("odd number of hex digits");
    return out;
}

inline std::string to_hex(const std::vector<std::uint8_t>& b) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < b.size(); ++i) {
        if (i) s += ' ';
        s += d[b[i] >> 4];
        s += d[b[i] & 15];
    }
    return s;
}

/// Encodes a header into a vector of exactly its size.
template <class H>
std::vector<std::uint8_t> encoded(const H& h) {
    std::vector<std::uint8_t> v(H::kSize);
    if (h.encode(v) != decltype(h.encode(v)){}) throw std::runtime_error("encode failed");
    return v;
}

}  // namespace omrc::test
