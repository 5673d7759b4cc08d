// SPDX-License-Identifier: BSD-3-Clause
// omrc-perf --cm (session.hpp): the QPs connected by the connection manager
// over the fabric (Device::cm_*, docs/PROTOCOL.md §13) instead of from the
// QPNs and PSNs in the hellos. The server listens on a service named after
// its TCP port; each client QP's request carries its index as private data.
#include <cstring>
#include <fmt/format.h>

#include "session.hpp"

namespace omrc::perf {

namespace {

/// "OMRP" and the server's TCP port: two servers on one device do not meet.
std::uint64_t service_of(const Options& o) { return 0x4F4D5250'00000000ull | o.port; }

/// The attributes omrc-perf's QPs take (qp_attr_of, as Endpoint::connect's), for the connection manager.
std::string conn_params(const Options& o, CmConnParams& p) {
    if (auto e = qp_attr_of(o, p.qp_attr); !e.empty()) return e;
    p.qp_access_flags = p.qp_attr.qp_access_flags;
    p.mtu_bytes = p.qp_attr.mtu_bytes;
    return {};
}

/// Progresses the device and hands each CM event to `on` until it returns
/// true (done) or the out-of-band timeout passes. "" or the error.
template <class OnEvent>
std::string run_events(const Options& o, Device& dev, OnEvent on) {
    const auto deadline = Clock::now() + milliseconds(o.oob_timeout_ms);
    CmEvent ev[16];
    std::string error;
    for (;;) {
        dev.progress();
        for (std::size_t n; (n = dev.cm_poll(ev)) != 0;)
            for (std::size_t i = 0; i < n; ++i)
                if (on(ev[i], error)) return error;
        if (Clock::now() > deadline) return "connection manager: timed out (--oob_timeout_ms)";
    }
}

}  // namespace

std::string Endpoint::cm_listen(const Options& o) {
    CmListenOptions l;
    l.backlog = std::max<std::uint32_t>(128, static_cast<std::uint32_t>(qps.size()));
    l.per_peer = l.backlog;
    if (const int rc = dev->cm_listen(service_of(o), l); rc != 0)
        return fmt::format("cm_listen: {}", std::strerror(rc));
    return {};
}

std::string Endpoint::cm_accept_all(const Options& o) {
    CmConnParams p;
    if (auto e = conn_params(o, p); !e.empty()) return e;
    std::vector<bool> taken(qps.size(), false);
    std::size_t established = 0;
    auto e = run_events(o, *dev, [&](const CmEvent& ev, std::string& error) {
        switch (ev.type) {
            case CmEventType::connect_request: {
                std::uint32_t index = 0;
                if (ev.private_len == 4) std::memcpy(&index, ev.private_data.data(), 4);
                if (ev.private_len != 4 || index >= qps.size() || taken[index]) {
                    (void)dev->cm_reject(ev.id);
                    return false;
                }
                if (const int rc = dev->cm_accept(ev.id, *qps[index], p); rc != 0) {
                    error = fmt::format("cm_accept (QP {}): {}", index, std::strerror(rc));
                    return true;
                }
                taken[index] = true;
                return false;
            }
            case CmEventType::established: return ++established == qps.size();
            default:
                error = fmt::format("connection manager: {} ({})", to_string(ev.type), to_string(ev.reason));
                return true;
        }
    });
    (void)dev->cm_unlisten(service_of(o));
    return e;
}

std::string Endpoint::cm_connect_all(const Options& o, const DeviceAddress& peer) {
    CmConnParams p;
    if (auto e = conn_params(o, p); !e.empty()) return e;
    p.service_id = service_of(o);
    p.peer = peer;
    for (std::uint32_t i = 0; i < qps.size(); ++i) {
        p.private_len = 4;
        std::memcpy(p.private_data.data(), &i, 4);
        std::uint32_t id = 0;
        if (const int rc = dev->cm_connect(*qps[i], p, &id); rc != 0)
            return fmt::format("cm_connect (QP {}): {}", i, std::strerror(rc));
    }
    std::size_t established = 0;
    return run_events(o, *dev, [&](const CmEvent& ev, std::string& error) {
        if (ev.type == CmEventType::established) return ++established == qps.size();
        error = fmt::format("connection manager: {} ({})", to_string(ev.type), to_string(ev.reason));
        return true;
    });
}

}  // namespace omrc::perf
