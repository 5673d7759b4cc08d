/* SPDX-License-Identifier: BSD-3-Clause */
/* A C program outside the tree that uses the installed OpenMRC through
 * <omrc/omrc.h> alone: the version, the drivers, and a loopback device with
 * a PD, a CQ, an MR and a QP created and released in order. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <omrc/omrc.h>

static int check(int rc, const char* what) {
    if (rc != 0) fprintf(stderr, "c consumer: %s: %s\n", what, strerror(rc));
    return rc != 0;
}

int main(void) {
    static unsigned char buf[4096];
    struct omrc_device* dev = NULL;
    struct omrc_pd* pd = NULL;
    struct omrc_cq* cq = NULL;
    struct omrc_mr* mr = NULL;
    struct omrc_qp* qp = NULL;
    struct omrc_qp_init_attr init;
    char drivers[128];
    int bad = 0;

    printf("OpenMRC %s (C API)\n", omrc_version());
    if (strcmp(omrc_version(), "0.1.0") != 0) return 1;
    if (check(omrc_drivers(drivers, sizeof drivers, NULL), "omrc_drivers")) return 1;
    if (strstr(drivers, "loopback") == NULL) return 1;
    if (check(omrc_device_open("loopback", NULL, &dev), "omrc_device_open")) return 1;
    bad |= check(omrc_pd_alloc(dev, &pd), "omrc_pd_alloc");
    bad |= check(omrc_cq_create(dev, 16, &cq), "omrc_cq_create");
    bad |= check(omrc_mr_reg(pd, buf, sizeof buf, OMRC_ACCESS_LOCAL_WRITE, &mr), "omrc_mr_reg");
    omrc_qp_init_attr_init(&init);
    init.send_cq = init.recv_cq = cq;
    bad |= check(omrc_qp_create(pd, &init, &qp), "omrc_qp_create");
    if (omrc_pd_dealloc(pd) != EBUSY) bad = 1; /* the MR and the QP are alive */
    bad |= check(omrc_qp_destroy(qp), "omrc_qp_destroy");
    bad |= check(omrc_mr_dereg(mr), "omrc_mr_dereg");
    bad |= check(omrc_cq_destroy(cq), "omrc_cq_destroy");
    bad |= check(omrc_pd_dealloc(pd), "omrc_pd_dealloc");
    bad |= check(omrc_device_close(dev), "omrc_device_close");
    return bad;
}
