// SPDX-License-Identifier: BSD-3-Clause
// CPU cost of the engine per data packet, both endpoints together, in one
// thread on a virtual clock: deterministic, no cross-core traffic, no driver.
//
// A pass: the sender's timers and poll_tx → the wire → the receiver's
// on_rx_burst, timers and poll_tx (SACKs) → the wire → the sender's
// on_rx_burst and poll_completions (completed WRITEs are posted again).
// The operation is WRITE, SEND (the receiver keeps receives posted and
// polls their completions) or RDMA READ (the data packets are the
// responder's answers, placed by the requester; its requests and
// acknowledgements ride the other way).
// Virtual time advances by a fixed step per pass. The thread's CPU time over
// the whole run, divided by the data packets delivered, is `ns_per_pkt`.
//
// The wire stands in for NIC DMA: it copies each frame's headers and tail into
// a preallocated slot whose payload bytes already hold the source pattern
// (every packet of the run carries the same bytes, checked), so the payload
// is not copied by the wire; the receiver's placement copy into the
// destination buffer is counted. `memcpy_ns_per_pkt` is a memcpy of one
// packet's payload between the same buffers, measured in the same run.
//
//   build/release/bench/engine_cost --benchmark_format=json
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/config.hpp"
#include "core/engine.hpp"
#include "wire/rx_frame.hpp"

namespace {

using namespace omrc;

constexpr std::uint8_t kPattern = 0x5A;

std::uint64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

/// The operation each run measures (range(4) of the benchmark).
enum class Op : std::uint8_t { write = 0, send = 1, read = 2 };

/// Memory of both ends, as an MR table would answer: bounds-checked copies
/// into one destination buffer (WRITE placement, SEND receives, READ
/// answers at the requester) and bounds-checked reads of the source (the
/// READ responder).
class Sink final : public core::PlacementTarget {
public:
    Sink(std::size_t bytes, const std::vector<std::uint8_t>& src) : buf_(bytes, 0), src_(src) {}
    core::PlaceStatus place(std::uint32_t, std::uint32_t, std::uint64_t va, std::span<const std::uint8_t> b) override {
        return copy_in(reinterpret_cast<std::uint8_t*>(va), b);
    }
    core::PlaceStatus place_local(std::uint32_t, std::uint32_t, std::uint8_t* addr,
                                  std::span<const std::uint8_t> b) override {
        return copy_in(addr, b);
    }
    core::PlaceStatus read_source(std::uint32_t, std::uint32_t, std::uint64_t va, std::uint64_t len,
                                  const std::uint8_t*& out) override {
        out = inside(src_, va, len) ? reinterpret_cast<const std::uint8_t*>(va) : nullptr;
        return out != nullptr ? core::PlaceStatus::ok : core::PlaceStatus::out_of_bounds;
    }
    std::vector<std::uint8_t>& bytes() { return buf_; }

private:
    /// [va, va+len) lies in `v` (checked without overflow).
    static bool inside(const std::vector<std::uint8_t>& v, std::uint64_t va, std::uint64_t len) {
        const auto base = reinterpret_cast<std::uint64_t>(v.data());
        return va >= base && len <= v.size() && va - base <= v.size() - len;
    }
    core::PlaceStatus copy_in(std::uint8_t* at, std::span<const std::uint8_t> b) {
        if (!inside(buf_, reinterpret_cast<std::uint64_t>(at), b.size())) return core::PlaceStatus::out_of_bounds;
        std::memcpy(at, b.data(), b.size());
        return core::PlaceStatus::ok;
    }
    std::vector<std::uint8_t> buf_;
    const std::vector<std::uint8_t>& src_;
};

/// Frames from one engine to the other, one pass at a time.
class Wire {
public:
    static constexpr std::size_t kSlots = 64;
    static constexpr std::size_t kSlotBytes = 4096 + 256;

    Wire(const std::uint8_t* src, std::size_t src_len) : src_(src), src_len_(src_len), buf_(kSlots * kSlotBytes, kPattern) {}

    /// Copies headers and tail; the payload must come from the uniform source.
    /// A sealed frame's cipher text differs per packet and lives in the
    /// engine's memory: that one is copied (as a NIC's DMA reads it).
    bool put(const wire::GatherFrame& g) {
        if (frames_.size() == kSlots) return false;
        std::uint8_t* slot = &buf_[frames_.size() * kSlotBytes];
        std::memcpy(slot, g.header.data(), g.header_len);
        std::size_t off = g.header_len;
        for (std::size_t s = 0; s < g.segment_count; ++s) {
            const auto* d = g.segments[s].data;
            if (g.payload_in_engine_memory && !(d >= src_ && d < src_ + src_len_)) {
                std::memcpy(slot + off, d, g.segments[s].len);
                sealed_ = true;
            } else if (d < src_ || d + g.segments[s].len > src_ + src_len_) {
                throw std::logic_error("payload not from the source");
            }
            off += g.segments[s].len;
        }
        std::memcpy(slot + off, g.tail.data(), g.tail_len);
        frames_.push_back({slot, static_cast<std::uint32_t>(off + g.tail_len), g.plane});
        return true;
    }
    std::span<const wire::RxFrame> frames() const { return frames_; }
    /// After the receiver is done with the pass: the payload area is the
    /// pattern again where a tail (pad + ICRC, ≤ 7 bytes) overwrote it.
    void clear() {
        // Sealed frames were copied whole: nothing of their slots is read as the pattern.
        if (!sealed_)
            for (const auto& f : frames_) std::memset(const_cast<std::uint8_t*>(f.data) + f.len - 8, kPattern, 8);
        frames_.clear();
        sealed_ = false;
    }

private:
    const std::uint8_t* src_;
    std::size_t src_len_;
    std::vector<std::uint8_t> buf_;
    std::vector<wire::RxFrame> frames_;
    bool sealed_ = false;  ///< the frames of this pass carried their cipher text into their slots
};

struct Pair {
    std::shared_ptr<std::vector<std::uint8_t>> src_buf;  ///< shared by every pair of a run
    std::shared_ptr<Sink> sink_buf;
    std::vector<std::uint8_t>& src;
    Sink& sink;
    std::unique_ptr<core::Engine> e[2];
    std::uint32_t qpn[2] = {0, 0};
    core::TimeNs now = 1'000'000;

    /// `shard` of `shard_bits`: this pair's engines are that worker's shard on each side.
    /// The pairs of a run share one source and one destination buffer (as
    /// the QPs of an application share its memory): several shards touch no
    /// more memory than one.
    Pair(std::shared_ptr<std::vector<std::uint8_t>> s, std::shared_ptr<Sink> k, bool icrc, bool transport_acks = false,
         std::uint32_t shard = 0, std::uint32_t shard_bits = 0, bool psp = false)
        : src_buf(std::move(s)), sink_buf(std::move(k)), src(*src_buf), sink(*sink_buf) {
        for (int i = 0; i < 2; ++i) {
            core::EngineConfig c;
            c.planes = 8;
            c.seed = static_cast<std::uint64_t>(i) + 1 + 16 * shard;
            c.shard = shard;
            c.shard_bits = shard_bits;
            for (std::uint32_t p = 0; p < c.planes; ++p) c.local_macs[p] = mac(i, p);
            c.local_addr = addr(i);
            c.compute_icrc = c.verify_icrc = icrc;
            c.send_transport_acks = transport_acks;
            if (psp) {
                for (std::size_t b = 0; b < 32; ++b) c.security.master_keys[0][b] = static_cast<std::uint8_t>(b * 7 + 1);
                c.security.present = 1;
            }
            e[i] = std::make_unique<core::Engine>(c, &sink);
        }
        for (int i = 0; i < 2; ++i) {
            core::QpCaps caps;
            caps.max_send_wr = 1024;
            caps.max_recv_wr = 1024;
            qpn[i] = e[i]->submit(core::CmdCreateQp{caps}, now).qpn;
            core::QpAttr init;
            init.access_flags = core::kAccessLocalWrite | core::kAccessRemoteWrite | core::kAccessRemoteRead;
            e[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::init, init, core::kAttrAccess}, now);
        }
        for (int i = 0; i < 2; ++i) {
            core::QpAttr a;
            a.dest_qp_num = qpn[1 - i];
            a.dest_conn_id = e[1 - i]->qp_info(qpn[1 - i]).conn_id;
            a.peer_addr = addr(1 - i);
            for (std::uint32_t p = 0; p < 8; ++p) a.peer_macs[p] = mac(1 - i, p);
            a.policy = core::PathPolicy::adaptive;
            a.evs = 128;
            a.mpr = 32;
            a.cc.algorithm = core::CcAlgorithm::fixed;
            a.cc.fixed_window_bytes = 16u << 20;
            a.encrypt = psp;  // AES-GCM-256
            if (e[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::rtr, a,
                                               core::kAttrDestQpn | core::kAttrRqPsn | core::kAttrPath | core::kAttrMtu |
                                                   core::kAttrMpr | core::kAttrSecurity},
                             now).err != 0 ||
                e[i]->submit(core::CmdModifyQp{qpn[i], core::QpState::rts, a, core::kAttrSqPsn | core::kAttrCc}, now).err != 0)
                throw std::runtime_error("connect failed");
        }
    }
    static wire::MacAddr mac(int endpoint, std::uint32_t plane) {
        return {0x02, 0x6d, 0x72, 0x63, static_cast<std::uint8_t>(plane), static_cast<std::uint8_t>(endpoint)};
    }
    static wire::Ipv6Addr addr(int i) {
        wire::Ipv6Addr a{0xfd, 0x00};
        a[15] = static_cast<std::uint8_t>(i + 1);
        return a;
    }
};

struct RunResult {
    std::uint64_t cpu_ns = 0;
    std::uint64_t data_pkts = 0;
    std::uint64_t ctrl_pkts = 0;
};

/// Runs `messages` operations of `msg_bytes` with `depth` outstanding, spread
/// over the pairs (workers: one QP per shard, every shard driven by this
/// one thread in turn, each pass). The data packets are counted where they
/// are received: at e[1] for WRITE and SEND, at e[0] (the requester) for READ.
RunResult run(std::vector<std::unique_ptr<Pair>>& pairs, Op op, std::size_t msg_bytes, std::size_t messages,
              std::size_t depth) {
    struct Side {
        std::size_t posted = 0, completed = 0, messages = 0, depth = 0;
        std::size_t recv_posted = 0, recv_completed = 0;  ///< SEND: receives at e[1]
        std::uint64_t rx_before = 0, ctrl_before = 0;
        core::SendRequest r;
        core::RecvRequest rr;
    };
    const int data_rx = op == Op::read ? 0 : 1;  // the engine that receives the data packets
    // One wire each way for every pair: a pair's pass empties it before the next one's.
    Wire ab(pairs.front()->src.data(), pairs.front()->src.size()), ba(pairs.front()->src.data(), pairs.front()->src.size());
    std::vector<std::unique_ptr<Side>> sides;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        Pair& p = *pairs[i];
        auto s = std::make_unique<Side>();
        s->messages = messages / pairs.size() + (i < messages % pairs.size() ? 1 : 0);
        s->depth = std::max<std::size_t>(1, depth / pairs.size());
        s->rx_before = p.e[data_rx]->stats().rx_frames;
        s->ctrl_before = p.e[data_rx]->stats().tx_ctrl_frames;
        s->r.rkey = 1;
        s->r.sge_count = 1;
        switch (op) {
        case Op::write:
            s->r.remote_addr = reinterpret_cast<std::uint64_t>(p.sink.bytes().data());
            s->r.sges[0] = {p.src.data(), static_cast<std::uint32_t>(msg_bytes)};
            break;
        case Op::send:
            s->r.is_send = true;
            s->r.sges[0] = {p.src.data(), static_cast<std::uint32_t>(msg_bytes)};
            s->rr.length = static_cast<std::uint32_t>(msg_bytes);
            s->rr.sge_count = 1;
            s->rr.sges[0] = {p.sink.bytes().data(), static_cast<std::uint32_t>(msg_bytes), 1};
            break;
        case Op::read:
            s->r.is_read = true;
            s->r.remote_addr = reinterpret_cast<std::uint64_t>(p.src.data());
            s->r.sges[0] = {p.sink.bytes().data(), static_cast<std::uint32_t>(msg_bytes), 1};
            break;
        }
        sides.push_back(std::move(s));
    }
    std::vector<wire::GatherFrame> tx(Wire::kSlots);
    std::vector<core::Completion> wc(256);
    const std::uint64_t t0 = thread_cpu_ns();
    std::uint64_t idle = 0;
    for (;;) {
        bool done = true, moved = false;
        for (std::size_t i = 0; i < pairs.size(); ++i) {
            Pair& p = *pairs[i];
            Side& sd = *sides[i];
            // Done when every WR has completed, and for SEND every receive too.
            if (sd.completed >= sd.messages && (op != Op::send || sd.recv_completed >= sd.messages)) continue;
            done = false;
            p.now += 100;
            // SEND: a receive for every message that may be in flight, and a few more.
            while (op == Op::send && sd.recv_posted < sd.messages && sd.recv_posted - sd.recv_completed < sd.depth + 64) {
                sd.rr.wr_id = sd.recv_posted;
                if (p.e[1]->submit(core::CmdPostRecv{p.qpn[1], std::span(&sd.rr, 1)}, p.now).err != 0) break;
                ++sd.recv_posted;
            }
            while (sd.posted < sd.messages && sd.posted - sd.completed < sd.depth) {
                sd.r.wr_id = sd.posted;
                if (p.e[0]->submit(core::CmdPostSend{p.qpn[0], std::span(&sd.r, 1)}, p.now).err != 0) break;
                ++sd.posted;
            }
            // Sender → receiver.
            core::Engine& a = *p.e[0];
            core::Engine& b = *p.e[1];
            if (a.next_wakeup() <= p.now) a.on_timer(p.now);
            const std::size_t n = a.poll_tx(tx, p.now);
            for (std::size_t k = 0; k < n; ++k) ab.put(tx[k]);
            b.on_rx_burst(ab.frames(), p.now);
            ab.clear();
            if (b.next_wakeup() <= p.now) b.on_timer(p.now);
            // Receiver → sender.
            const std::size_t m = b.poll_tx(tx, p.now);
            for (std::size_t k = 0; k < m; ++k) ba.put(tx[k]);
            a.on_rx_burst(ba.frames(), p.now);
            ba.clear();
            std::size_t c = 0;
            while ((c = a.poll_completions(wc)) > 0) {
                for (std::size_t k = 0; k < c; ++k)
                    if (wc[k].status != core::WcStatus::success) throw std::runtime_error("operation failed");
                sd.completed += c;
            }
            while (op == Op::send && (c = b.poll_completions(wc)) > 0) {
                for (std::size_t k = 0; k < c; ++k)
                    if (wc[k].status != core::WcStatus::success || wc[k].opcode != core::WcOpcode::recv ||
                        wc[k].byte_len != msg_bytes)
                        throw std::runtime_error("receive failed");
                sd.recv_completed += c;
            }
            moved = moved || n != 0 || m != 0;
        }
        if (done) break;
        idle = moved ? 0 : idle + 1;
        if (idle > 1'000'000) throw std::runtime_error("no progress");
    }
    RunResult res;
    res.cpu_ns = thread_cpu_ns() - t0;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
        res.data_pkts += pairs[i]->e[data_rx]->stats().rx_frames - sides[i]->rx_before;
        res.ctrl_pkts += pairs[i]->e[data_rx]->stats().tx_ctrl_frames - sides[i]->ctrl_before;
    }
    return res;
}

/// memcpy of `bytes` per packet between the source and the sink, `pkts` times.
double memcpy_ns_per_pkt(Pair& p, std::size_t bytes, std::size_t pkts) {
    const std::size_t span = std::min(p.src.size(), p.sink.bytes().size());
    const std::uint64_t t0 = thread_cpu_ns();
    std::size_t off = 0;
    for (std::size_t i = 0; i < pkts; ++i) {
        if (off + bytes > span) off = 0;
        std::memcpy(p.sink.bytes().data() + off, p.src.data() + off, bytes);
        benchmark::ClobberMemory();
        off += bytes;
    }
    return static_cast<double>(thread_cpu_ns() - t0) / static_cast<double>(pkts);
}

/// range(0): message bytes (8 = one 8-byte packet per message; 1 MiB = 256
/// frames of 4 KiB payload); range(1): software ICRC on both ends;
/// range(2): positive Transport ACKs sent with every SACK; range(3): workers:
/// engine shards per side, one QP each, the same messages and outstanding
/// WRITEs spread over them, all driven by this thread (what a device with
/// several workers costs per packet when nothing on the hot path is shared);
/// range(4): the operation (0 WRITE, 1 SEND, 2 RDMA READ; READs are held to
/// max_rd_atomic = 16 outstanding whatever the depth); range(5): encrypted
/// mode (AES-GCM-256, every frame sealed and opened; the wire then copies each
/// sealed frame's cipher text, which differs per packet — a NIC's DMA would
/// read it too). bench/crypto_cost measures the AES-GCM floor beside it.
void BM_engine_cost(benchmark::State& st) {
    const auto msg = static_cast<std::size_t>(st.range(0));
    const bool icrc = st.range(1) != 0;
    const auto workers = static_cast<std::uint32_t>(std::max<std::int64_t>(1, st.range(3)));
    const auto op = static_cast<Op>(st.range(4));
    auto src = std::make_shared<std::vector<std::uint8_t>>(std::max<std::size_t>(msg, 64), kPattern);
    auto sink = std::make_shared<Sink>(std::max<std::size_t>(msg, 64), *src);
    std::vector<std::unique_ptr<Pair>> pairs;
    for (std::uint32_t w = 0; w < workers; ++w)
        pairs.push_back(std::make_unique<Pair>(src, sink, icrc, st.range(2) != 0, w, core::shard_bits_for(workers),
                                               st.range(5) != 0));
    Pair& p = *pairs.front();
    const std::size_t payload = std::min<std::size_t>(msg, 4096);
    const std::size_t messages = msg <= 4096 ? 400'000 : 400;
    const std::size_t depth = msg <= 4096 ? 256 : 8;
    RunResult total;
    double memcpy_ns = 0;
    std::size_t runs = 0;
    for (auto _ : st) {
        const RunResult r = run(pairs, op, msg, messages, depth);
        total.cpu_ns += r.cpu_ns;
        total.data_pkts += r.data_pkts;
        total.ctrl_pkts += r.ctrl_pkts;
        memcpy_ns += memcpy_ns_per_pkt(p, payload, static_cast<std::size_t>(r.data_pkts));
        ++runs;
    }
    for (const auto& q : pairs) {
        if (std::any_of(q->sink.bytes().begin(), q->sink.bytes().begin() + static_cast<std::ptrdiff_t>(msg),
                        [](std::uint8_t b) { return b != kPattern; }))
            st.SkipWithError("destination differs from the source");
        for (const auto& e : q->e)
            for (auto w : e->stats().rx_wire_errors)
                if (w != 0) st.SkipWithError("frames rejected by the parser");
        // Each shard's QP is numbered as a worker's: its QPN names its shard.
        if (core::qpn_shard(q->qpn[0], core::shard_bits_for(workers)) != static_cast<std::uint32_t>(&q - &pairs[0]))
            st.SkipWithError("a QPN does not name its shard");
    }
    st.counters["ns_per_pkt"] = static_cast<double>(total.cpu_ns) / static_cast<double>(total.data_pkts);
    st.counters["memcpy_ns_per_pkt"] = memcpy_ns / static_cast<double>(runs);
    st.counters["ctrl_per_pkt"] = static_cast<double>(total.ctrl_pkts) / static_cast<double>(total.data_pkts);
    st.counters["data_pkts"] = static_cast<double>(total.data_pkts);
}

}  // namespace

BENCHMARK(BM_engine_cost)
    ->Args({8, 0, 0, 1, 0, 0})
    ->Args({8, 1, 0, 1, 0, 0})
    ->Args({1 << 20, 0, 0, 1, 0, 0})
    ->Args({1 << 20, 1, 0, 1, 0, 0})
    ->Args({8, 0, 1, 1, 0, 0})
    ->Args({1 << 20, 0, 1, 1, 0, 0})
    ->Args({8, 0, 0, 4, 0, 0})
    ->Args({1 << 20, 0, 0, 4, 0, 0})
    ->Args({8, 1, 0, 4, 0, 0})
    ->Args({1 << 20, 1, 0, 4, 0, 0})
    ->Args({8, 0, 0, 1, 1, 0})
    ->Args({1 << 20, 0, 0, 1, 1, 0})
    ->Args({8, 0, 0, 1, 2, 0})
    ->Args({1 << 20, 0, 0, 1, 2, 0})
    ->Args({8, 0, 0, 1, 0, 1})
    ->Args({1 << 20, 0, 0, 1, 0, 1})
    ->Args({8, 1, 0, 1, 0, 1})
    ->Args({1 << 20, 1, 0, 1, 0, 1})
    ->ArgNames({"msg_bytes", "icrc", "transport_acks", "workers", "op", "psp"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_MAIN();
