// SPDX-License-Identifier: BSD-3-Clause
// The C API's work requests on their way to the verbs layer: SGE arrays
// checked and copied, and the posting of the prefix that passed.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
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
