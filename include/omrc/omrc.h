/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The OpenMRC C API: the verbs API of omrc/verbs.hpp for programs not
 * written in C++ (C, or any language with a C FFI). No C++ type crosses it.
 * docs/CAPI.md describes it.
 *
 * Objects are opaque handles, created by an omrc_*_open/alloc/reg/create
 * call that returns 0 and stores the handle in *out, and released by the
 * matching close/dealloc/dereg/destroy call. A parent must outlive its
 * children: device > {pd, cq}, pd > {mr, qp}, cq > every qp that uses it.
 * Releasing a parent that still has live children returns EBUSY and leaves
 * it alive.
 *
 * Threads: a device and all of its objects are used by one thread at a time,
 * as in verbs.hpp. Different devices may be driven from different threads.
 *
 * Errors: calls return 0 or an errno value (EINVAL for a NULL handle or a bad
 * argument); omrc_cq_poll and omrc_device_progress return a count, or a
 * negative errno. No C++ exception leaves the library: an allocation failure
 * is ENOMEM, anything else unexpected EIO (with a line on the "omrc" log).
 *
 * Enumerations and flag bits have the numeric values of verbs.hpp, which
 * are ibverbs' where ibverbs has them.
 */
#ifndef OMRC_OMRC_H
#define OMRC_OMRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OMRC_MAX_PLANES 15 /* NIC ports (planes) per device */
#define OMRC_MAX_SGE 8     /* scatter/gather entries per work request */

/* ------------------------------------------------------------------------
 * Opaque handles */

struct omrc_device;
struct omrc_pd;
struct omrc_mr;
struct omrc_cq;
struct omrc_qp;
struct omrc_srq;

/* ------------------------------------------------------------------------
 * Work completions */

/* ibv_wc_status numbering. */
enum omrc_wc_status {
    OMRC_WC_SUCCESS = 0,
    OMRC_WC_LOC_LEN_ERR = 1,
    OMRC_WC_LOC_QP_OP_ERR = 2,
    OMRC_WC_LOC_PROT_ERR = 4,
    OMRC_WC_WR_FLUSH_ERR = 5,
    OMRC_WC_BAD_RESP_ERR = 7,
    OMRC_WC_LOC_ACCESS_ERR = 8,
    OMRC_WC_REM_INV_REQ_ERR = 9,
    OMRC_WC_REM_ACCESS_ERR = 10,
    OMRC_WC_REM_OP_ERR = 11,
    OMRC_WC_RETRY_EXC_ERR = 12,
    OMRC_WC_RNR_RETRY_EXC_ERR = 13,
    OMRC_WC_GENERAL_ERR = 21
};

/* ibv_wc_opcode numbering. */
enum omrc_wc_opcode {
    OMRC_WC_SEND = 0,                /* a send-queue SEND (with or without immediate) */
    OMRC_WC_RDMA_WRITE = 1,          /* a send-queue RDMA WRITE (with or without immediate) */
    OMRC_WC_RDMA_READ = 2,           /* a send-queue RDMA READ (byte_len: bytes read) */
    OMRC_WC_RECV = 128,              /* a receive filled by an incoming SEND / SEND_WITH_IMM */
    OMRC_WC_RECV_RDMA_WITH_IMM = 129 /* a receive consumed by an incoming WRITE_WITH_IMM */
};

/* Bits of omrc_wc.wc_flags. */
#define OMRC_WC_WITH_IMM (1u << 1)   /* imm_data is valid */
#define OMRC_WC_SOLICITED (1u << 16) /* OMRC_WC_RECV: the sender set OMRC_SEND_SOLICITED */

struct omrc_wc {
    uint64_t wr_id;
    enum omrc_wc_status status;
    enum omrc_wc_opcode opcode;
    uint32_t byte_len; /* OMRC_WC_RECV / OMRC_WC_RECV_RDMA_WITH_IMM: bytes of the message; sends: 0 */
    uint32_t imm_data; /* host byte order (ibverbs keeps it big-endian) */
    uint32_t qp_num;
    uint32_t wc_flags; /* OMRC_WC_WITH_IMM, OMRC_WC_SOLICITED */
};

/* "success", "wr_flush_err", ...; "unknown" for a value that is no status. */
const char* omrc_wc_status_str(int status);

/* ------------------------------------------------------------------------
 * Memory */

/* Access flags of an MR or a QP (ibverbs values). REMOTE_WRITE or
 * REMOTE_ATOMIC without LOCAL_WRITE is EINVAL. */
#define OMRC_ACCESS_LOCAL_WRITE (1u << 0)
#define OMRC_ACCESS_REMOTE_WRITE (1u << 1)
#define OMRC_ACCESS_REMOTE_READ (1u << 2)
#define OMRC_ACCESS_REMOTE_ATOMIC (1u << 3)

struct omrc_sge {
    uint64_t addr;   /* virtual address inside the MR of lkey */
    uint32_t length; /* bytes */
    uint32_t lkey;   /* ignored for inline sends */
};

/* ------------------------------------------------------------------------
 * Work requests */

/* ibv_wr_opcode numbering. */
enum omrc_wr_opcode {
    OMRC_WR_RDMA_WRITE = 0,
    OMRC_WR_RDMA_WRITE_WITH_IMM = 1,
    OMRC_WR_SEND = 2,         /* into the peer's next receive (remote_addr and rkey unused) */
    OMRC_WR_SEND_WITH_IMM = 3, /* the same, with imm_data in the receive's completion */
    OMRC_WR_RDMA_READ = 4      /* the peer's [remote_addr, + the SGEs' total) through rkey into the SGEs */
};

/* Bits of omrc_send_wr.send_flags (ibverbs values). */
#define OMRC_SEND_FENCE (1u << 0)     /* not begun before every earlier RDMA READ of the QP has completed */
#define OMRC_SEND_SIGNALED (1u << 1)  /* a completion on success too (errors always complete) */
#define OMRC_SEND_SOLICITED (1u << 2) /* SEND: the peer's receive completion carries OMRC_WC_SOLICITED */
#define OMRC_SEND_INLINE (1u << 3)    /* payload copied at post time, no MR needed */

/* ibv_send_wr without the linked list: post an array. */
struct omrc_send_wr {
    uint64_t wr_id;
    enum omrc_wr_opcode opcode;
    uint32_t send_flags;            /* OMRC_SEND_* */
    const struct omrc_sge* sg_list; /* read during omrc_qp_post_send only; NULL when num_sge is 0 */
    uint32_t num_sge;
    uint64_t remote_addr; /* peer virtual address */
    uint32_t rkey;        /* peer MR */
    uint32_t imm_data;    /* OMRC_WR_*_WITH_IMM, host byte order */
};

/* A receive, consumed in order by the peer's next SEND / SEND_WITH_IMM (its
 * bytes scattered into the SGEs; a longer message completes loc_len_err) or
 * WRITE_WITH_IMM (which writes at its RETH address and leaves the SGEs
 * untouched). */
struct omrc_recv_wr {
    uint64_t wr_id;
    const struct omrc_sge* sg_list;
    uint32_t num_sge;
};

/* ------------------------------------------------------------------------
 * Queue pairs */

/* ibv_qp_state numbering (SQD and SQE do not exist here). */
enum omrc_qp_state {
    OMRC_QPS_RESET = 0,
    OMRC_QPS_INIT = 1,
    OMRC_QPS_RTR = 2,
    OMRC_QPS_RTS = 3,
    OMRC_QPS_ERR = 6
};

/* How a QP chooses the path (entropy value, EV) of each packet. */
enum omrc_path_policy {
    OMRC_PATH_ECMP = 0,    /* one EV for the whole QP (single-path baseline) */
    OMRC_PATH_SPRAY = 1,   /* oblivious rotation over the active EVs */
    OMRC_PATH_ADAPTIVE = 2 /* MRC: skips, retires and probes EVs by their state */
};

enum omrc_cc_algorithm {
    OMRC_CC_FIXED = 0, /* constant window */
    OMRC_CC_NSCC = 1,  /* delay + ECN, quick adapt on trims */
    OMRC_CC_DCQCN = 2, /* DCQCN's reaction point, its parameters at their defaults (verbs.hpp's DcqcnConfig) */
    OMRC_CC_HPCC = 3,  /* HPCC from INT telemetry (simulator only), its parameters at their defaults */
    OMRC_CC_CREDIT = 4 /* receiver credit (grants carried by the simulator only), its parameters at their defaults */
};

/* Congestion control of one QP (verbs.hpp's CcConfig). */
struct omrc_cc_config {
    enum omrc_cc_algorithm algorithm;
    uint64_t fixed_window_bytes; /* fixed: the window */
    uint64_t base_rtt_ns;        /* nscc: unloaded round trip */
    uint64_t link_rate_bps;      /* nscc: rate of one plane */
    double target_delay_ratio;   /* nscc: target queueing delay / base_rtt */
    double max_window_bdp;       /* nscc: initial and maximum window, in BDPs */
};

/* Queue capacities, fixed at creation (ibv_qp_cap). */
struct omrc_qp_cap {
    uint32_t max_send_wr;     /* 1..65536 outstanding send WRs */
    uint32_t max_recv_wr;     /* 0..65536 posted receives */
    uint32_t max_send_sge;    /* <= OMRC_MAX_SGE */
    uint32_t max_recv_sge;    /* <= OMRC_MAX_SGE */
    uint32_t max_inline_data; /* <= 4096 bytes */
};

/* ibv_qp_init_attr. The CQs must belong to the PD's device and outlive the QP. */
struct omrc_qp_init_attr {
    struct omrc_cq* send_cq;
    struct omrc_cq* recv_cq;
    struct omrc_qp_cap cap;
    bool sq_sig_all; /* every send WR is signalled, whatever its flags */
    int worker;      /* the worker that owns the QP, 0..workers-1; -1: the workers in turn */
    /* A shared receive queue of the PD's device whose receives the QP's
     * incoming messages take (NULL: a receive queue of its own; with one,
     * cap.max_recv_wr/max_recv_sge are ignored, omrc_qp_post_recv answers
     * EINVAL and the QP lives on the SRQ's worker). */
    struct omrc_srq* srq;
};

/* ibv_srq_attr. */
struct omrc_srq_attr {
    uint32_t max_wr;    /* 1..65536 posted receives */
    uint32_t max_sge;   /* 1..OMRC_MAX_SGE SGEs per receive */
    uint32_t srq_limit; /* armed while non-zero (<= max_wr): one OMRC_EVENT_SRQ_LIMIT_REACHED
                           when fewer remain, then 0 again */
};

/* omrc_srq_modify mask bits (ibverbs' IBV_SRQ_MAX_WR, IBV_SRQ_LIMIT). */
enum omrc_srq_attr_mask { OMRC_SRQ_MAX_WR = 1u << 0, OMRC_SRQ_LIMIT = 1u << 1 };

/* Affiliated asynchronous events (ibv_event_type's values). */
enum omrc_async_event_type { OMRC_EVENT_SRQ_LIMIT_REACHED = 15 };

struct omrc_async_event {
    int type;             /* enum omrc_async_event_type */
    struct omrc_srq* srq; /* OMRC_EVENT_SRQ_LIMIT_REACHED: which */
};

/* Where a device is reachable: what a peer puts into omrc_qp_attr.peer.
 * A plain value without padding: copy it, or exchange it between hosts as
 * the OMRC_DEVICE_ADDRESS_BYTES bytes of omrc_device_address_to_bytes. */
struct omrc_device_address {
    uint8_t addr[16];                  /* inner IPv6 address of the device */
    uint8_t macs[OMRC_MAX_PLANES][6];  /* next-hop MAC per plane */
    uint8_t reserved[2];               /* zero */
    uint32_t planes;                   /* planes used (macs beyond are unused) */
    uint32_t host;                     /* srv6 frame mode: host index in the fabric */
};

#define OMRC_DEVICE_ADDRESS_BYTES 116

/* The address as bytes independent of the host's byte order (integers
 * big-endian). Returns 0, or EINVAL for a NULL pointer. */
int omrc_device_address_to_bytes(const struct omrc_device_address* a, uint8_t out[OMRC_DEVICE_ADDRESS_BYTES]);
/* The reverse; EINVAL for a NULL pointer or planes > OMRC_MAX_PLANES. */
int omrc_device_address_from_bytes(const uint8_t in[OMRC_DEVICE_ADDRESS_BYTES], struct omrc_device_address* out);

/* ibv_qp_attr, the parts OpenMRC uses; the mask of omrc_qp_modify says which
 * fields are read. Transitions:
 *   RESET->INIT  STATE | ACCESS_FLAGS
 *   INIT->RTR    STATE | PATH | DEST_QPN | RQ_PSN | MTU   (optional: MPR)
 *   RTR->RTS     STATE | SQ_PSN                         (optional: TIMEOUT, RETRY_CNT, CC)
 *   any->ERR, any->RESET: STATE
 * Fill it with omrc_qp_attr_init first: a zeroed struct is not the default. */
/* A QP's encrypted mode: AES-GCM in PSP's format on every frame. */
enum omrc_encryption {
    OMRC_ENCRYPTION_DEVICE_DEFAULT = 0,
    OMRC_ENCRYPTION_OFF = 1,
    OMRC_ENCRYPTION_AES_GCM_128 = 2,
    OMRC_ENCRYPTION_AES_GCM_256 = 3,
};

struct omrc_qp_attr {
    enum omrc_qp_state qp_state;
    uint32_t qp_access_flags; /* OMRC_ACCESS_* the peer may use */
    /* RTR */
    uint32_t dest_qp_num;     /* omrc_qp_num() on the peer */
    uint16_t dest_conn_id;    /* omrc_qp_conn_id() on the peer */
    uint32_t rq_psn;          /* first PSN expected from the peer (24 bits) */
    struct omrc_device_address peer; /* omrc_device_get_address() on the peer */
    uint32_t mtu_bytes;       /* payload per packet: 64..4096, a multiple of 64 */
    uint32_t mpr;             /* receive window in units of 128 packets: 1, 2, 4, .. 32 */
    enum omrc_path_policy path_policy;
    uint32_t evs;             /* active EVs, split equally over the planes */
    uint32_t backup_evs;      /* known-good spare EVs */
    /* RTS */
    uint32_t sq_psn;          /* our first PSN (24 bits) */
    uint64_t timeout_ns;      /* no progress for timeout * (retry_cnt + 1) -> retry_exc_err */
    uint32_t retry_cnt;
    struct omrc_cc_config cc;
    /* SEND into a peer with no receive posted (RNR NAK): retries before
     * rnr_retry_exc_err, 0..7, 7 = without limit (IBTA); RTR->RTS or later. */
    uint32_t rnr_retry;
    /* The wait this QP asks of a sender it refuses for want of a receive:
     * IBTA's RNR timer code 0..31 (12 = 0.64 ms); INIT->RTR or later. */
    uint32_t min_rnr_timer;
    /* RDMA READs in flight at once as requester, 0..16 (0 acts as 1); RTR->RTS or later. */
    uint32_t max_rd_atomic;
    /* The peer's READs answered at once, 0..16 (0 acts as 1); INIT->RTR or later. */
    uint32_t max_dest_rd_atomic;
    /* Encrypted mode (docs/PROTOCOL.md section 12), INIT->RTR with
     * OMRC_QP_ENCRYPTION, else the device's security_encryption. */
    enum omrc_encryption encryption;
    uint32_t peer_key_select; /* the master key (0 or 1) the peer's SPIs name */
};

/* Bits of the mask given to omrc_qp_modify. */
#define OMRC_QP_STATE (1u << 0)
#define OMRC_QP_ACCESS_FLAGS (1u << 1)
#define OMRC_QP_PATH (1u << 2) /* peer, path_policy, evs, backup_evs */
#define OMRC_QP_DEST_QPN (1u << 3) /* dest_qp_num and dest_conn_id */
#define OMRC_QP_RQ_PSN (1u << 4)
#define OMRC_QP_MTU (1u << 5)
#define OMRC_QP_MPR (1u << 6)
#define OMRC_QP_SQ_PSN (1u << 7)
#define OMRC_QP_TIMEOUT (1u << 8)
#define OMRC_QP_RETRY_CNT (1u << 9)
#define OMRC_QP_CC (1u << 10)
#define OMRC_QP_MIN_RNR_TIMER (1u << 11)
#define OMRC_QP_RNR_RETRY (1u << 12)
#define OMRC_QP_MAX_QP_RD_ATOMIC (1u << 13)
#define OMRC_QP_MAX_DEST_RD_ATOMIC (1u << 14)
#define OMRC_QP_ENCRYPTION (1u << 15) /* encryption, peer_key_select (INIT->RTR) */

/* ------------------------------------------------------------------------
 * Device options */

enum omrc_frame_mode {
    OMRC_FRAME_PLAIN = 0, /* Ethernet/IPv6/UDP */
    OMRC_FRAME_SRV6 = 1   /* outer IPv6 header to the EV's SRv6 uSID path */
};

/* srv6 frame mode: the multi-plane two-tier Clos the device is part of. */
struct omrc_fabric_layout {
    uint32_t usid_block; /* 32-bit uSID locator block */
    uint32_t planes;
    uint32_t t0_per_plane;
    uint32_t t1_per_plane;
    uint32_t hosts_per_t0;
};

/* One driver option, key=value (verbs.hpp's DeviceOptions::args). */
struct omrc_device_arg {
    const char* key;
    const char* value;
};

/* Who runs a device's workers (verbs.hpp's WorkerThreads). */
enum omrc_worker_threads {
    OMRC_WORKER_THREADS_AUTO = 0, /* threads of their own when there are several and the clock is real */
    OMRC_WORKER_THREADS_NONE = 1, /* omrc_device_progress drives them */
    OMRC_WORKER_THREADS_OWN = 2,  /* a thread for every worker, one included */
};

/* verbs.hpp's DeviceOptions (docs/VERBS.md). Fill it with
 * omrc_device_options_init, then change what differs. Read during
 * omrc_device_open only, except the clock. */
struct omrc_device_options {
    const struct omrc_device_arg* args; /* driver options; unknown or duplicate keys: EINVAL */
    size_t num_args;
    uint32_t planes;       /* planes to use; 0 = all the driver has */
    uint8_t local_addr[16];/* all zero: the driver's default */
    enum omrc_frame_mode frame_mode;
    struct omrc_fabric_layout fabric; /* srv6 only */
    uint32_t local_host;   /* srv6 only: our host index in fabric */
    uint64_t seed;         /* 0: random (production); else deterministic keys and engine */
    bool compute_icrc;     /* RoCEv2 ICRC in software on send */
    bool verify_icrc;      /* ... and on receive */
    uint32_t ack_every_pkts;     /* 1..64 */
    uint64_t ack_delay_ns;
    uint64_t ev_timeout_ns;
    uint64_t min_ev_timeout_ns;  /* floor of the measured EV timeout */
    uint64_t probe_interval_ns;
    uint32_t probe_successes_to_restore;
    uint32_t ev_track_depth;
    uint64_t port_status_repeat_ns;
    uint32_t max_qps;            /* 1..4096 */
    uint32_t rx_burst_frames;    /* 1..1024 */
    uint32_t tx_burst_frames;    /* 1..1024 */
    /* The device's clock in ns, called with clock_ctx on the owning thread at
     * every progress and post; it must never go backwards and must stay valid
     * until the device is closed. NULL (with clock_ctx NULL): a steady real clock. */
    uint64_t (*clock)(void* clock_ctx);
    void* clock_ctx;
    /* Workers (docs/VERBS.md, "Workers"): 1..16 engine shards, each with its
     * own queue on every port and its own QPs (omrc_qp_init_attr.worker). */
    uint32_t workers;
    enum omrc_worker_threads worker_threads;
    const int* cpus;         /* one CPU per worker, or NULL with num_cpus 0 */
    size_t num_cpus;
    uint64_t worker_spin_ns;  /* an idle worker thread polls, then yields the CPU */
    uint64_t worker_yield_ns; /* ... until this long idle, then sleeps between passes */
    uint64_t worker_sleep_ns; /* longest sleep (0: never sleeps) */
    /* Encrypted mode: PSP master keys 0 and 1 (32 bytes each; see
     * verbs.hpp's DeviceOptions::Security), the one new SPIs name, the
     * replay window (IVs, a power of two 64..65536) and the encryption of
     * QPs whose attributes say OMRC_ENCRYPTION_DEVICE_DEFAULT. */
    uint8_t master_key[2][32];
    bool has_master_key[2];
    uint32_t key_select;
    uint32_t replay_window;
    enum omrc_encryption security_encryption;
};

/* The defaults of verbs.hpp's DeviceOptions (no args, real clock). */
void omrc_device_options_init(struct omrc_device_options* o);

/* QP attributes a configuration file applies to every QP of its device
 * (config.hpp's QpDefaults). Zero in mtu_bytes or timeout_ns: the front
 * end's own choice. */
struct omrc_qp_defaults {
    enum omrc_path_policy path_policy;
    uint32_t evs;
    uint32_t backup_evs;
    uint32_t mtu_bytes;
    uint32_t mpr;
    uint64_t timeout_ns;
    uint32_t retry_cnt;
    struct omrc_cc_config cc;
};

/* The defaults of config.hpp's QpDefaults. */
void omrc_qp_defaults_init(struct omrc_qp_defaults* d);

/* ------------------------------------------------------------------------
 * Device */

/* Opens a device on `driver` ("loopback", "udp"; omrc_drivers lists them);
 * options NULL = the defaults. 0, or ENODEV (no such driver, port or
 * interface), EINVAL (bad options; the log says which), EBUSY (endpoint or
 * port held by another device), or the driver's errno. */
int omrc_device_open(const char* driver, const struct omrc_device_options* options, struct omrc_device** out);

/* Opens device `device_name` (NULL: the first one) of a configuration file
 * (config.hpp, docs/CONFIG.md) with its driver and options; its QP defaults
 * are then those of omrc_device_qp_defaults. 0, or EINVAL (syntax or value),
 * ENOENT (no such file or device), EACCES/EIO (unreadable), or an errno of
 * omrc_device_open; err_buf (may be NULL) receives what was wrong,
 * truncated to err_len bytes with its terminating NUL. */
int omrc_device_open_config(const char* path, const char* device_name, struct omrc_device** out, char* err_buf,
                            size_t err_len);

/* 0, EBUSY while a pd or cq of the device is alive, EINVAL for NULL. */
int omrc_device_close(struct omrc_device* dev);

/* One pass of the poll-mode loop (verbs.hpp's Device::progress): frames and
 * completions moved (0: nothing to do right now), or -EINVAL for NULL. */
int omrc_device_progress(struct omrc_device* dev);
/* Earliest clock value at which progress has work; UINT64_MAX when idle (or dev NULL). */
uint64_t omrc_device_next_wakeup_ns(const struct omrc_device* dev);
/* The device's clock; 0 for NULL. */
uint64_t omrc_device_now_ns(const struct omrc_device* dev);
/* Our address, to give to peers. 0 or EINVAL. */
int omrc_device_get_address(const struct omrc_device* dev, struct omrc_device_address* out);
/* Planes in use; 0 for NULL. */
uint32_t omrc_device_planes(const struct omrc_device* dev);
/* The device's workers, and whether they run on threads of their own. */
uint32_t omrc_device_workers(const struct omrc_device* dev);
bool omrc_device_worker_threads(const struct omrc_device* dev);
/* The QP defaults of the device's configuration (omrc_qp_defaults_init's
 * for a device opened with omrc_device_open). 0 or EINVAL. */
int omrc_device_qp_defaults(const struct omrc_device* dev, struct omrc_qp_defaults* out);

/* The counters as one JSON document (verbs.hpp's Device::stats_json), with
 * its terminating NUL, into buf. 0; ERANGE when len is too small (buf then
 * holds "" if len > 0); *needed (may be NULL) receives the bytes it takes,
 * NUL included, in both cases. EINVAL for a NULL dev, or a NULL buf with
 * len > 0. */
int omrc_device_stats_json(const struct omrc_device* dev, char* buf, size_t len, size_t* needed);

/* The names of the drivers omrc_device_open accepts, comma-separated
 * ("loopback,udp"), as omrc_device_stats_json fills its buffer. */
int omrc_drivers(char* buf, size_t len, size_t* needed);

/* ------------------------------------------------------------------------
 * Protection domains and memory registration */

int omrc_pd_alloc(struct omrc_device* dev, struct omrc_pd** out);
/* 0, EBUSY while an mr or qp of the pd is alive, EINVAL for NULL. */
int omrc_pd_dealloc(struct omrc_pd* pd);

/* Registers [addr, addr+length), which must stay valid until deregistered
 * (nothing is pinned or copied). EINVAL: NULL addr, length 0, a range that
 * wraps, unknown access bits, REMOTE_WRITE/ATOMIC without LOCAL_WRITE. */
int omrc_mr_reg(struct omrc_pd* pd, void* addr, size_t length, uint32_t access, struct omrc_mr** out);
/* Deregisters and frees the handle: after it returns no incoming packet
 * writes into the memory. Send WRs still outstanding on it are the caller's
 * error (wait for their completions). 0 or EINVAL. */
int omrc_mr_dereg(struct omrc_mr* mr);
/* Getters; 0 (NULL) for a NULL handle. */
uint32_t omrc_mr_lkey(const struct omrc_mr* mr);
uint32_t omrc_mr_rkey(const struct omrc_mr* mr);
void* omrc_mr_addr(const struct omrc_mr* mr);
size_t omrc_mr_length(const struct omrc_mr* mr);

/* ------------------------------------------------------------------------
 * Completion queues */

/* A CQ with room for cqe completions (1..2^20, else EINVAL). */
int omrc_cq_create(struct omrc_device* dev, int cqe, struct omrc_cq** out);
/* 0, EBUSY while a qp uses the cq, EINVAL for NULL. Unpolled completions are discarded. */
int omrc_cq_destroy(struct omrc_cq* cq);
/* Moves up to n completions, oldest first, into out; returns how many, or
 * -EINVAL (NULL cq, n < 0, NULL out with n > 0). Does not drive progress. */
int omrc_cq_poll(struct omrc_cq* cq, struct omrc_wc* out, int n);

/* ------------------------------------------------------------------------
 * Queue pairs */

/* Fill with verbs.hpp's defaults before setting fields. */
void omrc_qp_init_attr_init(struct omrc_qp_init_attr* a);
void omrc_qp_attr_init(struct omrc_qp_attr* a);

/* EINVAL (NULL or foreign CQ, cap out of range), ENOMEM (max_qps reached). */
int omrc_qp_create(struct omrc_pd* pd, const struct omrc_qp_init_attr* attr, struct omrc_qp** out);
/* Outstanding WRs are dropped without completion. 0 or EINVAL. */
int omrc_qp_destroy(struct omrc_qp* qp);

/* State transition and/or attribute change. 0 or EINVAL (transition not
 * allowed, attribute missing or out of range, unknown mask bit or enum). */
int omrc_qp_modify(struct omrc_qp* qp, const struct omrc_qp_attr* attr, uint32_t mask);

/* Posts n send WRs in order. 0, or the errno of the first WR not posted,
 * whose index goes to *bad_wr (may be NULL); the WRs before it are posted.
 * EINVAL: QP not in RTS/ERR, bad opcode or flags, too many SGEs (or a NULL
 * sg_list with num_sge > 0), inline longer than max_inline_data, an SGE
 * outside a live MR of the QP's PD; ENOMEM: max_send_wr outstanding. */
int omrc_qp_post_send(struct omrc_qp* qp, const struct omrc_send_wr* wrs, size_t n, size_t* bad_wr);
/* As omrc_qp_post_send: EINVAL (QP in RESET, too many SGEs, an SGE outside a
 * live LOCAL_WRITE MR of the PD), ENOMEM (max_recv_wr posted). */
int omrc_qp_post_recv(struct omrc_qp* qp, const struct omrc_recv_wr* wrs, size_t n, size_t* bad_wr);

/* Stops using path `ev` (operator denial). 0, ENOENT (not in use) or EINVAL. */
int omrc_qp_deny_ev(struct omrc_qp* qp, uint32_t ev);
/* Encrypted mode: the next transmit key epoch, without a dropped frame.
 * 0; EINVAL (not encrypted or not RTS); EBUSY (packets sent before the last
 * rotation not all acknowledged yet: try again later). */
int omrc_qp_rotate_key(struct omrc_qp* qp);
/* 1 when the QP seals its frames, else 0. */
int omrc_qp_encrypted(const struct omrc_qp* qp);

/* Getters; 0 for a NULL handle. */
uint32_t omrc_qp_num(const struct omrc_qp* qp);
/* The worker that owns it. */
uint32_t omrc_qp_worker(const struct omrc_qp* qp);
uint16_t omrc_qp_conn_id(const struct omrc_qp* qp); /* the peer's dest_conn_id */
/* An enum omrc_qp_state value, or -EINVAL for NULL. */
int omrc_qp_get_state(const struct omrc_qp* qp);

/* ------------------------------------------------------------------------
 * Shared receive queues */

void omrc_srq_attr_init(struct omrc_srq_attr* a); /* verbs.hpp's defaults */
/* A shared receive queue on `worker` (-1: the workers in turn). EINVAL:
 * NULL, max_wr 0 or above 65536, max_sge 0 or above OMRC_MAX_SGE,
 * srq_limit above max_wr, no such worker. */
int omrc_srq_create(struct omrc_pd* pd, const struct omrc_srq_attr* attr, int worker, struct omrc_srq** out);
/* 0, EBUSY while a qp uses it, EINVAL for NULL. Receives not taken are
 * dropped without completion; its events not yet polled too. */
int omrc_srq_destroy(struct omrc_srq* srq);
/* As omrc_qp_post_recv: EINVAL (too many SGEs, an SGE outside a live
 * LOCAL_WRITE MR of the SRQ's PD), ENOMEM (max_wr posted and not taken). */
int omrc_srq_post_recv(struct omrc_srq* srq, const struct omrc_recv_wr* wrs, size_t n, size_t* bad_wr);
/* OMRC_SRQ_MAX_WR resizes (never below what it holds), OMRC_SRQ_LIMIT arms
 * (non-zero) or disarms (0) the limit event. 0 or EINVAL. */
int omrc_srq_modify(struct omrc_srq* srq, const struct omrc_srq_attr* attr, uint32_t mask);
/* 0 or EINVAL. srq_limit reads 0 once the event has fired. */
int omrc_srq_query(const struct omrc_srq* srq, struct omrc_srq_attr* out);
/* The worker it lives on (0 for NULL). */
uint32_t omrc_srq_worker(const struct omrc_srq* srq);

/* Moves up to n asynchronous events, oldest first, into out; returns how
 * many, or -EINVAL. Raised by the device's progress (omrc_device_progress). */
int omrc_device_poll_async_events(struct omrc_device* dev, struct omrc_async_event* out, int n);

/* ------------------------------------------------------------------------
 * Connection manager (docs/PROTOCOL.md section 13; verbs.hpp's Device::cm_*):
 * QPs connected over the fabric itself, as librdmacm's rdma_connect and
 * rdma_accept do: the QP parameters (QPN, connection id, first PSN, MTU,
 * address) and, in encrypted mode, the keys are exchanged by the CM's
 * messages, with resends, cookies against forged floods, and refusals with
 * a reason. Events arrive through omrc_cm_poll, after omrc_device_progress. */

enum omrc_cm_event_type {
    OMRC_CM_EVENT_CONNECT_REQUEST = 0, /* listener: omrc_cm_accept or omrc_cm_reject it */
    OMRC_CM_EVENT_ESTABLISHED = 1,     /* the QP is in RTS and connected */
    OMRC_CM_EVENT_REJECTED = 2,        /* refused: reason; local when this end refused */
    OMRC_CM_EVENT_UNREACHABLE = 3,     /* no answer after every resend */
    OMRC_CM_EVENT_DISCONNECTED = 4,    /* the connection ended; its QP is in ERR */
};

enum omrc_cm_reason {
    OMRC_CM_REASON_NONE = 0,
    OMRC_CM_REASON_NO_LISTENER = 1,
    OMRC_CM_REASON_CONSUMER = 2,             /* the application refused it */
    OMRC_CM_REASON_BUSY = 3,                 /* the listener's backlog is full */
    OMRC_CM_REASON_PEER_LIMIT = 4,           /* too many pending requests from this address */
    OMRC_CM_REASON_NO_RESOURCES = 5,         /* no QP, or too many connections */
    OMRC_CM_REASON_SECURITY_REQUIRED = 6,    /* a plain request to an encryption-only listener */
    OMRC_CM_REASON_SECURITY_UNAVAILABLE = 7, /* no master key for the encryption asked */
    OMRC_CM_REASON_KEY_MISMATCH = 8,         /* the two ends hold different keys */
    OMRC_CM_REASON_STALE = 9,
    OMRC_CM_REASON_TIMEOUT = 10,
    OMRC_CM_REASON_INVALID = 11,
};

#define OMRC_CM_PRIVATE_DATA_MAX 64

struct omrc_cm_event {
    int type;            /* enum omrc_cm_event_type */
    int reason;          /* enum omrc_cm_reason */
    uint32_t id;         /* the connection (omrc_cm_connect's id, or the request's) */
    struct omrc_qp* qp;  /* the connection's QP; NULL for CONNECT_REQUEST */
    uint64_t service_id;
    struct omrc_device_address peer; /* the other end's device */
    bool local;          /* REJECTED: this end refused */
    enum omrc_encryption encryption; /* CONNECT_REQUEST: what the requester asks */
    uint32_t mtu_bytes;  /* CONNECT_REQUEST: the requester's offer */
    uint8_t private_len; /* the REQ's, REP's (ESTABLISHED) or REJ's private data */
    uint8_t private_data[OMRC_CM_PRIVATE_DATA_MAX];
};

struct omrc_cm_listen_options {
    uint32_t backlog;        /* requests not yet accepted or rejected, at most (then BUSY) */
    uint32_t per_peer;       /* pending requests per peer address, at most (then PEER_LIMIT) */
    bool cookies;            /* every request answered with a cookie first (else only under load) */
    bool require_encryption; /* refuse plain requests (SECURITY_REQUIRED) */
};
void omrc_cm_listen_options_init(struct omrc_cm_listen_options* o); /* verbs.hpp's defaults */

/* How a QP is set up by omrc_cm_connect and omrc_cm_accept. */
struct omrc_cm_conn_params {
    uint64_t service_id;              /* connect: the service to connect to */
    struct omrc_device_address peer;  /* connect: omrc_device_get_address() of the device to connect to */
    uint32_t qp_access_flags;         /* OMRC_ACCESS_* the peer may use */
    uint32_t mtu_bytes;               /* offered (connect) or the most taken (accept) */
    enum omrc_encryption encryption;  /* connect: asked; accept: must be what was asked */
    uint8_t private_len;              /* <= OMRC_CM_PRIVATE_DATA_MAX */
    uint8_t private_data[OMRC_CM_PRIVATE_DATA_MAX];
    /* The rest of the QP's attributes (path policy, EVs, timeouts, CC, RNR
     * and READ limits); the fields above and the peer's override it. */
    struct omrc_qp_attr qp_attr;
};
void omrc_cm_conn_params_init(struct omrc_cm_conn_params* p); /* verbs.hpp's defaults */

/* Listens on service_id (options NULL: the defaults). 0, EADDRINUSE, EINVAL,
 * EOPNOTSUPP (the device runs no connection manager). */
int omrc_cm_listen(struct omrc_device* dev, uint64_t service_id, const struct omrc_cm_listen_options* options);
/* 0, ENOENT. Requests already reported stay. */
int omrc_cm_unlisten(struct omrc_device* dev, uint64_t service_id);
/* Connects qp (RESET or INIT) to params->peer's service; the connection's id
 * to *id. 0, EINVAL (a QP past INIT, bad parameters, encryption without a
 * master key), EBUSY (the QP is in a connection already), ENOMEM (too many
 * connections). */
int omrc_cm_connect(struct omrc_qp* qp, const struct omrc_cm_conn_params* params, uint32_t* id);
/* Accepts CONNECT_REQUEST id on qp (RESET or INIT; params NULL: the
 * defaults): the QP goes to RTS. 0, ENOENT (no such request), EINVAL,
 * EBUSY (the QP is in a connection already). */
int omrc_cm_accept(struct omrc_device* dev, uint32_t id, struct omrc_qp* qp, const struct omrc_cm_conn_params* params);
/* Refuses CONNECT_REQUEST id with reason OMRC_CM_REASON_CONSUMER or
 * NO_RESOURCES and len (<= OMRC_CM_PRIVATE_DATA_MAX) bytes of private data
 * (NULL with len 0: none). 0, ENOENT, EINVAL. */
int omrc_cm_reject(struct omrc_device* dev, uint32_t id, const uint8_t* private_data, size_t len, int reason);
/* Ends connection id: its QP goes to ERR and the peer is told. 0, ENOENT. */
int omrc_cm_disconnect(struct omrc_device* dev, uint32_t id);
/* Moves up to n events, oldest first, into out; how many, or -EINVAL. */
int omrc_cm_poll(struct omrc_device* dev, struct omrc_cm_event* out, int n);

/* ------------------------------------------------------------------------
 * Library */

/* "MAJOR.MINOR.PATCH" of the linked library. */
const char* omrc_version(void);

#ifdef __cplusplus
}
#endif

#endif /* OMRC_OMRC_H */
