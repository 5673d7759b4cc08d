// SPDX-License-Identifier: BSD-3-Clause
// omrc-perf's server role (session.hpp): opens its device before it waits
// for a client, takes the run's options from the client's hello (the driver
// options stay its own), then follows the client size by size.
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "session.hpp"

namespace omrc::perf {

int run_server(Options o, std::atomic<std::uint16_t>* bound_port_out) {
    Oob oob;
    if (auto e = oob.listen(o.port); !e.empty()) return fail(o, "server", e);
    if (bound_port_out != nullptr) bound_port_out->store(oob.listen_port());
    Endpoint ep;
    if (auto e = ep.open_device(o); !e.empty()) return fail(o, "server", e);
    if (!o.quiet) fmt::print(" Waiting for a client on port {}\n", oob.listen_port());
    std::fflush(stdout);
    if (auto e = oob.accept(milliseconds(0)); !e.empty()) return fail(o, "server", e);
    const milliseconds wait(o.oob_timeout_ms);
    nlohmann::json hello;
    if (auto e = expect(oob, nullptr, "hello", hello, wait); !e.empty()) return fail(o, "server", e, &oob);
    // The client's options rule the run; the driver options stay ours.
    std::uint32_t nqps = 0;
    std::uint64_t buffer = 0;
    try {
        const std::string test = hello.at("test").get<std::string>();
        if (test != to_string(o.test))
            return fail(o, "server", fmt::format("the client runs {}, this server {}", test, to_string(o.test)), &oob);
        o.sizes = hello.at("sizes").get<std::vector<std::uint32_t>>();
        o.iters = hello.at("iters").get<std::uint64_t>();
        o.duration_s = hello.at("duration_s").get<double>();
        o.qps = nqps = hello.at("nqps").get<std::uint32_t>();
        o.tx_depth = hello.at("tx_depth").get<std::uint32_t>();
        o.mtu = hello.at("mtu").get<std::uint32_t>();
        o.evs = hello.at("evs").get<std::uint32_t>();
        o.policy = hello.at("policy").get<std::string>();
        // Absent from an older client's hello: this server's own.
        o.backup_evs = hello.value("backup_evs", o.backup_evs);
        o.mpr = hello.value("mpr", o.mpr);
        if (hello.contains("cc"))
            if (const std::string why = cc_from_json(hello["cc"], o.cc); !why.empty())
                return fail(o, "server", fmt::format("the client's congestion control ('cc'): {}", why), &oob);
        o.report_gbits = hello.at("report_gbits").get<bool>();
        o.check = hello.value("check", false);
        o.cm = hello.value("cm", false);
        buffer = hello.at("buffer").get<std::uint64_t>();
    } catch (const nlohmann::json::exception& e) {
        return fail(o, "server", fmt::format("the client's hello is malformed: {}", e.what()), &oob);
    }
    if (nqps == 0 || nqps > 1024 || buffer == 0 || buffer > (1ull << 30) || o.sizes.empty())
        return fail(o, "server", "the client's hello is out of range (qps 1..1024, buffer ≤ 1 GiB)", &oob);
    if (auto e = ep.create(nqps, buffer, o.tx_depth); !e.empty()) return fail(o, "server", e, &oob);
    if (o.check) std::memset(ep.buf, 0, ep.buf_per_qp * nqps);  // what the client writes must arrive
    DeviceAddress peer;
    if (auto e = read_peer_hello(hello, nqps, peer, ep.remote); !e.empty()) return fail(o, "server", e, &oob);
    if (o.cm)
        if (auto e = ep.cm_listen(o); !e.empty()) return fail(o, "server", e, &oob);
    nlohmann::json reply = ep.hello_fields();
    reply["type"] = "hello";
    if (auto e = oob.send(reply); !e.empty()) return fail(o, "server", e);
    if (auto e = o.cm ? ep.cm_accept_all(o) : ep.connect(o, peer); !e.empty()) return fail(o, "server", e, &oob);
    // Latency tests: the pings' receives; send_bw: a receive for every SEND in
    // flight and as many again (at least 256), posted again as consumed.
    for (std::size_t q = 0; q < nqps && !is_read(o.test) && (!is_bw(o.test) || is_send(o.test)); ++q)
        if (auto e = ep.post_recvs(q, is_bw(o.test) ? std::clamp<std::size_t>(2 * std::size_t{o.tx_depth}, 256, 65536) : 64);
            !e.empty())
            return fail(o, "server", e, &oob);
    print_header(o, "server", ep.dev->planes());
    std::vector<Result> results;
    for (;;) {
        nlohmann::json m;
        std::string error;
        // Between sizes the client may take long (a big -a run): no deadline
        // here, but a dead client closes the connection.
        int rc = 0;
        while ((rc = recv_progressing(oob, *ep.dev, m, error)) == 0) {
        }
        if (rc < 0) return fail(o, "server", error);
        const std::string type = m["type"].get<std::string>();
        if (type == "bye") break;
        if (type == "error") return fail(o, "server", fmt::format("the client reports: {}", m.value("message", "")));
        if (type == "start") {
            const auto size = m.value("bytes", std::uint32_t{0});
            const auto iters = m.value("iters", std::uint64_t{0});
            if (size == 0 || size > buffer) return fail(o, "server", "the client asks for a size beyond the buffer", &oob);
            if (auto e = oob.send({{"type", "ready"}}); !e.empty()) return fail(o, "server", e);
            if (!is_bw(o.test) && !is_read(o.test)) {
                bool oob_broken = false;
                if (auto e = serve_lat(o, ep, oob, size, iters, m, oob_broken); !e.empty())
                    return fail(o, "server", e, oob_broken ? nullptr : &oob);
            } else if (auto e = serve_bw(o, ep, oob, m); !e.empty()) {
                return fail(o, "server", e, &oob);
            }
            Result r;
            if (m["type"] != "result" || !from_json(m, r)) return fail(o, "server", "malformed result from the client", &oob);
            if (o.check && is_bw(o.test)) {
                const auto want = m.value("crc64", std::vector<std::uint64_t>{});
                const auto have = buffer_crcs(ep, r.bytes);
                if (want != have) {
                    std::vector<std::size_t> differ;
                    for (std::size_t q = 0; q < have.size(); ++q)
                        if (q >= want.size() || want[q] != have[q]) differ.push_back(q);
                    return fail(o, "server",
                                fmt::format("data check failed at {} bytes: the memory of QP(s) {} differs from what "
                                            "the client sent", r.bytes, fmt::join(differ, ", ")),
                                &oob);
                }
                if (!o.quiet) fmt::print(" data check: {} bytes x {} QP(s) match (CRC-64)\n", r.bytes, have.size());
            }
            results.push_back(r);
            print_row(o, r);
            continue;
        }
        return fail(o, "server", fmt::format("unexpected '{}' message from the client", type), &oob);
    }
    print_footer(o);
    if (auto e = write_json(o, results, ep.dev->planes()); !e.empty()) return fail(o, "server", e);
    if (auto e = write_stats(o, *ep.dev); !e.empty()) return fail(o, "server", e);
    return 0;
}

}  // namespace omrc::perf
