// SPDX-License-Identifier: BSD-3-Clause
#include "wire/usid.hpp"

#include <algorithm>

#include "wire/bytes.hpp"

namespace omrc::wire {

WireError usid_container_build(std::uint32_t block, std::span<const std::uint16_t> usids,
                               Ipv6Addr& out) noexcept {
    if (usids.size() > kUsidsPerContainer) return WireError::usid_too_many;
    if (std::find(usids.begin(), usids.end(), std::uint16_t{0}) != usids.end()) return WireError::usid_zero;
    out.fill(0);
    store_be32(out.data(), block);
    for (std::size_t i = 0; i < usids.size(); ++i) store_be16(out.data() + 4 + 2 * i, usids[i]);
    return WireError::ok;
}

WireError usid_container_parse(const Ipv6Addr& addr, UsidContainer& out) noexcept {
    out = {};
    out.block = load_be32(addr.data());
    std::size_t i = 0;
    for (; i < kUsidsPerContainer; ++i) {
        const std::uint16_t u = load_be16(addr.data() + 4 + 2 * i);
        if (u == 0) break;
        out.usids[i] = u;
    }
    out.count = static_cast<std::uint8_t>(i);
    for (std::size_t b = 4 + 2 * i; b < 16; ++b)
        if (addr[b] != 0) return WireError::bad_field;
    return WireError::ok;
}

WireError usid_un_process(Ipv6Addr& da, SrhHdr* srh, std::uint32_t block, std::uint16_t my_usid,
                          UnAction& action) noexcept {
    if (load_be32(da.data()) != block || load_be16(da.data() + 4) != my_usid) return WireError::usid_no_match;
    // Shift bytes 6..15 to 4..13 and zero-fill the last uSID.
    std::copy(da.begin() + 6, da.end(), da.begin() + 4);
    da[14] = 0;
    da[15] = 0;
    const bool remaining = std::any_of(da.begin() + 4, da.end(), [](std::uint8_t b) { return b != 0; });
    if (remaining) {
        action = UnAction::shifted;
        return WireError::ok;
    }
    if (srh != nullptr && srh->segments_left > 0) {
        if (srh->segments_left > srh->last_entry || srh->last_entry >= srh->num_segments)
            return WireError::bad_srh;
        --srh->segments_left;
        da = srh->segments[srh->segments_left];
        action = UnAction::next_segment;
        return WireError::ok;
    }
    action = UnAction::end_of_path;
    return WireError::ok;
}

WireError usid_path_encode(std::uint32_t block, std::span<const std::uint16_t> path, Ipv6Addr& da,
                           SrhHdr& srh, bool& srh_needed) noexcept {
    if (path.empty()) return WireError::bad_field;
    const std::size_t containers = (path.size() + kUsidsPerContainer - 1) / kUsidsPerContainer;
    if (containers > SrhHdr::kMaxSegments) return WireError::usid_too_many;
    srh_needed = containers > 1;
    if (!srh_needed) return usid_container_build(block, path, da);
    srh = SrhHdr{};
    srh.num_segments = static_cast<std::uint8_t>(containers);
    srh.last_entry = static_cast<std::uint8_t>(containers - 1);
    srh.segments_left = static_cast<std::uint8_t>(containers - 1);
    for (std::size_t c = 0; c < containers; ++c) {
        const std::size_t first = c * kUsidsPerContainer;
        const std::size_t n = std::min(kUsidsPerContainer, path.size() - first);
        // Container c of the path goes to wire index (containers - 1 - c).
        const WireError e = usid_container_build(block, path.subspan(first, n),
                                                 srh.segments[containers - 1 - c]);
        if (e != WireError::ok) return e;
    }
    da = srh.segments[srh.segments_left];
    return WireError::ok;
}

}  // namespace omrc::wire
