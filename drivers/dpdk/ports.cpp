// SPDX-License-Identifier: BSD-3-Clause
// DpdkPorts: bringing the ports up (EAL, vdevs, configuration with the MTU
// the RDMA MTU needs and one queue pair per worker, mbuf pools per (port,
// queue) on the port's NUMA node), their lifecycle off the data path, and
// closing. See dpdk_driver.hpp.
#include "drivers/dpdk/dpdk_driver.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <rte_alarm.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "core/config.hpp"
#include "driver/args.hpp"
#include "drivers/dpdk/eal.hpp"
#include "drivers/dpdk/ibverbs_clash.hpp"
#include "log/log.hpp"
#include "wire/ethernet.hpp"
#include "wire/gather_frame.hpp"

namespace omrc::dpdk {

namespace {

/// A port control call: net_memif's on the interrupt thread, where the PMD
/// keeps its control channel (eal.hpp, on_interrupt_thread); any other here.
int control_call(bool memif, const std::function<int()>& call) { return memif ? on_interrupt_thread(call) : call(); }

/// Receive buffers: the largest frame (SRv6 data headers, 4096 B of payload, tail) with margin.
constexpr std::uint16_t kFrameRoom = 4608;
constexpr std::uint16_t kSmallRoom = 192;  ///< small mbufs: headers (≤ 160 B) or a tail
constexpr std::uint64_t kMinAlarmUs = 100;

std::mutex ports_mutex;
std::set<std::uint16_t> ports_in_use;  // guarded by ports_mutex: one Device per port
/// Pools by (port, queue), guarded by ports_mutex. A port is stopped, not
/// closed, when its device goes (a closed vdev cannot be probed again under
/// its name), and its receive queues keep mbufs until the next device
/// configures it: so the pools live as long as the process and are reused
/// by every device that opens the port.
std::map<std::pair<std::uint16_t, std::uint32_t>, PortPools> port_pools;

/// A DPDK call on a port failed with -errno `e`: the message, and the errno.
int port_error(const std::string& spec, const char* what, int e, std::string& error) {
    error = fmt::format("port {}: {}: {}", spec, what, rte_strerror(-e));
    return -e;
}

/// The longest frame of an RDMA MTU: the largest data headers the engine
/// builds (SRv6, SRH, credit header), the payload, pad and ICRC.
std::uint32_t frame_bytes(std::uint32_t rdma_mtu) { return wire::GatherFrame::kMaxHeader + rdma_mtu + 8; }

/// The largest RDMA MTU (a multiple of 64) whose frames fit `frame` bytes.
std::uint32_t mtu_for_frame(std::uint32_t frame) {
    constexpr std::uint32_t kOverhead = wire::GatherFrame::kMaxHeader + 8;
    return frame > kOverhead ? (frame - kOverhead) / 64 * 64 : 0;
}

PortPools* pools_for(std::uint16_t pid, std::uint32_t q, int socket, const DpdkOptions& o, std::string& error) {
    // Called with ports_mutex held.
    auto it = port_pools.find({pid, q});
    if (it != port_pools.end()) return &it->second;
    // RX ring + copied TX in flight (ring, backlog) + a held burst and
    // per-lcore caches; zero copy: one data-less mbuf per payload segment
    // (two where a segment crosses a page) and two small ones per frame.
    const std::uint32_t need = o.mbufs != 0 ? o.mbufs : o.rx_desc + o.tx_desc + o.backlog + 1024;
    const std::uint32_t ext = o.tx_desc + o.backlog + 1024;
    const std::string tag = fmt::format("_p{}q{}", pid, q);
    const int sock = socket < 0 ? SOCKET_ID_ANY : socket;
    PortPools pp;
    pp.frames = rte_pktmbuf_pool_create(("omrc_rx" + tag).c_str(), need, 256, 0, RTE_PKTMBUF_HEADROOM + kFrameRoom, sock);
    pp.ext = rte_pktmbuf_pool_create(("omrc_ext" + tag).c_str(), 4 * ext, 256, 0, 0, sock);
    pp.small = rte_pktmbuf_pool_create(("omrc_small" + tag).c_str(), 2 * ext, 256, 0, RTE_PKTMBUF_HEADROOM + kSmallRoom, sock);
    if (pp.frames == nullptr || pp.ext == nullptr || pp.small == nullptr) {
        const std::string why = rte_strerror(rte_errno);
        rte_mempool_free(pp.frames);
        rte_mempool_free(pp.ext);
        rte_mempool_free(pp.small);
        error = fmt::format("mbuf pools of queue {} on NUMA node {}: {} (more EAL memory: -m)", q, socket, why);
        return nullptr;
    }
    return &port_pools.emplace(std::make_pair(pid, q), pp).first->second;
}

int eth_event(std::uint16_t port, rte_eth_event_type event, void* self, void*) {
    static_cast<DpdkPorts*>(self)->on_event(port, static_cast<int>(event));
    return 0;
}

bool iface_up(unsigned if_index, bool& up) {
    char name[IF_NAMESIZE] = {};
    if (if_indextoname(if_index, name) == nullptr) return false;
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, name, IF_NAMESIZE);
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const int rc = ::ioctl(fd, SIOCGIFFLAGS, &ifr);
    ::close(fd);
    if (rc != 0) return false;
    up = (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
    return true;
}

}  // namespace

int DpdkPorts::open(const DpdkOptions& o, std::shared_ptr<DpdkPorts>& out, std::string& error) {
    if (o.queues == 0 || o.queues > (1u << core::kMaxShardBits)) {
        error = fmt::format("{} queues: 1..{}", o.queues, 1u << core::kMaxShardBits);
        return EINVAL;
    }
    if (o.mtu < 256 || o.mtu > 4096 || o.mtu % 64 != 0) {
        error = fmt::format("mtu={}: an RDMA MTU of 256..4096 bytes, a multiple of 64", o.mtu);
        return EINVAL;
    }
    const std::vector<std::string> eal_args = eal_arguments(o.eal, o.telemetry);
    if (o.telemetry && std::find(eal_args.begin(), eal_args.end(), "--no-telemetry") != eal_args.end()) {
        error = "telemetry=1, but the EAL arguments say --no-telemetry";
        return EINVAL;
    }
    // Before the EAL probes PCI devices: mlx5 ports cannot come up under
    // OpenMRC's own libibverbs.so.1 (ibverbs_clash.hpp).
    if (const int e = check_ibverbs_clash(eal_args, error); e != 0) return e;
    if (const int e = ensure_eal(eal_args); e != 0) {
        error = fmt::format("EAL initialisation failed: {}", rte_strerror(e));
        return e;
    }
    // The EAL is initialised once per process: a device that asks for
    // telemetry after it came up without cannot have it.
    if (std::error_code ec; o.telemetry && !std::filesystem::exists(telemetry::socket_path(), ec))
        log::logger().warn("dpdk: telemetry=1, but the EAL runs without telemetry (initialised earlier without it): "
                           "no {} to serve the /omrc commands", telemetry::socket_path());
    // Virtual devices of this device, added to a running EAL (hotplug) when
    // the EAL arguments did not create them.
    for (const std::string& v : o.vdevs) {
        const std::string name = v.substr(0, v.find(','));
        std::uint16_t existing = 0;
        if (rte_eth_dev_get_port_by_name(name.c_str(), &existing) == 0) continue;
        // (memif's probe opens its socket and registers on the interrupt thread.)
        if (const int e = control_call(name.rfind("net_memif", 0) == 0, [&] { return rte_dev_probe(v.c_str()); }); e != 0) {
            error = fmt::format("vdev {}: {}", v, rte_strerror(-e));
            return -e;
        }
    }
    std::vector<std::string> specs = o.ports;
    if (specs.empty()) {
        std::uint16_t pid = 0;
        RTE_ETH_FOREACH_DEV(pid) specs.push_back(std::to_string(pid));
    }
    if (specs.empty()) {
        error = "no DPDK ports (give --vdev or PCI devices in the EAL arguments)";
        return ENODEV;
    }
    if (specs.size() > core::kMaxPlanes) {
        error = fmt::format("{} ports for at most {} planes", specs.size(), core::kMaxPlanes);
        return EINVAL;
    }
    std::shared_ptr<DpdkPorts> d(new DpdkPorts(o));
    for (const std::string& spec : specs)
        if (const int e = d->open_port(spec, error); e != 0) return e;  // d's destructor releases the ports taken
    if (const int e = d->set_up_steering(error); e != 0) return e;
    const bool all_shared =
        std::all_of(d->ports_.begin(), d->ports_.end(), [](const auto& p) { return p->shared_memory; });
    const bool icrc_off = o.icrc == IcrcChoice::none || (o.icrc == IcrcChoice::automatic && all_shared);
    d->icrc_ = icrc_off ? driver::IcrcHandling::not_needed : driver::IcrcHandling::software;
    d->arm_alarm();
    telemetry::DeviceInfo info{"dpdk", static_cast<std::uint32_t>(d->ports_.size()), {}};
    for (const auto& p : d->ports_) info.ports.push_back(p->name);
    info.workers = o.queues;
    info.steering = d->steering_.method;
    d->telemetry_ = telemetry::register_device(std::move(info));
    log::logger().info("dpdk: {} ports, {} queues each, steering {} ({}), zero copy {}, icrc {}, telemetry device {}",
                       d->ports_.size(), o.queues, driver::to_string(d->steering_.kind), d->steering_.method,
                       o.zero_copy ? "on" : "off", driver::to_string(d->icrc_), d->telemetry_.index());
    out = std::move(d);
    return 0;
}

int DpdkPorts::open_port(const std::string& spec, std::string& error) {
    std::uint16_t pid = 0;
    std::uint64_t num = 0;
    if (driver::parse_uint(spec, num)) {
        if (num >= RTE_MAX_ETHPORTS || !rte_eth_dev_is_valid_port(static_cast<std::uint16_t>(num))) {
            error = fmt::format("port {} does not exist", spec);
            return ENODEV;
        }
        pid = static_cast<std::uint16_t>(num);
    } else if (rte_eth_dev_get_port_by_name(spec.c_str(), &pid) != 0) {
        error = fmt::format("no port named {}", spec);
        return ENODEV;
    }
    rte_eth_dev_info info{};
    if (const int e = rte_eth_dev_info_get(pid, &info); e != 0) return port_error(spec, "dev_info", e, error);
    const int socket = rte_eth_dev_socket_id(pid);
    {
        std::lock_guard lock(ports_mutex);
        if (ports_in_use.count(pid)) {
            error = fmt::format("port {} is used by another device", spec);
            return EBUSY;
        }
        auto p = std::make_unique<Port>();
        for (std::uint32_t q = 0; q < opt_.queues; ++q) {
            PortPools* pp = pools_for(pid, q, socket, opt_, error);
            if (pp == nullptr) {
                error = fmt::format("port {}: {}", spec, error);
                return ENOMEM;
            }
            p->pools.push_back(pp);
        }
        ports_in_use.insert(pid);
        p->id = pid;
        ports_.push_back(std::move(p));  // from here on the destructor releases the port
    }
    Port& port = *ports_.back();
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    (void)rte_eth_dev_get_name_by_port(pid, name);
    port.name = name;
    port.pmd = info.driver_name != nullptr ? info.driver_name : "";
    port.socket = socket;
    if (info.max_rx_queues < opt_.queues || info.max_tx_queues < opt_.queues) {
        error = fmt::format("port {} ({}) has {} receive and {} transmit queues: at most that many workers", spec,
                            port.pmd, info.max_rx_queues, info.max_tx_queues);
        return EINVAL;
    }
    port.chains = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
    port.lsc_events = info.dev_flags != nullptr && (*info.dev_flags & RTE_ETH_DEV_INTR_LSC) != 0;
    // af_packet reports its link up whatever the interface does: the
    // interface's own state is the link.
    if (port.pmd == "net_af_packet" && info.if_index != 0) {
        port.if_index = info.if_index;
        port.lsc_events = false;
    }
    port.shared_memory = port.pmd == "net_memif";
    // The frame limit: ethdev's default of 1518 means the PMD named none
    // (memif chains buffers and carries 4 KiB frames, whatever its MTU); any
    // other is the PMD's, and the port must carry the RDMA MTU's frames.
    const bool limited = info.max_rx_pktlen != RTE_ETHER_MAX_LEN && info.max_rx_pktlen >= 64 + RTE_ETHER_CRC_LEN;
    const std::uint32_t need = frame_bytes(opt_.mtu);
    if (limited) {
        const std::uint32_t pmd_frame = info.max_rx_pktlen - RTE_ETHER_CRC_LEN;
        const std::uint32_t max_mtu_frame = std::min<std::uint32_t>(pmd_frame, info.max_mtu + wire::EthHdr::kSize);
        if (need > max_mtu_frame) {
            error = fmt::format("port {} ({}) takes frames of at most {} B (MTU {}): an RDMA MTU of {} B needs {} B; "
                                "set mtu={} (the QPs' MTU) or use a port that carries larger frames",
                                spec, port.pmd, max_mtu_frame, max_mtu_frame - wire::EthHdr::kSize, opt_.mtu, need,
                                mtu_for_frame(max_mtu_frame));
            return EINVAL;
        }
    }
    if (const int e = configure_port(port, false, error); e != 0) return e;
    (void)rte_eth_dev_get_mtu(pid, &port.mtu);
    if (limited && port.mtu + wire::EthHdr::kSize < need) {
        error = fmt::format("port {} ({}): MTU {} asked for, {} set: frames of an RDMA MTU of {} B do not fit", spec,
                            port.pmd, need - wire::EthHdr::kSize, port.mtu, opt_.mtu);
        return EINVAL;
    }
    port.max_frame = limited ? std::max<std::uint32_t>(port.mtu + wire::EthHdr::kSize, need) : UINT32_MAX;
    rte_ether_addr mac{};
    (void)rte_eth_macaddr_get(pid, &mac);
    std::memcpy(port.mac.data(), mac.addr_bytes, 6);
    // Events off the data path: link changes (where the PMD raises them),
    // removal and reset. Ports without link interrupts are polled by the alarm.
    for (const rte_eth_event_type ev : {RTE_ETH_EVENT_INTR_LSC, RTE_ETH_EVENT_INTR_RMV, RTE_ETH_EVENT_INTR_RESET})
        (void)rte_eth_dev_callback_register(pid, ev, &eth_event, this);
    port.up.store(query_link(port), std::memory_order_release);
    log::logger().info("dpdk: plane {} = port {} ({}, {}), NUMA node {}, mtu {}, max frame {}, link {} ({}), chains {}",
                       ports_.size() - 1, pid, port.name, port.pmd, socket, port.mtu, port.max_frame,
                       port.up.load() ? "up" : "down", port.lsc_events ? "events" : "polled",
                       port.chains ? "yes" : "no");
    return 0;
}

int DpdkPorts::configure_port(Port& port, bool rss, std::string& error) {
    return control_call(port.shared_memory, [&] { return configure_port_here(port, rss, error); });
}

int DpdkPorts::configure_port_here(Port& port, bool rss, std::string& error) {
    const std::uint16_t pid = port.id;
    const std::string spec = port.name.empty() ? std::to_string(pid) : port.name;
    rte_eth_dev_info info{};
    if (const int e = rte_eth_dev_info_get(pid, &info); e != 0) return port_error(spec, "dev_info", e, error);
    rte_eth_conf conf{};
    if (port.chains) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    // The MTU goes in with the configuration (and is read back by the
    // caller): a port that cannot carry the frames fails here, not later.
    const bool limited = info.max_rx_pktlen != RTE_ETHER_MAX_LEN && info.max_rx_pktlen >= 64 + RTE_ETHER_CRC_LEN;
    if (limited) conf.rxmode.mtu = frame_bytes(opt_.mtu) - wire::EthHdr::kSize;
    conf.intr_conf.lsc = port.lsc_events ? 1 : 0;
    conf.intr_conf.rmv = info.dev_flags != nullptr && (*info.dev_flags & RTE_ETH_DEV_INTR_RMV) ? 1 : 0;
    if (rss) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads;
    }
    if (const int e = rte_eth_dev_configure(pid, static_cast<std::uint16_t>(opt_.queues),
                                            static_cast<std::uint16_t>(opt_.queues), &conf);
        e != 0)
        return port_error(spec, fmt::format("configure ({} queues, MTU {})", opt_.queues, conf.rxmode.mtu).c_str(), e,
                          error);
    std::uint16_t rxd = opt_.rx_desc, txd = opt_.tx_desc;
    (void)rte_eth_dev_adjust_nb_rx_tx_desc(pid, &rxd, &txd);
    const unsigned sock = port.socket < 0 ? static_cast<unsigned>(SOCKET_ID_ANY) : static_cast<unsigned>(port.socket);
    for (std::uint32_t q = 0; q < opt_.queues; ++q) {
        const auto qid = static_cast<std::uint16_t>(q);
        if (const int e = rte_eth_rx_queue_setup(pid, qid, rxd, sock, nullptr, port.pools[q]->frames); e != 0)
            return port_error(spec, "rx queue", e, error);
        if (const int e = rte_eth_tx_queue_setup(pid, qid, txd, sock, nullptr); e != 0)
            return port_error(spec, "tx queue", e, error);
    }
    // A NIC whose PMD cannot clean up sent mbufs on demand gets the reclaim
    // kick (datapath.cpp) and a free threshold near its ring size, so that
    // an empty burst frees what the NIC has sent. (Software ports, vdevs,
    // free what they send within the burst.)
    port.tx_cleanup = rte_eth_tx_done_cleanup(pid, 0, 0) != -ENOTSUP;
    const char* dev_name = info.device != nullptr ? rte_dev_name(info.device) : nullptr;
    const bool pci = dev_name != nullptr && std::strchr(dev_name, ':') != nullptr;  // 0000:17:00.0, not net_tap0
    port.reclaim_kick = !port.tx_cleanup && pci && opt_.zero_copy;
    if (port.reclaim_kick) {
        rte_eth_txconf txc = info.default_txconf;
        txc.tx_free_thresh = static_cast<std::uint16_t>(txd > 64 ? txd - 32 : txd / 2);
        for (std::uint32_t q = 0; q < opt_.queues; ++q)
            if (rte_eth_tx_queue_setup(pid, static_cast<std::uint16_t>(q), txd, sock, &txc) != 0)
                (void)rte_eth_tx_queue_setup(pid, static_cast<std::uint16_t>(q), txd, sock, nullptr);
    }
    if (const int e = rte_eth_dev_start(pid); e != 0) return port_error(spec, "start", e, error);
    return 0;
}

DpdkPorts::~DpdkPorts() { close(); }

void DpdkPorts::close() {
    closing_.store(true, std::memory_order_release);
    telemetry_ = {};  // out of the registry first: no command waits on a closing device
    // The alarm and the callbacks may be running on the interrupt thread:
    // cancelling waits for a running one, unregistering retries while one is.
    if (alarm_armed_) (void)rte_eal_alarm_cancel(&DpdkPorts::on_alarm, this);
    for (auto& p : ports_) {
        for (const rte_eth_event_type ev : {RTE_ETH_EVENT_INTR_LSC, RTE_ETH_EVENT_INTR_RMV, RTE_ETH_EVENT_INTR_RESET})
            for (int tries = 0; tries < 1000; ++tries) {
                const int rc = rte_eth_dev_callback_unregister(p->id, ev, &eth_event, this);
                if (rc != -EAGAIN) break;
                std::this_thread::yield();
            }
        remove_flows(*p);
        (void)control_call(p->shared_memory, [id = p->id] { return rte_eth_dev_stop(id); });
        std::lock_guard lock(ports_mutex);
        ports_in_use.erase(p->id);
    }
    ports_.clear();
    // Ports are stopped, not closed: a later device may take them again (their
    // pools stay, see port_pools).
    for (MemRegion& r : regions_) r.refs = 1;
    while (!regions_.empty()) unregister_memory(reinterpret_cast<const void*>(regions_.back().start), regions_.back().len);
}

bool DpdkPorts::query_link(Port& p) {
    if (p.removed.load(std::memory_order_acquire)) return false;
    if (p.if_index != 0) {
        bool up = false;
        if (!iface_up(p.if_index, up)) {
            p.failed_queries.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        return up;
    }
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(p.id, &link) != 0) {
        // A port whose state cannot be read is not one to send on.
        p.failed_queries.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    return link.link_status == RTE_ETH_LINK_UP;
}

void DpdkPorts::set_link(Port& p, bool up) {
    if (p.up.load(std::memory_order_acquire) == up) return;
    p.up.store(up, std::memory_order_release);
    p.changes.fetch_add(1, std::memory_order_acq_rel);
    log::logger().info("dpdk: port {} ({}) link {}", p.id, p.name, up ? "up" : "down");
}

void DpdkPorts::on_event(std::uint16_t port, int event) {
    DpdkPorts* d = this;
    if (d->closing_.load(std::memory_order_acquire)) return;
    for (auto& p : d->ports_) {
        if (p->id != port) continue;
        switch (event) {
            case RTE_ETH_EVENT_INTR_LSC: d->set_link(*p, d->query_link(*p)); break;
            case RTE_ETH_EVENT_INTR_RMV:
                p->removed.store(true, std::memory_order_release);
                d->set_link(*p, false);
                log::logger().warn("dpdk: port {} ({}) was removed: its plane stays down", p->id, p->name);
                break;
            case RTE_ETH_EVENT_INTR_RESET:
                // rte_eth_dev_reset must not run in the PMD's callback: the alarm does it.
                p->reset_requested.store(true, std::memory_order_release);
                log::logger().warn("dpdk: port {} ({}) asks for a reset", p->id, p->name);
                break;
            default: break;
        }
    }
}

void DpdkPorts::arm_alarm() {
    const std::uint64_t us = std::max<std::uint64_t>(kMinAlarmUs, opt_.link_poll_ns / 1000);
    alarm_armed_ = rte_eal_alarm_set(us, &DpdkPorts::on_alarm, this) == 0;
    if (!alarm_armed_) log::logger().warn("dpdk: no EAL alarm: ports without link events keep their state");
}

void DpdkPorts::on_alarm(void* self) {
    auto* d = static_cast<DpdkPorts*>(self);
    if (d->closing_.load(std::memory_order_acquire)) return;
    // Every port is polled here, on the interrupt thread: link events come
    // sooner where the PMD raises them, and a PMD whose events stop (a tap
    // whose netlink listener failed) still has its link followed.
    for (auto& p : d->ports_) {
        if (p->reset_requested.load(std::memory_order_acquire)) d->reset_port(*p);
        else if (!p->pause.load(std::memory_order_acquire)) d->set_link(*p, d->query_link(*p));
    }
    d->arm_alarm();
}

void DpdkPorts::reset_port(Port& p) {
    // First every queue stops using the port (its worker acknowledges at its
    // next pass, datapath.cpp); the alarm comes back until all have.
    if (!p.pause.exchange(true, std::memory_order_acq_rel)) {
        set_link(p, false);
        return;
    }
    const std::uint32_t all = opt_.queues >= 32 ? ~0u : (1u << opt_.queues) - 1;
    if ((p.paused_queues.load(std::memory_order_acquire) & all) != all) return;
    remove_flows(p);
    const int rc = rte_eth_dev_reset(p.id);
    std::string error;
    int e = rc == 0 ? configure_port(p, rss_, error) : rc;
    if (e == 0 && steering_.kind == driver::Steering::by_qpn) e = try_flows(p);
    p.reset_requested.store(false, std::memory_order_release);
    p.resets.fetch_add(1, std::memory_order_relaxed);
    p.paused_queues.store(0, std::memory_order_release);
    p.pause.store(false, std::memory_order_release);
    if (e != 0) {
        log::logger().error("dpdk: port {} ({}) reset failed: {}; its plane stays down", p.id, p.name,
                            error.empty() ? rte_strerror(e < 0 ? -e : e) : error);
        p.removed.store(true, std::memory_order_release);
        return;
    }
    log::logger().info("dpdk: port {} ({}) reset and restarted", p.id, p.name);
    set_link(p, query_link(p));
}

int DpdkDriver::open(const DpdkOptions& o, std::unique_ptr<DpdkDriver>& out, std::string& error) {
    DpdkOptions one = o;
    one.queues = 1;
    std::shared_ptr<DpdkPorts> ports;
    if (const int e = DpdkPorts::open(one, ports, error); e != 0) return e;
    out = std::make_unique<DpdkDriver>(std::move(ports), 0);
    return 0;
}

}  // namespace omrc::dpdk
