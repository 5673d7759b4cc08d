# SPDX-License-Identifier: BSD-3-Clause
# Every dependency comes from a Debian 12 package (scripts/deps installs them).
find_package(PkgConfig REQUIRED)
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
# libpcap: the pcap=FILE device argument (capture driver) and wire_samples.
pkg_check_modules(PCAP REQUIRED IMPORTED_TARGET libpcap)
# DPDK is optional: without it the "dpdk" driver and its tests are not built.
pkg_check_modules(DPDK IMPORTED_TARGET libdpdk)
find_package(fmt 9 REQUIRED)
find_package(spdlog 1.10 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
if(OMRC_BUILD_TESTS)
  find_package(Catch2 2.13 REQUIRED)
endif()
if(OMRC_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
if(OMRC_BUILD_EXAMPLES OR OMRC_BUILD_BENCH)
  find_package(CLI11 REQUIRED)
endif()
