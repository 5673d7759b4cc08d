// SPDX-License-Identifier: BSD-3-Clause
// Comms set up by OpenMRC's connection manager (docs/NCCL.md, "Connection
// set-up"; docs/PROTOCOL.md §13) instead of the TCP handshake of
// handshake.hpp: OMRC_NCCL_SETUP=cm at the listening rank (not for a device
// of more planes than the handle holds). Not the default yet (docs/NCCL.md,
// "Connection establishment"): a peer's DREQ that overtakes the ACK of our
// last send carries the peer's receive edge, which completes that send
// before the QP goes to ERR, but not on an encrypted QP. The handle names
// the listener's device and a service id of its own (handle.hpp, version 2);
// the connector's QP goes to RTS on the CM's reply, the listener's on accept,
// and the REQ's and REP's private data carry the rings (RingInfo).
//
//   connector (send comm)                        listener (recv comm)
//   connect: QP, CTS ring, cm_connect ── REQ ──▶ connect_request event
//                                       ◀── REP ── accept: QP, done ring, cm_accept
//            established: comm ready ── RTU ──▶ established: comm ready
//
// Liveness without a socket: a closed comm destroys its QP, which sends a
// DREQ; the peer's comm sees `disconnected` (and its QP's flushed work) and
// fails requests still open after the same grace period as a closed socket.
// A peer that died without a DREQ is found by a zero-length WRITE a waiting
// comm sends now and then (kProbePeriodNs), which fails once the QP's
// retries run out.
//
// Events. Device::cm_poll reports the events of every connection of a
// device; route_cm_events (called by every progress pass, mu held) files
// them by connection id (NetDevice::cm_by_id, for the comms and connections
// in progress) and connect requests by service (NetDevice::cm_requests, for
// the listeners).
#pragma once

#include <cstdint>
#include <memory>

#include "comm.hpp"
#include "handle.hpp"

namespace omrc::nccl {

enum class SetupMode { tcp, cm };
/// OMRC_NCCL_SETUP at this moment: "tcp" (the default) or "cm"; anything
/// else is logged once and taken as tcp. Read by each listen: the handle
/// tells the connecting side which one it is.
SetupMode setup_mode();

/// How often a waiting comm set up by the CM sends its liveness probe.
inline constexpr std::uint64_t kProbePeriodNs = 100'000'000;

// ---- connect.cpp's helpers, shared --------------------------------------
std::uint64_t now_ns();
/// A random non-zero value (nonces, service ids, stage keys, PSNs).
std::uint64_t random_u64();
/// How long a connection may take once it started (OMRC_NCCL_CONNECT_TIMEOUT_MS).
std::uint64_t handshake_timeout_ns();

// ---- events ---------------------------------------------------------------
/// dev->mu held: moves the device's new CM events to their takers; requests
/// for a service nobody listens to any more are refused.
void route_cm_events(NetDevice& d);

// ---- listen / accept --------------------------------------------------------
/// A listen comm's CM side: the service, and the request accepted last while
/// its requester has not confirmed yet.
struct CmListener {
    NetDevice* dev = nullptr;
    std::uint64_t service_id = 0;
    std::unique_ptr<RecvComm> pending;  ///< accepted, waiting for `established`
    std::uint64_t pending_deadline_ns = 0;
    /// Stops listening and refuses the requests nobody took (takes dev->mu).
    ~CmListener();
};

/// Listens on a new service of `d` and writes the version-2 handle (the
/// device's planes ≤ kCmHandleMaxPlanes).
ncclResult_t cm_listen(NetDevice& d, void* handle, std::unique_ptr<CmListener>* out);
/// ncclSuccess with *out set once a comm is ready, NULL while waiting; an
/// error only for failures of this side (a bad request is refused instead).
ncclResult_t cm_accept_step(CmListener& l, RecvComm** out);

// ---- connect ------------------------------------------------------------------
struct CmConnecting {
    NetDevice* dev = nullptr;
    CmHandle handle;
    std::unique_ptr<SendComm> comm;
    std::uint64_t deadline_ns = 0;
};

/// Creates the send comm's QP and ring and sends the request.
ncclResult_t cm_connect_start(NetDevice& d, const CmHandle& h, std::unique_ptr<CmConnecting>* out);
/// ncclSuccess with *out set once the comm is ready, NULL while waiting, or
/// an error (refused, unreachable, timed out): the connection is then dropped.
ncclResult_t cm_connect_step(CmConnecting& k, SendComm** out);

// ---- liveness -----------------------------------------------------------------
/// dev->mu held: has the peer of this CM comm disconnected?
bool cm_peer_gone(Comm& c);
/// dev->mu held: sends the liveness probe if none is outstanding and its period passed.
void cm_probe(Comm& c, std::uint64_t now);

}  // namespace omrc::nccl
