// SPDX-License-Identifier: BSD-3-Clause
// The C API's work requests on their way to the verbs layer: SGE arrays
// checked and copied, and the posting of the prefix that passed.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "omrc/omrc.h"
#include "omrc/verbs.hpp"

namespace omrc::capi {

/// The SGE array of one C work request: NULL is allowed only without SGEs,
/// and more than OMRC_MAX_SGE is refused before anything is copied (the QP's
/// own max_*_sge check follows in the verbs layer).
inline bool sges_readable(const omrc_sge* list, std::uint32_t n) {
    return n <= OMRC_MAX_SGE && (list != nullptr || n == 0);
}

inline void append_sges(std::vector<omrc::Sge>& to, const omrc_sge* list, std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i) to.push_back({list[i].addr, list[i].length, list[i].lkey});
}

/// The C receive WRs as verbs RecvWrs, up to the first whose SGE array is
/// not readable: fills `sge_list` and `list` (reused scratch; `list`'s spans
/// point into `sge_list`) and returns how many were converted.
inline std::size_t convert_recv_wrs(const omrc_recv_wr* wrs, std::size_t n, std::vector<omrc::Sge>& sge_list,
                                    std::vector<omrc::RecvWr>& list) {
    std::size_t valid = 0;
    std::size_t sges = 0;
    for (; valid < n && sges_readable(wrs[valid].sg_list, wrs[valid].num_sge); ++valid) sges += wrs[valid].num_sge;
    sge_list.clear();
    list.clear();
    sge_list.reserve(sges);  // no reallocation below: the spans stay valid
    list.reserve(valid);
    for (std::size_t i = 0; i < valid; ++i) {
        const std::size_t first = sge_list.size();
        append_sges(sge_list, wrs[i].sg_list, wrs[i].num_sge);
        list.push_back({wrs[i].wr_id, std::span<const omrc::Sge>(sge_list.data() + first, wrs[i].num_sge)});
    }
    return valid;
}

/// Posts the converted prefix, then reports the WR the C layer refused (at
/// index `valid` of `total`) if the prefix went through.
template <class Post>
int post_prefix(Post&& post, std::size_t valid, std::size_t total, std::size_t* bad_wr) {
    if (valid != 0) {
        std::size_t bad = 0;
        if (const int rc = post(&bad); rc != 0) {
            if (bad_wr != nullptr) *bad_wr = bad;
            return rc;
        }
    }
    if (valid == total) return 0;
    if (bad_wr != nullptr) *bad_wr = valid;
    return EINVAL;
}

}  // namespace omrc::capi
