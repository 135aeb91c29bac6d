// localsactl: talk to a running localsad (stats, dump, flush) and send SA queries to any LID.
#include "control/client.hpp"
#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "ib/response.hpp"
#include "tools/health.hpp"
#include "tools/sa_client.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

using namespace localsa;
namespace po = boost::program_options;

namespace {

const char* kUsage =
    "Usage: localsactl [--control PATH] stats [--format json|prometheus] | dump | flush | health\n"
    "       localsactl [--ca CA] [--port N] query pr --sgid GID --dgid GID [options]\n"
    "       localsactl [--ca CA] [--port N] query sa --attr ID [options]\n"
    "\n"
    "Commands:\n"
    "  stats         print the daemon's counters as JSON, or with --format prometheus in the\n"
    "                Prometheus text format (for node-exporter's textfile collector)\n"
    "  health        one line: OK, WARNING or CRITICAL and why (port ACTIVE, master SA\n"
    "                answered, preload, kernel sa_redirect); exit 0, 1 or 2 (NHC, Slurm)\n"
    "  dump          print the cached PathRecord answers as JSON\n"
    "  flush         empty the daemon's cache\n"
    "  query pr      send one SubnAdmGet(PathRecord) and print the answer\n"
    "  query sa      send one SA request of any attribute and print the answer\n"
    "\n"
    "Queries go to --lid (default: the port's SM LID, i.e. the master SA); point --lid at a\n"
    "node's own LID to ask its local SA. Exit status: 0 answered, 1 no answer, 2 usage error.\n";

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string hex(mad::Bytes b) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (auto c : b) {
        s += d[c >> 4];
        s += d[c & 15];
    }
    return s;
}

std::vector<std::uint8_t> unhex(const std::string& s) {
    if (s.size() % 2)
        throw UsageError("hex data must have an even number of digits");
    std::vector<std::uint8_t> out;
    for (std::size_t i = 0; i < s.size(); i += 2) {
        const auto byte = s.substr(i, 2);
        if (byte.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
            throw UsageError("bad hex digit in '" + byte + "'");
        out.push_back(static_cast<std::uint8_t>(std::stoul(byte, nullptr, 16)));
    }
    return out;
}

std::uint64_t parse_number(const std::string& s, const char* what, std::uint64_t max,
                           std::uint64_t min = 0) {
    std::uint64_t v = 0;
    try {
        std::size_t used = 0;
        if (s.empty() || s[0] == '-' || s[0] == '+' ||
            std::isspace(static_cast<unsigned char>(s[0])))
            throw std::invalid_argument(s);
        v = std::stoull(s, &used, 0);
        if (used != s.size())
            throw std::invalid_argument(s);
    } catch (const std::exception&) {
        throw UsageError(std::string("bad ") + what + " '" + s + "' (not a number)");
    }
    if (v < min || v > max)
        throw UsageError(std::string("bad ") + what + " '" + s +
                         "' (allowed: " + std::to_string(min) + " to " + std::to_string(max) + ")");
    return v;
}

long bounded(const po::variables_map& v, const char* name, long min, long max) {
    const auto x = v[name].as<long>();
    if (x < min || x > max)
        throw UsageError(std::string("--") + name + " must be between " + std::to_string(min) +
                         " and " + std::to_string(max) + " (got " + std::to_string(x) + ")");
    return x;
}

sa::Gid parse_gid(const std::string& s, const char* what) {
    auto g = sa::Gid::parse(s);
    if (!g)
        throw UsageError(std::string("bad ") + what + " '" + s + "' (expected e.g. fe80::2)");
    return *g;
}

std::string default_control_path() {
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(control::kSocketDir, ec))
        if (e.path().extension() == ".sock")
            found.push_back(e.path());
    if (found.size() == 1)
        return found.front();
    throw UsageError(
        (found.empty() ? "no localsad control socket in " : "several localsad sockets in ") +
        std::string(control::kSocketDir) + "; use --control");
}

std::uint64_t fresh_tid() {
    return std::random_device{}() | 1;
}

void print_records(const std::vector<std::uint8_t>& resp, bool raw) {
    const auto status = mad::load_be16(resp, mad::offset::kStatus);
    std::cout << "status=" << mad::status_name(status) << "\n";
    if (status == 0 && mad::load_be16(resp, mad::offset::kAttrId) == mad::attr::kPathRecord) {
        const auto recs = sa::response_records(resp, sa::PathRecord::kSize);
        for (std::size_t off = 0; off + sa::PathRecord::kSize <= recs.bytes.size();
             off += sa::PathRecord::kSize) {
            const auto pr =
                sa::PathRecord::unpack(mad::Bytes{recs.bytes}.subspan(off, sa::PathRecord::kSize));
            std::printf("dlid=%u slid=%u sl=%u mtu=%u rate=%u pkt_life=%u pkey=0x%04x "
                        "reversible=%u sgid=%s dgid=%s\n",
                        pr.dlid, pr.slid, pr.sl, pr.mtu, pr.rate, pr.packet_life, pr.pkey,
                        pr.reversible, pr.sgid.str().c_str(), pr.dgid.str().c_str());
        }
    }
    std::fflush(stdout);
    if (raw)
        std::cout << "raw=" << hex(resp) << "\n";
}

int run_query(const po::variables_map& vm, const std::vector<std::string>& args) {
    po::options_description q("query options");
    q.add_options()("lid", po::value<std::string>(), "LID to ask (default: the SM LID)")(
        "timeout-ms", po::value<long>()->default_value(1000),
        "wait this long for the answer")("raw", "also print the whole response in hex")(
        "sgid", po::value<std::string>(), "PathRecord SGID")("dgid", po::value<std::string>(),
                                                             "PathRecord DGID")(
        "dlid", po::value<std::string>(), "PathRecord DLID")("pkey", po::value<std::string>(),
                                                             "PathRecord PKey")(
        "sl", po::value<std::string>(), "PathRecord SL")("service-id", po::value<std::string>(),
                                                         "PathRecord ServiceID")(
        "reversible", po::value<std::string>(), "PathRecord Reversible (0 or 1)")(
        "numb-path", po::value<std::string>(), "PathRecord NumbPath")(
        "table", "GetTable instead of Get")("attr", po::value<std::string>(),
                                            "query sa: attribute ID (e.g. 0x11 NodeRecord)")(
        "method", po::value<std::string>()->default_value("get"),
        "query sa: get, gettable, set or delete")(
        "comp-mask", po::value<std::string>()->default_value("0"), "query sa: component mask")(
        "data", po::value<std::string>()->default_value(""), "query sa: record bytes in hex")(
        "hex", po::value<std::string>(), "query raw: the whole MAD in hex, sent as it is")(
        "watch-ms", po::value<long>(),
        "ask again every --interval-ms for this long; print each change of status with a "
        "timestamp (ms since the epoch)")("interval-ms", po::value<long>()->default_value(20),
                                          "pause between --watch-ms queries");
    if (args.empty())
        throw UsageError("query needs a kind: pr, sa or raw");
    po::variables_map qv;
    try {
        po::store(po::command_line_parser(std::vector<std::string>(args.begin() + 1, args.end()))
                      .options(q)
                      .run(),
                  qv);
    } catch (const po::error& e) {
        throw UsageError(e.what());
    }
    const auto& kind = args.front();
    if (kind != "pr" && kind != "sa" && kind != "raw")
        throw UsageError("unknown query kind '" + kind + "' (pr, sa or raw)");
    const auto port_number = vm["port"].as<int>();
    if (port_number < 1 || port_number > 254)
        throw UsageError("--port must be between 1 and 254");
    bounded(qv, "timeout-ms", 1, 600'000);
    bounded(qv, "interval-ms", 0, 600'000);
    if (qv.count("watch-ms"))
        bounded(qv, "watch-ms", 0, 86'400'000);
    // Everything given is checked before the port is opened: a typo costs no query.
    // 0: not given (a LID given is 1 or more).
    const std::uint16_t lid_arg =
        qv.count("lid") ? static_cast<std::uint16_t>(
                              parse_number(qv["lid"].as<std::string>(), "LID", 0xbfff, 1))
                        : 0;

    const auto timeout = std::chrono::milliseconds{qv["timeout-ms"].as<long>()};

    std::vector<std::uint8_t> request;
    if (kind == "pr") {
        mad::SaMad m;
        m.header.method = qv.count("table") ? mad::method::kGetTable : mad::method::kGet;
        m.header.attr_id = mad::attr::kPathRecord;
        m.header.tid = fresh_tid();
        sa::PathRecord pr;
        std::uint64_t mask = 0;
        if (qv.count("sgid")) {
            pr.sgid = parse_gid(qv["sgid"].as<std::string>(), "SGID");
            mask |= sa::pr_mask::kSgid;
        }
        if (qv.count("dgid")) {
            pr.dgid = parse_gid(qv["dgid"].as<std::string>(), "DGID");
            mask |= sa::pr_mask::kDgid;
        }
        if (qv.count("dlid")) {
            pr.dlid = static_cast<std::uint16_t>(
                parse_number(qv["dlid"].as<std::string>(), "DLID", 0xffff));
            mask |= sa::pr_mask::kDlid;
        }
        if (qv.count("pkey")) {
            pr.pkey = static_cast<std::uint16_t>(
                parse_number(qv["pkey"].as<std::string>(), "PKey", 0xffff));
            mask |= sa::pr_mask::kPKey;
        }
        if (qv.count("sl")) {
            pr.sl = static_cast<std::uint8_t>(parse_number(qv["sl"].as<std::string>(), "SL", 15));
            mask |= sa::pr_mask::kSl;
        }
        if (qv.count("service-id")) {
            pr.service_id =
                parse_number(qv["service-id"].as<std::string>(), "ServiceID", ~std::uint64_t{0});
            mask |= sa::pr_mask::kServiceId;
        }
        if (qv.count("reversible")) {
            pr.reversible = parse_number(qv["reversible"].as<std::string>(), "Reversible", 1);
            mask |= sa::pr_mask::kReversible;
        }
        if (qv.count("numb-path")) {
            pr.numb_path = static_cast<std::uint8_t>(
                parse_number(qv["numb-path"].as<std::string>(), "NumbPath", 127));
            mask |= sa::pr_mask::kNumbPath;
        }
        m.comp_mask = mask;
        pr.pack(m.data);
        request = m.pack();
    } else if (kind == "sa") {
        if (!qv.count("attr"))
            throw UsageError("query sa needs --attr");
        static const std::pair<const char*, std::uint8_t> kMethods[] = {
            {"get", mad::method::kGet},
            {"gettable", mad::method::kGetTable},
            {"set", mad::method::kSet},
            {"delete", mad::method::kDelete}};
        const auto name = qv["method"].as<std::string>();
        auto it = std::find_if(std::begin(kMethods), std::end(kMethods),
                               [&](auto& p) { return name == p.first; });
        if (it == std::end(kMethods))
            throw UsageError("unknown method '" + name + "'");
        mad::SaMad m;
        m.header.method = it->second;
        m.header.attr_id =
            static_cast<std::uint16_t>(parse_number(qv["attr"].as<std::string>(), "attr", 0xffff));
        m.header.tid = fresh_tid();
        m.comp_mask =
            parse_number(qv["comp-mask"].as<std::string>(), "comp mask", ~std::uint64_t{0});
        const auto data = unhex(qv["data"].as<std::string>());
        if (data.size() > mad::kSaDataSize)
            throw UsageError("--data longer than 200 bytes");
        std::copy(data.begin(), data.end(), m.data.begin());
        request = m.pack();
    } else if (kind == "raw") {
        if (!qv.count("hex"))
            throw UsageError("query raw needs --hex");
        request = unhex(qv["hex"].as<std::string>());
        if (request.size() < mad::kMadHeaderSize)
            throw UsageError("a MAD needs at least 24 bytes");
        if (request.size() > mad::kMadSize)
            throw UsageError("a MAD has at most 256 bytes (got " + std::to_string(request.size()) +
                             ")");
    }

    tools::SaClient client(vm["ca"].as<std::string>(), port_number);
    const auto lid = lid_arg ? lid_arg : client.port().sm_lid;

    if (qv.count("watch-ms")) {
        using clock = std::chrono::system_clock;
        const auto until = clock::now() + std::chrono::milliseconds{qv["watch-ms"].as<long>()};
        const auto pause = std::chrono::milliseconds{qv["interval-ms"].as<long>()};
        std::string last;
        while (clock::now() < until) {
            const auto sent = clock::now();
            mad::set_tid(request, fresh_tid());
            auto r = client.query(request, lid, timeout);
            const auto st = r ? mad::status_name(mad::load_be16(*r, mad::offset::kStatus))
                              : std::string("none");
            if (st != last) {
                const auto ms =
                    std::chrono::duration_cast<std::chrono::milliseconds>(sent.time_since_epoch())
                        .count();
                std::cout << "t=" << ms << " status=" << st << std::endl;
                last = st;
            }
            std::this_thread::sleep_for(pause);
        }
        return 0;
    }
    auto resp = client.query(request, lid, timeout);
    if (!resp) {
        std::cerr << "localsactl: no answer from LID " << lid << " within " << timeout.count()
                  << " ms\n";
        return 1;
    }
    print_records(*resp, qv.count("raw") > 0);
    return 0;
}

std::optional<std::string> read_kernel_redirect() {
    std::ifstream in("/sys/module/ib_core/parameters/sa_redirect");
    if (!in)
        return std::nullopt;
    std::string line;
    std::getline(in, line);
    return line;
}

int run_health(const po::variables_map& vm) {
    tools::HealthVerdict verdict;
    std::string path;
    try {
        path = vm.count("control") ? vm["control"].as<std::string>() : default_control_path();
        verdict = tools::evaluate_health(control::control_request(path, {{"cmd", "stats"}}),
                                         read_kernel_redirect());
    } catch (const UsageError& e) {
        verdict = tools::unreachable(control::kSocketDir, e.what());
    } catch (const std::exception& e) {
        verdict = tools::unreachable(path, e.what());
    }
    std::cout << verdict.line << "\n";
    return static_cast<int>(verdict.health);
}

} // namespace

int main(int argc, char** argv) {
    po::options_description global("Options");
    global.add_options()("help,h", "print this help")("control", po::value<std::string>(),
                                                      "the daemon's control socket")(
        "ca", po::value<std::string>()->default_value(""), "HCA for queries (default: first)")(
        "port", po::value<int>()->default_value(1), "HCA port for queries");
    po::options_description hidden;
    hidden.add_options()("command", po::value<std::vector<std::string>>());
    po::options_description all;
    all.add(global).add(hidden);
    po::positional_options_description pos;
    pos.add("command", -1);

    try {
        po::variables_map vm;
        auto parsed = po::command_line_parser(argc, argv)
                          .options(all)
                          .positional(pos)
                          .allow_unregistered()
                          .run();
        po::store(parsed, vm);
        po::notify(vm);
        auto rest = po::collect_unrecognized(parsed.options, po::include_positional);
        if (vm.count("help") || rest.empty()) {
            std::cout << kUsage << "\n" << global;
            return vm.count("help") ? 0 : 2;
        }
        const auto cmd = rest.front();
        if (cmd == "health") {
            if (rest.size() != 1)
                throw UsageError("health takes no arguments");
            return run_health(vm);
        }
        if (cmd == "stats" && rest.size() == 3 && rest[1] == "--format") {
            if (rest[2] != "json" && rest[2] != "prometheus")
                throw UsageError("--format must be json or prometheus");
            const auto path =
                vm.count("control") ? vm["control"].as<std::string>() : default_control_path();
            if (rest[2] == "json")
                rest.resize(1);
            else {
                const auto answer =
                    control::control_request(path, {{"cmd", "stats"}, {"format", "prometheus"}});
                if (!answer.contains("prometheus"))
                    throw std::runtime_error("the daemon sent no Prometheus text: " +
                                             answer.dump());
                std::cout << answer["prometheus"].get<std::string>();
                return 0;
            }
        }
        if (cmd == "stats" || cmd == "dump" || cmd == "flush") {
            if (rest.size() != 1)
                throw UsageError(cmd + " takes no arguments");
            const auto path =
                vm.count("control") ? vm["control"].as<std::string>() : default_control_path();
            const auto answer = control::control_request(path, {{"cmd", cmd}});
            std::cout << answer.dump(2) << "\n";
            return answer.contains("error") ? 1 : 0;
        }
        if (cmd == "query")
            return run_query(vm, std::vector<std::string>(rest.begin() + 1, rest.end()));
        throw UsageError("unknown command '" + cmd + "'");
    } catch (const UsageError& e) {
        std::cerr << "localsactl: " << e.what() << "\nTry 'localsactl --help'.\n";
        return 2;
    } catch (const po::error& e) {
        std::cerr << "localsactl: " << e.what() << "\nTry 'localsactl --help'.\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "localsactl: " << e.what() << "\n";
        return 1;
    }
}
