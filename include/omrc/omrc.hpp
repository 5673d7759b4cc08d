// SPDX-License-Identifier: BSD-3-Clause
// OpenMRC: everything an application includes.
#pragma once

#include "omrc/config.hpp"
#include "omrc/verbs.hpp"
#include "omrc/version.hpp"
