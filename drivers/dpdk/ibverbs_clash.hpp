// SPDX-License-Identifier: BSD-3-Clause
// ConnectX ports (DPDK's mlx5 driver) and OpenMRC's own libibverbs.so.1.
//
// DPDK's mlx5 PMD is bifurcated: it reaches the NIC through rdma-core's
// libibverbs.so.1 and the kernel's mlx5_core. A process that runs
// unmodified ibverbs programs over OpenMRC loads OpenMRC's libibverbs.so.1
// (LD_LIBRARY_PATH=<libdir>/openmrc/ibverbs, docs/IBVERBS.md) under the same
// soname; the mlx5 PMD then binds to it, sees only OpenMRC's devices and
// probes no port, silently. Loading rdma-core's library beside it in a
// namespace of its own (dlmopen) would split the process's verbs symbols in
// two and is not what the PMD's own loading does, so OpenMRC does not try:
// it detects the clash before the EAL probes and fails the open naming the
// two routes that work — the native API (omrc::Device over libomrc_dpdk, a
// process without OpenMRC's libibverbs) and NCCL's net plugin
// (libnccl-net-omrc.so, which needs no libibverbs of OpenMRC's).
#pragma once

#include <string>
#include <vector>

namespace omrc::dpdk {

/// A PCI device as sysfs shows it.
struct PciDevice {
    std::string address;  ///< "0000:17:00.0"
    std::string vendor;   ///< "0x15b3"
    std::string driver;   ///< the kernel driver bound to it ("mlx5_core"), "" for none
};

/// The PCI devices under `root` (/sys/bus/pci/devices, or $OMRC_SYSFS_PCI_ROOT).
[[nodiscard]] std::vector<PciDevice> pci_devices(const std::string& root);

/// The ConnectX devices (vendor 0x15b3 bound to mlx5_core) the EAL would
/// probe with `eal_args`: none with --no-pci; only those named by -a/--allow
/// when any is; never those named by -b/--block.
[[nodiscard]] std::vector<std::string> mlx5_devices_probed(const std::vector<PciDevice>& devices,
                                                          const std::vector<std::string>& eal_args);

/// The path of the libibverbs.so.1 the mlx5 PMD would bind to when it is
/// OpenMRC's, else "": `loaded` (the libibverbs this process has loaded, ""
/// for none) when there is one, else the first libibverbs.so.1 in the
/// directories of `ld_library_path`; OpenMRC's when it lies in an OpenMRC
/// ibverbs directory (<...>/openmrc/ibverbs) or needs libomrc.so.
[[nodiscard]] std::string openmrc_ibverbs_path(const std::string& loaded, const std::string& ld_library_path);
/// The same for this process (dl_iterate_phdr, $LD_LIBRARY_PATH).
[[nodiscard]] std::string openmrc_ibverbs_path();

/// 0, or ENOTSUP with `error` naming the devices, the library and the routes
/// that work, when mlx5 ports would be probed under OpenMRC's libibverbs.
int check_ibverbs_clash(const std::vector<std::string>& eal_args, std::string& error);

}  // namespace omrc::dpdk
