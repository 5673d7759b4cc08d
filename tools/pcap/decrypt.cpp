// SPDX-License-Identifier: BSD-3-Clause
#include "decrypt.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>

#include "wire/bytes.hpp"
#include "wire/cm_msg.hpp"
#include "wire/icrc.hpp"
#include "wire/psp.hpp"

namespace omrc::pcaptool {

const char* to_string(SealStatus s) noexcept {
    switch (s) {
        case SealStatus::plain: return "plain";
        case SealStatus::opened: return "opened";
        case SealStatus::no_key: return "no_key";
        case SealStatus::bad_tag: return "bad_tag";
        case SealStatus::malformed: return "malformed";
    }
    return "plain";
}

Decryptor::Decryptor(std::array<std::optional<security::MasterKey>, 2> cluster) : cluster_(std::move(cluster)) {}

void Decryptor::observe(const wire::ParsedFrame& p) {
    if (p.bth.opcode != wire::Opcode::cm) return;
    wire::CmMessage m;
    if (wire::CmMessage::decode(p.payload, m) != wire::WireError::ok) return;
    if ((m.type != wire::CmType::req && m.type != wire::CmType::rep) || m.encryption == 0) return;
    auto& known = nonces_[{p.ip.src, m.qpn}];
    if (std::find(known.begin(), known.end(), m.key_nonce) == known.end()) known.push_back(m.key_nonce);
}

std::vector<Decryptor::Sa> Decryptor::candidates(const wire::Ipv6Addr& receiver, std::uint32_t spi,
                                                 wire::PspVersion version) {
    std::vector<Sa> out;
    security::MasterKey rx{}, conn{};
    if (!security::receiver_master_key(*cluster_[wire::spi_key_select(spi)], std::span<const std::uint8_t, 16>(receiver),
                                       rx))
        return out;
    if (auto n = nonces_.find({receiver, wire::spi_qpn(spi)}); n != nonces_.end())
        for (const auto& nonce : n->second) {
            Sa sa;
            if (security::connection_master_key(rx, nonce, conn) && security::psp_key_schedule(conn, spi, version, sa.gcm))
                out.push_back(std::move(sa));
        }
    Sa plain_sa;  // a QP set up by hand: the receiver's master key itself
    if (security::psp_key_schedule(rx, spi, version, plain_sa.gcm)) out.push_back(std::move(plain_sa));
    security::wipe(rx.data(), rx.size());
    security::wipe(conn.data(), conn.size());
    return out;
}

SealStatus Decryptor::open(std::span<const std::uint8_t> frame, std::vector<std::uint8_t>& plain, std::uint32_t& spi) {
    wire::PspLayout l;
    if (wire::locate_psp(frame, l) != wire::WireError::ok) return l.sealed ? SealStatus::malformed : SealStatus::plain;
    spi = l.psp.spi;
    const std::uint32_t select = wire::spi_key_select(spi);
    if (!cluster_[select]) return SealStatus::no_key;
    wire::Ipv6Addr receiver{};
    std::memcpy(receiver.data(), frame.data() + l.ip_offset + 24, 16);  // the IPv6 destination
    plain.assign(frame.size(), 0);
    const std::size_t n = wire::psp_write_plain_part(frame, l, plain);
    if (n == 0) return SealStatus::malformed;
    const std::span<const std::uint8_t> ct = l.cipher(frame);
    auto open_with = [&](Sa& sa) { return sa.gcm.open(l.nonce(frame), l.aad(frame), {&ct, 1}, plain.data() + n, l.icv(frame)); };
    std::vector<Sa>& known = sas_[{receiver, spi}];
    bool ok = std::any_of(known.begin(), known.end(), open_with);
    if (!ok) {
        // A key not seen yet under this SPI: the one that opens the frame is kept.
        for (Sa& sa : candidates(receiver, spi, l.psp.version))
            if (open_with(sa)) {
                known.push_back(std::move(sa));
                ok = true;
                break;
            }
    }
    if (!ok) return SealStatus::bad_tag;
    const std::size_t end = n + l.ct_len;
    plain.resize(end + wire::kIcrcSize);
    wire::store_le32(plain.data() + end, wire::icrc_compute(std::span(plain).subspan(l.ip_offset, end - l.ip_offset)));
    return SealStatus::opened;
}

bool read_master_keys(const std::string& path, std::array<std::optional<security::MasterKey>, 2>& out,
                      std::string& why) {
    std::ifstream in(path);
    if (!in) {
        why = path + ": cannot be read";
        return false;
    }
    std::string hex, word;
    while (in >> word) hex += word;
    if (hex.size() != 64 && hex.size() != 128) {
        why = path + ": not 64 hex digits (key 0) or 128 (keys 0 and 1)";
        return false;
    }
    for (std::size_t k = 0; k * 64 < hex.size(); ++k) {
        security::MasterKey key{};
        if (!security::parse_master_key(std::string_view(hex).substr(k * 64, 64), key)) {
            why = path + ": not hex digits";
            return false;
        }
        out[k] = key;
    }
    return true;
}

}  // namespace omrc::pcaptool
