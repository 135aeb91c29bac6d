// localsa-fleet-scale: N local SAs with their coherence, an hour of a fabric's life on a manual
// clock, against an in-process master SA that counts every query (docs/benchmarks.md, part d).
//
// Scenarios (each after a warm-up in which every node starts as localsad does):
//   idle      a job start (all-to-all), then nothing for the rest of the hour;
//   jobs      a job start every --job-period-s;
//   trap64    a job start, a port joining at --event-at-s (trap 64 to every node), each node
//             asking its path to the new port a minute later;
//   failover  steady, and an SM fail-over at --event-at-s (a standby on another LID, which
//             holds no subscription);
//   steady    every node uses one of its few peers (--targets) every --use-period-s;
//   power-on  every node starts within --power-on-window-s, then uses its peers as in steady;
//   reroute   steady, and a spine link down at --event-at-s (the master answers another rate,
//             no trap), up --outage-s later;
//   switch-down  steady, and a leaf switch and its --leaf-hosts hosts down at --event-at-s
//             (trap 65 each), back --outage-s later (trap 64 each).
// The master has a capacity in records/s and transactions/s, a bounded queue that drops and
// BUSY (MasterQueue); every scenario also reports its client workload sent straight to the
// master (without_localsa).
// Prints one JSON document; --check exits 1 when a target is missed (see --help).
#include "sim/fleet_scale/fleet.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace localsa;
using namespace localsa::fleet_scale;
namespace po = boost::program_options;

namespace {

// The targets of docs/benchmarks.md (d); returns what was missed.
std::vector<std::string> missed_targets(const nlohmann::json& r, double capacity) {
    std::vector<std::string> missed;
    const std::string s = r["scenario"];
    if (r["budget"]["nodes_over_budget"].get<std::size_t>() > 0)
        missed.push_back(s + ": " + r["budget"]["nodes_over_budget"].dump() +
                         " nodes over their budget (burst used " +
                         r["budget"]["max_burst_used"].dump() + ")");
    if (s == "idle" && r["idle"]["path_queries_after_one_more_ttl"].get<std::uint64_t>() > 0)
        missed.push_back("idle: " + r["idle"]["path_queries_after_one_more_ttl"].dump() +
                         " PathRecord queries after the idle window and one refresh round");
    if (s == "trap64" && r["trap64"]["max_queries_of_a_node"].get<std::uint64_t>() > 1)
        missed.push_back("trap64: a node sent " + r["trap64"]["max_queries_of_a_node"].dump() +
                         " queries for one port joining (its own question is 1)");
    if (s == "failover") {
        const auto& f = r["failover"];
        if (capacity > 0 && f["peak_qps_after"].get<double>() >= capacity)
            missed.push_back("failover: peak " + f["peak_qps_after"].dump() + " q/s, capacity " +
                             std::to_string(capacity));
        if (f["nodes_resynced"] != r["nodes"] || f["nodes_subscribed_again"] != r["nodes"])
            missed.push_back("failover: not every node resynced and subscribed again");
    }
    // At fleet scale (N >= 256) the master's work with localsa must not exceed its work without
    // localsa, stay within its capacity and lose nothing (issue 25).
    if (r["nodes"].get<std::size_t>() >= 256) {
        const auto with = r["master"]["records"].get<std::uint64_t>();
        const auto without = r["without_localsa"]["records"].get<std::uint64_t>();
        if (with > without)
            missed.push_back(
                s + ": the master computed " + std::to_string(with) +
                " PathRecords with localsa against " + std::to_string(without) + " without (" +
                (without
                     ? std::to_string(static_cast<double>(with) / static_cast<double>(without)) +
                           "x"
                     : std::string{"none without"}) +
                ")");
        if (r["master"]["peak_over_capacity"].get<double>() > 1.0)
            missed.push_back(s + ": the master's busiest second (at " +
                             r["master"]["peak_over_capacity_at_s"].dump() + " s) was offered " +
                             r["master"]["peak_over_capacity"].dump() +
                             " x its capacity (over capacity)");
        const auto per_node = r["memory"]["rss_per_node_bytes"].get<double>();
        if (per_node > r["memory"]["limit_per_node_bytes"].get<double>())
            missed.push_back(s + ": memory per simulated node " +
                             std::to_string(static_cast<long>(per_node)) + " bytes, over " +
                             r["memory"]["limit_per_node_bytes"].dump() +
                             " (the scenario's peak RSS above the process's before, per node)");
        if (r["master"]["dropped"].get<std::uint64_t>() > 0)
            missed.push_back(s + ": the master dropped " + r["master"]["dropped"].dump() +
                             " queries (its queue of " + r["master_capacity"]["queue"].dump() +
                             " was full)");
    }
    return missed;
}

} // namespace

int main(int argc, char** argv) {
    std::size_t nodes = 256;
    std::string scenarios_arg = "idle,jobs,trap64,failover,steady,power-on,reroute,switch-down",
                out_file, log_level = "warn", routing_epoch = "on", preload = "on",
                kernel_fallback = "timeout";
    long use_period_s = 20, power_on_window_s = 10, outage_s = 600;
    std::size_t targets = 4, leaf_hosts = 18;
    MasterCapacity master;
    long duration_s = 3600, warmup_s = 60, job_period_s = 600, event_at_s = 1200;
    long new_port_use_s = 60, latency_us = 1000, idle_target_s = 0, caller_timeout_ms = 2000;
    double capacity = 18206; // OpenSM, bench (b) of 3 December 2026, 64 outstanding
    long ttl_s = -1, spread_ms = -1, idle_window_s = -1, master_rate = -1, master_burst = -1;
    long preload_max_ports = -1, burst_share = -1;
    bool check = false, per_second = false;
    std::size_t max_bytes_per_node = FleetParams{}.max_bytes_per_node;

    po::options_description opts(
        "Usage: localsa-fleet-scale [options]\n\n"
        "N local SAs (LocalSa + Coherence) on a manual clock against an in-process master SA;\n"
        "an hour of each scenario (idle, jobs, trap64, failover) in seconds. Prints JSON.\n"
        "--check exits 1 when a target is missed: no node over its budget; idle: no\n"
        "PathRecord query once the job's answers went idle and one refresh round passed;\n"
        "trap64: at most 1 query per node (its own question to the new port); failover: the\n"
        "peak below --capacity and every node resynced; and at N >= 256, every scenario: no\n"
        "more PathRecords computed by the master with localsa than without, its busiest second\n"
        "within its capacity (--master-records-per-s, --master-transactions-per-s), nothing\n"
        "dropped (--master-queue), and memory per simulated node within\n"
        "--max-bytes-per-node (the scenario's peak RSS above the process's before, per node).\n\n"
        "Options");
    opts.add_options()("help,h", "print this help")(
        "nodes", po::value(&nodes)->default_value(nodes), "local SAs (nodes)")(
        "scenarios", po::value(&scenarios_arg)->default_value(scenarios_arg),
        "comma-separated: idle, jobs, trap64, failover, steady, power-on, reroute, switch-down")(
        "duration-s", po::value(&duration_s)->default_value(duration_s),
        "simulated seconds per scenario (after the warm-up)")(
        "warmup-s", po::value(&warmup_s)->default_value(warmup_s),
        "simulated seconds of start-up before")(
        "job-period-s", po::value(&job_period_s)->default_value(job_period_s),
        "jobs: a job start every this long")("event-at-s",
                                             po::value(&event_at_s)->default_value(event_at_s),
                                             "trap64, failover: when the event happens")(
        "new-port-use-s", po::value(&new_port_use_s)->default_value(new_port_use_s),
        "trap64: the nodes ask for the new port this long after it joined")(

        "idle-target-s", po::value(&idle_target_s)->default_value(idle_target_s),
        "idle: the cache must be silent this long after the job (plus one TTL round); 0: its "
        "idle window")("master-latency-us", po::value(&latency_us)->default_value(latency_us),
                       "the master's answer time (plus 3 us per record of a table)")(
        "capacity", po::value(&capacity)->default_value(capacity),
        "the master's capacity in queries/s (OpenSM's throughput, scripts/bench part b)")(
        "path-ttl-s", po::value(&ttl_s), "localsad's --path-ttl-s (default: localsad's)")(
        "spread-ms", po::value(&spread_ms), "localsad's --spread-ms")(
        "idle-window-s", po::value(&idle_window_s), "localsad's --idle-window-s")(
        "master-rate", po::value(&master_rate), "localsad's --master-rate")(
        "master-burst", po::value(&master_burst), "localsad's --master-burst")(
        "use-period-s", po::value(&use_period_s)->default_value(use_period_s),
        "steady and after: a node uses one of its peers this often")(
        "targets", po::value(&targets)->default_value(targets), "the peers a node uses")(
        "power-on-window-s", po::value(&power_on_window_s)->default_value(power_on_window_s),
        "power-on: every node starts within this")(
        "outage-s", po::value(&outage_s)->default_value(outage_s),
        "reroute, switch-down: the link or switch is back this long after")(
        "leaf-hosts", po::value(&leaf_hosts)->default_value(leaf_hosts),
        "switch-down: the hosts of the leaf")(
        "master-records-per-s",
        po::value(&master.records_per_s)->default_value(master.records_per_s),
        "the master's capacity in PathRecords computed and sent per second")(
        "master-transactions-per-s",
        po::value(&master.transactions_per_s)->default_value(master.transactions_per_s),
        "the master's capacity in transactions per second")(
        "master-queue", po::value(&master.queue)->default_value(master.queue),
        "queries waiting at the master at most (more are dropped)")(
        "routing-epoch", po::value(&routing_epoch)->default_value(routing_epoch),
        "on: the master runs the routing epoch plugin (its ServiceRecord, a Report on a "
        "routing change) and the nodes use it; off: neither, the TTL rules alone")(
        "preload", po::value(&preload)->default_value(preload),
        "on: the nodes preload their tables (localsad's default: the whole table per PKey "
        "up to --preload-max-ports); off: no preload, every path read through the cache on use "
        "(N = 16,384: a whole table is ~2.5 MB per node)")(
        "preload-max-ports", po::value(&preload_max_ports),
        "localsad's --preload-max-ports (default: auto); a node knows the fabric's size from "
        "its warm set file, as after its first start")(
        "kernel-fallback", po::value(&kernel_fallback)->default_value(kernel_fallback),
        "the kernel's rule for a query its live local SA has not answered: timeout, it goes "
        "to the master after sa_redirect_timeout_ms (200 ms; the series before patch 8, and "
        "a stock kernel whose netlink request localsad gave up); probe, after the caller's "
        "timeout (patch 8: a local SA that answers probes keeps its Gets; localsad's "
        "--requester-deadline-ms set to that timeout); wait, never (clients that wait for "
        "their local SA however long: a bound, no kernel does this)")(
        "caller-timeout-ms", po::value(&caller_timeout_ms)->default_value(caller_timeout_ms),
        "--kernel-fallback probe: the consumers' timeout of one try (rdma_cm: the "
        "application's, often 2000; IPoIB and SRP: 1000)")(
        "burst-share", po::value(&burst_share),
        "localsad's --burst-share (default: localsad's; 0: each cold miss read through)")(
        "max-bytes-per-node", po::value(&max_bytes_per_node)->default_value(max_bytes_per_node),
        "--check at N >= 256: memory per simulated node at most (issue 25: 200 KB)")(
        "check", po::bool_switch(&check), "exit 1 when a target is missed")(
        "per-second", po::bool_switch(&per_second),
        "list what each second offered the master (queries, dropped, records, work, by kind)")(
        "json", po::value(&out_file), "write the JSON here instead of stdout")(
        "log-level", po::value(&log_level)->default_value(log_level), "spdlog level");
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, opts), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        std::cerr << "localsa-fleet-scale: " << e.what() << "\n";
        return 2;
    }
    if (vm.count("help")) {
        std::cout << opts << "\n";
        return 0;
    }
    std::vector<Scenario> scenarios;
    {
        std::stringstream ss(scenarios_arg);
        std::string name;
        while (std::getline(ss, name, ','))
            if (const auto s = parse_scenario(name))
                scenarios.push_back(*s);
            else if (!name.empty()) {
                std::cerr << "localsa-fleet-scale: unknown scenario '" << name << "'\n";
                return 2;
            }
    }
    if (nodes < 2 || nodes > 40000 || duration_s < 1 || warmup_s < 0) {
        std::cerr << "localsa-fleet-scale: --nodes must be 2-40000, --duration-s >= 1\n";
        return 2;
    }
    auto logger = spdlog::stderr_color_mt("fleet-scale");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(log_level));

    if (routing_epoch != "on" && routing_epoch != "off") {
        std::cerr << "localsa-fleet-scale: --routing-epoch is on or off\n";
        return 2;
    }
    if (preload != "on" && preload != "off") {
        std::cerr << "localsa-fleet-scale: --preload is on or off\n";
        return 2;
    }
    if (kernel_fallback != "timeout" && kernel_fallback != "probe" && kernel_fallback != "wait") {
        std::cerr << "localsa-fleet-scale: --kernel-fallback is timeout, probe or wait\n";
        return 2;
    }
    if (caller_timeout_ms < 100 || caller_timeout_ms > 600'000) {
        std::cerr << "localsa-fleet-scale: --caller-timeout-ms is 100 to 600000\n";
        return 2;
    }
    FleetParams p;
    p.nodes = nodes;
    p.caller_timeout = std::chrono::milliseconds{caller_timeout_ms};
    if (kernel_fallback == "probe") {
        p.kernel_fallback = KernelFallback::Probe;
        // As docs/localsad.md tells the admin of a patched kernel: the local SA keeps a miss as
        // long as its requester waits for it.
        p.local_sa.path_record.requester_deadline = p.caller_timeout;
    } else if (kernel_fallback == "wait") {
        p.kernel_fallback = KernelFallback::Wait;
        // 10 min: the longest window a table waits for here.
        p.local_sa.path_record.requester_deadline = std::chrono::minutes{10};
    }
    p.preload = preload == "on";
    p.max_bytes_per_node = max_bytes_per_node;
    p.routing_epoch = routing_epoch == "on";
    p.duration = std::chrono::seconds{duration_s};
    p.warmup = std::chrono::seconds{warmup_s};
    p.per_second = per_second;
    p.job_period = std::chrono::seconds{job_period_s};
    p.event_at = std::chrono::seconds{event_at_s};
    p.new_port_use = std::chrono::seconds{new_port_use_s};
    p.idle_target = std::chrono::seconds{idle_target_s};
    p.master_latency = std::chrono::microseconds{latency_us};
    p.capacity = capacity;
    p.master = master;
    p.use_period = std::chrono::seconds{use_period_s};
    p.targets = std::max<std::size_t>(targets, 1);
    p.power_on_window = std::chrono::seconds{power_on_window_s};
    p.outage = std::chrono::seconds{outage_s};
    p.leaf_hosts = leaf_hosts;
    // localsad's defaults (the engine's config structs), but for what the options change.
    if (ttl_s > 0)
        p.local_sa.path_record.positive_ttl = std::chrono::seconds{ttl_s};
    // As localsad sets it: a table answers for the TTL and the staleness bound after it came.
    p.coherence.preload_validity = std::chrono::duration_cast<std::chrono::milliseconds>(
        p.local_sa.path_record.positive_ttl + p.local_sa.path_record.max_staleness);
    if (spread_ms >= 0)
        p.coherence.spread = std::chrono::milliseconds{spread_ms};
    if (idle_window_s >= 0)
        p.coherence.idle_window = std::chrono::seconds{idle_window_s};
    if (master_rate > 0)
        p.local_sa.upstream.background_rate = static_cast<unsigned>(master_rate);
    if (master_burst > 0)
        p.local_sa.upstream.background_burst = static_cast<unsigned>(master_burst);
    if (preload_max_ports >= 0)
        p.coherence.preload_max_ports = static_cast<std::size_t>(preload_max_ports);
    if (burst_share >= 0)
        p.coherence.burst_share_percent = static_cast<std::size_t>(std::min(burst_share, 100L));

    nlohmann::json out;
    out["nodes"] = nodes;
    out["capacity_qps"] = capacity;
    out["routing_epoch"] = routing_epoch;
    out["preload"] = preload;
    out["config"] = {
        {"path_ttl_s",
         std::chrono::duration_cast<std::chrono::seconds>(p.local_sa.path_record.positive_ttl)
             .count()},
        {"idle_window_s",
         std::chrono::duration_cast<std::chrono::seconds>(p.coherence.idle_window).count()},
        {"spread_ms", p.coherence.spread.count()},
        {"master_rate", p.local_sa.upstream.background_rate},
        {"master_burst", p.local_sa.upstream.background_burst},
        {"refresh_rate", p.coherence.refresh_rate},
        {"preload_max_ports",
         p.coherence.preload_max_ports.value_or(p.coherence.preload_max_ports_auto())},
        {"preload",
         !p.preload ? "off"
         : nodes <= p.coherence.preload_max_ports.value_or(p.coherence.preload_max_ports_auto())
             ? "tables"
             : "warm set"},
        {"burst_share", p.coherence.burst_share_percent},
        {"kernel_fallback", kernel_fallback},
        {"caller_timeout_ms", caller_timeout_ms},
        {"master_capacity_option", p.coherence.master_capacity},
        {"subscription_check_s",
         std::chrono::duration_cast<std::chrono::seconds>(p.coherence.subscription_check).count()}};
    out["scenarios"] = nlohmann::json::array();
    std::vector<std::string> missed;
    for (const auto s : scenarios) {
        const auto started = std::chrono::steady_clock::now();
        nlohmann::json r;
        {
            Fleet fleet(p);
            r = fleet.run(s);
        }
        r["wall_s"] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        for (auto& m : missed_targets(r, capacity))
            missed.push_back(std::move(m));
        spdlog::info("{} N={}: {:.1f} queries/node/hour, peak {} q/s at {} s ({:.1f} s wall)",
                     scenario_name(s), nodes,
                     r["master"]["queries_per_node_per_hour"].get<double>(),
                     r["master"]["peak_qps"].get<unsigned>(),
                     r["master"]["peak_at_s"].get<unsigned>(), r["wall_s"].get<double>());
        r["memory"]["max_rss_kb_per_node"] =
            static_cast<double>(r["memory"]["max_rss_kb"].get<long>()) / static_cast<double>(nodes);
        out["scenarios"].push_back(std::move(r));
    }
    out["missed_targets"] = missed;
    if (out_file.empty()) {
        std::cout << out.dump(1) << std::endl;
    } else {
        std::ofstream f(out_file);
        f << out.dump(1) << "\n";
    }
    for (const auto& m : missed)
        std::cerr << "localsa-fleet-scale: target missed: " << m << "\n";
    return check && !missed.empty() ? 1 : 0;
}
