// SPDX-License-Identifier: BSD-3-Clause
// omrc-pcap CAPTURE [--json] [-q] [--eth] [--no-icrc] [--strict]: reads a
// pcap or pcapng capture of Ethernet frames (libpcap; "-" reads stdin), runs
// every frame through lib/wire's parse_frame() (plain and SRv6 frames, the
// ICRC verified) and prints one line per frame with the decoded headers or
// the name of the parse error, then a summary: frames and wire bytes per
// opcode and per parse error. --json prints one JSON object per line
// instead, the summary last as {"summary": {...}}.
//
// Sealed frames (encrypted mode) show their SPI and whether they opened:
// with --master-key-file (the cluster master keys the devices were given:
// 64 hex digits for key 0, 128 for keys 0 and 1) each is opened as its
// receiver would (connection keys from the nonces of the capture's REQs and
// REPs) and the plain frame inside is decoded; --write-opened OUT writes the
// capture again with every frame that opened in its plain form, for
// Wireshark's OpenMRC dissector (tools/wireshark/omrc.lua) to show in full.
//
// A frame whose only fault is its ICRC is shown with its headers (parsed
// again with the check off) and error=bad_icrc; it counts as a parse error.
// A trimmed data packet parses (no ICRC to check) and counts under its opcode.
// A frame the capture kept shorter than the wire carried (captured=N) is
// parsed as kept: a data packet then reads as trimmed (short_length), any
// other as truncated.
//
// Exit status: 0 when the whole capture was read, whatever its frames hold;
// 1 with --strict when some frame did not parse; 2 when the capture cannot
// be opened or read to its end, or its link type is not Ethernet; CLI11's
// own status for a bad command line.
#include <pcap/pcap.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "decrypt.hpp"
#include "frame_print.hpp"
#include "frame_record.hpp"
#include "summary.hpp"

namespace {

void put_line(const std::string& s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fputc('\n', stdout);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"omrc-pcap: decode a capture frame by frame with OpenMRC's own wire parser"};
    std::string path;
    bool json = false;
    bool quiet = false;
    bool strict = false;
    bool no_icrc = false;
    std::string key_file;
    std::string opened_path;
    omrc::pcaptool::PrintOptions print;
    app.add_option("capture", path, "pcap or pcapng file of Ethernet frames; - reads stdin")->required();
    app.add_flag("--json", json, "one JSON object per frame and line, the summary last ({\"summary\": ...})");
    app.add_flag("-q,--quiet", quiet, "print only the summary");
    app.add_flag("--eth", print.eth, "also show the Ethernet source and destination MACs (text)");
    app.add_flag("--no-icrc", no_icrc, "do not verify ICRCs (frames are reported with icrc=unchecked)");
    app.add_flag("--strict", strict, "exit 1 when any frame does not parse");
    app.add_option("--master-key-file", key_file,
                   "cluster master keys (64 hex digits: key 0; 128: keys 0 and 1): open the sealed frames");
    app.add_option("--write-opened", opened_path, "write the capture again, sealed frames that opened in plain form");
    CLI11_PARSE(app, argc, argv);

    std::array<std::optional<omrc::security::MasterKey>, 2> keys;
    if (!key_file.empty()) {
        std::string why;
        if (!omrc::pcaptool::read_master_keys(key_file, keys, why)) {
            std::fprintf(stderr, "omrc-pcap: --master-key-file %s\n", why.c_str());
            return 2;
        }
    }
    omrc::pcaptool::Decryptor decryptor(keys);
    std::vector<std::uint8_t> opened;

    char errbuf[PCAP_ERRBUF_SIZE] = {};
    // Nanosecond timestamps: libpcap scales microsecond files up, keeps pcapng's finer ones.
    pcap_t* pc = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (pc == nullptr) {
        std::fprintf(stderr, "omrc-pcap: %s\n", errbuf);
        return 2;
    }
    if (const int dlt = pcap_datalink(pc); dlt != DLT_EN10MB) {
        const char* name = pcap_datalink_val_to_name(dlt);
        std::fprintf(stderr, "omrc-pcap: %s: link type %s (%d); OpenMRC frames are Ethernet (EN10MB)\n", path.c_str(),
                     name != nullptr ? name : "unknown", dlt);
        pcap_close(pc);
        return 2;
    }

    pcap_dumper_t* dumper = nullptr;
    if (!opened_path.empty() && (dumper = pcap_dump_open(pc, opened_path.c_str())) == nullptr) {
        std::fprintf(stderr, "omrc-pcap: --write-opened %s: %s\n", opened_path.c_str(), pcap_geterr(pc));
        pcap_close(pc);
        return 2;
    }
    omrc::wire::ParseOptions parse;
    parse.verify_icrc = !no_icrc;
    omrc::pcaptool::Summary summary;
    std::uint64_t number = 0;
    std::uint64_t first_ns = 0;
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    int rc = 0;
    while ((rc = pcap_next_ex(pc, &hdr, &data)) == 1) {
        omrc::pcaptool::FrameRecord r;
        r.number = ++number;
        r.time_ns = static_cast<std::uint64_t>(hdr->ts.tv_sec) * 1'000'000'000u +
                    static_cast<std::uint64_t>(hdr->ts.tv_usec);  // ns at PCAP_TSTAMP_PRECISION_NANO
        if (number == 1) first_ns = r.time_ns;
        r.rel_time_ns = static_cast<std::int64_t>(r.time_ns - first_ns);  // wraps to negative for an older frame
        r.wire_bytes = hdr->len;
        r.captured_bytes = hdr->caplen;
        const std::span<const std::uint8_t> bytes(data, hdr->caplen);
        r.seal = decryptor.open(bytes, opened, r.spi);
        const bool was_opened = r.seal == omrc::pcaptool::SealStatus::opened;
        omrc::pcaptool::decode_frame(was_opened ? std::span<const std::uint8_t>(opened) : bytes, parse, r);
        if (r.has_headers && r.error == omrc::wire::WireError::ok) decryptor.observe(r.parsed);
        if (dumper != nullptr) {
            pcap_pkthdr out = *hdr;
            if (was_opened) out.caplen = out.len = static_cast<bpf_u_int32>(opened.size());
            pcap_dump(reinterpret_cast<u_char*>(dumper), &out, was_opened ? opened.data() : data);
        }
        summary.add(r);
        if (quiet) continue;
        put_line(json ? omrc::pcaptool::frame_json(r).dump() : omrc::pcaptool::frame_text(r, print));
    }
    const bool read_error = rc == PCAP_ERROR;
    if (read_error) std::fprintf(stderr, "omrc-pcap: %s: after frame %llu: %s\n", path.c_str(),
                                 static_cast<unsigned long long>(number), pcap_geterr(pc));
    if (dumper != nullptr) pcap_dump_close(dumper);
    pcap_close(pc);

    if (json) {
        put_line(summary.json().dump());
    } else {
        if (!quiet) std::fputc('\n', stdout);
        std::fputs(summary.text().c_str(), stdout);
    }
    std::fflush(stdout);
    if (read_error) return 2;
    return strict && summary.not_parsed() != 0 ? 1 : 0;
}
