// SPDX-License-Identifier: BSD-3-Clause
#include "oob.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

namespace omrc::perf {

namespace {

constexpr char kMagic[4] = {'O', 'M', 'R', 'P'};
constexpr std::size_t kFrameHeader = 10;

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, INT32_MAX));
}

void set_nonblocking(int fd) { (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

Oob::~Oob() {
    if (fd_ >= 0) ::close(fd_);
    if (listen_fd_ >= 0) ::close(listen_fd_);
}

Oob::Oob(Oob&& o) noexcept { *this = std::move(o); }

Oob& Oob::operator=(Oob&& o) noexcept {
    std::swap(listen_fd_, o.listen_fd_);
    std::swap(fd_, o.fd_);
    std::swap(listen_port_, o.listen_port_);
    std::swap(in_, o.in_);
    return *this;
}

std::string Oob::listen(std::uint16_t port) {
    listen_fd_ = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) return fmt::format("socket: {}", std::strerror(errno));
    const int one = 1, zero = 0;
    (void)::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    (void)::setsockopt(listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 clients too
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_addr = in6addr_any;
    sa.sin6_port = htons(port);
    if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0)
        return fmt::format("cannot listen on port {}: {}", port, std::strerror(errno));
    if (::listen(listen_fd_, 1) != 0) return fmt::format("listen: {}", std::strerror(errno));
    socklen_t len = sizeof sa;
    (void)::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    listen_port_ = ntohs(sa.sin6_port);
    return {};
}

std::string Oob::accept(std::chrono::milliseconds timeout) {
    pollfd p{listen_fd_, POLLIN, 0};
    const int rc = ::poll(&p, 1, timeout.count() <= 0 ? -1 : static_cast<int>(timeout.count()));
    if (rc == 0) return "no client connected in time";
    if (rc < 0) return fmt::format("poll: {}", std::strerror(errno));
    fd_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd_ < 0) return fmt::format("accept: {}", std::strerror(errno));
    ::close(listen_fd_);
    listen_fd_ = -1;
    const int one = 1;
    (void)::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    set_nonblocking(fd_);
    return {};
}

std::string Oob::connect(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string service = std::to_string(port);
    if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
        return fmt::format("cannot resolve {}: {}", host, ::gai_strerror(rc));
    std::string last = "no address";
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        set_nonblocking(fd);
        int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            rc = ::poll(&p, 1, remaining_ms(deadline));
            if (rc == 0) {
                ::close(fd);
                last = "connection timed out";
                break;
            }
            int err = 0;
            socklen_t len = sizeof err;
            (void)::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            rc = err == 0 ? 0 : -1;
            errno = err;
        }
        if (rc == 0) {
            ::freeaddrinfo(res);
            fd_ = fd;
            const int one = 1;
            (void)::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return {};
        }
        last = std::strerror(errno);
        ::close(fd);
    }
    ::freeaddrinfo(res);
    return fmt::format("cannot connect to {} port {}: {}", host, port, last);
}

std::string Oob::send(const nlohmann::json& msg) {
    const std::string body = msg.dump();
    if (body.size() > kMaxMessageBytes) return "message too large";
    std::vector<std::uint8_t> frame(kFrameHeader + body.size());
    std::memcpy(frame.data(), kMagic, 4);
    frame[4] = static_cast<std::uint8_t>(kOobVersion >> 8);
    frame[5] = static_cast<std::uint8_t>(kOobVersion);
    const auto n = static_cast<std::uint32_t>(body.size());
    for (int i = 0; i < 4; ++i) frame[6 + i] = static_cast<std::uint8_t>(n >> (24 - 8 * i));
    std::memcpy(frame.data() + kFrameHeader, body.data(), body.size());
    std::size_t off = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (off < frame.size()) {
        const ssize_t w = ::send(fd_, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += static_cast<std::size_t>(w);
        } else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            pollfd p{fd_, POLLOUT, 0};
            if (::poll(&p, 1, remaining_ms(deadline)) == 0) return "peer does not read (send timed out)";
        } else {
            return fmt::format("send to peer: {}", std::strerror(errno));
        }
    }
    return {};
}

int Oob::recv(nlohmann::json& msg, std::chrono::milliseconds timeout, std::string& error) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        if (in_.size() >= kFrameHeader) {
            if (std::memcmp(in_.data(), kMagic, 4) != 0) {
                error = "the peer is not omrc-perf (bad magic in its message)";
                return -1;
            }
            const auto version = static_cast<std::uint16_t>((in_[4] << 8) | in_[5]);
            if (version != kOobVersion) {
                error = fmt::format("the peer speaks omrc-perf protocol version {}, this is version {}", version,
                                    kOobVersion);
                return -1;
            }
            std::uint32_t n = 0;
            for (int i = 0; i < 4; ++i) n = (n << 8) | in_[6 + i];
            if (n > kMaxMessageBytes) {
                error = fmt::format("the peer sent a {}-byte message (limit {})", n, kMaxMessageBytes);
                return -1;
            }
            if (in_.size() >= kFrameHeader + n) {
                msg = nlohmann::json::parse(in_.begin() + kFrameHeader, in_.begin() + kFrameHeader + n, nullptr, false);
                in_.erase(in_.begin(), in_.begin() + kFrameHeader + n);
                if (msg.is_discarded() || !msg.is_object() || !msg.contains("type") || !msg["type"].is_string()) {
                    error = "the peer sent a malformed message";
                    return -1;
                }
                return 1;
            }
        }
        std::uint8_t buf[65536];
        const ssize_t r = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
        if (r > 0) {
            in_.insert(in_.end(), buf, buf + r);
            continue;
        }
        if (r == 0) {
            error = "the peer closed the connection";
            return -1;
        }
        if (errno != EAGAIN && errno != EINTR) {
            error = fmt::format("receive from peer: {}", std::strerror(errno));
            return -1;
        }
        const int wait = remaining_ms(deadline);
        if (wait == 0) return 0;
        pollfd p{fd_, POLLIN, 0};
        (void)::poll(&p, 1, wait);
    }
}

}  // namespace omrc::perf
