#include "daemon/options.hpp"

#include "daemon/metrics_server.hpp"
#include "transport/sim/sim_quirks.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <system_error>

namespace localsa {

namespace po = boost::program_options;

namespace {

const char* kUsage =
    "Usage: localsad [options]\n"
    "\n"
    "A local InfiniBand Subnet Administrator for one HCA port: answers PathRecord\n"
    "queries from a cache kept coherent with the master SA and relays every other\n"
    "SA query to the master. See localsad(8).\n";

// The settings in effect as a --config file; defaults are commented out, so the file pins only
// what was set.
std::string effective_configuration(const po::options_description& all,
                                    const po::variables_map& vm) {
    static constexpr std::string_view kNotSettings[] = {"help", "version", "config",
                                                        "check-config"};
    std::ostringstream out;
    out << "# localsad " LOCALSA_VERSION ": the configuration in effect (--check-config)\n";
    for (const auto& option : all.options()) {
        const auto& name = option->long_name();
        if (std::find(std::begin(kNotSettings), std::end(kNotSettings), name) !=
            std::end(kNotSettings))
            continue;
        const auto it = vm.find(name);
        std::string value;
        const bool is_default = it == vm.end() || it->second.defaulted();
        if (it != vm.end()) {
            const auto& v = it->second.value();
            if (const auto* l = boost::any_cast<long>(&v))
                value = std::to_string(*l);
            else if (const auto* i = boost::any_cast<int>(&v))
                value = std::to_string(*i);
            else if (const auto* str = boost::any_cast<std::string>(&v))
                value = *str;
            else if (const auto* b = boost::any_cast<bool>(&v))
                value = *b ? "true" : "false";
        }
        out << (is_default ? "# " : "") << name << " = " << value << "\n";
    }
    return out.str();
}

template <typename T> void require_range(const char* name, T v, T lo, T hi) {
    if (v < lo || v > hi) {
        std::ostringstream msg;
        msg << "--" << name << " must be between " << lo << " and " << hi << " (got " << v << ")";
        throw UsageError(msg.str());
    }
}

} // namespace

ParsedCommandLine parse_command_line(int argc, const char* const argv[]) {
    DaemonOptions o;
    // The defaults are the engine's (its *Config structs); the options only name them.
    const LocalSaConfig d;
    const coherence::CoherenceConfig dc;
    using std::chrono::duration_cast;
    using std::chrono::seconds;
    long timeout_ms = d.upstream.try_timeout.count(), retries = d.upstream.retries;
    long max_outstanding = static_cast<long>(d.upstream.max_outstanding);
    long max_queued = static_cast<long>(d.upstream.max_queued);
    long path_ttl_s = duration_cast<seconds>(d.path_record.positive_ttl).count();
    long negative_ttl_ms = d.path_record.negative_ttl.count();
    long cache_max_entries = static_cast<long>(d.cache_max_entries);
    long max_client_subscriptions = static_cast<long>(d.max_client_subscriptions);
    long max_staleness_s = duration_cast<seconds>(d.path_record.max_staleness).count();
    long refresh_rate = dc.refresh_rate, port_poll_ms = dc.port_poll.count();
    long subscription_check_s = duration_cast<seconds>(dc.subscription_check).count();
    long idle_window_s = duration_cast<seconds>(dc.idle_window).count();
    long spread_ms = dc.spread.count();
    long master_rate = d.upstream.background_rate, master_burst = d.upstream.background_burst;
    long requester_deadline_ms = d.path_record.requester_deadline.count();
    bool no_subscribe = false, no_preload = false, no_routing_epoch = false;
    long master_capacity = dc.master_capacity;
    long master_transactions = dc.master_transactions;
    long epoch_reread_s = duration_cast<seconds>(dc.epoch_reread).count();
    std::string preload_max_ports = "auto", preload_dest;
    long warm_set_max = static_cast<long>(dc.warm_set_max);
    long burst_share = static_cast<long>(dc.burst_share_percent);
    long burst_coalesce_ms = dc.burst_coalesce.count();

    po::options_description general("General");
    general.add_options()("help,h", "print this help and exit")("version,V",
                                                                "print the version and exit")(
        "config", po::value(&o.config_file),
        "read options from FILE (same names as the flags; default: " LOCALSA_DEFAULT_CONFIG
        " when it exists)")("ca", po::value(&o.ca), "HCA to serve (default: the first)")(
        "port", po::value(&o.port)->default_value(o.port),
        "HCA port to serve")("control", po::value(&o.control),
                             "control socket (default: /run/localsa/<ca>-<port>.sock)")(
        "log-level", po::value(&o.log_level)->default_value(o.log_level),
        "trace, debug, info, warn, error, critical or off")(
        "foreground,f", po::bool_switch(&o.foreground), "stay in the foreground, log to stderr")(
        "metrics-listen", po::value(&o.metrics_listen),
        "serve GET /metrics (Prometheus) on [ADDR:]PORT (default: off; a bare port listens on "
        "127.0.0.1)")("netlink", po::value(&o.netlink)->default_value(true),
                      "answer the kernel's netlink path queries (RDMA_NL_LS) for this port: on "
                      "or off")(
        "user", po::value(&o.user),
        "run as this user once the devices and the control socket are open")(
        "check-config", "check the command line and --config, print the settings in effect as a "
                        "configuration file and exit (status 0: valid, 2: not)");

    // Parsed, never shown by --help: the test fabric's quirks are no production setting.
    po::options_description testing("Testing");
    testing.add_options()("sim", po::value(&o.sim)->default_value(o.sim),
                          "ibsim mode (claim IsSM, answer SMInfo): auto, on or off");

    po::options_description tuning("Tuning");
    tuning.add_options()("upstream-timeout-ms", po::value(&timeout_ms)->default_value(timeout_ms),
                         "wait this long for the master SA per try")(
        "upstream-retries", po::value(&retries)->default_value(retries),
        "tries after the first before a query to the master fails")(
        "max-outstanding", po::value(&max_outstanding)->default_value(max_outstanding),
        "queries in flight to the master at most")(
        "max-queued", po::value(&max_queued)->default_value(max_queued),
        "queries waiting behind them at most (more are dropped and counted)")(
        "cache-max-entries", po::value(&cache_max_entries)->default_value(cache_max_entries),
        "PathRecord answers kept at most")(
        "max-client-subscriptions",
        po::value(&max_client_subscriptions)->default_value(max_client_subscriptions),
        "event subscriptions (InformInfo) clients of the port may hold at most")(
        "path-ttl-s", po::value(&path_ttl_s)->default_value(path_ttl_s),
        "seconds an answer is served before the master is asked again")(
        "negative-ttl-ms", po::value(&negative_ttl_ms)->default_value(negative_ttl_ms),
        "milliseconds a 'no such path' answer is remembered (0: never)")(
        "max-staleness-s", po::value(&max_staleness_s)->default_value(max_staleness_s),
        "seconds an answer is still served after its refresh failed (master unreachable)")(
        "refresh-rate", po::value(&refresh_rate)->default_value(refresh_rate),
        "refresh queries to the master per second at most")(
        "idle-window-s", po::value(&idle_window_s)->default_value(idle_window_s),
        "an answer unused for this long is dropped instead of refreshed (0: unused since its "
        "last refresh)")(
        "master-rate", po::value(&master_rate)->default_value(master_rate),
        "background queries (refresh, preload, subscriptions) to the master per second at most")(
        "master-burst", po::value(&master_burst)->default_value(master_burst),
        "background queries to the master at once at most (token bucket size)")(
        "requester-deadline-ms",
        po::value(&requester_deadline_ms)->default_value(requester_deadline_ms),
        "how long a requester waits for a miss: a query to the master is not sent or "
        "tried again after that (200: the kernel's sa_redirect_timeout_ms; since patch 8 of "
        "the kernel series, the consumers' timeout: 1000 for IPoIB and SRP)")(
        "spread-ms", po::value(&spread_ms)->default_value(spread_ms),
        "preload at start and a resync's queries wait a random delay up to this long")(
        "port-poll-ms", po::value(&port_poll_ms)->default_value(port_poll_ms),
        "how often the port's LID, SM LID and state are read besides its events (0: every "
        "30000 ms while the port's verbs events arrive, 1000 without them)")(
        "subscription-check-s",
        po::value(&subscription_check_s)->default_value(subscription_check_s),
        "seconds between checks that the master still holds the subscriptions (0: never); "
        "longer on a large fabric: at most 5% of --master-transactions")(
        "no-subscribe", po::bool_switch(&no_subscribe),
        "do not subscribe to the master's events (rely on refresh alone)")(
        "no-routing-epoch", po::bool_switch(&no_routing_epoch),
        "ignore the master's routing epoch (OpenSM plugin localsaepoch): refresh on the TTL")(
        "master-capacity", po::value(&master_capacity)->default_value(master_capacity),
        "PathRecords a second the master computes for renewals after a routing epoch change "
        "and for the tables of bursts of cold misses, fleet-wide: sizes the windows they are "
        "spread over")(
        "master-transactions", po::value(&master_transactions)->default_value(master_transactions),
        "transactions a second the master serves, fleet-wide (a Get or a Set is one): sizes "
        "the window of renewals by Get after a routing epoch change, and the spread of a "
        "start's subscriptions")(
        "epoch-reread-s", po::value(&epoch_reread_s)->default_value(epoch_reread_s),
        "seconds between reads of the routing epoch's ServiceRecord besides its Reports (0: "
        "only at start and resync)")(
        "no-preload", po::bool_switch(&no_preload),
        "do not preload this port's paths (GetTable by SGID; off under ibsim, which lacks RMPP)")(
        "preload-max-ports", po::value(&preload_max_ports)->default_value(preload_max_ports),
        "preload whole tables only while the fabric has at most this many ports (auto: "
        "sqrt(master-capacity x max(spread, 30 s)), 0: never); above it the warm set is asked")(
        "burst-share", po::value(&burst_share)->default_value(burst_share),
        "above preload-max-ports: cold misses to this percent of the fabric's ports within a "
        "second ask the partition's table, one GetTable instead of a Get each (0: never)")(
        "burst-coalesce-ms", po::value(&burst_coalesce_ms)->default_value(burst_coalesce_ms),
        "above preload-max-ports: how long a cold miss waits for the others of its burst (0: "
        "not at all)")(
        "warm-set-max", po::value(&warm_set_max)->default_value(warm_set_max),
        "paths used recently kept in the warm set and asked at start (0: none kept)")(
        "state-dir", po::value(&o.state_dir)->default_value(o.state_dir),
        "directory of the warm set file <ca>-<port>.warm (empty: not kept)")(
        "preload-dest", po::value(&preload_dest),
        "FILE of destinations asked at start, one 'GID [PKEY]' or 'LID [PKEY]' a line")(
        "sim-preload", po::bool_switch(&o.sim_preload),
        "preload under ibsim too (tests: only fabrics whose tables fit one MAD)");

    po::options_description visible;
    visible.add(general).add(tuning);
    po::options_description all;
    all.add(general).add(tuning).add(testing);

    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, all), vm);
        // An explicit --config must be readable; the default file is read only if present.
        const bool explicit_config = vm.count("config") > 0;
        const std::string file =
            explicit_config ? vm["config"].as<std::string>() : LOCALSA_DEFAULT_CONFIG;
        std::ifstream in(file);
        if (!in && explicit_config)
            throw UsageError("cannot read configuration file " + file);
        if (in) {
            po::store(po::parse_config_file(in, all), vm);
            o.config_file = file;
        }
        po::notify(vm);
    } catch (const po::error& e) {
        throw UsageError(e.what());
    }

    ParsedCommandLine result;
    if (vm.count("help")) {
        std::ostringstream out;
        out << kUsage << "\n" << visible;
        result.text = out.str();
        return result;
    }
    if (vm.count("version")) {
        result.text = "localsad " LOCALSA_VERSION "\n";
        return result;
    }

    require_range("port", o.port, 1, 254);
    require_range("upstream-timeout-ms", timeout_ms, 10L, 60'000L);
    require_range("upstream-retries", retries, 0L, 10L);
    require_range("max-outstanding", max_outstanding, 1L, 256L);
    require_range("max-queued", max_queued, 0L, 1'000'000L);
    require_range("cache-max-entries", cache_max_entries, 0L, 100'000'000L);
    require_range("max-client-subscriptions", max_client_subscriptions, 0L, 65'536L);
    // Also the preload period: 0 would send the GetTables back to back.
    require_range("path-ttl-s", path_ttl_s, 1L, 86'400L);
    require_range("negative-ttl-ms", negative_ttl_ms, 0L, 3'600'000L);
    require_range("max-staleness-s", max_staleness_s, 0L, 86'400L);
    require_range("refresh-rate", refresh_rate, 1L, 100'000L);
    require_range("master-capacity", master_capacity, 1L, 100'000'000L);
    require_range("master-transactions", master_transactions, 1L, 100'000'000L);
    require_range("epoch-reread-s", epoch_reread_s, 0L, 86'400L);
    if (port_poll_ms != 0) // 0: the default of the mode (with or without port events)
        require_range("port-poll-ms", port_poll_ms, 10L, 600'000L);
    require_range("subscription-check-s", subscription_check_s, 0L, 86'400L);
    require_range("idle-window-s", idle_window_s, 0L, 86'400L);
    require_range("master-rate", master_rate, 1L, 100'000L);
    require_range("master-burst", master_burst, 1L, 100'000L);
    require_range("requester-deadline-ms", requester_deadline_ms, 10L, 600'000L);
    require_range("spread-ms", spread_ms, 0L, 3'600'000L);
    require_range("warm-set-max", warm_set_max, 0L, 65'536L);
    require_range("burst-share", burst_share, 0L, 100L);
    require_range("burst-coalesce-ms", burst_coalesce_ms, 0L, 1'000L);
    if (preload_max_ports != "auto") {
        long v = -1;
        const auto* b = preload_max_ports.data();
        const auto [end, ec] = std::from_chars(b, b + preload_max_ports.size(), v);
        if (ec != std::errc{} || end != b + preload_max_ports.size())
            throw UsageError("--preload-max-ports must be auto or a number of ports (got '" +
                             preload_max_ports + "')");
        require_range("preload-max-ports", v, 0L, 1'000'000L);
        o.coherence.preload_max_ports = static_cast<std::size_t>(v);
    }
    if (!o.state_dir.empty() && o.state_dir.front() != '/')
        throw UsageError("--state-dir must be an absolute path (got '" + o.state_dir + "')");
    if (!preload_dest.empty()) {
        std::ifstream in(preload_dest);
        std::ostringstream text;
        text << in.rdbuf();
        if (!in)
            throw UsageError("--preload-dest: cannot read " + preload_dest);
        std::string error;
        auto dests = cache::parse_destinations(text.str(), error);
        if (!dests)
            throw UsageError("--preload-dest " + preload_dest + ": " + error);
        o.coherence.preload_destinations = std::move(*dests);
    }
    o.coherence.warm_set_max = static_cast<std::size_t>(warm_set_max);
    o.coherence.burst_share_percent = static_cast<std::size_t>(burst_share);
    o.coherence.burst_coalesce = std::chrono::milliseconds{burst_coalesce_ms};
    static const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
    if (std::find(std::begin(kLevels), std::end(kLevels), o.log_level) == std::end(kLevels))
        throw UsageError("--log-level: unknown level '" + o.log_level + "'");
    if (!o.metrics_listen.empty()) {
        try {
            MetricsServer::parse_listen(o.metrics_listen);
        } catch (const std::invalid_argument& e) {
            throw UsageError("--metrics-listen '" + o.metrics_listen + "': " + e.what());
        }
    }
    if (o.sim != "auto" && o.sim != "on" && o.sim != "off")
        throw UsageError("--sim must be auto, on or off");

    auto& c = o.local_sa;
    c.upstream.try_timeout = std::chrono::milliseconds{timeout_ms};
    c.upstream.retries = static_cast<int>(retries);
    c.upstream.max_outstanding = static_cast<std::size_t>(max_outstanding);
    c.upstream.max_queued = static_cast<std::size_t>(max_queued);
    c.cache_max_entries = static_cast<std::size_t>(cache_max_entries);
    c.max_client_subscriptions = static_cast<std::size_t>(max_client_subscriptions);
    c.path_record.positive_ttl = std::chrono::seconds{path_ttl_s};
    c.path_record.negative_ttl = std::chrono::milliseconds{negative_ttl_ms};
    c.path_record.max_staleness = std::chrono::seconds{max_staleness_s};
    c.path_record.requester_deadline = std::chrono::milliseconds{requester_deadline_ms};
    c.upstream.background_rate = static_cast<unsigned>(master_rate);
    c.upstream.background_burst = static_cast<unsigned>(master_burst);
    o.coherence.idle_window = std::chrono::seconds{idle_window_s};
    o.coherence.spread = std::chrono::milliseconds{spread_ms};
    o.coherence.try_timeout = std::chrono::milliseconds{timeout_ms};
    o.coherence.subscribe = !no_subscribe;
    o.coherence.routing_epoch = !no_routing_epoch;
    o.coherence.master_capacity = static_cast<unsigned>(master_capacity);
    o.coherence.master_transactions = static_cast<unsigned>(master_transactions);
    o.coherence.epoch_reread = std::chrono::seconds{epoch_reread_s};
    o.coherence.refresh_rate = static_cast<unsigned>(refresh_rate);
    o.coherence.port_poll = std::chrono::milliseconds{port_poll_ms};
    o.coherence.subscription_check = std::chrono::seconds{subscription_check_s};
    o.under_sim = o.sim == "on" || (o.sim == "auto" && transport::sim::umad2sim_loaded());
    // umad2sim cuts every multi-MAD answer to one MAD: a preload there would be a partial table.
    o.coherence.preload = !no_preload && (!o.under_sim || o.sim_preload);
    o.coherence.preload_validity = std::chrono::seconds{path_ttl_s + max_staleness_s};
    if (vm.count("check-config")) {
        result.text = effective_configuration(all, vm);
        return result;
    }
    result.options = o;
    return result;
}

const char* default_config_file() {
    return LOCALSA_DEFAULT_CONFIG;
}

} // namespace localsa
