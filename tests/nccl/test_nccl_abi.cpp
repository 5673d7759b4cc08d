// SPDX-License-Identifier: BSD-3-Clause
// The plugin as NCCL finds it: every ABI version's symbol, its name, its
// entry points, init, devices and the properties each version reports.
#include <catch2/catch.hpp>

#include <cstring>

#include "plugin_fixture.hpp"

using namespace omrc::nccl::test;

extern "C" std::size_t omrc_nccl_abi_c_layout(std::size_t* out, std::size_t max);

namespace {

/// Entry points every version must fill (NCCL calls them unconditionally),
/// and the offload ones this host-only plugin leaves empty.
template <class T>
void check_entry_points(const T* s) {
    CHECK(s->init != nullptr);
    CHECK(s->devices != nullptr);
    CHECK(s->getProperties != nullptr);
    CHECK(s->listen != nullptr);
    CHECK(s->connect != nullptr);
    CHECK(s->accept != nullptr);
    CHECK(s->regMr != nullptr);
    CHECK(s->regMrDmaBuf != nullptr);
    CHECK(s->deregMr != nullptr);
    CHECK(s->isend != nullptr);
    CHECK(s->irecv != nullptr);
    CHECK(s->iflush != nullptr);
    CHECK(s->test != nullptr);
    CHECK(s->closeSend != nullptr);
    CHECK(s->closeRecv != nullptr);
    CHECK(s->closeListen != nullptr);
    CHECK(s->getDeviceMr == nullptr);
    CHECK(s->irecvConsumed == nullptr);
}

/// The fields all versions share.
template <class P>
void check_common(const P& p) {
    REQUIRE(p.name != nullptr);
    CHECK(std::string(p.name) == "omrc0");
    CHECK(p.pciPath == nullptr);
    CHECK(p.ptrSupport == NCCL_PTR_HOST);
    CHECK(p.regIsGlobal == 0);
    CHECK(p.speed == kTestPlanes * 100000);  // 4 planes of the default 100 Gb/s
    CHECK(p.port == 1);
    CHECK(p.maxComms == 1024);
    CHECK(p.maxRecvs == 8);
    CHECK(p.netDeviceType == NCCL_NET_DEVICE_HOST);
    CHECK(p.netDeviceVersion == NCCL_NET_DEVICE_INVALID_VERSION);
}

template <class P>
void check_v9(const P& p) {
    check_common(p);
    CHECK(p.forceFlush == 0);
    CHECK(p.vProps.ndevs == 1);
    CHECK(p.vProps.devs[0] == 0);
    CHECK(p.maxP2pBytes == 0x7fffffffu);
    CHECK(p.maxCollBytes == 0x7fffffffu);
}

/// getProperties of device 0 into a buffer prefilled with garbage; device 1
/// does not exist.
template <class T, class P>
P properties(const T* s) {
    P p;
    std::memset(static_cast<void*>(&p), 0xa5, sizeof(p));
    REQUIRE(s->getProperties(0, &p) == ncclSuccess);
    P other;
    CHECK(s->getProperties(1, &other) == ncclInvalidArgument);
    CHECK(s->getProperties(-1, &other) == ncclInvalidArgument);
    return p;
}

}  // namespace

TEST_CASE("each ABI version v8..v12 is exported as OpenMRC with its entry points", "[nccl_abi]") {
    Plugin& pl = plugin();
    REQUIRE(pl.ok());
    for (int v = kOldestVersion; v <= kNewestVersion; ++v) {
        INFO("version " << v);
        void* s = pl.symbol(v);
        REQUIRE(s != nullptr);
        // name is the first member of every version.
        CHECK(std::string(*static_cast<const char* const*>(s)) == "OpenMRC");
    }
    check_entry_points(static_cast<ncclNet_v8_t*>(pl.symbol(8)));
    check_entry_points(static_cast<ncclNet_v9_t*>(pl.symbol(9)));
    check_entry_points(static_cast<ncclNet_v10_t*>(pl.symbol(10)));
    check_entry_points(static_cast<ncclNet_v11_t*>(pl.symbol(11)));
    check_entry_points(static_cast<ncclNet_v12_t*>(pl.symbol(12)));
    // No virtual NICs: NCCL then uses the physical devices.
    CHECK(static_cast<ncclNet_v9_t*>(pl.symbol(9))->makeVDevice == nullptr);
    CHECK(static_cast<ncclNet_v12_t*>(pl.symbol(12))->makeVDevice == nullptr);
    CHECK(static_cast<ncclNet_v11_t*>(pl.symbol(11))->finalize != nullptr);
    CHECK(static_cast<ncclNet_v12_t*>(pl.symbol(12))->setNetAttr != nullptr);
    // Versions that were never written, and the plugin's own symbols, are absent.
    CHECK(pl.symbol(7) == nullptr);
    CHECK(pl.symbol(13) == nullptr);
    CHECK(pl.raw_symbol("ncclCollNetPlugin_v12") == nullptr);
}

TEST_CASE("init, devices and each version's properties", "[nccl_abi]") {
    Plugin& pl = plugin();
    REQUIRE(pl.ok());
    for (int v = kOldestVersion; v <= kNewestVersion; ++v) {
        INFO("version " << v);
        auto net = pl.net(v);
        REQUIRE(net);
        REQUIRE(net->init() == ncclSuccess);
        int ndev = -1;
        REQUIRE(net->devices(&ndev) == ncclSuccess);
        CHECK(ndev == 1);
        CHECK(net->finalize() == ncclSuccess);
    }
    check_common(properties<ncclNet_v8_t, ncclNetProperties_v8_t>(static_cast<ncclNet_v8_t*>(pl.symbol(8))));
    check_v9(properties<ncclNet_v9_t, ncclNetProperties_v9_t>(static_cast<ncclNet_v9_t*>(pl.symbol(9))));
    check_v9(properties<ncclNet_v10_t, ncclNetProperties_v10_t>(static_cast<ncclNet_v10_t*>(pl.symbol(10))));
    const auto p11 = properties<ncclNet_v11_t, ncclNetProperties_v11_t>(static_cast<ncclNet_v11_t*>(pl.symbol(11)));
    check_v9(p11);
    CHECK(p11.maxMultiRequestSize == 1);
    const auto p12 = properties<ncclNet_v12_t, ncclNetProperties_v12_t>(static_cast<ncclNet_v12_t*>(pl.symbol(12)));
    check_v9(p12);
    CHECK(p12.maxMultiRequestSize == 1);
    CHECK(p12.railId == 0);                   // NIC 0 of the host: rail 0
    CHECK(p12.planeId == NCCL_NET_ID_UNDEF);  // it sprays over its 4 planes
}

TEST_CASE("v11+ contexts: init hands one out, a foreign one is refused", "[nccl_abi]") {
    Plugin& pl = plugin();
    REQUIRE(pl.ok());
    auto* s = static_cast<ncclNet_v12_t*>(pl.symbol(12));
    void* ctx = nullptr;
    ncclNetCommConfig_v12_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
    REQUIRE(s->init(&ctx, 42, &config, omrc_nccl_test_logger, nullptr) == ncclSuccess);
    REQUIRE(ctx != nullptr);
    ncclNetAttr_v12_t attr{};
    CHECK(s->setNetAttr(ctx, &attr) == ncclSuccess);
    int foreign[8] = {};
    std::uint8_t handle[NCCL_NET_HANDLE_MAXSIZE];
    void* lc = nullptr;
    CHECK(s->listen(foreign, 0, handle, &lc) == ncclInvalidArgument);
    CHECK(lc == nullptr);
    CHECK(s->finalize(foreign) == ncclInvalidArgument);
    CHECK(s->finalize(ctx) == ncclSuccess);
}

TEST_CASE("nccl_net_abi.h lays its structs out the same in C and in C++", "[nccl_abi]") {
    std::size_t c[32] = {};
    const std::size_t n = omrc_nccl_abi_c_layout(c, std::size(c));
    const std::size_t cpp[] = {
        sizeof(ncclNetProperties_v8_t),  sizeof(ncclNetProperties_v9_t),  sizeof(ncclNetProperties_v10_t),
        sizeof(ncclNetProperties_v11_t), sizeof(ncclNetProperties_v12_t), sizeof(ncclNet_v8_t),
        sizeof(ncclNet_v9_t),            sizeof(ncclNet_v10_t),           sizeof(ncclNet_v11_t),
        sizeof(ncclNet_v12_t),           offsetof(ncclNetProperties_v12_t, planeId),
        offsetof(ncclNet_v11_t, finalize), sizeof(ncclNetAttr_v12_t),     sizeof(ncclNetDeviceHandle_v12_t),
    };
    REQUIRE(n == std::size(cpp));
    for (std::size_t i = 0; i < n; ++i) {
        INFO("entry " << i);
        CHECK(c[i] == cpp[i]);
    }
}
