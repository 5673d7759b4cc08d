// SPDX-License-Identifier: BSD-3-Clause
// The path-event log of the runtime: one structured info line per engine
// path event on the `omrc` logger, rate-limited in the caller's time, with
// every event counted by kind.
#include <catch2/catch.hpp>

#include <memory>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <string>
#include <vector>

#include "log/log.hpp"
#include "runtime/path_event_log.hpp"
#include "support/engine_pair.hpp"

using namespace omrc;

namespace {

/// Adds a ring-buffer sink to the `omrc` logger at info level for its lifetime.
class CapturedLog {
public:
    CapturedLog() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(4096)), level_(log::logger().level()) {
        sink_->set_pattern("%v");
        log::logger().sinks().push_back(sink_);
        log::logger().set_level(spdlog::level::info);
    }
    ~CapturedLog() {
        auto& sinks = log::logger().sinks();
        std::erase(sinks, sink_);
        log::logger().set_level(level_);
    }
    [[nodiscard]] std::vector<std::string> lines() const { return sink_->last_formatted(); }

private:
    std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
    spdlog::level::level_enum level_;
};

/// One engine (of a two-plane pair) whose port changes make the events.
struct PortFlapper {
    test::EnginePair pair{[] {
        core::EngineConfig cfg;
        cfg.planes = 2;
        return cfg;
    }()};
    core::Engine& engine = *pair.engines[0];
    void port(std::uint32_t plane, bool up, core::TimeNs now) {
        REQUIRE(engine.submit(core::CmdLinkChange{plane, up}, now).err == 0);
    }
};

std::size_t count_with(const std::vector<std::string>& lines, std::string_view what) {
    std::size_t n = 0;
    for (const std::string& l : lines) n += l.find(what) != std::string::npos ? 1 : 0;
    return n;
}

}  // namespace

TEST_CASE("path event lines: one structured line per event, every field named", "[verbs]") {
    core::PathEvent e{.at_ns = 1'250'400, .kind = core::PathEventKind::retired, .cause = core::RetireCause::send_order,
                      .plane = 2, .group = 1, .qpn = 17, .ev = 0x2a01c};
    CHECK(runtime::PathEventLog::format(e) ==
          "path_event=retired cause=send_order_loss qpn=17 plane=2 t1=1 ev=0x2a01c at_ns=1250400");
    e.kind = core::PathEventKind::restored;
    e.count = 4;
    CHECK(runtime::PathEventLog::format(e) == "path_event=restored qpn=17 plane=2 t1=1 ev=0x2a01c evs=4 at_ns=1250400");
    e.kind = core::PathEventKind::probe_sent;
    CHECK(runtime::PathEventLog::format(e) == "path_event=probe qpn=17 plane=2 t1=1 ev=0x2a01c at_ns=1250400");
    e.kind = core::PathEventKind::local_port_down;
    CHECK(runtime::PathEventLog::format(e) == "path_event=port_down plane=2 at_ns=1250400");
    e.kind = core::PathEventKind::peer_ports;
    e.count = 0xfe;
    CHECK(runtime::PathEventLog::format(e) == "path_event=peer_ports qpn=17 plane_mask=0xfe at_ns=1250400");
}

TEST_CASE("path event log: rate-limited, suppressed events counted and reported once there is room", "[verbs]") {
    PortFlapper f;
    core::Engine& engine = f.engine;
    const CapturedLog captured;
    runtime::PathEventLog log({.burst_lines = 4, .refill_ns = 1'000'000});

    // 10 port flaps at t = 0: 20 events, 4 lines at once, 16 suppressed.
    for (int i = 0; i < 10; ++i) {
        f.port(1, false, 0);
        f.port(1, true, 0);
    }
    CHECK(log.drain(engine, 0) == 20);
    auto lines = captured.lines();
    CHECK(count_with(lines, "path_event=port_down plane=1") == 2);
    CHECK(count_with(lines, "path_event=port_up plane=1") == 2);
    CHECK(count_with(lines, "suppressed") == 0);  // no room yet to say so
    CHECK(log.counts().by_kind[static_cast<std::size_t>(core::PathEventKind::local_port_down)] == 10);
    CHECK(log.counts().by_kind[static_cast<std::size_t>(core::PathEventKind::local_port_up)] == 10);
    CHECK(log.counts().logged == 4);
    CHECK(log.counts().suppressed == 16);

    // Nothing new for 1 ms: one token back, spent on the count of what was left out.
    CHECK(log.drain(engine, 1'000'000) == 0);
    lines = captured.lines();
    REQUIRE(count_with(lines, "path_event=suppressed count=16 since_ns=0 at_ns=1000000") == 1);

    // 10 ms later the bucket is full again (4): the next events are logged.
    f.port(0, false, 11'000'000);
    CHECK(log.drain(engine, 11'000'000) == 1);
    CHECK(count_with(captured.lines(), "path_event=port_down plane=0 at_ns=11000000") == 1);
    CHECK(log.counts().logged == 5);
}

TEST_CASE("path event log: below info level nothing is written, everything is counted", "[verbs]") {
    PortFlapper f;
    core::Engine& engine = f.engine;
    const CapturedLog captured;
    log::logger().set_level(spdlog::level::warn);
    runtime::PathEventLog log;
    f.port(1, false, 5);
    CHECK(log.drain(engine, 5) == 1);
    CHECK(count_with(captured.lines(), "path_event") == 0);
    CHECK(log.counts().by_kind[static_cast<std::size_t>(core::PathEventKind::local_port_down)] == 1);
    CHECK(log.counts().logged == 0);
    CHECK(log.counts().suppressed == 0);
}
