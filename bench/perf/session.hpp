// SPDX-License-Identifier: BSD-3-Clause
// What omrc-perf's roles and tests share. One file per concern, as testpmd
// keeps one per forwarding mode:
//   exchange.cpp   the exchange protocol between client and server (below)
//   endpoint.cpp   the device, its QPs and the test buffer
//   write_bw.cpp   the write_bw test
//   write_lat.cpp  the write_lat test (ping-pong with WRITE_WITH_IMM), both halves
//   server.cpp     the server role
//   client.cpp     the client role, and run() that picks the role
//   report.cpp     the perftest-style table and the JSON report
//   config.cpp     --config FILE --device NAME: the device from a configuration file (perf.hpp)
//
// The client drives every test; the server follows the client's messages
// (docs/PERF.md):
//
//   client → hello {test, sizes, iters, duration, qps, tx_depth, mtu, evs,
//                   policy, backup_evs, mpr, cc, buffer, device, qps[]}
//   server → hello {device, qps[]}          (both connect their QPs)
//   per size:  client → start {bytes, iters}; server → ready;
//              the test runs; client → result {...}
//   client → bye
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "oob.hpp"
#include "omrc/omrc.hpp"
#include "perf.hpp"

namespace omrc::perf {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// ---------------------------------------------------------------------------
// exchange.cpp: QP information on the wire (JSON), and the messages

struct QpInfo {
    std::uint32_t qpn = 0;
    std::uint16_t conn_id = 0;
    std::uint32_t psn = 0;
    std::uint64_t va = 0;
    std::uint32_t rkey = 0;
    std::uint64_t len = 0;
};

nlohmann::json address_json(const DeviceAddress& a);
bool address_from_json(const nlohmann::json& j, DeviceAddress& a);
nlohmann::json cc_json(const CcConfig& c);
/// The peer's congestion control into `c`: empty, or what is wrong with it.
std::string cc_from_json(const nlohmann::json& j, CcConfig& c);
nlohmann::json qp_json(const QpInfo& q);
bool qp_from_json(const nlohmann::json& j, QpInfo& q);

struct Endpoint;

/// The QP attributes the options set (access, MTU, path policy, EVs, window,
/// timeout, CC), for Endpoint::connect's transitions and the connection
/// manager's. "" or what is wrong.
std::string qp_attr_of(const Options& o, QpAttr& a);
/// The peer's device address and QPs from its hello. "" or the error.
std::string read_peer_hello(const nlohmann::json& m, std::size_t nqps, DeviceAddress& peer, std::vector<QpInfo>& qps);
/// Receives the next message, of type `type`, progressing `ep`'s device
/// meanwhile (if given). "" or the error (an "error" message of the peer,
/// another type, the timeout).
/// One look at the socket for a message while `dev` is progressed from this
/// thread (64 passes, then a non-blocking receive) or by its worker threads (a
/// 1 ms wait). Returns Oob::recv's result: 1 a message, 0 none yet, -1 error.
int recv_progressing(Oob& oob, Device& dev, nlohmann::json& msg, std::string& error);
std::string expect(Oob& oob, Endpoint* ep, const char* type, nlohmann::json& msg, milliseconds timeout);
/// Prints the error of `role` and tells the peer (if `oob`); returns the exit status 1.
int fail(const Options& o, const std::string& role, const std::string& what, Oob* oob = nullptr);

// ---------------------------------------------------------------------------
// endpoint.cpp: the device, its QPs and the test buffer

struct Endpoint {
    std::unique_ptr<Device> dev;
    std::unique_ptr<Pd> pd;
    std::unique_ptr<Cq> scq, rcq;
    std::vector<std::unique_ptr<Qp>> qps;
    std::uint8_t* buf = nullptr;  ///< qps × buf_per_qp bytes
    std::size_t buf_per_qp = 0;
    std::unique_ptr<Mr> mr;
    std::vector<QpInfo> local, remote;
    /// Client, write_bw/send_bw: per QP, the longest message it has carried
    /// so far (0: none); --check expects the server's memory past it untouched.
    std::vector<std::uint32_t> written;

    Endpoint() = default;
    Endpoint(const Endpoint&) = delete;
    Endpoint& operator=(const Endpoint&) = delete;
    ~Endpoint();

    /// Opens the device, creates `qps` QPs and registers the buffer. "" or the error.
    std::string open(const Options& o, std::uint32_t nqps, std::size_t per_qp, std::uint32_t depth);

    /// Opens the device only (a server does so before it waits for a client,
    /// so its ports are up when the client's come: a memif client port needs
    /// its server listening). "" or the error.
    std::string open_device(const Options& o);

    /// The PD, CQs, buffer and `nqps` QPs on the open device. "" or the error.
    std::string create(std::uint32_t nqps, std::size_t per_qp, std::uint32_t depth);

    /// RESET → INIT → RTR → RTS against `remote`. "" or the error.
    std::string connect(const Options& o, const DeviceAddress& peer);

    /// --cm, server: listens for the client's QPs (before its hello reply). "" or the error.
    std::string cm_listen(const Options& o);
    /// --cm, server: accepts one request per QP (private data: the QP's
    /// index) until every QP is established. "" or the error.
    std::string cm_accept_all(const Options& o);
    /// --cm, client: connects every QP to the server's device. "" or the error.
    std::string cm_connect_all(const Options& o, const DeviceAddress& peer);

    /// Posts `n` receives on QP i, each over QP i's whole buffer (a SEND
    /// lands at its start; a WRITE_WITH_IMM only consumes it); wr_id = i.
    std::string post_recvs(std::size_t i, std::size_t n);

    nlohmann::json hello_fields() const;
};

/// "" for a successful completion, else what failed.
std::string check_wc(const Wc& wc);
/// --stats: the device's counters as JSON. "" or the error.
std::string write_stats(const Options& o, const Device& dev);

// ---------------------------------------------------------------------------
// write_bw.cpp

/// CRC-64 of the first `size` bytes of every QP's buffer (--check, server).
std::vector<std::uint64_t> buffer_crcs(const Endpoint& ep, std::uint32_t size);
/// What the server's buffer_crcs must be (--check, client): per QP, our
/// bytes over what it has written (Endpoint::written), zeros past them (a QP
/// that carried no message at all leaves the server's zeroed memory as it was).
std::vector<std::uint64_t> expected_crcs(const Endpoint& ep, std::uint32_t size);
/// One size of write_bw / send_bw at the client. "" or the error.
std::string client_bw(const Options& o, Endpoint& ep, std::uint32_t size, std::uint64_t iters, Result& r);
/// One size of write_bw / send_bw at the server: progresses (send_bw: and
/// posts every consumed receive again) until the client's result arrives
/// (into `result`). "" or the error.
std::string serve_bw(const Options& o, Endpoint& ep, Oob& oob, nlohmann::json& result);

// ---------------------------------------------------------------------------
// write_lat.cpp

/// One size of write_lat at the client (it pings). "" or the error.
std::string client_lat(const Options& o, Endpoint& ep, std::uint32_t size, std::uint64_t iters, Result& r);
/// One size of write_lat at the server: pongs every ping until the client's
/// result arrives (into `result`; duration mode) or `iters` pings were
/// answered. "" or the error; `oob_broken` says the error is the out-of-band
/// connection's own (the peer cannot be told).
std::string serve_lat(const Options& o, Endpoint& ep, Oob& oob, std::uint32_t size, std::uint64_t iters,
                      nlohmann::json& result, bool& oob_broken);

// ---------------------------------------------------------------------------
// server.cpp, client.cpp

int run_server(Options o, std::atomic<std::uint16_t>* bound_port_out);
int run_client(Options o);

}  // namespace omrc::perf
