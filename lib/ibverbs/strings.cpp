// SPDX-License-Identifier: BSD-3-Clause
// ibverbs' naming and rate helpers: enum values to words, IB rates to
// multiples of 2.5 Gb/s and to Mb/s.
#include <infiniband/verbs.h>

#include <cstdint>

namespace {

struct RateRow {
    ibv_rate rate;
    int mult;   ///< multiple of 2.5 Gb/s (0: not a whole multiple)
    int mbps;
};

// Every rate ibv_rate names, with its speed.
constexpr RateRow kRates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},       {IBV_RATE_10_GBPS, 4, 10000},
    {IBV_RATE_20_GBPS, 8, 20000},     {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},    {IBV_RATE_120_GBPS, 48, 120000},
    {IBV_RATE_14_GBPS, 0, 14062},     {IBV_RATE_56_GBPS, 0, 56250},     {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},   {IBV_RATE_25_GBPS, 10, 25781},    {IBV_RATE_100_GBPS, 40, 103125},
    {IBV_RATE_200_GBPS, 80, 206250},  {IBV_RATE_300_GBPS, 120, 309375}, {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},    {IBV_RATE_400_GBPS, 160, 425000}, {IBV_RATE_600_GBPS, 240, 637500},
    {IBV_RATE_800_GBPS, 320, 850000}, {IBV_RATE_1200_GBPS, 480, 1275000},
};

}  // namespace

extern "C" {

const char* ibv_wc_status_str(enum ibv_wc_status status) {
    switch (status) {
        case IBV_WC_SUCCESS: return "success";
        case IBV_WC_LOC_LEN_ERR: return "local length error";
        case IBV_WC_LOC_QP_OP_ERR: return "local QP operation error";
        case IBV_WC_LOC_EEC_OP_ERR: return "local EE context operation error";
        case IBV_WC_LOC_PROT_ERR: return "local protection error";
        case IBV_WC_WR_FLUSH_ERR: return "work request flushed error";
        case IBV_WC_MW_BIND_ERR: return "memory window bind error";
        case IBV_WC_BAD_RESP_ERR: return "bad response error";
        case IBV_WC_LOC_ACCESS_ERR: return "local access error";
        case IBV_WC_REM_INV_REQ_ERR: return "remote invalid request error";
        case IBV_WC_REM_ACCESS_ERR: return "remote access error";
        case IBV_WC_REM_OP_ERR: return "remote operation error";
        case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
        case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
        case IBV_WC_LOC_RDD_VIOL_ERR: return "local RDD violation error";
        case IBV_WC_REM_INV_RD_REQ_ERR: return "remote invalid RD request";
        case IBV_WC_REM_ABORT_ERR: return "aborted error";
        case IBV_WC_INV_EECN_ERR: return "invalid EE context number";
        case IBV_WC_INV_EEC_STATE_ERR: return "invalid EE context state";
        case IBV_WC_FATAL_ERR: return "fatal error";
        case IBV_WC_RESP_TIMEOUT_ERR: return "response timeout error";
        case IBV_WC_GENERAL_ERR: return "general error";
        case IBV_WC_TM_ERR: return "tag matching error";
        case IBV_WC_TM_RNDV_INCOMPLETE: return "tag matching rendezvous incomplete";
    }
    return "unknown";
}

const char* ibv_node_type_str(enum ibv_node_type node_type) {
    switch (node_type) {
        case IBV_NODE_CA: return "InfiniBand channel adapter";
        case IBV_NODE_SWITCH: return "InfiniBand switch";
        case IBV_NODE_ROUTER: return "InfiniBand router";
        case IBV_NODE_RNIC: return "iWARP NIC";
        case IBV_NODE_USNIC: return "usNIC";
        case IBV_NODE_USNIC_UDP: return "usNIC UDP";
        case IBV_NODE_UNSPECIFIED: return "unspecified";
        case IBV_NODE_UNKNOWN: break;
    }
    return "unknown";
}

const char* ibv_port_state_str(enum ibv_port_state port_state) {
    switch (port_state) {
        case IBV_PORT_NOP: return "PORT_NOP";
        case IBV_PORT_DOWN: return "PORT_DOWN";
        case IBV_PORT_INIT: return "PORT_INIT";
        case IBV_PORT_ARMED: return "PORT_ARMED";
        case IBV_PORT_ACTIVE: return "PORT_ACTIVE";
        case IBV_PORT_ACTIVE_DEFER: return "PORT_ACTIVE_DEFER";
    }
    return "invalid state";
}

const char* ibv_event_type_str(enum ibv_event_type event) {
    switch (event) {
        case IBV_EVENT_CQ_ERR: return "CQ error";
        case IBV_EVENT_QP_FATAL: return "local work queue catastrophic error";
        case IBV_EVENT_QP_REQ_ERR: return "invalid request local work queue error";
        case IBV_EVENT_QP_ACCESS_ERR: return "local access violation work queue error";
        case IBV_EVENT_COMM_EST: return "communication established";
        case IBV_EVENT_SQ_DRAINED: return "send queue drained";
        case IBV_EVENT_PATH_MIG: return "path migrated";
        case IBV_EVENT_PATH_MIG_ERR: return "path migration request error";
        case IBV_EVENT_DEVICE_FATAL: return "local catastrophic error";
        case IBV_EVENT_PORT_ACTIVE: return "port active";
        case IBV_EVENT_PORT_ERR: return "port error";
        case IBV_EVENT_LID_CHANGE: return "LID change";
        case IBV_EVENT_PKEY_CHANGE: return "P_Key change";
        case IBV_EVENT_SM_CHANGE: return "SM change";
        case IBV_EVENT_SRQ_ERR: return "SRQ catastrophic error";
        case IBV_EVENT_SRQ_LIMIT_REACHED: return "SRQ limit reached";
        case IBV_EVENT_QP_LAST_WQE_REACHED: return "last WQE reached";
        case IBV_EVENT_CLIENT_REREGISTER: return "client reregistration";
        case IBV_EVENT_GID_CHANGE: return "GID table change";
        case IBV_EVENT_WQ_FATAL: return "WQ fatal";
    }
    return "unknown";
}

int ibv_rate_to_mult(enum ibv_rate rate) {
    for (const RateRow& r : kRates)
        if (r.rate == rate) return r.mult != 0 ? r.mult : -1;
    return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult) {
    for (const RateRow& r : kRates)
        if (r.mult != 0 && r.mult == mult) return r.rate;
    return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate) {
    for (const RateRow& r : kRates)
        if (r.rate == rate) return r.mbps;
    return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps) {
    for (const RateRow& r : kRates)
        if (r.mbps == mbps) return r.rate;
    return IBV_RATE_MAX;
}

}  // extern "C"
