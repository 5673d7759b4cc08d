// SPDX-License-Identifier: BSD-3-Clause
#include "omrc/version.hpp"

#define OMRC_STR2(x) #x
#define OMRC_STR(x) OMRC_STR2(x)

namespace omrc {

const char* version() noexcept {
    return OMRC_STR(OMRC_VERSION_MAJOR) "." OMRC_STR(OMRC_VERSION_MINOR) "." OMRC_STR(OMRC_VERSION_PATCH);
}

}  // namespace omrc
