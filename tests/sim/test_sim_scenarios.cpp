// SPDX-License-Identifier: BSD-3-Clause
#include <catch2/catch.hpp>
