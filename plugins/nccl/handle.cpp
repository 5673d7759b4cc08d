// SPDX-License-Identifier: BSD-3-Clause
#include "handle.hpp"

#include <netinet/in.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "bytes.hpp"

namespace omrc::nccl {

void write_handle(const ListenHandle& h, void* handle) noexcept {
    auto* p = static_cast<std::uint8_t*>(handle);
    std::memset(p, 0, kHandleBytes);
    put_be<std::uint32_t>(p, kHandleMagic);
    put_be<std::uint16_t>(p + 4, kHandleVersion);
    p[6] = h.listener.family == AF_INET ? 4 : 6;
    std::memcpy(p + 8, h.listener.addr, 16);
    put_be<std::uint16_t>(p + 24, h.listener.port);
    put_be<std::uint64_t>(p + 32, h.nonce);
    put_be<std::uint64_t>(p + 40, h.stage);
}

void write_handle_stage(void* handle, std::uint64_t stage) noexcept {
    put_be<std::uint64_t>(static_cast<std::uint8_t*>(handle) + 40, stage);
}

std::uint16_t handle_version(const void* handle) noexcept {
    const auto* p = static_cast<const std::uint8_t*>(handle);
    return get_be<std::uint32_t>(p) == kHandleMagic ? get_be<std::uint16_t>(p + 4) : 0;
}

namespace {

constexpr std::size_t kCmMacsOffset = 48;

}  // namespace

void write_cm_handle(const CmHandle& h, void* handle) noexcept {
    auto* p = static_cast<std::uint8_t*>(handle);
    std::memset(p, 0, kHandleBytes);
    put_be<std::uint32_t>(p, kHandleMagic);
    put_be<std::uint16_t>(p + 4, kCmHandleVersion);
    p[6] = static_cast<std::uint8_t>(h.device.planes);
    std::memcpy(p + 8, h.device.addr.data(), 16);
    put_be<std::uint32_t>(p + 24, h.device.host);
    put_be<std::uint64_t>(p + 32, h.service_id);
    put_be<std::uint64_t>(p + 40, h.stage);
    for (std::uint32_t i = 0; i < h.device.planes && i < kCmHandleMaxPlanes; ++i)
        std::memcpy(p + kCmMacsOffset + 6 * i, h.device.macs[i].data(), 6);
}

int read_cm_handle(const void* handle, CmHandle* out, std::string* error) {
    const auto* p = static_cast<const std::uint8_t*>(handle);
    auto bad = [&](std::string what) {
        *error = "not an OpenMRC connection-manager handle: " + std::move(what);
        return EINVAL;
    };
    if (const auto magic = get_be<std::uint32_t>(p); magic != kHandleMagic)
        return bad(fmt::format("magic {:#010x}, expected {:#010x}", magic, kHandleMagic));
    if (const auto version = get_be<std::uint16_t>(p + 4); version != kCmHandleVersion)
        return bad(fmt::format("version {}, expected {}", version, kCmHandleVersion));
    const std::uint32_t planes = p[6];
    if (planes == 0 || planes > kCmHandleMaxPlanes)
        return bad(fmt::format("{} planes (1 to {})", planes, kCmHandleMaxPlanes));
    for (std::size_t i : {std::size_t{7}, std::size_t{28}, std::size_t{29}, std::size_t{30}, std::size_t{31}})
        if (p[i] != 0) return bad(fmt::format("reserved byte {} is {:#04x}", i, p[i]));
    for (std::size_t i = kCmMacsOffset + 6 * planes; i < kHandleBytes; ++i)
        if (p[i] != 0) return bad(fmt::format("reserved byte {} is {:#04x}", i, p[i]));
    CmHandle h;
    h.device.planes = planes;
    std::memcpy(h.device.addr.data(), p + 8, 16);
    h.device.host = get_be<std::uint32_t>(p + 24);
    h.service_id = get_be<std::uint64_t>(p + 32);
    if (h.service_id == 0) return bad("service id 0");
    h.stage = get_be<std::uint64_t>(p + 40);
    for (std::uint32_t i = 0; i < planes; ++i) std::memcpy(h.device.macs[i].data(), p + kCmMacsOffset + 6 * i, 6);
    *out = h;
    return 0;
}

int read_handle(const void* handle, ListenHandle* out, std::string* error) {
    const auto* p = static_cast<const std::uint8_t*>(handle);
    auto bad = [&](std::string what) {
        *error = "not an OpenMRC listen handle: " + std::move(what);
        return EINVAL;
    };
    if (const auto magic = get_be<std::uint32_t>(p); magic != kHandleMagic)
        return bad(fmt::format("magic {:#010x}, expected {:#010x}", magic, kHandleMagic));
    if (const auto version = get_be<std::uint16_t>(p + 4); version != kHandleVersion)
        return bad(fmt::format("version {}, this plugin speaks {}", version, kHandleVersion));
    if (p[6] != 4 && p[6] != 6) return bad(fmt::format("address family {}", p[6]));
    for (std::size_t i : {std::size_t{7}, std::size_t{26}, std::size_t{27}, std::size_t{28}, std::size_t{29},
                          std::size_t{30}, std::size_t{31}})
        if (p[i] != 0) return bad(fmt::format("reserved byte {} is {:#04x}", i, p[i]));
    for (std::size_t i = kHandleUsedBytes; i < kHandleBytes; ++i)
        if (p[i] != 0) return bad(fmt::format("reserved byte {} is {:#04x}", i, p[i]));
    ListenHandle h;
    h.listener.family = p[6] == 4 ? AF_INET : AF_INET6;
    std::memcpy(h.listener.addr, p + 8, 16);
    if (h.listener.family == AF_INET)
        for (std::size_t i = 4; i < 16; ++i)
            if (h.listener.addr[i] != 0) return bad("IPv4 address with bytes beyond the fourth");
    h.listener.port = get_be<std::uint16_t>(p + 24);
    if (h.listener.port == 0) return bad("port 0");
    h.nonce = get_be<std::uint64_t>(p + 32);
    if (h.nonce == 0) return bad("listener nonce 0");
    h.stage = get_be<std::uint64_t>(p + 40);
    *out = h;
    return 0;
}

}  // namespace omrc::nccl
