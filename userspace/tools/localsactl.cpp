// localsactl: talk to a running localsad (stats, dump, flush, health) and send SA queries to any
// LID. Subcommands each with their own --help (CLI11); human-readable output, -j for JSON.
#include "control/client.hpp"
#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"
#include "ib/response.hpp"
#include "tools/health.hpp"
#include "tools/sa_client.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <thread>

using namespace localsa;

namespace {

// Exit statuses (also in the man page).
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // no answer, the daemon unreachable or refusing
constexpr int kExitUsage = 2;   // bad command line
constexpr int kExitSaError = 3; // query: answered with an error status

const char* kDescription =
    "Talk to a running localsad (stats, dump, flush, health) and send SA queries to any LID.\n"
    "The daemon is the one serving -C CA -P PORT (its socket /run/localsa/CA-PORT.sock), the only\n"
    "one running, or --control PATH. Queries go out of -C CA -P PORT (default: the first HCA, "
    "port\n"
    "1) to --lid (default: the port's SM LID, the master SA).\n"
    "Exit status: 0 done, 1 no answer or the daemon failed, 2 usage error, 3 query answered\n"
    "with an error status; health: 0 OK, 1 WARNING, 2 CRITICAL.";

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

long bounded(long x, const char* name, long min, long max) {
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

std::uint64_t fresh_tid() {
    return std::random_device{}() | 1;
}

// Which daemon, and which HCA port queries leave from.
struct Instance {
    std::string control; // --control: the socket itself
    std::string ca;      // -C
    int port = 1;        // -P
    bool port_given = false;
    bool json = false; // -j
};

// The control socket of the instance: --control, the socket localsad names after -C and -P, or
// the only socket in kSocketDir (of port -P, if given).
std::string control_path(const Instance& in) {
    if (!in.control.empty())
        return in.control;
    if (!in.ca.empty())
        return control::default_socket_path(in.ca, in.port);
    const auto suffix = in.port_given ? "-" + std::to_string(in.port) + ".sock" : ".sock";
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(control::kSocketDir, ec)) {
        const auto name = e.path().filename().string();
        if (name.size() > suffix.size() && name.ends_with(suffix))
            found.push_back(e.path());
    }
    if (found.size() == 1)
        return found.front();
    std::sort(found.begin(), found.end());
    std::string names;
    for (const auto& f : found)
        names += (names.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();
    throw UsageError(found.empty()
                         ? "no localsad control socket" +
                               (in.port_given ? " of port " + std::to_string(in.port) : "") +
                               " in " + control::kSocketDir +
                               " (is localsad running? -C CA -P PORT or --control PATH)"
                         : "several localsad sockets in " + std::string(control::kSocketDir) +
                               " (" + names + "): pick one with -C CA -P PORT or --control PATH");
}

void check_port(const Instance& in) {
    if (in.port < 1 || in.port > 254)
        throw UsageError("--port must be between 1 and 254 (got " + std::to_string(in.port) + ")");
}

// The daemon's answer to `request`; a daemon's error ends localsactl with exit 1.
nlohmann::json ask_daemon(const Instance& in, const nlohmann::json& request) {
    auto answer = control::control_request(control_path(in), request);
    if (answer.contains("error"))
        throw std::runtime_error(answer["error"].is_string() ? answer["error"].get<std::string>()
                                                             : answer["error"].dump());
    return answer;
}

std::string plain(const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
}

// "name value" lines, nested objects as "object.name value".
void print_stats_text(const nlohmann::json& stats) {
    for (const auto& [name, value] : stats.items()) {
        if (value.is_object()) {
            for (const auto& [sub, v] : value.items())
                std::cout << name << "." << sub << " " << plain(v) << "\n";
        } else {
            std::cout << name << " " << plain(value) << "\n";
        }
    }
}

// One line per cached answer, then one per record.
void print_dump_text(const nlohmann::json& dump) {
    const auto& entries = dump.at("entries");
    std::cout << entries.size() << " cached answers\n";
    for (const auto& e : entries) {
        std::cout << plain(e.at("method")) << " comp_mask=" << plain(e.at("comp_mask"))
                  << " status=" << plain(e.at("status"))
                  << " expires_in_ms=" << plain(e.at("expires_in_ms")) << "\n";
        for (const auto& r : e.at("records")) {
            char pkey[8];
            std::snprintf(pkey, sizeof pkey, "0x%04x", r.at("pkey").get<unsigned>());
            std::cout << "  dlid=" << r.at("dlid") << " slid=" << r.at("slid")
                      << " sl=" << r.at("sl") << " mtu=" << r.at("mtu") << " rate=" << r.at("rate")
                      << " pkt_life=" << r.at("pkt_life") << " pkey=" << pkey
                      << " sgid=" << plain(r.at("sgid")) << " dgid=" << plain(r.at("dgid")) << "\n";
        }
    }
}

int run_stats(const Instance& in, std::string format) {
    if (format.empty())
        format = in.json ? "json" : "text";
    if (format == "prometheus") {
        const auto answer = ask_daemon(in, {{"cmd", "stats"}, {"format", "prometheus"}});
        if (!answer.contains("prometheus"))
            throw std::runtime_error("the daemon sent no Prometheus text: " + answer.dump());
        std::cout << answer["prometheus"].get<std::string>();
        return kExitOk;
    }
    const auto answer = ask_daemon(in, {{"cmd", "stats"}});
    if (format == "json")
        std::cout << answer.dump(2) << "\n";
    else
        print_stats_text(answer);
    return kExitOk;
}

int run_dump(const Instance& in) {
    const auto answer = ask_daemon(in, {{"cmd", "dump"}});
    if (in.json)
        std::cout << answer.dump(2) << "\n";
    else
        print_dump_text(answer);
    return kExitOk;
}

int run_flush(const Instance& in) {
    const auto answer = ask_daemon(in, {{"cmd", "flush"}});
    if (in.json)
        std::cout << answer.dump(2) << "\n";
    else
        std::cout << "flushed " << plain(answer.value("flushed", nlohmann::json(0)))
                  << " cached answers\n";
    return kExitOk;
}

std::optional<std::string> read_kernel_redirect() {
    std::ifstream in("/sys/module/ib_core/parameters/sa_redirect");
    if (!in)
        return std::nullopt;
    std::string line;
    std::getline(in, line);
    return line;
}

int run_health(const Instance& in) {
    tools::HealthVerdict verdict;
    std::string path;
    try {
        path = control_path(in);
        verdict = tools::evaluate_health(control::control_request(path, {{"cmd", "stats"}}),
                                         read_kernel_redirect());
    } catch (const UsageError& e) {
        verdict = tools::unreachable(control::kSocketDir, e.what());
    } catch (const std::exception& e) {
        verdict = tools::unreachable(path, e.what());
    }
    if (in.json)
        std::cout << nlohmann::json{{"health", static_cast<int>(verdict.health)},
                                    {"line", verdict.line}}
                         .dump()
                  << "\n";
    else
        std::cout << verdict.line << "\n";
    return static_cast<int>(verdict.health);
}

bool given(const CLI::App& q, const std::string& name) {
    return q.count("--" + name) > 0;
}

std::string value(const CLI::App& q, const std::string& name, const std::string& fallback = {}) {
    const auto* o = q.get_option("--" + name);
    return o->count() ? o->as<std::string>() : fallback;
}

long number(const CLI::App& q, const std::string& name, long fallback) {
    const auto* o = q.get_option("--" + name);
    return o->count() ? o->as<long>() : fallback;
}

nlohmann::json records_json(const std::vector<std::uint8_t>& resp) {
    nlohmann::json records = nlohmann::json::array();
    const auto status = mad::load_be16(resp, mad::offset::kStatus);
    if (status != 0 || mad::load_be16(resp, mad::offset::kAttrId) != mad::attr::kPathRecord)
        return records;
    const auto recs = sa::response_records(resp, sa::PathRecord::kSize);
    for (std::size_t off = 0; off + sa::PathRecord::kSize <= recs.bytes.size();
         off += sa::PathRecord::kSize) {
        const auto pr =
            sa::PathRecord::unpack(mad::Bytes{recs.bytes}.subspan(off, sa::PathRecord::kSize));
        records.push_back({{"dlid", pr.dlid},
                           {"slid", pr.slid},
                           {"sl", pr.sl},
                           {"mtu", pr.mtu},
                           {"rate", pr.rate},
                           {"pkt_life", pr.packet_life},
                           {"pkey", pr.pkey},
                           {"reversible", pr.reversible},
                           {"sgid", pr.sgid.str()},
                           {"dgid", pr.dgid.str()}});
    }
    return records;
}

void print_answer(const std::vector<std::uint8_t>& resp, bool raw, bool json) {
    const auto status = mad::load_be16(resp, mad::offset::kStatus);
    if (json) {
        nlohmann::json j{{"status", mad::status_name(status)},
                         {"status_code", status},
                         {"records", records_json(resp)}};
        if (raw)
            j["raw"] = hex(resp);
        std::cout << j.dump(2) << "\n";
        return;
    }
    std::cout << "status=" << mad::status_name(status) << "\n";
    for (const auto& r : records_json(resp))
        std::printf("dlid=%u slid=%u sl=%u mtu=%u rate=%u pkt_life=%u pkey=0x%04x "
                    "reversible=%u sgid=%s dgid=%s\n",
                    r["dlid"].get<unsigned>(), r["slid"].get<unsigned>(), r["sl"].get<unsigned>(),
                    r["mtu"].get<unsigned>(), r["rate"].get<unsigned>(),
                    r["pkt_life"].get<unsigned>(), r["pkey"].get<unsigned>(),
                    r["reversible"].get<bool>() ? 1u : 0u, r["sgid"].get<std::string>().c_str(),
                    r["dgid"].get<std::string>().c_str());
    std::fflush(stdout);
    if (raw)
        std::cout << "raw=" << hex(resp) << "\n";
}

int run_query(const Instance& in, const CLI::App& q) {
    const auto kind = q.get_name();
    check_port(in);
    const auto timeout_ms = bounded(number(q, "timeout-ms", 1000), "timeout-ms", 1, 600'000);
    const auto interval_ms = bounded(number(q, "interval-ms", 20), "interval-ms", 0, 600'000);
    // -1: not given
    const auto watch_ms =
        given(q, "watch-ms") ? bounded(number(q, "watch-ms", 0), "watch-ms", 0, 86'400'000) : -1;
    // Everything given is checked before the port is opened: a typo costs no query.
    // 0: not given (a LID given is 1 or more).
    const std::uint16_t lid_arg =
        given(q, "lid")
            ? static_cast<std::uint16_t>(parse_number(value(q, "lid"), "LID", 0xbfff, 1))
            : 0;
    const auto timeout = std::chrono::milliseconds{timeout_ms};

    std::vector<std::uint8_t> request;
    if (kind == "pr") {
        mad::SaMad m;
        m.header.method = given(q, "table") ? mad::method::kGetTable : mad::method::kGet;
        m.header.attr_id = mad::attr::kPathRecord;
        m.header.tid = fresh_tid();
        sa::PathRecord pr;
        std::uint64_t mask = 0;
        if (given(q, "sgid")) {
            pr.sgid = parse_gid(value(q, "sgid"), "SGID");
            mask |= sa::pr_mask::kSgid;
        }
        if (given(q, "dgid")) {
            pr.dgid = parse_gid(value(q, "dgid"), "DGID");
            mask |= sa::pr_mask::kDgid;
        }
        if (given(q, "dlid")) {
            pr.dlid = static_cast<std::uint16_t>(parse_number(value(q, "dlid"), "DLID", 0xffff));
            mask |= sa::pr_mask::kDlid;
        }
        if (given(q, "pkey")) {
            pr.pkey = static_cast<std::uint16_t>(parse_number(value(q, "pkey"), "PKey", 0xffff));
            mask |= sa::pr_mask::kPKey;
        }
        if (given(q, "sl")) {
            pr.sl = static_cast<std::uint8_t>(parse_number(value(q, "sl"), "SL", 15));
            mask |= sa::pr_mask::kSl;
        }
        if (given(q, "service-id")) {
            pr.service_id = parse_number(value(q, "service-id"), "ServiceID", ~std::uint64_t{0});
            mask |= sa::pr_mask::kServiceId;
        }
        if (given(q, "reversible")) {
            pr.reversible = parse_number(value(q, "reversible"), "Reversible", 1);
            mask |= sa::pr_mask::kReversible;
        }
        if (given(q, "numb-path")) {
            pr.numb_path =
                static_cast<std::uint8_t>(parse_number(value(q, "numb-path"), "NumbPath", 127));
            mask |= sa::pr_mask::kNumbPath;
        }
        m.comp_mask = mask;
        pr.pack(m.data);
        request = m.pack();
    } else if (kind == "sa") {
        if (!given(q, "attr"))
            throw UsageError("query sa needs --attr");
        static const std::pair<const char*, std::uint8_t> kMethods[] = {
            {"get", mad::method::kGet},
            {"gettable", mad::method::kGetTable},
            {"set", mad::method::kSet},
            {"delete", mad::method::kDelete}};
        const auto name = value(q, "method", "get");
        auto it = std::find_if(std::begin(kMethods), std::end(kMethods),
                               [&](auto& p) { return name == p.first; });
        if (it == std::end(kMethods))
            throw UsageError("unknown method '" + name + "'");
        mad::SaMad m;
        m.header.method = it->second;
        m.header.attr_id =
            static_cast<std::uint16_t>(parse_number(value(q, "attr"), "attr", 0xffff));
        m.header.tid = fresh_tid();
        m.comp_mask = parse_number(value(q, "comp-mask", "0"), "comp mask", ~std::uint64_t{0});
        const auto data = unhex(value(q, "data", ""));
        if (data.size() > mad::kSaDataSize)
            throw UsageError("--data longer than 200 bytes");
        std::copy(data.begin(), data.end(), m.data.begin());
        request = m.pack();
    } else if (kind == "raw") {
        if (!given(q, "hex"))
            throw UsageError("query raw needs --hex");
        request = unhex(value(q, "hex"));
        if (request.size() < mad::kMadHeaderSize)
            throw UsageError("a MAD needs at least 24 bytes");
        if (request.size() > mad::kMadSize)
            throw UsageError("a MAD has at most 256 bytes (got " + std::to_string(request.size()) +
                             ")");
    }

    tools::SaClient client(in.ca, in.port);
    const auto lid = lid_arg ? lid_arg : client.port().sm_lid;

    if (watch_ms >= 0) {
        using clock = std::chrono::system_clock;
        const auto until = clock::now() + std::chrono::milliseconds{watch_ms};
        const auto pause = std::chrono::milliseconds{interval_ms};
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
        return kExitOk;
    }
    auto resp = client.query(request, lid, timeout);
    if (!resp) {
        std::cerr << "localsactl: no answer from LID " << lid << " within " << timeout.count()
                  << " ms\n";
        return kExitFailed;
    }
    print_answer(*resp, given(q, "raw"), in.json);
    return mad::load_be16(*resp, mad::offset::kStatus) == 0 ? kExitOk : kExitSaError;
}

// The options every query kind takes.
void add_common_query_options(CLI::App& q) {
    q.add_option("--lid", "LID to ask (default: the port's SM LID, the master SA)")
        ->type_name("LID");
    q.add_option("--timeout-ms", "wait this long for the answer (default 1000)")->type_name("MS");
    q.add_flag("--raw")->description("also print the whole response in hex");
    q.add_option("--watch-ms", "ask again every --interval-ms for this long; print each change "
                               "of status with a timestamp (ms since the epoch)")
        ->type_name("MS");
    q.add_option("--interval-ms", "pause between --watch-ms queries (default 20)")->type_name("MS");
}

// "The following arguments were not expected: a b" -> "a b"
std::string extras_of(const CLI::App& app) {
    std::string s;
    for (const auto& r : app.remaining())
        s += (s.empty() ? "" : " ") + r;
    return s;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{kDescription, "localsactl"};
    app.set_version_flag("--version", std::string("localsactl ") + LOCALSA_VERSION);
    app.fallthrough();  // -C, -P, -j, --control also after the subcommand
    app.allow_extras(); // named below: an unknown command, option or argument
    app.require_subcommand(0, 1);
    Instance in;
    app.add_option("--control", in.control, "the daemon's control socket (overrides -C/-P)");
    app.add_option("-C,--ca", in.ca,
                   "the HCA whose daemon to talk to, and queries' HCA (default: the only daemon; "
                   "queries: the first HCA)");
    app.add_option("-P,--port", in.port, "the HCA port (default 1)");
    app.add_flag("-j,--json", in.json, "JSON output");

    auto* stats = app.add_subcommand("stats", "print the daemon's counters and gauges");
    std::string format;
    stats
        ->add_option("--format", format,
                     "text (default), json (as -j) or prometheus (the Prometheus text format, "
                     "for node-exporter's textfile collector)")
        ->check(CLI::IsMember({"text", "json", "prometheus"}));
    auto* health = app.add_subcommand(
        "health", "one line: OK, WARNING or CRITICAL and why (port ACTIVE, master SA answered, "
                  "preload, kernel sa_redirect); exit 0, 1 or 2 (NHC, Slurm)");
    auto* dump = app.add_subcommand("dump", "print the cached PathRecord answers");
    auto* flush = app.add_subcommand("flush", "empty the daemon's cache");
    auto* query = app.add_subcommand("query", "send one SA request to any LID, print the answer");
    query->require_subcommand(0, 1);
    auto* pr = query->add_subcommand("pr", "SubnAdmGet (or GetTable) PathRecord");
    add_common_query_options(*pr);
    pr->add_option("--sgid", "PathRecord SGID")->type_name("GID");
    pr->add_option("--dgid", "PathRecord DGID")->type_name("GID");
    pr->add_option("--dlid", "PathRecord DLID")->type_name("LID");
    pr->add_option("--pkey", "PathRecord PKey")->type_name("PKEY");
    pr->add_option("--sl", "PathRecord SL")->type_name("SL");
    pr->add_option("--service-id", "PathRecord ServiceID")->type_name("ID");
    pr->add_option("--reversible", "PathRecord Reversible (0 or 1)")->type_name("0|1");
    pr->add_option("--numb-path", "PathRecord NumbPath")->type_name("N");
    pr->add_flag("--table")->description("GetTable instead of Get");
    auto* sa_kind = query->add_subcommand("sa", "an SA request of any attribute");
    add_common_query_options(*sa_kind);
    sa_kind->add_option("--attr", "attribute ID (e.g. 0x11 NodeRecord)")->type_name("ID");
    sa_kind->add_option("--method", "get (default), gettable, set or delete")->type_name("METHOD");
    sa_kind->add_option("--comp-mask", "component mask (default 0)")->type_name("MASK");
    sa_kind->add_option("--data", "record bytes in hex")->type_name("HEX");
    auto* raw = query->add_subcommand("raw", "a whole MAD, sent as it is");
    add_common_query_options(*raw);
    raw->add_option("--hex", "the MAD in hex")->type_name("HEX");

    for (auto* sub : {stats, health, dump, flush, query, pr, sa_kind, raw})
        sub->footer("Also -C CA, -P PORT, --control PATH and -j: see localsactl --help.");
    try {
        try {
            app.parse(argc, argv);
        } catch (const CLI::CallForHelp& e) {
            return app.exit(e);
        } catch (const CLI::CallForAllHelp& e) {
            return app.exit(e);
        } catch (const CLI::CallForVersion& e) {
            return app.exit(e);
        } catch (const CLI::ParseError& e) {
            throw UsageError(e.what());
        }
        in.port_given = app.count("--port") > 0;
        const auto chosen = app.get_subcommands();
        if (chosen.empty()) {
            if (!app.remaining().empty())
                throw UsageError("unknown command '" + app.remaining().front() + "'");
            std::cout << app.help();
            return kExitUsage;
        }
        auto* cmd = chosen.front();
        if (!app.remaining().empty()) {
            if (cmd != query)
                throw UsageError(cmd->get_name() + " takes no arguments (got '" + extras_of(app) +
                                 "')");
            if (query->get_subcommands().empty())
                throw UsageError("unknown query kind '" + app.remaining().front() +
                                 "' (pr, sa or raw)");
            throw UsageError("unrecognised option or argument '" + extras_of(app) + "'");
        }
        check_port(in);
        if (cmd == stats)
            return run_stats(in, format);
        if (cmd == health)
            return run_health(in);
        if (cmd == dump)
            return run_dump(in);
        if (cmd == flush)
            return run_flush(in);
        if (query->get_subcommands().empty())
            throw UsageError("query needs a kind: pr, sa or raw");
        return run_query(in, *query->get_subcommands().front());
    } catch (const UsageError& e) {
        std::cerr << "localsactl: " << e.what() << "\nTry 'localsactl --help'.\n";
        return kExitUsage;
    } catch (const std::exception& e) {
        std::cerr << "localsactl: " << e.what() << "\n";
        return kExitFailed;
    }
}
