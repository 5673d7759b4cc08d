// SPDX-License-Identifier: BSD-3-Clause
// The udp driver's counters and addresses (UdpDriver's accessors). The rest
// of the driver, one concern per file: sockets.cpp (opening, closing),
// datapath.cpp (rx_burst, tx_burst), link.cpp (link state); udp_impl.hpp
// holds the state they share.
#include "drivers/udp/udp_impl.hpp"

namespace omrc::udp {

bool UdpDriver::raw() const { return impl_->raw; }

std::uint32_t UdpDriver::planes() const { return static_cast<std::uint32_t>(impl_->planes.size()); }

driver::DriverStats UdpDriver::stats() const {
    const UdpCounters& c = impl_->c;
    driver::DriverStats s;
    s.rx_frames = c.rx_frames;
    s.tx_frames = c.tx_frames;
    s.rx_bytes = c.rx_bytes;
    s.tx_bytes = c.tx_bytes;
    s.tx_dropped_link_down = c.tx_link_down;
    s.tx_dropped_full = c.tx_err_nobufs;
    s.rx_dropped_full = c.rx_socket_overflow;
    return s;
}

UdpCounters UdpDriver::udp_counters() const { return impl_->c; }

void UdpDriver::counters(std::vector<std::pair<std::string, std::uint64_t>>& out) const {
    const UdpCounters& c = impl_->c;
#define OMRC_UDP_COUNTER(f) out.emplace_back(#f, c.f)
    OMRC_UDP_COUNTER(rx_frames); OMRC_UDP_COUNTER(rx_bytes); OMRC_UDP_COUNTER(rx_short);
    OMRC_UDP_COUNTER(rx_truncated); OMRC_UDP_COUNTER(rx_ctrl_truncated); OMRC_UDP_COUNTER(rx_bad_family);
    OMRC_UDP_COUNTER(rx_no_pktinfo); OMRC_UDP_COUNTER(rx_socket_overflow); OMRC_UDP_COUNTER(rx_errors);
    OMRC_UDP_COUNTER(rx_link_down); OMRC_UDP_COUNTER(rx_self_probes);
    if (impl_->raw) {
        OMRC_UDP_COUNTER(rx_not_ipv6); OMRC_UDP_COUNTER(rx_multicast); OMRC_UDP_COUNTER(rx_other_mac);
        OMRC_UDP_COUNTER(rx_kernel_noise); OMRC_UDP_COUNTER(rx_outgoing); OMRC_UDP_COUNTER(link_polls);
    }
    OMRC_UDP_COUNTER(tx_frames); OMRC_UDP_COUNTER(tx_bytes); OMRC_UDP_COUNTER(tx_bad_frame);
    OMRC_UDP_COUNTER(tx_bad_peer_mac); OMRC_UDP_COUNTER(tx_ev_plane); OMRC_UDP_COUNTER(tx_bad_source);
    OMRC_UDP_COUNTER(tx_too_large); OMRC_UDP_COUNTER(tx_bad_plane); OMRC_UDP_COUNTER(tx_link_down);
    OMRC_UDP_COUNTER(tx_err_unreachable); OMRC_UDP_COUNTER(tx_err_refused); OMRC_UDP_COUNTER(tx_err_nobufs);
    OMRC_UDP_COUNTER(tx_err_perm); OMRC_UDP_COUNTER(tx_err_msgsize); OMRC_UDP_COUNTER(tx_err_socket);
    OMRC_UDP_COUNTER(tx_err_other); OMRC_UDP_COUNTER(tx_backpressure);
    OMRC_UDP_COUNTER(cq_overflow); OMRC_UDP_COUNTER(submits); OMRC_UDP_COUNTER(link_changes);
#undef OMRC_UDP_COUNTER
}
const wire::Ipv6Addr& UdpDriver::address() const { return impl_->addr; }
std::uint16_t UdpDriver::base_port(std::uint32_t plane) const {
    return plane < impl_->planes.size() ? impl_->planes[plane].base_port : 0;
}
core::PlaneMacs UdpDriver::macs() const {
    core::PlaneMacs m{};
    for (std::uint32_t p = 0; p < impl_->planes.size(); ++p) m[p] = impl_->planes[p].mac;
    return m;
}

}  // namespace omrc::udp
