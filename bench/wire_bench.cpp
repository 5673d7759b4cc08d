// SPDX-License-Identifier: BSD-3-Clause
// Per-packet cost of the wire codec: building and parsing (with ICRC) a
// 4096-byte-payload SRv6 data frame, beside a memcpy of the same frame in the
// same run so the figures read as ratios (docs/PERFORMANCE.md).
//
//   build/release/bench/wire_bench --benchmark_format=json
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "wire/frame.hpp"
#include "wire/sample_frames.hpp"

namespace {

using namespace omrc::wire;

FrameSpec data_spec() {
    for (const auto& s : make_sample_frames())
        if (s.name == "srv6/WRITE_MIDDLE") return s.spec;
    return {};
}

std::vector<std::uint8_t> make_frame(std::size_t payload_len) {
    const FrameSpec spec = data_spec();
    std::vector<std::uint8_t> payload(payload_len, 0xA5), out(payload_len + 256);
    std::size_t len = 0;
    if (build_frame(out, spec, payload, len) != WireError::ok) std::abort();
    out.resize(len);
    return out;
}

void BM_memcpy_frame(benchmark::State& st) {
    const auto frame = make_frame(static_cast<std::size_t>(st.range(0)));
    std::vector<std::uint8_t> dst(frame.size());
    for (auto _ : st) {
        std::memcpy(dst.data(), frame.data(), frame.size());
        benchmark::DoNotOptimize(dst.data());
        benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * frame.size()));
}

void BM_parse_frame_icrc(benchmark::State& st) {
    const auto frame = make_frame(static_cast<std::size_t>(st.range(0)));
    ParsedFrame p;
    for (auto _ : st) {
        if (parse_frame(frame, {}, p) != WireError::ok) st.SkipWithError("parse failed");
        benchmark::DoNotOptimize(p.bth.psn);
    }
    st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * frame.size()));
    st.counters["pkts_per_s"] = benchmark::Counter(static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
}

void BM_parse_frame_no_icrc(benchmark::State& st) {
    const auto frame = make_frame(static_cast<std::size_t>(st.range(0)));
    ParsedFrame p;
    const ParseOptions opts{.verify_icrc = false};
    for (auto _ : st) {
        if (parse_frame(frame, opts, p) != WireError::ok) st.SkipWithError("parse failed");
        benchmark::DoNotOptimize(p.bth.psn);
    }
    st.counters["pkts_per_s"] = benchmark::Counter(static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
}

void BM_build_headers(benchmark::State& st) {
    const FrameSpec spec = data_spec();
    std::vector<std::uint8_t> out(256);
    std::size_t len = 0;
    for (auto _ : st) {
        if (build_headers(out, spec, 4096, len) != WireError::ok) st.SkipWithError("build failed");
        benchmark::DoNotOptimize(out.data());
    }
    st.counters["pkts_per_s"] = benchmark::Counter(static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_memcpy_frame)->Arg(64)->Arg(4096);
BENCHMARK(BM_parse_frame_icrc)->Arg(64)->Arg(4096);
BENCHMARK(BM_parse_frame_no_icrc)->Arg(4096);
BENCHMARK(BM_build_headers);
BENCHMARK_MAIN();
