// SPDX-License-Identifier: BSD-3-Clause
// Registered memory for zero-copy transmit (Driver::register_memory): the
// pages of every MR are registered with DPDK as external memory
// (rte_extmem_register, with each page's IOVA: its virtual address in IOVA-
// as-VA mode, its physical address, pinned with mlock, in PA mode) and
// DMA-mapped for every port's device (rte_dev_dma_map; a bus or PMD that
// does not DMA, such as a vdev, says ENOTSUP, and needs none). A frame whose
// payload lies in such a region is sent from it (datapath.cpp: external
// buffers at the page's IOVA, split where a segment's pages are not
// contiguous in IOVA); other payload is copied.
//
// Regions are the MR's range rounded out to pages; a registration inside a
// region already registered shares it (counted); one that overlaps a region
// partially is not registered (its frames are copied: counted as
// tx_copied_unregistered). The process-wide DPDK registration is shared by
// the devices of a process that register the same pages.
//
// Threads: the program's thread, while every worker is parked (the queues'
// find_region() does not take a lock).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <mutex>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_memory.h>

#include "drivers/dpdk/dpdk_driver.hpp"
#include "log/log.hpp"

namespace omrc::dpdk {

namespace {

/// DPDK's external memory registrations of this process: (start, len) → users.
std::mutex extmem_mutex;
std::map<std::pair<std::uintptr_t, std::size_t>, std::uint32_t> extmem_users;  // guarded by extmem_mutex

std::size_t page_size() {
    static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return p;
}

rte_device* device_of(std::uint16_t port) {
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(port, &info) != 0) return nullptr;
    return info.device;
}

}  // namespace

const MemRegion* DpdkPorts::find_region(const void* addr, std::size_t len) const noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    auto it = std::upper_bound(regions_.begin(), regions_.end(), a,
                               [](std::uintptr_t v, const MemRegion& r) { return v < r.start; });
    if (it == regions_.begin()) return nullptr;
    --it;
    return a >= it->start && len <= it->len && a - it->start <= it->len - len ? &*it : nullptr;
}

int DpdkPorts::register_memory(const void* addr, std::size_t len) {
    if (!opt_.zero_copy || len == 0) return 0;
    const std::size_t page = page_size();
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    const std::uintptr_t start = a & ~(page - 1);
    const std::size_t span = ((a + len + page - 1) & ~(page - 1)) - start;
    for (MemRegion& r : regions_) {
        if (start >= r.start && start + span <= r.start + r.len) {
            ++r.refs;  // inside a region registered already
            return 0;
        }
        if (start < r.start + r.len && r.start < start + span) {
            static std::atomic<bool> warned{false};
            if (!warned.exchange(true))
                log::logger().info("dpdk: a memory registration overlaps another in part: its frames are copied");
            return EEXIST;
        }
    }
    MemRegion r;
    r.start = start;
    r.len = span;
    r.page = page;
    r.refs = 1;
    r.iova_is_va = rte_eal_iova_mode() == RTE_IOVA_VA;
    const std::size_t pages = span / page;
    if (!r.iova_is_va) {
        // Physical addresses: the pages must stay where they are.
        if (::mlock(reinterpret_cast<void*>(start), span) != 0) {
            log::logger().warn("dpdk: mlock of {} B for DMA (IOVA as PA): {}; its frames are copied", span,
                               std::strerror(errno));
            return errno;
        }
        r.iova.resize(pages);
        for (std::size_t i = 0; i < pages; ++i) {
            const phys_addr_t pa = rte_mem_virt2phy(reinterpret_cast<void*>(start + i * page));
            if (pa == RTE_BAD_IOVA) {
                ::munlock(reinterpret_cast<void*>(start), span);
                log::logger().warn("dpdk: no physical address for registered memory (IOVA as PA needs "
                                   "/proc/self/pagemap): its frames are copied");
                return ENOTSUP;
            }
            r.iova[i] = pa;
        }
    }
    {
        std::lock_guard lock(extmem_mutex);
        auto& users = extmem_users[{start, span}];
        if (users == 0) {
            rte_iova_t* table = r.iova_is_va ? nullptr : reinterpret_cast<rte_iova_t*>(r.iova.data());
            if (rte_extmem_register(reinterpret_cast<void*>(start), span, table,
                                    static_cast<unsigned>(r.iova_is_va ? 0 : pages), page) != 0 &&
                rte_errno != EEXIST) {
                const int e = rte_errno;
                extmem_users.erase({start, span});
                if (!r.iova_is_va) ::munlock(reinterpret_cast<void*>(start), span);
                log::logger().warn("dpdk: rte_extmem_register of {} B: {}; its frames are copied", span, rte_strerror(e));
                return e;
            }
        }
        ++users;
    }
    for (const auto& p : ports_) {
        rte_device* dev = device_of(p->id);
        if (dev == nullptr) continue;
        bool ok = true;
        if (r.iova_is_va) {
            ok = rte_dev_dma_map(dev, reinterpret_cast<void*>(start), start, span) == 0;
        } else {
            for (std::size_t i = 0; i < pages && ok; ++i)
                ok = rte_dev_dma_map(dev, reinterpret_cast<void*>(start + i * page), r.iova[i], page) == 0;
        }
        if (ok) {
            r.mapped_ports.push_back(p->id);
        } else if (rte_errno != ENOTSUP) {
            // A device that DMAs but cannot map this memory: nothing of it is sent from it.
            log::logger().warn("dpdk: rte_dev_dma_map on port {} ({}): {}; frames from this memory are copied", p->id,
                               p->name, rte_strerror(rte_errno));
            r.refs = 1;
            regions_.push_back(std::move(r));
            std::sort(regions_.begin(), regions_.end(), [](const MemRegion& x, const MemRegion& y) { return x.start < y.start; });
            unregister_memory(addr, len);
            return EIO;
        }
    }
    auto at = std::upper_bound(regions_.begin(), regions_.end(), start,
                               [](std::uintptr_t v, const MemRegion& x) { return v < x.start; });
    regions_.insert(at, std::move(r));
    return 0;
}

void DpdkPorts::unregister_memory(const void* addr, std::size_t len) {
    if (len == 0) return;
    const std::size_t page = page_size();
    const auto a = reinterpret_cast<std::uintptr_t>(addr);
    auto it = std::find_if(regions_.begin(), regions_.end(), [&](const MemRegion& r) {
        return (a & ~(page - 1)) >= r.start && a + len <= r.start + r.len;
    });
    if (it == regions_.end() || --it->refs != 0) return;
    const MemRegion& r = *it;
    const std::size_t pages = r.len / r.page;
    for (std::uint16_t pid : r.mapped_ports) {
        rte_device* dev = device_of(pid);
        if (dev == nullptr) continue;
        if (r.iova_is_va) {
            (void)rte_dev_dma_unmap(dev, reinterpret_cast<void*>(r.start), r.start, r.len);
        } else {
            for (std::size_t i = 0; i < pages; ++i)
                (void)rte_dev_dma_unmap(dev, reinterpret_cast<void*>(r.start + i * r.page), r.iova[i], r.page);
        }
    }
    {
        std::lock_guard lock(extmem_mutex);
        auto u = extmem_users.find({r.start, r.len});
        if (u != extmem_users.end() && --u->second == 0) {
            (void)rte_extmem_unregister(reinterpret_cast<void*>(r.start), r.len);
            extmem_users.erase(u);
        }
    }
    if (!r.iova_is_va) ::munlock(reinterpret_cast<void*>(r.start), r.len);
    regions_.erase(it);
}

}  // namespace omrc::dpdk
