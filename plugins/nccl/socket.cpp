// SPDX-License-Identifier: BSD-3-Clause
#include "socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace omrc::nccl {

namespace {

socklen_t to_sockaddr(const SockAddr& a, sockaddr_storage* ss) {
    std::memset(ss, 0, sizeof(*ss));
    if (a.family == AF_INET) {
        auto* s4 = reinterpret_cast<sockaddr_in*>(ss);
        s4->sin_family = AF_INET;
        s4->sin_port = htons(a.port);
        std::memcpy(&s4->sin_addr, a.addr, 4);
        return sizeof(sockaddr_in);
    }
    auto* s6 = reinterpret_cast<sockaddr_in6*>(ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(a.port);
    std::memcpy(&s6->sin6_addr, a.addr, 16);
    return sizeof(sockaddr_in6);
}

void from_sockaddr(const sockaddr* sa, SockAddr* out) {
    *out = SockAddr{};
    if (sa->sa_family == AF_INET) {
        const auto* s4 = reinterpret_cast<const sockaddr_in*>(sa);
        out->family = AF_INET;
        out->port = ntohs(s4->sin_port);
        std::memcpy(out->addr, &s4->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const auto* s6 = reinterpret_cast<const sockaddr_in6*>(sa);
        out->family = AF_INET6;
        out->port = ntohs(s6->sin6_port);
        std::memcpy(out->addr, &s6->sin6_addr, 16);
    }
}

std::string ip_text(const SockAddr& a) {
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(a.family, a.addr, buf, sizeof(buf));
    return buf;
}

/// Link-local IPv6 addresses need a scope to be reached; the handle carries none.
bool usable_interface_address(const ifaddrs* ifa) {
    if (ifa->ifa_addr == nullptr || (ifa->ifa_flags & IFF_UP) == 0 || (ifa->ifa_flags & IFF_LOOPBACK) != 0)
        return false;
    if (ifa->ifa_addr->sa_family == AF_INET) return true;
    if (ifa->ifa_addr->sa_family != AF_INET6) return false;
    const auto* s6 = reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr);
    return !IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) && !IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
}

}  // namespace

std::string SockAddr::to_string() const {
    if (family == AF_INET) return fmt::format("{}:{}", ip_text(*this), port);
    if (family == AF_INET6) return fmt::format("[{}]:{}", ip_text(*this), port);
    return "(no address)";
}

bool parse_ip(std::string_view text, SockAddr* out) {
    if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return false;
    char buf[INET6_ADDRSTRLEN] = {};
    std::memcpy(buf, text.data(), text.size());
    *out = SockAddr{};
    if (inet_pton(AF_INET, buf, out->addr) == 1) {
        out->family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, buf, out->addr) == 1) {
        out->family = AF_INET6;
        return true;
    }
    return false;
}

int listen_ip_for(std::string_view driver, const Ipv6Addr& device_addr, std::string* ip, std::string* error) {
    if (const char* v = std::getenv("OMRC_NCCL_SOCKET_ADDR"); v != nullptr && *v != '\0') {
        SockAddr a;
        if (!parse_ip(v, &a)) {
            *error = fmt::format("OMRC_NCCL_SOCKET_ADDR='{}' is not a numeric IPv4 or IPv6 address", v);
            return EINVAL;
        }
        *ip = ip_text(a);
        return 0;
    }
    if (driver == "udp" && device_addr != Ipv6Addr{}) {
        SockAddr a;
        a.family = AF_INET6;
        std::memcpy(a.addr, device_addr.data(), 16);
        *ip = ip_text(a);
        return 0;
    }
    *ip = "::1";
    if (driver == "loopback") return 0;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) == 0) {
        for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
            if (!usable_interface_address(ifa)) continue;
            SockAddr a;
            from_sockaddr(ifa->ifa_addr, &a);
            *ip = ip_text(a);
            break;
        }
        freeifaddrs(list);
    }
    return 0;
}

int tcp_listen(const std::string& ip, int* fd, SockAddr* bound, std::string* error) {
    SockAddr a;
    if (!parse_ip(ip, &a)) {
        *error = fmt::format("'{}' is not a numeric IP address", ip);
        return EINVAL;
    }
    const int s = ::socket(a.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
        const int e = errno;
        *error = fmt::format("socket: {}", std::strerror(e));
        return e;
    }
    sockaddr_storage ss;
    const socklen_t len = to_sockaddr(a, &ss);
    if (::bind(s, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(s, 64) != 0) {
        const int e = errno;
        ::close(s);
        *error = fmt::format("listening on {}: {}", a.to_string(), std::strerror(e));
        return e;
    }
    socklen_t got = sizeof(ss);
    if (::getsockname(s, reinterpret_cast<sockaddr*>(&ss), &got) != 0) {
        const int e = errno;
        ::close(s);
        *error = fmt::format("getsockname: {}", std::strerror(e));
        return e;
    }
    from_sockaddr(reinterpret_cast<sockaddr*>(&ss), bound);
    *fd = s;
    return 0;
}

int tcp_accept(int listen_fd, int* fd) {
    const int s = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (s < 0) return errno == EWOULDBLOCK || errno == EINTR ? EAGAIN : errno;
    const int one = 1;
    ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    *fd = s;
    return 0;
}

int tcp_connect_start(const SockAddr& to, int* fd, std::string* error) {
    const int s = ::socket(to.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
        const int e = errno;
        *error = fmt::format("socket: {}", std::strerror(e));
        return e;
    }
    const int one = 1;
    ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_storage ss;
    const socklen_t len = to_sockaddr(to, &ss);
    if (::connect(s, reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
        const int e = errno;
        ::close(s);
        *error = fmt::format("connecting to {}: {}", to.to_string(), std::strerror(e));
        return e;
    }
    *fd = s;
    return 0;
}

int tcp_connect_poll(int fd) {
    pollfd p{fd, POLLOUT, 0};
    const int n = ::poll(&p, 1, 0);
    if (n < 0) return errno == EINTR ? EINPROGRESS : errno;
    if (n == 0) return EINPROGRESS;
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    return err;
}

int tcp_peer_alive(int fd) {
    if (fd < 0) return ECONNRESET;
    char byte;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return 0;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    return ECONNRESET;
}

void close_fd(int& fd) noexcept {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

std::string peer_name(int fd) {
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "(unknown peer)";
    SockAddr a;
    from_sockaddr(reinterpret_cast<sockaddr*>(&ss), &a);
    return a.to_string();
}

Channel::~Channel() { close_fd(fd_); }

Channel::Channel(Channel&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), out_(std::move(o.out_)), out_done_(o.out_done_), in_(std::move(o.in_)) {}

Channel& Channel::operator=(Channel&& o) noexcept {
    if (this != &o) {
        close_fd(fd_);
        fd_ = std::exchange(o.fd_, -1);
        out_ = std::move(o.out_);
        out_done_ = o.out_done_;
        in_ = std::move(o.in_);
    }
    return *this;
}

int Channel::release() noexcept { return std::exchange(fd_, -1); }

void Channel::queue(const std::vector<std::uint8_t>& bytes) { out_.insert(out_.end(), bytes.begin(), bytes.end()); }

int Channel::flush() {
    while (out_done_ < out_.size()) {
        const ssize_t n = ::send(fd_, out_.data() + out_done_, out_.size() - out_done_, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? EAGAIN : errno;
        }
        out_done_ += static_cast<std::size_t>(n);
    }
    out_.clear();
    out_done_ = 0;
    return 0;
}

int Channel::read_until(std::size_t total) {
    while (in_.size() < total) {
        std::uint8_t buf[512];
        const std::size_t want = std::min(sizeof(buf), total - in_.size());
        const ssize_t n = ::recv(fd_, buf, want, MSG_DONTWAIT);
        if (n == 0) return ECONNRESET;
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? EAGAIN : errno;
        }
        in_.insert(in_.end(), buf, buf + n);
    }
    return 0;
}

}  // namespace omrc::nccl
