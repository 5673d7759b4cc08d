// SPDX-License-Identifier: BSD-3-Clause
#include "capi/convert.hpp"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fmt/format.h>
#include <string_view>
#include <type_traits>

namespace omrc::capi {

// ---------------------------------------------------------------------------
// omrc.h mirrors verbs.hpp: the same limits, enum values and bits.

static_assert(OMRC_MAX_PLANES == kMaxPlanes && OMRC_MAX_SGE == kMaxSge);

static_assert(OMRC_WC_SUCCESS == static_cast<int>(WcStatus::success) &&
              OMRC_WC_LOC_LEN_ERR == static_cast<int>(WcStatus::loc_len_err) &&
              OMRC_WC_LOC_QP_OP_ERR == static_cast<int>(WcStatus::loc_qp_op_err) &&
              OMRC_WC_LOC_PROT_ERR == static_cast<int>(WcStatus::loc_prot_err) &&
              OMRC_WC_WR_FLUSH_ERR == static_cast<int>(WcStatus::wr_flush_err) &&
              OMRC_WC_BAD_RESP_ERR == static_cast<int>(WcStatus::bad_resp_err) &&
              OMRC_WC_LOC_ACCESS_ERR == static_cast<int>(WcStatus::loc_access_err) &&
              OMRC_WC_REM_INV_REQ_ERR == static_cast<int>(WcStatus::rem_inv_req_err) &&
              OMRC_WC_REM_ACCESS_ERR == static_cast<int>(WcStatus::rem_access_err) &&
              OMRC_WC_REM_OP_ERR == static_cast<int>(WcStatus::rem_op_err) &&
              OMRC_WC_RETRY_EXC_ERR == static_cast<int>(WcStatus::retry_exc_err) &&
              OMRC_WC_RNR_RETRY_EXC_ERR == static_cast<int>(WcStatus::rnr_retry_exc_err) &&
              OMRC_WC_GENERAL_ERR == static_cast<int>(WcStatus::general_err));
static_assert(OMRC_WC_SEND == static_cast<int>(WcOpcode::send) && OMRC_WC_RECV == static_cast<int>(WcOpcode::recv) &&
              OMRC_WC_RDMA_WRITE == static_cast<int>(WcOpcode::rdma_write) &&
              OMRC_WC_RDMA_READ == static_cast<int>(WcOpcode::rdma_read) &&
              OMRC_WC_RECV_RDMA_WITH_IMM == static_cast<int>(WcOpcode::recv_rdma_with_imm));
static_assert(OMRC_WC_WITH_IMM == WcFlags::with_imm);
static_assert(OMRC_ACCESS_LOCAL_WRITE == AccessFlags::local_write &&
              OMRC_ACCESS_REMOTE_WRITE == AccessFlags::remote_write &&
              OMRC_ACCESS_REMOTE_READ == AccessFlags::remote_read &&
              OMRC_ACCESS_REMOTE_ATOMIC == AccessFlags::remote_atomic);
static_assert(OMRC_WR_RDMA_WRITE == static_cast<int>(WrOpcode::rdma_write) &&
              OMRC_WR_RDMA_WRITE_WITH_IMM == static_cast<int>(WrOpcode::rdma_write_with_imm) &&
              OMRC_WR_SEND == static_cast<int>(WrOpcode::send) &&
              OMRC_WR_SEND_WITH_IMM == static_cast<int>(WrOpcode::send_with_imm) &&
              OMRC_WR_RDMA_READ == static_cast<int>(WrOpcode::rdma_read));
static_assert(OMRC_SEND_FENCE == SendFlags::fence && OMRC_SEND_SIGNALED == SendFlags::signaled && OMRC_SEND_SOLICITED == SendFlags::solicited &&
              OMRC_SEND_INLINE == SendFlags::inline_);
static_assert(OMRC_QPS_RESET == static_cast<int>(QpState::reset) &&
              OMRC_QPS_INIT == static_cast<int>(QpState::init) && OMRC_QPS_RTR == static_cast<int>(QpState::rtr) &&
              OMRC_QPS_RTS == static_cast<int>(QpState::rts) && OMRC_QPS_ERR == static_cast<int>(QpState::err));
static_assert(OMRC_PATH_ECMP == static_cast<int>(PathPolicy::ecmp) &&
              OMRC_PATH_SPRAY == static_cast<int>(PathPolicy::spray) &&
              OMRC_PATH_ADAPTIVE == static_cast<int>(PathPolicy::adaptive));
static_assert(OMRC_CC_FIXED == static_cast<int>(CcAlgorithm::fixed) &&
              OMRC_CC_NSCC == static_cast<int>(CcAlgorithm::nscc) &&
              OMRC_CC_DCQCN == static_cast<int>(CcAlgorithm::dcqcn) &&
              OMRC_CC_HPCC == static_cast<int>(CcAlgorithm::hpcc) &&
              OMRC_CC_CREDIT == static_cast<int>(CcAlgorithm::credit));
static_assert(OMRC_FRAME_PLAIN == static_cast<int>(FrameMode::plain) &&
              OMRC_FRAME_SRV6 == static_cast<int>(FrameMode::srv6));
static_assert(OMRC_QP_STATE == QpAttrMask::state && OMRC_QP_ACCESS_FLAGS == QpAttrMask::access_flags &&
              OMRC_QP_PATH == QpAttrMask::path && OMRC_QP_DEST_QPN == QpAttrMask::dest_qpn &&
              OMRC_QP_RQ_PSN == QpAttrMask::rq_psn && OMRC_QP_MTU == QpAttrMask::mtu &&
              OMRC_QP_MPR == QpAttrMask::mpr && OMRC_QP_SQ_PSN == QpAttrMask::sq_psn &&
              OMRC_QP_TIMEOUT == QpAttrMask::timeout && OMRC_QP_RETRY_CNT == QpAttrMask::retry_cnt &&
              OMRC_QP_CC == QpAttrMask::cc && OMRC_QP_MIN_RNR_TIMER == QpAttrMask::min_rnr_timer &&
              OMRC_QP_RNR_RETRY == QpAttrMask::rnr_retry && OMRC_QP_MAX_QP_RD_ATOMIC == QpAttrMask::max_rd_atomic &&
              OMRC_QP_MAX_DEST_RD_ATOMIC == QpAttrMask::max_dest_rd_atomic && OMRC_QP_ENCRYPTION == QpAttrMask::encryption);
static_assert(OMRC_ENCRYPTION_DEVICE_DEFAULT == static_cast<int>(Encryption::device_default) &&
              OMRC_ENCRYPTION_OFF == static_cast<int>(Encryption::off) &&
              OMRC_ENCRYPTION_AES_GCM_128 == static_cast<int>(Encryption::aes_gcm_128) &&
              OMRC_ENCRYPTION_AES_GCM_256 == static_cast<int>(Encryption::aes_gcm_256));

// The address is a plain value without padding (byte-serialisable as it is).
static_assert(sizeof(omrc_device_address) == OMRC_DEVICE_ADDRESS_BYTES);
static_assert(offsetof(omrc_device_address, macs) == 16 && offsetof(omrc_device_address, reserved) == 106 &&
              offsetof(omrc_device_address, planes) == 108 && offsetof(omrc_device_address, host) == 112);
static_assert(sizeof(DeviceAddress::addr) == sizeof(omrc_device_address::addr) &&
              sizeof(DeviceAddress::macs) == sizeof(omrc_device_address::macs));

namespace {

/// The integer a C enum field holds, read without loading it as the enum:
/// a C caller may store any int there, and loading a value outside the
/// enumerators as the enum type is undefined in C++ (UBSan's -fsanitize=enum).
template <class E>
int raw(const E& e) noexcept {
    std::underlying_type_t<E> v;
    std::memcpy(&v, &e, sizeof v);
    return static_cast<int>(v);
}

bool valid_state(int s) {
    return s == OMRC_QPS_RESET || s == OMRC_QPS_INIT || s == OMRC_QPS_RTR || s == OMRC_QPS_RTS || s == OMRC_QPS_ERR;
}

bool valid_policy(int p) { return p == OMRC_PATH_ECMP || p == OMRC_PATH_SPRAY || p == OMRC_PATH_ADAPTIVE; }

}  // namespace

int from_c(const omrc_device_options& in, DeviceOptions& out, std::string& why) {
    if (in.args == nullptr && in.num_args != 0) {
        why = fmt::format("num_args is {} but args is NULL", in.num_args);
        return EINVAL;
    }
    for (std::size_t i = 0; i < in.num_args; ++i) {
        const omrc_device_arg& a = in.args[i];
        if (a.key == nullptr || a.value == nullptr) {
            why = fmt::format("args[{}]: key and value must not be NULL", i);
            return EINVAL;
        }
        if (!out.args.emplace(a.key, a.value).second) {
            why = fmt::format("args[{}]: key '{}' given twice", i, a.key);
            return EINVAL;
        }
    }
    const int frame_mode = raw(in.frame_mode);
    if (frame_mode != OMRC_FRAME_PLAIN && frame_mode != OMRC_FRAME_SRV6) {
        why = fmt::format("frame_mode {} is neither OMRC_FRAME_PLAIN nor OMRC_FRAME_SRV6", frame_mode);
        return EINVAL;
    }
    out.planes = in.planes;
    std::copy(std::begin(in.local_addr), std::end(in.local_addr), out.local_addr.begin());
    out.frame_mode = static_cast<FrameMode>(frame_mode);
    out.fabric = {in.fabric.usid_block, in.fabric.planes, in.fabric.t0_per_plane, in.fabric.t1_per_plane,
                  in.fabric.hosts_per_t0};
    out.local_host = in.local_host;
    out.seed = in.seed;
    out.compute_icrc = in.compute_icrc;
    out.verify_icrc = in.verify_icrc;
    out.ack_every_pkts = in.ack_every_pkts;
    out.ack_delay_ns = in.ack_delay_ns;
    out.ev_timeout_ns = in.ev_timeout_ns;
    out.min_ev_timeout_ns = in.min_ev_timeout_ns;
    out.probe_interval_ns = in.probe_interval_ns;
    out.probe_successes_to_restore = in.probe_successes_to_restore;
    out.ev_track_depth = in.ev_track_depth;
    out.port_status_repeat_ns = in.port_status_repeat_ns;
    out.max_qps = in.max_qps;
    out.rx_burst_frames = in.rx_burst_frames;
    out.tx_burst_frames = in.tx_burst_frames;
    out.workers = in.workers;
    const int threads = raw(in.worker_threads);
    if (threads != OMRC_WORKER_THREADS_AUTO && threads != OMRC_WORKER_THREADS_NONE && threads != OMRC_WORKER_THREADS_OWN) {
        why = fmt::format("worker_threads {} is not one of OMRC_WORKER_THREADS_AUTO, _NONE, _OWN", threads);
        return EINVAL;
    }
    out.worker_threads = static_cast<WorkerThreads>(threads);
    if (in.num_cpus != 0 && in.cpus == nullptr) {
        why = "num_cpus is set but cpus is NULL";
        return EINVAL;
    }
    out.cpus.assign(in.cpus, in.cpus + in.num_cpus);
    out.worker_spin_ns = in.worker_spin_ns;
    out.worker_yield_ns = in.worker_yield_ns;
    out.worker_sleep_ns = in.worker_sleep_ns;
    for (int k = 0; k < 2; ++k) {
        out.security.master_key[k].reset();
        if (in.has_master_key[k]) {
            std::array<std::uint8_t, 32> key{};
            std::copy(in.master_key[k], in.master_key[k] + 32, key.begin());
            out.security.master_key[k] = key;
        }
    }
    out.security.key_select = in.key_select;
    out.security.replay_window = in.replay_window;
    if (in.security_encryption < OMRC_ENCRYPTION_DEVICE_DEFAULT || in.security_encryption > OMRC_ENCRYPTION_AES_GCM_256) {
        why = fmt::format("security_encryption {} is not an omrc_encryption", static_cast<int>(in.security_encryption));
        return EINVAL;
    }
    // The device's default cannot be "the device's default": read as off.
    out.security.encryption = in.security_encryption == OMRC_ENCRYPTION_DEVICE_DEFAULT
                                  ? Encryption::off
                                  : static_cast<Encryption>(in.security_encryption);
    if (in.clock != nullptr) {
        auto* const fn = in.clock;
        void* const ctx = in.clock_ctx;
        out.clock = [fn, ctx] { return fn(ctx); };
    } else if (in.clock_ctx != nullptr) {
        why = "clock_ctx is set but clock is NULL";
        return EINVAL;
    }
    return 0;
}

omrc_device_address to_c(const DeviceAddress& a) noexcept {
    omrc_device_address c{};
    std::memcpy(c.addr, a.addr.data(), sizeof c.addr);
    for (std::size_t p = 0; p < kMaxPlanes; ++p) std::memcpy(c.macs[p], a.macs[p].data(), sizeof c.macs[p]);
    c.planes = a.planes;
    c.host = a.host;
    return c;
}

DeviceAddress from_c(const omrc_device_address& c) noexcept {
    DeviceAddress a{};
    std::memcpy(a.addr.data(), c.addr, sizeof c.addr);
    for (std::size_t p = 0; p < kMaxPlanes; ++p) std::memcpy(a.macs[p].data(), c.macs[p], sizeof c.macs[p]);
    a.planes = c.planes;
    a.host = c.host;
    return a;
}

omrc_cc_config to_c(const CcConfig& c) noexcept {
    omrc_cc_config o{};
    o.algorithm = static_cast<omrc_cc_algorithm>(c.algorithm);
    o.fixed_window_bytes = c.fixed_window_bytes;
    o.base_rtt_ns = c.base_rtt_ns;
    o.link_rate_bps = c.link_rate_bps;
    o.target_delay_ratio = c.target_delay_ratio;
    o.max_window_bdp = c.max_window_bdp;
    return o;
}

int from_c(const omrc_cc_config& in, CcConfig& out) noexcept {
    // Any algorithm of the library's registry (its OMRC_CC_ numbers are the registrations' ids).
    const int algorithm = raw(in.algorithm);
    // to_string() names every registered one, and no other.
    if (algorithm < 0 || algorithm > 255 || std::string_view(to_string(static_cast<CcAlgorithm>(algorithm))) == "unknown")
        return EINVAL;
    out.algorithm = static_cast<CcAlgorithm>(algorithm);
    out.fixed_window_bytes = in.fixed_window_bytes;
    out.base_rtt_ns = in.base_rtt_ns;
    out.link_rate_bps = in.link_rate_bps;
    out.target_delay_ratio = in.target_delay_ratio;
    out.max_window_bdp = in.max_window_bdp;
    return 0;
}

omrc_qp_defaults to_c(const QpDefaults& d) noexcept {
    omrc_qp_defaults c{};
    c.path_policy = static_cast<omrc_path_policy>(d.path_policy);
    c.evs = d.evs;
    c.backup_evs = d.backup_evs;
    c.mtu_bytes = d.mtu_bytes;
    c.mpr = d.mpr;
    c.timeout_ns = d.timeout_ns;
    c.retry_cnt = d.retry_cnt;
    c.cc = to_c(d.cc);
    return c;
}

int from_c(const omrc_qp_attr& in, std::uint32_t mask, QpAttr& out) noexcept {
    // Enum fields are read only where the mask selects them: an unselected
    // field may hold anything, as in ibverbs.
    if (mask & OMRC_QP_STATE) {
        if (!valid_state(raw(in.qp_state))) return EINVAL;
        out.qp_state = static_cast<QpState>(raw(in.qp_state));
    }
    if (mask & OMRC_QP_PATH) {
        if (!valid_policy(raw(in.path_policy)) || in.peer.planes > OMRC_MAX_PLANES) return EINVAL;
        out.path_policy = static_cast<PathPolicy>(raw(in.path_policy));
    }
    if ((mask & OMRC_QP_CC) && from_c(in.cc, out.cc) != 0) return EINVAL;
    out.qp_access_flags = in.qp_access_flags;
    out.dest_qp_num = in.dest_qp_num;
    out.dest_conn_id = in.dest_conn_id;
    out.rq_psn = in.rq_psn;
    out.peer = from_c(in.peer);
    out.mtu_bytes = in.mtu_bytes;
    out.mpr = in.mpr;
    out.evs = in.evs;
    out.backup_evs = in.backup_evs;
    out.sq_psn = in.sq_psn;
    out.timeout_ns = in.timeout_ns;
    out.retry_cnt = in.retry_cnt;
    out.rnr_retry = in.rnr_retry;
    out.min_rnr_timer = in.min_rnr_timer;
    out.max_rd_atomic = in.max_rd_atomic;
    out.max_dest_rd_atomic = in.max_dest_rd_atomic;
    if (in.encryption < OMRC_ENCRYPTION_DEVICE_DEFAULT || in.encryption > OMRC_ENCRYPTION_AES_GCM_256) return EINVAL;
    out.encryption = static_cast<Encryption>(in.encryption);
    out.peer_key_select = in.peer_key_select;
    return 0;
}

omrc_qp_attr to_c(const QpAttr& a) noexcept {
    omrc_qp_attr c{};
    c.qp_state = static_cast<omrc_qp_state>(a.qp_state);
    c.qp_access_flags = a.qp_access_flags;
    c.dest_qp_num = a.dest_qp_num;
    c.dest_conn_id = a.dest_conn_id;
    c.rq_psn = a.rq_psn;
    c.peer = to_c(a.peer);
    c.mtu_bytes = a.mtu_bytes;
    c.mpr = a.mpr;
    c.path_policy = static_cast<omrc_path_policy>(a.path_policy);
    c.evs = a.evs;
    c.backup_evs = a.backup_evs;
    c.sq_psn = a.sq_psn;
    c.timeout_ns = a.timeout_ns;
    c.retry_cnt = a.retry_cnt;
    c.cc = to_c(a.cc);
    c.rnr_retry = a.rnr_retry;
    c.min_rnr_timer = a.min_rnr_timer;
    c.max_rd_atomic = a.max_rd_atomic;
    c.max_dest_rd_atomic = a.max_dest_rd_atomic;
    c.encryption = static_cast<omrc_encryption>(a.encryption);
    c.peer_key_select = a.peer_key_select;
    return c;
}

omrc_wc to_c(const Wc& wc) noexcept {
    omrc_wc c{};
    c.wr_id = wc.wr_id;
    c.status = static_cast<omrc_wc_status>(wc.status);
    c.opcode = static_cast<omrc_wc_opcode>(wc.opcode);
    c.byte_len = wc.byte_len;
    c.imm_data = wc.imm_data;
    c.qp_num = wc.qp_num;
    c.wc_flags = wc.wc_flags | (wc.solicited ? OMRC_WC_SOLICITED : 0u);
    return c;
}

}  // namespace omrc::capi
