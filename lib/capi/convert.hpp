// SPDX-License-Identifier: BSD-3-Clause
// The C structs of include/omrc/omrc.h to and from the C++ ones of
// include/omrc/verbs.hpp and config.hpp. Conversions from C check what the
// C++ types cannot hold (an enum value out of range, a NULL array) and
// return EINVAL with the reason in `why`.
#pragma once

#include <string>

#include "omrc/config.hpp"
#include "omrc/omrc.h"
#include "omrc/verbs.hpp"

namespace omrc::capi {

int from_c(const omrc_device_options& in, DeviceOptions& out, std::string& why);

omrc_device_address to_c(const DeviceAddress& a) noexcept;
DeviceAddress from_c(const omrc_device_address& a) noexcept;

omrc_cc_config to_c(const CcConfig& c) noexcept;
/// EINVAL for an algorithm that is no omrc_cc_algorithm.
int from_c(const omrc_cc_config& in, CcConfig& out) noexcept;

omrc_qp_defaults to_c(const QpDefaults& d) noexcept;

/// Reads the fields `mask` selects; EINVAL for a state, path policy or CC
/// algorithm that is no value of its enum, or a peer with more than
/// OMRC_MAX_PLANES planes.
int from_c(const omrc_qp_attr& in, std::uint32_t mask, QpAttr& out) noexcept;
omrc_qp_attr to_c(const QpAttr& a) noexcept;

omrc_wc to_c(const Wc& wc) noexcept;

}  // namespace omrc::capi
