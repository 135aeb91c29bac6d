// localsa-fleet: an all-to-all "job start" on a simulated fabric, without and with local SAs.
//
// One process holds one LocalSa (the same class localsad runs) per simulated node; their
// upstream queries share this process's one umad port (one ibsim node, under umad2sim) to the
// real master SA. Every rank resolves a PathRecord (SGID = its node's GID, DGID = every other
// rank's GID), as rdma_cm asks it:
//   baseline  straight to the master, at most --depth queries outstanding;
//   cold      through each rank's own LocalSa with empty caches (misses go to the master);
//   warm      the same again (answered from the caches);
//   preload   caches emptied, each LocalSa preloads its node's table as localsad does at start
//             (one GetTable(PathRecord, SGID = the node's GID) per PKey, through coherence::
//             Coherence), the nodes' starts paced by the shared port (fleet::PreloadPhase),
//             then the job through them. Needs RMPP: a real umad port (vm tier).
// The answers to the ranks go back in-process (in place of each node's kernel redirect).
// Prints one JSON document with the results of every phase.
#include "engine/local_sa.hpp"
#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "sim/fleet/preload_phase.hpp"
#include "sim/fleet/query_engine.hpp"
#include "sim/fleet/shared_port.hpp"
#include "transport/umad/umad_transport.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>

using namespace localsa;
namespace po = boost::program_options;

namespace {

struct Rank {
    std::string name;
    std::uint16_t lid = 0;
    sa::Gid gid;
};

// The PathRecord question rdma_cm asks (cma_query_ib_route, an AF_INET id): SGID, DGID, PKey,
// NumbPath = 1, Reversible = 1, ServiceID (port space << 16 | the listener's port) and QoSClass
// (the ToS, 0).
constexpr std::uint64_t kJobMask = sa::pr_mask::kSgid | sa::pr_mask::kDgid | sa::pr_mask::kPKey |
                                   sa::pr_mask::kNumbPath | sa::pr_mask::kReversible |
                                   sa::pr_mask::kServiceId | sa::pr_mask::kQosClass;
// rdma_get_service_id(): RDMA_PS_TCP << 16 | port. Each rank listens on a port of its own, the
// job's first port plus its rank; the next job on the same nodes listens on other ports.
constexpr std::uint64_t kPsTcp = 0x0106;
std::uint64_t service_id(std::uint16_t first_port, std::size_t rank) {
    return kPsTcp << 16 | static_cast<std::uint16_t>(first_port + rank);
}
// The first listening port of each phase's job: the cold and the baseline job are the same job,
// the warm one is the next job on the same nodes (other ports, so other ServiceIDs).
std::uint16_t first_port_of(const std::string& phase) {
    return phase == "warm" ? 24000 : 20000;
}

std::vector<std::uint8_t> path_get(std::uint64_t mask, const sa::PathRecord& pr) {
    mad::SaMad m;
    m.header.method = mad::method::kGet;
    m.header.attr_id = mad::attr::kPathRecord;
    m.comp_mask = mask;
    pr.pack(m.data);
    return m.pack();
}

std::vector<Rank> read_nodes(const std::string& file) {
    std::ifstream f(file);
    if (!f)
        throw std::runtime_error("cannot read " + file);
    std::vector<Rank> nodes;
    std::string name;
    unsigned lid;
    while (f >> name >> lid)
        nodes.push_back({name, static_cast<std::uint16_t>(lid), {}});
    return nodes;
}

// Runs a command (the independent count at the master) and returns its output as a number.
long long run_count(const std::string& cmd) {
    if (cmd.empty())
        return -1;
    std::FILE* p = ::popen(cmd.c_str(), "r");
    if (!p)
        return -1;
    long long v = -1;
    if (std::fscanf(p, "%lld", &v) != 1)
        v = -1;
    if (::pclose(p) != 0)
        v = -1;
    return v;
}

nlohmann::json engine_json(const fleet::EngineResult& r) {
    return {{"queries", r.queries},
            {"answered", r.answered},
            {"ok", r.ok},
            {"bad_status", r.bad_status},
            {"wrong_answers", r.wrong},
            {"timeouts", r.timeouts},
            {"errors", r.errors()},
            {"first_bad_status", r.first_bad_status},
            {"seconds", r.seconds},
            {"rate", r.seconds > 0 ? static_cast<double>(r.answered) / r.seconds : 0.0},
            {"latency_us", {{"p50", r.lat_p50_us}, {"p99", r.lat_p99_us}, {"max", r.lat_max_us}}}};
}

Counters sum_counters(const std::vector<std::unique_ptr<LocalSa>>& sas) {
    Counters s;
    for (const auto& sa : sas) {
        const auto& c = sa->counters();
#define LOCALSA_SUM(name) s.name += c.name;
        LOCALSA_COUNTERS(LOCALSA_SUM)
#undef LOCALSA_SUM
    }
    return s;
}

nlohmann::json counter_delta(const Counters& a, const Counters& b) {
    nlohmann::json j;
#define LOCALSA_DELTA(name) j[#name] = b.name - a.name;
    LOCALSA_COUNTERS(LOCALSA_DELTA)
#undef LOCALSA_DELTA
    return j;
}

// utime + stime of a process, in seconds (-1: unreadable), from /proc/PID/stat.
double cpu_seconds(long pid) {
    if (pid <= 0)
        return -1;
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const auto close = stat.rfind(')');
    if (close == std::string::npos)
        return -1;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    // after the command: state (3) ... utime (14), stime (15)
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14)
            utime = std::stoull(field);
        if (i == 15)
            stime = std::stoull(field);
    }
    return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

long max_rss_kb() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

} // namespace

int main(int argc, char** argv) {
    std::string ca, nodes_file, phases_arg = "baseline,cold,warm", count_cmd, count_all_cmd,
                                out_file, log_level = "warn";
    std::size_t ranks_wanted = 0, depth = 128, max_in_flight = 128, sample_sources = 0;
    long timeout_ms = 5000;
    // Each LocalSa's limits default to localsad's own (the engine's config structs).
    const LocalSaConfig engine_defaults;
    long up_timeout_ms = engine_defaults.upstream.try_timeout.count(),
         up_retries = engine_defaults.upstream.retries,
         up_outstanding = static_cast<long>(engine_defaults.upstream.max_outstanding);
    std::size_t cache_max_entries = engine_defaults.cache_max_entries;
    long master_pid = 0, preload_wait_s = 600, preload_at_once = -1;

    po::options_description opts(
        "Usage: localsa-fleet --nodes FILE [options]\n\n"
        "An all-to-all job start (every rank resolves a PathRecord to every other rank) on a\n"
        "simulated fabric: straight to the master SA (baseline), then through one LocalSa per\n"
        "simulated node, cold and warm. All upstream traffic shares this process's umad port.\n"
        "Run under umad2sim (scripts/fabric run), or on a real umad port (the vm tier: --ca;\n"
        "only there can the preload phase run, it needs RMPP). Prints JSON.\n\nOptions");
    opts.add_options()("help,h", "print this help")("ca", po::value(&ca),
                                                    "the umad device's CA (default: the first)")(
        "nodes", po::value(&nodes_file), "file of 'NODE LID' lines (scripts/fabric lid --all)")(
        "ranks", po::value(&ranks_wanted), "use the first N nodes as ranks (default: all)")(
        "sample-sources", po::value(&sample_sources),
        "baseline and cold send only the first K ranks' queries (to every peer): a sample of a "
        "job too big to send whole to the master (default: all)")(
        "phases", po::value(&phases_arg)->default_value(phases_arg),
        "comma-separated: baseline, cold, warm, preload (repeatable, in order)")(
        "depth", po::value(&depth)->default_value(depth),
        "job queries outstanding at most (all ranks together)")(
        "max-in-flight", po::value(&max_in_flight)->default_value(max_in_flight),
        "MADs on the shared port's wire at most (ibsim holds ~256 in total)")(
        "timeout-ms", po::value(&timeout_ms)->default_value(timeout_ms),
        "a job query unanswered after this long counts as a timeout")(
        "upstream-timeout-ms", po::value(&up_timeout_ms)->default_value(up_timeout_ms),
        "each LocalSa's try timeout towards the master (localsad's default)")(
        "upstream-retries", po::value(&up_retries)->default_value(up_retries),
        "each LocalSa's retries towards the master")(
        "upstream-outstanding", po::value(&up_outstanding)->default_value(up_outstanding),
        "each LocalSa's queries in flight to the master at most")(
        "cache-max-entries", po::value(&cache_max_entries)->default_value(cache_max_entries),
        "each LocalSa's cache size (0: no cache, every query goes to the master)")(
        "count-cmd", po::value(&count_cmd),
        "command printing the master's PathRecord request count (run around every phase)")(
        "count-all-cmd", po::value(&count_all_cmd),
        "command printing the master's SA request count of every attribute")(
        "master-pid", po::value(&master_pid),
        "the master SM's pid: its CPU seconds (/proc) around every phase")(
        "preload-wait-s", po::value(&preload_wait_s)->default_value(preload_wait_s),
        "the preload phase waits this long at most for every node's table")(
        "preload-at-once", po::value(&preload_at_once),
        "nodes preloading at the same time at most (default: --max-in-flight, each GetTable "
        "then goes on the wire when its try starts; 0: all at once, their tries run out while "
        "they wait in the shared port's queue)")("json", po::value(&out_file),
                                                 "write the JSON here instead of stdout")(
        "log-level", po::value(&log_level)->default_value(log_level), "spdlog level");
    po::variables_map vm;
    try {
        po::store(po::parse_command_line(argc, argv, opts), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        std::cerr << "localsa-fleet: " << e.what() << "\n";
        return 2;
    }
    if (vm.count("help")) {
        std::cout << opts << "\n";
        return 0;
    }
    if (nodes_file.empty()) {
        std::cerr << "localsa-fleet: --nodes is required (try --help)\n";
        return 2;
    }
    std::vector<std::string> phases;
    {
        std::stringstream ss(phases_arg);
        std::string p;
        while (std::getline(ss, p, ','))
            if (p == "baseline" || p == "cold" || p == "warm" || p == "preload")
                phases.push_back(p);
            else if (!p.empty()) {
                std::cerr << "localsa-fleet: unknown phase '" << p << "'\n";
                return 2;
            }
    }
    // Commands we run must not load umad2sim again (each would join the fabric as a client).
    ::unsetenv("LD_PRELOAD");

    auto logger = spdlog::stderr_color_mt("fleet");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(log_level));

    try {
        auto nodes = read_nodes(nodes_file);
        if (ranks_wanted && ranks_wanted < nodes.size())
            nodes.resize(ranks_wanted);
        if (nodes.size() < 2)
            throw std::runtime_error("need at least 2 ranks");
        const std::size_t n = nodes.size();

        boost::asio::io_context io;
        SteadyClock clock; // the engine's time: real time, as localsad's
        std::unique_ptr<fleet::SharedPort> shared;
        transport::UmadOptions uopt;
        uopt.sa_server =
            false; // the fleet's port only asks; requests reach the LocalSas in-process
        uopt.ca = ca;
        transport::UmadTransport wire(
            uopt, io.get_executor(), [&](const transport::InboundMad& in) { shared->on_wire(in); });
        shared = std::make_unique<fleet::SharedPort>(io.get_executor(), wire, max_in_flight,
                                                     std::chrono::milliseconds{timeout_ms});
        const auto own = wire.port();
        if (own.sm_lid == 0)
            throw std::runtime_error("the port has no SM LID");
        transport::MadAddress master;
        master.lid = own.sm_lid;
        master.sl = own.sm_sl;

        fleet::QueryEngine engine(io, depth, std::chrono::milliseconds{timeout_ms});
        const auto driver_owner =
            shared->add_owner([&](transport::InboundMad in) { engine.on_response(in.bytes); });
        wire.start();

        nlohmann::json out;
        out["ranks"] = n;
        out["fleet_port"] = {{"lid", own.lid}, {"gid", own.gid.str()}, {"sm_lid", own.sm_lid}};
        out["depth"] = depth;
        out["max_in_flight"] = max_in_flight;
        out["request_mask"] = kJobMask;

        // 1. Discovery: each rank's GID from the master (PathRecord by DLID from this port).
        const auto pr0 = run_count(count_cmd);
        std::vector<std::vector<std::uint8_t>> disc_req(n);
        auto disc = engine.run(
            n,
            [&](std::uint64_t q, std::uint32_t tid) {
                sa::PathRecord pr;
                pr.slid = own.lid;
                pr.dlid = nodes[q].lid;
                auto req = path_get(sa::pr_mask::kSlid | sa::pr_mask::kDlid, pr);
                mad::set_tid(req, tid);
                return shared->send(driver_owner, req, master, std::chrono::milliseconds{1000});
            },
            [&](std::uint64_t q, mad::Bytes resp) {
                const auto rec = sa::PathRecord::unpack(resp.subspan(mad::kSaHeaderSize));
                if (rec.dlid != nodes[q].lid || rec.dgid.is_zero())
                    return false;
                nodes[q].gid = rec.dgid;
                return true;
            });
        const auto pr1 = run_count(count_cmd);
        out["discovery"] = engine_json(disc);
        out["discovery"]["master_pr_queries"] = pr0 >= 0 && pr1 >= 0 ? pr1 - pr0 : -1;
        if (disc.ok != n)
            throw std::runtime_error("could not learn every rank's GID from the master (" +
                                     std::to_string(disc.ok) + " of " + std::to_string(n) + ")");

        // The job's requests: one template per source rank, DGID and TID patched in.
        std::vector<std::vector<std::uint8_t>> templ(n);
        for (std::size_t i = 0; i < n; ++i) {
            sa::PathRecord pr;
            pr.sgid = nodes[i].gid;
            pr.pkey = sa::kDefaultPKey;
            pr.numb_path = 1;
            pr.reversible = true;
            templ[i] = path_get(kJobMask, pr);
        }
        // The ranks whose queries the running phase sends (all but in a sampled phase).
        std::size_t sources = n;
        auto src_of = [&sources](std::uint64_t q) { return static_cast<std::size_t>(q % sources); };
        auto dst_of = [n, &sources](std::uint64_t q) {
            return static_cast<std::size_t>((q % sources + 1 + q / sources) % n);
        };
        std::uint16_t first_port = first_port_of("cold");
        auto job_request = [&](std::uint64_t q, std::uint32_t tid) {
            auto req = templ[src_of(q)];
            std::copy(nodes[dst_of(q)].gid.raw.begin(), nodes[dst_of(q)].gid.raw.end(),
                      req.begin() + mad::kSaHeaderSize + sa::pr_offset::kDgid);
            mad::store_be64(req, mad::kSaHeaderSize + sa::pr_offset::kServiceId,
                            service_id(first_port, dst_of(q)));
            mad::set_tid(req, tid);
            return req;
        };
        auto job_check = [&](std::uint64_t q, mad::Bytes resp) {
            if (resp[mad::offset::kMethod] != mad::method::kGetResp ||
                mad::load_be16(resp, mad::offset::kAttrId) != mad::attr::kPathRecord)
                return false;
            const auto rec = resp.subspan(mad::kSaHeaderSize);
            const auto& s = nodes[src_of(q)];
            const auto& d = nodes[dst_of(q)];
            using namespace sa::pr_offset;
            return std::equal(d.gid.raw.begin(), d.gid.raw.end(), rec.begin() + kDgid) &&
                   std::equal(s.gid.raw.begin(), s.gid.raw.end(), rec.begin() + kSgid) &&
                   mad::load_be16(rec, kDlid) == d.lid && mad::load_be16(rec, kSlid) == s.lid;
        };
        const std::uint64_t total = static_cast<std::uint64_t>(n) * (n - 1);
        out["job_queries"] = total;

        // 2. The local SAs, one per rank, created only if a phase uses them.
        std::vector<std::unique_ptr<fleet::NodeTransport>> transports;
        std::vector<std::unique_ptr<LocalSa>> sas;
        // The preload phase's Coherence per LocalSa (it goes before the LocalSas).
        std::unique_ptr<fleet::PreloadPhase> preload_phase;
        const bool want_sas = std::any_of(phases.begin(), phases.end(),
                                          [](const auto& p) { return p != "baseline"; });
        if (want_sas) {
            const long rss0 = max_rss_kb();
            LocalSaConfig cfg;
            cfg.upstream.try_timeout = std::chrono::milliseconds{up_timeout_ms};
            cfg.upstream.retries = static_cast<int>(up_retries);
            cfg.upstream.max_outstanding = static_cast<std::size_t>(up_outstanding);
            cfg.cache_max_entries = cache_max_entries;
            const auto all0 = run_count(count_all_cmd);
            for (std::size_t i = 0; i < n; ++i) {
                transport::PortState st;
                st.ca = "fleet-" + nodes[i].name;
                st.port = 1;
                st.lid = nodes[i].lid;
                st.sm_lid = own.sm_lid;
                st.sm_sl = own.sm_sl;
                st.state = transport::kPortActive;
                st.gid = nodes[i].gid;
                st.pkeys = {sa::kDefaultPKey};
                transports.push_back(std::make_unique<fleet::NodeTransport>(
                    *shared, st, [&engine](mad::Bytes b, const transport::MadAddress&) {
                        engine.on_response(b);
                    }));
                sas.push_back(
                    std::make_unique<LocalSa>(io.get_executor(), clock, *transports.back(), cfg));
                auto* sa = sas.back().get();
                transports.back()->set_owner(
                    shared->add_owner([sa](transport::InboundMad in) { sa->dispatch(in); }));
            }
            // Start-up as localsad does it (ClassPortInfo from the master), then wait for it.
            for (auto& sa : sas)
                sa->start();
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
            auto busy = [&] {
                for (auto& sa : sas)
                    if (sa->upstream().outstanding() || sa->upstream().queued())
                        return true;
                return false;
            };
            io.restart();
            while (busy() && std::chrono::steady_clock::now() < deadline)
                io.run_one_for(std::chrono::milliseconds{50});
            const auto all1 = run_count(count_all_cmd);
            const auto c = sum_counters(sas);
            out["startup"] = {{"local_sas", n},
                              {"upstream_requests", c.upstream_requests},
                              {"upstream_timeouts", c.upstream_timeouts},
                              {"master_sa_requests", all0 >= 0 && all1 >= 0 ? all1 - all0 : -1},
                              {"rss_growth_kb", max_rss_kb() - rss0}};
        }

        // 3. The phases.
        nlohmann::json results = nlohmann::json::array();
        for (const auto& phase : phases) {
            const bool direct = phase == "baseline";
            first_port = first_port_of(phase);
            const bool sampled =
                sample_sources && sample_sources < n && (phase == "baseline" || phase == "cold");
            sources = sampled ? sample_sources : n;
            const std::uint64_t phase_queries = static_cast<std::uint64_t>(sources) * (n - 1);
            if (phase == "cold")
                for (auto& sa : sas) // cold: also after a phase that filled the caches
                    sa->flush();
            const auto c0 = sum_counters(sas);
            shared->reset_peaks(); // the phase's own (the start-up's queue came before)
            const auto s0 = shared->stats();
            const auto before = run_count(count_cmd);
            const double cpu0 = cpu_seconds(master_pid);
            const long rss0 = max_rss_kb();
            nlohmann::json preload_json;
            if (phase == "preload") {
                // A cold start with preload: empty caches, then every node's table (localsad's
                // start-up preload, without subscriptions), then the job.
                std::vector<LocalSa*> nodes_sas;
                for (auto& sa : sas)
                    nodes_sas.push_back(sa.get());
                preload_phase = std::make_unique<fleet::PreloadPhase>(
                    io.get_executor(), clock, std::move(nodes_sas),
                    preload_at_once < 0 ? max_in_flight
                                        : static_cast<std::size_t>(preload_at_once));
                const auto t0 = std::chrono::steady_clock::now();
                const auto tx0 = sum_counters(sas).preload_transactions;
                preload_phase->start();
                const auto deadline = t0 + std::chrono::seconds{preload_wait_s};
                io.restart();
                while (!preload_phase->finished() && std::chrono::steady_clock::now() < deadline)
                    io.run_for(std::chrono::milliseconds{200});
                const auto st = preload_phase->states();
                std::size_t paths = 0;
                for (auto& sa : sas)
                    paths += sa->preload().size();
                const auto mid = run_count(count_cmd);
                preload_json = {
                    {"seconds",
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
                    {"transactions", sum_counters(sas).preload_transactions - tx0},
                    {"states", st},
                    {"at_once_max", preload_phase->max_preloading_seen()},
                    {"paths", paths},
                    {"master_pr_queries", before >= 0 && mid >= 0 ? mid - before : -1},
                    {"master_cpu_s", cpu0 >= 0 ? cpu_seconds(master_pid) - cpu0 : -1.0}};
                spdlog::info("preload: {}", preload_json.dump());
            }
            fleet::EngineResult r;
            if (direct) {
                r = engine.run(
                    phase_queries,
                    [&](std::uint64_t q, std::uint32_t tid) {
                        return shared->send(driver_owner, job_request(q, tid), master,
                                            std::chrono::milliseconds{timeout_ms});
                    },
                    job_check);
            } else {
                r = engine.run(
                    phase_queries,
                    [&](std::uint64_t q, std::uint32_t tid) {
                        transport::InboundMad in;
                        in.bytes = job_request(q, tid);
                        in.from.lid = nodes[src_of(q)].lid;
                        sas[src_of(q)]->dispatch(in);
                        return true;
                    },
                    job_check);
            }
            // Let upstream stragglers (retries of timed-out tries) land before counting.
            io.restart();
            io.run_for(std::chrono::milliseconds{50});
            const auto after = run_count(count_cmd);
            const double cpu1 = cpu_seconds(master_pid);
            const auto c1 = sum_counters(sas);
            const auto& s1 = shared->stats();
            auto j = engine_json(r);
            j["phase"] = phase;
            j["route"] = direct ? "master" : "local_sa";
            j["sources"] = sources;
            j["service_ids"] = {{"first", service_id(first_port, 0)},
                                {"last", service_id(first_port, n - 1)}};
            j["master_pr_queries"] = before >= 0 && after >= 0 ? after - before : -1;
            j["master_cpu_s"] = cpu0 >= 0 && cpu1 >= 0 ? cpu1 - cpu0 : -1.0;
            if (!preload_json.is_null())
                j["preload"] = preload_json;
            j["answered_locally"] = direct ? 0 : c1.pr_cache_hits - c0.pr_cache_hits;
            j["fleet_upstream_requests"] = s1.requests_sent - s0.requests_sent;
            j["shared_port"] = {{"max_in_flight_seen", s1.max_in_flight_seen},
                                {"max_queued_seen", s1.max_queued_seen},
                                {"unmatched", s1.unmatched - s0.unmatched},
                                {"expired", s1.expired - s0.expired}};
            if (!direct)
                j["local_sa_counters"] = counter_delta(c0, c1);
            j["rss_growth_kb"] = max_rss_kb() - rss0;
            results.push_back(j);
            if (!out_file.empty()) {
                // What is done so far, in case a later phase never ends (a frozen simulation)
                auto partial = out;
                partial["phases"] = results;
                partial["partial"] = true;
                std::ofstream(out_file) << partial.dump(1) << "\n";
            }
            spdlog::info("{}: {} queries, {} ok, {} errors, {:.3f} s, master +{}", phase, r.queries,
                         r.ok, r.errors(), r.seconds, j["master_pr_queries"].dump());
        }
        out["phases"] = results;
        if (!sas.empty()) {
            std::size_t entries = 0;
            for (auto& sa : sas)
                entries += sa->cache().size();
            out["cache_entries"] = entries;
        }
        out["shared_port"] = {{"requests_sent", shared->stats().requests_sent},
                              {"responses", shared->stats().responses},
                              {"unmatched", shared->stats().unmatched},
                              {"expired", shared->stats().expired},
                              {"max_in_flight_seen", shared->stats().max_in_flight_seen}};
        out["max_rss_kb"] = max_rss_kb();
        if (out_file.empty()) {
            std::cout << out.dump(1) << std::endl;
        } else {
            std::ofstream f(out_file);
            f << out.dump(1) << "\n";
        }
        // The LocalSas go before the transports and the port they use.
        preload_phase.reset();
        sas.clear();
        transports.clear();
        bool all_ok = true;
        for (const auto& p : results)
            all_ok = all_ok && p["errors"].get<std::uint64_t>() == 0;
        return all_ok ? 0 : 1;
    } catch (const std::exception& e) {
        spdlog::critical("{}", e.what());
        return 1;
    }
}
