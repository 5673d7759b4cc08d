// SPDX-License-Identifier: BSD-3-Clause
// omrc-perf's two roles. The client drives every test; the server follows
// the client's messages (docs/DRIVERS.md, "omrc-perf"):
//
//   client → hello {test, sizes, iters, duration, qps, tx_depth, mtu, evs,
//                   policy, buffer, device, qps[]}
//   server → hello {device, qps[]}          (both connect their QPs)
//   per size:  client → start {bytes, iters}; server → ready;
//              the test runs; client → result {...}
//   client → bye
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <isa-l/crc64.h>
#include <memory>
#include <random>

#include "oob.hpp"
#include "omrc/omrc.hpp"
#include "perf.hpp"

namespace omrc::perf {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// ---------------------------------------------------------------------------
// QP information on the wire (JSON)

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

struct QpInfo {
    std::uint32_t qpn = 0;
    std::uint16_t conn_id = 0;
    std::uint32_t psn = 0;
    std::uint64_t va = 0;
    std::uint32_t rkey = 0;
    std::uint64_t len = 0;
};

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

// ---------------------------------------------------------------------------
// The device, its QPs and the test buffer

PathPolicy policy_of(const std::string& s) {
    return s == "ecmp" ? PathPolicy::ecmp : s == "spray" ? PathPolicy::spray : PathPolicy::adaptive;
}

struct Endpoint {
    std::unique_ptr<Device> dev;
    std::unique_ptr<Pd> pd;
    std::unique_ptr<Cq> scq, rcq;
    std::vector<std::unique_ptr<Qp>> qps;
    std::uint8_t* buf = nullptr;  ///< qps × buf_per_qp bytes
    std::size_t buf_per_qp = 0;
    std::unique_ptr<Mr> mr;
    std::vector<QpInfo> local, remote;

    Endpoint() = default;
    Endpoint(const Endpoint&) = delete;
    Endpoint& operator=(const Endpoint&) = delete;
    ~Endpoint() {
        mr.reset();
        qps.clear();
        scq.reset();
        rcq.reset();
        pd.reset();
        dev.reset();
        std::free(buf);
    }

    /// Opens the device, creates `qps` QPs and registers the buffer. "" or the error.
    std::string open(const Options& o, std::uint32_t nqps, std::size_t per_qp, std::uint32_t depth) {
        if (auto e = open_device(o); !e.empty()) return e;
        return create(nqps, per_qp, depth);
    }

    /// Opens the device only (a server does so before it waits for a client,
    /// so its ports are up when the client's come: a memif client port needs
    /// its server listening). "" or the error.
    std::string open_device(const Options& o) {
        DeviceOptions d;
        for (const std::string& kv : o.dev_args) {
            const std::size_t eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) return fmt::format("--dev-arg {}: expected key=value", kv);
            d.args[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
        if (!o.eal.empty()) d.args["eal"] = o.eal;
        if (!o.pcap.empty()) d.args["pcap"] = o.pcap;
        if (o.driver_context.has_value()) {
            d.driver_context = o.driver_context;
            d.args["endpoint"] = std::to_string(o.endpoint);
            if (!o.pcap.empty() && o.endpoint != 0) {
                // Both ends in this process: the second one writes FILE-peer.pcap.
                std::string p = o.pcap;
                const std::size_t dot = p.rfind(".pcap");
                d.args["pcap"] = dot != std::string::npos && dot + 5 == p.size() ? p.insert(dot, "-peer") : p + "-peer";
            }
        }
        d.planes = o.planes;
        int err = 0;
        dev = Device::open(o.driver, d, &err);
        if (!dev) {
            return fmt::format("cannot open driver '{}': {} (drivers: {}; see OMRC_LOG_LEVEL=info for details)",
                               o.driver, std::strerror(err), fmt::join(Device::drivers(), ", "));
        }
        return {};
    }

    /// The PD, CQs, buffer and `nqps` QPs on the open device. "" or the error.
    std::string create(std::uint32_t nqps, std::size_t per_qp, std::uint32_t depth) {
        int err = 0;
        pd = dev->alloc_pd(&err);
        const int cqe = static_cast<int>(std::min<std::uint64_t>(std::uint64_t{nqps} * depth * 2 + 1024, 1u << 20));
        scq = dev->create_cq(cqe, &err);
        rcq = dev->create_cq(cqe, &err);
        if (!pd || !scq || !rcq) return fmt::format("cannot create PD/CQ: {}", std::strerror(err));
        buf_per_qp = std::max<std::size_t>(per_qp, 64);
        const std::size_t total = (buf_per_qp * nqps + 4095) / 4096 * 4096;
        buf = static_cast<std::uint8_t*>(std::aligned_alloc(4096, total));
        if (buf == nullptr) return "out of memory for the test buffer";
        std::memset(buf, 0x5A, total);
        mr = pd->reg_mr(buf, total, AccessFlags::local_write | AccessFlags::remote_write, &err);
        if (!mr) return fmt::format("reg_mr: {}", std::strerror(err));
        std::mt19937 rng(std::random_device{}());
        for (std::uint32_t i = 0; i < nqps; ++i) {
            QpInitAttr a;
            a.send_cq = scq.get();
            a.recv_cq = rcq.get();
            a.cap.max_send_wr = std::max<std::uint32_t>(depth, 16);
            a.cap.max_recv_wr = 256;
            auto qp = pd->create_qp(a, &err);
            if (!qp) return fmt::format("create_qp: {}", std::strerror(err));
            QpInfo info;
            info.qpn = qp->qp_num();
            info.conn_id = qp->conn_id();
            info.psn = rng() & 0xFFFFFF;
            info.va = reinterpret_cast<std::uintptr_t>(buf) + i * buf_per_qp;
            info.rkey = mr->rkey();
            info.len = buf_per_qp;
            local.push_back(info);
            qps.push_back(std::move(qp));
        }
        return {};
    }

    /// RESET → INIT → RTR → RTS against `remote`. "" or the error.
    std::string connect(const Options& o, const DeviceAddress& peer) {
        for (std::size_t i = 0; i < qps.size(); ++i) {
            Qp& q = *qps[i];
            QpAttr a;
            a.qp_state = QpState::init;
            a.qp_access_flags = AccessFlags::local_write | AccessFlags::remote_write;
            if (int rc = q.modify(a, QpAttrMask::state | QpAttrMask::access_flags))
                return fmt::format("QP to INIT: {}", std::strerror(rc));
            a.qp_state = QpState::rtr;
            a.dest_qp_num = remote[i].qpn;
            a.dest_conn_id = remote[i].conn_id;
            a.rq_psn = remote[i].psn;
            a.peer = peer;
            a.mtu_bytes = o.mtu;
            a.path_policy = policy_of(o.policy);
            a.evs = o.evs;
            if (int rc = q.modify(a, QpAttrMask::state | QpAttrMask::path | QpAttrMask::dest_qpn |
                                         QpAttrMask::rq_psn | QpAttrMask::mtu))
                return fmt::format("QP to RTR (mtu {}, evs {}): {}", o.mtu, o.evs, std::strerror(rc));
            a.qp_state = QpState::rts;
            a.sq_psn = local[i].psn;
            a.timeout_ns = std::uint64_t{o.qp_timeout_ms} * 1'000'000;
            if (int rc = q.modify(a, QpAttrMask::state | QpAttrMask::sq_psn | QpAttrMask::timeout))
                return fmt::format("QP to RTS: {}", std::strerror(rc));
        }
        return {};
    }

    /// Keeps `n` receives posted on QP i (WRITE_WITH_IMM consumes them).
    std::string post_recvs(std::size_t i, std::size_t n) {
        const Sge sge{reinterpret_cast<std::uintptr_t>(buf), 1, mr->lkey()};
        for (std::size_t k = 0; k < n; ++k) {
            RecvWr w;
            w.wr_id = i;
            w.sg_list = {&sge, 1};
            if (int rc = qps[i]->post_recv(w)) return fmt::format("post_recv: {}", std::strerror(rc));
        }
        return {};
    }

    nlohmann::json hello_fields() const {
        nlohmann::json q = nlohmann::json::array();
        for (const QpInfo& i : local) q.push_back(qp_json(i));
        return {{"device", address_json(dev->address())}, {"qps", std::move(q)}};
    }
};

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

/// Receives the next message, progressing the device meanwhile. "" or the error.
std::string expect(Oob& oob, Endpoint* ep, const char* type, nlohmann::json& msg, milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::string error;
    for (;;) {
        if (ep != nullptr && ep->dev) ep->dev->progress();
        const int rc = oob.recv(msg, ep != nullptr ? milliseconds(0) : timeout, error);
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

std::string check_wc(const Wc& wc) {
    if (wc.status == WcStatus::success) return {};
    return fmt::format("work completion error on QPN {}: {} ({})", wc.qp_num, to_string(wc.status),
                       static_cast<int>(wc.status));
}

// ---------------------------------------------------------------------------
// write_bw

/// CRC-64 of the first `size` bytes of every QP's buffer (--check).
std::vector<std::uint64_t> buffer_crcs(const Endpoint& ep, std::uint32_t size) {
    std::vector<std::uint64_t> crcs;
    for (std::size_t q = 0; q < ep.qps.size(); ++q) crcs.push_back(crc64_ecma_refl(0, ep.buf + q * ep.buf_per_qp, size));
    return crcs;
}

std::string client_bw(const Options& o, Endpoint& ep, std::uint32_t size, std::uint64_t iters, Result& r) {
    const std::size_t nqps = ep.qps.size();
    std::vector<std::uint64_t> outstanding(nqps, 0);
    std::vector<Clock::time_point> done_at;
    done_at.reserve(o.duration_s > 0 ? 1u << 20 : iters);
    const bool timed = o.duration_s > 0;
    const auto start = Clock::now();
    const auto stop_posting = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_s));
    std::uint64_t posted = 0, completed = 0;
    auto last_progress = start;
    Wc wc[64];
    std::size_t next_qp = 0;
    for (;;) {
        const bool more = timed ? Clock::now() < stop_posting : posted < iters;
        if (!more && completed == posted) break;
        // Post round-robin over the QPs, up to tx_depth outstanding each.
        for (std::size_t k = 0; more && k < nqps; ++k, next_qp = (next_qp + 1) % nqps) {
            const std::size_t i = next_qp;
            while (outstanding[i] < o.tx_depth && (timed || posted < iters)) {
                const Sge sge{ep.local[i].va, size, ep.mr->lkey()};
                SendWr w;
                w.wr_id = i;
                w.send_flags = SendFlags::signaled;
                w.sg_list = {&sge, 1};
                w.remote_addr = ep.remote[i].va;
                w.rkey = ep.remote[i].rkey;
                if (int rc = ep.qps[i]->post_send(w)) return fmt::format("post_send: {}", std::strerror(rc));
                ++outstanding[i];
                ++posted;
                if (timed) break;  // check the clock often
            }
        }
        ep.dev->progress();
        for (std::size_t n = ep.scq->poll(wc), k = 0; k < n; ++k) {
            if (auto e = check_wc(wc[k]); !e.empty()) return e;
            --outstanding[wc[k].wr_id];
            ++completed;
            done_at.push_back(Clock::now());
            last_progress = done_at.back();
        }
        if (Clock::now() - last_progress > std::chrono::seconds(10))
            return fmt::format("no WRITE completed for 10 s ({} of {} done)", completed, posted);
    }
    const double secs = seconds_between(start, done_at.empty() ? Clock::now() : done_at.back());
    const double scale = o.report_gbits ? 8.0 / 1e9 : 1.0 / (1u << 20);
    r.bytes = size;
    r.iterations = completed;
    r.bw_avg = secs > 0 ? static_cast<double>(completed) * size * scale / secs : 0;
    r.msg_rate_mpps = secs > 0 ? static_cast<double>(completed) / secs / 1e6 : 0;
    // Peak: the best rate over any window of W consecutive completions.
    const std::size_t w = std::clamp<std::size_t>(done_at.size() / 10, 1, 1000);
    double best = 0;
    for (std::size_t i = 0; i + w < done_at.size(); ++i) {
        const double dt = seconds_between(done_at[i], done_at[i + w]);
        if (dt > 0) best = std::max(best, static_cast<double>(w) * size * scale / dt);
    }
    r.bw_peak = std::max(best, r.bw_avg);
    return {};
}

// ---------------------------------------------------------------------------
// write_lat: ping-pong with WRITE_WITH_IMM; a receive completion says the
// whole message is placed (packets may arrive out of order over many paths,
// so polling the last byte, as perftest does on RC, would be wrong here).

std::string send_imm(Endpoint& ep, std::uint32_t size, std::uint32_t imm) {
    const Sge sge{ep.local[0].va, size, ep.mr->lkey()};
    SendWr w;
    w.wr_id = 0;
    w.opcode = WrOpcode::rdma_write_with_imm;
    w.send_flags = SendFlags::signaled;
    w.sg_list = {&sge, 1};
    w.remote_addr = ep.remote[0].va;
    w.rkey = ep.remote[0].rkey;
    w.imm_data = imm;
    if (int rc = ep.qps[0]->post_send(w)) return fmt::format("post_send: {}", std::strerror(rc));
    return {};
}

/// Progresses until a receive completion arrives (send completions are
/// drained on the way). 1: received; 0: `stop` said so; error otherwise.
template <class Stop>
int wait_recv(Endpoint& ep, std::string& error, Stop stop) {
    Wc wc[16];
    auto last = Clock::now();
    for (std::uint64_t spin = 0;; ++spin) {
        ep.dev->progress();
        for (std::size_t n = ep.scq->poll(wc), k = 0; k < n; ++k)
            if (error = check_wc(wc[k]); !error.empty()) return -1;
        if (ep.rcq->poll(std::span(wc, 1)) == 1) {
            if (error = check_wc(wc[0]); !error.empty()) return -1;
            if (auto e = ep.post_recvs(0, 1); !e.empty()) return error = e, -1;
            return 1;
        }
        if ((spin & 1023) == 0) {
            if (stop()) return 0;
            if (Clock::now() - last > std::chrono::seconds(10)) {
                error = "no reply from the peer for 10 s";
                return -1;
            }
        }
    }
}

std::string client_lat(const Options& o, Endpoint& ep, std::uint32_t size, std::uint64_t iters, Result& r) {
    std::vector<double> us;
    us.reserve(iters);
    const bool timed = o.duration_s > 0;
    const auto start = Clock::now();
    std::string error;
    for (std::uint64_t i = 0; timed ? seconds_between(start, Clock::now()) < o.duration_s : i < iters; ++i) {
        const auto t0 = Clock::now();
        if (auto e = send_imm(ep, size, static_cast<std::uint32_t>(i)); !e.empty()) return e;
        if (wait_recv(ep, error, [] { return false; }) < 0) return error;
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
    }
    if (us.empty()) return "no iteration completed";
    r.bytes = size;
    r.iterations = us.size();
    double sum = 0;
    for (double v : us) sum += v;
    r.t_avg = sum / static_cast<double>(us.size());
    double var = 0;
    for (double v : us) var += (v - r.t_avg) * (v - r.t_avg);
    r.t_stdev = std::sqrt(var / static_cast<double>(us.size()));
    std::sort(us.begin(), us.end());
    auto pct = [&](double p) {
        const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(us.size()))) ;
        return us[std::min(us.size() - 1, k == 0 ? 0 : k - 1)];
    };
    r.t_min = us.front();
    r.t_max = us.back();
    r.t_typical = pct(0.5);
    r.p99 = pct(0.99);
    r.p999 = pct(0.999);
    return {};
}

// ---------------------------------------------------------------------------
// roles

std::uint64_t default_iters(const Options& o) { return o.iters != 0 ? o.iters : o.test == Test::write_bw ? 5000 : 1000; }

/// --stats: the device's counters as JSON. "" or the error.
std::string write_stats(const Options& o, const Device& dev) {
    if (o.stats_json.empty()) return {};
    std::FILE* f = std::fopen(o.stats_json.c_str(), "w");
    if (f == nullptr) return fmt::format("--stats {}: {}", o.stats_json, std::strerror(errno));
    fmt::print(f, "{}\n", dev.stats_json());
    std::fclose(f);
    return {};
}

int fail(const Options& o, const std::string& role, const std::string& what, Oob* oob = nullptr) {
    fmt::print(stderr, "omrc-perf {}: error: {}\n", role, what);
    if (oob != nullptr) (void)oob->send({{"type", "error"}, {"message", what}});
    (void)o;
    return 1;
}

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
        o.report_gbits = hello.at("report_gbits").get<bool>();
        o.check = hello.value("check", false);
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
    nlohmann::json reply = ep.hello_fields();
    reply["type"] = "hello";
    if (auto e = oob.send(reply); !e.empty()) return fail(o, "server", e);
    if (auto e = ep.connect(o, peer); !e.empty()) return fail(o, "server", e, &oob);
    if (o.test == Test::write_lat)
        if (auto e = ep.post_recvs(0, 64); !e.empty()) return fail(o, "server", e, &oob);
    print_header(o, "server", ep.dev->planes());
    std::vector<Result> results;
    for (;;) {
        nlohmann::json m;
        std::string error;
        // Between sizes the client may take long (a big -a run): no deadline
        // here, but a dead client closes the connection.
        int rc = 0;
        while ((rc = oob.recv(m, milliseconds(0), error)) == 0) ep.dev->progress();
        if (rc < 0) return fail(o, "server", error);
        const std::string type = m["type"].get<std::string>();
        if (type == "bye") break;
        if (type == "error") return fail(o, "server", fmt::format("the client reports: {}", m.value("message", "")));
        if (type == "start") {
            const auto size = m.value("bytes", std::uint32_t{0});
            const auto iters = m.value("iters", std::uint64_t{0});
            if (size == 0 || size > buffer) return fail(o, "server", "the client asks for a size beyond the buffer", &oob);
            if (auto e = oob.send({{"type", "ready"}}); !e.empty()) return fail(o, "server", e);
            if (o.test == Test::write_lat) {
                // Pong every ping until the client's result arrives (duration
                // mode) or `iters` pings were answered.
                nlohmann::json early;
                bool have_early = false;
                std::string oob_error;
                auto stop = [&] {
                    const int r2 = oob.recv(early, milliseconds(0), oob_error);
                    if (r2 != 0) have_early = true;
                    return r2 != 0;
                };
                for (std::uint64_t i = 0; o.duration_s > 0 || i < iters; ++i) {
                    const int got = wait_recv(ep, error, stop);
                    if (got < 0) return fail(o, "server", error, &oob);
                    if (got == 0) break;
                    if (auto e = send_imm(ep, size, static_cast<std::uint32_t>(i)); !e.empty())
                        return fail(o, "server", e, &oob);
                }
                if (have_early) {
                    if (!oob_error.empty()) return fail(o, "server", oob_error);
                    m = early;
                } else if (auto e = expect(oob, &ep, "result", m, milliseconds(o.oob_timeout_ms) + std::chrono::seconds(60));
                           !e.empty()) {
                    return fail(o, "server", e, &oob);
                }
            } else if (auto e = expect(oob, &ep, "result", m, std::chrono::hours(24 * 365)); !e.empty()) {
                return fail(o, "server", e, &oob);
            }
            Result r;
            if (m["type"] != "result" || !from_json(m, r)) return fail(o, "server", "malformed result from the client", &oob);
            if (o.check && o.test == Test::write_bw) {
                const auto want = m.value("crc64", std::vector<std::uint64_t>{});
                const auto have = buffer_crcs(ep, r.bytes);
                if (want != have)
                    return fail(o, "server", fmt::format("data check failed at {} bytes: the memory differs from "
                                                         "what the client sent", r.bytes), &oob);
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

int run_client(Options o) {
    if (o.test == Test::write_lat && o.qps != 1) return fail(o, "client", "write_lat runs on one QP (-q 1)");
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
    hello["report_gbits"] = o.report_gbits;
    hello["check"] = o.check;
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
    if (auto e = ep.connect(o, peer); !e.empty()) return fail(o, "client", e, &oob);
    if (o.test == Test::write_lat)
        if (auto e = ep.post_recvs(0, 64); !e.empty()) return fail(o, "client", e, &oob);
    print_header(o, "client", ep.dev->planes());
    std::vector<Result> results;
    for (std::uint32_t size : o.sizes) {
        if (auto e = oob.send({{"type", "start"}, {"bytes", size}, {"iters", iters}}); !e.empty())
            return fail(o, "client", e);
        nlohmann::json m;
        if (auto e = expect(oob, &ep, "ready", m, wait); !e.empty()) return fail(o, "client", e, &oob);
        Result r;
        const std::string e = o.test == Test::write_bw ? client_bw(o, ep, size, iters, r) : client_lat(o, ep, size, iters, r);
        if (!e.empty()) return fail(o, "client", fmt::format("{} bytes: {}", size, e), &oob);
        nlohmann::json msg = to_json(r);
        msg["type"] = "result";
        if (o.check && o.test == Test::write_bw) msg["crc64"] = buffer_crcs(ep, size);
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

}  // namespace

int run(const Options& o, std::atomic<std::uint16_t>* bound_port_out) {
    Options opts = o;
    if (opts.tx_depth == 0) opts.tx_depth = opts.test == Test::write_bw ? 128 : 1;
    return opts.server.empty() ? run_server(opts, bound_port_out) : run_client(opts);
}

}  // namespace omrc::perf
