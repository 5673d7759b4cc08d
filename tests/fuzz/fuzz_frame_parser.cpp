// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the frame parser and the uSID codec. Any frame the
// parser accepts must re-encode to the same bytes (for untrimmed frames) and
// the uN operation must never fail on an address it accepted. The same bytes
// are also cut into a header-split RxFrame (headers, payload elsewhere, pad
// and ICRC) at an offset the input chooses: accepted only when the cut is
// where the payload starts, and then read exactly as the whole frame. The
// dispatch peek (wire/bth_peek.hpp) must agree with the parser.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wire/bth_peek.hpp"
#include "wire/frame.hpp"
#include "wire/frame_view.hpp"
#include "wire/usid.hpp"

using namespace omrc::wire;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // Exact-size heap copy: ASan flags any read past the frame.
    std::vector<std::uint8_t> frame(data, data + size);
    ParsedFrame p;
    for (bool verify : {true, false}) {
        const WireError e = parse_frame(frame, {.verify_icrc = verify}, p);
        if (e != WireError::ok || p.trim != TrimKind::none) continue;
        // Rebuild from the parsed fields: must reproduce the covered bytes.
        FrameSpec s;
        s.mode = p.mode;
        s.eth = p.eth;
        s.outer = p.outer;
        s.has_srh = p.has_srh;
        s.srh = p.srh;
        s.ip = p.ip;
        s.ev = p.ev;
        s.bth = p.bth;
        s.meth = p.meth;
        s.tseth = p.tseth;
        s.crth = p.crth;
        s.reth = p.reth;
        s.imm = p.imm;
        s.aeth = p.aeth;
        s.seth = p.seth;
        s.cc = p.cc;
        s.cgth = p.cgth;
        s.neth = p.neth;
        s.peth = p.peth;
        s.erth = p.erth;
        s.eeth = p.eeth;
        s.deth = p.deth;
        std::vector<std::uint8_t> out(size + 64);
        std::size_t len = 0;
        if (build_frame(out, s, p.payload, len) != WireError::ok) continue;
        ParsedFrame q;
        if (parse_frame(std::span(out).first(len), {}, q) != WireError::ok) std::abort();
        if (q.bth.opcode != p.bth.opcode || q.bth.psn != p.bth.psn || q.bth.dest_qp != p.bth.dest_qp || q.ev != p.ev || q.payload.size() != p.payload.size()) std::abort();
        if (!std::equal(q.payload.begin(), q.payload.end(), p.payload.begin())) std::abort();
        // OpenMRC's credit headers (CRTH, CGTH) come back as they were.
        if (q.has_crth != p.has_crth || q.has_cgth != p.has_cgth || !(q.crth == p.crth) || q.cgth.grant != p.cgth.grant ||
            q.cgth.valid != p.cgth.valid)
            std::abort();
    }
    {
        // The dispatch peek reads any bytes without reading past them, and
        // agrees with the parser on every frame the parser accepts.
        BthPeek b;
        const bool peeked = peek_bth(frame, b);
        FrameView v;
        if (parse_frame_view(frame, {.verify_icrc = false}, v) == WireError::ok &&
            (!peeked || b.dest_qp != v.bth.dest_qp || b.psn != v.bth.psn || b.opcode != static_cast<std::uint8_t>(v.bth.opcode)))
            std::abort();
    }
    if (size >= 4) {
        // Header split at the offset named by the first two bytes, payload
        // up to the offset named by the next two (exact-size buffers).
        const std::size_t split = (std::size_t{data[0]} << 8 | data[1]) % (size + 1);
        const std::size_t pay = std::min<std::size_t>((std::size_t{data[2]} << 8 | data[3]) % (size + 1), size - split);
        std::vector<std::uint8_t> head(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(split));
        head.insert(head.end(), frame.begin() + static_cast<std::ptrdiff_t>(split + pay), frame.end());
        std::vector<std::uint8_t> payload(frame.begin() + static_cast<std::ptrdiff_t>(split),
                                          frame.begin() + static_cast<std::ptrdiff_t>(split + pay));
        const RxFrame rx{head.data(), static_cast<std::uint32_t>(head.size()), 0,
                         payload.empty() ? reinterpret_cast<const std::uint8_t*>(&size) : payload.data(),
                         static_cast<std::uint32_t>(payload.size()), static_cast<std::uint16_t>(split)};
        FrameView v, whole;
        if (split <= 0xFFFF && parse_frame_view(rx, {}, v) == WireError::ok) {
            // Accepted split: the contiguous frame parses the same.
            if (parse_frame_view(frame, {}, whole) != WireError::ok) std::abort();
            if (v.payload.size() != whole.payload.size() || v.bth.psn != whole.bth.psn ||
                v.bth.opcode != whole.bth.opcode || v.ev != whole.ev)
                std::abort();
            if (!std::equal(v.payload.begin(), v.payload.end(), whole.payload.begin())) std::abort();
        }
    }
    if (size >= 16) {
        Ipv6Addr da;
        std::memcpy(da.data(), data, 16);
        UsidContainer c;
        (void)usid_container_parse(da, c);
        UnAction a;
        (void)usid_un_process(da, nullptr, c.block, c.count ? c.usids[0] : 1, a);
    }
    return 0;
}
