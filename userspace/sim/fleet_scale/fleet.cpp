#include "sim/fleet_scale/fleet.hpp"

#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/path_record.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sys/resource.h>

namespace localsa::fleet_scale {

using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t kGidPrefix = 0xfe80000000000000ULL;
constexpr std::uint64_t kGuidBase = 0x0002c90300000000ULL;
constexpr std::uint16_t kFirstSmLid = 1;

// rdma_cm's question (cma_query_ib_route, an AF_INET id), as the fleet of scripts/demo asks it.
constexpr std::uint64_t kJobMask = sa::pr_mask::kSgid | sa::pr_mask::kDgid | sa::pr_mask::kPKey |
                                   sa::pr_mask::kNumbPath | sa::pr_mask::kReversible |
                                   sa::pr_mask::kServiceId | sa::pr_mask::kQosClass;
constexpr std::uint64_t kPsTcp = 0x0106;

long rss_kb() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stol(line.substr(6));
    return 0;
}

long max_rss_kb() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

} // namespace

const char* scenario_name(Scenario s) {
    switch (s) {
    case Scenario::Idle:
        return "idle";
    case Scenario::Jobs:
        return "jobs";
    case Scenario::Trap64:
        return "trap64";
    case Scenario::FailOver:
        return "failover";
    }
    return "?";
}

std::optional<Scenario> parse_scenario(const std::string& name) {
    for (auto s : {Scenario::Idle, Scenario::Jobs, Scenario::Trap64, Scenario::FailOver})
        if (name == scenario_name(s))
            return s;
    return std::nullopt;
}

// One node's port as its MAD layer shows it: `live` is the port itself (the driver changes it,
// as the SM does), port() what localsa read last (refresh_port() reads it again, as the real
// transport reads sysfs).
class Fleet::NodeTransport final : public transport::MadTransport {
public:
    NodeTransport(Fleet& fleet, std::size_t index, transport::PortState state)
        : fleet_(fleet), index_(index), live(state), seen_(std::move(state)) {}
    bool send(mad::Bytes bytes, const transport::MadAddress& to,
              std::chrono::milliseconds) override {
        fleet_.on_send(index_, bytes, to);
        return true;
    }
    const transport::PortState& port() const override { return seen_; }
    const transport::PortState& refresh_port() override {
        seen_ = live;
        return seen_;
    }

private:
    Fleet& fleet_;
    std::size_t index_;

public:
    transport::PortState live;

private:
    transport::PortState seen_;
};

struct Fleet::Node {
    Port port;
    std::unique_ptr<NodeTransport> transport;
    std::unique_ptr<LocalSa> sa;
    std::unique_ptr<coherence::Coherence> coherence;
    std::uint64_t seen_background = 0;
    std::uint64_t queries_measured = 0;      // in the measured span
    std::vector<std::int64_t> background_us; // when each background query reached the master
    std::int64_t resynced_us = -1;           // its resync's preload table answered, after the event
    std::uint64_t queries_after_event_window = 0; // Trap64: in the event's window, checks aside
};

Fleet::Fleet(FleetParams params)
    : p_(std::move(params)), clock_(io_),
      t0_(clock_.now() + std::chrono::duration_cast<Clock::duration>(p_.warmup)),
      master_(kFirstSmLid) {
    seconds_.resize(static_cast<std::size_t>((p_.warmup + p_.duration).count()) + 1);
    for (std::size_t i = 0; i < p_.nodes; ++i) {
        auto n = std::make_unique<Node>();
        n->port.lid = static_cast<std::uint16_t>(kFirstSmLid + 1 + i);
        n->port.gid = sa::Gid::from_parts(kGidPrefix, kGuidBase + 1 + i);
        master_.add_port(n->port);
        transport::PortState st;
        st.ca = "node" + std::to_string(i);
        st.port = 1;
        st.lid = n->port.lid;
        st.sm_lid = kFirstSmLid;
        st.state = 4;
        st.gid = n->port.gid;
        st.pkeys = {0xffff};
        n->transport = std::make_unique<NodeTransport>(*this, i, st);
        n->sa = std::make_unique<LocalSa>(io_.get_executor(), clock_, *n->transport, p_.local_sa);
        n->coherence = std::make_unique<coherence::Coherence>(
            io_.get_executor(), n->sa->coherence_parts(), p_.coherence);
        nodes_.push_back(std::move(n));
    }
}

Fleet::~Fleet() {
    // Coherence first: it holds references into its LocalSa.
    for (auto& n : nodes_)
        n->coherence.reset();
}

std::int64_t Fleet::now_us() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(clock_.now() - t0_).count();
}

void Fleet::at(std::int64_t due_us, std::function<void()> action) {
    pending_.push({due_us, seq_++, std::move(action)});
}

void Fleet::run_until(std::int64_t end_us) {
    const auto to_time = [&](std::int64_t us) { return t0_ + std::chrono::microseconds{us}; };
    for (;;) {
        auto next = to_time(end_us);
        if (const auto timer = clock_.next_expiry())
            next = std::min(next, *timer);
        if (!pending_.empty())
            next = std::min(next, to_time(pending_.top().due_us));
        clock_.advance_to(next);
        bool ran = false;
        while (!pending_.empty() && pending_.top().due_us <= now_us()) {
            auto action = std::move(const_cast<Pending&>(pending_.top()).action);
            pending_.pop();
            action();
            ran = true;
        }
        if (ran)
            clock_.poll();
        if (now_us() >= end_us && (pending_.empty() || pending_.top().due_us > end_us) &&
            (!clock_.next_expiry() || *clock_.next_expiry() > to_time(end_us)))
            return;
    }
}

void Fleet::on_send(std::size_t index, mad::Bytes bytes, const transport::MadAddress& to) {
    auto& n = *nodes_[index];
    const auto method = bytes[mad::offset::kMethod];
    if (to.lid == n.port.lid) {
        // An answer to one of this node's clients (the kernel redirect, in process).
        const auto tid = static_cast<std::uint32_t>(mad::tid_of(bytes) & mad::kTidLowMask);
        if ((method & mad::method::kResponseBit) && tid < client_answered_.size() &&
            !client_answered_[tid]) {
            client_answered_[tid] = 1;
            ++client_answered_locally_;
        }
        return;
    }
    if (method == mad::method::kReportResp) {
        ++report_acks_;
        return;
    }
    if (method & mad::method::kResponseBit)
        return;
    // A request to the master. Background or not: the upstream client counts background tries
    // just before it sends them.
    const auto bg_now = n.sa->counters().upstream_background_requests;
    const bool background = bg_now != n.seen_background;
    n.seen_background = bg_now;
    if (to.lid != master_.sm_lid()) {
        ++lost_queries_; // the old master is gone: the try times out
        return;
    }
    const std::vector<std::uint8_t> request(bytes.begin(), bytes.end());
    auto a = master_.answer(request, n.port.lid);
    const auto now = now_us();
    const auto second = static_cast<std::size_t>((now + p_.warmup.count() * 1'000'000) / 1'000'000);
    if (second < seconds_.size()) {
        auto& s = seconds_[second];
        ++s.queries;
        s.background += background;
        s.records += a.records;
        s.path_queries += a.kind == QueryKind::PathGet || a.kind == QueryKind::PathTable;
    }
    if (now >= 0) {
        ++by_kind_[static_cast<std::size_t>(a.kind)];
        ++n.queries_measured;
        if (event_us_ >= 0 && now >= event_us_ &&
            now < event_us_ + 2 * p_.new_port_use.count() * 1'000'000 &&
            a.kind != QueryKind::InformInfoRecord)
            ++n.queries_after_event_window;
    }
    if (background)
        n.background_us.push_back(now);
    if (a.response.empty())
        return;
    // A table takes the master longer: OpenSM computes each record (~3.3 us a path).
    const auto latency = p_.master_latency.count() + static_cast<std::int64_t>(a.records) * 3;
    const auto kind = a.kind;
    at(now + latency,
       [this, index, kind, from = to.lid, response = std::move(a.response)]() mutable {
           auto& node = *nodes_[index];
           // A resync ends with its preload table (after ClassPortInfo and the subscriptions).
           if (event_us_ >= 0 && now_us() >= event_us_ && node.resynced_us < 0 &&
               kind == QueryKind::PathTable)
               node.resynced_us = now_us();
           transport::InboundMad in;
           in.bytes = std::move(response);
           in.from.lid = from;
           node.sa->dispatch(in);
       });
}

void Fleet::ask(std::size_t i, const Port& dst, std::uint64_t service_id) {
    auto& n = *nodes_[i];
    mad::SaMad m;
    m.header.method = mad::method::kGet;
    m.header.attr_id = mad::attr::kPathRecord;
    const auto tid = next_client_tid_++;
    m.header.tid = tid;
    m.comp_mask = kJobMask;
    sa::PathRecord pr;
    pr.service_id = service_id;
    pr.sgid = n.port.gid;
    pr.dgid = dst.gid;
    pr.pkey = 0xffff;
    pr.numb_path = 1;
    pr.reversible = true;
    pr.pack(m.data);
    if (client_answered_.size() <= tid)
        client_answered_.resize(tid + 1 + client_answered_.size() / 2);
    ++client_queries_;
    transport::InboundMad in;
    in.bytes = m.pack();
    in.from.lid = n.port.lid;
    in.from.qpn = 1;
    n.sa->dispatch(in);
    // Not answered within the kernel's sa_redirect_timeout_ms: the kernel asks the master.
    at(now_us() + p_.fail_open.count() * 1000, [this, tid] {
        if (!client_answered_[tid]) {
            ++fail_open_queries_;
            const auto second =
                static_cast<std::size_t>((now_us() + p_.warmup.count() * 1'000'000) / 1'000'000);
            if (second < seconds_.size()) {
                ++seconds_[second].queries;
                ++seconds_[second].path_queries;
                ++seconds_[second].records;
            }
            if (now_us() >= 0)
                ++by_kind_[static_cast<std::size_t>(QueryKind::PathGet)];
        }
    });
}

void Fleet::job_start(std::uint16_t first_port) {
    // Every rank resolves a path to every other rank, through its node's local SA.
    for (std::size_t i = 0; i < nodes_.size(); ++i)
        for (std::size_t j = 0; j < nodes_.size(); ++j)
            if (i != j)
                ask(i, nodes_[j]->port, kPsTcp << 16 | static_cast<std::uint16_t>(first_port + j));
    clock_.poll();
}

void Fleet::inject_report(std::uint16_t trap, const sa::Gid& subject) {
    // The master sends the Report to each subscriber (it resends until acknowledged; every node
    // here acknowledges at once).
    const auto tid = report_tid_++;
    for (const auto lid : master_.subscribers(trap)) {
        const auto index = static_cast<std::size_t>(lid - kFirstSmLid - 1);
        if (index >= nodes_.size())
            continue;
        transport::InboundMad in;
        in.bytes = master_.report(trap, subject, tid);
        in.from.lid = master_.sm_lid();
        nodes_[index]->sa->dispatch(in);
    }
    clock_.poll();
}

void Fleet::fail_over() {
    // A standby on another LID takes over: it holds none of the subscriptions, and its first
    // sweep sets every port's MasterSMLID (and ClientReregister) within about a second.
    const auto new_lid = static_cast<std::uint16_t>(kFirstSmLid + nodes_.size() + 2);
    master_.fail_over(new_lid);
    std::mt19937_64 rng(0x5eed);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const auto delay = static_cast<std::int64_t>(rng() % 1'000'000);
        at(now_us() + delay, [this, i, new_lid] { nodes_[i]->transport->live.sm_lid = new_lid; });
    }
}

nlohmann::json Fleet::run(Scenario scenario) {
    const std::int64_t s = 1'000'000;
    // Warm-up: every node starts as localsad does (ClassPortInfo, subscriptions, the preload
    // after a random delay in the spread window).
    at(-p_.warmup.count() * s, [this] {
        for (auto& n : nodes_) {
            n->sa->start();
            n->coherence->start();
        }
    });
    run_until(0);
    const auto job_at = [&](std::int64_t t, std::uint16_t first_port) {
        at(t, [this, first_port] { job_start(first_port); });
    };
    const auto end = p_.duration.count() * s;
    switch (scenario) {
    case Scenario::Idle:
        job_at(0, 20000);
        break;
    case Scenario::Jobs:
        for (std::int64_t t = 0, k = 0; t < end; t += p_.job_period.count() * s, ++k)
            job_at(t, static_cast<std::uint16_t>(20000 + 2048 * (k % 16)));
        break;
    case Scenario::Trap64: {
        job_at(0, 20000);
        event_us_ = p_.event_at.count() * s;
        Port joined;
        joined.lid = static_cast<std::uint16_t>(kFirstSmLid + nodes_.size() + 1);
        joined.gid = sa::Gid::from_parts(kGidPrefix, kGuidBase + 0x100000);
        at(event_us_, [this, joined] {
            master_.add_port(joined);
            inject_report(sa::trap::kGidInService, joined.gid);
        });
        at(event_us_ + p_.new_port_use.count() * s, [this, joined] {
            for (std::size_t i = 0; i < nodes_.size(); ++i)
                ask(i, joined, kPsTcp << 16 | 30000);
        });
        break;
    }
    case Scenario::FailOver:
        job_at(0, 20000);
        event_us_ = p_.event_at.count() * s;
        at(event_us_, [this] { fail_over(); });
        job_at(event_us_ + p_.second_job_after.count() * s, 24000);
        break;
    }
    // The caches' memory once the first job is in them.
    run_until(10 * s);
    rss_after_job_kb_ = rss_kb();
    run_until(end);
    return report(scenario);
}

nlohmann::json Fleet::report(Scenario scenario) {
    const auto n = static_cast<double>(nodes_.size());
    const auto hours = static_cast<double>(p_.duration.count()) / 3600.0;
    const auto warm = static_cast<std::size_t>(p_.warmup.count());
    nlohmann::json j;
    j["scenario"] = scenario_name(scenario);
    j["nodes"] = nodes_.size();
    j["duration_s"] = p_.duration.count();
    j["capacity_qps"] = p_.capacity;

    // The measured span.
    std::uint64_t total = 0, paths = 0, records = 0, background = 0;
    std::uint32_t peak = 0, peak_records_s = 0;
    std::uint64_t peak_records = 0;
    std::size_t peak_at = 0;
    for (std::size_t i = warm; i < seconds_.size(); ++i) {
        const auto& sec = seconds_[i];
        total += sec.queries;
        paths += sec.path_queries;
        records += sec.records;
        background += sec.background;
        if (sec.queries > peak) {
            peak = sec.queries;
            peak_at = i - warm;
        }
        if (sec.records > peak_records) {
            peak_records = sec.records;
            peak_records_s = static_cast<std::uint32_t>(i - warm);
        }
    }
    nlohmann::json kinds;
    for (std::size_t k = 0; k < kQueryKinds; ++k)
        kinds[kind_name(static_cast<QueryKind>(k))] = by_kind_[k];
    j["master"] = {{"queries", total},
                   {"queries_per_node_per_hour", static_cast<double>(total) / n / hours},
                   {"path_queries_per_node_per_hour", static_cast<double>(paths) / n / hours},
                   {"background_queries", background},
                   {"records", records},
                   {"by_kind", kinds},
                   {"peak_qps", peak},
                   {"peak_at_s", peak_at},
                   {"peak_records_per_s", peak_records},
                   {"peak_records_at_s", peak_records_s},
                   {"peak_over_capacity", p_.capacity > 0 ? peak / p_.capacity : 0.0},
                   {"fail_open_queries", fail_open_queries_},
                   {"lost_queries", lost_queries_},
                   {"report_acks", report_acks_}};
    // The warm-up: a fleet-wide start of localsad.
    std::uint64_t start_total = 0;
    std::uint32_t start_peak = 0;
    for (std::size_t i = 0; i < warm && i < seconds_.size(); ++i) {
        start_total += seconds_[i].queries;
        start_peak = std::max(start_peak, seconds_[i].queries);
    }
    j["startup"] = {{"queries_per_node", static_cast<double>(start_total) / n},
                    {"peak_qps", start_peak}};

    // An idle cache: PathRecord queries after the first job's answers went idle (its idle
    // window: the TTL, or --idle-window-s) and after one more TTL.
    const auto ttl_s =
        std::chrono::duration_cast<std::chrono::seconds>(p_.local_sa.path_record.positive_ttl)
            .count();
    const auto idle_s =
        p_.idle_target.count() > 0 ? p_.idle_target.count()
        : p_.coherence.idle_window.count() > 0
            ? std::chrono::duration_cast<std::chrono::seconds>(p_.coherence.idle_window).count()
            : ttl_s;
    std::uint64_t after_idle = 0, after_two = 0;
    long last_path_s = -1;
    for (std::size_t i = warm; i < seconds_.size(); ++i) {
        const auto t = static_cast<long>(i - warm);
        if (seconds_[i].path_queries)
            last_path_s = t;
        if (t >= idle_s)
            after_idle += seconds_[i].path_queries;
        if (t >= idle_s + ttl_s * 11 / 10 + 60)
            after_two += seconds_[i].path_queries;
    }
    if (scenario == Scenario::Idle)
        j["idle"] = {
            {"idle_window_s", idle_s},
            {"path_queries_after_idle_window", after_idle},
            {"path_queries_per_node_after_idle_window", static_cast<double>(after_idle) / n},
            {"path_queries_after_one_more_ttl", after_two},
            {"last_path_query_s", last_path_s}};

    if (scenario == Scenario::Trap64) {
        std::uint64_t sum = 0, most = 0;
        for (const auto& node : nodes_) {
            sum += node->queries_after_event_window;
            most = std::max(most, node->queries_after_event_window);
        }
        j["trap64"] = {{"window_s", 2 * p_.new_port_use.count()},
                       {"queries_per_node", static_cast<double>(sum) / n},
                       {"max_queries_of_a_node", most},
                       {"of_which_the_clients_own_question", 1}};
    }

    if (scenario == Scenario::FailOver) {
        std::int64_t last = -1;
        std::size_t resynced = 0, subscribed = 0;
        for (const auto& node : nodes_) {
            if (node->resynced_us >= 0) {
                ++resynced;
                last = std::max(last, node->resynced_us);
            }
            subscribed += master_.subscriptions_of(node->port.lid) == 6;
        }
        std::uint32_t after_peak = 0;
        std::size_t after_peak_at = 0;
        const auto from = warm + static_cast<std::size_t>(event_us_ / 1'000'000);
        for (std::size_t i = from; i < std::min(seconds_.size(), from + 120); ++i)
            if (seconds_[i].queries > after_peak) {
                after_peak = seconds_[i].queries;
                after_peak_at = i - warm;
            }
        j["failover"] = {
            {"spread_window_s", static_cast<double>(p_.coherence.spread.count()) / 1000.0},
            {"spread_s", last >= 0 ? static_cast<double>(last - event_us_) / 1e6 : -1.0},
            {"nodes_resynced", resynced},
            {"nodes_subscribed_again", subscribed},
            {"peak_qps_after", after_peak},
            {"peak_after_at_s", after_peak_at},
            {"peak_after_over_capacity", p_.capacity > 0 ? after_peak / p_.capacity : 0.0}};
    }

    // The budget: every node's background queries against its token bucket (rate r, burst b):
    // in any window [t_i, t_j], queries <= b + r (t_j - t_i). Reported: the largest
    // count - r (t_j - t_i) of any node (the burst it used; over b breaks the budget), and the
    // most background queries of a node in any one second (at most b + r).
    const double rate = p_.local_sa.upstream.background_rate;
    const double burst = p_.local_sa.upstream.background_burst;
    double worst_burst = 0;
    std::size_t worst_second = 0, over = 0;
    for (const auto& node : nodes_) {
        const auto& ts = node->background_us;
        double best_start = -1e300;
        double used = 0;
        std::size_t lo = 0;
        for (std::size_t k = 0; k < ts.size(); ++k) {
            const double t = static_cast<double>(ts[k]) / 1e6;
            best_start = std::max(best_start, rate * t - static_cast<double>(k));
            used = std::max(used, static_cast<double>(k + 1) - rate * t + best_start);
            while (ts[k] - ts[lo] >= 1'000'000)
                ++lo;
            worst_second = std::max(worst_second, k - lo + 1);
        }
        worst_burst = std::max(worst_burst, used);
        over += used > burst + 1e-6;
    }
    j["budget"] = {{"rate", rate},
                   {"burst", burst},
                   {"max_burst_used", worst_burst},
                   {"max_in_one_second", worst_second},
                   {"one_second_bound", burst + rate},
                   {"nodes_over_budget", over}};

    j["clients"] = {{"queries", client_queries_},
                    {"answered_locally", client_answered_locally_},
                    {"fail_open_to_master", fail_open_queries_}};
    Counters sum;
    for (const auto& node : nodes_) {
        const auto& c = node->sa->counters();
#define LOCALSA_SUM(name) sum.name += c.name;
        LOCALSA_COUNTERS(LOCALSA_SUM)
#undef LOCALSA_SUM
    }
    j["local_sa_counters"] = {{"resyncs", sum.resyncs},
                              {"refreshes", sum.refreshes},
                              {"pr_preload_hits", sum.pr_preload_hits},
                              {"pr_cache_hits", sum.pr_cache_hits},
                              {"pr_cache_misses", sum.pr_cache_misses},
                              {"upstream_expired", sum.upstream_expired},
                              {"upstream_timeouts", sum.upstream_timeouts},
                              {"upstream_overflow", sum.upstream_overflow},
                              {"subscriptions_lost", sum.subscriptions_lost},
                              {"preload_transactions", sum.preload_transactions}};
    std::size_t entries = 0, preloaded = 0;
    for (const auto& node : nodes_) {
        entries += node->sa->cache().size();
        preloaded += node->sa->preload().size();
    }
    j["memory"] = {{"rss_after_first_job_kb", rss_after_job_kb_},
                   {"max_rss_kb", max_rss_kb()},
                   {"cache_entries_at_end", entries},
                   {"preloaded_paths_at_end", preloaded}};
    return j;
}

} // namespace localsa::fleet_scale
