// SPDX-License-Identifier: BSD-3-Clause
// The entry points OpenMRC does not support. They exist so that every symbol
// (and version) of rdma-core 44's libibverbs.so.1 is here: programs and the
// libraries they load with BIND_NOW (perftest links libmlx5, libefa and
// librdmacm, which import rdma-core's provider-private IBVERBS_PRIVATE_34
// symbols) must find them at load time, or the program does not start.
// Each fails as ibverbs says that call fails (NULL + errno, an errno, or -1),
// logs once per symbol, and never touches its arguments. This file does not
// include verbs.h: the stubs are declared with generic signatures, which the
// C calling convention allows for functions that ignore their arguments.
#include <atomic>
#include <cerrno>
#include <cstdint>

#include "log/log.hpp"
#include "symver.hpp"

namespace {

void unsupported(const char* name, std::atomic<bool>& logged, const char* why) {
    if (!logged.exchange(true, std::memory_order_relaxed))
        omrc::log::logger().warn("ibverbs: {} is not supported by OpenMRC ({})", name, why);
}

}  // namespace

// One stub per kind of failure. NAME is the C symbol defined; LABEL is what the log says.
#define STUB_PTR(NAME, LABEL, WHY)                            \
    extern "C" void* NAME(...) {                              \
        static std::atomic<bool> logged{false};               \
        unsupported(LABEL, logged, WHY);                      \
        errno = EOPNOTSUPP;                                   \
        return nullptr;                                       \
    }
#define STUB_ERR(NAME, LABEL, WHY)                            \
    extern "C" int NAME(...) {                                \
        static std::atomic<bool> logged{false};               \
        unsupported(LABEL, logged, WHY);                      \
        errno = EOPNOTSUPP;                                   \
        return EOPNOTSUPP;                                    \
    }
#define STUB_NEG(NAME, LABEL, WHY)                            \
    extern "C" int NAME(...) {                                \
        static std::atomic<bool> logged{false};               \
        unsupported(LABEL, logged, WHY);                      \
        errno = EOPNOTSUPP;                                   \
        return -1;                                            \
    }
#define STUB_VOID(NAME, LABEL, WHY)                           \
    extern "C" void NAME(...) {                               \
        static std::atomic<bool> logged{false};               \
        unsupported(LABEL, logged, WHY);                      \
    }
#define STUB_U64(NAME, LABEL, WHY)                            \
    extern "C" std::uint64_t NAME(...) {                      \
        static std::atomic<bool> logged{false};               \
        unsupported(LABEL, logged, WHY);                      \
        return 0;                                             \
    }

// ---- public, current ABI ----
#define UD "unreliable datagram address handles"
#define MCAST "multicast needs UD QPs"
#define IMPORT "sharing objects between processes needs a kernel device"
#define KERN "kernel uverbs structures: no kernel device here"

OMRC_IBV_DUAL(ibv_create_ah)
STUB_PTR(omrc_ibv_create_ah, "ibv_create_ah", UD)
OMRC_IBV_DUAL(ibv_destroy_ah)
STUB_ERR(omrc_ibv_destroy_ah, "ibv_destroy_ah", UD)
OMRC_IBV_DUAL(ibv_attach_mcast)
STUB_ERR(omrc_ibv_attach_mcast, "ibv_attach_mcast", MCAST)
OMRC_IBV_DUAL(ibv_detach_mcast)
STUB_ERR(omrc_ibv_detach_mcast, "ibv_detach_mcast", MCAST)
STUB_PTR(ibv_create_ah_from_wc, "ibv_create_ah_from_wc", UD)
STUB_ERR(ibv_init_ah_from_wc, "ibv_init_ah_from_wc", UD)
STUB_PTR(ibv_import_device, "ibv_import_device", IMPORT)
STUB_PTR(ibv_import_pd, "ibv_import_pd", IMPORT)
STUB_PTR(ibv_import_mr, "ibv_import_mr", IMPORT)
STUB_PTR(ibv_import_dm, "ibv_import_dm", IMPORT)
STUB_VOID(ibv_unimport_pd, "ibv_unimport_pd", IMPORT)
STUB_VOID(ibv_unimport_mr, "ibv_unimport_mr", IMPORT)
STUB_VOID(ibv_unimport_dm, "ibv_unimport_dm", IMPORT)
STUB_PTR(ibv_reg_dmabuf_mr, "ibv_reg_dmabuf_mr", "dma-buf memory needs a kernel device")
STUB_NEG(ibv_rereg_mr, "ibv_rereg_mr", "deregister and register again")
STUB_ERR(ibv_query_ece, "ibv_query_ece", "enhanced connection establishment")
STUB_ERR(ibv_set_ece, "ibv_set_ece", "enhanced connection establishment")
STUB_ERR(ibv_resolve_eth_l2_from_gid, "ibv_resolve_eth_l2_from_gid", "OpenMRC resolves peers from GID and LID itself")
STUB_VOID(ibv_copy_ah_attr_from_kern, "ibv_copy_ah_attr_from_kern", KERN)
STUB_VOID(ibv_copy_path_rec_from_kern, "ibv_copy_path_rec_from_kern", KERN)
STUB_VOID(ibv_copy_path_rec_to_kern, "ibv_copy_path_rec_to_kern", KERN)
STUB_VOID(ibv_copy_qp_attr_from_kern, "ibv_copy_qp_attr_from_kern", KERN)

// Nothing is pinned, so fork needs no care.
extern "C" int ibv_fork_init() { return 0; }
extern "C" int ibv_dontfork_range(void*, std::size_t) { return 0; }
extern "C" int ibv_dofork_range(void*, std::size_t) { return 0; }
extern "C" int ibv_is_fork_initialized() { return 2; }  // IBV_FORK_UNNEEDED

// The provider registration of libibverbs 1.1 (a default-less version): ignored.
extern "C" void omrc_compat_ibv_register_driver(const char*, void*) {}
__asm__(".symver omrc_compat_ibv_register_driver, ibv_register_driver@IBVERBS_1.1");

// ---- IBVERBS_1.0: the ABI of 2006 ----
#define OLD "the IBVERBS_1.0 ABI; rebuild the program against a current verbs.h"

OMRC_IBV_COMPAT_1_0(ibv_alloc_pd)
STUB_PTR(omrc_compat_ibv_alloc_pd, "ibv_alloc_pd@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_create_ah)
STUB_PTR(omrc_compat_ibv_create_ah, "ibv_create_ah@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_create_cq)
STUB_PTR(omrc_compat_ibv_create_cq, "ibv_create_cq@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_create_qp)
STUB_PTR(omrc_compat_ibv_create_qp, "ibv_create_qp@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_create_srq)
STUB_PTR(omrc_compat_ibv_create_srq, "ibv_create_srq@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_get_device_list)
STUB_PTR(omrc_compat_ibv_get_device_list, "ibv_get_device_list@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_open_device)
STUB_PTR(omrc_compat_ibv_open_device, "ibv_open_device@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_reg_mr)
STUB_PTR(omrc_compat_ibv_reg_mr, "ibv_reg_mr@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_get_device_name)
STUB_PTR(omrc_compat_ibv_get_device_name, "ibv_get_device_name@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_attach_mcast)
STUB_ERR(omrc_compat_ibv_attach_mcast, "ibv_attach_mcast@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_close_device)
STUB_ERR(omrc_compat_ibv_close_device, "ibv_close_device@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_dealloc_pd)
STUB_ERR(omrc_compat_ibv_dealloc_pd, "ibv_dealloc_pd@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_dereg_mr)
STUB_ERR(omrc_compat_ibv_dereg_mr, "ibv_dereg_mr@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_destroy_ah)
STUB_ERR(omrc_compat_ibv_destroy_ah, "ibv_destroy_ah@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_destroy_cq)
STUB_ERR(omrc_compat_ibv_destroy_cq, "ibv_destroy_cq@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_destroy_qp)
STUB_ERR(omrc_compat_ibv_destroy_qp, "ibv_destroy_qp@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_destroy_srq)
STUB_ERR(omrc_compat_ibv_destroy_srq, "ibv_destroy_srq@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_detach_mcast)
STUB_ERR(omrc_compat_ibv_detach_mcast, "ibv_detach_mcast@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_modify_qp)
STUB_ERR(omrc_compat_ibv_modify_qp, "ibv_modify_qp@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_modify_srq)
STUB_ERR(omrc_compat_ibv_modify_srq, "ibv_modify_srq@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_query_device)
STUB_ERR(omrc_compat_ibv_query_device, "ibv_query_device@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_query_gid)
STUB_ERR(omrc_compat_ibv_query_gid, "ibv_query_gid@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_query_pkey)
STUB_ERR(omrc_compat_ibv_query_pkey, "ibv_query_pkey@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_query_port)
STUB_ERR(omrc_compat_ibv_query_port, "ibv_query_port@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_query_qp)
STUB_ERR(omrc_compat_ibv_query_qp, "ibv_query_qp@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_query_srq)
STUB_ERR(omrc_compat_ibv_query_srq, "ibv_query_srq@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_resize_cq)
STUB_ERR(omrc_compat_ibv_resize_cq, "ibv_resize_cq@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_get_async_event)
STUB_NEG(omrc_compat_ibv_get_async_event, "ibv_get_async_event@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_get_cq_event)
STUB_NEG(omrc_compat_ibv_get_cq_event, "ibv_get_cq_event@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_ack_async_event)
STUB_VOID(omrc_compat_ibv_ack_async_event, "ibv_ack_async_event@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_ack_cq_events)
STUB_VOID(omrc_compat_ibv_ack_cq_events, "ibv_ack_cq_events@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_free_device_list)
STUB_VOID(omrc_compat_ibv_free_device_list, "ibv_free_device_list@IBVERBS_1.0", OLD)
OMRC_IBV_COMPAT_1_0(ibv_get_device_guid)
STUB_U64(omrc_compat_ibv_get_device_guid, "ibv_get_device_guid@IBVERBS_1.0", OLD)

// ---- IBVERBS_PRIVATE_34: rdma-core's interface to its kernel providers ----
// Loaded providers (libmlx5, libefa) register themselves from their
// constructors; there is no kernel device for them to drive here.
#define PROVIDER "a provider-private entry point: OpenMRC has no kernel providers"
extern "C" {
bool verbs_allow_disassociate_destroy = false;
void verbs_register_driver_34(void*) {}
void __verbs_log(void*, const char*, ...) {}
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void*) { return num_attrs; }
}
STUB_ERR(execute_ioctl, "execute_ioctl", PROVIDER)
STUB_PTR(_verbs_init_and_alloc_context, "_verbs_init_and_alloc_context", PROVIDER)
STUB_PTR(verbs_open_device, "verbs_open_device", PROVIDER)
STUB_VOID(verbs_init_cq, "verbs_init_cq", PROVIDER)
STUB_VOID(verbs_set_ops, "verbs_set_ops", PROVIDER)
STUB_VOID(verbs_uninit_context, "verbs_uninit_context", PROVIDER)
STUB_NEG(ibv_read_ibdev_sysfs_file, "ibv_read_ibdev_sysfs_file", PROVIDER)
STUB_ERR(ibv_cmd_advise_mr, "ibv_cmd_advise_mr", PROVIDER)
STUB_ERR(ibv_cmd_alloc_dm, "ibv_cmd_alloc_dm", PROVIDER)
STUB_ERR(ibv_cmd_alloc_mw, "ibv_cmd_alloc_mw", PROVIDER)
STUB_ERR(ibv_cmd_alloc_pd, "ibv_cmd_alloc_pd", PROVIDER)
STUB_ERR(ibv_cmd_attach_mcast, "ibv_cmd_attach_mcast", PROVIDER)
STUB_ERR(ibv_cmd_close_xrcd, "ibv_cmd_close_xrcd", PROVIDER)
STUB_ERR(ibv_cmd_create_ah, "ibv_cmd_create_ah", PROVIDER)
STUB_ERR(ibv_cmd_create_counters, "ibv_cmd_create_counters", PROVIDER)
STUB_ERR(ibv_cmd_create_cq, "ibv_cmd_create_cq", PROVIDER)
STUB_ERR(ibv_cmd_create_cq_ex, "ibv_cmd_create_cq_ex", PROVIDER)
STUB_ERR(ibv_cmd_create_flow, "ibv_cmd_create_flow", PROVIDER)
STUB_ERR(ibv_cmd_create_flow_action_esp, "ibv_cmd_create_flow_action_esp", PROVIDER)
STUB_ERR(ibv_cmd_create_qp, "ibv_cmd_create_qp", PROVIDER)
STUB_ERR(ibv_cmd_create_qp_ex2, "ibv_cmd_create_qp_ex2", PROVIDER)
STUB_ERR(ibv_cmd_create_qp_ex, "ibv_cmd_create_qp_ex", PROVIDER)
STUB_ERR(ibv_cmd_create_rwq_ind_table, "ibv_cmd_create_rwq_ind_table", PROVIDER)
STUB_ERR(ibv_cmd_create_srq, "ibv_cmd_create_srq", PROVIDER)
STUB_ERR(ibv_cmd_create_srq_ex, "ibv_cmd_create_srq_ex", PROVIDER)
STUB_ERR(ibv_cmd_create_wq, "ibv_cmd_create_wq", PROVIDER)
STUB_ERR(ibv_cmd_dealloc_mw, "ibv_cmd_dealloc_mw", PROVIDER)
STUB_ERR(ibv_cmd_dealloc_pd, "ibv_cmd_dealloc_pd", PROVIDER)
STUB_ERR(ibv_cmd_dereg_mr, "ibv_cmd_dereg_mr", PROVIDER)
STUB_ERR(ibv_cmd_destroy_ah, "ibv_cmd_destroy_ah", PROVIDER)
STUB_ERR(ibv_cmd_destroy_counters, "ibv_cmd_destroy_counters", PROVIDER)
STUB_ERR(ibv_cmd_destroy_cq, "ibv_cmd_destroy_cq", PROVIDER)
STUB_ERR(ibv_cmd_destroy_flow, "ibv_cmd_destroy_flow", PROVIDER)
STUB_ERR(ibv_cmd_destroy_flow_action, "ibv_cmd_destroy_flow_action", PROVIDER)
STUB_ERR(ibv_cmd_destroy_qp, "ibv_cmd_destroy_qp", PROVIDER)
STUB_ERR(ibv_cmd_destroy_rwq_ind_table, "ibv_cmd_destroy_rwq_ind_table", PROVIDER)
STUB_ERR(ibv_cmd_destroy_srq, "ibv_cmd_destroy_srq", PROVIDER)
STUB_ERR(ibv_cmd_destroy_wq, "ibv_cmd_destroy_wq", PROVIDER)
STUB_ERR(ibv_cmd_detach_mcast, "ibv_cmd_detach_mcast", PROVIDER)
STUB_ERR(ibv_cmd_free_dm, "ibv_cmd_free_dm", PROVIDER)
STUB_ERR(ibv_cmd_get_context, "ibv_cmd_get_context", PROVIDER)
STUB_ERR(ibv_cmd_modify_cq, "ibv_cmd_modify_cq", PROVIDER)
STUB_ERR(ibv_cmd_modify_flow_action_esp, "ibv_cmd_modify_flow_action_esp", PROVIDER)
STUB_ERR(ibv_cmd_modify_qp, "ibv_cmd_modify_qp", PROVIDER)
STUB_ERR(ibv_cmd_modify_qp_ex, "ibv_cmd_modify_qp_ex", PROVIDER)
STUB_ERR(ibv_cmd_modify_srq, "ibv_cmd_modify_srq", PROVIDER)
STUB_ERR(ibv_cmd_modify_wq, "ibv_cmd_modify_wq", PROVIDER)
STUB_ERR(ibv_cmd_open_qp, "ibv_cmd_open_qp", PROVIDER)
STUB_ERR(ibv_cmd_open_xrcd, "ibv_cmd_open_xrcd", PROVIDER)
STUB_ERR(ibv_cmd_poll_cq, "ibv_cmd_poll_cq", PROVIDER)
STUB_ERR(ibv_cmd_post_recv, "ibv_cmd_post_recv", PROVIDER)
STUB_ERR(ibv_cmd_post_send, "ibv_cmd_post_send", PROVIDER)
STUB_ERR(ibv_cmd_post_srq_recv, "ibv_cmd_post_srq_recv", PROVIDER)
STUB_ERR(ibv_cmd_query_context, "ibv_cmd_query_context", PROVIDER)
STUB_ERR(ibv_cmd_query_device_any, "ibv_cmd_query_device_any", PROVIDER)
STUB_ERR(ibv_cmd_query_mr, "ibv_cmd_query_mr", PROVIDER)
STUB_ERR(ibv_cmd_query_port, "ibv_cmd_query_port", PROVIDER)
STUB_ERR(ibv_cmd_query_qp, "ibv_cmd_query_qp", PROVIDER)
STUB_ERR(ibv_cmd_query_srq, "ibv_cmd_query_srq", PROVIDER)
STUB_ERR(ibv_cmd_read_counters, "ibv_cmd_read_counters", PROVIDER)
STUB_ERR(ibv_cmd_reg_dm_mr, "ibv_cmd_reg_dm_mr", PROVIDER)
STUB_ERR(ibv_cmd_reg_dmabuf_mr, "ibv_cmd_reg_dmabuf_mr", PROVIDER)
STUB_ERR(ibv_cmd_reg_mr, "ibv_cmd_reg_mr", PROVIDER)
STUB_ERR(ibv_cmd_req_notify_cq, "ibv_cmd_req_notify_cq", PROVIDER)
STUB_ERR(ibv_cmd_rereg_mr, "ibv_cmd_rereg_mr", PROVIDER)
STUB_ERR(ibv_cmd_resize_cq, "ibv_cmd_resize_cq", PROVIDER)
