// SPDX-License-Identifier: BSD-3-Clause
// ibv_open_device / ibv_close_device, the device and port queries, the GID
// table, async events, and the progress thread.
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "log/log.hpp"
#include "objects.hpp"
#include "symver.hpp"

// verbs.h turns ibv_query_port into an inline wrapper; the library defines the function.
#undef ibv_query_port

namespace omrc::ibv {

namespace {

/// Standing back this long (a program polling its CQ in a loop), the thread
/// sleeps instead of yielding, 20 µs at first and twice as long each time up
/// to 1 ms: on a machine with few cores a yielding (or often waking) thread
/// still takes a core from the program or its peer. A program that stops
/// calling gets the thread back within that sleep.
constexpr std::uint64_t kStandBackBeforeSleepNs = 100'000;
constexpr std::uint64_t kStandBackSleepMinNs = 20'000;
constexpr std::uint64_t kStandBackSleepMaxNs = 1'000'000;
/// Empty passes spin this long before the thread starts yielding: under load
/// the device's receive ring is empty for moments between bursts, and a yield
/// is a system call (several µs in a VM) while frames pile up behind it.
constexpr std::uint64_t kSpinBeforeYieldNs = 20'000;
/// After this long without any work the thread sleeps between passes.
constexpr std::uint64_t kIdleBeforeSleepNs = 50'000'000;
constexpr std::uint64_t kIdleSleepNs = 200'000;

ibv_mtu mtu_enum(std::uint32_t bytes) {
    if (bytes >= 4096) return IBV_MTU_4096;
    if (bytes >= 2048) return IBV_MTU_2048;
    if (bytes >= 1024) return IBV_MTU_1024;
    if (bytes >= 512) return IBV_MTU_512;
    return IBV_MTU_256;
}

/// IB width code for a number of planes (1x, 2x, 4x, 8x, 12x: the largest
/// that is not more than the planes) and its multiplier.
void width_of(std::uint32_t planes, std::uint8_t& code, std::uint32_t& lanes) {
    if (planes >= 12) code = 8, lanes = 12;
    else if (planes >= 8) code = 4, lanes = 8;
    else if (planes >= 4) code = 2, lanes = 4;
    else if (planes >= 2) code = 16, lanes = 2;
    else code = 1, lanes = 1;
}

/// IB speed code for the rate of one plane (one lane).
std::uint8_t speed_of(std::uint64_t bps) {
    const std::uint64_t g = bps / 1'000'000'000ULL;
    if (g >= 100) return 128;  // NDR, 100 Gb/s per lane
    if (g >= 50) return 64;    // HDR
    if (g >= 25) return 32;    // EDR
    if (g >= 14) return 16;    // FDR
    if (g >= 10) return 4;     // QDR
    if (g >= 5) return 2;      // DDR
    return 1;                  // SDR
}

void progress_main(Context* c) {
    std::uint64_t last_work = monotonic_ns();
    // Since when the program has been driving the device itself (0: it has
    // not, the thread is needed). Cleared only by a pass of the thread's that
    // moved something: a pass in a short gap between the program's calls that
    // finds nothing to do means the program still drives the device.
    std::uint64_t program_since = 0;
    std::uint64_t sleep_ns = kStandBackSleepMinNs;
    std::uint64_t seen_seq = c->program_seq.load(std::memory_order_relaxed);
    while (!c->stop.load(std::memory_order_acquire)) {
        const std::uint64_t now = monotonic_ns();
        // The program called since the last look (one turn of this loop: a
        // yield, a sleep or a pass), or is calling now: it drives the device,
        // and both doing so would halve either's throughput. A program that
        // stops calling (ib_write_lat spins on its buffer) gets the thread
        // back after one turn.
        const std::uint64_t seq = c->program_seq.load(std::memory_order_relaxed);
        if (c->program_calls.load(std::memory_order_relaxed) != 0 || seq != seen_seq) {
            seen_seq = seq;
            if (program_since == 0) program_since = now;
            if (now - program_since > kStandBackBeforeSleepNs) {
                const timespec ts{0, static_cast<long>(sleep_ns)};
                nanosleep(&ts, nullptr);
                sleep_ns = std::min(sleep_ns * 2, kStandBackSleepMaxNs);
            } else {
                std::this_thread::yield();
            }
            continue;
        }
        std::size_t moved;
        {
            std::lock_guard g(c->mu);
            moved = c->progress_locked();
        }
        if (moved != 0) {
            last_work = now;
            program_since = 0;
            sleep_ns = kStandBackSleepMinNs;
        } else if (program_since != 0) {
            // A gap in the program's calls with nothing to do: keep standing back.
            continue;
        } else if (now - last_work > kIdleBeforeSleepNs) {
            const timespec ts{0, static_cast<long>(kIdleSleepNs)};
            nanosleep(&ts, nullptr);
        } else if (now - last_work > kSpinBeforeYieldNs) {
            // Nothing to do for a while: let a thread of the program that
            // shares this core (ib_write_lat spins on its buffer) run.
            std::this_thread::yield();
        }
    }
}

int query_device_ex_op(ibv_context* context, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                       size_t attr_size);
int query_port_op(ibv_context* context, uint8_t port_num, ibv_port_attr* port_attr, size_t port_attr_len);

}  // namespace

std::uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::size_t Context::progress_locked() {
    const std::size_t n = dev->progress();
    if (!armed.empty()) notify_armed_locked();
    if (!srqs.empty()) take_async_events_locked();
    return n;
}

void Context::notify_armed_locked() {
    auto it = armed.begin();
    while (it != armed.end()) {
        Cq* cq = *it;
        const bool due = cq->armed_solicited_only ? cq->ocq->solicited_events() != cq->armed_solicited_mark
                                                  : cq->ocq->size() != 0;
        if (!due) {
            ++it;
            continue;
        }
        cq->armed = false;
        it = armed.erase(it);
        if (cq->channel == nullptr) continue;
        {
            std::lock_guard g(cq->channel->mu);
            cq->channel->events.push_back(cq);
        }
        const std::uint64_t one = 1;
        if (::write(cq->channel->channel.fd, &one, sizeof one) != sizeof one)
            omrc::log::logger().error("ibverbs: completion channel fd {}: {}", cq->channel->channel.fd, std::strerror(errno));
    }
}

void start_progress(Context& c) {
    if (c.mode != ProgressMode::thread) return;
    c.progress_thread = std::thread(progress_main, &c);
}

void stop_progress(Context& c) {
    c.stop.store(true, std::memory_order_release);
    if (c.progress_thread.joinable()) c.progress_thread.join();
}

namespace {

void fill_device_attr(const Context& c, ibv_device_attr& a) {
    std::memset(&a, 0, sizeof a);
    std::snprintf(a.fw_ver, sizeof a.fw_ver, "OpenMRC %s", OMRC_IBV_VERSION);
    a.node_guid = htobe64(c.entry->guid);
    a.sys_image_guid = a.node_guid;
    a.max_mr_size = UINT64_MAX;
    a.page_size_cap = 0xFFFFF000u;  // any multiple of 4 KiB
    // No PCI vendor: a software device reports 0xFFFFFF, as the kernel's
    // software RoCE (rxe) does; rdma-core's tests take 0 for a missing answer.
    a.vendor_id = 0xFFFFFF;
    a.vendor_part_id = 0;
    a.hw_ver = 0;
    a.max_qp = static_cast<int>(c.entry->config.options.max_qps);
    a.max_qp_wr = 65536;
    a.device_cap_flags = 0;
    a.max_sge = static_cast<int>(kMaxSge);
    a.max_sge_rd = static_cast<int>(kMaxSge);
    // Shared receive queues (ibv_modify_srq may resize them).
    a.device_cap_flags |= IBV_DEVICE_SRQ_RESIZE;
    a.max_srq = 1 << 16;
    a.max_srq_wr = 65536;
    a.max_srq_sge = static_cast<int>(kMaxSge);
    a.max_cq = 1 << 16;
    a.max_cqe = 1 << 20;
    a.max_mr = 1 << 24;
    a.max_pd = 1 << 24;
    // RDMA READs a QP answers at once / has in flight (no atomics: atomic_cap NONE).
    a.max_qp_rd_atom = static_cast<int>(omrc::kMaxRdAtomic);
    a.max_ee_rd_atom = 0;
    a.max_res_rd_atom = a.max_qp * static_cast<int>(omrc::kMaxRdAtomic);
    a.max_qp_init_rd_atom = static_cast<int>(omrc::kMaxRdAtomic);
    a.atomic_cap = IBV_ATOMIC_NONE;
    a.max_pkeys = 1;
    a.local_ca_ack_delay = 0;
    a.phys_port_cnt = 1;
}

void fill_port_attr(const Context& c, ibv_port_attr& a) {
    std::memset(&a, 0, sizeof a);
    const DeviceConfig& cfg = c.entry->config;
    a.state = IBV_PORT_ACTIVE;
    a.max_mtu = IBV_MTU_4096;
    a.active_mtu = mtu_enum(cfg.qp.mtu_bytes != 0 ? cfg.qp.mtu_bytes : 4096);
    a.gid_tbl_len = 1;
    a.port_cap_flags = 0;
    a.max_msg_sz = 1u << 31;
    a.pkey_tbl_len = 1;
    a.lid = c.lid;
    a.lmc = 0;
    a.max_vl_num = 1;
    std::uint32_t lanes = 1;
    width_of(c.dev->planes(), a.active_width, lanes);
    a.active_speed = speed_of(cfg.qp.cc.link_rate_bps);
    a.phys_state = 5;  // LinkUp
    a.link_layer = IBV_LINK_LAYER_ETHERNET;
}

int query_port_op(ibv_context* context, uint8_t port_num, ibv_port_attr* port_attr, size_t port_attr_len) {
    if (context == nullptr || port_attr == nullptr) return EINVAL;
    if (port_num != 1) return EINVAL;
    ibv_port_attr full;
    fill_port_attr(*to_ctx(context), full);
    std::memcpy(port_attr, &full, std::min(port_attr_len, sizeof full));
    return 0;
}

int query_device_ex_op(ibv_context* context, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                       size_t attr_size) {
    if (context == nullptr || attr == nullptr) return EINVAL;
    if (input != nullptr && input->comp_mask != 0) return EINVAL;
    ibv_device_attr_ex full;
    std::memset(&full, 0, sizeof full);
    fill_device_attr(*to_ctx(context), full.orig_attr);
    full.phys_port_cnt_ex = 1;
    std::memset(attr, 0, attr_size);
    std::memcpy(attr, &full, std::min(attr_size, sizeof full));
    return 0;
}

ibv_context* open_context(ibv_device* device) {
    DeviceEntry* entry = nullptr;
    for (DeviceEntry* e : device_entries())
        if (&e->dev == device) entry = e;
    if (entry == nullptr) return fail_null<ibv_context>(ENODEV);
    auto c = std::make_unique<Context>();
    c->entry = entry;
    int err = 0;
    c->dev = Device::open(entry->config.driver, entry->config.options, &err);
    if (!c->dev) {
        omrc::log::logger().error("ibverbs: cannot open {} (driver {}): {}", entry->config.name, entry->config.driver,
                            std::strerror(err));
        return fail_null<ibv_context>(err != 0 ? err : ENODEV);
    }
    const DeviceAddress a = c->dev->address();
    std::memcpy(c->gid.raw, a.addr.data(), 16);
    const omrc::LidAddress la = omrc::lid_address(entry->config.driver, entry->config.options.frame_mode, a);
    c->lid = la.lid;
    if (!la.warning.empty()) omrc::log::logger().warn("ibverbs: {}: {}", entry->config.name, la.warning);

    const char* mode = std::getenv("OMRC_IBV_PROGRESS");
    if (mode != nullptr && std::string_view(mode) == "inline") c->mode = ProgressMode::inline_;
    else if (mode != nullptr && *mode != '\0' && std::string_view(mode) != "thread")
        omrc::log::logger().warn("ibverbs: OMRC_IBV_PROGRESS={}: expected thread or inline; using thread", mode);

    ibv_context& ctx = c->vctx.context;
    ctx.device = device;
    // No kernel uverbs file: cmd_fd is an eventfd that never signals, so
    // that a program may dup() it or hand it to ibv_import_device(), which
    // answers EOPNOTSUPP (a -1 here makes the dup fail first).
    ctx.cmd_fd = ::eventfd(0, EFD_CLOEXEC);
    if (ctx.cmd_fd < 0) return fail_null<ibv_context>(errno);
    ctx.async_fd = ::eventfd(0, EFD_CLOEXEC);
    if (ctx.async_fd < 0) {
        const int fd_err = errno;
        ::close(ctx.cmd_fd);
        return fail_null<ibv_context>(fd_err);
    }
    ctx.num_comp_vectors = 1;
    pthread_mutex_init(&ctx.mutex, nullptr);
    ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
    c->vctx.sz = sizeof(verbs_context);
    c->vctx.query_port = query_port_op;
    c->vctx.query_device_ex = query_device_ex_op;
    fill_context_ops(*c);
    omrc::log::logger().info("ibverbs: {} open (driver {}, {} planes, lid {}, progress {})", entry->config.name,
                       entry->config.driver, c->dev->planes(), c->lid,
                       c->mode == ProgressMode::thread ? "thread" : "inline");
    start_progress(*c);
    return &c.release()->vctx.context;
}

/// Guards the device entries' open contexts (DeviceEntry::open).
std::mutex g_open_mu;

}  // namespace

}  // namespace omrc::ibv

using namespace omrc::ibv;

OMRC_IBV_DUAL(ibv_open_device)
OMRC_IBV_DUAL(ibv_close_device)
OMRC_IBV_DUAL(ibv_query_device)
OMRC_IBV_DUAL(ibv_query_port)
OMRC_IBV_DUAL(ibv_query_gid)
OMRC_IBV_DUAL(ibv_query_pkey)
OMRC_IBV_DUAL(ibv_get_async_event)
OMRC_IBV_DUAL(ibv_ack_async_event)

extern "C" {

ibv_context* omrc_ibv_open_device(ibv_device* device) {
    if (device == nullptr) return fail_null<ibv_context>(EINVAL);
    try {
        std::lock_guard g(g_open_mu);
        for (DeviceEntry* e : device_entries()) {
            if (&e->dev != device || e->open == nullptr) continue;
            ++e->opens;  // the same context again: its PDs, CQs and QPs stay apart by handle
            return &e->open->vctx.context;
        }
        ibv_context* ctx = open_context(device);
        if (ctx != nullptr) {
            Context* c = to_ctx(ctx);
            c->entry->open = c;
            c->entry->opens = 1;
        }
        return ctx;
    } catch (const std::bad_alloc&) {
        return fail_null<ibv_context>(ENOMEM);
    } catch (const std::exception& e) {
        omrc::log::logger().error("ibverbs: open {}: {}", device->name, e.what());
        return fail_null<ibv_context>(EIO);
    }
}

int omrc_ibv_close_device(ibv_context* context) {
    if (context == nullptr) return EINVAL;
    Context* c = to_ctx(context);
    {
        std::lock_guard g(g_open_mu);
        if (c->entry->opens > 1) {
            --c->entry->opens;
            return 0;
        }
        c->entry->open = nullptr;
        c->entry->opens = 0;
    }
    stop_progress(*c);
    const std::uint32_t live = c->live_objects.load();
    if (live != 0) {
        // The kernel would free them; here they hold pointers into the device.
        omrc::log::logger().warn("ibverbs: {} closed with {} PD/CQ/channel object(s) alive: the device and they are leaked",
                           c->entry->config.name, live);
        ::close(context->async_fd);
        ::close(context->cmd_fd);
        return 0;
    }
    {
        std::lock_guard g(c->mu);
        c->dev.reset();
    }
    ::close(context->async_fd);
    ::close(context->cmd_fd);
    pthread_mutex_destroy(&context->mutex);
    delete c;
    return 0;
}

int omrc_ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
    if (context == nullptr || attr == nullptr) return EINVAL;
    fill_device_attr(*to_ctx(context), *attr);
    return 0;
}

/// The exported symbol fills the older, shorter port attributes (up to and
/// including `flags`); verbs.h's inline wrapper calls query_port_op instead.
int omrc_ibv_query_port(ibv_context* context, uint8_t port_num, struct _compat_ibv_port_attr* port_attr) {
    return query_port_op(context, port_num, reinterpret_cast<ibv_port_attr*>(port_attr),
                         offsetof(ibv_port_attr, port_cap_flags2));
}

int omrc_ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
    if (context == nullptr || gid == nullptr || port_num != 1 || index != 0) return -1;
    *gid = to_ctx(context)->gid;
    return 0;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index, ibv_gid_entry* entry,
                      uint32_t flags, size_t entry_size) {
    if (context == nullptr || entry == nullptr || flags != 0 || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
    if (port_num != 1) return EINVAL;
    if (gid_index != 0) return ENODATA;
    std::memset(entry, 0, entry_size);
    entry->gid = to_ctx(context)->gid;
    entry->gid_index = 0;
    entry->port_num = 1;
    entry->gid_type = IBV_GID_TYPE_ROCE_V2;
    entry->ndev_ifindex = 0;
    return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries, uint32_t flags,
                             size_t entry_size) {
    if (context == nullptr || (entries == nullptr && max_entries != 0) || flags != 0 ||
        entry_size < sizeof(ibv_gid_entry))
        return -EINVAL;
    if (max_entries < 1) return -EINVAL;
    const int rc = _ibv_query_gid_ex(context, 1, 0, entries, 0, entry_size);
    return rc == 0 ? 1 : -rc;
}

/// rdma-core's private helper behind ibv_devinfo's "GID[0]: …, RoCE v2":
/// 0 = IB/RoCE v1, 1 = RoCE v2 (its sysfs numbering).
int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index, int* type) {
    if (context == nullptr || type == nullptr || port_num != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *type = 1;
    return 0;
}

int omrc_ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
    if (context == nullptr || pkey == nullptr || port_num != 1 || index != 0) return -1;
    *pkey = htobe16(0xFFFF);  // the default full-membership partition
    return 0;
}

int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
    if (context == nullptr || port_num != 1) return -EINVAL;
    return be16toh(pkey) == 0xFFFF ? 0 : -ENOENT;
}

/// Blocks until an affiliated async event (IBV_EVENT_SRQ_LIMIT_REACHED:
/// port changes reach the engine, which moves traffic off the plane by
/// itself, and raise none), or returns -1 with EAGAIN at once when the async
/// fd was made non-blocking and none waits.
int omrc_ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
    if (context == nullptr || event == nullptr) {
        errno = EINVAL;
        return -1;
    }
    Context* c = to_ctx(context);
    for (;;) {
        {
            std::lock_guard g(c->mu);
            if (c->async_events.empty()) c->take_async_events_locked();
            if (!c->async_events.empty()) {
                *event = c->async_events.front();
                c->async_events.pop_front();
                return 0;
            }
        }
        // Each event raised writes a count; one read takes them all, and
        // the queue is looked at again.
        std::uint64_t v = 0;
        if (::read(context->async_fd, &v, sizeof v) != sizeof v) return -1;
    }
}

/// ibverbs: every event taken must be acknowledged; an SRQ's count is
/// what its destruction may wait on in rdma-core (OpenMRC's does not wait).
void omrc_ibv_ack_async_event(ibv_async_event* event) {
    if (event == nullptr || event->event_type != IBV_EVENT_SRQ_LIMIT_REACHED || event->element.srq == nullptr) return;
    ibv_srq* srq = event->element.srq;
    pthread_mutex_lock(&srq->mutex);
    ++srq->events_completed;
    pthread_cond_signal(&srq->cond);
    pthread_mutex_unlock(&srq->mutex);
}

}  // extern "C"
