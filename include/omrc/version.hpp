// SPDX-License-Identifier: BSD-3-Clause
// OpenMRC version of the headers and of the library in use.
#pragma once

#define OMRC_VERSION_MAJOR 0
#define OMRC_VERSION_MINOR 1
#define OMRC_VERSION_PATCH 0

namespace omrc {

/// "MAJOR.MINOR.PATCH" of the linked library (may differ from the headers).
const char* version() noexcept;

}  // namespace omrc
