// SPDX-License-Identifier: BSD-3-Clause
// A program outside the tree that uses the installed OpenMRC: the version,
// then one RDMA WRITE between two QPs of one loopback device (a private
// fabric, real clock), through <omrc/omrc.hpp> alone; and a device named by
// a configuration file (parse_config, exported by libomrc.so).
#include <omrc/omrc.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int transfer() {
    int err = 0;
    auto dev = omrc::Device::open("loopback", {}, &err);
    if (!dev) return std::printf("open: %d\n", err), 1;
    auto pd = dev->alloc_pd();
    auto cq = dev->create_cq(16);
    omrc::QpInitAttr init;
    init.send_cq = init.recv_cq = cq.get();
    auto a = pd->create_qp(init), b = pd->create_qp(init);
    if (!a || !b) return std::printf("create_qp failed\n"), 1;
    for (omrc::Qp* q : {a.get(), b.get()}) {
        omrc::Qp* peer = q == a.get() ? b.get() : a.get();
        omrc::QpAttr attr;
        attr.qp_state = omrc::QpState::init;
        attr.qp_access_flags = omrc::AccessFlags::local_write | omrc::AccessFlags::remote_write;
        if (q->modify(attr, omrc::QpAttrMask::state | omrc::QpAttrMask::access_flags)) return 1;
        attr.qp_state = omrc::QpState::rtr;
        attr.dest_qp_num = peer->qp_num();
        attr.dest_conn_id = peer->conn_id();
        attr.peer = dev->address();
        if (q->modify(attr, omrc::QpAttrMask::state | omrc::QpAttrMask::path | omrc::QpAttrMask::dest_qpn |
                                omrc::QpAttrMask::rq_psn | omrc::QpAttrMask::mtu)) return 1;
        attr.qp_state = omrc::QpState::rts;
        if (q->modify(attr, omrc::QpAttrMask::state | omrc::QpAttrMask::sq_psn)) return 1;
    }
    std::vector<unsigned char> src(64 * 1024), dst(src.size());
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7);
    auto smr = pd->reg_mr(src.data(), src.size(), omrc::AccessFlags::local_write);
    auto dmr = pd->reg_mr(dst.data(), dst.size(), omrc::AccessFlags::local_write | omrc::AccessFlags::remote_write);
    const omrc::Sge sge{reinterpret_cast<std::uintptr_t>(src.data()), static_cast<std::uint32_t>(src.size()),
                        smr->lkey()};
    omrc::SendWr wr;
    wr.wr_id = 42;
    wr.send_flags = omrc::SendFlags::signaled;
    wr.sg_list = {&sge, 1};
    wr.remote_addr = reinterpret_cast<std::uintptr_t>(dst.data());
    wr.rkey = dmr->rkey();
    if (a->post_send(wr)) return std::printf("post_send failed\n"), 1;
    omrc::Wc wc[1];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (cq->poll(wc) == 0) {
        if (std::chrono::steady_clock::now() > deadline) return std::printf("no completion\n"), 1;
        dev->progress();
    }
    if (wc[0].status != omrc::WcStatus::success || wc[0].wr_id != 42)
        return std::printf("completion: %s\n", omrc::to_string(wc[0].status)), 1;
    return std::memcmp(src.data(), dst.data(), src.size()) == 0 ? 0 : 1;
}

int configured_device() {
    omrc::ConfigFile cfg;
    std::string error;
    if (omrc::parse_config("[[device]]\nname = \"omrc0\"\ndriver = \"loopback\"\nplanes = 2\n", "consumer", &cfg,
                           &error) != 0)
        return std::printf("parse_config: %s\n", error.c_str()), 1;
    if (omrc::parse_config("[[device]]\nname = \"omrc0\"\n", "consumer", &cfg, &error) != EINVAL ||
        error.find("missing key 'driver'") == std::string::npos)
        return std::printf("parse_config accepted a device without a driver: %s\n", error.c_str()), 1;
    const omrc::DeviceConfig* d = cfg.find("omrc0");
    int err = 0;
    auto dev = d != nullptr ? omrc::Device::open(d->driver, d->options, &err) : nullptr;
    if (!dev || dev->planes() != 2) return std::printf("configured device: %d\n", err), 1;
    return 0;
}

}  // namespace

int main() {
    std::printf("OpenMRC %s\n", omrc::version());
    if (std::strcmp(omrc::version(), "0.1.0") != 0) return 1;
    return transfer() != 0 ? 1 : configured_device();
}
