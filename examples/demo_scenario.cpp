// SPDX-License-Identifier: BSD-3-Clause
#include "demo_scenario.hpp"

#include <isa-l/crc64.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>

#include "drivers/loopback/loopback.hpp"
#include "omrc/omrc.hpp"

namespace omrc::demo {

namespace {

struct Side {
    std::unique_ptr<Device> dev;
    std::unique_ptr<Pd> pd;
    std::unique_ptr<Cq> cq;
    std::unique_ptr<Mr> mr;
    std::unique_ptr<Qp> qp;
};

std::string failed(const char* what, int err) { return std::string(what) + " failed: " + std::strerror(err); }

}  // namespace

double Result::gbps() const noexcept {
    return elapsed_ns == 0 ? 0.0 : static_cast<double>(bytes) * 8 / static_cast<double>(elapsed_ns);
}

Result run(const Options& opt, const std::function<void(const Bucket&)>& on_bucket) {
    Result r;
    const std::uint32_t planes = opt.planes;
    const std::uint32_t dark_plane = std::min(opt.dark_plane, planes - 1);
    const std::size_t msg = std::size_t{opt.msg_kib} << 10;
    const std::uint64_t bytes = (opt.bytes + msg - 1) / msg * msg;

    // The fabric: 2 endpoints, one 100 Gb/s link per plane each way, 1 µs away.
    loopback::FabricConfig fc;
    fc.endpoints = 2;
    fc.planes = planes;
    fc.seed = opt.seed;
    fc.link_delay_ns = 1'000;
    fc.queue.rate_bps = 100'000'000'000;
    loopback::Fabric fabric(fc);
    loopback::Impairment impaired;
    impaired.loss.rate = opt.loss;
    impaired.trim.rate = opt.trim;
    const bool impairments = opt.loss > 0 || opt.trim > 0;
    if (impairments) fabric.set_impairment_all(impaired);
    std::uint64_t vnow = 1'000'000;  // virtual ns, shared by the fabric and both devices

    Side s[2];
    for (int i = 0; i < 2; ++i) {
        DeviceOptions o;
        o.driver_context = &fabric;
        o.args["endpoint"] = std::to_string(i);
        o.seed = opt.seed * 2 + static_cast<std::uint64_t>(i);
        o.clock = [&vnow] { return vnow; };
        const std::string& pcap = i == 0 ? opt.pcap_sender : opt.pcap_receiver;
        if (!pcap.empty()) o.args["pcap"] = pcap;
        int err = 0;
        s[i].dev = Device::open("loopback", o, &err);
        if (!s[i].dev) return r.error = failed("Device::open", err), r;
        s[i].pd = s[i].dev->alloc_pd(&err);
        if (!s[i].pd) return r.error = failed("alloc_pd", err), r;
        s[i].cq = s[i].dev->create_cq(4096, &err);
        if (!s[i].cq) return r.error = failed("create_cq", err), r;
    }
    std::vector<std::uint8_t> src(bytes), dst(bytes, 0);
    {
        std::mt19937_64 rng(opt.seed);
        for (std::size_t i = 0; i + 8 <= src.size(); i += 8) {
            const std::uint64_t x = rng();
            std::memcpy(src.data() + i, &x, 8);
        }
    }
    int err = 0;
    s[0].mr = s[0].pd->reg_mr(src.data(), src.size(), AccessFlags::local_write, &err);
    if (!s[0].mr) return r.error = failed("reg_mr(source)", err), r;
    s[1].mr = s[1].pd->reg_mr(dst.data(), dst.size(), AccessFlags::local_write | AccessFlags::remote_write, &err);
    if (!s[1].mr) return r.error = failed("reg_mr(destination)", err), r;
    for (auto& side : s) {
        QpInitAttr ia;
        ia.send_cq = ia.recv_cq = side.cq.get();
        ia.cap.max_send_wr = 1024;
        side.qp = side.pd->create_qp(ia, &err);
        if (!side.qp) return r.error = failed("create_qp", err), r;
        QpAttr a;
        a.qp_state = QpState::init;
        a.qp_access_flags = AccessFlags::remote_write;
        if ((err = side.qp->modify(a, QpAttrMask::state | QpAttrMask::access_flags)))
            return r.error = failed("modify(INIT)", err), r;
    }
    for (int i = 0; i < 2; ++i) {
        QpAttr a;
        a.qp_state = QpState::rtr;
        a.dest_qp_num = s[1 - i].qp->qp_num();
        a.dest_conn_id = s[1 - i].qp->conn_id();
        a.peer = s[1 - i].dev->address();
        a.path_policy = opt.policy;
        a.evs = opt.policy == PathPolicy::ecmp ? planes : 128;
        using M = QpAttrMask;
        if ((err = s[i].qp->modify(a, M::state | M::path | M::dest_qpn | M::rq_psn | M::mtu)))
            return r.error = failed("modify(RTR)", err), r;
        a.qp_state = QpState::rts;
        if ((err = s[i].qp->modify(a, M::state | M::sq_psn))) return r.error = failed("modify(RTS)", err), r;
    }

    // The outages: the dark plane's link toward the receiver drops every
    // frame (the port stays up: no link event tells the sender).
    r.ideal_ns = static_cast<double>(bytes) * 8 / (static_cast<double>(planes) * 100e9) * 1e9;
    const std::uint64_t t0 = vnow;
    loopback::Impairment black;
    black.blackhole = true;
    black.loss = impaired.loss;  // the dark plane keeps the other impairments when it returns
    black.trim = impaired.trim;
    for (const Outage& out : opt.outages) {
        const auto from = static_cast<std::uint64_t>(out.dark_at * r.ideal_ns);
        const auto to = static_cast<std::uint64_t>(out.back_at * r.ideal_ns);
        r.dark_ns.emplace_back(from, to);
        fabric.schedule_impairment(t0 + from, 0, 1, dark_plane, black);
        fabric.schedule_impairment(t0 + to, 0, 1, dark_plane, impairments ? impaired : loopback::Impairment{});
    }

    r.bytes = bytes;
    r.messages = bytes / msg;
    std::size_t posted = 0;
    const std::uint64_t bucket_ns = std::max<std::uint64_t>(opt.bucket_ns, 1'000);
    std::uint64_t next_bucket = t0 + bucket_ns, bucket_start = t0;
    std::vector<std::uint64_t> last(planes, 0);
    std::vector<Wc> wc(256);
    auto close_bucket = [&](std::uint64_t at) {
        Bucket b;
        b.end_ns = at - t0;
        b.length_ns = at - bucket_start;
        bucket_start = at;
        for (std::uint32_t p = 0; p < planes; ++p) {
            const std::uint64_t d = fabric.link_counters(0, 1, p).delivered;
            b.gbps.push_back(b.length_ns == 0 ? 0.0
                                              : static_cast<double>(d - last[p]) * 4096 * 8 / static_cast<double>(b.length_ns));
            last[p] = d;
        }
        if (on_bucket) on_bucket(b);
        r.buckets.push_back(std::move(b));
    };
    bool wc_error = false;
    while (r.completed < r.messages && !wc_error) {
        while (posted < r.messages && posted - r.completed < 32) {
            const Sge sge{reinterpret_cast<std::uint64_t>(src.data()) + posted * msg, static_cast<std::uint32_t>(msg),
                          s[0].mr->lkey()};
            SendWr wr;
            wr.wr_id = posted;
            wr.send_flags = SendFlags::signaled;
            wr.sg_list = std::span(&sge, 1);
            wr.remote_addr = reinterpret_cast<std::uint64_t>(dst.data()) + posted * msg;
            wr.rkey = s[1].mr->rkey();
            if ((err = s[0].qp->post_send(wr))) return r.error = failed("post_send", err), r;
            ++posted;
        }
        s[0].dev->progress();
        s[1].dev->progress();
        const std::size_t n = s[0].cq->poll(wc);
        for (std::size_t k = 0; k < n; ++k) {
            if (wc[k].status != WcStatus::success && !wc_error) {
                r.error = "WR " + std::to_string(wc[k].wr_id) + " completed with " + to_string(wc[k].status);
                wc_error = true;
            }
            ++r.completed;
        }
        // Jump to the next thing that has to happen.
        std::uint64_t next = std::min({s[0].dev->next_wakeup_ns(), s[1].dev->next_wakeup_ns(), fabric.next_event_ns()});
        if (next <= vnow) next = vnow + 1;
        while (next_bucket <= next && next_bucket <= vnow + 1) {
            close_bucket(next_bucket);
            next_bucket += bucket_ns;
        }
        if (next == UINT64_MAX) break;
        vnow = std::max(vnow, std::min(next, next_bucket));
    }
    if (vnow > bucket_start) close_bucket(vnow);
    r.elapsed_ns = vnow - t0;
    r.crc_source = crc64_ecma_refl(0, src.data(), src.size());
    r.crc_destination = crc64_ecma_refl(0, dst.data(), dst.size());
    r.byte_exact = !wc_error && r.completed == r.messages && src == dst;
    r.sender_stats_json = s[0].dev->stats_json();
    return r;
}

}  // namespace omrc::demo
