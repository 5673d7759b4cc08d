// SPDX-License-Identifier: BSD-3-Clause
// Writes one frame of every OpenMRC opcode, in plain and SRv6 mode (and one
// SRv6 frame with an SRH), to a pcap file, and prints what it wrote. With
// --psp it also writes sealed frames (encrypted mode, docs/PROTOCOL.md §12):
// copies of some of those frames sealed in PSP transport mode under a fixed
// test master key, exactly as Engine::seal_frame seals them.
//
//   wire_samples OUT.pcap
//   wire_samples --psp OUT.pcap
//   tshark -X lua_script:tools/wireshark/omrc.lua -r OUT.pcap -V
#include <pcap/pcap.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <vector>

#include "security/aes_gcm.hpp"
#include "security/psp_keys.hpp"
#include "wire/bytes.hpp"
#include "wire/frame.hpp"
#include "wire/icrc.hpp"
#include "wire/psp.hpp"
#include "wire/sample_frames.hpp"

namespace {

using namespace omrc;

/// A sealed copy of a sample frame: what --psp adds, and the values a
/// decoder is checked against (tests/tshark/tshark_decode.sh).
struct SealSpec {
    std::size_t sample;          ///< index into make_sample_frames()
    std::uint32_t key_select;    ///< SPI bit 31: which of the receiver's two master keys
    std::uint32_t epoch;         ///< SPI bits 30..24
    std::uint64_t iv;            ///< the transmit counter (never 0)
    wire::PspVersion version;
};

// Sealed copies of samples 4 (plain/WRITE_ONLY), 9 (plain/SACK: a control
// frame; every frame of an encrypted QP is sealed) and 17
// (srv6/WRITE_ONLY_WITH_IMM: the outer IPv6 header comes before the inner
// one, as in a plain frame; its immediate data is encrypted with the rest).
// No srv6+srh sample: a path that needs an SRH leaves no room for the sealed
// headers in a GatherFrame, such a QP is refused (docs/PROTOCOL.md §12), so
// the engine never sends one. The IV of the last one needs all 64 bits: a
// decoder that keeps it in a double shows it wrong. The SPI's QPN is the
// receiver's, that is the BTH DestQP (psp_spi()).
constexpr std::array<SealSpec, 3> kSealed{{
    {4, 0, 3, 1, wire::PspVersion::aes_gcm_256},
    {9, 1, 3, 2, wire::PspVersion::aes_gcm_128},
    {17, 0, 127, 0x0123456789ABCDEFull, wire::PspVersion::aes_gcm_256},
}};

/// The receiver's two master keys (test values, never a real key): 0x00..0x1F and 0x20..0x3F.
security::MasterKey test_master_key(std::uint32_t key_select) {
    security::MasterKey k{};
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(key_select * k.size() + i);
    return k;
}

/// Seals the plain frame `f` (parsed as `p`) as Engine::seal_frame does: the
/// clear part (lengths grown, outer UDP to port 1000, PSP header, the plain
/// UDP header and BTH), then AES-GCM over extension headers + payload + pad
/// with nonce = SPI || IV as the header carries them and AAD = PSP header +
/// inner UDP + BTH, the 16-byte ICV, and the ICRC over the sealed IPv6
/// packet. Then checks the result the way a receiver would (locate_psp,
/// icrc_verify, AesGcm::open back to the plain bytes). Empty on any failure.
std::vector<std::uint8_t> seal(const wire::SampleFrame& f, const wire::ParsedFrame& p, const SealSpec& s,
                               std::uint32_t& spi_out) {
    const std::size_t ip = p.ip_offset;
    const std::size_t bth_end = ip + wire::Ipv6Hdr::kSize + wire::UdpHdr::kSize + wire::BthHdr::kSize;
    const std::size_t clear_len = ip + wire::kPspClearBytesAfterIp;
    if (f.bytes.size() < bth_end + wire::kIcrcSize) return {};
    const std::span<const std::uint8_t> plain_ct(f.bytes.data() + bth_end, f.bytes.size() - wire::kIcrcSize - bth_end);

    const wire::PspHdr h{.version = s.version, .spi = wire::psp_spi(s.key_select, s.epoch, f.spec.bth.dest_qp), .iv = s.iv};
    std::vector<std::uint8_t> out(f.bytes.size() + wire::kPspOverhead);
    if (wire::psp_write_clear_part(f.bytes, ip, f.spec.mode, h, out) != clear_len) return {};

    security::AesGcm gcm;
    if (!security::psp_key_schedule(test_master_key(s.key_select), h.spi, s.version, gcm)) return {};
    const std::size_t psp_off = ip + wire::Ipv6Hdr::kSize + wire::UdpHdr::kSize;
    const std::span<const std::uint8_t, security::kGcmNonceBytes> nonce(out.data() + psp_off + 4, 12);
    const std::span<const std::uint8_t> aad(out.data() + psp_off, clear_len - psp_off);
    const std::span<std::uint8_t, security::kGcmTagBytes> icv(out.data() + clear_len + plain_ct.size(), 16);
    if (!gcm.seal(nonce, aad, {&plain_ct, 1}, out.data() + clear_len, icv)) return {};
    const std::size_t icrc_off = out.size() - wire::kIcrcSize;
    wire::store_le32(&out[icrc_off], wire::icrc_compute(std::span(out).subspan(ip, icrc_off - ip)));

    // Self-check, as for the plain frames: it must read back as sealed, with
    // a good ICRC, and open to the bytes it was made from.
    wire::PspLayout l;
    if (wire::locate_psp(out, l) != wire::WireError::ok || l.ct_len != plain_ct.size() || l.psp != h ||
        !wire::icrc_verify(std::span(out).subspan(l.ip_offset)))
        return {};
    std::vector<std::uint8_t> opened(l.ct_len);
    const std::span<const std::uint8_t> ct = l.cipher(out);
    if (!gcm.open(l.nonce(out), l.aad(out), {&ct, 1}, opened.data(), l.icv(out)) ||
        !std::equal(opened.begin(), opened.end(), plain_ct.begin()))
        return {};
    spi_out = h.spi;
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Write one OpenMRC frame of each opcode, in both frame modes, to a pcap file"};
    std::string out_path;
    std::string corpus_dir;
    bool quiet = false;
    bool psp = false;
    app.add_option("output", out_path, "pcap file to write")->required();
    app.add_option("--corpus", corpus_dir, "also write each frame as one raw file into this existing directory (fuzz seeds)")
        ->check(CLI::ExistingDirectory);
    app.add_flag("--psp", psp, "also write sealed (PSP, encrypted mode) copies of three frames, after the plain ones");
    app.add_flag("-q,--quiet", quiet, "do not list the frames");
    CLI11_PARSE(app, argc, argv);

    pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
    if (dead == nullptr) {
        std::fprintf(stderr, "wire_samples: pcap_open_dead failed\n");
        return 1;
    }
    pcap_dumper_t* dumper = pcap_dump_open(dead, out_path.c_str());
    if (dumper == nullptr) {
        std::fprintf(stderr, "wire_samples: cannot write %s: %s\n", out_path.c_str(), pcap_geterr(dead));
        pcap_close(dead);
        return 1;
    }
    int index = 0;
    auto emit = [&](const std::string& name, const std::vector<std::uint8_t>& bytes) {
        if (!corpus_dir.empty()) {
            std::string file = name;
            for (char& c : file)
                if (c == '/' || c == '+') c = '_';
            std::ofstream(corpus_dir + "/" + file + ".bin", std::ios::binary)
                .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        }
        pcap_pkthdr hdr{};
        hdr.ts.tv_sec = 1767225600 + index;  // fixed timestamps: the file is reproducible
        hdr.caplen = hdr.len = static_cast<bpf_u_int32>(bytes.size());
        pcap_dump(reinterpret_cast<u_char*>(dumper), &hdr, bytes.data());
        ++index;
    };
    const auto frames = omrc::wire::make_sample_frames();
    std::vector<omrc::wire::ParsedFrame> parsed(frames.size());
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const auto& f = frames[i];
        // Self-check: every frame we emit must parse back with a valid ICRC.
        const auto err = omrc::wire::parse_frame(f.bytes, {}, parsed[i]);
        if (err != omrc::wire::WireError::ok) {
            std::fprintf(stderr, "wire_samples: frame %s does not parse: %s\n", f.name.c_str(),
                         std::string(omrc::wire::to_string(err)).c_str());
            return 1;
        }
        if (!quiet)
            std::printf("%2d %-28s %4zu bytes  qpn 0x%06x psn 0x%06x ev 0x%08x icrc 0x%08x\n", index + 1,
                        f.name.c_str(), f.bytes.size(), f.spec.bth.dest_qp, f.spec.bth.psn, f.spec.ev, parsed[i].icrc);
        emit(f.name, f.bytes);
    }
    for (const SealSpec& s : psp ? std::span<const SealSpec>(kSealed) : std::span<const SealSpec>()) {
        const auto& f = frames.at(s.sample);
        std::uint32_t spi = 0;
        const auto sealed = seal(f, parsed[s.sample], s, spi);
        if (sealed.empty()) {
            std::fprintf(stderr, "wire_samples: sealing frame %s failed its self-check\n", f.name.c_str());
            return 1;
        }
        const std::string name = "psp/" + f.name;
        // The same columns as a plain frame (the ICRC is the sealed frame's), then the SA.
        if (!quiet)
            std::printf("%2d %-28s %4zu bytes  qpn 0x%06x psn 0x%06x ev 0x%08x icrc 0x%08x  spi 0x%08x iv %llu aes-gcm-%d\n",
                        index + 1, name.c_str(), sealed.size(), f.spec.bth.dest_qp, f.spec.bth.psn, f.spec.ev,
                        omrc::wire::load_le32(&sealed[sealed.size() - omrc::wire::kIcrcSize]), spi,
                        static_cast<unsigned long long>(s.iv), s.version == omrc::wire::PspVersion::aes_gcm_128 ? 128 : 256);
        emit(name, sealed);
    }
    pcap_dump_close(dumper);
    pcap_close(dead);
    std::printf("wrote %d frames to %s\n", index, out_path.c_str());
    return 0;
}
