# SPDX-License-Identifier: BSD-3-Clause
# Every dependency comes from a Debian 12 package (scripts/deps installs them).
find_package(PkgConfig REQUIRED)
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
# libpcap: the pcap=FILE device argument (capture driver) and wire_samples.
pkg_check_modules(PCAP REQUIRED IMPORTED_TARGET libpcap)
# Encrypted mode (lib/security): AES-GCM from intel-ipsec-mb (libipsec-mb-dev,
# no pkg-config file), the PSP key derivation (SP 800-108 KBKDF with CMAC) and
# constant-time compares from OpenSSL 3's libcrypto. bench/crypto_cost
# measures the two libraries' AES-GCM against each other (docs/PERFORMANCE.md).
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET libcrypto>=3)
find_library(OMRC_IPSECMB_LIB IPSec_MB REQUIRED)
find_path(OMRC_IPSECMB_INCLUDE intel-ipsec-mb.h REQUIRED)
add_library(omrc_ipsecmb INTERFACE)
target_include_directories(omrc_ipsecmb INTERFACE ${OMRC_IPSECMB_INCLUDE})
target_link_libraries(omrc_ipsecmb INTERFACE ${OMRC_IPSECMB_LIB})
# DPDK is optional: without it the "dpdk" driver and its tests are not built.
pkg_check_modules(DPDK IMPORTED_TARGET libdpdk)
find_package(fmt 9 REQUIRED)
find_package(spdlog 1.10 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
# Worker threads of a device (lib/runtime/worker_thread.cpp).
find_package(Threads REQUIRED)
if(OMRC_BUILD_TESTS)
  find_package(Catch2 2.13 REQUIRED)
endif()
if(OMRC_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
# Command lines: examples, bench and tools/pcap (omrc-pcap, built in every preset).
find_package(CLI11 REQUIRED)
# toml++ (Debian: libtomlplusplus-dev): device configuration files (lib/config),
# compiled header-only into libomrc, so only its headers are needed here.
find_package(tomlplusplus QUIET)
if(TARGET tomlplusplus::tomlplusplus)
  get_target_property(omrc_toml_hint tomlplusplus::tomlplusplus INTERFACE_INCLUDE_DIRECTORIES)
endif()
find_path(OMRC_TOMLPLUSPLUS_INCLUDE_DIR toml++/toml.h HINTS ${omrc_toml_hint})
if(NOT OMRC_TOMLPLUSPLUS_INCLUDE_DIR)
  message(FATAL_ERROR "toml++ not found (toml++/toml.h): libomrc reads device configuration files with it. "
                      "Install it (Debian 12: apt-get install libtomlplusplus-dev; scripts/deps does) or set "
                      "OMRC_TOMLPLUSPLUS_INCLUDE_DIR to the directory that holds toml++/toml.h.")
endif()
