// SPDX-License-Identifier: BSD-3-Clause
#include "runtime/capture_driver.hpp"

#include <pcap/pcap.h>

#include <cerrno>
#include <cstring>

namespace omrc::runtime {

namespace {
constexpr int kSnapLen = 65535;
}

std::shared_ptr<CaptureFile> CaptureFile::open(const std::string& path, int& err, std::string& why) {
    pcap_t* dead = pcap_open_dead(DLT_EN10MB, kSnapLen);
    if (dead == nullptr) {
        err = ENOMEM;
        why = "pcap_open_dead failed";
        return nullptr;
    }
    errno = 0;
    pcap_dumper_t* dumper = pcap_dump_open(dead, path.c_str());
    if (dumper == nullptr) {
        err = errno != 0 ? errno : EIO;
        why = pcap_geterr(dead);
        pcap_close(dead);
        return nullptr;
    }
    err = 0;
    return std::shared_ptr<CaptureFile>(new CaptureFile(dead, dumper));
}

CaptureFile::~CaptureFile() {
    pcap_dump_close(dumper_);
    pcap_close(dead_);
}

void CaptureFile::write(std::uint64_t now_ns, std::span<const std::uint8_t> bytes) {
    pcap_pkthdr h{};
    h.ts.tv_sec = static_cast<time_t>(now_ns / 1'000'000'000);
    h.ts.tv_usec = static_cast<suseconds_t>(now_ns % 1'000'000'000 / 1000);
    h.caplen = static_cast<bpf_u_int32>(std::min<std::size_t>(bytes.size(), kSnapLen));
    h.len = static_cast<bpf_u_int32>(bytes.size());
    std::lock_guard lock(mutex_);
    pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, bytes.data());
}

int CaptureDriver::wrap_all(std::vector<std::unique_ptr<driver::Driver>>& queues, const std::string& path,
                            std::string& why) {
    int err = 0;
    std::shared_ptr<CaptureFile> file = CaptureFile::open(path, err, why);
    if (file == nullptr) return err;
    for (auto& q : queues) q = std::make_unique<CaptureDriver>(std::move(q), file);
    return 0;
}

void CaptureDriver::write(std::uint64_t now_ns, std::span<const std::uint8_t> bytes) {
    file_->write(now_ns, bytes);
    ++frames_;
    bytes_ += bytes.size();
}

std::size_t CaptureDriver::tx_burst(std::span<const wire::GatherFrame> frames, std::uint64_t now_ns) {
    // The accepted prefix only, while its payload is still readable.
    const std::size_t n = inner_->tx_burst(frames, now_ns);
    for (std::size_t i = 0; i < n && i < frames.size(); ++i) {
        const wire::GatherFrame& g = frames[i];
        flat_.resize(g.size());
        (void)g.flatten(flat_);
        write(now_ns, flat_);
    }
    return n;
}

std::size_t CaptureDriver::rx_burst(std::span<driver::RxFrame> out, std::uint64_t now_ns) {
    const std::size_t n = inner_->rx_burst(out, now_ns);
    for (std::size_t i = 0; i < n; ++i) {
        const driver::RxFrame& f = out[i];
        if (f.payload == nullptr) {
            write(now_ns, {f.data, f.len});
            continue;
        }
        // Header split: headers, the payload piece, then pad and ICRC.
        const std::size_t split = std::min<std::size_t>(f.split, f.len);
        flat_.resize(f.len + f.payload_len);
        std::memcpy(flat_.data(), f.data, split);
        std::memcpy(flat_.data() + split, f.payload, f.payload_len);
        std::memcpy(flat_.data() + split + f.payload_len, f.data + split, f.len - split);
        write(now_ns, flat_);
    }
    return n;
}

void CaptureDriver::counters(std::vector<std::pair<std::string, std::uint64_t>>& out) const {
    inner_->counters(out);
    out.emplace_back("capture.frames", frames_);
    out.emplace_back("capture.bytes", bytes_);
}

}  // namespace omrc::runtime
