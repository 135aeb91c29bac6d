// What coherence is told (CoherenceConfig) and what it acts on (Parts), shared by its jobs:
// the subscriptions, the preload, the refresh and the port watch.
#pragma once

#include "engine/cache/path_cache.hpp"
#include "engine/cache/preload_table.hpp"
#include "engine/cache/warm_set.hpp"
#include "engine/clock.hpp"
#include "engine/counters.hpp"
#include "engine/handlers/class_port_info_service.hpp"
#include "engine/handlers/inform_info_service.hpp"
#include "engine/handlers/path_record_service.hpp"
#include "engine/upstream/upstream_client.hpp"
#include "ib/notice.hpp"
#include "transport/transport.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

namespace localsa::coherence {

struct CoherenceConfig {
    bool subscribe = true;
    // The random delays (renewal and start spread) from the random device (0) or this seed.
    std::uint64_t jitter_seed = 0;
    // How often the port's attributes are read (LID, SM LID, state) besides its events; zero:
    // PortWatch's default (30 s while port events arrive, 1 s without).
    std::chrono::milliseconds port_poll{0};
    // Refresh queries sent to the master per second at most, so a refresh never bursts.
    unsigned refresh_rate = 200;
    // Subscriptions the master did not confirm are tried again after this long.
    std::chrono::milliseconds resubscribe_retry{std::chrono::seconds{5}};
    // How often the master is asked whether it still holds this port's subscriptions
    // (Get(InformInfoRecord, SubscriberGID = own)). A restarted or failed-over SM forgets them
    // and, on the same LID, leaves nothing the port poll could see. Zero: never.
    std::chrono::milliseconds subscription_check{std::chrono::seconds{60}};
    // Preload: GetTable(PathRecord, SGID = own port, PKey) at start and after this port's own
    // resync; a table is used for `validity` after it arrived (what it answered stays cached
    // while used). A table that answered since it came (a hit, or an answer refreshed from it)
    // is asked again once 0.8 TTL old, before the answers taken from it fall due: they are
    // then refreshed from the new table, without a query each; an unused table is left to
    // expire. Needs RMPP (not under umad2sim).
    bool preload = true;
    std::chrono::milliseconds preload_validity{std::chrono::minutes{10}};
    // The preload at start and the background part of a resync (re-subscribe, preload) wait a
    // random delay up to this long, so that the nodes of a fabric, which see an SM change or a
    // reboot at the same moment, do not reach the new master together.
    std::chrono::milliseconds spread{std::chrono::seconds{30}};
    // An answer not used for this long is dropped at its refresh time instead of refreshed;
    // zero: one not used since it was stored or last refreshed (one TTL).
    std::chrono::milliseconds idle_window{0};
    // The per-try wait of a preload GetTable: its RMPP transfer takes longer with every record
    // (a fabric of thousands of ports sends hundreds of segments), so it is sized by the table.
    std::chrono::milliseconds try_timeout{200};
    // The master's routing epoch (routing_epoch_source.hpp): trusted while the master
    // publishes it, answers and tables then stay valid until it changes (--no-routing-epoch:
    // the TTL rules only). Off unless asked: the daemon turns it on (options.cpp), the tests
    // of the TTL rules leave it off. `epoch_reread`: how often its ServiceRecord is read
    // besides the Reports.
    bool routing_epoch = false;
    std::chrono::milliseconds epoch_reread{std::chrono::minutes{10}};
    // What the master takes per second for renewals after an epoch change, fleet-wide: the
    // PathRecords it computes (--master-capacity) and the transactions it serves
    // (--master-transactions; a Get is one, whatever its record). A node's renewal is spread
    // over what it asks, times the nodes, over these.
    unsigned master_capacity = 20000;
    unsigned master_transactions = 1000;
    // Full tables only while the fabric has at most this many ports (0: never; nullopt: auto,
    // preload_max_ports_auto()). A table is N records and every node asks one, N^2 records at
    // a power-on; above it the warm set (the Gets this port used, kept in `warm_file`) and
    // `destinations` are asked instead, one Get each.
    std::optional<std::size_t> preload_max_ports;
    // The fabric's size if known otherwise (the fleet simulation; 0: from the warm file, else
    // from the first table).
    std::size_t fabric_ports = 0;
    std::filesystem::path warm_file; // empty: the warm set is not kept across restarts
    std::size_t warm_set_max = 1024;
    std::chrono::milliseconds warm_save{std::chrono::minutes{5}};
    std::vector<cache::Destination> preload_destinations;
    // Above preload_max_ports: cold misses to this share (percent) of the fabric's ports
    // within a second ask the partition's table instead of a Get each (0: never); a miss
    // waits `burst_coalesce` for the others of its burst.
    std::size_t burst_share_percent = 50;
    std::chrono::milliseconds burst_coalesce{5};

    // The fabric a power-on may preload whole: its N^2 records within the spread window at the
    // master's capacity (sqrt(capacity x spread); 774 ports with the defaults). A window below
    // the default 30 s (0: preload at once) does not shrink it: how the starts are spread says
    // nothing of how many records the fabric can afford.
    std::size_t preload_max_ports_auto() const {
        const auto window = std::max<std::chrono::milliseconds>(spread, std::chrono::seconds{30});
        const double records =
            static_cast<double>(master_capacity) * std::chrono::duration<double>(window).count();
        return std::max<std::size_t>(static_cast<std::size_t>(std::sqrt(records)), 1);
    }
};

// The parts of one local SA that coherence acts on (LocalSa::coherence_parts() hands them out),
// rather than the whole LocalSa: what it may touch is written here.
struct Parts {
    // The local SA's clock: coherence reads the time and arms its timers on it too.
    Clock& clock;
    transport::MadTransport& transport;
    Counters& counters;
    cache::PathCache& cache;
    cache::PreloadTable& preload;
    upstream::UpstreamClient& upstream;
    sa::PathRecordService& path_records;
    sa::ClassPortInfoService& class_port_info;
    // Where clients' subscriptions are held at the master (set_master).
    sa::InformInfoService& inform_info;
    // Registers the handler of the master's Reports (after they were acknowledged).
    std::function<void(std::function<void(const sa::Notice&, std::uint64_t tid)>)> on_report;
    // The port's events (libibverbs), when there are: the port watch reads the port on them.
    transport::PortEventSource* port_events = nullptr;
};

} // namespace localsa::coherence
