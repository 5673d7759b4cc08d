// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the frame parser and the uSID codec. Any frame the
// parser accepts must re-encode to the same bytes (for untrimmed frames) and
// the uN operation must never fail on an address it accepted.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wire/frame.hpp"
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
        s.reth = p.reth;
        s.imm = p.imm;
        s.aeth = p.aeth;
        s.seth = p.seth;
        s.cc = p.cc;
        s.neth = p.neth;
        s.peth = p.peth;
        s.erth = p.erth;
        std::vector<std::uint8_t> out(size + 64);
        std::size_t len = 0;
        if (build_frame(out, s, p.payload, len) != WireError::ok) continue;
        ParsedFrame q;
        if (parse_frame(std::span(out).first(len), {}, q) != WireError::ok) std::abort();
        if (q.bth.opcode != p.bth.opcode || q.bth.psn != p.bth.psn || q.bth.dest_qp != p.bth.dest_qp || q.ev != p.ev || q.payload.size() != p.payload.size()) std::abort();
        if (!std::equal(q.payload.begin(), q.payload.end(), p.payload.begin())) std::abort();
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
