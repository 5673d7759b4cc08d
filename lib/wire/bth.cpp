// SPDX-License-Identifier: BSD-3-Clause
#include "wire/bth.hpp"

namespace omrc::wire {

const char* opcode_name(Opcode op) noexcept {
    switch (op) {
        case Opcode::send_first: return "SEND_FIRST";
        case Opcode::send_middle: return "SEND_MIDDLE";
        case Opcode::send_last: return "SEND_LAST";
        case Opcode::send_last_imm: return "SEND_LAST_WITH_IMM";
        case Opcode::send_only: return "SEND_ONLY";
        case Opcode::send_only_imm: return "SEND_ONLY_WITH_IMM";
        case Opcode::write_first: return "WRITE_FIRST";
        case Opcode::write_middle: return "WRITE_MIDDLE";
        case Opcode::write_last: return "WRITE_LAST";
        case Opcode::write_last_imm: return "WRITE_LAST_WITH_IMM";
        case Opcode::write_only: return "WRITE_ONLY";
        case Opcode::write_only_imm: return "WRITE_ONLY_WITH_IMM";
        case Opcode::read_req: return "READ_REQUEST";
        case Opcode::read_resp_first: return "READ_RESPONSE_FIRST";
        case Opcode::read_resp_middle: return "READ_RESPONSE_MIDDLE";
        case Opcode::read_resp_last: return "READ_RESPONSE_LAST";
        case Opcode::read_resp_only: return "READ_RESPONSE_ONLY";
        case Opcode::ack: return "ACK";
        case Opcode::ep_request: return "EP_REQUEST";
        case Opcode::cm: return "CM";
        case Opcode::ep_response: return "EP_RESPONSE";
        case Opcode::sack: return "SACK";
        case Opcode::nack: return "NACK";
        case Opcode::probe: return "PROBE";
    }
    return "UNKNOWN";
}

}  // namespace omrc::wire
