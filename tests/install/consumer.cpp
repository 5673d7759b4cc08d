// SPDX-License-Identifier: BSD-3-Clause
// A program outside the tree that uses the installed OpenMRC.
#include <omrc/version.hpp>

#include <cstdio>
#include <cstring>

int main() {
    std::printf("OpenMRC %s\n", omrc::version());
    return std::strcmp(omrc::version(), "0.1.0") == 0 ? 0 : 1;
}
