// SPDX-License-Identifier: BSD-3-Clause
// omrc-perf's client role (session.hpp), which drives every test, and run(),
// which picks the role.
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <random>

#include "session.hpp"

namespace omrc::perf {

namespace {

std::uint64_t default_iters(const Options& o) { return o.iters != 0 ? o.iters : is_bw(o.test) ? 5000 : 1000; }

}  // namespace

int run_client(Options o) {
    if (!is_bw(o.test) && o.qps != 1)
        return fail(o, "client", fmt::format("{} runs on one QP (-q 1)", to_string(o.test)));
    const std::uint64_t iters = default_iters(o);
    const std::uint32_t max_size = *std::max_element(o.sizes.begin(), o.sizes.end());
    Oob oob;
    const milliseconds wait(o.oob_timeout_ms);
    if (auto e = oob.connect(o.server, o.port, wait); !e.empty()) return fail(o, "client", e);
    Endpoint ep;
    if (auto e = ep.open(o, o.qps, max_size, o.tx_depth); !e.empty()) return fail(o, "client", e, &oob);
    nlohmann::json hello = ep.hello_fields();
    hello["type"] = "hello";
    hello["test"] = to_string(o.test);
    hello["sizes"] = o.sizes;
    hello["iters"] = iters;
    hello["duration_s"] = o.duration_s;
    hello["nqps"] = o.qps;
    hello["tx_depth"] = o.tx_depth;
    hello["mtu"] = o.mtu;
    hello["evs"] = o.evs;
    hello["policy"] = o.policy;
    hello["backup_evs"] = o.backup_evs;
    hello["mpr"] = o.mpr;
    hello["cc"] = cc_json(o.cc);
    hello["report_gbits"] = o.report_gbits;
    hello["check"] = o.check;
    hello["cm"] = o.cm;
    if (o.check) {
        std::mt19937_64 rng(0x6f6d7263);
        for (std::size_t i = 0; i + 8 <= ep.buf_per_qp * ep.qps.size(); i += 8) {
            const std::uint64_t v = rng();
            std::memcpy(ep.buf + i, &v, 8);
        }
    }
    hello["buffer"] = ep.buf_per_qp;
    if (auto e = oob.send(hello); !e.empty()) return fail(o, "client", e);
    nlohmann::json reply;
    if (auto e = expect(oob, nullptr, "hello", reply, wait); !e.empty()) return fail(o, "client", e);
    DeviceAddress peer;
    if (auto e = read_peer_hello(reply, o.qps, peer, ep.remote); !e.empty()) return fail(o, "client", e, &oob);
    for (const QpInfo& q : ep.remote)
        if (q.len < max_size) return fail(o, "client", "the server's buffer is smaller than the largest size", &oob);
    if (auto e = o.cm ? ep.cm_connect_all(o, peer) : ep.connect(o, peer); !e.empty())
        return fail(o, "client", e, &oob);
    if (!is_bw(o.test) && !is_read(o.test))
        if (auto e = ep.post_recvs(0, 64); !e.empty()) return fail(o, "client", e, &oob);
    print_header(o, "client", ep.dev->planes());
    std::vector<Result> results;
    for (std::uint32_t size : o.sizes) {
        if (auto e = oob.send({{"type", "start"}, {"bytes", size}, {"iters", iters}}); !e.empty())
            return fail(o, "client", e);
        nlohmann::json m;
        if (auto e = expect(oob, &ep, "ready", m, wait); !e.empty()) return fail(o, "client", e, &oob);
        Result r;
        const std::string e = is_bw(o.test) ? client_bw(o, ep, size, iters, r) : client_lat(o, ep, size, iters, r);
        if (!e.empty()) return fail(o, "client", fmt::format("{} bytes: {}", size, e), &oob);
        nlohmann::json msg = to_json(r);
        msg["type"] = "result";
        if (o.check && is_bw(o.test)) msg["crc64"] = expected_crcs(ep, size);
        if (auto e2 = oob.send(msg); !e2.empty()) return fail(o, "client", e2);
        results.push_back(r);
        print_row(o, r);
    }
    // Let the last acknowledgements leave before the server goes away.
    for (auto until = Clock::now() + milliseconds(20); Clock::now() < until;) ep.dev->progress();
    (void)oob.send({{"type", "bye"}});
    print_footer(o);
    if (auto e = write_json(o, results, ep.dev->planes()); !e.empty()) return fail(o, "client", e);
    if (auto e = write_stats(o, *ep.dev); !e.empty()) return fail(o, "client", e);
    return 0;
}

int run(const Options& o, std::atomic<std::uint16_t>* bound_port_out) {
    Options opts = o;
    if (opts.tx_depth == 0) opts.tx_depth = is_bw(opts.test) ? 128 : 1;
    return opts.server.empty() ? run_server(opts, bound_port_out) : run_client(opts);
}

}  // namespace omrc::perf
