/* SPDX-License-Identifier: BSD-3-Clause */
/* The ibverbs API over OpenMRC, from a C program built against the system's
 * <infiniband/verbs.h> and linked with -libverbs: run with LD_LIBRARY_PATH at
 * OpenMRC's libibverbs.so.1, it proves the ABI (struct layouts, inline calls
 * through ibv_context_ops and verbs_context, symbol versions) as well as the
 * behaviour. One loopback device (OMRC_IBV_CONFIG names it), two RC QPs
 * connected to each other. Prints "N passed, M failed"; exit 1 on failure. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int passed, failed;
#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (cond) {                                                                   \
            ++passed;                                                                 \
        } else {                                                                      \
            ++failed;                                                                 \
            fprintf(stderr, "%s:%d: CHECK(%s) failed (errno %d)\n", __FILE__, __LINE__, #cond, errno); \
        }                                                                             \
    } while (0)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Polls until n completions arrived or 10 s passed; returns how many. */
static int poll_n(struct ibv_cq* cq, struct ibv_wc* wc, int n) {
    int got = 0;
    const double end = now_s() + 10;
    while (got < n && now_s() < end) {
        int r = ibv_poll_cq(cq, n - got, wc + got);
        if (r < 0) return -1;
        got += r;
    }
    return got;
}

static int to_init(struct ibv_qp* qp) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int to_rtr_rts(struct ibv_qp* qp, uint32_t dest_qpn, union ibv_gid gid, uint16_t lid, uint32_t psn) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_4096;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = gid;
    a.ah_attr.grh.sgid_index = 0;
    a.ah_attr.grh.hop_limit = 255;
    a.ah_attr.dlid = lid;
    a.ah_attr.port_num = 1;
    int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc) return rc;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = psn;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

int main(void) {
    int n = -1;
    struct ibv_device** list = ibv_get_device_list(&n);
    CHECK(list != NULL && n >= 1);
    if (list == NULL || n < 1) {
        printf("%d passed, %d failed\n", passed, failed);
        return 1;
    }
    CHECK(strcmp(ibv_get_device_name(list[0]), "omrc0") == 0);
    CHECK(ibv_get_device_guid(list[0]) != 0);
    CHECK(list[n] == NULL);
    struct ibv_context* ctx = ibv_open_device(list[0]);
    CHECK(ctx != NULL);
    /* A second open of an open device shares its context; each open needs its close. */
    struct ibv_context* again = ibv_open_device(list[0]);
    CHECK(again == ctx);
    CHECK(ibv_close_device(again) == 0);
    ibv_free_device_list(list);
    if (ctx == NULL) return 1;

    /* Device and port queries: the exported symbol and verbs.h's inline path. */
    struct ibv_device_attr da;
    CHECK(ibv_query_device(ctx, &da) == 0);
    CHECK(strncmp(da.fw_ver, "OpenMRC", 7) == 0);
    CHECK(da.phys_port_cnt == 1 && da.max_qp_rd_atom == 16 && da.max_qp_init_rd_atom == 16 && da.atomic_cap == IBV_ATOMIC_NONE);
    CHECK(da.vendor_id == 0xFFFFFF); /* a software device, as rxe reports */
    struct ibv_device_attr_ex dax;
    CHECK(ibv_query_device_ex(ctx, NULL, &dax) == 0 && dax.orig_attr.phys_port_cnt == 1);
    struct ibv_port_attr pa;
    CHECK(ibv_query_port(ctx, 1, &pa) == 0);
    CHECK(pa.state == IBV_PORT_ACTIVE && pa.link_layer == IBV_LINK_LAYER_ETHERNET);
    CHECK(pa.active_mtu == IBV_MTU_4096 && pa.gid_tbl_len == 1);
    CHECK(ibv_query_port(ctx, 2, &pa) != 0);
    union ibv_gid gid;
    CHECK(ibv_query_gid(ctx, 1, 0, &gid) == 0);
    CHECK(ibv_query_gid(ctx, 1, 1, &gid) != 0);
    CHECK(ibv_query_gid(ctx, 1, 0, &gid) == 0);
    static const uint8_t zero_iid[8];
    CHECK(memcmp(gid.raw + 8, zero_iid, 8) != 0); /* a zero interface id reads as an empty slot */
    struct ibv_gid_entry ge;
    CHECK(ibv_query_gid_ex(ctx, 1, 0, &ge, 0) == 0 && ge.gid_type == IBV_GID_TYPE_ROCE_V2);
    CHECK(memcmp(ge.gid.raw, gid.raw, 16) == 0);
    __be16 pkey;
    CHECK(ibv_query_pkey(ctx, 1, 0, &pkey) == 0 && pkey == htons(0xFFFF));
    CHECK(strcmp(ibv_wc_status_str(IBV_WC_SUCCESS), "success") == 0);
    CHECK(ibv_rate_to_mbps(IBV_RATE_100_GBPS) > 100000);

    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    CHECK(pd != NULL);
    struct ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
    CHECK(ch != NULL && ch->fd >= 0);
    struct ibv_cq* scq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
    struct ibv_cq* rcq = ibv_create_cq(ctx, 256, (void*)0x1234, ch, 0);
    CHECK(scq != NULL && rcq != NULL);
    CHECK(ibv_destroy_comp_channel(ch) == EBUSY);  /* a CQ uses it */

    enum { kBytes = 1 << 20 };
    uint8_t* src = aligned_alloc(4096, kBytes);
    uint8_t* dst = aligned_alloc(4096, kBytes);
    for (int i = 0; i < kBytes; ++i) src[i] = (uint8_t)(i * 7 + 3), dst[i] = 0;
    struct ibv_mr* smr = ibv_reg_mr(pd, src, kBytes, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr* dmr = ibv_reg_mr(pd, dst, kBytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                        IBV_ACCESS_RELAXED_ORDERING);
    CHECK(smr != NULL && dmr != NULL);
    CHECK(ibv_reg_mr(pd, src, kBytes, IBV_ACCESS_MW_BIND) == NULL && errno == EOPNOTSUPP);
    CHECK(ibv_dealloc_pd(pd) == EBUSY);  /* MRs are alive */

    struct ibv_qp_init_attr ia;
    memset(&ia, 0, sizeof ia);
    ia.send_cq = scq;
    ia.recv_cq = rcq;
    ia.qp_type = IBV_QPT_UD;
    ia.cap.max_send_wr = 64;
    ia.cap.max_recv_wr = 64;
    ia.cap.max_send_sge = 2;
    ia.cap.max_recv_sge = 2;
    errno = 0;
    CHECK(ibv_create_qp(pd, &ia) == NULL && errno == EOPNOTSUPP);
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_inline_data = 100000; /* clamped and reported back */
    struct ibv_qp* a = ibv_create_qp(pd, &ia);
    CHECK(a != NULL && ia.cap.max_inline_data == 4096);
    struct ibv_qp_init_attr_ex iax;
    memset(&iax, 0, sizeof iax);
    iax.send_cq = scq;
    iax.recv_cq = rcq;
    iax.qp_type = IBV_QPT_RC;
    iax.cap.max_send_wr = 64;
    iax.cap.max_recv_wr = 64;
    iax.cap.max_send_sge = 1;
    iax.cap.max_recv_sge = 1;
    iax.cap.max_inline_data = 64;
    iax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    iax.pd = pd;
    iax.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
    errno = 0;
    CHECK(ibv_create_qp_ex(ctx, &iax) == NULL && errno == EOPNOTSUPP);
    iax.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND;
    /* create_flags: the bit is accepted with no flag set, any flag refused. */
    iax.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
    iax.create_flags = IBV_QP_CREATE_SCATTER_FCS;
    errno = 0;
    CHECK(ibv_create_qp_ex(ctx, &iax) == NULL && errno == EOPNOTSUPP);
    iax.create_flags = 0;
    struct ibv_qp* b = ibv_create_qp_ex(ctx, &iax);
    CHECK(b != NULL);
    if (a == NULL || b == NULL) return 1;
    CHECK(a->qp_num != b->qp_num && a->state == IBV_QPS_RESET);

    struct ibv_port_attr port;
    CHECK(ibv_query_port(ctx, 1, &port) == 0);
    CHECK(to_init(a) == 0 && to_init(b) == 0);
    CHECK(to_rtr_rts(a, b->qp_num, gid, port.lid, 100) == 0);
    CHECK(to_rtr_rts(b, a->qp_num, gid, port.lid, 100) == 0);
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qia;
    CHECK(ibv_query_qp(a, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, &qia) == 0);
    CHECK(qa.qp_state == IBV_QPS_RTS && qa.dest_qp_num == b->qp_num && qia.qp_type == IBV_QPT_RC);

    /* Unsupported opcodes fail at post with EOPNOTSUPP and name the WR. */
    struct ibv_sge sge = {(uintptr_t)src, 64, smr->lkey};
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = (uintptr_t)dst;
    wr.wr.rdma.rkey = dmr->rkey;
    CHECK(ibv_post_send(a, &wr, &bad) == EOPNOTSUPP && bad == &wr);
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    CHECK(ibv_post_send(a, &wr, &bad) == EOPNOTSUPP);

    /* A receive for the WRITE_WITH_IMM, and an armed CQ on the channel. */
    struct ibv_recv_wr rwr, *rbad = NULL;
    memset(&rwr, 0, sizeof rwr);
    rwr.wr_id = 77;
    CHECK(ibv_post_recv(b, &rwr, &rbad) == 0);
    CHECK(ibv_req_notify_cq(rcq, 0) == 0);

    /* 1 MiB as 16 WRITEs in one chained post, the last with an immediate. */
    struct ibv_send_wr wrs[16];
    struct ibv_sge sges[16];
    for (int i = 0; i < 16; ++i) {
        const int chunk = kBytes / 16;
        sges[i] = (struct ibv_sge){(uintptr_t)src + i * chunk, chunk, smr->lkey};
        memset(&wrs[i], 0, sizeof wrs[i]);
        wrs[i].wr_id = 1000 + i;
        wrs[i].opcode = i == 15 ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
        wrs[i].send_flags = IBV_SEND_SIGNALED;
        wrs[i].sg_list = &sges[i];
        wrs[i].num_sge = 1;
        wrs[i].imm_data = htonl(0xC0FFEE);
        wrs[i].wr.rdma.remote_addr = (uintptr_t)dst + i * chunk;
        wrs[i].wr.rdma.rkey = dmr->rkey;
        wrs[i].next = i == 15 ? NULL : &wrs[i + 1];
    }
    CHECK(ibv_resize_cq(scq, 0) == EINVAL && ibv_resize_cq(scq, (1 << 20) + 1) == EINVAL);
    CHECK(ibv_post_send(a, wrs, &bad) == 0);
    /* Below the completions waiting, a resize is refused (once all 16 are in). */
    int resized = 0;
    for (int tries = 0; tries < 10000 && (resized = ibv_resize_cq(scq, 15)) == 0; ++tries) usleep(1000);
    CHECK(resized == EINVAL);
    CHECK(ibv_resize_cq(scq, 16) == 0 && scq->cqe == 16);
    CHECK(ibv_resize_cq(scq, 256) == 0 && scq->cqe == 256);
    struct ibv_wc wc[16];
    CHECK(poll_n(scq, wc, 16) == 16);
    int ok = 1;
    for (int i = 0; i < 16; ++i) ok &= wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RDMA_WRITE;
    CHECK(ok);

    /* The completion event, then the receive completion with the immediate. */
    struct pollfd pfd = {ch->fd, POLLIN, 0};
    CHECK(poll(&pfd, 1, 10000) == 1);
    struct ibv_cq* ev_cq = NULL;
    void* ev_ctx = NULL;
    CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == rcq && ev_ctx == (void*)0x1234);
    ibv_ack_cq_events(ev_cq, 1);
    CHECK(rcq->comp_events_completed == 1);
    CHECK(poll_n(rcq, wc, 1) == 1);
    CHECK(wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc[0].wr_id == 77);
    CHECK((wc[0].wc_flags & IBV_WC_WITH_IMM) && wc[0].imm_data == htonl(0xC0FFEE));
    CHECK(wc[0].byte_len == kBytes / 16 && wc[0].qp_num == b->qp_num);
    CHECK(memcmp(src, dst, kBytes) == 0);

    /* SEND_WITH_IMM, solicited, from a into a receive at b; a solicited-only arm fires on it. */
    memset(dst, 0, 8192);
    for (int i = 0; i < 5000; ++i) src[i] = (uint8_t)(i * 7 + 3);
    struct ibv_sge rsge = {(uintptr_t)dst, 8192, dmr->lkey};
    rwr.wr_id = 88;
    rwr.sg_list = &rsge;
    rwr.num_sge = 1;
    CHECK(ibv_post_recv(b, &rwr, &rbad) == 0);
    CHECK(ibv_req_notify_cq(rcq, 1) == 0);
    struct ibv_sge ssge = {(uintptr_t)src, 5000, smr->lkey};
    memset(&wr, 0, sizeof wr);
    wr.wr_id = 9;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
    wr.sg_list = &ssge;
    wr.num_sge = 1;
    wr.imm_data = htonl(0xABC);
    CHECK(ibv_post_send(a, &wr, &bad) == 0);
    CHECK(poll_n(scq, wc, 1) == 1);
    CHECK(wc[0].wr_id == 9 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_SEND);
    CHECK(poll(&pfd, 1, 10000) == 1);
    CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == rcq);
    ibv_ack_cq_events(ev_cq, 1);
    CHECK(poll_n(rcq, wc, 1) == 1);
    CHECK(wc[0].wr_id == 88 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV);
    CHECK(wc[0].byte_len == 5000 && (wc[0].wc_flags & IBV_WC_WITH_IMM) && wc[0].imm_data == htonl(0xABC));
    CHECK(memcmp(src, dst, 5000) == 0 && dst[5000] == 0);

    /* RDMA READ from a: b's dst (an MR with REMOTE_READ) back into a fresh buffer, over two SGEs. */
    uint8_t* back = aligned_alloc(4096, 8192);
    memset(back, 0, 8192);
    struct ibv_mr* bmr = ibv_reg_mr(pd, back, 8192, IBV_ACCESS_LOCAL_WRITE);
    struct ibv_mr* rmr = ibv_reg_mr(pd, dst, kBytes, IBV_ACCESS_REMOTE_READ);
    CHECK(bmr != NULL && rmr != NULL);
    struct ibv_sge rd[2] = {{(uintptr_t)back, 1000, bmr->lkey}, {(uintptr_t)back + 4096, 4000, bmr->lkey}};
    memset(&wr, 0, sizeof wr);
    wr.wr_id = 10;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = rd;
    wr.num_sge = 2;
    wr.wr.rdma.remote_addr = (uintptr_t)dst;
    wr.wr.rdma.rkey = rmr->rkey;
    CHECK(ibv_post_send(a, &wr, &bad) == 0);
    CHECK(poll_n(scq, wc, 1) == 1);
    CHECK(wc[0].wr_id == 10 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RDMA_READ);
    CHECK(wc[0].byte_len == 5000);
    CHECK(memcmp(back, src, 1000) == 0 && back[1000] == 0 && memcmp(back + 4096, src + 1000, 4000) == 0);
    /* A READ into an MR without LOCAL_WRITE is refused at post. */
    struct ibv_mr* romr = ibv_reg_mr(pd, back, 8192, 0);
    CHECK(romr != NULL);
    rd[0].lkey = romr->lkey;
    wr.num_sge = 1;
    CHECK(ibv_post_send(a, &wr, &bad) == EINVAL && bad == &wr);
    CHECK(ibv_dereg_mr(romr) == 0 && ibv_dereg_mr(bmr) == 0 && ibv_dereg_mr(rmr) == 0);
    free(back);

    /* The new post API (ibv_qp_ex) on b, towards a's side: src gets dst back shifted. */
    struct ibv_qp_ex* bx = ibv_qp_to_qp_ex(b);
    CHECK(bx != NULL);
    for (int i = 0; i < kBytes; ++i) dst[i] = (uint8_t)(i * 13 + 1);
    struct ibv_mr* smr2 = ibv_reg_mr(pd, src, kBytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    CHECK(smr2 != NULL);
    ibv_wr_start(bx);
    bx->wr_id = 5;
    bx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(bx, smr2->rkey, (uintptr_t)src);
    ibv_wr_set_sge(bx, dmr->lkey, (uintptr_t)dst, kBytes / 2);
    bx->wr_id = 6;
    ibv_wr_rdma_write(bx, smr2->rkey, (uintptr_t)src + kBytes / 2);
    ibv_wr_set_sge(bx, dmr->lkey, (uintptr_t)dst + kBytes / 2, kBytes / 2);
    bx->wr_id = 7;
    ibv_wr_rdma_write(bx, smr2->rkey, (uintptr_t)src);
    char hello[16] = "inline-hello";
    ibv_wr_set_inline_data(bx, hello, sizeof hello);
    CHECK(ibv_wr_complete(bx) == 0);
    CHECK(poll_n(scq, wc, 3) == 3);
    CHECK(wc[0].wr_id == 5 && wc[1].wr_id == 6 && wc[2].wr_id == 7 && wc[2].status == IBV_WC_SUCCESS);
    CHECK(memcmp(src, hello, sizeof hello) == 0 && memcmp(src + 16, dst + 16, kBytes - 16) == 0);
    /* The builder's SEND (inline) scattered over a two-SGE receive at a. */
    struct ibv_sge two[2] = {{(uintptr_t)dst + 100, 10, dmr->lkey}, {(uintptr_t)dst + 300, 30, dmr->lkey}};
    rwr.wr_id = 99;
    rwr.sg_list = two;
    rwr.num_sge = 2;
    CHECK(ibv_post_recv(a, &rwr, &rbad) == 0);
    ibv_wr_start(bx);
    bx->wr_id = 8;
    bx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    ibv_wr_send(bx);
    ibv_wr_set_inline_data(bx, "scattered-over-two-buffers", 26);
    CHECK(ibv_wr_complete(bx) == 0);
    CHECK(poll_n(scq, wc, 1) == 1 && wc[0].wr_id == 8 && wc[0].opcode == IBV_WC_SEND && wc[0].status == IBV_WC_SUCCESS);
    CHECK(poll_n(rcq, wc, 1) == 1 && wc[0].wr_id == 99 && wc[0].opcode == IBV_WC_RECV && wc[0].byte_len == 26);
    CHECK(memcmp(dst + 100, "scattered-", 10) == 0 && memcmp(dst + 300, "over-two-buffers", 16) == 0);
    ibv_wr_start(bx);
    ibv_wr_send_imm(bx, htonl(1)); /* not in b's send_ops_flags */
    ibv_wr_set_sge(bx, dmr->lkey, (uintptr_t)dst, 64);
    CHECK(ibv_wr_complete(bx) == EINVAL);
    ibv_wr_start(bx);
    ibv_wr_rdma_read(bx, smr2->rkey, (uintptr_t)src); /* nor is READ */
    ibv_wr_set_sge(bx, dmr->lkey, (uintptr_t)dst, 64);
    CHECK(ibv_wr_complete(bx) == EINVAL);
    CHECK(ibv_query_qp_data_in_order(a, IBV_WR_RDMA_WRITE, 0) == 0);

    /* Moving to ERR flushes posted receives. */
    rwr.num_sge = 0;
    CHECK(ibv_post_recv(b, &rwr, &rbad) == 0);
    memset(&qa, 0, sizeof qa);
    qa.qp_state = IBV_QPS_ERR;
    CHECK(ibv_modify_qp(b, &qa, IBV_QP_STATE) == 0);
    CHECK(poll_n(rcq, wc, 1) == 1 && wc[0].status == IBV_WC_WR_FLUSH_ERR && wc[0].opcode == IBV_WC_RECV);

    /* A shared receive queue: its receives taken by a QP's SENDs, the limit
     * event through ibv_get_async_event, the refusals. */
    struct ibv_srq_init_attr_ex sax;
    memset(&sax, 0, sizeof sax);
    sax.attr.max_wr = 4;
    sax.attr.max_sge = 1;
    sax.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
    sax.srq_type = IBV_SRQT_BASIC;
    sax.pd = pd;
    struct ibv_srq* srq = ibv_create_srq_ex(ctx, &sax); /* verbs.h's inline path to ibv_create_srq */
    CHECK(srq != NULL && sax.attr.max_wr >= 4);
    struct ibv_srq_init_attr sbad;
    memset(&sbad, 0, sizeof sbad);
    sbad.attr.max_wr = 0;
    errno = 0;
    CHECK(ibv_create_srq(pd, &sbad) == NULL && errno == EINVAL);
    if (srq == NULL) return 1;
    struct ibv_qp_init_attr sia;
    memset(&sia, 0, sizeof sia);
    sia.send_cq = scq;
    sia.recv_cq = rcq;
    sia.qp_type = IBV_QPT_RC;
    sia.cap.max_send_wr = 16;
    sia.cap.max_send_sge = 1;
    struct ibv_qp* c = ibv_create_qp(pd, &sia);
    sia.srq = srq;
    struct ibv_qp* d = ibv_create_qp(pd, &sia);
    CHECK(c != NULL && d != NULL && d->srq == srq);
    if (c == NULL || d == NULL) return 1;
    CHECK(to_init(c) == 0 && to_init(d) == 0);
    CHECK(to_rtr_rts(c, d->qp_num, gid, port.lid, 300) == 0);
    CHECK(to_rtr_rts(d, c->qp_num, gid, port.lid, 300) == 0);
    struct ibv_sge srq_sges[4];
    struct ibv_recv_wr swr[4], *sbadwr = NULL;
    for (int i = 0; i < 4; ++i) {
        srq_sges[i].addr = (uintptr_t)(dst + 65536 + i * 4096);
        srq_sges[i].length = 4096;
        srq_sges[i].lkey = dmr->lkey;
        swr[i].wr_id = 500 + (uint64_t)i;
        swr[i].sg_list = &srq_sges[i];
        swr[i].num_sge = 1;
        swr[i].next = i + 1 < 4 ? &swr[i + 1] : NULL;
    }
    CHECK(ibv_post_srq_recv(srq, swr, &sbadwr) == 0);
    CHECK(ibv_post_srq_recv(srq, swr, &sbadwr) == ENOMEM && sbadwr == &swr[0]); /* max_wr 4 posted */
    swr[0].next = NULL;
    CHECK(ibv_post_recv(d, &swr[0], &sbadwr) == EINVAL); /* its receives come from the SRQ */
    struct ibv_srq_attr sattr;
    memset(&sattr, 0, sizeof sattr);
    sattr.srq_limit = 3;
    CHECK(ibv_modify_srq(srq, &sattr, IBV_SRQ_LIMIT) == 0);
    CHECK(ibv_query_srq(srq, &sattr) == 0 && sattr.max_wr >= 4 && sattr.srq_limit == 3 && sattr.max_sge >= 1);
    CHECK(ibv_destroy_srq(srq) == EBUSY); /* a QP uses it */
    for (int i = 0; i < 2; ++i) {
        struct ibv_sge sg = {(uintptr_t)(src + 1000 * i), 1000, smr->lkey};
        struct ibv_send_wr sw, *sb = NULL;
        memset(&sw, 0, sizeof sw);
        sw.wr_id = 600 + (uint64_t)i;
        sw.opcode = IBV_WR_SEND;
        sw.send_flags = IBV_SEND_SIGNALED;
        sw.sg_list = &sg;
        sw.num_sge = 1;
        CHECK(ibv_post_send(c, &sw, &sb) == 0);
    }
    CHECK(poll_n(scq, wc, 2) == 2 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS);
    CHECK(poll_n(rcq, wc, 2) == 2 && wc[0].wr_id == 500 && wc[1].wr_id == 501 && wc[0].qp_num == d->qp_num &&
          wc[0].opcode == IBV_WC_RECV && wc[1].byte_len == 1000);
    CHECK(memcmp(dst + 65536, src, 1000) == 0 && memcmp(dst + 65536 + 4096, src + 1000, 1000) == 0);
    /* 2 left < 3: one IBV_EVENT_SRQ_LIMIT_REACHED, and the limit reads 0 again. */
    const int fl = fcntl(ctx->async_fd, F_GETFL);
    CHECK(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) == 0);
    struct ibv_async_event ev;
    int got_ev = -1;
    for (const double end = now_s() + 10; got_ev != 0 && now_s() < end;) {
        got_ev = ibv_get_async_event(ctx, &ev);
        if (got_ev != 0) {
            struct pollfd apfd = {ctx->async_fd, POLLIN, 0};
            (void)poll(&apfd, 1, 100);
        }
    }
    CHECK(got_ev == 0 && ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq);
    if (got_ev == 0) ibv_ack_async_event(&ev);
    CHECK(srq->events_completed == 1);
    errno = 0;
    CHECK(ibv_get_async_event(ctx, &ev) == -1 && errno == EAGAIN); /* no other */
    CHECK(ibv_query_srq(srq, &sattr) == 0 && sattr.srq_limit == 0);
    CHECK(ibv_destroy_qp(c) == 0 && ibv_destroy_qp(d) == 0);
    CHECK(ibv_destroy_srq(srq) == 0);

    CHECK(ibv_destroy_cq(scq) == EBUSY);  /* QPs use it */
    CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0);
    CHECK(ibv_dereg_mr(smr) == 0 && ibv_dereg_mr(smr2) == 0 && ibv_dereg_mr(dmr) == 0);
    CHECK(ibv_destroy_cq(scq) == 0 && ibv_destroy_cq(rcq) == 0);
    CHECK(ibv_destroy_comp_channel(ch) == 0);
    CHECK(ibv_dealloc_pd(pd) == 0);
    CHECK(ibv_close_device(ctx) == 0);
    free(src);
    free(dst);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
