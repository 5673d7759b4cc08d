// SPDX-License-Identifier: BSD-3-Clause
// The DPDK driver ("dpdk"): one rte_ethdev port per plane. It lives in its
// own library (libomrc_dpdk) so that libomrc and its users never depend on
// DPDK; an application that wants it links libomrc_dpdk, which registers the
// driver when it is loaded (register_driver() below does it explicitly).
//
//   omrc::dpdk::register_driver();
//   omrc::DeviceOptions o;
//   o.args["eal"] = "--no-huge -m 512 --vdev net_memif0,role=server,socket=/run/a.sock";
//   auto dev = omrc::Device::open("dpdk", o);
//
// Driver arguments (DeviceOptions::args), all optional:
//   eal       EAL arguments, split at white space (default: $OMRC_EAL_ARGS, else
//             "--no-huge -m 512 --no-pci"); "--file-prefix omrc-<pid>-<n>", "-l <cpu>",
//             "--no-telemetry" (unless telemetry=1) and "--proc-type primary" are added unless
//             given. Ignored when the application already initialised the EAL (the driver attaches).
//   vdevs     virtual devices this device needs, separated by ';' (their own
//             arguments use commas), e.g. "net_tap0,iface=omrc0;net_tap1";
//             each is hot-plugged into the running EAL unless a port of
//             that name exists already
//   ports     comma-separated port ids or device names, one per plane, in plane
//             order (default: every available port, in port-id order)
//   mtu       the QPs' RDMA MTU in bytes (default 4096; 256..4096, a multiple of
//             64): every port is configured for its frames and its MTU read back;
//             a port that cannot carry them fails the open (EINVAL) naming the MTU
//             that fits (net_tap: mtu=1024)
//   rx_desc, tx_desc   descriptors per queue (default 1024)
//   mbufs     mbufs in each (port, queue) pool, on the port's NUMA node (default:
//             sized from the descriptor rings and the backlog)
//   backlog   frames queued per queue and port while the PMD's ring is full (default 1024)
//   steering  with DeviceOptions::workers > 1: qpn (default): rte_flow rules
//             steer each frame to the queue of its QP's worker where every port
//             takes them, else the PMD spreads frames (RSS, memif queue pairs)
//             and the runtime hands each to its worker; spread: no rules
//   link_poll_us  period in µs of the EAL alarm that reads every port's link state
//             and runs requested resets, off the data path (default 1000, at least
//             100); LSC, removal and reset events arrive by callback as well
//   zero_copy 1 (default) transmits payload straight from registered memory
//             (registered with DPDK and DMA-mapped for every port at reg_mr) as
//             external buffers at its IOVA; 0 copies every frame into its mbuf
//   icrc      auto (default): no software ICRC when every port is net_memif
//             (shared memory cannot corrupt a frame), software otherwise;
//             software: always; none: never. Both ends of a connection must
//             agree (a software end drops frames with no ICRC).
//   telemetry 0 (default) or 1: the EAL keeps its telemetry socket
//             (<runtime dir>/dpdk_telemetry.v2; dpdk-telemetry.py -f <file-prefix>), where
//             the /omrc/... commands (/omrc/devices, /omrc/planes, /omrc/qp,<qpn>, ...) read
//             this process's devices' stats (docs/DRIVERS.md, "Telemetry"). Like eal, it takes
//             effect when this device initialises the EAL; with --no-telemetry in the EAL
//             arguments it is refused (EINVAL). The commands serve every open dpdk device,
//             whichever way the EAL got its telemetry; a device costs the owning thread one
//             relaxed atomic load per progress() pass, and a stats_json() when a command asks.
#pragma once

namespace omrc::dpdk {

/// Makes "dpdk" available to omrc::Device::open() and configuration files.
/// libomrc_dpdk.so calls it itself when it is loaded; a program that links
/// the driver statically calls it. Idempotent and thread-safe; returns 0.
int register_driver();

}  // namespace omrc::dpdk
