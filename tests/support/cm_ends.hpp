// SPDX-License-Identifier: BSD-3-Clause
// Connection-manager test support (verbs API, docs/PROTOCOL.md §13): one end
// (device, PD, CQ, a registered buffer, its CM events), a connect-accept
// setup with the acceptor's MR in the private data, a WRITE checked
// byte-exact, engine counters from the stats document.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/verbs_net.hpp"

namespace omrc::test::cm {

using namespace omrc;

inline std::array<std::uint8_t, 32> key_of(std::uint8_t fill) {
    std::array<std::uint8_t, 32> k{};
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(fill ^ (5 * i));
    return k;
}

/// One end: device, PD, CQ, a buffer registered for remote writes.
struct End {
    std::unique_ptr<Device> dev;
    std::unique_ptr<Pd> pd;
    std::unique_ptr<Cq> cq;
    std::vector<std::uint8_t> buf;
    std::unique_ptr<Mr> mr;
    std::vector<CmEvent> events;

    End(VirtualNet& net, std::uint32_t endpoint, DeviceOptions o = {}) {
        dev = net.open(endpoint, 100 + endpoint, o);
        pd = dev->alloc_pd();
        cq = dev->create_cq(1024);
        buf.assign(256 << 10, 0);
        mr = pd->reg_mr(buf.data(), buf.size(),
                        AccessFlags::local_write | AccessFlags::remote_write | AccessFlags::remote_read);
        REQUIRE(mr != nullptr);
    }
    std::unique_ptr<Qp> qp() {
        auto q = pd->create_qp(init_attr(*cq, *cq));
        REQUIRE(q != nullptr);
        return q;
    }
    /// Polls the CM events into `events`; true when one of `type` is there.
    bool has(CmEventType type) {
        CmEvent ev[8];
        for (std::size_t n; (n = dev->cm_poll(ev)) != 0;) events.insert(events.end(), ev, ev + n);
        for (const CmEvent& e : events)
            if (e.type == type) return true;
        return false;
    }
    CmEvent take(CmEventType type) {
        for (auto it = events.begin(); it != events.end(); ++it)
            if (it->type == type) {
                const CmEvent e = *it;
                events.erase(it);
                return e;
            }
        FAIL("no CM event " << to_string(type));
        return {};
    }
};

/// The MR's address and rkey as private data (12 bytes).
inline void put_key(CmConnParams& p, const Mr& mr, const std::vector<std::uint8_t>& buf) {
    const std::uint64_t addr = addr_of(buf.data());
    const std::uint32_t rkey = mr.rkey();
    std::memcpy(p.private_data.data(), &addr, 8);
    std::memcpy(p.private_data.data() + 8, &rkey, 4);
    p.private_len = 12;
}

inline constexpr std::uint64_t kService = 0x4F4D5243'00000007ull;

/// A connects to B's kService; B accepts with its MR in the private data.
/// Returns false (with the events left in the ends) when setup did not end
/// with established at both.
inline bool setup(VirtualNet& net, End& a, End& b, Qp& qa, Qp& qb, std::uint32_t& id_a, std::uint32_t& id_b,
           Encryption enc = Encryption::device_default, std::uint64_t budget_ns = 3'000'000'000ull) {
    CmConnParams p;
    p.service_id = kService;
    p.peer = b.dev->address();
    p.encryption = enc;
    REQUIRE(a.dev->cm_connect(qa, p, &id_a) == 0);
    if (!net.run({a.dev.get(), b.dev.get()},
                 [&] { return b.has(CmEventType::connect_request) || a.has(CmEventType::rejected); }, budget_ns))
        return false;
    if (!b.has(CmEventType::connect_request)) return false;
    const CmEvent req = b.take(CmEventType::connect_request);
    CHECK(req.service_id == kService);
    CHECK(req.peer.addr == a.dev->address().addr);
    id_b = req.id;
    CmConnParams acc;
    put_key(acc, *b.mr, b.buf);
    REQUIRE(b.dev->cm_accept(req.id, qb, acc) == 0);
    CHECK(qb.state() == QpState::rts);
    return net.run({a.dev.get(), b.dev.get()},
                   [&] { return a.has(CmEventType::established) && b.has(CmEventType::established); }, budget_ns);
}

/// The address and rkey an acceptor's private data carries (put_key).
inline void get_key(const CmEvent& e, std::uint64_t& addr, std::uint32_t& rkey) {
    REQUIRE(e.private_len == 12);
    std::memcpy(&addr, e.private_data.data(), 8);
    std::memcpy(&rkey, e.private_data.data() + 8, 4);
}

/// Posts one signalled WRITE of `len` bytes at `src` (in `mr`) to (raddr, rkey).
inline void post_write(Qp& qp, const Mr& mr, const void* src, std::uint32_t len, std::uint64_t raddr,
                       std::uint32_t rkey, std::uint64_t wr_id) {
    const Sge sge{addr_of(src), len, mr.lkey()};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = WrOpcode::rdma_write;
    wr.send_flags = SendFlags::signaled;
    wr.sg_list = {&sge, 1};
    wr.remote_addr = raddr;
    wr.rkey = rkey;
    REQUIRE(qp.post_send(wr) == 0);
}

/// A writes `len` patterned bytes into B's buffer at the address B's REP named.
inline void write_and_check(VirtualNet& net, End& a, End& b, Qp& qa, const CmEvent& established, std::size_t len,
                            std::uint8_t salt = 7) {
    std::uint64_t raddr = 0;
    std::uint32_t rkey = 0;
    get_key(established, raddr, rkey);
    for (std::size_t i = 0; i < len; ++i) a.buf[i] = static_cast<std::uint8_t>(i * 13 + salt);
    post_write(qa, *a.mr, a.buf.data(), static_cast<std::uint32_t>(len), raddr, rkey, 77);
    std::vector<Wc> got;
    REQUIRE(net.run({a.dev.get(), b.dev.get()},
                    [&] {
                        auto more = drain(*a.cq);
                        got.insert(got.end(), more.begin(), more.end());
                        return !got.empty();
                    },
                    2'000'000'000ull));
    REQUIRE(got.size() == 1);
    CHECK(got[0].status == WcStatus::success);
    CHECK(got[0].wr_id == 77);
    CHECK(std::memcmp(a.buf.data(), b.buf.data(), len) == 0);
}

inline std::uint64_t engine_counter(const Device& d, const char* name) {
    const nlohmann::json j = nlohmann::json::parse(d.stats_json());
    return j["engine"].value(name, std::uint64_t{0});
}


/// The connection manager's counters in the stats document (`cm`).
inline std::uint64_t cm_counter(const Device& d, const char* name) {
    const nlohmann::json j = nlohmann::json::parse(d.stats_json());
    return j.contains("cm") ? j["cm"].value(name, std::uint64_t{0}) : 0;
}

}  // namespace omrc::test::cm
