/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The C API (omrc/omrc.h) from a C program: one loopback device (its own
 * private fabric, 8 planes, real clock), two QPs connected to each other,
 * 1 MiB written with RDMA WRITEs and a final WRITE_WITH_IMM, completions
 * polled, the bytes checked. Exit status 0 when byte-exact.
 *
 *   c_write
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omrc/omrc.h>

enum {
    kBytes = 1 << 20, /* 1 MiB */
    kWrites = 16,     /* the last one WRITE_WITH_IMM */
    kChunk = kBytes / kWrites
};

static const uint32_t kImm = 0x0DDC0FFEu;
static const uint64_t kTimeoutNs = 10ull * 1000 * 1000 * 1000;

/* Prints what failed and returns 1 when rc is an error. */
static int failed(int rc, const char* what) {
    if (rc == 0) return 0;
    fprintf(stderr, "c_write: %s: %s\n", what, strerror(rc));
    return 1;
}

/* RESET -> INIT -> RTR -> RTS, towards `peer` on the same device. */
static int connect_qp(struct omrc_device* dev, struct omrc_qp* qp, const struct omrc_qp* peer) {
    struct omrc_qp_attr attr;
    int rc;
    omrc_qp_attr_init(&attr);
    attr.qp_state = OMRC_QPS_INIT;
    attr.qp_access_flags = OMRC_ACCESS_LOCAL_WRITE | OMRC_ACCESS_REMOTE_WRITE;
    if ((rc = omrc_qp_modify(qp, &attr, OMRC_QP_STATE | OMRC_QP_ACCESS_FLAGS)) != 0) return rc;
    attr.qp_state = OMRC_QPS_RTR;
    attr.dest_qp_num = omrc_qp_num(peer);
    attr.dest_conn_id = omrc_qp_conn_id(peer);
    if ((rc = omrc_device_get_address(dev, &attr.peer)) != 0) return rc;
    rc = omrc_qp_modify(qp, &attr, OMRC_QP_STATE | OMRC_QP_PATH | OMRC_QP_DEST_QPN | OMRC_QP_RQ_PSN | OMRC_QP_MTU);
    if (rc != 0) return rc;
    /* The device runs on the real clock: a generous retry timeout keeps a
     * descheduled process (a loaded machine, valgrind) from giving up. */
    attr.qp_state = OMRC_QPS_RTS;
    attr.timeout_ns = 500ull * 1000 * 1000;
    return omrc_qp_modify(qp, &attr, OMRC_QP_STATE | OMRC_QP_SQ_PSN | OMRC_QP_TIMEOUT);
}

int main(void) {
    struct omrc_device* dev = NULL;
    struct omrc_pd* pd = NULL;
    struct omrc_cq* cq = NULL;
    struct omrc_qp* a = NULL;
    struct omrc_qp* b = NULL;
    struct omrc_mr* smr = NULL;
    struct omrc_mr* dmr = NULL;
    struct omrc_qp_init_attr init;
    struct omrc_sge sge[kWrites];
    struct omrc_send_wr wr[kWrites];
    struct omrc_recv_wr rwr;
    struct omrc_wc wc[8];
    unsigned char* src = malloc(kBytes);
    unsigned char* dst = calloc(1, kBytes);
    int sends = 0, recvs = 0, errors = 0, status = 1, i;
    uint32_t imm = 0, imm_len = 0;
    uint64_t start, deadline;

    if (src == NULL || dst == NULL) {
        fprintf(stderr, "c_write: out of memory\n");
        goto out;
    }
    for (i = 0; i < kBytes; ++i) src[i] = (unsigned char)(i * 7 + (i >> 12));

    if (failed(omrc_device_open("loopback", NULL, &dev), "omrc_device_open")) goto out;
    if (failed(omrc_pd_alloc(dev, &pd), "omrc_pd_alloc")) goto out;
    if (failed(omrc_cq_create(dev, 64, &cq), "omrc_cq_create")) goto out;
    omrc_qp_init_attr_init(&init);
    init.send_cq = init.recv_cq = cq;
    init.cap.max_send_wr = kWrites;
    if (failed(omrc_qp_create(pd, &init, &a), "omrc_qp_create")) goto out;
    if (failed(omrc_qp_create(pd, &init, &b), "omrc_qp_create")) goto out;
    if (failed(connect_qp(dev, a, b), "connecting QP a")) goto out;
    if (failed(connect_qp(dev, b, a), "connecting QP b")) goto out;
    if (failed(omrc_mr_reg(pd, src, kBytes, OMRC_ACCESS_LOCAL_WRITE, &smr), "omrc_mr_reg")) goto out;
    if (failed(omrc_mr_reg(pd, dst, kBytes, OMRC_ACCESS_LOCAL_WRITE | OMRC_ACCESS_REMOTE_WRITE, &dmr), "omrc_mr_reg"))
        goto out;

    /* The WRITE_WITH_IMM consumes a receive (no SGE needed: the data goes to its RETH address). */
    memset(&rwr, 0, sizeof rwr);
    rwr.wr_id = 100;
    if (failed(omrc_qp_post_recv(b, &rwr, 1, NULL), "omrc_qp_post_recv")) goto out;

    memset(wr, 0, sizeof wr);
    for (i = 0; i < kWrites; ++i) {
        sge[i].addr = (uint64_t)(uintptr_t)(src + (size_t)i * kChunk);
        sge[i].length = kChunk;
        sge[i].lkey = omrc_mr_lkey(smr);
        wr[i].wr_id = (uint64_t)i;
        wr[i].opcode = i == kWrites - 1 ? OMRC_WR_RDMA_WRITE_WITH_IMM : OMRC_WR_RDMA_WRITE;
        wr[i].send_flags = OMRC_SEND_SIGNALED;
        wr[i].sg_list = &sge[i];
        wr[i].num_sge = 1;
        wr[i].remote_addr = (uint64_t)(uintptr_t)omrc_mr_addr(dmr) + (uint64_t)i * kChunk;
        wr[i].rkey = omrc_mr_rkey(dmr);
        wr[i].imm_data = kImm;
    }
    {
        size_t bad = 0;
        int rc = omrc_qp_post_send(a, wr, kWrites, &bad);
        if (rc != 0) {
            fprintf(stderr, "c_write: omrc_qp_post_send: WR %zu: %s\n", bad, strerror(rc));
            goto out;
        }
    }

    /* Nothing happens outside omrc_device_progress: drive it, poll the CQ. */
    start = omrc_device_now_ns(dev);
    deadline = start + kTimeoutNs;
    while (sends < kWrites || recvs < 1) {
        int n;
        if (omrc_device_progress(dev) < 0 || omrc_device_now_ns(dev) > deadline) {
            fprintf(stderr, "c_write: %d of %d WRITEs and %d receive completed before the deadline\n", sends,
                    kWrites, recvs);
            goto out;
        }
        n = omrc_cq_poll(cq, wc, (int)(sizeof wc / sizeof wc[0]));
        for (i = 0; i < n; ++i) {
            if (wc[i].status != OMRC_WC_SUCCESS) {
                fprintf(stderr, "c_write: WR %llu: %s\n", (unsigned long long)wc[i].wr_id,
                        omrc_wc_status_str(wc[i].status));
                ++errors;
            }
            if (wc[i].opcode == OMRC_WC_RECV_RDMA_WITH_IMM) {
                ++recvs;
                imm = (wc[i].wc_flags & OMRC_WC_WITH_IMM) ? wc[i].imm_data : 0;
                imm_len = wc[i].byte_len;
            } else {
                ++sends;
            }
        }
    }
    if (errors == 0 && imm == kImm && imm_len == kChunk && memcmp(src, dst, kBytes) == 0) {
        printf("c_write: %d bytes in %d RDMA WRITEs (the last with immediate 0x%08x, %u bytes) over %u planes "
               "in %.3f ms: byte-exact\n",
               kBytes, kWrites, (unsigned)imm, (unsigned)imm_len, (unsigned)omrc_device_planes(dev),
               (double)(omrc_device_now_ns(dev) - start) / 1e6);
        status = 0;
    } else {
        fprintf(stderr, "c_write: %d error completions, immediate 0x%08x (%u bytes), destination %s\n", errors,
                (unsigned)imm, (unsigned)imm_len, memcmp(src, dst, kBytes) == 0 ? "equal" : "DIFFERS");
    }

out:
    /* Children before parents; every release checked. */
    if (a != NULL && failed(omrc_qp_destroy(a), "omrc_qp_destroy")) status = 1;
    if (b != NULL && failed(omrc_qp_destroy(b), "omrc_qp_destroy")) status = 1;
    if (smr != NULL && failed(omrc_mr_dereg(smr), "omrc_mr_dereg")) status = 1;
    if (dmr != NULL && failed(omrc_mr_dereg(dmr), "omrc_mr_dereg")) status = 1;
    if (cq != NULL && failed(omrc_cq_destroy(cq), "omrc_cq_destroy")) status = 1;
    if (pd != NULL && failed(omrc_pd_dealloc(pd), "omrc_pd_dealloc")) status = 1;
    if (dev != NULL && failed(omrc_device_close(dev), "omrc_device_close")) status = 1;
    free(src);
    free(dst);
    return status;
}
