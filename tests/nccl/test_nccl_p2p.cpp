// SPDX-License-Identifier: BSD-3-Clause
// Point-to-point as NCCL drives it: connect/accept polling, requests in
// flight, multi-receives with tags, receives larger than their sends,
// zero-byte messages — through every ABI version's entry points.
#include <catch2/catch.hpp>

#include <chrono>
#include <numeric>

#include "plugin_fixture.hpp"

using namespace omrc::nccl::test;

namespace {

std::uint8_t pattern(std::size_t msg, std::size_t i) { return static_cast<std::uint8_t>(msg * 37 + i * 11 + (i >> 9)); }

}  // namespace

TEST_CASE("connect and accept never block: NULL comms until both sides met, then data flows", "[nccl_p2p]") {
    for (int v = kOldestVersion; v <= kNewestVersion; ++v) {
        INFO("version " << v);
        auto net = open_net(v);
        REQUIRE(net);
        Handle h(NCCL_NET_HANDLE_MAXSIZE, 0);
        void* lc = nullptr;
        REQUIRE(net->listen(0, h.data(), &lc) == ncclSuccess);
        REQUIRE(lc != nullptr);
        // Nobody connected yet; and the connector cannot be done before the
        // listener has answered. Neither call waits.
        void* rc = nullptr;
        void* sc = nullptr;
        auto t0 = Clock::now();
        REQUIRE(net->accept(lc, &rc) == ncclSuccess);
        CHECK(rc == nullptr);
        REQUIRE(net->connect(0, h.data(), &sc) == ncclSuccess);
        CHECK(sc == nullptr);
        CHECK(Clock::now() - t0 < std::chrono::milliseconds(500));
        int cp = 0, ap = 0;
        const Status st = connect_accept(*net, 0, &h, lc, &sc, &rc, seconds_from_now(20), &cp, &ap);
        REQUIRE(st.ok());
        REQUIRE(sc != nullptr);
        REQUIRE(rc != nullptr);
        CHECK(sc != rc);

        // One message through this version's isend/irecv/test.
        {
            Buf src(*net, sc, 200'000), dst(*net, rc, 200'000);
            REQUIRE(src.reg == ncclSuccess);
            REQUIRE(dst.reg == ncclSuccess);
            for (std::size_t i = 0; i < src.bytes.size(); ++i) src.bytes[i] = pattern(static_cast<std::size_t>(v), i);
            void* data = dst.data();
            std::size_t size = dst.bytes.size();
            int tag = v;
            void* rreq = nullptr;
            REQUIRE(net->irecv(rc, 1, &data, &size, &tag, &dst.mh, &rreq) == ncclSuccess);
            REQUIRE(rreq != nullptr);
            void* sreq = nullptr;
            REQUIRE(isend_when_ready(*net, sc, src.data(), src.bytes.size(), tag, src.mh, &sreq,
                                     seconds_from_now(20)) == ncclSuccess);
            REQUIRE(sreq != nullptr);
            int done = 0, sizes[1] = {-1};
            REQUIRE(test_until_done(*net, rreq, &done, sizes, seconds_from_now(20)) == ncclSuccess);
            REQUIRE(done == 1);
            CHECK(sizes[0] == 200'000);
            REQUIRE(test_until_done(*net, sreq, &done, sizes, seconds_from_now(20)) == ncclSuccess);
            REQUIRE(done == 1);
            CHECK(sizes[0] == 200'000);
            CHECK(dst.bytes == src.bytes);
            // A request reported done is released: testing it again is an error.
            CHECK(net->test(rreq, &done, sizes) == ncclInvalidArgument);
        }  // deregMr, before the comms close

        CHECK(net->close_send(sc) == ncclSuccess);
        CHECK(net->close_recv(rc) == ncclSuccess);
        CHECK(net->close_listen(lc) == ncclSuccess);
        CHECK(net->finalize() == ncclSuccess);
    }
}

TEST_CASE("32 requests in flight per comm, matched in posting order", "[nccl_p2p]") {
    auto net = open_net();
    REQUIRE(net);
    Pair p(*net);
    REQUIRE(p.status.ok());
    constexpr std::size_t kMsg = 3000;
    constexpr int kDepth = NCCL_NET_MAX_REQUESTS;
    Buf src(*net, p.send, kMsg * (kDepth + 1)), dst(*net, p.recv, kMsg * (kDepth + 1));
    for (std::size_t i = 0; i < src.bytes.size(); ++i) src.bytes[i] = pattern(i / kMsg, i % kMsg);

    std::vector<void*> rreqs, sreqs;
    for (int k = 0; k < kDepth; ++k) {
        void* data = dst.bytes.data() + k * kMsg;
        std::size_t size = kMsg;
        int tag = 0;
        void* req = nullptr;
        REQUIRE(net->irecv(p.recv, 1, &data, &size, &tag, &dst.mh, &req) == ncclSuccess);
        REQUIRE(req != nullptr);
        rreqs.push_back(req);
    }
    // The 33rd receive has no room: a NULL request, not an error.
    {
        void* data = dst.bytes.data() + kDepth * kMsg;
        std::size_t size = kMsg;
        int tag = 0;
        void* req = reinterpret_cast<void*>(1);
        REQUIRE(net->irecv(p.recv, 1, &data, &size, &tag, &dst.mh, &req) == ncclSuccess);
        CHECK(req == nullptr);
    }
    for (int k = 0; k < kDepth; ++k) {
        void* req = nullptr;
        REQUIRE(isend_when_ready(*net, p.send, src.bytes.data() + k * kMsg, kMsg, 0, src.mh, &req,
                                 seconds_from_now(20)) == ncclSuccess);
        REQUIRE(req != nullptr);
        sreqs.push_back(req);
    }
    // No 33rd receive was posted, so a 33rd send cannot start.
    {
        void* req = reinterpret_cast<void*>(1);
        REQUIRE(net->isend(p.send, src.bytes.data() + kDepth * kMsg, kMsg, 0, src.mh, &req) == ncclSuccess);
        CHECK(req == nullptr);
    }
    std::vector<int> rsizes, ssizes;
    REQUIRE(wait_all(*net, rreqs, seconds_from_now(30), &rsizes).ok());
    REQUIRE(wait_all(*net, sreqs, seconds_from_now(30), &ssizes).ok());
    for (int k = 0; k < kDepth; ++k) {
        CHECK(rsizes[k] == static_cast<int>(kMsg));
        CHECK(ssizes[k] == static_cast<int>(kMsg));
    }
    // Receive k holds send k: posting order.
    CHECK(std::equal(src.bytes.begin(), src.bytes.begin() + kDepth * kMsg, dst.bytes.begin()));
    // With requests released, the comm takes more: another full round.
    for (int round = 0; round < 2; ++round) {
        rreqs.clear();
        sreqs.clear();
        for (int k = 0; k < kDepth; ++k) {
            void* data = dst.bytes.data() + k * kMsg;
            std::size_t size = kMsg;
            int tag = 0;
            void* req = nullptr;
            REQUIRE(net->irecv(p.recv, 1, &data, &size, &tag, &dst.mh, &req) == ncclSuccess);
            REQUIRE(req != nullptr);
            rreqs.push_back(req);
            REQUIRE(isend_when_ready(*net, p.send, src.bytes.data() + ((k + round + 1) % kDepth) * kMsg, kMsg, 0,
                                     src.mh, &req, seconds_from_now(20)) == ncclSuccess);
            REQUIRE(req != nullptr);
            sreqs.push_back(req);
        }
        REQUIRE(wait_all(*net, rreqs, seconds_from_now(30)).ok());
        REQUIRE(wait_all(*net, sreqs, seconds_from_now(30)).ok());
        for (int k = 0; k < kDepth; ++k)
            CHECK(std::equal(dst.bytes.begin() + k * kMsg, dst.bytes.begin() + (k + 1) * kMsg,
                             src.bytes.begin() + ((k + round + 1) % kDepth) * kMsg));
    }
}

TEST_CASE("a multi-receive matches each send by its tag", "[nccl_p2p]") {
    auto net = open_net(GENERATE(8, 12));
    REQUIRE(net);
    INFO("version " << net->version());
    Pair p(*net);
    REQUIRE(p.status.ok());
    constexpr int kN = 4;
    const std::size_t posted[kN] = {8192, 100, 70000, 0};
    int tags[kN] = {7, 3, 11, 5};
    const std::size_t sent[kN] = {4000, 100, 65536, 0};  // by receive index
    Buf dst(*net, p.recv, 8192 + 100 + 70000, 0xee);
    Buf src(*net, p.send, 4000 + 100 + 65536);
    void* data[kN] = {dst.bytes.data(), dst.bytes.data() + 8192, dst.bytes.data() + 8292, nullptr};
    void* mhs[kN] = {dst.mh, dst.mh, dst.mh, nullptr};
    void* rreq = nullptr;
    REQUIRE(net->irecv(p.recv, kN, data, posted, tags, mhs, &rreq) == ncclSuccess);
    REQUIRE(rreq != nullptr);
    // The sender's buffers, one per tag, each with its own pattern.
    std::uint8_t* sbuf[kN] = {src.bytes.data(), src.bytes.data() + 4000, src.bytes.data() + 4100, nullptr};
    for (int i = 0; i < kN; ++i)
        for (std::size_t b = 0; b < sent[i]; ++b) sbuf[i][b] = pattern(static_cast<std::size_t>(tags[i]), b);

    // Sends in another order than the receives; a tag the multi-receive does
    // not hold cannot start (NULL request).
    std::vector<void*> sreqs;
    for (int i : {2, 1}) {
        void* req = nullptr;
        REQUIRE(isend_when_ready(*net, p.send, sbuf[i], sent[i], tags[i], src.mh, &req, seconds_from_now(20)) ==
                ncclSuccess);
        REQUIRE(req != nullptr);
        sreqs.push_back(req);
    }
    {
        void* req = reinterpret_cast<void*>(1);
        REQUIRE(net->isend(p.send, sbuf[0], 10, 99, src.mh, &req) == ncclSuccess);
        CHECK(req == nullptr);
        // The same tag twice: its receive is taken.
        req = reinterpret_cast<void*>(1);
        REQUIRE(net->isend(p.send, sbuf[2], 10, tags[2], src.mh, &req) == ncclSuccess);
        CHECK(req == nullptr);
    }
    // Nothing completes before every receive of the slot has its send.
    int done = 0;
    int sizes[kN] = {-1, -1, -1, -1};
    for (int k = 0; k < 50; ++k) {
        REQUIRE(net->test(rreq, &done, sizes) == ncclSuccess);
        REQUIRE(done == 0);
    }
    for (int i : {3, 0}) {
        void* req = nullptr;
        REQUIRE(isend_when_ready(*net, p.send, sbuf[i], sent[i], tags[i], src.mh, &req, seconds_from_now(20)) ==
                ncclSuccess);
        REQUIRE(req != nullptr);
        sreqs.push_back(req);
    }
    REQUIRE(test_until_done(*net, rreq, &done, sizes, seconds_from_now(20)) == ncclSuccess);
    REQUIRE(done == 1);
    for (int i = 0; i < kN; ++i) CHECK(sizes[i] == static_cast<int>(sent[i]));
    REQUIRE(wait_all(*net, sreqs, seconds_from_now(20)).ok());
    for (int i = 0; i < 3; ++i) CHECK(std::equal(sbuf[i], sbuf[i] + sent[i], static_cast<std::uint8_t*>(data[i])));
    // Bytes beyond what was sent are untouched.
    CHECK(dst.bytes[4000] == 0xee);
    CHECK(dst.bytes[8191] == 0xee);
    CHECK(dst.bytes[8292 + 65536] == 0xee);

    // A single receive after it takes any tag.
    void* d1 = dst.bytes.data();
    std::size_t s1 = 64;
    int t1 = 1234;
    REQUIRE(net->irecv(p.recv, 1, &d1, &s1, &t1, &dst.mh, &rreq) == ncclSuccess);
    void* sreq = nullptr;
    REQUIRE(isend_when_ready(*net, p.send, sbuf[1], 64, -5, src.mh, &sreq, seconds_from_now(20)) == ncclSuccess);
    REQUIRE(sreq != nullptr);
    REQUIRE(test_until_done(*net, rreq, &done, sizes, seconds_from_now(20)) == ncclSuccess);
    CHECK(done == 1);
    CHECK(sizes[0] == 64);
    REQUIRE(test_until_done(*net, sreq, &done, sizes, seconds_from_now(20)) == ncclSuccess);
    CHECK(done == 1);
}

TEST_CASE("a receive larger than its send reports the size sent; a larger send is refused", "[nccl_p2p]") {
    auto net = open_net();
    REQUIRE(net);
    Pair p(*net);
    REQUIRE(p.status.ok());
    Buf src(*net, p.send, 1 << 20), dst(*net, p.recv, 1 << 20, 0x5a);
    for (std::size_t i = 0; i < src.bytes.size(); ++i) src.bytes[i] = pattern(1, i);
    constexpr std::size_t kSent = 123457;
    void* data = dst.data();
    std::size_t size = dst.bytes.size();
    int tag = 0;
    void* rreq = nullptr;
    REQUIRE(net->irecv(p.recv, 1, &data, &size, &tag, &dst.mh, &rreq) == ncclSuccess);
    void* sreq = nullptr;
    REQUIRE(isend_when_ready(*net, p.send, src.data(), kSent, 0, src.mh, &sreq, seconds_from_now(20)) == ncclSuccess);
    REQUIRE(sreq != nullptr);
    int done = 0, sizes[1] = {-1};
    REQUIRE(test_until_done(*net, rreq, &done, sizes, seconds_from_now(20)) == ncclSuccess);
    REQUIRE(done == 1);
    CHECK(sizes[0] == static_cast<int>(kSent));
    REQUIRE(test_until_done(*net, sreq, &done, sizes, seconds_from_now(20)) == ncclSuccess);
    REQUIRE(done == 1);
    CHECK(sizes[0] == static_cast<int>(kSent));
    CHECK(std::equal(src.bytes.begin(), src.bytes.begin() + kSent, dst.bytes.begin()));
    CHECK(std::all_of(dst.bytes.begin() + kSent, dst.bytes.end(), [](std::uint8_t b) { return b == 0x5a; }));

    // A send larger than the receive posted for it: ncclInvalidUsage, with
    // both sizes in the log.
    size = 1000;
    REQUIRE(net->irecv(p.recv, 1, &data, &size, &tag, &dst.mh, &rreq) == ncclSuccess);
    LogSink::instance().clear();
    ncclResult_t rc = ncclSuccess;
    void* req = nullptr;
    const auto deadline = seconds_from_now(20);
    while (rc == ncclSuccess && req == nullptr && Clock::now() < deadline)
        rc = net->isend(p.send, src.data(), 1001, 0, src.mh, &req);
    CHECK(rc == ncclInvalidUsage);
    CHECK(req == nullptr);
    CHECK(LogSink::instance().contains("1001 bytes"));
    CHECK(LogSink::instance().contains("receive of 1000 bytes"));
    // The receive still takes a send that fits.
    REQUIRE(isend_when_ready(*net, p.send, src.data(), 1000, 0, src.mh, &sreq, seconds_from_now(20)) == ncclSuccess);
    REQUIRE(sreq != nullptr);
    REQUIRE(test_until_done(*net, rreq, &done, sizes, seconds_from_now(20)) == ncclSuccess);
    CHECK(done == 1);
    CHECK(sizes[0] == 1000);
    REQUIRE(test_until_done(*net, sreq, &done, sizes, seconds_from_now(20)) == ncclSuccess);
}

TEST_CASE("zero-byte messages complete with size 0", "[nccl_p2p]") {
    auto net = open_net(GENERATE(8, 9, 12));
    REQUIRE(net);
    INFO("version " << net->version());
    Pair p(*net);
    REQUIRE(p.status.ok());
    Buf src(*net, p.send, 64, 1), dst(*net, p.recv, 64, 2);
    for (int round = 0; round < 3; ++round) {
        // Without buffer and registration, then inside registered buffers.
        const bool registered = round > 0;
        void* data = registered ? dst.data() : nullptr;
        void* mh = registered ? dst.mh : nullptr;
        std::size_t size = round == 2 ? 64 : 0;  // round 2: a 64-byte receive takes a 0-byte send
        int tag = 0;
        void* rreq = nullptr;
        REQUIRE(net->irecv(p.recv, 1, &data, &size, &tag, &mh, &rreq) == ncclSuccess);
        REQUIRE(rreq != nullptr);
        void* sreq = nullptr;
        REQUIRE(isend_when_ready(*net, p.send, registered ? src.data() : nullptr, 0, 0, registered ? src.mh : nullptr,
                                 &sreq, seconds_from_now(20)) == ncclSuccess);
        REQUIRE(sreq != nullptr);
        int done = 0, sizes[1] = {-1};
        REQUIRE(test_until_done(*net, rreq, &done, sizes, seconds_from_now(20)) == ncclSuccess);
        CHECK(done == 1);
        CHECK(sizes[0] == 0);
        sizes[0] = -1;
        REQUIRE(test_until_done(*net, sreq, &done, sizes, seconds_from_now(20)) == ncclSuccess);
        CHECK(done == 1);
        CHECK(sizes[0] == 0);
    }
    CHECK(std::all_of(dst.bytes.begin(), dst.bytes.end(), [](std::uint8_t b) { return b == 2; }));
}

TEST_CASE("iflush of host memory has nothing to do", "[nccl_p2p]") {
    auto net = open_net();
    REQUIRE(net);
    Pair p(*net);
    REQUIRE(p.status.ok());
    Buf dst(*net, p.recv, 64);
    void* data = dst.data();
    int size = 64;
    void* req = reinterpret_cast<void*>(1);
    CHECK(net->iflush(p.recv, 1, &data, &size, &dst.mh, &req) == ncclSuccess);
    CHECK(req == nullptr);
    CHECK(net->iflush(p.send, 1, &data, &size, &dst.mh, &req) == ncclInvalidArgument);
}
