// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for encrypted mode (docs/PROTOCOL.md §12), in two parts.
//
// 1. The input as a frame: the PSP header codec (a header it decodes encodes
//    back to the same 16 bytes), the sealed-frame walk (locate_psp: offsets
//    inside the frame, the plain part rebuilt within bounds, the dispatch
//    peek agreeing on DestQP), never reading past the frame (ASan).
// 2. The input as an attack on a live encrypted connection: two engines
//    moved 256 KiB of WRITEs with every frame sealed; the input picks one of
//    the sealed frames A sent (all of them delivered already), flips bytes
//    and bits of it where it says, optionally cuts it and fixes the ICRC, and
//    delivers it to B. Without the key no change can make a frame that opens,
//    and an unchanged one is a replay: B must place nothing and open nothing,
//    whatever the input. A byte placed, a frame opened, a crash or a
//    sanitizer report is a finding.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "support/engine_pair.hpp"
#include "wire/bth_peek.hpp"
#include "wire/icrc.hpp"
#include "wire/psp.hpp"

using namespace omrc;

namespace {

struct World {
    test::EnginePair pair{config()};
    std::vector<std::vector<std::uint8_t>> sealed;  ///< frames A sent to B, all delivered
    std::uint32_t qb = 0;
    std::vector<std::uint8_t> src, dst;

    static core::EngineConfig config() {
        core::EngineConfig c;
        for (std::size_t i = 0; i < 32; ++i) c.security.master_keys[0][i] = static_cast<std::uint8_t>(0xA5 ^ i);
        c.security.present = 1;
        return c;
    }

    World() : src(256 << 10, 0x3C), dst(256 << 10, 0) {
        core::QpAttr a;
        a.cc.algorithm = core::CcAlgorithm::fixed;
        a.cc.fixed_window_bytes = 1u << 20;
        a.evs = 16;
        a.encrypt = true;
        const auto q = pair.connect(a);
        qb = q.second;
        pair.memory[1].add(0x77, dst.data(), dst.size());
        pair.hook = [this](int from, std::uint8_t, std::vector<std::uint8_t>& f) {
            if (from == 0 && sealed.size() < 512) sealed.push_back(f);
            return test::Fate{};
        };
        const auto wrs = test::make_write_wrs(src.data(), dst.data(), src.size(), 0x77, 32 << 10);
        if (pair.engines[0]->submit(core::CmdPostSend{q.first, wrs}, pair.now).err != 0) std::abort();
        if (!pair.run([&] { return pair.completions[0].size() == wrs.size(); }, pair.now + 1'000'000'000)) std::abort();
        if (dst != src || sealed.empty()) std::abort();
        pair.hook = nullptr;
    }
};

World& world() {
    static World w;
    return w;
}

void frame_invariants(const std::vector<std::uint8_t>& f) {
    using namespace omrc::wire;
    if (f.size() >= PspHdr::kSize) {
        PspHdr h;
        if (PspHdr::decode(f, h) == WireError::ok) {
            std::uint8_t again[PspHdr::kSize];
            if (h.encode(again) != WireError::ok || std::memcmp(again, f.data(), PspHdr::kSize) != 0) std::abort();
        }
    }
    (void)is_psp_payload(f);
    PspLayout l;
    if (locate_psp(f, l) != WireError::ok) return;
    if (!is_psp_frame(f)) std::abort();
    if (l.icrc_offset + kIcrcSize > f.size() || l.ct_offset + l.ct_len + kPspIcvSize != l.icrc_offset) std::abort();
    if (l.bth_offset + BthHdr::kSize != l.ct_offset || l.psp_offset + PspHdr::kSize + UdpHdr::kSize != l.bth_offset)
        std::abort();
    std::vector<std::uint8_t> plain(f.size());
    if (psp_write_plain_part(f, l, plain) != l.ip_offset + Ipv6Hdr::kSize + UdpHdr::kSize + BthHdr::kSize) std::abort();
    BthPeek pk;
    if (!peek_bth(f, pk) || pk.dest_qp != l.dest_qp || pk.opcode != l.opcode) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<std::uint8_t> raw(data, data + size);  // exact size: ASan sees any overread
    frame_invariants(raw);
    if (size < 2) return 0;

    World& w = world();
    std::vector<std::uint8_t> f = w.sealed[data[0] % w.sealed.size()];
    const std::uint8_t how = data[1];
    // Edits: (offset, xor) pairs from the rest of the input, anywhere in the frame.
    for (std::size_t i = 2; i + 2 < size; i += 3) {
        const std::size_t at = (std::size_t{data[i]} << 8 | data[i + 1]) % f.size();
        f[at] ^= data[i + 2];
    }
    if ((how & 1) && size > 4) f.resize(std::max<std::size_t>(1, f.size() - data[size - 1] % f.size()));
    wire::PspLayout l;
    if ((how & 2) && wire::locate_psp(f, l) == wire::WireError::ok)
        wire::store_le32(&f[l.icrc_offset], wire::icrc_compute(std::span(f).subspan(l.ip_offset, l.icrc_offset - l.ip_offset)));
    frame_invariants(f);

    core::Engine& b = *w.pair.engines[1];
    const std::uint64_t writes = w.pair.memory[1].writes;
    const std::uint64_t opened = b.find_qp(w.qb)->stats.psp_opened;
    const std::uint64_t received = b.find_qp(w.qb)->stats.data_pkts_received;
    b.on_rx(f, static_cast<std::uint8_t>(how >> 4) % 8, w.pair.now);
    if (w.pair.memory[1].writes != writes || b.find_qp(w.qb)->stats.psp_opened != opened ||
        b.find_qp(w.qb)->stats.data_pkts_received != received)
        std::abort();  // a frame opened without the key, or a replay accepted
    if (w.dst != w.src) std::abort();
    return 0;
}
