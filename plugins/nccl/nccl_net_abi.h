/* SPDX-License-Identifier: BSD-3-Clause */
/* The binary interface between NCCL and a network plugin ("net plugin"),
 * written for OpenMRC from the layouts NCCL publishes, versions 8 to 12.
 *
 * NCCL dlopen()s libnccl-net-<NAME>.so and looks up the symbol
 * ncclNetPlugin_v<N> for the newest version it knows first, then older ones.
 * Each symbol is a struct: a name followed by function pointers. Only the
 * layout matters to NCCL (the order, the types and therefore the offsets of
 * the members), so every struct below keeps NCCL's member order and types
 * exactly; the identifiers are NCCL's so that code and documentation read
 * the same, the comments are ours.
 *
 * What changed from version to version:
 *   v8   sizes of isend/irecv are int; properties without forceFlush
 *   v9   isend/irecv take size_t sizes; properties gain forceFlush, the
 *        virtual-NIC description (vProps) and maxP2pBytes/maxCollBytes;
 *        makeVDevice
 *   v10  init takes a profiler callback; connect takes a comm config
 *        (traffic class); isend/irecv take profiler handles
 *   v11  a per-communicator context: init returns it, listen/connect take
 *        it, finalize releases it; setNetAttr; the comm config moves to
 *        init; properties gain maxMultiRequestSize
 *   v12  the virtual NIC holds up to 8 devices; properties gain railId and
 *        planeId
 *
 * Plain C (C11 and later) and C++. The static assertions at the end check
 * the offsets on LP64 targets (x86_64, aarch64), the only ones NCCL runs on. */
#ifndef OMRC_NCCL_NET_ABI_H
#define OMRC_NCCL_NET_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- results ------------------------------------------------------------ */

/* What every entry point returns. */
typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,   /* an operating-system or transport failure here */
    ncclInternalError = 3, /* a bug or a broken invariant */
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,  /* the caller broke the API's rules */
    ncclRemoteError = 6    /* the peer or the network failed */
} ncclResult_t;

/* ---- constants ---------------------------------------------------------- */

#define NCCL_NET_HANDLE_MAXSIZE 128 /* bytes of a listen handle NCCL carries between ranks */
#define NCCL_NET_MAX_REQUESTS 32    /* requests NCCL keeps in flight per comm */

/* ptrSupport bits and the `type` of regMr */
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4

/* Devices a virtual NIC may merge */
#define NCCL_NET_MAX_DEVS_PER_NIC_V9 4
#define NCCL_NET_MAX_DEVS_PER_NIC_V10 4
#define NCCL_NET_MAX_DEVS_PER_NIC_V11 4
#define NCCL_NET_MAX_DEVS_PER_NIC_V12 8

#define NCCL_NET_TRAFFIC_CLASS_UNDEF (-1) /* ncclNetCommConfig: no traffic class asked for */
#define NCCL_NET_ID_UNDEF (-1)            /* railId / planeId unknown */

#define NCCL_NET_DEVICE_INVALID_VERSION 0x0

/* ---- logging and profiling callbacks ------------------------------------ */

typedef enum {
    NCCL_LOG_NONE = 0,
    NCCL_LOG_VERSION = 1,
    NCCL_LOG_WARN = 2,
    NCCL_LOG_INFO = 3,
    NCCL_LOG_ABORT = 4,
    NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

/* Subsystem bits of the logger's `flags` (those a net plugin uses). */
typedef enum {
    NCCL_INIT = 1,
    NCCL_COLL = 2,
    NCCL_P2P = 4,
    NCCL_SHM = 8,
    NCCL_NET = 16,
    NCCL_GRAPH = 32,
    NCCL_TUNING = 64,
    NCCL_ENV = 128,
    NCCL_ALLOC = 256,
    NCCL_CALL = 512,
    NCCL_PROXY = 1024,
    NCCL_NVLS = 2048,
    NCCL_BOOTSTRAP = 4096,
    NCCL_REG = 8192,
    NCCL_PROFILE = 16384,
    NCCL_RAS = 32768,
    NCCL_ALL = ~0
} ncclDebugLogSubSys;

/* NCCL's logger, handed to init: printf-style, with the caller's file and line. */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...);

/* v10+: NCCL's profiler callback, handed to init (this plugin records no events). */
typedef ncclResult_t (*ncclProfilerCallback_t)(void** eHandle, int type, void* phandle, int64_t pluginId,
                                               void* extData);

/* ---- device offload ------------------------------------------------------ */

/* How the NIC is driven: NCCL_NET_DEVICE_HOST is a plugin whose data path runs on
 * the host (this one); the others are GPU-initiated networking. */
typedef enum {
    NCCL_NET_DEVICE_HOST = 0,
    NCCL_NET_DEVICE_UNPACK = 1,
    NCCL_NET_DEVICE_GIN_PROXY = 2,
    NCCL_NET_DEVICE_GIN_GDAKI = 3
} ncclNetDeviceType;

/* What connect/accept return in *sendDevComm / *recvDevComm when NCCL asks for
 * device offload. Unchanged since v7. */
typedef struct {
    ncclNetDeviceType netDeviceType;
    int netDeviceVersion;
    void* handle;
    size_t size;
    int needsProxyProgress;
} ncclNetDeviceHandle_v8_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v9_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v10_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v11_t;
typedef ncclNetDeviceHandle_v8_t ncclNetDeviceHandle_v12_t;

/* ---- version 8 ----------------------------------------------------------- */

typedef struct {
    char* name;                      /* for logs */
    char* pciPath;                   /* the NIC's PCI path in sysfs (topology detection) */
    uint64_t guid;                   /* one value per NIC chip */
    int ptrSupport;                  /* NCCL_PTR_* bits */
    int regIsGlobal;                 /* 1: a registration is valid on every comm of the device */
    int speed;                       /* Mb/s */
    int port;                        /* port number on the NIC */
    float latency;                   /* µs */
    int maxComms;                    /* comms the device can hold */
    int maxRecvs;                    /* receives one irecv may group (n) */
    ncclNetDeviceType netDeviceType;
    int netDeviceVersion;
} ncclNetProperties_v8_t;

typedef struct {
    const char* name; /* the network's name: NCCL_NET=<name> selects it */
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int* ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t* props);
    /* Fills `handle` (up to NCCL_NET_HANDLE_MAXSIZE bytes) for the peer's connect. */
    ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
    /* Never blocks: success with *sendComm NULL means "call again". */
    ncclResult_t (*connect)(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v8_t** sendDevComm);
    /* Never blocks: success with *recvComm NULL means "call again". */
    ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v8_t** recvDevComm);
    ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
    ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                void** mhandle);
    ncclResult_t (*deregMr)(void* comm, void* mhandle);
    /* *request NULL on success: not possible now, NCCL tries again later. */
    ncclResult_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
    ncclResult_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                          void** request);
    /* Makes received data visible to the GPU; *request NULL: nothing to do. */
    ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
    /* *done 1 once finished (the request is then released); sizes: bytes per receive. */
    ncclResult_t (*test)(void* request, int* done, int* sizes);
    ncclResult_t (*closeSend)(void* sendComm);
    ncclResult_t (*closeRecv)(void* recvComm);
    ncclResult_t (*closeListen)(void* listenComm);
    ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle); /* offload only */
    ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);         /* offload only */
} ncclNet_v8_t;

/* ---- version 9 ----------------------------------------------------------- */

/* A virtual NIC: the physical devices it merges. */
typedef struct {
    int ndevs;
    int devs[NCCL_NET_MAX_DEVS_PER_NIC_V9];
} ncclNetVDeviceProps_v9_t;

typedef struct {
    char* name;
    char* pciPath;
    uint64_t guid;
    int ptrSupport;
    int regIsGlobal;
    int forceFlush; /* 1: NCCL must call iflush after every receive */
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    ncclNetDeviceType netDeviceType;
    int netDeviceVersion;
    ncclNetVDeviceProps_v9_t vProps; /* a physical device: itself alone */
    size_t maxP2pBytes;              /* largest message of a point-to-point operation */
    size_t maxCollBytes;             /* largest message of a collective */
} ncclNetProperties_v9_t;

typedef struct {
    const char* name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction);
    ncclResult_t (*devices)(int* ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t* props);
    ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
    ncclResult_t (*connect)(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v9_t** sendDevComm);
    ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v9_t** recvDevComm);
    ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
    ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                void** mhandle);
    ncclResult_t (*deregMr)(void* comm, void* mhandle);
    ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request);
    ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                          void** request);
    ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
    ncclResult_t (*test)(void* request, int* done, int* sizes);
    ncclResult_t (*closeSend)(void* sendComm);
    ncclResult_t (*closeRecv)(void* recvComm);
    ncclResult_t (*closeListen)(void* listenComm);
    ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
    ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
    /* Creates a virtual NIC from physical ones; NULL: NCCL uses the physical devices. */
    ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v9_t* props);
} ncclNet_v9_t;

/* ---- version 10 ---------------------------------------------------------- */

typedef ncclNetVDeviceProps_v9_t ncclNetVDeviceProps_v10_t;

/* Per-connection configuration NCCL passes to connect. */
typedef struct {
    int trafficClass; /* NCCL_NET_TRAFFIC_CLASS_UNDEF or a plugin-specific value */
} ncclNetCommConfig_v10_t;

typedef struct {
    char* name;
    char* pciPath;
    uint64_t guid;
    int ptrSupport;
    int regIsGlobal;
    int forceFlush;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    ncclNetDeviceType netDeviceType;
    int netDeviceVersion;
    ncclNetVDeviceProps_v10_t vProps;
    size_t maxP2pBytes;
    size_t maxCollBytes;
} ncclNetProperties_v10_t;

typedef struct {
    const char* name;
    ncclResult_t (*init)(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
    ncclResult_t (*devices)(int* ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t* props);
    ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
    ncclResult_t (*connect)(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** sendComm,
                            ncclNetDeviceHandle_v10_t** sendDevComm);
    ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v10_t** recvDevComm);
    ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
    ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                void** mhandle);
    ncclResult_t (*deregMr)(void* comm, void* mhandle);
    /* phandle(s): the profiler's handles for this operation */
    ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                          void** request);
    ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                          void** phandles, void** request);
    ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
    ncclResult_t (*test)(void* request, int* done, int* sizes);
    ncclResult_t (*closeSend)(void* sendComm);
    ncclResult_t (*closeRecv)(void* recvComm);
    ncclResult_t (*closeListen)(void* listenComm);
    ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
    ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
    ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v10_t* props);
} ncclNet_v10_t;

/* ---- version 11 ---------------------------------------------------------- */

typedef ncclNetVDeviceProps_v9_t ncclNetVDeviceProps_v11_t;
typedef ncclNetCommConfig_v10_t ncclNetCommConfig_v11_t;

typedef struct {
    char* name;
    char* pciPath;
    uint64_t guid;
    int ptrSupport;
    int regIsGlobal;
    int forceFlush;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    ncclNetDeviceType netDeviceType;
    int netDeviceVersion;
    ncclNetVDeviceProps_v11_t vProps;
    size_t maxP2pBytes;
    size_t maxCollBytes;
    int maxMultiRequestSize; /* requests one multi-request may hold */
} ncclNetProperties_v11_t;

/* Hints NCCL gives through setNetAttr: how many peers and flows to expect. */
typedef struct {
    int32_t maxConcurrentPeers;
    int32_t minConcurrentPeers;
    int32_t maxFlowsPerPeer;
    int32_t minFlowsPerPeer;
} ncclNetCommAttr_v11_t;

typedef struct {
    ncclNetCommAttr_v11_t sendCommAttr;
    ncclNetCommAttr_v11_t recvCommAttr;
    uint32_t op;
    uint32_t algo;
    uint32_t proto;
} ncclNetAttr_v11_t;

typedef struct {
    const char* name;
    /* Once per NCCL communicator: *ctx is handed back to listen, connect,
     * setNetAttr and finalize. */
    ncclResult_t (*init)(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                         ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
    ncclResult_t (*devices)(int* ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t* props);
    ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
    ncclResult_t (*connect)(void* ctx, int dev, void* handle, void** sendComm,
                            ncclNetDeviceHandle_v11_t** sendDevComm);
    ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v11_t** recvDevComm);
    ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
    ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                void** mhandle);
    ncclResult_t (*deregMr)(void* comm, void* mhandle);
    ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                          void** request);
    ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                          void** phandles, void** request);
    ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
    ncclResult_t (*test)(void* request, int* done, int* sizes);
    ncclResult_t (*closeSend)(void* sendComm);
    ncclResult_t (*closeRecv)(void* recvComm);
    ncclResult_t (*closeListen)(void* listenComm);
    ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
    ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
    ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v11_t* props);
    ncclResult_t (*finalize)(void* ctx);
    ncclResult_t (*setNetAttr)(void* ctx, ncclNetAttr_v11_t* netAttr);
} ncclNet_v11_t;

/* ---- version 12 ---------------------------------------------------------- */

typedef struct {
    int ndevs;
    int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
} ncclNetVDeviceProps_v12_t;

typedef ncclNetCommConfig_v10_t ncclNetCommConfig_v12_t;
typedef ncclNetCommAttr_v11_t ncclNetCommAttr_v12_t;
typedef ncclNetAttr_v11_t ncclNetAttr_v12_t;

typedef struct {
    char* name;
    char* pciPath;
    uint64_t guid;
    int ptrSupport;
    int regIsGlobal;
    int forceFlush;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    ncclNetDeviceType netDeviceType;
    int netDeviceVersion;
    ncclNetVDeviceProps_v12_t vProps;
    size_t maxP2pBytes;
    size_t maxCollBytes;
    int maxMultiRequestSize;
    int16_t railId;  /* NICs of one rail share it; NCCL_NET_ID_UNDEF: unknown */
    int16_t planeId; /* NCCL never connects NICs of two different defined planes */
} ncclNetProperties_v12_t;

typedef struct {
    const char* name;
    ncclResult_t (*init)(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config,
                         ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
    ncclResult_t (*devices)(int* ndev);
    ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t* props);
    ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
    ncclResult_t (*connect)(void* ctx, int dev, void* handle, void** sendComm,
                            ncclNetDeviceHandle_v12_t** sendDevComm);
    ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** recvDevComm);
    ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
    ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                void** mhandle);
    ncclResult_t (*deregMr)(void* comm, void* mhandle);
    ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                          void** request);
    ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                          void** phandles, void** request);
    ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
    ncclResult_t (*test)(void* request, int* done, int* sizes);
    ncclResult_t (*closeSend)(void* sendComm);
    ncclResult_t (*closeRecv)(void* recvComm);
    ncclResult_t (*closeListen)(void* listenComm);
    ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
    ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
    ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v12_t* props);
    ncclResult_t (*finalize)(void* ctx);
    ncclResult_t (*setNetAttr)(void* ctx, ncclNetAttr_v12_t* netAttr);
} ncclNet_v12_t;

/* ---- layout checks (LP64) ------------------------------------------------ */

#if defined(__LP64__) || defined(_LP64)
#ifdef __cplusplus
#define OMRC_NCCL_ABI_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define OMRC_NCCL_ABI_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
OMRC_NCCL_ABI_ASSERT(sizeof(ncclResult_t) == 4, "ncclResult_t is an int-sized enum");
OMRC_NCCL_ABI_ASSERT(sizeof(ncclNetDeviceHandle_v8_t) == 32, "ncclNetDeviceHandle");

OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v8_t, guid) == 16, "v8 guid");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v8_t, speed) == 32, "v8 speed");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v8_t, latency) == 40, "v8 latency");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v8_t, netDeviceVersion) == 56, "v8 netDeviceVersion");
OMRC_NCCL_ABI_ASSERT(sizeof(ncclNetProperties_v8_t) == 64, "v8 properties");

OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v9_t, forceFlush) == 32, "v9 forceFlush");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v9_t, vProps) == 64, "v9 vProps");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v9_t, maxP2pBytes) == 88, "v9 maxP2pBytes");
OMRC_NCCL_ABI_ASSERT(sizeof(ncclNetProperties_v9_t) == 104, "v9 properties");
OMRC_NCCL_ABI_ASSERT(sizeof(ncclNetProperties_v10_t) == 104, "v10 properties");

OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v11_t, maxMultiRequestSize) == 104, "v11 maxMultiRequestSize");
OMRC_NCCL_ABI_ASSERT(sizeof(ncclNetProperties_v11_t) == 112, "v11 properties");

OMRC_NCCL_ABI_ASSERT(sizeof(ncclNetVDeviceProps_v12_t) == 36, "v12 vProps");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v12_t, maxP2pBytes) == 104, "v12 maxP2pBytes");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v12_t, maxMultiRequestSize) == 120, "v12 maxMultiRequestSize");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v12_t, railId) == 124, "v12 railId");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNetProperties_v12_t, planeId) == 126, "v12 planeId");
OMRC_NCCL_ABI_ASSERT(sizeof(ncclNetProperties_v12_t) == 128, "v12 properties");

OMRC_NCCL_ABI_ASSERT(sizeof(ncclNetAttr_v11_t) == 44, "ncclNetAttr");

/* name + 18 entry points (v8), + makeVDevice (v9, v10), + finalize and setNetAttr (v11, v12) */
OMRC_NCCL_ABI_ASSERT(sizeof(ncclNet_v8_t) == 19 * 8, "v8 struct");
OMRC_NCCL_ABI_ASSERT(sizeof(ncclNet_v9_t) == 20 * 8, "v9 struct");
OMRC_NCCL_ABI_ASSERT(sizeof(ncclNet_v10_t) == 20 * 8, "v10 struct");
OMRC_NCCL_ABI_ASSERT(sizeof(ncclNet_v11_t) == 22 * 8, "v11 struct");
OMRC_NCCL_ABI_ASSERT(sizeof(ncclNet_v12_t) == 22 * 8, "v12 struct");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNet_v8_t, test) == 13 * 8, "v8 test");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNet_v12_t, makeVDevice) == 19 * 8, "v12 makeVDevice");
OMRC_NCCL_ABI_ASSERT(offsetof(ncclNet_v12_t, setNetAttr) == 21 * 8, "v12 setNetAttr");
#undef OMRC_NCCL_ABI_ASSERT
#endif

#ifdef __cplusplus
}
#endif

#endif /* OMRC_NCCL_NET_ABI_H */
