// SPDX-License-Identifier: BSD-3-Clause
// Encrypted mode through the C++ verbs API and configuration files
// (docs/PROTOCOL.md §12, docs/CONFIG.md "security"): devices that share a
// master key move data byte-exact with every frame sealed, per device and
// per QP, with one and two workers and key rotations on the way; one end
// encrypted and the other not moves nothing; a missing key fails at open or
// at INIT→RTR with EINVAL; the [security] table's keys and errors.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "omrc/config.hpp"
#include "support/verbs_net.hpp"

using namespace omrc;
using omrc::test::check_transfer;
using omrc::test::TransferSpec;

namespace {

std::array<std::uint8_t, 32> key_of(std::uint8_t fill) {
    std::array<std::uint8_t, 32> k{};
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(fill ^ (7 * i));
    return k;
}

DeviceOptions keyed(Encryption by_default = Encryption::aes_gcm_256, std::uint32_t workers = 1) {
    DeviceOptions o;
    o.security.master_key[0] = key_of(0x21);
    o.security.encryption = by_default;
    o.workers = workers;
    return o;
}

/// transfer()'s loop on a virtual clock: after each pass, time jumps to the next event.
omrc::test::TransferHooks virtual_time(omrc::test::VirtualNet& net, Device& a, Device& b) {
    omrc::test::TransferHooks h;
    h.on_pass = [&net, &a, &b] {
        const std::uint64_t next = std::min({net.fabric.next_event_ns(), a.next_wakeup_ns(), b.next_wakeup_ns()});
        if (next != UINT64_MAX) net.now_ns = std::max(net.now_ns, next);
        return true;
    };
    return h;
}

std::uint64_t qp_counter(const Device& d, const char* name) {
    const nlohmann::json j = nlohmann::json::parse(d.stats_json());
    std::uint64_t n = 0;
    for (const auto& w : j["qps"]) n += w["stats"].value(name, std::uint64_t{0});
    return n;
}

std::uint64_t drop_counter(const Device& d, const char* name) {
    const nlohmann::json j = nlohmann::json::parse(d.stats_json());
    return j["engine"]["rx_drops"].value(name, std::uint64_t{0});
}

}  // namespace

TEST_CASE("encryption__device_default_transfer_byte_exact", "[unit][verbs][psp]") {
    for (const std::uint32_t workers : {1u, 2u}) {
        loopback::FabricConfig fc;
        fc.endpoints = 2;
        fc.planes = 4;
        fc.queues = workers;
        fc.seed = 3;
        fc.mode = loopback::ClockMode::virtual_clock;
        omrc::test::VirtualNet net(fc);
        auto a = net.open(0, 11, keyed(Encryption::aes_gcm_256, workers));
        auto b = net.open(1, 12, keyed(Encryption::aes_gcm_256, workers));
        TransferSpec spec;
        spec.bytes = 4u << 20;
        spec.qp.evs = 32;
        // The QPs' counters at the last completion (transfer() destroys them after).
        std::uint64_t opened_b = 0, sealed_a = 0, opened_a = 0;
        omrc::test::TransferHooks hooks = virtual_time(net, *a, *b);
        hooks.on_send_completion = [&](const Wc&, std::size_t done) {
            if (done != spec.bytes / spec.msg_bytes) return;
            opened_b = qp_counter(*b, "psp_opened");
            sealed_a = qp_counter(*a, "psp_sealed");
            opened_a = qp_counter(*a, "psp_opened");
        };
        const auto r = omrc::test::transfer(*a, *b, spec, hooks);
        check_transfer(r);
        CHECK(opened_b >= (4u << 20) / 4096);
        CHECK(sealed_a >= (4u << 20) / 4096);
        CHECK(opened_a > 0);
        CHECK(drop_counter(*b, "psp_bad_tag") == 0);
        CHECK(drop_counter(*b, "psp_required") == 0);
    }
}

TEST_CASE("encryption__per_qp_attribute_and_rotation", "[unit][verbs][psp]") {
    omrc::test::VirtualNet net(2, 4, 5);
    auto a = net.open(0, 21, keyed(Encryption::off));
    auto b = net.open(1, 22, keyed(Encryption::off));
    auto pa = a->alloc_pd(), pb = b->alloc_pd();
    auto ca = a->create_cq(256), cb = b->create_cq(256);
    auto qa = pa->create_qp(omrc::test::init_attr(*ca, *ca));
    auto qb = pb->create_qp(omrc::test::init_attr(*cb, *cb));
    QpAttr base;
    base.encryption = Encryption::aes_gcm_128;
    base.evs = 16;
    omrc::test::connect(*qa, *a, *qb, *b, base);
    CHECK(qa->encrypted());
    CHECK(qb->encrypted());
    std::vector<std::uint8_t> src(1 << 20), dst(1 << 20, 0);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 13 + 1);
    auto smr = pa->reg_mr(src.data(), src.size(), AccessFlags::local_write);
    auto dmr = pb->reg_mr(dst.data(), dst.size(), AccessFlags::local_write | AccessFlags::remote_write);
    std::size_t done = 0, rotated = 0;
    for (std::size_t off = 0; off < src.size(); off += 64 << 10) {
        SendWr wr;
        wr.wr_id = off;
        wr.opcode = WrOpcode::rdma_write;
        wr.send_flags = SendFlags::signaled;
        const Sge sge{omrc::test::addr_of(src.data() + off), 64 << 10, smr->lkey()};
        wr.sg_list = {&sge, 1};
        wr.remote_addr = omrc::test::addr_of(dst.data() + off);
        wr.rkey = dmr->rkey();
        REQUIRE(qa->post_send(wr) == 0);
        net.run({a.get(), b.get()}, [] { return false; }, 30'000);
        const int rc = qa->rotate_key();  // as often as it lets us
        CHECK((rc == 0 || rc == EBUSY));
        rotated += rc == 0;
        if (qb->rotate_key() == 0) ++rotated;
    }
    REQUIRE(net.run({a.get(), b.get()}, [&] {
        for (const Wc& wc : omrc::test::drain(*ca)) {
            CHECK(wc.status == WcStatus::success);
            ++done;
        }
        return done == 16;
    }, 2'000'000'000));
    CHECK(dst == src);
    CHECK(rotated >= 4);
    CHECK(qp_counter(*b, "psp_rx_rotations") >= 1);
    CHECK(drop_counter(*b, "psp_old_epoch") == 0);
}

TEST_CASE("encryption__one_end_plain_moves_nothing", "[unit][verbs][psp]") {
    omrc::test::VirtualNet net(2, 4, 7);
    auto a = net.open(0, 31, keyed(Encryption::off));           // plain
    auto b = net.open(1, 32, keyed(Encryption::aes_gcm_256));   // encrypted
    TransferSpec spec;
    spec.bytes = 256u << 10;
    spec.qp.timeout_ns = 1'000'000;
    spec.qp.retry_cnt = 1;
    spec.qp.evs = 8;
    const auto r = omrc::test::transfer(*a, *b, spec, virtual_time(net, *a, *b));
    CHECK(r.setup_error == 0);
    CHECK(r.errors > 0);  // retry_exc_err: nothing the plain end sends is taken
    CHECK_FALSE(r.exact);
    CHECK(drop_counter(*b, "psp_required") > 0);
    CHECK(drop_counter(*b, "psp_bad_tag") == 0);
}

TEST_CASE("encryption__missing_key_fails_cleanly", "[unit][verbs][psp]") {
    omrc::test::VirtualNet net(2, 4, 9);
    // At open: encryption on by default without the key it names.
    DeviceOptions o;
    o.security.encryption = Encryption::aes_gcm_256;
    o.driver_context = &net.fabric;
    o.args["endpoint"] = "0";
    o.clock = [&] { return net.now_ns; };
    int err = 0;
    CHECK(Device::open("loopback", o, &err) == nullptr);
    CHECK(err == EINVAL);
    o.security.master_key[1] = key_of(1);  // key 1, but key_select names 0
    CHECK(Device::open("loopback", o, &err) == nullptr);
    o.security.key_select = 1;
    o.security.replay_window = 100;
    CHECK(Device::open("loopback", o, &err) == nullptr);  // not a power of two
    // At INIT→RTR: a QP asks for encryption on a device without keys.
    auto a = net.open(0, 41, DeviceOptions{});
    auto b = net.open(1, 42, keyed(Encryption::off));
    auto pa = a->alloc_pd(), pb = b->alloc_pd();
    auto ca = a->create_cq(16), cb = b->create_cq(16);
    auto qa = pa->create_qp(omrc::test::init_attr(*ca, *ca));
    auto qb = pb->create_qp(omrc::test::init_attr(*cb, *cb));
    QpAttr base;
    base.encryption = Encryption::aes_gcm_256;
    std::string step;
    CHECK(omrc::test::connect_qps(*qa, *a, *qb, *b, base, &step) == EINVAL);
    CHECK(step == "modify(RTR)");
    CHECK(qa->state() == QpState::init);  // no half-open state
    CHECK_FALSE(qa->encrypted());
}

TEST_CASE("encryption__config_security_table", "[unit][config][psp]") {
    const std::string key_hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    const std::string key_file = "/tmp/omrc_test_master_key.txt";
    {
        std::ofstream f(key_file);
        f << key_hex.substr(0, 32) << "\n" << key_hex.substr(32) << "\n";  // whitespace is allowed
    }
    const std::string text = "[[device]]\nname = \"a\"\ndriver = \"loopback\"\n[device.security]\n"
                             "master_key_file = \"" + key_file + "\"\nmaster_key_1 = \"" + key_hex + "\"\n"
                             "key_select = 1\nreplay_window = 8192\nencryption = \"aes-gcm-128\"\n";
    ConfigFile cf;
    std::string error;
    REQUIRE(parse_config(text, "inline", &cf, &error) == 0);
    const DeviceOptions& o = cf.devices.at(0).options;
    REQUIRE(o.security.master_key[0].has_value());
    CHECK((*o.security.master_key[0])[1] == 0x11);
    CHECK(o.security.master_key[1] == o.security.master_key[0]);
    CHECK(o.security.key_select == 1);
    CHECK(o.security.replay_window == 8192);
    CHECK(o.security.encryption == Encryption::aes_gcm_128);
    std::remove(key_file.c_str());
    const std::string bad = "[[device]]\nname = \"a\"\ndriver = \"loopback\"\n[device.security]\nmaster_key = \"abc\"\n";
    CHECK(parse_config(bad, "inline", &cf, &error) != 0);
    CHECK(error.find("64 hex digits") != std::string::npos);
    const std::string bad_mode = "[[device]]\nname = \"a\"\ndriver = \"loopback\"\n[device.security]\nencryption = \"rot13\"\n";
    CHECK(parse_config(bad_mode, "inline", &cf, &error) != 0);
    CHECK(error.find("aes-gcm-256") != std::string::npos);
}
