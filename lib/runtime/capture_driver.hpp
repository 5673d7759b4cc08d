// SPDX-License-Identifier: BSD-3-Clause
// A driver that records what another driver carries: every frame accepted by
// tx_burst and every frame rx_burst hands out goes to a pcap file (libpcap,
// Ethernet link type) with the caller's now_ns as its timestamp — virtual
// time on a virtual-clock fabric, real time otherwise — and is otherwise
// passed through untouched. The device installs it for the argument
// `pcap=FILE` whatever the driver (docs/DRIVERS.md, "Capturing traffic").
// The queues of a device with several workers share the file (one record at
// a time under its mutex; each queue counts its own frames).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/driver.hpp"

struct pcap;
struct pcap_dumper;

namespace omrc::runtime {

/// The pcap file the queues of one device write to.
class CaptureFile {
public:
    /// Opens `path` for writing. Returns null and sets `err` (an errno) and
    /// `why` when the file cannot be written.
    static std::shared_ptr<CaptureFile> open(const std::string& path, int& err, std::string& why);
    ~CaptureFile();
    CaptureFile(const CaptureFile&) = delete;
    CaptureFile& operator=(const CaptureFile&) = delete;
    /// One record, timestamped `now_ns` (any thread).
    void write(std::uint64_t now_ns, std::span<const std::uint8_t> bytes);

private:
    CaptureFile(pcap* dead, pcap_dumper* dumper) : dead_(dead), dumper_(dumper) {}
    std::mutex mutex_;
    pcap* dead_;
    pcap_dumper* dumper_;  ///< guarded by mutex_
};

class CaptureDriver final : public driver::Driver {
public:
    /// Wraps every queue, all writing to one file at `path`. 0, or an errno
    /// with `why` (the queues are left as they were).
    static int wrap_all(std::vector<std::unique_ptr<driver::Driver>>& queues, const std::string& path,
                        std::string& why);
    CaptureDriver(std::unique_ptr<driver::Driver> inner, std::shared_ptr<CaptureFile> file)
        : inner_(std::move(inner)), file_(std::move(file)) {}
    ~CaptureDriver() override = default;
    CaptureDriver(const CaptureDriver&) = delete;
    CaptureDriver& operator=(const CaptureDriver&) = delete;

    [[nodiscard]] std::string name() const override { return inner_->name(); }
    [[nodiscard]] std::uint32_t planes() const override { return inner_->planes(); }
    std::size_t rx_burst(std::span<driver::RxFrame> out, std::uint64_t now_ns) override;
    std::size_t tx_burst(std::span<const wire::GatherFrame> frames, std::uint64_t now_ns) override;
    [[nodiscard]] std::uint64_t tx_release_count() const override { return inner_->tx_release_count(); }
    std::size_t poll_link_events(std::span<driver::LinkEvent> out) override { return inner_->poll_link_events(out); }
    [[nodiscard]] bool link_up(std::uint32_t plane) const override { return inner_->link_up(plane); }
    [[nodiscard]] std::uint64_t next_event_ns() const override { return inner_->next_event_ns(); }
    [[nodiscard]] driver::DriverStats stats() const override { return inner_->stats(); }
    [[nodiscard]] driver::IcrcHandling icrc() const override { return inner_->icrc(); }
    /// The inner driver's counters, then `capture.frames` and `capture.bytes`.
    void counters(std::vector<std::pair<std::string, std::uint64_t>>& out) const override;
    [[nodiscard]] bool stats_wanted() const override { return inner_->stats_wanted(); }
    void publish_stats(std::string json) override { inner_->publish_stats(std::move(json)); }
    [[nodiscard]] driver::SteeringInfo steering() const override { return inner_->steering(); }
    [[nodiscard]] int numa_node() const override { return inner_->numa_node(); }
    int register_memory(const void* addr, std::size_t len) override { return inner_->register_memory(addr, len); }
    void unregister_memory(const void* addr, std::size_t len) override { inner_->unregister_memory(addr, len); }

private:
    void write(std::uint64_t now_ns, std::span<const std::uint8_t> bytes);

    std::unique_ptr<driver::Driver> inner_;
    std::shared_ptr<CaptureFile> file_;
    std::vector<std::uint8_t> flat_;  ///< a gather list or split frame made contiguous
    std::uint64_t frames_ = 0;
    std::uint64_t bytes_ = 0;
};

}  // namespace omrc::runtime
