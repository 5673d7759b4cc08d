// SPDX-License-Identifier: BSD-3-Clause
// omrc-perf's out-of-band channel: one TCP connection between server and
// client carrying framed JSON messages. A frame is
//   magic "OMRP" (4 bytes) | version (2, big-endian) | length (4, big-endian) | JSON
// A frame with another magic or version, a length over kMaxMessageBytes or
// a body that is not a JSON object is rejected with a message that says so:
// a wrong program on the port fails fast instead of hanging.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace omrc::perf {

inline constexpr std::uint16_t kOobVersion = 1;
inline constexpr std::uint32_t kMaxMessageBytes = 1u << 20;

class Oob {
public:
    Oob() = default;
    ~Oob();
    Oob(Oob&& o) noexcept;
    Oob& operator=(Oob&& o) noexcept;
    Oob(const Oob&) = delete;
    Oob& operator=(const Oob&) = delete;

    /// Listens on `port` (0: any free port, see listen_port()), IPv6 and IPv4.
    /// Returns "" or the error.
    std::string listen(std::uint16_t port);
    [[nodiscard]] std::uint16_t listen_port() const { return listen_port_; }
    /// Waits for one client (timeout ≤ 0: forever). Returns "" or the error.
    std::string accept(std::chrono::milliseconds timeout);
    /// Connects to host:port within `timeout`. Returns "" or the error.
    std::string connect(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout);

    /// Sends one message. Returns "" or the error.
    std::string send(const nlohmann::json& msg);
    /// Receives one message within `timeout` (0: only what already arrived).
    /// Returns 1 with `msg` set, 0 on timeout, -1 on error (`error` set:
    /// peer closed, bad magic/version/length/JSON).
    int recv(nlohmann::json& msg, std::chrono::milliseconds timeout, std::string& error);

private:
    int listen_fd_ = -1;
    int fd_ = -1;
    std::uint16_t listen_port_ = 0;
    std::vector<std::uint8_t> in_;  ///< bytes received, not yet a whole message
};

}  // namespace omrc::perf
