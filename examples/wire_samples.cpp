// SPDX-License-Identifier: BSD-3-Clause
// Writes one frame of every OpenMRC opcode, in plain and SRv6 mode (and one
// SRv6 frame with an SRH), to a pcap file, and prints what it wrote.
//
//   wire_samples OUT.pcap
//   tshark -X lua_script:tools/wireshark/omrc.lua -r OUT.pcap -V
#include <pcap/pcap.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>

#include "wire/frame.hpp"
#include "wire/sample_frames.hpp"

int main(int argc, char** argv) {
    CLI::App app{"Write one OpenMRC frame of each opcode, in both frame modes, to a pcap file"};
    std::string out_path;
    std::string corpus_dir;
    bool quiet = false;
    app.add_option("output", out_path, "pcap file to write")->required();
    app.add_option("--corpus", corpus_dir, "also write each frame as one raw file into this existing directory (fuzz seeds)")
        ->check(CLI::ExistingDirectory);
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
    const auto frames = omrc::wire::make_sample_frames();
    int index = 0;
    for (const auto& f : frames) {
        // Self-check: every frame we emit must parse back with a valid ICRC.
        omrc::wire::ParsedFrame parsed;
        const auto err = omrc::wire::parse_frame(f.bytes, {}, parsed);
        if (err != omrc::wire::WireError::ok) {
            std::fprintf(stderr, "wire_samples: frame %s does not parse: %s\n", f.name.c_str(),
                         std::string(omrc::wire::to_string(err)).c_str());
            return 1;
        }
        if (!corpus_dir.empty()) {
            std::string name = f.name;
            for (char& c : name)
                if (c == '/' || c == '+') c = '_';
            std::ofstream(corpus_dir + "/" + name + ".bin", std::ios::binary)
                .write(reinterpret_cast<const char*>(f.bytes.data()), static_cast<std::streamsize>(f.bytes.size()));
        }
        pcap_pkthdr hdr{};
        hdr.ts.tv_sec = 1767225600 + index;  // fixed timestamps: the file is reproducible
        hdr.caplen = hdr.len = static_cast<bpf_u_int32>(f.bytes.size());
        pcap_dump(reinterpret_cast<u_char*>(dumper), &hdr, f.bytes.data());
        if (!quiet)
            std::printf("%2d %-28s %4zu bytes  qpn 0x%06x psn 0x%06x ev 0x%08x icrc 0x%08x\n", index + 1,
                        f.name.c_str(), f.bytes.size(), f.spec.bth.dest_qp, f.spec.bth.psn, f.spec.ev, parsed.icrc);
        ++index;
    }
    pcap_dump_close(dumper);
    pcap_close(dead);
    std::printf("wrote %d frames to %s\n", index, out_path.c_str());
    return 0;
}
