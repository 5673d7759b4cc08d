// SPDX-License-Identifier: BSD-3-Clause
// What goes wrong is an error, never a crash or a hang: garbage handles, a
// listener that is gone, pointers of the wrong kind, comms closed with
// requests outstanding, a peer whose QP disappears mid-transfer.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "plugin_fixture.hpp"

using namespace omrc::nccl::test;

TEST_CASE("garbage or stale handles make connect fail, never crash", "[nccl_errors]") {
    auto net = open_net();
    REQUIRE(net);
    std::mt19937 rng(7);
    for (int k = 0; k < 100; ++k) {
        Handle h(NCCL_NET_HANDLE_MAXSIZE);
        for (auto& b : h) b = static_cast<std::uint8_t>(rng());
        void* sc = reinterpret_cast<void*>(1);
        CHECK(net->connect(0, h.data(), &sc) == ncclInvalidArgument);
        CHECK(sc == nullptr);
    }
    CHECK(LogSink::instance().contains("not an OpenMRC listen handle"));

    Handle good(NCCL_NET_HANDLE_MAXSIZE, 0);
    void* lc = nullptr;
    REQUIRE(net->listen(0, good.data(), &lc) == ncclSuccess);
    SECTION("one corrupted field at a time") {
        // The TCP handle: magic, version, family, reserved, port, nonce,
        // reserved. The connection manager's (version 2): magic, version,
        // planes, reserved, service id, reserved beyond the planes' MACs.
        const bool cm = cm_setup();
        CHECK(good[5] == (cm ? 2 : 1));
        const std::vector<std::size_t> fields = cm ? std::vector<std::size_t>{0, 4, 6, 7, 28, 32, 100, 127}
                                                   : std::vector<std::size_t>{0, 4, 6, 7, 24, 25, 32, 60, 127};
        for (std::size_t byte : fields) {
            Handle h = good;
            h[byte] ^= 0xff;
            if (!cm && (byte == 24u || byte == 25u)) h[24] = h[25] = 0;    // port 0
            if (byte == 32u) std::fill(h.begin() + 32, h.begin() + 40, 0);  // nonce / service id 0
            void* sc = nullptr;
            INFO("byte " << byte);
            CHECK(net->connect(0, h.data(), &sc) == ncclInvalidArgument);
            CHECK(sc == nullptr);
        }
    }
    SECTION("a connect stage this process never started") {
        Handle h = good;
        h[47] = 0x42;
        void* sc = nullptr;
        CHECK(net->connect(0, h.data(), &sc) == ncclInvalidArgument);
        CHECK(LogSink::instance().contains("has not started"));
    }
    SECTION("a listener that was closed: an error within the deadline") {
        REQUIRE(net->close_listen(lc) == ncclSuccess);
        lc = nullptr;
        void* sc = nullptr;
        ncclResult_t rc = ncclSuccess;
        const auto deadline = seconds_from_now(20);
        while (rc == ncclSuccess && sc == nullptr && Clock::now() < deadline) rc = net->connect(0, good.data(), &sc);
        CHECK(rc == ncclRemoteError);
        CHECK(sc == nullptr);
        // Over the connection manager the device answers for the closed service.
        if (cm_setup()) CHECK(LogSink::instance().contains("refused (no_listener)"));
    }
    SECTION("a device that does not exist") {
        void* sc = nullptr;
        CHECK(net->connect(3, good.data(), &sc) == ncclInvalidArgument);
        Handle h(NCCL_NET_HANDLE_MAXSIZE);
        void* l2 = nullptr;
        CHECK(net->listen(-1, h.data(), &l2) == ncclInvalidArgument);
        CHECK(l2 == nullptr);
    }
    if (lc != nullptr) CHECK(net->close_listen(lc) == ncclSuccess);
}

TEST_CASE("pointers of the wrong kind are refused", "[nccl_errors]") {
    auto net = open_net();
    REQUIRE(net);
    Pair p(*net);
    REQUIRE(p.status.ok());
    std::vector<std::uint8_t> buf(4096);
    void* mh = nullptr;
    // Host memory only.
    CHECK(net->reg_mr(p.send, buf.data(), buf.size(), NCCL_PTR_CUDA, &mh) == ncclInvalidArgument);
    CHECK(mh == nullptr);
    CHECK(net->reg_mr(p.listen, buf.data(), buf.size(), NCCL_PTR_HOST, &mh) == ncclInvalidArgument);
    CHECK(net->reg_mr(p.send, nullptr, 64, NCCL_PTR_HOST, &mh) == ncclInvalidArgument);
    REQUIRE(net->reg_mr(p.send, buf.data(), buf.size(), NCCL_PTR_HOST, &mh) == ncclSuccess);
    void* req = nullptr;
    // Comms swapped, a memory handle that is none, a range outside the registration.
    CHECK(net->isend(p.recv, buf.data(), 10, 0, mh, &req) == ncclInvalidArgument);
    int junk[16] = {};
    CHECK(net->isend(p.send, buf.data(), 10, 0, junk, &req) == ncclInvalidArgument);
    CHECK(net->isend(p.send, buf.data() + 4000, 200, 0, mh, &req) == ncclInvalidArgument);
    void* data = buf.data();
    std::size_t size = 64;
    int tag = 0;
    CHECK(net->irecv(p.send, 1, &data, &size, &tag, &mh, &req) == ncclInvalidArgument);
    CHECK(net->irecv(p.recv, 0, &data, &size, &tag, &mh, &req) == ncclInvalidArgument);
    CHECK(net->irecv(p.recv, 9, &data, &size, &tag, &mh, &req) == ncclInvalidArgument);
    // Tests of things that are no requests.
    int done = 7;
    CHECK(net->test(nullptr, &done, nullptr) == ncclInvalidArgument);
    CHECK(done == 0);
    CHECK(net->test(junk, &done, nullptr) == ncclInvalidArgument);
    // Closing through the wrong entry point.
    CHECK(net->close_send(p.recv) == ncclInvalidArgument);
    CHECK(net->close_recv(p.send) == ncclInvalidArgument);
    CHECK(net->close_listen(p.send) == ncclInvalidArgument);
    void* rc = nullptr;
    CHECK(net->accept(p.send, &rc) == ncclInvalidArgument);
    CHECK(net->dereg_mr(p.send, junk) == ncclInvalidArgument);
    CHECK(net->dereg_mr(p.send, mh) == ncclSuccess);
}

TEST_CASE("comms closed with requests outstanding: no crash, no hang, the peer gets an error", "[nccl_errors]") {
    auto net = open_net();
    REQUIRE(net);
    SECTION("the sender closes; the receiver's open receives fail") {
        auto* p = new Pair(*net);
        REQUIRE(p->status.ok());
        std::vector<std::uint8_t> src(1 << 20, 1), dst(4 << 20, 0);
        void *smh = nullptr, *rmh = nullptr;
        REQUIRE(net->reg_mr(p->send, src.data(), src.size(), NCCL_PTR_HOST, &smh) == ncclSuccess);
        REQUIRE(net->reg_mr(p->recv, dst.data(), dst.size(), NCCL_PTR_HOST, &rmh) == ncclSuccess);
        std::vector<void*> rreqs;
        for (int k = 0; k < 4; ++k) {
            void* data = dst.data() + (k << 20);
            std::size_t size = 1 << 20;
            int tag = 0;
            void* req = nullptr;
            REQUIRE(net->irecv(p->recv, 1, &data, &size, &tag, &rmh, &req) == ncclSuccess);
            rreqs.push_back(req);
        }
        // One message goes through; two more are posted and left untested.
        void* sreq = nullptr;
        REQUIRE(isend_when_ready(*net, p->send, src.data(), src.size(), 0, smh, &sreq, seconds_from_now(20)) ==
                ncclSuccess);
        int done = 0;
        REQUIRE(test_until_done(*net, rreqs[0], &done, nullptr, seconds_from_now(20)) == ncclSuccess);
        REQUIRE(done == 1);
        REQUIRE(isend_when_ready(*net, p->send, src.data(), src.size(), 0, smh, &sreq, seconds_from_now(20)) ==
                ncclSuccess);
        REQUIRE(net->close_send(p->send) == ncclSuccess);  // a send outstanding
        p->send = nullptr;
        REQUIRE(net->dereg_mr(nullptr, smh) == ncclSuccess);
        // Receive 1 may still complete (its message was posted before the
        // close); receive 3 never can: an error, bounded in time.
        LogSink::instance().clear();
        ncclResult_t rc = ncclSuccess;
        done = 0;
        const auto t0 = Clock::now();
        while (rc == ncclSuccess && !done && Clock::now() - t0 < std::chrono::seconds(15))
            rc = net->test(rreqs[3], &done, nullptr);
        CHECK(done == 0);
        CHECK(rc == ncclRemoteError);
        CHECK(Clock::now() - t0 < std::chrono::seconds(10));
        CHECK(LogSink::instance().contains("failed"));
        REQUIRE(net->dereg_mr(p->recv, rmh) == ncclSuccess);
        delete p;  // closes the recv comm with receives outstanding
    }
    SECTION("the receiver closes mid-message; the sender's request fails") {
        auto* p = new Pair(*net);
        REQUIRE(p->status.ok());
        std::vector<std::uint8_t> src(64 << 20, 3), dst(64 << 20, 0);
        void *smh = nullptr, *rmh = nullptr;
        REQUIRE(net->reg_mr(p->send, src.data(), src.size(), NCCL_PTR_HOST, &smh) == ncclSuccess);
        REQUIRE(net->reg_mr(p->recv, dst.data(), dst.size(), NCCL_PTR_HOST, &rmh) == ncclSuccess);
        void* data = dst.data();
        std::size_t size = dst.size();
        int tag = 0;
        void* rreq = nullptr;
        REQUIRE(net->irecv(p->recv, 1, &data, &size, &tag, &rmh, &rreq) == ncclSuccess);
        void* sreq = nullptr;
        REQUIRE(isend_when_ready(*net, p->send, src.data(), src.size(), 0, smh, &sreq, seconds_from_now(20)) ==
                ncclSuccess);
        REQUIRE(net->dereg_mr(p->recv, rmh) == ncclSuccess);
        REQUIRE(net->close_recv(p->recv) == ncclSuccess);  // its QP goes while 64 MiB are on their way
        p->recv = nullptr;
        LogSink::instance().clear();
        ncclResult_t rc = ncclSuccess;
        int done = 0;
        const auto t0 = Clock::now();
        while (rc == ncclSuccess && !done && Clock::now() - t0 < std::chrono::seconds(15))
            rc = net->test(sreq, &done, nullptr);
        CHECK(done == 0);
        CHECK(rc == ncclRemoteError);
        CHECK(Clock::now() - t0 < std::chrono::seconds(10));
        // Whichever came first — the socket's end of file, or the QP's retry
        // budget running out — NCCL's logger says why.
        CHECK((LogSink::instance().contains("OpenMRC work completion") ||
               LogSink::instance().contains("the peer closed its comm")));
        CHECK(net->close_send(p->send) == ncclSuccess);  // with the failed request outstanding
        p->send = nullptr;
        CHECK(net->dereg_mr(nullptr, smh) == ncclSuccess);
        delete p;
    }
}
