// sim-ud-subscriber: an event subscriber on a UD QP other than QP1, for the sim tier.
//
// Attaches to one ibsim node as a client of ibsim's own protocol with a QP number above 1 (ibsim
// delivers the MADs sent to that QP of the port to this client), subscribes to one generic trap
// with SubnAdmSet(InformInfo) sent from that QP, prints every Report as a JSON line, answers it
// with ReportResp, and unsubscribes on SIGTERM/SIGINT or after --duration-s.
//
// stdout, one JSON object a line (flushed):
//   {"event":"subscribed","status":S,"status_name":"..."}     S = -1: no answer (exit 3)
//   {"event":"report","t_ms":...,"tid":"0x...","trap":65,"issuer_lid":N,"subject_gid":"...",
//    "from_lid":N,"from_qp":N}
//   {"event":"unsubscribed","status":S}
// Exit: 0 done; 1 ibsim error; 2 bad options; 3 no answer to the Set; 4 the SA refused the Set.
#include "ib/constants.hpp"
#include "ib/gid.hpp"
#include "ib/inform_info.hpp"
#include "ib/mad.hpp"
#include "ib/notice.hpp"
#include "sim_client.hpp"

#include <arpa/inet.h>
#include <endian.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

namespace {

namespace mad = localsa::mad;
namespace sa = localsa::sa;
using simhca_relay::SimClient;
using simhca_relay::ibsim::Packet;
using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_stop = 0;
void on_signal(int) {
    g_stop = 1;
}

std::int64_t epoch_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void out(const std::string& line) {
    std::fputs(line.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

// ibsim LIDs: a 16-bit big-endian value in the first two bytes of a 32-bit field
std::uint16_t wire_lid(std::uint32_t f) {
    return ntohs(static_cast<std::uint16_t>(f));
}
std::uint32_t to_wire_lid(std::uint16_t lid) {
    return htons(lid);
}

std::uint32_t parse_uint(const std::string& what, const std::string& s, std::uint32_t max) {
    std::size_t pos = 0;
    unsigned long v = 0;
    try {
        if (s.empty() || s[0] == '-' || s[0] == '+')
            throw std::invalid_argument(s);
        v = std::stoul(s, &pos, 0);
    } catch (const std::exception&) {
        throw std::invalid_argument("bad " + what + " '" + s + "' (not a number)");
    }
    if (pos != s.size())
        throw std::invalid_argument("bad " + what + " '" + s + "' (not a number)");
    if (v > max)
        throw std::invalid_argument("bad " + what + " '" + s + "' (at most " + std::to_string(max) +
                                    ")");
    return static_cast<std::uint32_t>(v);
}

struct Options {
    std::string node;
    std::uint32_t qp = 0x100;
    std::optional<std::uint16_t> sa_lid;
    std::uint16_t trap = 0;
    sa::Gid gid;
    std::uint16_t lid_begin = 0xffff;
    std::uint16_t lid_end = 0;
    bool ack = true;
    double duration_s = 0; // 0: until SIGTERM/SIGINT
    std::string sim_basename;
    std::uint32_t sim_id = 0;
    int timeout_ms = 1000;
    int tries = 3;
    int connect_timeout_ms = 5000;
    bool verbose = false;
};

// Everything the tool does once attached.
class Subscriber {
public:
    Subscriber(const Options& o, SimClient& sim) : o_(o), sim_(sim) {
        const auto pi = sim_.port_info();
        const mad::Bytes b(pi.data(), pi.size());
        lid_ = mad::load_be16(b, 16);
        sm_lid_ = mad::load_be16(b, 18);
        sa_lid_ = o_.sa_lid.value_or(sm_lid_);
        tid_ = (static_cast<std::uint32_t>(::getpid()) << 12) ^
               static_cast<std::uint32_t>(epoch_ms() & 0xffffff);
        if (o_.verbose)
            std::fprintf(stderr,
                         "sim-ud-subscriber: client %d on \"%s\", LID %u, SM LID %u, qp 0x%x, "
                         "Set to LID %u\n",
                         sim_.id(), sim_.node().c_str(), lid_, sm_lid_, o_.qp, sa_lid_);
        if (lid_ == 0)
            throw std::runtime_error("the port has no LID yet");
        if (sa_lid_ == 0)
            throw std::runtime_error("no SA LID (the port knows no SM; use --sa-lid)");
    }

    // SubnAdmSet(InformInfo): the SA's status, or nullopt when no answer came in any try.
    std::optional<std::uint16_t> set_inform(bool subscribe) {
        sa::InformInfo ii;
        ii.gid = o_.gid;
        ii.lid_range_begin = o_.lid_begin;
        ii.lid_range_end = o_.lid_end;
        ii.is_generic = 1;
        ii.subscribe = subscribe ? 1 : 0;
        ii.type = 0xffff;
        ii.trap_number = o_.trap;
        ii.qpn = o_.qp;
        ii.resp_time_value = 18;
        ii.producer_type = 0xffffff;
        for (int t = 0; t < o_.tries; ++t) {
            mad::SaMad m;
            m.header.method = mad::method::kSet;
            m.header.attr_id = mad::attr::kInformInfo;
            m.header.tid = ++tid_;
            ii.pack(mad::MutableBytes(m.data.data(), sa::InformInfo::kSize));
            const auto bytes = m.pack();
            Packet p{};
            p.dlid = to_wire_lid(sa_lid_);
            p.slid = to_wire_lid(lid_);
            p.dqp = htonl(1);
            p.sqp = htonl(o_.qp);
            p.length = htobe64(sizeof p.mad);
            std::memcpy(p.mad, bytes.data(), sizeof p.mad);
            if (!sim_.send(p))
                throw std::runtime_error("ibsim send failed");
            awaiting_ = static_cast<std::uint32_t>(tid_);
            answer_.reset();
            failed_ = false;
            // a stop signal does not cut the subscribe short: the unsubscribe follows it
            const auto deadline = Clock::now() + std::chrono::milliseconds(o_.timeout_ms);
            while (!answer_ && !failed_ && Clock::now() < deadline)
                wait_and_handle(deadline);
            awaiting_.reset();
            if (answer_)
                return answer_;
            if (o_.verbose)
                std::fprintf(stderr, "sim-ud-subscriber: try %d of %d: %s\n", t + 1, o_.tries,
                             failed_ ? "undeliverable" : "no answer");
            if (failed_) {
                // ibsim bounced it at once: wait out the timeout before the next try
                while (Clock::now() < deadline)
                    wait_and_handle(deadline);
            }
        }
        return std::nullopt;
    }

    // Handle MADs until the deadline or a stop signal.
    void run_until(std::optional<Clock::time_point> end) {
        while (!g_stop && (!end || Clock::now() < *end))
            wait_and_handle(end ? *end : Clock::now() + std::chrono::seconds(1));
    }

private:
    void wait_and_handle(Clock::time_point deadline) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        const long ms = std::max<long>(0, std::min<long>(left.count(), 1000));
        pollfd pfd{sim_.data_fd(), POLLIN, 0};
        timespec ts{ms / 1000, (ms % 1000) * 1000000};
        sigset_t none;
        sigemptyset(&none);
        const int n = ::ppoll(&pfd, 1, &ts, &none);
        if (n < 0) {
            if (errno == EINTR)
                return;
            throw std::runtime_error("poll: " + std::string(std::strerror(errno)));
        }
        if (n == 0)
            return;
        if (pfd.revents & (POLLERR | POLLHUP))
            throw std::runtime_error("ibsim data socket closed");
        while (auto p = sim_.receive())
            handle(*p);
    }

    void handle(const Packet& p) {
        const mad::Bytes b(p.mad, sizeof p.mad);
        const auto h = mad::MadHeader::unpack(b);
        if (p.status) {
            if (o_.verbose)
                std::fprintf(stderr,
                             "sim-ud-subscriber: undeliverable: method 0x%02x to LID %u "
                             "(status %u)\n",
                             h.method, wire_lid(p.dlid), ntohl(p.status));
            if (awaiting_ && static_cast<std::uint32_t>(h.tid) == *awaiting_)
                failed_ = true;
            return;
        }
        if (h.mgmt_class != mad::mgmt_class::kSubnAdm) {
            std::fprintf(stderr, "sim-ud-subscriber: ignored a MAD of class 0x%02x\n",
                         h.mgmt_class);
            return;
        }
        // the answer to a Set is a GetResp (IBA 13.4.5)
        if (h.method == mad::method::kGetResp && h.attr_id == mad::attr::kInformInfo) {
            if (awaiting_ && static_cast<std::uint32_t>(h.tid) == *awaiting_)
                answer_ = h.status;
            else if (o_.verbose)
                std::fprintf(stderr,
                             "sim-ud-subscriber: late InformInfo answer, TID 0x%016" PRIx64 "\n",
                             h.tid);
            return;
        }
        if (h.method == mad::method::kReport && h.attr_id == mad::attr::kNotice) {
            report(p, h);
            return;
        }
        std::fprintf(stderr, "sim-ud-subscriber: ignored method 0x%02x attr 0x%04x from LID %u\n",
                     h.method, h.attr_id, wire_lid(p.slid));
    }

    void report(const Packet& p, const mad::MadHeader& h) {
        const auto n =
            sa::Notice::unpack(mad::Bytes(p.mad + mad::kSaHeaderSize, sa::Notice::kSize));
        const std::uint16_t from_lid = wire_lid(p.slid);
        const std::uint32_t from_qp = ntohl(p.sqp);
        char tid[24];
        std::snprintf(tid, sizeof tid, "0x%016" PRIx64, h.tid);
        out("{\"event\":\"report\",\"t_ms\":" + std::to_string(epoch_ms()) + ",\"tid\":\"" + tid +
            "\",\"trap\":" + std::to_string(n.trap_number) +
            ",\"issuer_lid\":" + std::to_string(n.issuer_lid) + ",\"subject_gid\":\"" +
            n.subject_gid().str() + "\",\"from_lid\":" + std::to_string(from_lid) +
            ",\"from_qp\":" + std::to_string(from_qp) + "}");
        if (!o_.ack)
            return;
        // ReportResp: the Report echoed with the response method, status 0, same TID (ibsim
        // routes it back to the sender's client by the TID's upper bits)
        Packet r{};
        r.dlid = p.slid;
        r.slid = to_wire_lid(lid_);
        r.dqp = p.sqp;
        r.sqp = htonl(o_.qp);
        r.length = htobe64(sizeof r.mad);
        std::memcpy(r.mad, p.mad, sizeof r.mad);
        auto rh = h;
        rh.method = mad::method::kReportResp;
        rh.status = 0;
        rh.pack(mad::MutableBytes(r.mad, mad::kMadHeaderSize));
        if (!sim_.send(r))
            throw std::runtime_error("ibsim send failed");
    }

    const Options& o_;
    SimClient& sim_;
    std::uint16_t lid_ = 0;
    std::uint16_t sm_lid_ = 0;
    std::uint16_t sa_lid_ = 0;
    std::uint64_t tid_ = 0;
    std::optional<std::uint32_t> awaiting_;
    std::optional<std::uint16_t> answer_;
    bool failed_ = false;
};

std::string status_json(std::optional<std::uint16_t> s) {
    return s ? std::to_string(*s) : std::string("-1");
}

} // namespace

int main(int argc, char** argv) {
    namespace po = boost::program_options;
    Options o;
    std::string qp, sa_lid, trap, gid, lid_range;
    const char* env_sock = std::getenv("IBSIM_SOCKNAME");
    po::options_description desc(
        "Usage: sim-ud-subscriber --node NODE --trap N [options]\n"
        "Subscribes to a generic trap with SubnAdmSet(InformInfo) sent from a UD QP other than\n"
        "QP1 of an ibsim node (an ibsim client attached with that QP number), prints each Report\n"
        "as a JSON line on stdout and answers it with ReportResp; unsubscribes on SIGTERM/SIGINT\n"
        "or after --duration-s. Lines: {\"event\":\"subscribed\",\"status\":S,...} (S = -1: no\n"
        "answer), {\"event\":\"report\",...}, {\"event\":\"unsubscribed\",\"status\":S}.\n"
        "Exit: 0 done, 1 ibsim error, 2 bad options, 3 no answer to a Set, 4 Set refused.\n\n"
        "Options");
    desc.add_options()("help,h", "this help")("node,n", po::value(&o.node)->required(),
                                              "ibsim node name (e.g. H1)")(
        "qp", po::value(&qp)->default_value("0x100"),
        "the UD QP number to attach as (2..0xffffff)")(
        "sa-lid", po::value(&sa_lid), "LID the Sets go to (default: the port's SM LID)")(
        "trap", po::value(&trap)->required(), "generic trap number (e.g. 65)")(
        "gid", po::value(&gid), "InformInfo GID filter (default ::, i.e. none)")(
        "lid-range", po::value(&lid_range),
        "InformInfo LIDRange B-E (default: LIDRangeBegin 0xFFFF, every LID)")(
        "no-ack", "do not answer Reports with ReportResp")(
        "duration-s", po::value(&o.duration_s)->default_value(0),
        "unsubscribe and exit after this many seconds (0: run until SIGTERM/SIGINT)")(
        "timeout-ms", po::value(&o.timeout_ms)->default_value(1000),
        "answer timeout of each Set try")("tries", po::value(&o.tries)->default_value(3),
                                          "tries of each Set (subscribe, unsubscribe)")(
        "sim-basename", po::value(&o.sim_basename)->default_value(env_sock ? env_sock : "sim"),
        "ibsim socket name space (IBSIM_SOCKNAME)")(
        "sim-id", po::value(&o.sim_id)->default_value(static_cast<std::uint32_t>(::getpid())),
        "ibsim client socket id, unique among the clients of one ibsim (default: the pid)")(
        "connect-timeout-ms", po::value(&o.connect_timeout_ms)->default_value(5000),
        "how long to wait for ibsim")("verbose,v", "diagnostics on stderr");
    try {
        po::variables_map vm;
        po::store(po::parse_command_line(argc, argv, desc), vm);
        if (vm.count("help")) {
            std::cout << desc << "\n";
            return 0;
        }
        po::notify(vm);
        o.ack = vm.count("no-ack") == 0;
        o.verbose = vm.count("verbose") != 0;
        o.qp = parse_uint("--qp", qp, 0xffffff);
        if (o.qp < 2)
            throw std::invalid_argument("--qp must be above 1 (QP0/QP1 are not UD QPs)");
        if (vm.count("sa-lid")) {
            const auto l = parse_uint("--sa-lid", sa_lid, 0xbfff);
            if (l == 0)
                throw std::invalid_argument("bad --sa-lid '0'");
            o.sa_lid = static_cast<std::uint16_t>(l);
        }
        o.trap = static_cast<std::uint16_t>(parse_uint("--trap", trap, 0xffff));
        if (vm.count("gid")) {
            const auto g = sa::Gid::parse(gid);
            if (!g)
                throw std::invalid_argument("bad --gid '" + gid + "'");
            o.gid = *g;
        }
        if (vm.count("lid-range")) {
            const auto dash = lid_range.find('-');
            if (dash == std::string::npos || dash == 0)
                throw std::invalid_argument("bad --lid-range '" + lid_range + "' (B-E)");
            o.lid_begin = static_cast<std::uint16_t>(
                parse_uint("--lid-range", lid_range.substr(0, dash), 0xffff));
            o.lid_end = static_cast<std::uint16_t>(
                parse_uint("--lid-range", lid_range.substr(dash + 1), 0xffff));
        }
        if (!(o.duration_s >= 0 && o.duration_s <= 86400))
            throw std::invalid_argument("--duration-s must be between 0 and 86400");
        if (o.timeout_ms < 1 || o.timeout_ms > 60000)
            throw std::invalid_argument("--timeout-ms must be between 1 and 60000");
        if (o.tries < 1 || o.tries > 100)
            throw std::invalid_argument("--tries must be between 1 and 100");
        if (o.connect_timeout_ms < 0 || o.connect_timeout_ms > 600000)
            throw std::invalid_argument("--connect-timeout-ms must be between 0 and 600000");
        if (o.sim_basename.empty())
            throw std::invalid_argument("--sim-basename is empty");
    } catch (const std::exception& e) {
        std::cerr << "sim-ud-subscriber: " << e.what() << "\n"
                  << "(see sim-ud-subscriber --help)\n";
        return 2;
    }

    // SIGTERM/SIGINT are blocked except while waiting in ppoll: a signal ends a wait at once
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    struct sigaction sa_stop {};
    sa_stop.sa_handler = on_signal;
    sigemptyset(&sa_stop.sa_mask);
    ::sigaction(SIGTERM, &sa_stop, nullptr);
    ::sigaction(SIGINT, &sa_stop, nullptr);
    ::sigprocmask(SIG_BLOCK, &stop, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    try {
        SimClient sim(o.sim_basename, o.sim_id, o.node, false, o.connect_timeout_ms, o.qp);
        Subscriber sub(o, sim);
        const auto st = sub.set_inform(true);
        out("{\"event\":\"subscribed\",\"status\":" + status_json(st) + ",\"status_name\":\"" +
            (st ? mad::status_name(*st) : std::string("TIMEOUT")) + "\"}");
        if (!st)
            return 3;
        if (*st != mad::status::kOk)
            return 4;
        std::optional<Clock::time_point> end;
        if (o.duration_s > 0)
            end = Clock::now() + std::chrono::milliseconds(static_cast<long>(o.duration_s * 1000));
        sub.run_until(end);
        const auto un = sub.set_inform(false);
        out("{\"event\":\"unsubscribed\",\"status\":" + status_json(un) + "}");
        if (!un)
            return 3;
        return *un == mad::status::kOk ? 0 : 4;
    } catch (const std::exception& e) {
        std::cerr << "sim-ud-subscriber: " << e.what() << "\n";
        return 1;
    }
}
