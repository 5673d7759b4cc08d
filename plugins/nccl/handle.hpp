// SPDX-License-Identifier: BSD-3-Clause
// The listen handle: the NCCL_NET_HANDLE_MAXSIZE (128) bytes listen fills
// and NCCL carries to the peer, whose connect reads them. It says where the
// listener is (a TCP address) and which listener it is (a random nonce the
// listener checks in the connector's hello). Layout, integers big-endian:
//
//   0  u32 magic "OMNH"      4  u16 version     6  u8 family (4 or 6), u8 0
//   8  16 bytes IP address (IPv4: the first 4)   24 u16 port   26 u16 0, u32 0
//   32 u64 listener nonce   40 u64 connect stage (0 as listen writes it)
//   48 … 127 zero
//
// With the connection manager (OMRC_NCCL_SETUP=cm, cm_setup.hpp) the handle
// says which device listens and on which service instead (version 2):
//
//   0  u32 magic "OMNH"      4  u16 version 2   6  u8 planes (1..13), u8 0
//   8  16 bytes the device's inner IPv6 address
//   24 u32 host (srv6 frame mode)  28 u32 0
//   32 u64 service id (random, the listener's own)   40 u64 connect stage
//   48 6 bytes per plane: the device's next-hop MACs; zero up to byte 127
//
// (13 planes fill it: a device of more plane ports listens over TCP only.)
//
// The connect stage is the one field the connecting side writes: NCCL calls
// connect again with the same handle buffer until it returns a comm, and the
// stage names the connection in progress (a key into a table, never a
// pointer, so garbage handle bytes cannot make the plugin follow one).
#pragma once

#include <cstdint>
#include <string>

#include "omrc/verbs.hpp"
#include "socket.hpp"

namespace omrc::nccl {

inline constexpr std::uint32_t kHandleMagic = 0x4f4d4e48;  // "OMNH"
inline constexpr std::uint16_t kHandleVersion = 1;    ///< TCP handshake (handshake.hpp)
inline constexpr std::uint16_t kCmHandleVersion = 2;  ///< connection manager (cm_setup.hpp)
inline constexpr std::size_t kHandleBytes = 128;  // NCCL_NET_HANDLE_MAXSIZE
inline constexpr std::size_t kHandleUsedBytes = 48;
inline constexpr std::uint32_t kCmHandleMaxPlanes = (kHandleBytes - 48) / 6;  // 13

struct ListenHandle {
    SockAddr listener;
    std::uint64_t nonce = 0;
    std::uint64_t stage = 0;
};

/// A listener of the connection manager (version 2).
struct CmHandle {
    DeviceAddress device{};
    std::uint64_t service_id = 0;
    std::uint64_t stage = 0;
};

/// The version field of a handle whose magic is right, else 0.
std::uint16_t handle_version(const void* handle) noexcept;

/// Writes all kHandleBytes bytes.
void write_handle(const ListenHandle& h, void* handle) noexcept;
void write_cm_handle(const CmHandle& h, void* handle) noexcept;
/// 0, or EINVAL with *error naming the first field that is wrong.
int read_cm_handle(const void* handle, CmHandle* out, std::string* error);
/// 0, or EINVAL with *error naming the first field that is wrong.
int read_handle(const void* handle, ListenHandle* out, std::string* error);
/// Sets only the connect stage (either version).
void write_handle_stage(void* handle, std::uint64_t stage) noexcept;

}  // namespace omrc::nccl
