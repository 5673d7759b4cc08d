// SPDX-License-Identifier: BSD-3-Clause
// omrc-perf's exchange protocol (session.hpp): device and QP descriptions in
// JSON, reading the peer's hello, waiting for a message, reporting an error
// to the peer.
#include <fmt/format.h>

#include "session.hpp"

namespace omrc::perf {

namespace {

std::string hex(const std::uint8_t* p, std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", p[i]);
    return s;
}

bool unhex(const std::string& s, std::uint8_t* out, std::size_t n) {
    if (s.size() != 2 * n) return false;
    for (std::size_t i = 0; i < n; ++i) {
        unsigned v = 0;
        for (int k = 0; k < 2; ++k) {
            const char c = s[2 * i + static_cast<std::size_t>(k)];
            const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0) return false;
            v = v * 16 + static_cast<unsigned>(d);
        }
        out[i] = static_cast<std::uint8_t>(v);
    }
    return true;
}

}  // namespace

nlohmann::json address_json(const DeviceAddress& a) {
    nlohmann::json macs = nlohmann::json::array();
    for (std::uint32_t p = 0; p < a.planes && p < kMaxPlanes; ++p) macs.push_back(hex(a.macs[p].data(), 6));
    return {{"addr", hex(a.addr.data(), 16)}, {"planes", a.planes}, {"host", a.host}, {"macs", std::move(macs)}};
}

bool address_from_json(const nlohmann::json& j, DeviceAddress& a) {
    try {
        a = {};
        a.planes = j.at("planes").get<std::uint32_t>();
        a.host = j.at("host").get<std::uint32_t>();
        if (a.planes == 0 || a.planes > kMaxPlanes || !unhex(j.at("addr").get<std::string>(), a.addr.data(), 16))
            return false;
        const auto& macs = j.at("macs");
        if (!macs.is_array() || macs.size() != a.planes) return false;
        for (std::uint32_t p = 0; p < a.planes; ++p)
            if (!unhex(macs[p].get<std::string>(), a.macs[p].data(), 6)) return false;
        return true;
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

nlohmann::json cc_json(const CcConfig& c) {
    // The algorithm by name and every parameter by its registered key
    // (cc_algorithms()): whatever the configuration file set travels.
    nlohmann::json j = {{"algorithm", to_string(c.algorithm)},
                        {"base_rtt_ns", c.base_rtt_ns},
                        {"link_rate_bps", c.link_rate_bps}};
    for (const CcAlgorithmInfo& a : cc_algorithms())
        for (const CcParameterInfo& p : a.parameters) {
            double v = 0;
            if (get_cc_parameter(c, p.key, &v) != 0) continue;
            if (p.integer) j[p.key] = static_cast<std::uint64_t>(v);
            else j[p.key] = v;
        }
    return j;
}

std::string cc_from_json(const nlohmann::json& j, CcConfig& c) {
    try {
        std::string why;
        if (cc_algorithm_by_name(j.at("algorithm").get<std::string>(), &c.algorithm, &why) != 0) return why;
        c.base_rtt_ns = j.at("base_rtt_ns").get<std::uint64_t>();
        c.link_rate_bps = j.at("link_rate_bps").get<std::uint64_t>();
        // The algorithm's parameters the client sent (an older one sends
        // fewer: the others keep this side's values).
        for (const auto& [key, value] : j.items()) {
            if (key == "algorithm" || key == "base_rtt_ns" || key == "link_rate_bps") continue;
            if (set_cc_parameter(c, key, value.get<double>(), &why) != 0) return why;
        }
        return {};
    } catch (const nlohmann::json::exception& e) {
        return e.what();
    }
}

nlohmann::json qp_json(const QpInfo& q) {
    return {{"qpn", q.qpn}, {"conn_id", q.conn_id}, {"psn", q.psn}, {"va", q.va}, {"rkey", q.rkey}, {"len", q.len}};
}

bool qp_from_json(const nlohmann::json& j, QpInfo& q) {
    try {
        q.qpn = j.at("qpn").get<std::uint32_t>();
        q.conn_id = j.at("conn_id").get<std::uint16_t>();
        q.psn = j.at("psn").get<std::uint32_t>() & 0xFFFFFF;
        q.va = j.at("va").get<std::uint64_t>();
        q.rkey = j.at("rkey").get<std::uint32_t>();
        q.len = j.at("len").get<std::uint64_t>();
        return true;
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

std::string read_peer_hello(const nlohmann::json& m, std::size_t nqps, DeviceAddress& peer, std::vector<QpInfo>& qps) {
    if (!m.contains("device") || !address_from_json(m["device"], peer))
        return "the peer's device address is missing or malformed";
    if (!m.contains("qps") || !m["qps"].is_array() || m["qps"].size() != nqps)
        return fmt::format("the peer describes {} QPs, expected {}", m.contains("qps") ? m["qps"].size() : 0, nqps);
    for (const auto& j : m["qps"]) {
        QpInfo q;
        if (!qp_from_json(j, q)) return "a QP description of the peer is malformed";
        qps.push_back(q);
    }
    return {};
}

int recv_progressing(Oob& oob, Device& dev, nlohmann::json& msg, std::string& error) {
    // A device progressed from here (no worker threads) gets 64 passes per
    // look at the socket: a receive is a system call, and a look per pass
    // had cost the receiving side a third of its CPU. With worker threads
    // the socket is waited on, 1 ms at a time.
    const bool threads = dev.worker_threads();
    for (int pass = 0; pass < (threads ? 1 : 64); ++pass) dev.progress();
    return oob.recv(msg, milliseconds(threads ? 1 : 0), error);
}

std::string expect(Oob& oob, Endpoint* ep, const char* type, nlohmann::json& msg, milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::string error;
    const bool drive = ep != nullptr && ep->dev;
    for (;;) {
        const int rc = drive ? recv_progressing(oob, *ep->dev, msg, error) : oob.recv(msg, timeout, error);
        if (rc < 0) return error;
        if (rc > 0) {
            if (msg["type"] == "error")
                return fmt::format("the peer reports: {}", msg.value("message", std::string("(no message)")));
            if (msg["type"] != type)
                return fmt::format("expected a '{}' message from the peer, got '{}'", type,
                                   msg["type"].get<std::string>());
            return {};
        }
        if (Clock::now() >= deadline) return fmt::format("the peer sent no '{}' message within {} ms", type, timeout.count());
    }
}

int fail(const Options& o, const std::string& role, const std::string& what, Oob* oob) {
    fmt::print(stderr, "omrc-perf {}: error: {}\n", role, what);
    if (oob != nullptr) (void)oob->send({{"type", "error"}, {"message", what}});
    (void)o;
    return 1;
}

}  // namespace omrc::perf
