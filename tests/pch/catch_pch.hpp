// SPDX-License-Identifier: BSD-3-Clause
// Precompiled for meson's test programs (cpp_pch): Catch2's single header is
// the largest thing each test file includes. CMake does the same with
// target_precompile_headers (tests/CMakeLists.txt). No include guard: meson
// compiles it as a main file.
#include <catch2/catch.hpp>
