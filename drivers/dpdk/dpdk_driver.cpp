// SPDX-License-Identifier: BSD-3-Clause
#include "drivers/dpdk/dpdk_driver.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <mutex>
#include <map>
#include <set>

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "core/config.hpp"
#include "driver/args.hpp"
#include "drivers/dpdk/eal.hpp"
#include "drivers/dpdk/tx_release.hpp"
#include "log/log.hpp"

namespace omrc::dpdk {

namespace {

constexpr std::uint16_t kEthHeader = 14;
constexpr std::uint16_t kIpv6Header = 40;
constexpr std::uint16_t kEtherTypeIpv6 = 0x86DD;
constexpr std::uint8_t kNextHopByHop = 0;
constexpr std::uint8_t kNextIcmpv6 = 58;
/// Largest frame: SRv6 headers (≤ 160 B with the SRH) + 4096 B payload + tail, with margin.
constexpr std::uint16_t kFrameRoom = 4608;
constexpr std::uint16_t kSmallRoom = 192;  ///< small mbufs: headers (≤ 160 B) or a tail

std::mutex ports_mutex;
std::set<std::uint16_t> ports_in_use;  // guarded by ports_mutex: one Device per port
/// Pools by port, guarded by ports_mutex. A port is stopped, not closed,
/// when its device goes (a closed vdev cannot be probed again under its
/// name), and its receive queue keeps mbufs until the next device
/// configures it: so a port's pools live as long as the process and are
/// reused by every device that opens the port.
std::map<std::uint16_t, PortPools> port_pools;

/// A DPDK call on a port failed with -errno `e`: the message, and the errno.
int port_error(const std::string& spec, const char* what, int e, std::string& error) {
    error = fmt::format("port {}: {}: {}", spec, what, rte_strerror(-e));
    return -e;
}

/// Largest QP MTU (payload per packet, a multiple of 64) whose frames fit
/// `max_frame` bytes: SRv6 data headers without SRH plus the tail.
std::uint32_t max_payload(std::uint32_t max_frame) {
    constexpr std::uint32_t kWorstHeaders = 142 + 8;
    return max_frame > kWorstHeaders ? (max_frame - kWorstHeaders) / 64 * 64 : 0;
}

rte_iova_t iova_of(const void* va) {
    if (rte_eal_iova_mode() == RTE_IOVA_VA) return reinterpret_cast<rte_iova_t>(va);
    return rte_mem_virt2iova(va);
}

}  // namespace

DpdkDriver::DpdkDriver(const DpdkOptions& o) : opt_(o) {}

int DpdkDriver::open(const DpdkOptions& o, std::unique_ptr<DpdkDriver>& out, std::string& error) {
    const std::vector<std::string> eal_args = eal_arguments(o.eal, o.telemetry);
    if (o.telemetry && std::find(eal_args.begin(), eal_args.end(), "--no-telemetry") != eal_args.end()) {
        error = "telemetry=1, but the EAL arguments say --no-telemetry";
        return EINVAL;
    }
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
        if (const int e = rte_dev_probe(v.c_str()); e != 0) {
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
    std::unique_ptr<DpdkDriver> d(new DpdkDriver(o));
    const auto n_ports = static_cast<std::uint32_t>(specs.size());
    d->release_ = std::make_unique<TxReleaseRing>(n_ports * (o.tx_desc + o.backlog) + 1024);
    for (const std::string& spec : specs)
        if (const int e = d->open_port(spec, error); e != 0) return e;  // d's destructor releases the ports taken
    const bool all_shared = std::all_of(d->ports_.begin(), d->ports_.end(), [](const Port& p) { return p.shared_memory; });
    const bool icrc_off = o.icrc == IcrcChoice::none || (o.icrc == IcrcChoice::automatic && all_shared);
    d->icrc_ = icrc_off ? driver::IcrcHandling::not_needed : driver::IcrcHandling::software;
    telemetry::DeviceInfo info{d->name(), d->planes(), {}};
    for (const Port& p : d->ports_) info.ports.push_back(p.name);
    d->telemetry_ = telemetry::register_device(std::move(info));
    log::logger().info("dpdk: {} ports, zero copy {}, icrc {}, telemetry device {}", d->ports_.size(),
                       o.zero_copy ? "on" : "off", driver::to_string(d->icrc_), d->telemetry_.index());
    out = std::move(d);
    return 0;
}

int DpdkDriver::open_port(const std::string& spec, std::string& error) {
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
    const PortPools* pools = nullptr;
    {
        std::lock_guard lock(ports_mutex);
        if (ports_in_use.count(pid)) {
            error = fmt::format("port {} is used by another device", spec);
            return EBUSY;
        }
        auto it = port_pools.find(pid);
        if (it == port_pools.end()) {
            // RX ring + copied TX in flight (ring, backlog) + a held burst and
            // per-lcore caches; zero copy: one data-less mbuf per payload
            // segment and two small ones (header, tail) per frame.
            const std::uint32_t need = opt_.mbufs != 0 ? opt_.mbufs : opt_.rx_desc + opt_.tx_desc + opt_.backlog + 1024;
            const std::uint32_t ext = opt_.tx_desc + opt_.backlog + 1024;
            const std::string tag = "_p" + std::to_string(pid);
            PortPools pp;
            pp.frames = rte_pktmbuf_pool_create(("omrc_rx" + tag).c_str(), need, 256, 0,
                                                RTE_PKTMBUF_HEADROOM + kFrameRoom, SOCKET_ID_ANY);
            pp.ext = rte_pktmbuf_pool_create(("omrc_ext" + tag).c_str(), 2 * ext, 256, 0, 0, SOCKET_ID_ANY);
            pp.small = rte_pktmbuf_pool_create(("omrc_small" + tag).c_str(), 2 * ext, 256, 0,
                                               RTE_PKTMBUF_HEADROOM + kSmallRoom, SOCKET_ID_ANY);
            if (pp.frames == nullptr || pp.ext == nullptr || pp.small == nullptr) {
                const std::string why = rte_strerror(rte_errno);
                rte_mempool_free(pp.frames);
                rte_mempool_free(pp.ext);
                rte_mempool_free(pp.small);
                error = fmt::format("port {}: mbuf pools: {} (more EAL memory: -m)", spec, why);
                return ENOMEM;
            }
            it = port_pools.emplace(pid, pp).first;
        }
        pools = &it->second;
        ports_in_use.insert(pid);
    }
    Port p;
    p.id = pid;
    p.pools = pools;
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    (void)rte_eth_dev_get_name_by_port(pid, name);
    p.name = name;
    ports_.push_back(p);  // from here on the destructor releases the port
    Port& port = ports_.back();

    rte_eth_dev_info info{};
    if (const int e = rte_eth_dev_info_get(pid, &info); e != 0) return port_error(spec, "dev_info", e, error);
    rte_eth_conf conf{};
    port.chains = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
    if (port.chains) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    if (const int e = rte_eth_dev_configure(pid, 1, 1, &conf); e != 0) return port_error(spec, "configure", e, error);
    std::uint16_t rxd = opt_.rx_desc, txd = opt_.tx_desc;
    (void)rte_eth_dev_adjust_nb_rx_tx_desc(pid, &rxd, &txd);
    const int socket = rte_eth_dev_socket_id(pid);
    const unsigned sock = socket < 0 ? static_cast<unsigned>(SOCKET_ID_ANY) : static_cast<unsigned>(socket);
    if (const int e = rte_eth_rx_queue_setup(pid, 0, rxd, sock, nullptr, pools->frames); e != 0)
        return port_error(spec, "rx queue", e, error);
    if (const int e = rte_eth_tx_queue_setup(pid, 0, txd, sock, nullptr); e != 0)
        return port_error(spec, "tx queue", e, error);
    // Room for 4 KiB payload frames where the PMD lets us set it; a PMD that
    // can't keeps its own limit (the QP MTU must then fit it).
    if (info.max_rx_pktlen >= kFrameRoom + RTE_ETHER_CRC_LEN) (void)rte_eth_dev_set_mtu(pid, kFrameRoom - kEthHeader);
    if (const int e = rte_eth_dev_start(pid); e != 0) return port_error(spec, "start", e, error);
    rte_ether_addr mac{};
    (void)rte_eth_macaddr_get(pid, &mac);
    std::memcpy(port.mac.data(), mac.addr_bytes, 6);
    port.backlog.reserve(opt_.backlog);
    std::uint16_t mtu = 0;
    (void)rte_eth_dev_get_mtu(pid, &mtu);
    // The PMD's own frame limit, without the FCS (net_tap refuses longer
    // frames forever). ethdev's default of 1518 means the PMD named none
    // (memif chains buffers and carries 4 KiB frames): no limit then.
    port.max_frame = info.max_rx_pktlen == RTE_ETHER_MAX_LEN || info.max_rx_pktlen < 64 + RTE_ETHER_CRC_LEN
                         ? UINT32_MAX
                         : info.max_rx_pktlen - RTE_ETHER_CRC_LEN;
    // af_packet reports its link up whatever the interface does: read the
    // interface's own state instead.
    if (std::strcmp(info.driver_name, "net_af_packet") == 0 && info.if_index != 0) port.if_index = info.if_index;
    port.shared_memory = std::strcmp(info.driver_name, "net_memif") == 0;
    port.up = link_state(port);
    log::logger().info("dpdk: plane {} = port {} ({}, {}), mtu {}, max frame {}, link {}, chains {}",
                           ports_.size() - 1, pid, port.name, info.driver_name, mtu, port.max_frame,
                           port.up ? "up" : "down", port.chains ? "yes" : "no");
    return 0;
}

DpdkDriver::~DpdkDriver() { close(); }

void DpdkDriver::close() {
    telemetry_ = {};  // out of the registry first: no command waits on a closing device
    for (rte_mbuf* m : rx_held_) rte_pktmbuf_free(m);
    rx_held_.clear();
    for (Port& p : ports_) {
        for (std::size_t i = p.backlog_head; i < p.backlog.size(); ++i) rte_pktmbuf_free(p.backlog[i]);
        p.backlog.clear();
        (void)rte_eth_dev_stop(p.id);
        std::lock_guard lock(ports_mutex);
        ports_in_use.erase(p.id);
    }
    ports_.clear();
    // Ports are stopped, not closed: a later device may take them again (their
    // pools stay, see port_pools).
}

bool DpdkDriver::link_state(const Port& p) const {
    if (p.if_index != 0) {
        char name[IF_NAMESIZE] = {};
        if (if_indextoname(p.if_index, name) == nullptr) return false;
        ifreq ifr{};
        std::memcpy(ifr.ifr_name, name, IF_NAMESIZE);
        const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return p.up;
        const int rc = ::ioctl(fd, SIOCGIFFLAGS, &ifr);
        ::close(fd);
        if (rc != 0) return false;
        return (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
    }
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(p.id, &link) != 0) return p.up;
    return link.link_status == RTE_ETH_LINK_UP;
}

void DpdkDriver::poll_links(std::uint64_t now_ns) {
    if (now_ns < next_link_poll_ns_) return;
    next_link_poll_ns_ = now_ns + opt_.link_poll_ns;
    for (std::size_t i = 0; i < ports_.size(); ++i) {
        const bool up = link_state(ports_[i]);
        if (up == ports_[i].up) continue;
        ports_[i].up = up;
        ++ports_[i].c.link_changes;
        if (!up) drop_backlog(ports_[i]);
        link_events_.push_back({static_cast<std::uint8_t>(i), up});
        log::logger().info("dpdk: port {} ({}) link {}", ports_[i].id, ports_[i].name, up ? "up" : "down");
    }
}

const std::uint8_t* DpdkDriver::rx_view(rte_mbuf* m, std::size_t slot, Port& p) {
    if (m->nb_segs == 1) return rte_pktmbuf_mtod(m, const std::uint8_t*);
    std::vector<std::uint8_t>& buf = rx_linear_[slot];
    if (m->pkt_len > buf.size()) {
        ++p.c.rx_oversize;
        return nullptr;
    }
    ++p.c.rx_linearized;
    return static_cast<const std::uint8_t*>(rte_pktmbuf_read(m, 0, m->pkt_len, buf.data()));
}

std::size_t DpdkDriver::rx_burst(std::span<driver::RxFrame> out, std::uint64_t now_ns) {
    attach_thread();  // the mempool caches need an lcore (eal.hpp)
    // The views of the previous burst are no longer in use.
    for (rte_mbuf* m : rx_held_) rte_pktmbuf_free(m);
    rx_held_.clear();
    poll_links(now_ns);
    for (Port& p : ports_) flush(p);
    if (rx_linear_.size() < out.size()) rx_linear_.resize(out.size(), std::vector<std::uint8_t>(kFrameRoom));

    std::size_t n = 0;
    std::array<rte_mbuf*, 64> mbufs;
    for (std::size_t k = 0; k < ports_.size() && n < out.size(); ++k) {
        const std::size_t plane = (rx_next_port_ + k) % ports_.size();
        Port& p = ports_[plane];
        const auto want = static_cast<std::uint16_t>(std::min<std::size_t>(out.size() - n, mbufs.size()));
        const std::uint16_t got = rte_eth_rx_burst(p.id, 0, mbufs.data(), want);
        for (std::uint16_t i = 0; i < got; ++i) {
            rte_mbuf* m = mbufs[i];
            rx_held_.push_back(m);
            ++p.c.rx_frames;
            p.c.rx_bytes += m->pkt_len;
            if (m->ol_flags & (RTE_MBUF_F_RX_IP_CKSUM_BAD | RTE_MBUF_F_RX_L4_CKSUM_BAD)) ++p.c.rx_cksum_bad_flag;
            if (m->pkt_len < kEthHeader + kIpv6Header) {
                ++p.c.rx_short;
                continue;
            }
            const std::uint8_t* d = rx_view(m, n, p);
            if (d == nullptr) continue;
            const std::uint16_t ethertype = static_cast<std::uint16_t>(d[12] << 8 | d[13]);
            if (ethertype != kEtherTypeIpv6) {
                ++p.c.rx_not_ipv6;
                continue;
            }
            const std::uint8_t next = d[kEthHeader + 6];
            if (next == kNextIcmpv6 || next == kNextHopByHop) {
                ++p.c.rx_kernel_noise;
                continue;
            }
            if (d[0] & 1) {
                ++p.c.rx_multicast;
                continue;
            }
            if (std::memcmp(d, p.mac.data(), 6) != 0) {
                ++p.c.rx_other_mac;
                continue;
            }
            out[n++] = {d, m->pkt_len, static_cast<std::uint8_t>(plane)};
            ++p.c.rx_delivered;
        }
    }
    rx_next_port_ = (rx_next_port_ + 1) % ports_.size();
    return n;
}

rte_mbuf* DpdkDriver::build_copy(const wire::GatherFrame& g, Port& p) {
    rte_mbuf* m = rte_pktmbuf_alloc(p.pools->frames);
    if (m == nullptr) {
        ++p.c.tx_pool_empty;
        return nullptr;
    }
    const std::size_t len = g.size();
    auto* dst = reinterpret_cast<std::uint8_t*>(rte_pktmbuf_append(m, static_cast<std::uint16_t>(len)));
    if (dst == nullptr || g.flatten(std::span(dst, len)) != len) {
        rte_pktmbuf_free(m);
        ++p.c.tx_pool_empty;
        return nullptr;
    }
    ++p.c.tx_copied;
    return m;
}

rte_mbuf* DpdkDriver::build(const wire::GatherFrame& g, Port& p, TxReleaseRing::Record& rec) {
    // Small payloads are cheaper to copy than to chain.
    const bool zero_copy = opt_.zero_copy && p.chains && !g.payload_in_engine_memory && g.segment_count > 0 &&
                           g.payload_len() >= 256 && g.header_len <= kSmallRoom;
    if (!zero_copy) return build_copy(g, p);

    rte_mbuf* head = rte_pktmbuf_alloc(p.pools->small);
    rte_mbuf* tail = rte_pktmbuf_alloc(p.pools->small);
    std::array<rte_mbuf*, wire::GatherFrame::kMaxSegments> seg{};
    bool ok = head != nullptr && tail != nullptr &&
              rte_pktmbuf_alloc_bulk(p.pools->ext, seg.data(), g.segment_count) == 0;
    if (!ok) {
        rte_pktmbuf_free(head);
        rte_pktmbuf_free(tail);
        ++p.c.tx_pool_empty;
        return nullptr;
    }
    std::memcpy(rte_pktmbuf_append(head, g.header_len), g.header.data(), g.header_len);
    std::memcpy(rte_pktmbuf_append(tail, g.tail_len), g.tail.data(), g.tail_len);
    rte_mbuf* last = head;
    for (std::size_t i = 0; i < g.segment_count; ++i) {
        rte_mbuf_ext_shared_info& sh = rec.shinfo[i];
        sh.free_cb = &TxReleaseRing::on_free;
        sh.fcb_opaque = &rec;
        rte_mbuf_ext_refcnt_set(&sh, 1);
        ++rec.pending;
        void* va = const_cast<std::uint8_t*>(g.segments[i].data);
        const auto len = static_cast<std::uint16_t>(g.segments[i].len);
        rte_pktmbuf_attach_extbuf(seg[i], va, iova_of(va), len, &sh);
        seg[i]->data_len = len;
        seg[i]->pkt_len = len;
        last->next = seg[i];
        last = seg[i];
    }
    last->next = tail;
    head->nb_segs = static_cast<std::uint16_t>(g.segment_count + 2);
    head->pkt_len = static_cast<std::uint32_t>(g.size());
    ++p.c.tx_zero_copy;
    return head;
}

void DpdkDriver::drop_backlog(Port& p) {
    // Frames still waiting for a port that went down are lost with it (their
    // payload is released as they are freed).
    for (std::size_t i = p.backlog_head; i < p.backlog.size(); ++i) rte_pktmbuf_free(p.backlog[i]);
    p.c.tx_dropped_link_down += p.backlog.size() - p.backlog_head;
    backlogged_ -= p.backlog.size() - p.backlog_head;
    p.backlog.clear();
    p.backlog_head = 0;
}

void DpdkDriver::flush(Port& p) {
    while (p.backlog_head < p.backlog.size()) {
        const auto n = static_cast<std::uint16_t>(std::min<std::size_t>(p.backlog.size() - p.backlog_head, 512));
        const std::uint16_t sent = rte_eth_tx_burst(p.id, 0, p.backlog.data() + p.backlog_head, n);
        p.backlog_head += sent;
        backlogged_ -= sent;
        if (sent < n) break;
    }
    if (p.backlog_head == p.backlog.size()) {
        p.backlog.clear();
        p.backlog_head = 0;
    } else if (p.backlog_head > p.backlog.capacity() / 2) {
        p.backlog.erase(p.backlog.begin(), p.backlog.begin() + static_cast<std::ptrdiff_t>(p.backlog_head));
        p.backlog_head = 0;
    }
}

std::size_t DpdkDriver::tx_burst(std::span<const wire::GatherFrame> frames, std::uint64_t now_ns) {
    attach_thread();
    poll_links(now_ns);
    std::size_t accepted = 0;
    std::uint32_t touched = 0;  // ports with new frames
    for (const wire::GatherFrame& g : frames) {
        if (g.plane >= ports_.size() || release_->full()) break;
        Port& p = ports_[g.plane];
        if (!p.up) {  // a dead port: the frame is lost, as on a cable pulled out
            ++p.c.tx_dropped_link_down;
            (void)release_->begin_frame();
            release_->commit_frame();
            ++accepted;
            continue;
        }
        if (g.size() > p.max_frame) {
            // The PMD would refuse it forever: it is lost here, counted, and
            // the QP's MTU must come down (see the warning).
            if (p.c.tx_oversize++ == 0)
                log::logger().warn("dpdk: port {} ({}) takes frames of at most {} B; a {} B frame was dropped: "
                                       "use a QP MTU of at most {} B", p.id, p.name, p.max_frame, g.size(),
                                       max_payload(p.max_frame));
            (void)release_->begin_frame();
            release_->commit_frame();
            ++accepted;
            continue;
        }
        if (p.backlog.size() - p.backlog_head >= opt_.backlog) {
            ++p.c.tx_backlog_full;
            break;
        }
        TxReleaseRing::Record& rec = release_->begin_frame();
        rte_mbuf* m = build(g, p, rec);
        if (m == nullptr) break;
        release_->commit_frame();  // a copied frame (nothing pending) is released at once
        p.backlog.push_back(m);
        ++backlogged_;
        ++p.c.tx_frames;
        p.c.tx_bytes += g.size();
        touched |= 1u << g.plane;
        ++accepted;
    }
    for (std::size_t i = 0; i < ports_.size(); ++i)
        if ((touched & (1u << i)) || ports_[i].backlog_head < ports_[i].backlog.size()) flush(ports_[i]);
    return accepted;
}

std::uint64_t DpdkDriver::tx_release_count() const {
    // PMDs that free transmitted mbufs lazily (real NICs) are asked to do so
    // while zero-copy frames are outstanding.
    if (release_->released() < release_->accepted())
        for (const Port& p : ports_) (void)rte_eth_tx_done_cleanup(p.id, 0, 0);
    return release_->released();
}

std::size_t DpdkDriver::poll_link_events(std::span<driver::LinkEvent> out) {
    const std::size_t n = std::min(out.size(), link_events_.size());
    std::copy_n(link_events_.begin(), n, out.begin());
    link_events_.erase(link_events_.begin(), link_events_.begin() + static_cast<std::ptrdiff_t>(n));
    return n;
}

bool DpdkDriver::link_up(std::uint32_t plane) const { return plane < ports_.size() && ports_[plane].up; }

std::uint64_t DpdkDriver::next_event_ns() const {
    // Backlogged frames or unreleased payload: poll again at once. Otherwise
    // the next link poll is the only timed event (frames arrive by polling).
    if (backlogged_ != 0 || release_->released() < release_->accepted()) return 0;
    return next_link_poll_ns_;
}

driver::DriverStats DpdkDriver::stats() const {
    driver::DriverStats s{};
    for (const Port& p : ports_) {
        s.rx_frames += p.c.rx_delivered;
        s.tx_frames += p.c.tx_frames;
        s.rx_bytes += p.c.rx_bytes;
        s.tx_bytes += p.c.tx_bytes;
        s.tx_dropped_link_down += p.c.tx_dropped_link_down;
        s.tx_dropped_full += p.c.tx_pool_empty + p.c.tx_backlog_full;
        rte_eth_stats es{};
        if (rte_eth_stats_get(p.id, &es) == 0) s.rx_dropped_full += es.imissed + es.rx_nombuf;
    }
    return s;
}

void DpdkDriver::counters(std::vector<std::pair<std::string, std::uint64_t>>& out) const {
    for (std::size_t i = 0; i < ports_.size(); ++i) {
        const Port& p = ports_[i];
        const std::string k = "plane" + std::to_string(i) + ".";
        const PortCounters& c = p.c;
        for (const auto& [name, v] : std::initializer_list<std::pair<const char*, std::uint64_t>>{
                 {"rx_frames", c.rx_frames}, {"rx_delivered", c.rx_delivered}, {"rx_bytes", c.rx_bytes}, {"tx_frames", c.tx_frames},
                 {"tx_bytes", c.tx_bytes}, {"tx_zero_copy", c.tx_zero_copy}, {"tx_copied", c.tx_copied},
                 {"tx_pool_empty", c.tx_pool_empty}, {"tx_backlog_full", c.tx_backlog_full},
                 {"tx_dropped_link_down", c.tx_dropped_link_down}, {"rx_short", c.rx_short},
                 {"rx_not_ipv6", c.rx_not_ipv6}, {"rx_kernel_noise", c.rx_kernel_noise},
                 {"rx_multicast", c.rx_multicast}, {"rx_other_mac", c.rx_other_mac},
                 {"rx_oversize", c.rx_oversize}, {"rx_linearized", c.rx_linearized},
                 {"rx_cksum_bad_flag", c.rx_cksum_bad_flag}, {"link_changes", c.link_changes},
                 {"tx_oversize", c.tx_oversize}, {"max_frame", p.max_frame}})
            out.emplace_back(k + name, v);
        rte_eth_stats es{};
        if (rte_eth_stats_get(p.id, &es) == 0) {
            out.emplace_back(k + "pmd_imissed", es.imissed);
            out.emplace_back(k + "pmd_ierrors", es.ierrors);
            out.emplace_back(k + "pmd_oerrors", es.oerrors);
            out.emplace_back(k + "pmd_rx_nombuf", es.rx_nombuf);
        }
        out.emplace_back(k + "port_id", p.id);
        out.emplace_back(k + "tx_backlog_now", p.backlog.size() - p.backlog_head);
    }
    out.emplace_back("tx_released", release_->released());
    out.emplace_back("tx_accepted", release_->accepted());
}

}  // namespace omrc::dpdk
