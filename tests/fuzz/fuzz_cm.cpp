// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the connection-manager message codec
// (wire/cm_msg.hpp, docs/PROTOCOL.md §13). The input is read as one message
// (an exact-size heap copy, so ASan flags any read past it); a message the
// decoder accepts must encode back to the bytes it came from (less the
// frame's pad) and decode again to the same fields. The same bytes are also
// read as a whole frame, which must carry them to the decoder unchanged.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wire/cm_msg.hpp"
#include "wire/frame.hpp"

using namespace omrc::wire;

namespace {

bool same(const CmMessage& a, const CmMessage& b) {
    return a.type == b.type && a.src_comm_id == b.src_comm_id && a.dst_comm_id == b.dst_comm_id &&
           a.attempt == b.attempt && a.service_id == b.service_id && a.qpn == b.qpn && a.psn == b.psn &&
           a.mtu == b.mtu && a.encryption == b.encryption && a.key_select == b.key_select && a.host == b.host &&
           a.key_nonce == b.key_nonce && a.cookie == b.cookie && a.key_check == b.key_check && a.planes == b.planes &&
           a.macs == b.macs && a.reason == b.reason && a.private_len == b.private_len &&
           a.private_data == b.private_data;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::uint8_t> in(data, data + size);
    CmMessage m;
    if (CmMessage::decode(in, m) == WireError::ok) {
        std::vector<std::uint8_t> out(kCmMaxMessage);
        std::size_t len = 0;
        if (m.encode(out, len) != WireError::ok) std::abort();
        if (len > size || size - len > 3 || m.wire_size() != len) std::abort();
        // Reserved bytes are sent as zero, so only a message with zeros there
        // comes back byte for byte; the fields always do.
        CmMessage again;
        if (CmMessage::decode(std::span(out).first(len), again) != WireError::ok || !same(m, again)) std::abort();
    }
    // The input as the payload of a CM frame.
    FrameSpec s;
    s.bth.opcode = Opcode::cm;
    s.bth.dest_qp = kCmQpn;
    std::vector<std::uint8_t> frame(size + 128);
    std::size_t flen = 0;
    if (build_frame(frame, s, in, flen) != WireError::ok) return 0;
    ParsedFrame p;
    if (parse_frame(std::span(frame).first(flen), {}, p) != WireError::ok) std::abort();
    if (p.bth.opcode != Opcode::cm || p.deth.qkey != kCmQkey || p.payload.size() != size ||
        !std::equal(p.payload.begin(), p.payload.end(), in.begin()))
        std::abort();
    return 0;
}
