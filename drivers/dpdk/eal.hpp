// SPDX-License-Identifier: BSD-3-Clause
// EAL bring-up for the DPDK driver. The EAL is process-wide: the first
// device to open initialises it (or finds it initialised by the application
// and attaches); later devices share it. The caller's CPU affinity is
// restored after rte_eal_init, so opening a device never pins the
// application's thread behind its back.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace omrc::dpdk {

/// EAL arguments: `given` (args "eal"), else $OMRC_EAL_ARGS, else the
/// default "--no-huge -m 512 --no-pci"; "--file-prefix omrc-<pid>-<n>",
/// "-l <cpu>" and "--proc-type primary" are added unless present, and so is
/// "--no-telemetry" unless `telemetry` (args "telemetry=1") or the arguments
/// say --telemetry or --no-telemetry.
[[nodiscard]] std::vector<std::string> eal_arguments(const std::string& given, bool telemetry = false);

/// Initialises the EAL once per process. Returns 0 (initialised now or
/// before, by us or by the application) or an errno.
int ensure_eal(const std::vector<std::string>& args);

/// Makes the calling thread an EAL lcore if it is not one (a thread the
/// application started, such as a progress thread): DPDK's mempools keep a
/// per-lcore cache of recently freed mbufs only for lcores, and without one
/// every mbuf comes from the pool's ring in FIFO order, so each frame lands
/// in cache-cold memory. Cheap after the first call on a thread (one
/// thread-local read); the thread gives its lcore back when it exits. A
/// failure (no lcore left, or a secondary process attached) is logged once
/// and the thread runs without the cache.
void attach_thread();

/// Runs `task` on the EAL's interrupt thread and returns what it returned;
/// runs it in place when called there (an alarm or event callback). net_memif
/// keeps its control channel on that thread (connect, messages, disconnect
/// when the peer goes) and its probe, configure, start and stop touch the same
/// state from the caller's thread without a lock: with both ends of a pair in
/// one process, stopping one end while the thread handles the other's
/// disconnect freed a message queue under the thread (a SIGSEGV in it). Those
/// calls come here. The task runs from an EAL alarm, so it must not wait for
/// the interrupt thread itself. Falls back to running in place (and says so
/// once) when no alarm can be set.
int on_interrupt_thread(const std::function<int()>& task);

/// Splits at white space (no quoting: EAL arguments have no spaces).
[[nodiscard]] std::vector<std::string> split_args(const std::string& text);

}  // namespace omrc::dpdk
