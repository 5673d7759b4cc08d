// SPDX-License-Identifier: BSD-3-Clause
// omrc-perf's endpoint (session.hpp): the device, its QPs and the test buffer.
#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <fmt/format.h>
#include <random>

#include "session.hpp"

namespace omrc::perf {


Endpoint::~Endpoint() {
    mr.reset();
    qps.clear();
    scq.reset();
    rcq.reset();
    pd.reset();
    dev.reset();
    std::free(buf);
}

std::string Endpoint::open(const Options& o, std::uint32_t nqps, std::size_t per_qp, std::uint32_t depth) {
    if (auto e = open_device(o); !e.empty()) return e;
    return create(nqps, per_qp, depth);
}

std::string Endpoint::open_device(const Options& o) {
    // The configuration's device (or the defaults), then the command line's arguments.
    DeviceOptions d = o.device_options;
    for (const std::string& kv : o.dev_args) {
        const std::size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) return fmt::format("--dev-arg {}: expected key=value", kv);
        d.args[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    if (!o.eal.empty()) d.args["eal"] = o.eal;
    if (!o.pcap.empty()) d.args["pcap"] = o.pcap;
    if (o.driver_context.has_value()) {
        d.driver_context = o.driver_context;
        d.args["endpoint"] = std::to_string(o.endpoint);
        if (!o.pcap.empty() && o.endpoint != 0) {
            // Both ends in this process: the second one writes FILE-peer.pcap.
            std::string p = o.pcap;
            const std::size_t dot = p.rfind(".pcap");
            d.args["pcap"] = dot != std::string::npos && dot + 5 == p.size() ? p.insert(dot, "-peer") : p + "-peer";
        }
    }
    d.planes = o.planes;
    if (o.workers != 0) d.workers = o.workers;
    if (!o.cpus.empty()) d.cpus = o.cpus;
    if (!o.master_key_file.empty()) {
        std::ifstream in(o.master_key_file);
        std::string hex, word;
        while (in >> word) hex += word;
        std::array<std::uint8_t, 32> key{};
        if (!in.eof() || hex.size() != 64 ||
            !std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
            return fmt::format("--master-key-file {}: not 64 hex digits", o.master_key_file);
        for (std::size_t i = 0; i < 32; ++i) key[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
        d.security.master_key[0] = key;
    }
    if (!o.encrypt.empty())
        d.security.encryption = o.encrypt == "off"           ? Encryption::off
                                : o.encrypt == "aes-gcm-128" ? Encryption::aes_gcm_128
                                                             : Encryption::aes_gcm_256;
    int err = 0;
    dev = Device::open(o.driver, d, &err);
    if (!dev) {
        return fmt::format("cannot open driver '{}': {} (drivers: {}; see OMRC_LOG_LEVEL=info for details)",
                           o.driver, std::strerror(err), fmt::join(Device::drivers(), ", "));
    }
    return {};
}

std::string Endpoint::create(std::uint32_t nqps, std::size_t per_qp, std::uint32_t depth) {
    int err = 0;
    pd = dev->alloc_pd(&err);
    const int cqe = static_cast<int>(std::min<std::uint64_t>(std::uint64_t{nqps} * depth * 2 + 1024, 1u << 20));
    scq = dev->create_cq(cqe, &err);
    rcq = dev->create_cq(cqe, &err);
    if (!pd || !scq || !rcq) return fmt::format("cannot create PD/CQ: {}", std::strerror(err));
    buf_per_qp = std::max<std::size_t>(per_qp, 64);
    const std::size_t total = (buf_per_qp * nqps + 4095) / 4096 * 4096;
    buf = static_cast<std::uint8_t*>(std::aligned_alloc(4096, total));
    if (buf == nullptr) return "out of memory for the test buffer";
    std::memset(buf, 0x5A, total);
    mr = pd->reg_mr(buf, total, AccessFlags::local_write | AccessFlags::remote_write | AccessFlags::remote_read, &err);
    if (!mr) return fmt::format("reg_mr: {}", std::strerror(err));
    std::mt19937 rng(std::random_device{}());
    for (std::uint32_t i = 0; i < nqps; ++i) {
        QpInitAttr a;
        a.send_cq = scq.get();
        a.recv_cq = rcq.get();
        a.cap.max_send_wr = std::max<std::uint32_t>(depth, 16);
        a.cap.max_recv_wr = std::clamp<std::uint32_t>(2 * depth, 256, 65536);  // send_bw posts 2 × depth
        auto qp = pd->create_qp(a, &err);
        if (!qp) return fmt::format("create_qp: {}", std::strerror(err));
        QpInfo info;
        info.qpn = qp->qp_num();
        info.conn_id = qp->conn_id();
        info.psn = rng() & 0xFFFFFF;
        info.va = reinterpret_cast<std::uintptr_t>(buf) + i * buf_per_qp;
        info.rkey = mr->rkey();
        info.len = buf_per_qp;
        local.push_back(info);
        qps.push_back(std::move(qp));
    }
    return {};
}

std::string qp_attr_of(const Options& o, QpAttr& a) {
    a.qp_access_flags = AccessFlags::local_write | AccessFlags::remote_write | AccessFlags::remote_read;
    a.mtu_bytes = o.mtu;
    std::string why;
    if (path_policy_by_name(o.policy, &a.path_policy, &why) != 0) return why;
    a.evs = o.evs;
    a.backup_evs = o.backup_evs;
    a.mpr = o.mpr;
    a.timeout_ns = std::uint64_t{o.qp_timeout_ms} * 1'000'000;
    a.cc = o.cc;
    return {};
}

std::string Endpoint::connect(const Options& o, const DeviceAddress& peer) {
    QpAttr base;
    if (auto e = qp_attr_of(o, base); !e.empty()) return e;
    for (std::size_t i = 0; i < qps.size(); ++i) {
        Qp& q = *qps[i];
        QpAttr a = base;
        a.qp_state = QpState::init;
        if (int rc = q.modify(a, QpAttrMask::state | QpAttrMask::access_flags))
            return fmt::format("QP to INIT: {}", std::strerror(rc));
        a.qp_state = QpState::rtr;
        a.dest_qp_num = remote[i].qpn;
        a.dest_conn_id = remote[i].conn_id;
        a.rq_psn = remote[i].psn;
        a.peer = peer;
        if (int rc = q.modify(a, QpAttrMask::state | QpAttrMask::path | QpAttrMask::dest_qpn |
                                     QpAttrMask::rq_psn | QpAttrMask::mtu | QpAttrMask::mpr))
            return fmt::format("QP to RTR (mtu {}, evs {}, backup_evs {}, mpr {}): {}", o.mtu, o.evs, o.backup_evs,
                               o.mpr, std::strerror(rc));
        a.qp_state = QpState::rts;
        a.sq_psn = local[i].psn;
        if (int rc = q.modify(a, QpAttrMask::state | QpAttrMask::sq_psn | QpAttrMask::timeout | QpAttrMask::cc))
            return fmt::format("QP to RTS: {}", std::strerror(rc));
    }
    return {};
}

std::string Endpoint::post_recvs(std::size_t i, std::size_t n) {
    const Sge sge{reinterpret_cast<std::uintptr_t>(buf) + i * buf_per_qp, static_cast<std::uint32_t>(buf_per_qp),
                  mr->lkey()};
    for (std::size_t k = 0; k < n; ++k) {
        RecvWr w;
        w.wr_id = i;
        w.sg_list = {&sge, 1};
        if (int rc = qps[i]->post_recv(w)) return fmt::format("post_recv: {}", std::strerror(rc));
    }
    return {};
}

nlohmann::json Endpoint::hello_fields() const {
    nlohmann::json q = nlohmann::json::array();
    for (const QpInfo& i : local) q.push_back(qp_json(i));
    return {{"device", address_json(dev->address())}, {"qps", std::move(q)}};
}

std::string check_wc(const Wc& wc) {
    if (wc.status == WcStatus::success) return {};
    return fmt::format("work completion error on QPN {}: {} ({})", wc.qp_num, to_string(wc.status),
                       static_cast<int>(wc.status));
}

std::string write_stats(const Options& o, const Device& dev) {
    if (o.stats_json.empty()) return {};
    std::FILE* f = std::fopen(o.stats_json.c_str(), "w");
    if (f == nullptr) return fmt::format("--stats {}: {}", o.stats_json, std::strerror(errno));
    fmt::print(f, "{}\n", dev.stats_json());
    std::fclose(f);
    return {};
}

}  // namespace omrc::perf
