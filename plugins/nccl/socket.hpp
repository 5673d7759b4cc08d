// SPDX-License-Identifier: BSD-3-Clause
// Non-blocking TCP for connection establishment: the listener a listen comm
// opens, the connection connect starts, buffered reads and writes that never
// wait, and the liveness check of an established comm (the socket stays open
// for as long as the comm: its end of file is how a rank learns that its
// peer closed the comm or died).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "omrc/verbs.hpp"

namespace omrc::nccl {

/// An IPv4 or IPv6 address and a port.
struct SockAddr {
    int family = 0;              ///< AF_INET or AF_INET6
    std::uint8_t addr[16] = {};  ///< IPv4: the first 4 bytes
    std::uint16_t port = 0;
    [[nodiscard]] std::string to_string() const;  ///< "1.2.3.4:5" / "[::1]:5"
};

/// "1.2.3.4" or "::1" (no brackets, no port). False if it is neither.
bool parse_ip(std::string_view text, SockAddr* out);

/// The address listeners bind to (docs/NCCL.md, "Environment"):
/// OMRC_NCCL_SOCKET_ADDR when set; the device's address for the udp driver
/// (a kernel address); ::1 for loopback (in-process only); otherwise the
/// first address of an interface that is up and not a loopback one, else
/// ::1. 0, or EINVAL with *error when OMRC_NCCL_SOCKET_ADDR is no address.
int listen_ip_for(std::string_view driver, const Ipv6Addr& device_addr, std::string* ip, std::string* error);

/// A non-blocking listening socket on `ip`, port chosen by the kernel.
/// 0 with *fd and *bound, or an errno with *error.
int tcp_listen(const std::string& ip, int* fd, SockAddr* bound, std::string* error);
/// One pending connection: 0 with *fd (non-blocking), EAGAIN when none, or an errno.
int tcp_accept(int listen_fd, int* fd);
/// Starts a non-blocking connect. 0 with *fd (connected or in progress), or an errno.
int tcp_connect_start(const SockAddr& to, int* fd, std::string* error);
/// 0 once connected, EINPROGRESS while connecting, or the connect's errno.
int tcp_connect_poll(int fd);
/// 0 while the peer keeps its end open (bytes it may have sent stay
/// unread), ECONNRESET once it closed or vanished.
int tcp_peer_alive(int fd);
void close_fd(int& fd) noexcept;
/// The connected peer's address ("[::1]:40000"), for messages.
std::string peer_name(int fd);

/// Bytes to write and bytes being read on one non-blocking socket.
class Channel {
public:
    explicit Channel(int fd = -1) : fd_(fd) {}
    ~Channel();
    Channel(Channel&& o) noexcept;
    Channel& operator=(Channel&& o) noexcept;
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    [[nodiscard]] int fd() const noexcept { return fd_; }
    /// Takes the socket out (the caller closes it).
    int release() noexcept;

    /// Queues bytes to write.
    void queue(const std::vector<std::uint8_t>& bytes);
    /// Writes what is queued: 0 when all is written, EAGAIN when some
    /// remains, or an errno (EPIPE: the peer is gone).
    int flush();
    /// Reads until `total` bytes have arrived in input(): 0 then, EAGAIN
    /// while fewer, ECONNRESET at end of file, or an errno.
    int read_until(std::size_t total);
    [[nodiscard]] const std::vector<std::uint8_t>& input() const noexcept { return in_; }
    void clear_input() { in_.clear(); }

private:
    int fd_ = -1;
    std::vector<std::uint8_t> out_;
    std::size_t out_done_ = 0;
    std::vector<std::uint8_t> in_;
};

}  // namespace omrc::nccl
