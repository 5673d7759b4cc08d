// SPDX-License-Identifier: BSD-3-Clause
// The objects behind NCCL's opaque pointers: comms, requests, memory
// handles (and listen comms, contexts). Each starts with a magic number —
// its first member, at offset 0: none of these types has a virtual function
// or a base with data before it — that the entry points read (magic_at)
// before using a pointer NCCL passes back, so that a pointer of the wrong
// kind (a recv comm given to isend, a request already released) is an error
// rather than memory corruption.
//
// Everything here except the magic numbers is used with the device's mutex
// held (device_table.hpp, "Threads").
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device_table.hpp"
#include "handshake.hpp"
#include "magic.hpp"
#include "protocol.hpp"

namespace omrc::nccl {

inline constexpr std::uint32_t kSendCommMagic = 0x4f534e44;    // "OSND"
inline constexpr std::uint32_t kRecvCommMagic = 0x4f524356;    // "ORCV"
inline constexpr std::uint32_t kListenCommMagic = 0x4f4c534e;  // "OLSN"
inline constexpr std::uint32_t kRequestMagic = 0x4f524551;     // "OREQ"
inline constexpr std::uint32_t kMrMagic = 0x4f4d5248;          // "OMRH"
inline constexpr std::uint32_t kDeadMagic = 0xdeadc0de;

struct Comm;

/// wr_id of a CM comm's liveness probe (cm_setup.hpp); receives use ~0.
inline constexpr std::uint64_t kProbeWrId = ~std::uint64_t{0} - 1;


/// A request NCCL holds between isend/irecv and the test that reports it done.
struct Request {
    std::uint32_t magic = 0;  ///< kRequestMagic while NCCL holds it
    bool is_send = false;
    bool done = false;
    Comm* comm = nullptr;
    std::uint32_t seq = 0;                 ///< the CTS slot's sequence number
    int n = 1;                             ///< receives (1 for a send)
    std::uint32_t posted[kMaxRecvs] = {};  ///< recv: the sizes posted
    std::uint32_t sizes[kMaxRecvs] = {};   ///< bytes transferred, reported by test
};

/// What regMr returns: one OpenMRC MR in the device's PD (a zero-length
/// registration has none).
struct MrHandle {
    std::uint32_t magic = kMrMagic;
    NetDevice* dev = nullptr;
    std::unique_ptr<Mr> mr;
    std::uint64_t addr = 0;
    std::size_t size = 0;
};

/// What both ends of a connection have: a QP and its CQ, the ring the peer
/// writes into, where the peer's ring is, the TCP socket kept for liveness,
/// the comm's error state and its request pool.
struct Comm {
    std::uint32_t magic = 0;
    NetDevice* dev = nullptr;
    std::unique_ptr<Cq> cq;
    std::unique_ptr<Qp> qp;
    std::unique_ptr<Mr> ring_mr;
    std::uint64_t peer_ring_addr = 0;
    std::uint32_t peer_ring_rkey = 0;
    int fd = -1;       ///< liveness: the handshake's TCP socket (-1 with the connection manager)
    std::uint32_t cm_id = 0;  ///< the connection manager's connection (0: set up over TCP)
    bool probe_outstanding = false;  ///< cm: a liveness probe WRITE waits for its completion
    std::uint64_t next_probe_ns = 0;  ///< cm: the next probe is due then (steady clock)
    std::string peer;  ///< "[::1]:40000 qpn 0x12" for messages

    ncclResult_t error = ncclSuccess;  ///< once set, every call on the comm returns it
    std::string error_reason;
    std::uint64_t peer_gone_ns = 0;  ///< when the socket's end of file was first seen
    std::uint64_t next_liveness_ns = 0;

    std::vector<Request> requests;  ///< the pool (its size is fixed at creation)
    std::vector<Request*> free_requests;

    Comm(std::uint32_t kind, NetDevice* d, std::size_t pool);
    /// Not virtual: a comm is always destroyed as the SendComm or RecvComm
    /// it is (and a virtual table would move `magic` from offset 0).
    ~Comm();
    /// Destroys the QP, the ring MR and the CQ (idempotent). Takes the
    /// device's mutex: never destroy a comm with it held. The derived
    /// destructors call it while the ring they own still exists.
    void teardown();
    Comm(const Comm&) = delete;
    Comm& operator=(const Comm&) = delete;

    Request* alloc_request();
    void release_request(Request* r);
    /// Records the first failure (and logs it); later ones are ignored.
    void fail(ncclResult_t result, const std::string& reason);
};

/// The sending end: the peer's CTS records arrive in `ring`.
struct SendComm final : Comm {
    /// A CTS slot being matched by isends and, once complete, waiting for
    /// the completion of its last WRITE_WITH_IMM. Slot seq % kSlots is
    /// reused only once slot seq's completion arrived.
    struct Slot {
        std::uint32_t matched = 0;  ///< bit i: entry i has its send
        int nmatched = 0;
        Request* reqs[kMaxRecvs] = {};
        std::uint32_t sizes[kMaxRecvs] = {};
    };
    alignas(64) CtsRecord ring[kSlots] = {};
    /// CTS records copied out of the ring at their completion; cts[seq %
    /// kSlots] is overwritten only by CTS seq + kSlots, which the peer posts
    /// once message seq has landed.
    CtsRecord cts[kSlots] = {};
    Slot slots[kSlots];
    std::uint32_t cts_seen = 0;   ///< CTS records received (the next one's sequence number)
    std::uint32_t head = 0;       ///< the slot isend matches now
    std::uint32_t completed = 0;  ///< slots whose last WRITE_WITH_IMM completed

    explicit SendComm(NetDevice* d) : Comm(kSendCommMagic, d, std::size_t{kSlots} * kMaxRecvs) {}
    ~SendComm() { teardown(); }
    SendComm(const SendComm&) = delete;
    SendComm& operator=(const SendComm&) = delete;
};

/// The receiving end: the peer's done records arrive in `ring`.
struct RecvComm final : Comm {
    alignas(64) DoneRecord ring[kSlots] = {};
    Request* by_slot[kSlots] = {};
    std::uint32_t posted = 0;  ///< irecvs posted (the next one's sequence number)
    std::uint32_t landed = 0;  ///< messages whose completion arrived

    explicit RecvComm(NetDevice* d) : Comm(kRecvCommMagic, d, kSlots) {}
    ~RecvComm() { teardown(); }
    RecvComm(const RecvComm&) = delete;
    RecvComm& operator=(const RecvComm&) = delete;
};

/// Send or recv comm behind an opaque pointer, or nullptr.
Comm* as_comm(void* p) noexcept;
SendComm* as_send_comm(void* p) noexcept;
RecvComm* as_recv_comm(void* p) noexcept;

// ---- endpoint.cpp: the verbs objects of a comm --------------------------

/// Creates the CQ, the QP (moved to INIT, receives posted) and the ring MR
/// of `c` (ring: `ring_bytes` at `ring`). dev->mu held. 0 or an errno with *error.
int create_endpoint(Comm& c, void* ring, std::uint32_t ring_bytes, std::string* error);
/// INIT → RTR → RTS towards the peer. dev->mu held. 0 or an errno with *error.
int connect_endpoint(Comm& c, const PeerInfo& peer, std::uint32_t my_psn, std::string* error);
/// The MTU this side asks for (QpDefaults::mtu_bytes, else 4096).
std::uint32_t local_mtu(const NetDevice& d);
/// The attributes of the device configuration's QP defaults (access flags,
/// MTU, mpr, path policy, EVs, timeout, retries, CC) for RTR and RTS.
QpAttr qp_defaults_attr(const NetDevice& d);
/// Posts one receive for an incoming immediate. dev->mu held.
int post_imm_recv(Comm& c);

// ---- protocol.cpp: posting and completions ------------------------------

/// dev->mu held: one progress pass of the device, then this comm's completions.
void progress_comm(Comm& c);
/// isend/irecv with dev->mu held (see core.hpp for the contract).
ncclResult_t post_send(SendComm& c, void* data, std::size_t size, int tag, MrHandle* mh, Request** out);
ncclResult_t post_recv(RecvComm& c, int n, void** data, const std::size_t* sizes, const int* tags, MrHandle** mhs,
                       Request** out);
/// dev->mu held: the socket still open? A peer gone for longer than a grace
/// period fails the comm (ncclRemoteError).
void check_peer(Comm& c);

}  // namespace omrc::nccl
