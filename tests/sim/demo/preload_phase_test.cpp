// The fleet's preload phase over its shared port and a fake master that takes its time: N nodes'
// preloads cost the master N GetTables (none sent twice), as N nodes on their own ports would.
#define CATCH_CONFIG_MAIN
#include "fake_transport.hpp"

#include "engine/local_sa.hpp"
#include "sim/fleet/preload_phase.hpp"
#include "sim/fleet/shared_port.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <deque>

using namespace localsa;
using namespace std::chrono_literals;

namespace {

// N simulated nodes' LocalSas, their upstream traffic sharing one port (a fake wire), on a
// manual clock.
struct Fleet {
    Fleet(std::size_t nodes, std::size_t max_in_flight)
        : port(io.get_executor(), wire, max_in_flight, std::chrono::hours{1}) {
        for (std::size_t i = 0; i < nodes; ++i) {
            auto st = wire.state;
            st.lid = static_cast<std::uint16_t>(100 + i);
            st.gid = test::gid(0x200000 + i);
            transports.push_back(std::make_unique<fleet::NodeTransport>(
                port, st, [](mad::Bytes, const transport::MadAddress&) {}));
            sas.push_back(std::make_unique<LocalSa>(io.get_executor(), clock, *transports.back(),
                                                    LocalSaConfig{}));
            auto* sa = sas.back().get();
            transports.back()->set_owner(
                port.add_owner([sa](transport::InboundMad in) { sa->dispatch(in); }));
        }
    }
    std::vector<LocalSa*> local_sas() const {
        std::vector<LocalSa*> out;
        for (const auto& sa : sas)
            out.push_back(sa.get());
        return out;
    }
    Counters counters() const {
        Counters sum;
        for (const auto& sa : sas) {
            sum.upstream_retries += sa->counters().upstream_retries;
            sum.upstream_late_responses += sa->counters().upstream_late_responses;
            sum.preload_transactions += sa->counters().preload_transactions;
        }
        return sum;
    }

    boost::asio::io_context io;
    ManualClock clock{io};
    test::FakeTransport wire;
    fleet::SharedPort port;
    std::vector<std::unique_ptr<fleet::NodeTransport>> transports;
    std::vector<std::unique_ptr<LocalSa>> sas;
};

// The master's GetTable answer: one path from the asking node's GID.
std::vector<std::uint8_t> table_answer(const std::vector<std::uint8_t>& request) {
    const auto asked = sa::PathRecord::unpack(mad::Bytes{request}.subspan(mad::kSaHeaderSize));
    sa::PathRecord r;
    r.sgid = asked.sgid;
    r.dgid = test::gid(0x999);
    r.slid = 100;
    r.dlid = 7;
    r.reversible = true;
    r.pkey = 0xffff;
    r.mtu = 4;
    r.rate = 7;
    r.packet_life = 18;
    std::vector<std::uint8_t> out(request.begin(), request.begin() + mad::kSaHeaderSize);
    out[mad::offset::kMethod] = mad::method::kGetTableResp;
    mad::store_be16(out, 44, sa::PathRecord::kSize / 8);
    const auto b = r.bytes();
    out.insert(out.end(), b.begin(), b.end());
    return out;
}

// Runs the phase, playing a master that answers each request `service` after it went on the
// wire (several at once), until every preload ended and the port is empty. Returns the
// GetTables the master received.
std::size_t run(Fleet& f, fleet::PreloadPhase& phase, Clock::duration service) {
    std::deque<std::pair<Clock::time_point, std::vector<std::uint8_t>>> on_wire;
    std::size_t get_tables = 0;
    const auto give_up = f.clock.now() + 10min;
    phase.start();
    while (f.clock.now() < give_up && (!phase.finished() || f.port.in_flight() > 0 ||
                                       f.port.queued() > 0 || !on_wire.empty())) {
        f.clock.advance(10ms);
        const auto now = f.clock.now();
        for (auto& s : f.wire.take()) {
            get_tables += s.bytes[mad::offset::kMethod] == mad::method::kGetTable;
            on_wire.emplace_back(now + service, std::move(s.bytes));
        }
        while (!on_wire.empty() && on_wire.front().first <= now) {
            f.port.on_wire(test::from_lid(test::kSmLid, table_answer(on_wire.front().second)));
            on_wire.pop_front();
        }
    }
    return get_tables;
}

} // namespace

TEST_CASE("fleet preload: N nodes cost the master N GetTables, whatever the shared port's queue") {
    // 32 nodes, 2 tables on the wire at a time, 1 s per table: the last node's table goes out
    // after 15 s, longer than a preload try (8.6 s for a table of unknown size).
    constexpr std::size_t kNodes = 32;
    constexpr std::size_t kInFlight = 2;
    Fleet f(kNodes, kInFlight);

    SECTION("starts paced by the port: every GetTable on the wire when its try starts") {
        fleet::PreloadPhase phase(f.io.get_executor(), f.clock, f.local_sas(), kInFlight);
        const auto get_tables = run(f, phase, 1s);
        const auto c = f.counters();
        INFO("retries " << c.upstream_retries << ", late answers " << c.upstream_late_responses);
        CHECK(phase.finished());
        CHECK(phase.states()["done"] == kNodes);
        CHECK(c.preload_transactions == kNodes);
        CHECK(get_tables == kNodes);
        CHECK(c.upstream_retries == 0);
        CHECK(f.port.stats().max_queued_seen == 0);
        CHECK(phase.max_preloading_seen() == kInFlight);
        for (const auto& sa : f.sas)
            CHECK(sa->preload().size() == 1);
    }
    SECTION("all at once (the fleet before): the tries run out in the port's queue") {
        fleet::PreloadPhase phase(f.io.get_executor(), f.clock, f.local_sas(), 0);
        const auto get_tables = run(f, phase, 1s);
        CHECK(phase.finished());
        CHECK(get_tables > kNodes); // tables sent twice
        CHECK(f.counters().upstream_retries > 0);
        // Some tried three times in vain; their preload asked the table again later (a partial
        // preload is retried) and got it.
        CHECK(f.counters().preload_transactions > kNodes);
        CHECK(phase.states()["done"] == kNodes);
    }
}
