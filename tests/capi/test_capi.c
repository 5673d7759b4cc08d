/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The C API (include/omrc/omrc.h) from C: errors, defaults, object
 * lifecycle, QP states, posting errors and a byte-exact transfer on one
 * loopback device in virtual time. Prints "N passed, M failed"; exits 1 on
 * any failure.
 */
#define _POSIX_C_SOURCE 200809L  /* mkstemp, write, unlink */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <omrc/omrc.h>

static int passed;
static int failed;

static void check(int ok, const char* what, const char* file, int line) {
    if (ok) {
        ++passed;
    } else {
        ++failed;
        fprintf(stderr, "%s:%d: failed: %s\n", file, line, what);
    }
}

#define CHECK(cond) check((cond) ? 1 : 0, #cond, __FILE__, __LINE__)

/* Checks an integer result and says what it was when it differs. */
static void check_eq(long long got, long long want, const char* what, const char* file, int line) {
    if (got == want) {
        ++passed;
    } else {
        ++failed;
        fprintf(stderr, "%s:%d: failed: %s is %lld, expected %lld\n", file, line, what, got, want);
    }
}

#define CHECK_EQ(got, want) check_eq((long long)(got), (long long)(want), #got, __FILE__, __LINE__)

/* ------------------------------------------------------------------------
 * A device on its own private loopback fabric, driven in virtual time. */

struct solo {
    uint64_t now_ns;
    struct omrc_device* dev;
};

static uint64_t virtual_clock(void* ctx) { return ((const struct solo*)ctx)->now_ns; }

static int solo_open(struct solo* s, const char* planes) {
    struct omrc_device_options o;
    struct omrc_device_arg args[1];
    s->now_ns = 1000000;
    s->dev = NULL;
    omrc_device_options_init(&o);
    args[0].key = "planes";
    args[0].value = planes;
    o.args = args;
    o.num_args = 1;
    o.seed = 7;
    o.clock = virtual_clock;
    o.clock_ctx = s;
    return omrc_device_open("loopback", &o, &s->dev);
}

/* Progresses the device, jumping the clock to its next wakeup, until `want`
 * completions were polled from cq into wcs (or nothing is left to do). */
static int solo_poll(struct solo* s, struct omrc_cq* cq, struct omrc_wc* wcs, int want) {
    int got = 0;
    const uint64_t deadline = s->now_ns + 1000000000ull;
    long pass;
    for (pass = 0; pass < 1000000 && got < want; ++pass) {
        uint64_t next;
        int n;
        if (omrc_device_progress(s->dev) < 0) break;
        n = omrc_cq_poll(cq, wcs + got, want - got);
        if (n < 0) break;
        got += n;
        if (got >= want) break;
        next = omrc_device_next_wakeup_ns(s->dev);
        if (next == UINT64_MAX) break;
        if (next > s->now_ns) s->now_ns = next;
        if (s->now_ns > deadline) break;
    }
    return got;
}

/* RESET -> INIT -> RTR -> RTS, connected to `peer` on the same device. */
static int connect_qp(struct omrc_device* dev, struct omrc_qp* qp, const struct omrc_qp* peer) {
    struct omrc_qp_attr attr;
    int rc;
    omrc_qp_attr_init(&attr);
    attr.qp_state = OMRC_QPS_INIT;
    attr.qp_access_flags = OMRC_ACCESS_LOCAL_WRITE | OMRC_ACCESS_REMOTE_WRITE;
    rc = omrc_qp_modify(qp, &attr, OMRC_QP_STATE | OMRC_QP_ACCESS_FLAGS);
    if (rc != 0) return rc;
    attr.qp_state = OMRC_QPS_RTR;
    attr.dest_qp_num = omrc_qp_num(peer);
    attr.dest_conn_id = omrc_qp_conn_id(peer);
    rc = omrc_device_get_address(dev, &attr.peer);
    if (rc != 0) return rc;
    rc = omrc_qp_modify(qp, &attr, OMRC_QP_STATE | OMRC_QP_PATH | OMRC_QP_DEST_QPN | OMRC_QP_RQ_PSN | OMRC_QP_MTU);
    if (rc != 0) return rc;
    attr.qp_state = OMRC_QPS_RTS;
    return omrc_qp_modify(qp, &attr, OMRC_QP_STATE | OMRC_QP_SQ_PSN);
}

/* ------------------------------------------------------------------------ */

static void test_open_errors(void) {
    struct omrc_device* dev = (struct omrc_device*)&dev; /* not NULL: open must clear it */
    struct omrc_device_options o;
    struct omrc_device_arg args[2];

    CHECK_EQ(omrc_device_open("no_such_driver", NULL, &dev), ENODEV);
    CHECK(dev == NULL);
    CHECK_EQ(omrc_device_open(NULL, NULL, &dev), EINVAL);
    CHECK_EQ(omrc_device_open("loopback", NULL, NULL), EINVAL);

    omrc_device_options_init(&o);
    args[0].key = "no_such_key";
    args[0].value = "1";
    o.args = args;
    o.num_args = 1;
    CHECK_EQ(omrc_device_open("loopback", &o, &dev), EINVAL);
    CHECK(dev == NULL);

    args[0].key = "planes";
    args[0].value = "four";
    CHECK_EQ(omrc_device_open("loopback", &o, &dev), EINVAL);

    args[0].value = "4";
    args[1].key = "planes";
    args[1].value = "2";
    o.num_args = 2;
    CHECK_EQ(omrc_device_open("loopback", &o, &dev), EINVAL); /* a key given twice */

    args[1].key = NULL;
    CHECK_EQ(omrc_device_open("loopback", &o, &dev), EINVAL);

    omrc_device_options_init(&o);
    o.num_args = 1; /* args NULL */
    CHECK_EQ(omrc_device_open("loopback", &o, &dev), EINVAL);

    omrc_device_options_init(&o);
    o.frame_mode = (enum omrc_frame_mode)7;
    CHECK_EQ(omrc_device_open("loopback", &o, &dev), EINVAL);

    omrc_device_options_init(&o);
    o.planes = OMRC_MAX_PLANES + 1;
    CHECK_EQ(omrc_device_open("loopback", &o, &dev), EINVAL);

    omrc_device_options_init(&o);
    o.clock_ctx = &o; /* a context without its clock */
    CHECK_EQ(omrc_device_open("loopback", &o, &dev), EINVAL);

    omrc_device_options_init(&o);
    o.ack_every_pkts = 65;
    CHECK_EQ(omrc_device_open("loopback", &o, &dev), EINVAL);
    CHECK(dev == NULL);
}

static void test_defaults(void) {
    struct omrc_device_options o;
    struct omrc_qp_attr a;
    struct omrc_qp_init_attr init;
    struct omrc_qp_defaults d;

    memset(&o, 0xA5, sizeof o);
    omrc_device_options_init(&o);
    CHECK(o.args == NULL);
    CHECK_EQ(o.num_args, 0);
    CHECK_EQ(o.planes, 0);
    CHECK_EQ(o.local_addr[0], 0);
    CHECK_EQ(o.local_addr[15], 0);
    CHECK_EQ(o.frame_mode, OMRC_FRAME_PLAIN);
    CHECK_EQ(o.fabric.usid_block, 0xFCBB0000u);
    CHECK_EQ(o.fabric.planes, 8);
    CHECK_EQ(o.fabric.t0_per_plane, 512);
    CHECK_EQ(o.fabric.t1_per_plane, 256);
    CHECK_EQ(o.fabric.hosts_per_t0, 256);
    CHECK_EQ(o.seed, 0);
    CHECK(o.compute_icrc);
    CHECK(o.verify_icrc);
    CHECK_EQ(o.ack_every_pkts, 16);
    CHECK_EQ(o.ack_delay_ns, 2000);
    CHECK_EQ(o.ev_timeout_ns, 200000);
    CHECK_EQ(o.min_ev_timeout_ns, 20000);
    CHECK_EQ(o.probe_interval_ns, 50000);
    CHECK_EQ(o.probe_successes_to_restore, 3);
    CHECK_EQ(o.ev_track_depth, 16);
    CHECK_EQ(o.port_status_repeat_ns, 100000);
    CHECK_EQ(o.max_qps, 1024);
    CHECK_EQ(o.rx_burst_frames, 32);
    CHECK_EQ(o.tx_burst_frames, 32);
    CHECK(o.clock == NULL);
    CHECK(o.clock_ctx == NULL);

    omrc_qp_attr_init(&a);
    CHECK_EQ(a.qp_state, OMRC_QPS_RESET);
    CHECK_EQ(a.mtu_bytes, 4096);
    CHECK_EQ(a.mpr, 8);
    CHECK_EQ(a.path_policy, OMRC_PATH_ADAPTIVE);
    CHECK_EQ(a.evs, 128);
    CHECK_EQ(a.backup_evs, 32);
    CHECK_EQ(a.timeout_ns, 4000000);
    CHECK_EQ(a.retry_cnt, 7);
    CHECK_EQ(a.cc.algorithm, OMRC_CC_NSCC);
    CHECK_EQ(a.cc.base_rtt_ns, 10000);
    CHECK_EQ(a.cc.fixed_window_bytes, 4u << 20);
    CHECK(a.cc.target_delay_ratio == 0.75);
    CHECK(a.cc.max_window_bdp == 1.5);

    omrc_qp_init_attr_init(&init);
    CHECK(init.send_cq == NULL && init.recv_cq == NULL);
    CHECK_EQ(init.cap.max_send_wr, 256);
    CHECK_EQ(init.cap.max_recv_wr, 256);
    CHECK_EQ(init.cap.max_send_sge, 4);
    CHECK_EQ(init.cap.max_recv_sge, 1);
    CHECK_EQ(init.cap.max_inline_data, 256);
    CHECK(!init.sq_sig_all);

    omrc_qp_defaults_init(&d);
    CHECK_EQ(d.path_policy, OMRC_PATH_ADAPTIVE);
    CHECK_EQ(d.evs, 128);
    CHECK_EQ(d.mtu_bytes, 0);
    CHECK_EQ(d.timeout_ns, 4000000);
    CHECK_EQ(d.cc.algorithm, OMRC_CC_NSCC);
}

static void test_device(void) {
    struct solo s;
    struct omrc_device_address addr, back;
    struct omrc_qp_defaults d;
    uint8_t bytes[OMRC_DEVICE_ADDRESS_BYTES];
    char names[64];
    size_t needed = 0;

    CHECK_EQ(solo_open(&s, "4"), 0);
    if (s.dev == NULL) return;
    CHECK_EQ(omrc_device_planes(s.dev), 4);
    CHECK_EQ(omrc_device_now_ns(s.dev), 1000000);
    s.now_ns = 5000000;
    CHECK_EQ(omrc_device_now_ns(s.dev), 5000000);
    CHECK(omrc_device_progress(s.dev) >= 0);
    CHECK_EQ(omrc_device_next_wakeup_ns(s.dev), UINT64_MAX); /* idle: no QP, nothing posted */

    CHECK_EQ(omrc_device_get_address(s.dev, &addr), 0);
    CHECK_EQ(addr.planes, 4);
    CHECK_EQ(addr.addr[0], 0xfd); /* the loopback driver's fd6d:7263::/32 */
    CHECK_EQ(addr.reserved[0] | addr.reserved[1], 0);
    CHECK_EQ(omrc_device_address_to_bytes(&addr, bytes), 0);
    CHECK_EQ(bytes[108], 0); /* planes, big-endian */
    CHECK_EQ(bytes[111], 4);
    memset(&back, 0xff, sizeof back);
    CHECK_EQ(omrc_device_address_from_bytes(bytes, &back), 0);
    CHECK(memcmp(&addr, &back, sizeof addr) == 0);
    bytes[111] = OMRC_MAX_PLANES + 1;
    CHECK_EQ(omrc_device_address_from_bytes(bytes, &back), EINVAL);
    bytes[111] = 4;
    bytes[106] = 1; /* reserved */
    CHECK_EQ(omrc_device_address_from_bytes(bytes, &back), EINVAL);
    CHECK_EQ(omrc_device_address_to_bytes(NULL, bytes), EINVAL);

    CHECK_EQ(omrc_device_qp_defaults(s.dev, &d), 0);
    CHECK_EQ(d.evs, 128);
    CHECK_EQ(omrc_device_qp_defaults(NULL, &d), EINVAL);

    CHECK_EQ(omrc_drivers(names, sizeof names, &needed), 0);
    CHECK(strstr(names, "loopback") != NULL);
    CHECK(strstr(names, "udp") != NULL);
    CHECK_EQ(needed, strlen(names) + 1);
    CHECK_EQ(omrc_drivers(names, 3, &needed), ERANGE);
    CHECK_EQ(names[0], '\0');

    /* NULL handles */
    CHECK_EQ(omrc_device_progress(NULL), -EINVAL);
    CHECK_EQ(omrc_device_next_wakeup_ns(NULL), UINT64_MAX);
    CHECK_EQ(omrc_device_now_ns(NULL), 0);
    CHECK_EQ(omrc_device_planes(NULL), 0);
    CHECK_EQ(omrc_device_get_address(NULL, &addr), EINVAL);
    CHECK_EQ(omrc_device_get_address(s.dev, NULL), EINVAL);
    CHECK_EQ(omrc_device_close(NULL), EINVAL);

    CHECK_EQ(omrc_device_close(s.dev), 0);
}

static void test_lifecycle(void) {
    struct solo s, other;
    struct omrc_pd* pd = NULL;
    struct omrc_cq* cq = NULL;
    struct omrc_cq* foreign_cq = NULL;
    struct omrc_mr* mr = NULL;
    struct omrc_mr* bad = NULL;
    struct omrc_qp* qp = NULL;
    struct omrc_qp_init_attr init;
    struct omrc_wc wc;
    static unsigned char buf[4096];

    CHECK_EQ(solo_open(&s, "2"), 0);
    CHECK_EQ(solo_open(&other, "2"), 0);
    if (s.dev == NULL || other.dev == NULL) return;

    CHECK_EQ(omrc_pd_alloc(NULL, &pd), EINVAL);
    CHECK_EQ(omrc_pd_alloc(s.dev, NULL), EINVAL);
    CHECK_EQ(omrc_pd_alloc(s.dev, &pd), 0);
    CHECK(pd != NULL);

    CHECK_EQ(omrc_cq_create(s.dev, 0, &cq), EINVAL);
    CHECK(cq == NULL);
    CHECK_EQ(omrc_cq_create(s.dev, (1 << 20) + 1, &cq), EINVAL);
    CHECK_EQ(omrc_cq_create(NULL, 16, &cq), EINVAL);
    CHECK_EQ(omrc_cq_create(s.dev, 16, &cq), 0);
    CHECK_EQ(omrc_cq_create(other.dev, 16, &foreign_cq), 0);

    CHECK_EQ(omrc_mr_reg(pd, NULL, sizeof buf, OMRC_ACCESS_LOCAL_WRITE, &bad), EINVAL);
    CHECK_EQ(omrc_mr_reg(pd, buf, 0, OMRC_ACCESS_LOCAL_WRITE, &bad), EINVAL);
    CHECK_EQ(omrc_mr_reg(pd, buf, sizeof buf, OMRC_ACCESS_REMOTE_WRITE, &bad), EINVAL);
    CHECK_EQ(omrc_mr_reg(pd, buf, sizeof buf, 1u << 7, &bad), EINVAL);
    CHECK_EQ(omrc_mr_reg(NULL, buf, sizeof buf, OMRC_ACCESS_LOCAL_WRITE, &bad), EINVAL);
    CHECK(bad == NULL);
    CHECK_EQ(omrc_mr_reg(pd, buf, sizeof buf, OMRC_ACCESS_LOCAL_WRITE | OMRC_ACCESS_REMOTE_WRITE, &mr), 0);
    CHECK(omrc_mr_lkey(mr) != 0);
    CHECK(omrc_mr_rkey(mr) != 0);
    CHECK(omrc_mr_addr(mr) == (void*)buf);
    CHECK_EQ(omrc_mr_length(mr), sizeof buf);
    CHECK_EQ(omrc_mr_lkey(NULL), 0);
    CHECK_EQ(omrc_mr_rkey(NULL), 0);
    CHECK(omrc_mr_addr(NULL) == NULL);
    CHECK_EQ(omrc_mr_length(NULL), 0);

    omrc_qp_init_attr_init(&init);
    CHECK_EQ(omrc_qp_create(pd, &init, &qp), EINVAL); /* no CQs */
    init.send_cq = cq;
    init.recv_cq = foreign_cq;
    CHECK_EQ(omrc_qp_create(pd, &init, &qp), EINVAL); /* a CQ of another device */
    init.recv_cq = cq;
    init.cap.max_send_sge = OMRC_MAX_SGE + 1;
    CHECK_EQ(omrc_qp_create(pd, &init, &qp), EINVAL);
    init.cap.max_send_sge = 4;
    CHECK_EQ(omrc_qp_create(pd, NULL, &qp), EINVAL);
    CHECK(qp == NULL);
    CHECK_EQ(omrc_qp_create(pd, &init, &qp), 0);
    CHECK(qp != NULL);
    CHECK(omrc_qp_num(qp) != 0);
    CHECK_EQ(omrc_qp_get_state(qp), OMRC_QPS_RESET);
    CHECK_EQ(omrc_qp_num(NULL), 0);
    CHECK_EQ(omrc_qp_conn_id(NULL), 0);
    CHECK_EQ(omrc_qp_get_state(NULL), -EINVAL);

    /* Parents with live children stay alive and usable. */
    CHECK_EQ(omrc_device_close(s.dev), EBUSY);
    CHECK_EQ(omrc_pd_dealloc(pd), EBUSY);
    CHECK_EQ(omrc_cq_destroy(cq), EBUSY);
    CHECK_EQ(omrc_cq_poll(cq, &wc, 1), 0);
    CHECK(omrc_device_progress(s.dev) >= 0);

    /* NULL handles */
    CHECK_EQ(omrc_pd_dealloc(NULL), EINVAL);
    CHECK_EQ(omrc_cq_destroy(NULL), EINVAL);
    CHECK_EQ(omrc_mr_dereg(NULL), EINVAL);
    CHECK_EQ(omrc_qp_destroy(NULL), EINVAL);
    CHECK_EQ(omrc_qp_deny_ev(NULL, 1), EINVAL);
    CHECK_EQ(omrc_cq_poll(NULL, &wc, 1), -EINVAL);
    CHECK_EQ(omrc_cq_poll(cq, NULL, 1), -EINVAL);
    CHECK_EQ(omrc_cq_poll(cq, &wc, -1), -EINVAL);
    CHECK_EQ(omrc_cq_poll(cq, NULL, 0), 0);

    /* Children first, then each parent. */
    CHECK_EQ(omrc_qp_destroy(qp), 0);
    CHECK_EQ(omrc_cq_destroy(cq), 0);
    CHECK_EQ(omrc_pd_dealloc(pd), EBUSY); /* the MR is still registered */
    CHECK_EQ(omrc_mr_dereg(mr), 0);
    CHECK_EQ(omrc_device_close(s.dev), EBUSY); /* the PD */
    CHECK_EQ(omrc_pd_dealloc(pd), 0);
    CHECK_EQ(omrc_device_close(s.dev), 0);
    CHECK_EQ(omrc_device_close(other.dev), EBUSY); /* foreign_cq */
    CHECK_EQ(omrc_cq_destroy(foreign_cq), 0);
    CHECK_EQ(omrc_device_close(other.dev), 0);
}

static void test_qp_states(void) {
    struct solo s;
    struct omrc_pd* pd = NULL;
    struct omrc_cq* cq = NULL;
    struct omrc_qp* a = NULL;
    struct omrc_qp* b = NULL;
    struct omrc_qp_init_attr init;
    struct omrc_qp_attr attr;

    CHECK_EQ(solo_open(&s, "2"), 0);
    if (s.dev == NULL) return;
    CHECK_EQ(omrc_pd_alloc(s.dev, &pd), 0);
    CHECK_EQ(omrc_cq_create(s.dev, 64, &cq), 0);
    omrc_qp_init_attr_init(&init);
    init.send_cq = init.recv_cq = cq;
    CHECK_EQ(omrc_qp_create(pd, &init, &a), 0);
    CHECK_EQ(omrc_qp_create(pd, &init, &b), 0);
    CHECK(omrc_qp_num(a) != omrc_qp_num(b));

    omrc_qp_attr_init(&attr);
    CHECK_EQ(omrc_qp_modify(NULL, &attr, OMRC_QP_STATE), EINVAL);
    CHECK_EQ(omrc_qp_modify(a, NULL, OMRC_QP_STATE), EINVAL);
    /* RESET -> RTR skips INIT */
    attr.qp_state = OMRC_QPS_RTR;
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE | OMRC_QP_PATH | OMRC_QP_DEST_QPN | OMRC_QP_RQ_PSN |
                                          OMRC_QP_MTU),
             EINVAL);
    CHECK_EQ(omrc_qp_get_state(a), OMRC_QPS_RESET);
    /* 4 is ibverbs' SQD, which does not exist here; 99 is nothing */
    attr.qp_state = (enum omrc_qp_state)4;
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE), EINVAL);
    attr.qp_state = (enum omrc_qp_state)99;
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE), EINVAL);
    attr.qp_state = OMRC_QPS_INIT;
    attr.qp_access_flags = OMRC_ACCESS_LOCAL_WRITE | OMRC_ACCESS_REMOTE_WRITE;
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE | OMRC_QP_ACCESS_FLAGS | (1u << 20)), EINVAL); /* unknown bit */
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE | OMRC_QP_ACCESS_FLAGS), 0);
    CHECK_EQ(omrc_qp_get_state(a), OMRC_QPS_INIT);

    /* INIT -> RTR: the path is required, and must be a valid policy */
    attr.qp_state = OMRC_QPS_RTR;
    attr.dest_qp_num = omrc_qp_num(b);
    attr.dest_conn_id = omrc_qp_conn_id(b);
    CHECK_EQ(omrc_device_get_address(s.dev, &attr.peer), 0);
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE | OMRC_QP_DEST_QPN | OMRC_QP_RQ_PSN | OMRC_QP_MTU), EINVAL);
    attr.path_policy = (enum omrc_path_policy)9;
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE | OMRC_QP_PATH | OMRC_QP_DEST_QPN | OMRC_QP_RQ_PSN |
                                          OMRC_QP_MTU),
             EINVAL);
    attr.path_policy = OMRC_PATH_SPRAY;
    attr.mtu_bytes = 100; /* not a multiple of 64 */
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE | OMRC_QP_PATH | OMRC_QP_DEST_QPN | OMRC_QP_RQ_PSN |
                                          OMRC_QP_MTU),
             EINVAL);
    CHECK_EQ(omrc_qp_get_state(a), OMRC_QPS_INIT);
    attr.mtu_bytes = 1024;
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE | OMRC_QP_PATH | OMRC_QP_DEST_QPN | OMRC_QP_RQ_PSN |
                                          OMRC_QP_MTU),
             0);
    CHECK_EQ(omrc_qp_get_state(a), OMRC_QPS_RTR);

    /* RTR -> RTS, with a CC algorithm that must be known */
    attr.qp_state = OMRC_QPS_RTS;
    attr.cc.algorithm = (enum omrc_cc_algorithm)5;
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE | OMRC_QP_SQ_PSN | OMRC_QP_CC), EINVAL);
    attr.cc.algorithm = OMRC_CC_FIXED;
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE | OMRC_QP_SQ_PSN | OMRC_QP_CC), 0);
    CHECK_EQ(omrc_qp_get_state(a), OMRC_QPS_RTS);
    CHECK_EQ(omrc_qp_deny_ev(a, 0xFFFFFFFFu), ENOENT); /* no such EV in use */

    /* RTS -> INIT is no transition; any -> ERR and any -> RESET are */
    attr.qp_state = OMRC_QPS_INIT;
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE | OMRC_QP_ACCESS_FLAGS), EINVAL);
    CHECK_EQ(omrc_qp_get_state(a), OMRC_QPS_RTS);
    attr.qp_state = OMRC_QPS_ERR;
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE), 0);
    CHECK_EQ(omrc_qp_get_state(a), OMRC_QPS_ERR);
    attr.qp_state = OMRC_QPS_RESET;
    CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE), 0);
    CHECK_EQ(omrc_qp_get_state(a), OMRC_QPS_RESET);
    /* and back up the whole way */
    CHECK_EQ(connect_qp(s.dev, a, b), 0);
    CHECK_EQ(omrc_qp_get_state(a), OMRC_QPS_RTS);

    CHECK_EQ(omrc_qp_destroy(a), 0);
    CHECK_EQ(omrc_qp_destroy(b), 0);
    CHECK_EQ(omrc_cq_destroy(cq), 0);
    CHECK_EQ(omrc_pd_dealloc(pd), 0);
    CHECK_EQ(omrc_device_close(s.dev), 0);
}

/* Byte-exact WRITEs, a WRITE_WITH_IMM with its receive completion, posting
 * errors, and the stats document. */
static void test_transfer(void) {
    enum { kBytes = 256 * 1024, kImmBytes = 4096, kWrites = 4 };
    struct solo s;
    struct omrc_pd* pd = NULL;
    struct omrc_cq* scq = NULL;
    struct omrc_cq* rcq = NULL;
    struct omrc_qp* a = NULL;
    struct omrc_qp* b = NULL;
    struct omrc_mr* smr = NULL;
    struct omrc_mr* dmr = NULL;
    struct omrc_qp_init_attr init;
    struct omrc_sge sge[kWrites + 1];
    struct omrc_send_wr wr[kWrites + 1];
    struct omrc_recv_wr rwr;
    struct omrc_wc wc[kWrites + 2];
    unsigned char* src = malloc(kBytes);
    unsigned char* dst = calloc(1, kBytes);
    const size_t chunk = (kBytes - kImmBytes) / kWrites;
    size_t bad_wr = 99;
    size_t i;
    int n;
    int k;

    CHECK(src != NULL && dst != NULL);
    if (src == NULL || dst == NULL) goto out;
    for (i = 0; i < kBytes; ++i) src[i] = (unsigned char)(i * 131 + (i >> 9));

    CHECK_EQ(solo_open(&s, "4"), 0);
    if (s.dev == NULL) goto out;
    CHECK_EQ(omrc_pd_alloc(s.dev, &pd), 0);
    CHECK_EQ(omrc_cq_create(s.dev, 64, &scq), 0);
    CHECK_EQ(omrc_cq_create(s.dev, 64, &rcq), 0);
    omrc_qp_init_attr_init(&init);
    init.send_cq = scq;
    init.recv_cq = rcq;
    CHECK_EQ(omrc_qp_create(pd, &init, &a), 0);
    CHECK_EQ(omrc_qp_create(pd, &init, &b), 0);
    CHECK_EQ(omrc_mr_reg(pd, src, kBytes, OMRC_ACCESS_LOCAL_WRITE, &smr), 0);
    CHECK_EQ(omrc_mr_reg(pd, dst, kBytes, OMRC_ACCESS_LOCAL_WRITE | OMRC_ACCESS_REMOTE_WRITE, &dmr), 0);
    if (a == NULL || b == NULL || smr == NULL || dmr == NULL) goto out;

    /* Posting into a QP in RESET */
    memset(wr, 0, sizeof wr);
    sge[0].addr = (uint64_t)(uintptr_t)src;
    sge[0].length = 64;
    sge[0].lkey = omrc_mr_lkey(smr);
    wr[0].opcode = OMRC_WR_RDMA_WRITE;
    wr[0].sg_list = sge;
    wr[0].num_sge = 1;
    wr[0].remote_addr = (uint64_t)(uintptr_t)dst;
    wr[0].rkey = omrc_mr_rkey(dmr);
    CHECK_EQ(omrc_qp_post_send(a, wr, 1, &bad_wr), EINVAL);
    CHECK_EQ(bad_wr, 0);
    CHECK_EQ(omrc_qp_post_send(NULL, wr, 1, &bad_wr), EINVAL);
    CHECK_EQ(omrc_qp_post_send(a, NULL, 1, &bad_wr), EINVAL);
    CHECK_EQ(omrc_qp_post_send(a, NULL, 0, &bad_wr), 0);

    CHECK_EQ(connect_qp(s.dev, a, b), 0);
    CHECK_EQ(connect_qp(s.dev, b, a), 0);

    /* WR 1 of 2 has an unknown lkey: WR 0 is posted, WR 1 reported. */
    wr[0].wr_id = 500;
    wr[0].send_flags = OMRC_SEND_SIGNALED;
    wr[1] = wr[0];
    wr[1].wr_id = 501;
    sge[1] = sge[0];
    sge[1].lkey = omrc_mr_lkey(smr) ^ 0x5a5a5a5au;
    wr[1].sg_list = &sge[1];
    bad_wr = 99;
    CHECK_EQ(omrc_qp_post_send(a, wr, 2, &bad_wr), EINVAL);
    CHECK_EQ(bad_wr, 1);
    /* WRs the C layer refuses: opcode, NULL sg_list, too many SGEs */
    wr[1] = wr[0];
    wr[1].opcode = (enum omrc_wr_opcode)5;
    CHECK_EQ(omrc_qp_post_send(a, &wr[1], 1, &bad_wr), EINVAL);
    CHECK_EQ(bad_wr, 0);
    wr[1].opcode = OMRC_WR_RDMA_WRITE;
    wr[1].sg_list = NULL;
    CHECK_EQ(omrc_qp_post_send(a, &wr[1], 1, &bad_wr), EINVAL);
    wr[1].sg_list = sge;
    wr[1].num_sge = OMRC_MAX_SGE + 1;
    CHECK_EQ(omrc_qp_post_send(a, &wr[1], 1, &bad_wr), EINVAL);
    wr[1].sg_list = &sge[1];
    wr[1].num_sge = 1;
    sge[1].length = kBytes + 1; /* past the end of the MR */
    sge[1].lkey = omrc_mr_lkey(smr);
    CHECK_EQ(omrc_qp_post_send(a, &wr[1], 1, &bad_wr), EINVAL);
    /* a receive without LOCAL_WRITE memory behind it */
    rwr.wr_id = 1;
    rwr.sg_list = &sge[1];
    rwr.num_sge = 1;
    bad_wr = 99;
    CHECK_EQ(omrc_qp_post_recv(b, &rwr, 1, &bad_wr), EINVAL);
    CHECK_EQ(bad_wr, 0);
    CHECK_EQ(omrc_qp_post_recv(NULL, &rwr, 1, &bad_wr), EINVAL);
    n = solo_poll(&s, scq, wc, 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(wc[0].wr_id, 500);
    CHECK_EQ(wc[0].status, OMRC_WC_SUCCESS);
    CHECK_EQ(wc[0].opcode, OMRC_WC_RDMA_WRITE);
    CHECK_EQ(wc[0].qp_num, omrc_qp_num(a));
    CHECK_EQ(omrc_cq_poll(scq, wc, 1), 0); /* WR 501 was never posted */

    /* The transfer: kWrites WRITEs, then a WRITE_WITH_IMM of the last part. */
    rwr.wr_id = 7000;
    rwr.sg_list = NULL;
    rwr.num_sge = 0;
    CHECK_EQ(omrc_qp_post_recv(b, &rwr, 1, NULL), 0);
    memset(wr, 0, sizeof wr);
    for (k = 0; k <= kWrites; ++k) {
        const size_t off = (size_t)k * chunk;
        sge[k].addr = (uint64_t)(uintptr_t)(src + off);
        sge[k].length = (uint32_t)(k < kWrites ? chunk : kBytes - off);
        sge[k].lkey = omrc_mr_lkey(smr);
        wr[k].wr_id = 1000 + (uint64_t)k;
        wr[k].opcode = k < kWrites ? OMRC_WR_RDMA_WRITE : OMRC_WR_RDMA_WRITE_WITH_IMM;
        wr[k].send_flags = OMRC_SEND_SIGNALED;
        wr[k].sg_list = &sge[k];
        wr[k].num_sge = 1;
        wr[k].remote_addr = (uint64_t)(uintptr_t)(dst + off);
        wr[k].rkey = omrc_mr_rkey(dmr);
        wr[k].imm_data = 0xC0FFEE01u;
    }
    CHECK_EQ(omrc_qp_post_send(a, wr, kWrites + 1, &bad_wr), 0);
    n = solo_poll(&s, scq, wc, kWrites + 1);
    CHECK_EQ(n, kWrites + 1);
    for (k = 0; k < n; ++k) {
        CHECK_EQ(wc[k].status, OMRC_WC_SUCCESS);
        CHECK_EQ(wc[k].wr_id, 1000 + k);
        CHECK_EQ(wc[k].opcode, OMRC_WC_RDMA_WRITE);
    }
    n = solo_poll(&s, rcq, wc, 1);
    CHECK_EQ(n, 1);
    CHECK_EQ(wc[0].wr_id, 7000);
    CHECK_EQ(wc[0].status, OMRC_WC_SUCCESS);
    CHECK_EQ(wc[0].opcode, OMRC_WC_RECV_RDMA_WITH_IMM);
    CHECK_EQ(wc[0].imm_data, 0xC0FFEE01u);
    CHECK_EQ(wc[0].byte_len, kBytes - kWrites * chunk);
    CHECK(wc[0].wc_flags & OMRC_WC_WITH_IMM);
    CHECK_EQ(wc[0].qp_num, omrc_qp_num(b));
    CHECK(memcmp(src, dst, kBytes) == 0);

    /* The stats document, snprintf-style. */
    {
        size_t needed = 0;
        size_t again = 0;
        char small[8];
        char* doc;
        CHECK_EQ(omrc_device_stats_json(s.dev, NULL, 0, &needed), ERANGE);
        CHECK(needed > 100);
        CHECK_EQ(omrc_device_stats_json(s.dev, small, sizeof small, &again), ERANGE);
        CHECK_EQ(small[0], '\0');
        CHECK_EQ(again, needed);
        CHECK_EQ(omrc_device_stats_json(s.dev, NULL, 5, NULL), EINVAL);
        CHECK_EQ(omrc_device_stats_json(NULL, small, sizeof small, NULL), EINVAL);
        doc = malloc(needed);
        CHECK(doc != NULL);
        if (doc != NULL) {
            CHECK_EQ(omrc_device_stats_json(s.dev, doc, needed, &again), 0);
            CHECK_EQ(strlen(doc) + 1, needed);
            CHECK_EQ(doc[0], '{');
            CHECK(strstr(doc, "\"qps\"") != NULL);
            CHECK(strstr(doc, "\"driver\":\"loopback\"") != NULL);
            free(doc);
        }
    }

    /* A QP moved to ERR flushes what is posted after it. */
    {
        struct omrc_qp_attr attr;
        omrc_qp_attr_init(&attr);
        attr.qp_state = OMRC_QPS_ERR;
        CHECK_EQ(omrc_qp_modify(a, &attr, OMRC_QP_STATE), 0);
        wr[0].wr_id = 9000;
        CHECK_EQ(omrc_qp_post_send(a, wr, 1, NULL), 0);
        n = solo_poll(&s, scq, wc, 1);
        CHECK_EQ(n, 1);
        CHECK_EQ(wc[0].wr_id, 9000);
        CHECK_EQ(wc[0].status, OMRC_WC_WR_FLUSH_ERR);
    }

out:
    if (a != NULL) CHECK_EQ(omrc_qp_destroy(a), 0);
    if (b != NULL) CHECK_EQ(omrc_qp_destroy(b), 0);
    if (smr != NULL) CHECK_EQ(omrc_mr_dereg(smr), 0);
    if (dmr != NULL) CHECK_EQ(omrc_mr_dereg(dmr), 0);
    if (scq != NULL) CHECK_EQ(omrc_cq_destroy(scq), 0);
    if (rcq != NULL) CHECK_EQ(omrc_cq_destroy(rcq), 0);
    if (pd != NULL) CHECK_EQ(omrc_pd_dealloc(pd), 0);
    if (s.dev != NULL) CHECK_EQ(omrc_device_close(s.dev), 0);
    free(src);
    free(dst);
}

/* A shared receive queue: two QPs' SENDs into it, the limit event, the
 * refusals (a QP's own post_recv, a busy SRQ, bad attributes). */
/* Encrypted mode from C: a device whose QPs are all encrypted by default
 * (one master key, AES-GCM-256), a WRITE byte-exact between two of its QPs,
 * a key rotation; a device asking for encryption without the key fails to
 * open. */
static void test_encryption(void) {
    struct solo s;
    struct omrc_device_options o;
    struct omrc_device_arg args[1];
    struct omrc_device* bad = NULL;
    struct omrc_pd* pd = NULL;
    struct omrc_cq* cq = NULL;
    struct omrc_qp* a = NULL;
    struct omrc_qp* b = NULL;
    struct omrc_mr* mr = NULL;
    struct omrc_qp_init_attr init;
    struct omrc_wc wcs[4];
    struct omrc_sge sge;
    struct omrc_send_wr w;
    static uint8_t buf[2 * 65536];
    int i;
    omrc_device_options_init(&o);
    CHECK_EQ(o.security_encryption, OMRC_ENCRYPTION_OFF);
    CHECK_EQ(o.replay_window, 4096);
    o.security_encryption = OMRC_ENCRYPTION_AES_GCM_256;
    CHECK_EQ(omrc_device_open("loopback", &o, &bad), EINVAL); /* no master key */
    CHECK(bad == NULL);
    s.now_ns = 1000000;
    s.dev = NULL;
    args[0].key = "planes";
    args[0].value = "2";
    o.args = args;
    o.num_args = 1;
    o.seed = 9;
    o.clock = virtual_clock;
    o.clock_ctx = &s;
    for (i = 0; i < 32; ++i) o.master_key[0][i] = (uint8_t)(i * 11 + 5);
    o.has_master_key[0] = true;
    if (omrc_device_open("loopback", &o, &s.dev) != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ(omrc_pd_alloc(s.dev, &pd), 0);
    CHECK_EQ(omrc_cq_create(s.dev, 16, &cq), 0);
    omrc_qp_init_attr_init(&init);
    init.send_cq = cq;
    init.recv_cq = cq;
    CHECK_EQ(omrc_qp_create(pd, &init, &a), 0);
    CHECK_EQ(omrc_qp_create(pd, &init, &b), 0);
    CHECK_EQ(connect_qp(s.dev, a, b), 0);
    CHECK_EQ(connect_qp(s.dev, b, a), 0);
    CHECK_EQ(omrc_qp_encrypted(a), 1);
    CHECK_EQ(omrc_qp_encrypted(NULL), 0);
    for (i = 0; i < 65536; ++i) buf[i] = (uint8_t)(i * 7 + 1);
    memset(buf + 65536, 0, 65536);
    CHECK_EQ(omrc_mr_reg(pd, buf, sizeof buf, OMRC_ACCESS_LOCAL_WRITE | OMRC_ACCESS_REMOTE_WRITE, &mr), 0);
    sge.addr = (uint64_t)(uintptr_t)buf;
    sge.length = 65536;
    sge.lkey = omrc_mr_lkey(mr);
    memset(&w, 0, sizeof w);
    w.wr_id = 1;
    w.opcode = OMRC_WR_RDMA_WRITE;
    w.send_flags = OMRC_SEND_SIGNALED;
    w.sg_list = &sge;
    w.num_sge = 1;
    w.remote_addr = (uint64_t)(uintptr_t)(buf + 65536);
    w.rkey = omrc_mr_rkey(mr);
    CHECK_EQ(omrc_qp_post_send(a, &w, 1, NULL), 0);
    CHECK_EQ(solo_poll(&s, cq, wcs, 1), 1);
    CHECK_EQ(wcs[0].status, OMRC_WC_SUCCESS);
    CHECK(memcmp(buf, buf + 65536, 65536) == 0);
    CHECK_EQ(omrc_qp_rotate_key(a), 0);
    CHECK_EQ(omrc_qp_rotate_key(NULL), EINVAL);
    w.wr_id = 2;
    CHECK_EQ(omrc_qp_post_send(a, &w, 1, NULL), 0);
    CHECK_EQ(solo_poll(&s, cq, wcs, 1), 1);
    CHECK_EQ(wcs[0].status, OMRC_WC_SUCCESS);
    CHECK_EQ(omrc_qp_destroy(a), 0);
    CHECK_EQ(omrc_qp_destroy(b), 0);
    CHECK_EQ(omrc_mr_dereg(mr), 0);
    CHECK_EQ(omrc_cq_destroy(cq), 0);
    CHECK_EQ(omrc_pd_dealloc(pd), 0);
    CHECK_EQ(omrc_device_close(s.dev), 0);
}

static void test_srq(void) {
    struct solo s;
    struct omrc_pd* pd = NULL;
    struct omrc_cq* cq = NULL;
    struct omrc_srq* srq = NULL;
    struct omrc_srq* bad = NULL;
    struct omrc_qp* a[2] = {NULL, NULL};
    struct omrc_qp* b[2] = {NULL, NULL};
    struct omrc_mr* mr = NULL;
    struct omrc_srq_attr sa, q;
    struct omrc_qp_init_attr init;
    struct omrc_async_event ev[4];
    struct omrc_wc wcs[8];
    static uint8_t buf[8192];
    struct omrc_sge rs[4];
    struct omrc_recv_wr rw[4];
    size_t bad_wr = 99;
    int i, n, recvs = 0;
    if (solo_open(&s, "2") != 0) {
        CHECK(0);
        return;
    }
    CHECK_EQ(omrc_pd_alloc(s.dev, &pd), 0);
    CHECK_EQ(omrc_cq_create(s.dev, 64, &cq), 0);
    omrc_srq_attr_init(&sa);
    CHECK_EQ(sa.max_wr, 256);
    CHECK_EQ(sa.max_sge, 1);
    CHECK_EQ(sa.srq_limit, 0);
    sa.max_wr = 0;
    CHECK_EQ(omrc_srq_create(pd, &sa, -1, &bad), EINVAL);
    CHECK(bad == NULL);
    sa.max_wr = 8;
    sa.srq_limit = 3;
    CHECK_EQ(omrc_srq_create(pd, &sa, 5, &bad), EINVAL); /* no worker 5 */
    CHECK_EQ(omrc_srq_create(pd, &sa, -1, &srq), 0);
    for (i = 0; i < 2; ++i) {
        omrc_qp_init_attr_init(&init);
        CHECK(init.srq == NULL);
        init.send_cq = cq;
        init.recv_cq = cq;
        CHECK_EQ(omrc_qp_create(pd, &init, &a[i]), 0);
        init.srq = srq;
        CHECK_EQ(omrc_qp_create(pd, &init, &b[i]), 0);
        CHECK_EQ(connect_qp(s.dev, a[i], b[i]), 0);
        CHECK_EQ(connect_qp(s.dev, b[i], a[i]), 0);
    }
    for (i = 0; i < 4096; ++i) buf[i] = (uint8_t)(i * 5 + 3);
    CHECK_EQ(omrc_mr_reg(pd, buf, sizeof buf, OMRC_ACCESS_LOCAL_WRITE, &mr), 0);
    for (i = 0; i < 4; ++i) {
        rs[i].addr = (uint64_t)(uintptr_t)(buf + 4096 + i * 1024);
        rs[i].length = 1024;
        rs[i].lkey = omrc_mr_lkey(mr);
        rw[i].wr_id = 70 + (uint64_t)i;
        rw[i].sg_list = &rs[i];
        rw[i].num_sge = 1;
    }
    CHECK_EQ(omrc_qp_post_recv(b[0], rw, 1, &bad_wr), EINVAL); /* its receives come from the SRQ */
    CHECK_EQ(omrc_srq_post_recv(srq, rw, 4, &bad_wr), 0);
    CHECK_EQ(omrc_srq_destroy(srq), EBUSY);
    for (i = 0; i < 4; ++i) {
        struct omrc_sge sge;
        struct omrc_send_wr w;
        sge.addr = (uint64_t)(uintptr_t)(buf + i * 1000);
        sge.length = 1000;
        sge.lkey = omrc_mr_lkey(mr);
        memset(&w, 0, sizeof w);
        w.wr_id = (uint64_t)i;
        w.opcode = OMRC_WR_SEND;
        w.send_flags = OMRC_SEND_SIGNALED;
        w.sg_list = &sge;
        w.num_sge = 1;
        CHECK_EQ(omrc_qp_post_send(a[i % 2], &w, 1, NULL), 0);
    }
    n = solo_poll(&s, cq, wcs, 8);
    CHECK_EQ(n, 8);
    for (i = 0; i < n; ++i) {
        CHECK_EQ(wcs[i].status, OMRC_WC_SUCCESS);
        if (wcs[i].opcode == OMRC_WC_RECV) {
            ++recvs;
            CHECK_EQ(wcs[i].byte_len, 1000);
            CHECK(wcs[i].wr_id >= 70 && wcs[i].wr_id < 74);
        }
    }
    CHECK_EQ(recvs, 4);
    n = omrc_device_poll_async_events(s.dev, ev, 4);
    CHECK_EQ(n, 1); /* fewer than 3 left once the 2nd receive was taken */
    CHECK_EQ(ev[0].type, OMRC_EVENT_SRQ_LIMIT_REACHED);
    CHECK(ev[0].srq == srq);
    CHECK_EQ(omrc_device_poll_async_events(NULL, ev, 4), -EINVAL);
    CHECK_EQ(omrc_srq_query(srq, &q), 0);
    CHECK_EQ(q.max_wr, 8);
    CHECK_EQ(q.srq_limit, 0);
    q.srq_limit = 9;
    CHECK_EQ(omrc_srq_modify(srq, &q, OMRC_SRQ_LIMIT), EINVAL);
    q.max_wr = 16;
    CHECK_EQ(omrc_srq_modify(srq, &q, OMRC_SRQ_MAX_WR), 0);
    CHECK_EQ(omrc_srq_query(srq, &q), 0);
    CHECK_EQ(q.max_wr, 16);
    CHECK_EQ(omrc_pd_dealloc(pd), EBUSY);
    for (i = 0; i < 2; ++i) {
        CHECK_EQ(omrc_qp_destroy(a[i]), 0);
        CHECK_EQ(omrc_qp_destroy(b[i]), 0);
    }
    CHECK_EQ(omrc_srq_destroy(srq), 0);
    CHECK_EQ(omrc_srq_destroy(NULL), EINVAL);
    CHECK_EQ(omrc_mr_dereg(mr), 0);
    CHECK_EQ(omrc_cq_destroy(cq), 0);
    CHECK_EQ(omrc_pd_dealloc(pd), 0);
    CHECK_EQ(omrc_device_close(s.dev), 0);
}

static void test_strings(void) {
    unsigned major = 0, minor = 0, patch = 0;
    CHECK(strcmp(omrc_wc_status_str(OMRC_WC_SUCCESS), "success") == 0);
    CHECK(strcmp(omrc_wc_status_str(OMRC_WC_WR_FLUSH_ERR), "wr_flush_err") == 0);
    CHECK(strcmp(omrc_wc_status_str(OMRC_WC_RETRY_EXC_ERR), "retry_exc_err") == 0);
    CHECK(strcmp(omrc_wc_status_str(OMRC_WC_REM_ACCESS_ERR), "rem_access_err") == 0);
    CHECK(strcmp(omrc_wc_status_str(OMRC_WC_GENERAL_ERR), "general_err") == 0);
    CHECK(strcmp(omrc_wc_status_str(3), "unknown") == 0); /* a gap in ibv_wc_status */
    CHECK(strcmp(omrc_wc_status_str(-1), "unknown") == 0);
    CHECK(strcmp(omrc_wc_status_str(256), "unknown") == 0);
    CHECK(omrc_version() != NULL);
    CHECK_EQ(sscanf(omrc_version(), "%u.%u.%u", &major, &minor, &patch), 3);
}

/* omrc_device_open_config: the file's device, its QP defaults, and the errors. */
static void test_open_config(void) {
    char path[] = "/tmp/omrc_capi_cfgXXXXXX";
    const int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    const char text[] = "[[device]]\nname = \"omrc0\"\ndriver = \"loopback\"\nplanes = 2\n"
                        "[device.qp]\nevs = 16\nmtu = 1024\n"
                        "[[device]]\nname = \"omrc1\"\ndriver = \"loopback\"\n";
    CHECK(write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
    close(fd);
    struct omrc_device* dev = NULL;
    char err[256] = "";
    CHECK_EQ(omrc_device_open_config(path, NULL, &dev, err, sizeof err), 0);
    CHECK(dev != NULL);
    if (dev != NULL) {
        CHECK_EQ(omrc_device_planes(dev), 2);
        struct omrc_qp_defaults d;
        CHECK_EQ(omrc_device_qp_defaults(dev, &d), 0);
        CHECK_EQ(d.evs, 16);
        CHECK_EQ(d.mtu_bytes, 1024);
        CHECK_EQ(omrc_device_close(dev), 0);
    }
    dev = NULL;
    CHECK_EQ(omrc_device_open_config(path, "omrc1", &dev, err, sizeof err), 0);
    if (dev != NULL) CHECK_EQ(omrc_device_close(dev), 0);
    dev = NULL;
    CHECK_EQ(omrc_device_open_config(path, "omrc7", &dev, err, sizeof err), ENOENT);
    CHECK(dev == NULL && strstr(err, "omrc7") != NULL);
    CHECK_EQ(omrc_device_open_config("/nonexistent/omrc.toml", NULL, &dev, err, sizeof err), ENOENT);
    CHECK(strstr(err, "/nonexistent/omrc.toml") != NULL);
    unlink(path);
    CHECK_EQ(omrc_device_open_config(NULL, NULL, &dev, err, sizeof err), EINVAL);
}

/* Workers from C: two engine shards on a private loopback fabric in virtual
 * time (no threads), QPs placed by hint and in turn, a WRITE between QPs of
 * different workers, and the option errors. */
static void test_workers(void) {
    enum { kBytes = 64 * 1024 };
    struct solo s;
    struct omrc_device_options o;
    struct omrc_device* bad = NULL;
    struct omrc_pd* pd = NULL;
    struct omrc_cq* cq = NULL;
    struct omrc_qp* a = NULL;
    struct omrc_qp* b = NULL;
    struct omrc_qp* c = NULL;
    struct omrc_mr* smr = NULL;
    struct omrc_mr* dmr = NULL;
    struct omrc_qp_init_attr init;
    struct omrc_sge sge;
    struct omrc_send_wr wr;
    struct omrc_wc wc[2];
    unsigned char* src = malloc(kBytes);
    unsigned char* dst = calloc(1, kBytes);
    const int cpus_bad[1] = {0};
    size_t bad_wr = 99;
    size_t i;

    CHECK(src != NULL && dst != NULL);
    if (src == NULL || dst == NULL) goto out;
    for (i = 0; i < kBytes; ++i) src[i] = (unsigned char)(i * 7 + 3);

    /* Out of range: 0 or 17 workers; a CPU list that is not one per worker. */
    omrc_device_options_init(&o);
    CHECK_EQ(o.workers, 1);
    CHECK_EQ(o.worker_threads, OMRC_WORKER_THREADS_AUTO);
    o.workers = 0;
    CHECK_EQ(omrc_device_open("loopback", &o, &bad), EINVAL);
    o.workers = 17;
    CHECK_EQ(omrc_device_open("loopback", &o, &bad), EINVAL);
    o.workers = 2;
    o.cpus = cpus_bad;
    o.num_cpus = 1;
    CHECK_EQ(omrc_device_open("loopback", &o, &bad), EINVAL);
    CHECK(bad == NULL);

    s.now_ns = 1000000;
    s.dev = NULL;
    omrc_device_options_init(&o);
    o.seed = 9;
    o.clock = virtual_clock;
    o.clock_ctx = &s;
    o.workers = 2;
    o.worker_threads = OMRC_WORKER_THREADS_NONE;
    CHECK_EQ(omrc_device_open("loopback", &o, &s.dev), 0);
    if (s.dev == NULL) goto out;
    CHECK_EQ(omrc_device_workers(s.dev), 2);
    CHECK(!omrc_device_worker_threads(s.dev));
    CHECK_EQ(omrc_pd_alloc(s.dev, &pd), 0);
    CHECK_EQ(omrc_cq_create(s.dev, 64, &cq), 0);
    omrc_qp_init_attr_init(&init);
    CHECK_EQ(init.worker, -1);
    init.send_cq = cq;
    init.recv_cq = cq;
    init.worker = 1;
    CHECK_EQ(omrc_qp_create(pd, &init, &a), 0);
    init.worker = 0;
    CHECK_EQ(omrc_qp_create(pd, &init, &b), 0);
    init.worker = 2; /* no such worker */
    CHECK_EQ(omrc_qp_create(pd, &init, &c), EINVAL);
    if (a == NULL || b == NULL) goto out;
    CHECK_EQ(omrc_qp_worker(a), 1);
    CHECK_EQ(omrc_qp_worker(b), 0);
    CHECK_EQ((omrc_qp_num(a) >> 12) & 1, 1); /* the QPN names its worker */
    CHECK_EQ((omrc_qp_num(b) >> 12) & 1, 0);
    CHECK_EQ(omrc_mr_reg(pd, src, kBytes, OMRC_ACCESS_LOCAL_WRITE, &smr), 0);
    CHECK_EQ(omrc_mr_reg(pd, dst, kBytes, OMRC_ACCESS_LOCAL_WRITE | OMRC_ACCESS_REMOTE_WRITE, &dmr), 0);
    if (smr == NULL || dmr == NULL) goto out;
    CHECK_EQ(connect_qp(s.dev, a, b), 0);
    CHECK_EQ(connect_qp(s.dev, b, a), 0);

    memset(&wr, 0, sizeof wr);
    sge.addr = (uint64_t)(uintptr_t)src;
    sge.length = kBytes;
    sge.lkey = omrc_mr_lkey(smr);
    wr.wr_id = 77;
    wr.opcode = OMRC_WR_RDMA_WRITE;
    wr.send_flags = OMRC_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.remote_addr = (uint64_t)(uintptr_t)dst;
    wr.rkey = omrc_mr_rkey(dmr);
    CHECK_EQ(omrc_qp_post_send(a, &wr, 1, &bad_wr), 0);
    CHECK_EQ(solo_poll(&s, cq, wc, 1), 1);
    CHECK_EQ(wc[0].wr_id, 77);
    CHECK_EQ(wc[0].status, OMRC_WC_SUCCESS);
    CHECK(memcmp(src, dst, kBytes) == 0);

out:
    if (dmr != NULL) CHECK_EQ(omrc_mr_dereg(dmr), 0);
    if (smr != NULL) CHECK_EQ(omrc_mr_dereg(smr), 0);
    if (c != NULL) CHECK_EQ(omrc_qp_destroy(c), 0);
    if (b != NULL) CHECK_EQ(omrc_qp_destroy(b), 0);
    if (a != NULL) CHECK_EQ(omrc_qp_destroy(a), 0);
    if (cq != NULL) CHECK_EQ(omrc_cq_destroy(cq), 0);
    if (pd != NULL) CHECK_EQ(omrc_pd_dealloc(pd), 0);
    if (s.dev != NULL) CHECK_EQ(omrc_device_close(s.dev), 0);
    free(src);
    free(dst);
}

/* The connection manager through the C API: a QP connects to a service of
 * its own device (the CM's messages loop through the loopback fabric), the
 * listener accepts with its buffer's address and rkey as private data, a
 * WRITE lands, a disconnect ends both; refusals and bad arguments. */
static int cm_wait(struct solo* s, struct omrc_cm_event* ev, int want_type, uint32_t id) {
    long pass;
    for (pass = 0; pass < 1000000; ++pass) {
        uint64_t next;
        int n;
        if (omrc_device_progress(s->dev) < 0) return 0;
        n = omrc_cm_poll(s->dev, ev, 1);
        if (n < 0) return 0;
        if (n == 1 && ev->type == want_type && (id == 0 || ev->id == id)) return 1;
        if (n == 1) continue;
        next = omrc_device_next_wakeup_ns(s->dev);
        if (next == UINT64_MAX) return 0;
        if (next > s->now_ns) s->now_ns = next;
    }
    return 0;
}

static void test_cm(void) {
    enum { kBytes = 64 * 1024 };
    const uint64_t service = 0x4F4D5243000000C1ull;
    struct solo s;
    struct omrc_pd* pd = NULL;
    struct omrc_cq* cq = NULL;
    struct omrc_qp* a = NULL;
    struct omrc_qp* b = NULL;
    struct omrc_qp* c = NULL;
    struct omrc_mr* smr = NULL;
    struct omrc_mr* dmr = NULL;
    struct omrc_qp_init_attr init;
    struct omrc_cm_listen_options lo;
    struct omrc_cm_conn_params p;
    struct omrc_cm_conn_params acc;
    struct omrc_cm_event ev;
    struct omrc_sge sge;
    struct omrc_send_wr wr;
    struct omrc_wc wc;
    unsigned char* src = malloc(kBytes);
    unsigned char* dst = calloc(1, kBytes);
    uint32_t id_a = 0, id_b = 0, id_c = 0, rkey = 0;
    uint64_t raddr = 0;
    size_t i;
    const uint8_t why[2] = {7, 9};

    CHECK(src != NULL && dst != NULL);
    if (src == NULL || dst == NULL) goto out;
    for (i = 0; i < kBytes; ++i) src[i] = (unsigned char)(i * 29 + 3);
    CHECK_EQ(solo_open(&s, "4"), 0);
    if (s.dev == NULL) goto out;
    CHECK_EQ(omrc_pd_alloc(s.dev, &pd), 0);
    CHECK_EQ(omrc_cq_create(s.dev, 64, &cq), 0);
    omrc_qp_init_attr_init(&init);
    init.send_cq = cq;
    init.recv_cq = cq;
    CHECK_EQ(omrc_qp_create(pd, &init, &a), 0);
    CHECK_EQ(omrc_qp_create(pd, &init, &b), 0);
    CHECK_EQ(omrc_qp_create(pd, &init, &c), 0);
    CHECK_EQ(omrc_mr_reg(pd, src, kBytes, OMRC_ACCESS_LOCAL_WRITE, &smr), 0);
    CHECK_EQ(omrc_mr_reg(pd, dst, kBytes, OMRC_ACCESS_LOCAL_WRITE | OMRC_ACCESS_REMOTE_WRITE, &dmr), 0);
    if (a == NULL || b == NULL || c == NULL || smr == NULL || dmr == NULL) goto out;

    omrc_cm_listen_options_init(&lo);
    CHECK_EQ(lo.backlog, 128);
    CHECK(lo.cookies);
    CHECK_EQ(omrc_cm_listen(NULL, service, &lo), EINVAL);
    CHECK_EQ(omrc_cm_listen(s.dev, service, &lo), 0);
    CHECK_EQ(omrc_cm_listen(s.dev, service, NULL), EADDRINUSE);

    omrc_cm_conn_params_init(&p);
    CHECK_EQ(p.mtu_bytes, 4096);
    CHECK_EQ(p.encryption, OMRC_ENCRYPTION_DEVICE_DEFAULT);
    p.service_id = service;
    CHECK_EQ(omrc_device_get_address(s.dev, &p.peer), 0);
    p.private_len = OMRC_CM_PRIVATE_DATA_MAX + 1;
    CHECK_EQ(omrc_cm_connect(a, &p, &id_a), EINVAL);
    p.private_len = 0;
    CHECK_EQ(omrc_cm_connect(a, NULL, &id_a), EINVAL);
    CHECK_EQ(omrc_cm_connect(a, &p, &id_a), 0);

    /* The request: accepted on b with dst's address and rkey. */
    CHECK(cm_wait(&s, &ev, OMRC_CM_EVENT_CONNECT_REQUEST, 0));
    CHECK_EQ(ev.service_id, service);
    CHECK(ev.qp == NULL);
    id_b = ev.id;
    omrc_cm_conn_params_init(&acc);
    raddr = (uint64_t)(uintptr_t)dst;
    rkey = omrc_mr_rkey(dmr);
    memcpy(acc.private_data, &raddr, 8);
    memcpy(acc.private_data + 8, &rkey, 4);
    acc.private_len = 12;
    CHECK_EQ(omrc_cm_reject(s.dev, id_b, NULL, 0, OMRC_CM_REASON_BUSY), EINVAL); /* not a reason to give */
    CHECK_EQ(omrc_cm_accept(s.dev, id_b, b, &acc), 0);
    CHECK_EQ(omrc_qp_get_state(b), OMRC_QPS_RTS);
    CHECK(cm_wait(&s, &ev, OMRC_CM_EVENT_ESTABLISHED, id_a));
    CHECK(ev.qp == a);
    CHECK_EQ(ev.private_len, 12);
    CHECK(memcmp(ev.private_data, acc.private_data, 12) == 0);
    CHECK_EQ(omrc_qp_get_state(a), OMRC_QPS_RTS);

    /* A WRITE on the connection. */
    memset(&wr, 0, sizeof wr);
    sge.addr = (uint64_t)(uintptr_t)src;
    sge.length = kBytes;
    sge.lkey = omrc_mr_lkey(smr);
    wr.wr_id = 41;
    wr.opcode = OMRC_WR_RDMA_WRITE;
    wr.send_flags = OMRC_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    memcpy(&wr.remote_addr, ev.private_data, 8);
    memcpy(&wr.rkey, ev.private_data + 8, 4);
    CHECK_EQ(omrc_qp_post_send(a, &wr, 1, NULL), 0);
    CHECK_EQ(solo_poll(&s, cq, &wc, 1), 1);
    CHECK_EQ(wc.wr_id, 41);
    CHECK_EQ(wc.status, OMRC_WC_SUCCESS);
    CHECK(memcmp(src, dst, kBytes) == 0);

    /* A second request, refused with private data. */
    CHECK_EQ(omrc_cm_connect(c, &p, &id_c), 0);
    CHECK(cm_wait(&s, &ev, OMRC_CM_EVENT_CONNECT_REQUEST, 0));
    CHECK_EQ(omrc_cm_reject(s.dev, ev.id, why, sizeof why, OMRC_CM_REASON_NO_RESOURCES), 0);
    CHECK_EQ(omrc_cm_reject(s.dev, ev.id, why, sizeof why, OMRC_CM_REASON_CONSUMER), ENOENT);
    CHECK(cm_wait(&s, &ev, OMRC_CM_EVENT_REJECTED, id_c));
    CHECK_EQ(ev.reason, OMRC_CM_REASON_NO_RESOURCES);
    CHECK(ev.qp == c);
    CHECK_EQ(ev.private_len, 2);
    CHECK_EQ(ev.private_data[1], 9);
    CHECK_EQ(omrc_qp_get_state(c), OMRC_QPS_INIT);

    /* The end: both sides told, both QPs in ERR. */
    CHECK_EQ(omrc_cm_disconnect(s.dev, id_a), 0);
    CHECK_EQ(omrc_cm_disconnect(s.dev, id_a), ENOENT);
    CHECK(cm_wait(&s, &ev, OMRC_CM_EVENT_DISCONNECTED, id_b));
    CHECK(ev.qp == b);
    CHECK_EQ(omrc_qp_get_state(b), OMRC_QPS_ERR);
    CHECK_EQ(omrc_qp_get_state(a), OMRC_QPS_ERR);
    CHECK_EQ(omrc_cm_unlisten(s.dev, service), 0);
    CHECK_EQ(omrc_cm_unlisten(s.dev, service), ENOENT);
    CHECK_EQ(omrc_cm_poll(s.dev, NULL, 1), -EINVAL);
    CHECK_EQ(omrc_cm_poll(NULL, &ev, 1), -EINVAL);

out:
    if (dmr != NULL) CHECK_EQ(omrc_mr_dereg(dmr), 0);
    if (smr != NULL) CHECK_EQ(omrc_mr_dereg(smr), 0);
    if (c != NULL) CHECK_EQ(omrc_qp_destroy(c), 0);
    if (b != NULL) CHECK_EQ(omrc_qp_destroy(b), 0);
    if (a != NULL) CHECK_EQ(omrc_qp_destroy(a), 0);
    if (cq != NULL) CHECK_EQ(omrc_cq_destroy(cq), 0);
    if (pd != NULL) CHECK_EQ(omrc_pd_dealloc(pd), 0);
    if (s.dev != NULL) CHECK_EQ(omrc_device_close(s.dev), 0);
    free(src);
    free(dst);
}

int main(void) {
    test_open_errors();
    test_open_config();
    test_defaults();
    test_device();
    test_lifecycle();
    test_qp_states();
    test_transfer();
    test_srq();
    test_encryption();
    test_strings();
    test_workers();
    test_cm();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
