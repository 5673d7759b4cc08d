// SPDX-License-Identifier: BSD-3-Clause
// libibverbs-compatible library: the objects behind the ibverbs handles.
//
// Every ibverbs object a program holds (ibv_context, ibv_pd, ibv_mr, ibv_cq,
// ibv_qp, ibv_comp_channel) is the first member of one of these structs, so
// a handle converts back with a static cast of its address. Each wraps the
// OpenMRC verbs object it stands for (include/omrc/verbs.hpp).
//
// Threads. An OpenMRC Device is used by one thread at a time; ibverbs
// programs call from any thread and expect completions without calling in
// (one-sided WRITE targets never do). So every Context has a mutex that each
// entry point touching the Device holds, and a progress thread that runs
// Device::progress() under it whenever the program has not progressed the
// device through its own data-path calls (poll_cq progresses inline).
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "omrc/config.hpp"
#include "omrc/verbs.hpp"

namespace omrc::ibv {

/// One device of the configuration file, for the life of the process (what
/// ibv_get_device_list hands out; rdma-core keeps its devices too).
struct DeviceEntry {
    ibv_device dev{};        ///< first member: ibv_device* converts back
    DeviceConfig config;
    std::uint32_t index = 0; ///< position in the file (ibv_get_device_index)
    std::uint64_t guid = 0;  ///< node GUID, host order
    /// The open context, shared by every ibv_open_device of this device in
    /// the process (an OpenMRC device holds its ports: it cannot be opened
    /// twice), and how many opens it has had without a close.
    struct Context* open = nullptr;
    std::uint32_t opens = 0;
};

/// How a Context drives its Device.
enum class ProgressMode : std::uint8_t {
    thread,  ///< a progress thread, plus inline progress from poll_cq/post_send
    inline_, ///< only from poll_cq/post_send (OMRC_IBV_PROGRESS=inline)
};

struct Cq;
struct Srq;

/// An ibv_comp_channel: an eventfd (semaphore mode) the progress pass
/// writes one count to per CQ event, and the CQs whose events wait.
struct CompChannel {
    ibv_comp_channel channel{};  ///< first member
    std::mutex mu;               ///< guards events
    std::deque<Cq*> events;      ///< CQs notified, in order; one per eventfd count
};

struct Context {
    verbs_context vctx{};        ///< first member; ends with the ibv_context programs hold
    DeviceEntry* entry = nullptr;
    std::unique_ptr<Device> dev;
    std::recursive_mutex mu;     ///< held around every call into dev and its objects
    ProgressMode mode = ProgressMode::thread;
    std::thread progress_thread;
    std::atomic<bool> stop{false};
    /// Data-path calls of the program (post_send, post_recv, poll_cq) ended so
    /// far, and those under way now: the progress thread stands back while the
    /// program keeps calling.
    std::atomic<std::uint64_t> program_seq{0};
    std::atomic<std::uint32_t> program_calls{0};
    std::vector<Cq*> armed;      ///< CQs with a pending ibv_req_notify_cq (under mu)
    std::uint16_t lid = 0;       ///< what ibv_query_port reports (address.cpp)
    ibv_gid gid{};               ///< GID index 0: the device's IPv6 address
    std::atomic<std::uint32_t> live_objects{0};  ///< PDs, CQs, channels not yet destroyed
    /// Affiliated async events not yet taken by ibv_get_async_event (under
    /// mu); each one raised also writes a count to the async fd.
    std::deque<ibv_async_event> async_events;
    std::unordered_map<const omrc::Srq*, Srq*> srqs;  ///< live SRQs by their OpenMRC object (under mu)

    /// One progress pass and the CQ events it makes (mu held).
    std::size_t progress_locked();
    /// Writes the events of armed CQs that hold completions (mu held).
    void notify_armed_locked();
    /// Moves the device's async events (Device::poll_async_events) to
    /// async_events and signals the async fd (mu held).
    void take_async_events_locked();
};

/// The Context of an ibv_context (vctx is Context's first member).
inline Context* to_ctx(ibv_context* c) {
    return reinterpret_cast<Context*>(reinterpret_cast<std::uint8_t*>(c) - offsetof(verbs_context, context));
}

struct Pd {
    ibv_pd pd{};  ///< first member
    std::unique_ptr<omrc::Pd> opd;
    std::atomic<std::uint32_t> children{0};  ///< MRs, QPs and SRQs
};

struct Mr {
    ibv_mr mr{};  ///< first member
    std::unique_ptr<omrc::Mr> omr;
};

struct Cq {
    ibv_cq cq{};  ///< first member
    std::unique_ptr<omrc::Cq> ocq;
    CompChannel* channel = nullptr;
    bool armed = false;          ///< under the context's mu
    /// Armed with solicited_only: fires when ocq->solicited_events() passes
    /// armed_solicited_mark (under mu).
    bool armed_solicited_only = false;
    std::uint64_t armed_solicited_mark = 0;
    std::uint32_t qps = 0;       ///< QPs using it (under mu)
};

struct Srq {
    ibv_srq srq{};  ///< first member
    std::unique_ptr<omrc::Srq> osrq;
    Context* ctx = nullptr;
    Pd* pd = nullptr;
    std::uint32_t qps = 0;  ///< QPs using it (under the context's mu)
};

/// One WR built through ibv_qp_ex (its SGEs and inline copy kept beside it).
struct PendingWr {
    SendWr wr;
    std::array<Sge, kMaxSge> sge{};
    std::uint32_t nsge = 0;
    std::vector<std::uint8_t> inline_copy;  ///< wr_set_inline_data*: the bytes, copied
};

/// The send-WR builder state of ibv_qp_ex (ibv_wr_start … ibv_wr_complete).
struct WrBuilder {
    bool open = false;
    int error = 0;                 ///< first error since wr_start (EINVAL, EOPNOTSUPP)
    std::vector<PendingWr> wrs;
};

struct Qp {
    ibv_qp_ex qpx{};  ///< first member (ibv_qp is qpx.qp_base)
    std::unique_ptr<omrc::Qp> oqp;
    Context* ctx = nullptr;
    Pd* pd = nullptr;
    Cq* send_cq = nullptr;
    Cq* recv_cq = nullptr;
    Srq* srq = nullptr;               ///< its shared receive queue, or null
    ibv_qp_cap cap{};                 ///< what the QP was created with (after clamping)
    ibv_qp_attr attr{};               ///< the attributes set so far (ibv_query_qp)
    std::uint32_t attr_mask = 0;      ///< which of them were ever set
    std::uint64_t send_ops_flags = 0; ///< ibv_qp_ex operations allowed
    bool sq_sig_all = false;
    std::uint32_t unsupported_logged = 0;  ///< bit per opcode already logged
    WrBuilder builder;
};

// Implemented across the library.
std::vector<DeviceEntry*>& device_entries();  ///< loaded once (device_list.cpp)
void fill_context_ops(Context& c);            ///< ibv_context_ops and verbs_context ops (datapath.cpp)
void fill_resource_ops(Context& c);           ///< verbs_context's create_qp_ex (resources.cpp)
/// OMRC_IBV_STATS=PREFIX: writes the device's stats_json() when a QP is
/// destroyed (resources.cpp; caller holds c.mu).
void write_stats_file(const Context& c, std::uint32_t qp_num);
void fill_qp_ex_ops(Qp& q);                   ///< ibv_qp_ex's wr_* members (datapath.cpp)
int post_srq_recv_op(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);  ///< srq.cpp
void start_progress(Context& c);              ///< context.cpp
void stop_progress(Context& c);
/// Map an OpenMRC completion to ibverbs'.
void to_ibv_wc(const Wc& in, ibv_wc* out);
std::uint64_t monotonic_ns();

/// Hands a chain of ibv_recv_wr to `post` (an OpenMRC Qp's or Srq's
/// post_recv) one by one; the first refused (more than kMaxSge SGEs, or
/// post's errno) goes to *bad_wr and its errno is returned.
template <class Post>
int post_recv_chain(ibv_recv_wr* wr, ibv_recv_wr** bad_wr, Post&& post) {
    for (; wr != nullptr; wr = wr->next) {
        if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > kMaxSge) {
            if (bad_wr != nullptr) *bad_wr = wr;
            return EINVAL;
        }
        std::array<Sge, kMaxSge> sge;
        for (int s = 0; s < wr->num_sge; ++s) sge[s] = {wr->sg_list[s].addr, wr->sg_list[s].length, wr->sg_list[s].lkey};
        RecvWr o;
        o.wr_id = wr->wr_id;
        o.sg_list = std::span<const Sge>(sge.data(), static_cast<std::size_t>(wr->num_sge));
        if (const int rc = post(o); rc != 0) {
            if (bad_wr != nullptr) *bad_wr = wr;
            return rc;
        }
    }
    return 0;
}

/// Sets errno and returns nullptr (ibverbs' convention for calls that return objects).
template <typename T>
T* fail_null(int e) {
    errno = e;
    return nullptr;
}

}  // namespace omrc::ibv
