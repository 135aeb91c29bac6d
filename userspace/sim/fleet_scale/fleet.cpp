#include "sim/fleet_scale/fleet.hpp"

#include "ib/constants.hpp"
#include "ib/mad.hpp"
#include "ib/notice.hpp"
#include "ib/path_record.hpp"
#include "ib/response.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <malloc.h>
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

// The process's peak resident memory (VmHWM) restarts from its present RSS (Linux >= 4.0);
// false where /proc/self/clear_refs cannot be written.
bool reset_peak_rss() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5\n";
    f.flush();
    return static_cast<bool>(f);
}

long peak_rss_kb() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmHWM:", 0) == 0)
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
    case Scenario::Steady:
        return "steady";
    case Scenario::PowerOn:
        return "power-on";
    case Scenario::Reroute:
        return "reroute";
    case Scenario::SwitchDown:
        return "switch-down";
    }
    return "?";
}

std::optional<Scenario> parse_scenario(const std::string& name) {
    for (auto s : {Scenario::Idle, Scenario::Jobs, Scenario::Trap64, Scenario::FailOver,
                   Scenario::Steady, Scenario::PowerOn, Scenario::Reroute, Scenario::SwitchDown})
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
    const transport::PortState& refresh_port(transport::PortRead) override {
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
    bool up = true;                               // SwitchDown: its leaf is up (its clients ask)
    // Clients its local SA answered BUSY (a table paced past their wait) and not answered since:
    // they retry every caller's timeout, and the next retry after the table is a hit.
    std::uint64_t busy_waiting = 0;
    std::int64_t busy_since_us = -1; // the first one's question
};

Fleet::Fleet(FleetParams params)
    : p_(std::move(params)), clock_(io_),
      t0_(clock_.now() + std::chrono::duration_cast<Clock::duration>(p_.warmup)),
      master_(kFirstSmLid), queue_(p_.master) {
    p_.coherence.routing_epoch = p_.routing_epoch;
    p_.coherence.preload = p_.preload;
    // The scenario's own peak: what earlier fleets left in malloc goes back, the peak restarts.
    ::malloc_trim(0);
    peak_reset_ = reset_peak_rss();
    rss_before_kb_ = rss_kb();
    // Each node knows the fabric's size, as its warm set file tells it after a first start:
    // above --preload-max-ports it asks no table.
    p_.coherence.fabric_ports = p_.nodes;
    // The plugin's first epoch: distinct across SM restarts (its start time << 20).
    if (p_.routing_epoch)
        master_.set_routing_epoch(std::uint64_t{0x6000'0000} << 20);
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

bool Fleet::asks_tables() const {
    const auto& c = p_.coherence;
    return p_.preload && p_.nodes <= c.preload_max_ports.value_or(c.preload_max_ports_auto());
}

void Fleet::run_until(std::int64_t end_us) {
    const auto to_time = [&](std::int64_t us) { return t0_ + std::chrono::microseconds{us}; };
    // The next of the driver's events: a pending action or a fail-open, in (due, seq) order.
    const auto next_due = [&]() -> std::optional<std::int64_t> {
        std::optional<std::int64_t> due;
        if (!pending_.empty())
            due = pending_.top().due_us;
        if (!fail_opens_.empty() && (!due || fail_opens_.front().due_us < *due))
            due = fail_opens_.front().due_us;
        return due;
    };
    for (;;) {
        auto next = to_time(end_us);
        if (const auto timer = clock_.next_expiry())
            next = std::min(next, *timer);
        if (const auto due = next_due())
            next = std::min(next, to_time(*due));
        clock_.advance_to(next);
        bool ran = false;
        for (;;) {
            const auto now = now_us();
            const bool action_due = !pending_.empty() && pending_.top().due_us <= now;
            const bool fail_open_due = !fail_opens_.empty() && fail_opens_.front().due_us <= now;
            if (!action_due && !fail_open_due)
                break;
            if (fail_open_due &&
                (!action_due || std::pair{fail_opens_.front().due_us, fail_opens_.front().seq} <
                                    std::pair{pending_.top().due_us, pending_.top().seq})) {
                const auto f = fail_opens_.front();
                fail_opens_.pop_front();
                fail_open(f);
            } else {
                auto action = std::move(const_cast<Pending&>(pending_.top()).action);
                pending_.pop();
                action();
            }
            ran = true;
        }
        if (ran)
            clock_.poll();
        const auto due = next_due();
        if (now_us() >= end_us && (!due || *due > end_us) &&
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
        if (!(method & mad::method::kResponseBit))
            return;
        const bool busy = mad::load_be16(bytes, mad::offset::kStatus) & mad::status::kBusy;
        std::optional<std::uint32_t> asked_ms;
        if (tid == asking_.tid && tid != 0) {
            if (!asking_.answered) {
                asking_.answered = true;
                asked_ms = asking_.asked_ms;
            }
        } else if (const auto w = client_waiting_.find(tid); w != client_waiting_.end()) {
            asked_ms = w->second;
            client_waiting_.erase(w);
        }
        if (asked_ms && busy)
            client_busy(n, *asked_ms);
        else if (asked_ms)
            client_answered(*asked_ms);
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
    const auto now = now_us();
    const auto admit = queue_.offer(now);
    if (const auto second =
            static_cast<std::size_t>((now + p_.warmup.count() * 1'000'000) / 1'000'000);
        second < seconds_.size())
        ++seconds_[second].kinds[static_cast<std::size_t>(MasterModel::kind_of(request))];
    if (admit == MasterQueue::Admit::Dropped) {
        // Dropped before it was read: it costs the master nothing; the node's try times out.
        count_offered(0, background, admit);
        return;
    }
    auto a = admit == MasterQueue::Admit::Busy
                 ? MasterAnswer{QueryKind::Other,
                                sa::make_error_response(request, mad::status::kBusy), 0}
                 : master_.answer(request, n.port.lid);
    const auto done_us = admit == MasterQueue::Admit::Busy ? now : queue_.serve(now, a.records);
    count_offered(a.records, background, admit);
    const auto second = static_cast<std::size_t>((now + p_.warmup.count() * 1'000'000) / 1'000'000);
    if (second < seconds_.size()) {
        auto& s = seconds_[second];
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
    // The answer leaves when the master is done with it (its queue, its cost by records).
    const auto kind = a.kind;
    at(done_us + p_.master_latency.count(),
       [this, index, kind, from = to.lid, response = std::move(a.response)]() mutable {
           auto& node = *nodes_[index];
           // A resync ends with its preload table (after ClassPortInfo and the subscriptions);
           // without the preload, with its last subscription's answer.
           if (event_us_ >= 0 && now_us() >= event_us_) {
               if (asks_tables() ? node.resynced_us < 0 && kind == QueryKind::PathTable
                                 : kind == QueryKind::InformInfoSet)
                   node.resynced_us = now_us();
           }
           if (kind == QueryKind::PathTable && node.busy_waiting != 0)
               busy_clients_served(node);
           transport::InboundMad in;
           in.bytes = std::move(response);
           in.from.lid = from;
           node.sa->dispatch(in);
       });
}

void Fleet::client_busy(Node& n, std::uint32_t asked_ms) {
    ++client_busy_;
    const auto asked_us =
        static_cast<std::int64_t>(asked_ms) * 1000 - p_.warmup.count() * 1'000'000;
    if (n.busy_waiting++ == 0)
        n.busy_since_us = asked_us;
}

void Fleet::busy_clients_served(Node& n) {
    // Each retried every caller's timeout since its question: the first retry after the table
    // came is answered from it (its retries are not simulated one by one). Bounded by the
    // first one's wait.
    const auto retry_us = std::max<std::int64_t>(p_.caller_timeout.count() * 1000, 1);
    const auto waited = now_us() - n.busy_since_us;
    const auto served_after = (waited + retry_us - 1) / retry_us * retry_us;
    worst_client_wait_us_ = std::max(worst_client_wait_us_, served_after);
    client_answered_after_busy_ += n.busy_waiting;
    n.busy_waiting = 0;
    n.busy_since_us = -1;
}

void Fleet::client_answered(std::uint32_t asked_ms) {
    ++client_answered_locally_;
    const auto asked_us =
        static_cast<std::int64_t>(asked_ms) * 1000 - p_.warmup.count() * 1'000'000;
    worst_client_wait_us_ = std::max(worst_client_wait_us_, now_us() - asked_us);
}

void Fleet::count_offered(std::size_t records, bool background, MasterQueue::Admit admit) {
    const auto second =
        static_cast<std::size_t>((now_us() + p_.warmup.count() * 1'000'000) / 1'000'000);
    if (second >= seconds_.size())
        return;
    auto& s = seconds_[second];
    ++s.queries;
    s.background += background;
    s.work_us += p_.master.cost_us(records);
    s.dropped += admit == MasterQueue::Admit::Dropped;
    s.busy += admit == MasterQueue::Admit::Busy;
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
    const auto since_warmup_us = now_us() + p_.warmup.count() * 1'000'000;
    const auto asked_ms = static_cast<std::uint32_t>(since_warmup_us / 1000);
    if (const auto second = static_cast<std::size_t>(since_warmup_us / 1'000'000);
        second < seconds_.size()) {
        ++seconds_[second].client_asks;
        seconds_[second].client_records += !master_.is_down(dst.gid);
    }
    ++client_queries_;
    transport::InboundMad in;
    in.bytes = m.pack();
    in.from.lid = n.port.lid;
    in.from.qpn = 1;
    asking_ = {tid, asked_ms, false};
    n.sa->dispatch(in);
    const bool answered = asking_.answered;
    asking_ = {};
    if (answered)
        return; // answered at once (a hit): nothing to wait for
    client_waiting_.emplace(tid, asked_ms);
    if (p_.kernel_fallback == KernelFallback::Wait)
        return; // the client waits for its local SA's answer, however long
    // Not answered within sa_redirect_timeout_ms (the series before patch 8) or within the
    // caller's timeout (patch 8: the simulated local SAs answer probes): the kernel asks the
    // master. One delay for all, so the queue stays in order.
    const auto after =
        p_.kernel_fallback == KernelFallback::Probe ? p_.caller_timeout : p_.fail_open;
    fail_opens_.push_back(
        {now_us() + after.count() * 1000, seq_++, tid, !master_.is_down(dst.gid)});
}

void Fleet::fail_open(const FailOpen& f) {
    const auto w = client_waiting_.find(f.tid);
    if (w == client_waiting_.end())
        return; // answered by its local SA meanwhile
    ++fail_open_queries_;
    const auto admit = queue_.offer(now_us());
    const std::size_t records = admit == MasterQueue::Admit::Served && f.answerable ? 1 : 0;
    count_offered(records, false, admit);
    if (admit == MasterQueue::Admit::Dropped)
        return; // the client's own retry is not modelled
    const auto done =
        admit == MasterQueue::Admit::Served ? queue_.serve(now_us(), records) : now_us();
    const auto second =
        static_cast<std::size_t>((now_us() + p_.warmup.count() * 1'000'000) / 1'000'000);
    if (second < seconds_.size()) {
        ++seconds_[second].path_queries;
        seconds_[second].records += records;
    }
    if (now_us() >= 0)
        ++by_kind_[static_cast<std::size_t>(QueryKind::PathGet)];
    const auto asked_us =
        static_cast<std::int64_t>(w->second) * 1000 - p_.warmup.count() * 1'000'000;
    worst_client_wait_us_ =
        std::max(worst_client_wait_us_, done + p_.master_latency.count() - asked_us);
}

void Fleet::steady_use(std::size_t i, std::int64_t t_us, std::size_t k, std::int64_t end_us) {
    at(t_us, [this, i, t_us, k, end_us] {
        const auto n = nodes_.size();
        if (nodes_[i]->up) {
            // Its k-th use goes to one of its few peers (storage-like: the same ones all along).
            const auto peer =
                (i + 1 + (k % p_.targets) * std::max<std::size_t>(n / p_.targets, 1)) % n;
            if (peer != i)
                ask(i, nodes_[peer]->port, kPsTcp << 16 | 3260);
        }
        const auto next = t_us + p_.use_period.count() * 1'000'000;
        if (next < end_us)
            steady_use(i, next, k + 1, end_us);
    });
}

void Fleet::switch_leaf(bool down) {
    // The leaf's hosts: their ports go down (the master forgets their paths; trap 65 to every
    // subscriber, one per port), then come back (trap 64 each; their local SAs see the port
    // active again and resync).
    const auto hosts = std::min(p_.leaf_hosts, nodes_.size() / 2);
    for (std::size_t h = 0; h < hosts; ++h) {
        auto& node = *nodes_[h];
        node.up = !down;
        node.transport->live.state = down ? 1 : 4;
        master_.set_down(node.port.gid, down);
    }
    for (std::size_t h = 0; h < hosts; ++h)
        inject_report(down ? sa::trap::kGidOutOfService : sa::trap::kGidInService,
                      nodes_[h]->port.gid);
    // The fabric changed (links gone or back) and the master routed again.
    routing_changed();
}

void Fleet::routing_changed() {
    if (!master_.routing_epoch())
        return;
    master_.bump_routing_epoch();
    const auto tid = report_tid_++;
    for (const auto lid : master_.subscribers(MasterModel::kEpochDeviceId)) {
        const auto index = static_cast<std::size_t>(lid - kFirstSmLid - 1);
        if (index >= nodes_.size())
            continue;
        transport::InboundMad in;
        in.bytes = master_.epoch_report(tid);
        in.from.lid = master_.sm_lid();
        nodes_[index]->sa->dispatch(in);
    }
    clock_.poll();
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
    if (scenario != Scenario::PowerOn) {
        // Started within the power-on window (a fleet-wide systemctl start), not in one
        // microsecond: 7 queries of every node at once would overflow the master's queue.
        std::mt19937_64 rng(0x5ca1e);
        const auto window = std::max<std::int64_t>(p_.power_on_window.count() * s, 1);
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            at(-p_.warmup.count() * s +
                   static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(window)),
               [this, i] {
                   nodes_[i]->coherence->start();
                   if (!nodes_[i]->coherence->class_port_info_deferred())
                       nodes_[i]->sa->start();
               });
    }
    run_until(0);
    fired_at_t0_ = clock_.fired();
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
    case Scenario::Steady:
    case Scenario::PowerOn:
    case Scenario::Reroute:
    case Scenario::SwitchDown: {
        std::mt19937_64 rng(0x57ead);
        const auto period = p_.use_period.count() * s;
        const auto window = std::max<std::int64_t>(p_.power_on_window.count() * s, 1);
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            std::int64_t first =
                static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(period));
            if (scenario == Scenario::PowerOn) {
                // Every node starts within the window, then uses its paths.
                const auto start =
                    static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(window));
                at(start, [this, i] { nodes_[i]->coherence->start(); });
                first += window;
            }
            steady_use(i, first, i, end);
        }
        if (scenario == Scenario::Reroute) {
            // A spine link goes down: the master routes over the others and answers another
            // rate (no trap: a re-route raises none); back up after the outage.
            event_us_ = p_.event_at.count() * s;
            // The plugin sees the LFTs change: a new epoch, Reported, each time.
            at(event_us_, [this] {
                master_.set_rate(3);
                routing_changed();
            });
            at(event_us_ + p_.outage.count() * s, [this] {
                master_.set_rate(7);
                routing_changed();
            });
        }
        if (scenario == Scenario::FailOver) {
            // Under the fabric's steady use, not an all-to-all job: a cold job alone costs N^2
            // records (16,384 nodes: 2.7e8), whatever the SM does.
            event_us_ = p_.event_at.count() * s;
            at(event_us_, [this] { fail_over(); });
        }
        if (scenario == Scenario::SwitchDown) {
            event_us_ = p_.event_at.count() * s;
            at(event_us_, [this] { switch_leaf(true); });
            at(event_us_ + p_.outage.count() * s, [this] { switch_leaf(false); });
        }
        break;
    }
    }
    // The caches' memory once the first job is in them.
    run_until(10 * s);
    rss_after_job_kb_ = rss_kb();
    run_until(end);
    return report(scenario);
}

namespace {
// What one second offered the master, by kind (dropped queries too).
nlohmann::json kinds_json(const std::array<std::uint32_t, kQueryKinds>& kinds) {
    nlohmann::json j;
    for (std::size_t k = 0; k < kQueryKinds; ++k)
        if (kinds[k])
            j[kind_name(static_cast<QueryKind>(k))] = kinds[k];
    return j;
}
} // namespace

nlohmann::json Fleet::report(Scenario scenario) {
    const auto n = static_cast<double>(nodes_.size());
    const auto hours = static_cast<double>(p_.duration.count()) / 3600.0;
    const auto warm = static_cast<std::size_t>(p_.warmup.count());
    nlohmann::json j;
    j["scenario"] = scenario_name(scenario);
    j["nodes"] = nodes_.size();
    j["duration_s"] = p_.duration.count();
    j["capacity_qps"] = p_.capacity;
    j["routing_epoch"] = p_.routing_epoch ? "on" : "off";
    j["preload"] = p_.preload ? "on" : "off";

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
    double peak_work_us = 0;
    std::size_t peak_work_at = 0;
    std::uint64_t dropped = 0, busy = 0;
    for (std::size_t i = warm; i < seconds_.size(); ++i) {
        dropped += seconds_[i].dropped;
        busy += seconds_[i].busy;
    }
    for (std::size_t i = warm; i < seconds_.size(); ++i)
        if (seconds_[i].work_us > peak_work_us) {
            peak_work_us = seconds_[i].work_us;
            peak_work_at = i - warm;
        }
    const auto& cap = p_.master;
    j["master"] = {{"queries", total},
                   {"queries_per_node_per_hour", static_cast<double>(total) / n / hours},
                   {"path_queries_per_node_per_hour", static_cast<double>(paths) / n / hours},
                   {"background_queries", background},
                   {"records", records},
                   {"records_per_hour", static_cast<double>(records) / hours},
                   {"by_kind", kinds},
                   {"dropped", dropped},
                   {"busy", busy},
                   // The busiest second's work offered to the master, in seconds of its time
                   // (its capacity: 1).
                   {"peak_over_capacity", peak_work_us / 1e6},
                   {"peak_over_capacity_at_s", peak_work_at},
                   {"peak_over_capacity_by_kind", kinds_json(seconds_[warm + peak_work_at].kinds)},
                   {"worst_wait_s", static_cast<double>(queue_.worst_wait_us()) / 1e6},
                   {"peak_qps", peak},
                   {"peak_at_s", peak_at},
                   {"peak_records_per_s", peak_records},
                   {"peak_records_at_s", peak_records_s},
                   {"peak_qps_over_capacity_qps", p_.capacity > 0 ? peak / p_.capacity : 0.0},
                   {"fail_open_queries", fail_open_queries_},
                   {"lost_queries", lost_queries_},
                   {"report_acks", report_acks_}};
    j["master_capacity"] = {
        {"records_per_s", cap.records_per_s},
        {"transactions_per_s", cap.transactions_per_s},
        {"queue", cap.queue},
        {"busy_after_s", static_cast<double>(cap.busy_after_us) / 1e6},
        {"source",
         "docs/benchmarks.md part (f), OpenSM 3.3.23 in a 6.12 guest under TCG, N = 1,024: "
         "1,118,208 preloaded paths in 23.7 s of OpenSM CPU (47,182 records/s), 65,472 Gets in "
         "29.14 s (2,247 transactions/s); queue: ib_mad's recv_queue_size (512); BUSY: OpenSM's "
         "max_msg_fifo_timeout (10 s)"}};

    // The same client workload sent straight to the master (no localsa): one Get per client
    // question, through the same capacity and queue (fluid, second by second; a dropped Get's
    // retry is not counted).
    {
        const double per_query_us = cap.cost_us(1);
        const double per_second = 1e6 / per_query_us;
        double backlog = 0, worst_wait_s = 0, peak_work = 0, dropped = 0;
        std::uint64_t asks = 0, recs = 0;
        for (std::size_t i = warm; i < seconds_.size(); ++i) {
            const auto a = static_cast<double>(seconds_[i].client_asks);
            asks += seconds_[i].client_asks;
            recs += seconds_[i].client_records;
            peak_work = std::max(peak_work, a * per_query_us / 1e6);
            double left = std::max(0.0, backlog + a - per_second);
            worst_wait_s = std::max(
                worst_wait_s, std::min(backlog + a, static_cast<double>(cap.queue)) / per_second);
            if (left > static_cast<double>(cap.queue)) {
                dropped += left - static_cast<double>(cap.queue);
                left = static_cast<double>(cap.queue);
            }
            backlog = left;
        }
        j["without_localsa"] = {{"records", recs},
                                {"queries", asks},
                                {"records_per_hour", static_cast<double>(recs) / hours},
                                {"dropped", static_cast<std::uint64_t>(dropped)},
                                {"peak_over_capacity", peak_work},
                                {"worst_client_wait_s", worst_wait_s + per_query_us / 1e6}};
    }
    if (p_.per_second) {
        auto& series = j["seconds"] = nlohmann::json::array();
        for (std::size_t i = 0; i < seconds_.size(); ++i) {
            const auto& sec = seconds_[i];
            series.push_back({{"t", static_cast<long>(i) - static_cast<long>(warm)},
                              {"queries", sec.queries},
                              {"dropped", sec.dropped},
                              {"records", sec.records},
                              {"work", sec.work_us / 1e6},
                              {"kinds", kinds_json(sec.kinds)}});
        }
    }
    // The warm-up: a fleet-wide start of localsad.
    std::uint64_t start_total = 0, start_dropped = 0, start_records = 0;
    std::uint32_t start_peak = 0;
    double start_work = 0;
    std::size_t start_work_at = 0;
    for (std::size_t i = 0; i < warm && i < seconds_.size(); ++i) {
        start_total += seconds_[i].queries;
        start_dropped += seconds_[i].dropped;
        start_records += seconds_[i].records;
        start_peak = std::max(start_peak, seconds_[i].queries);
        if (seconds_[i].work_us > start_work) {
            start_work = seconds_[i].work_us;
            start_work_at = i;
        }
    }
    j["startup"] = {{"queries_per_node", static_cast<double>(start_total) / n},
                    {"records", start_records},
                    {"dropped", start_dropped},
                    {"peak_over_capacity", start_work / 1e6},
                    {"peak_over_capacity_at_s", start_work_at},
                    {"peak_over_capacity_by_kind", kinds_json(seconds_[start_work_at].kinds)},
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
            // Traps 64-67, 144 and 145, and with the epoch the plugin's vendor Report.
            subscribed += master_.subscriptions_of(node->port.lid) == (p_.routing_epoch ? 7u : 6u);
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
                    {"fail_open_to_master", fail_open_queries_},
                    {"busy", client_busy_},
                    {"answered_after_busy", client_answered_after_busy_},
                    {"worst_wait_s", static_cast<double>(worst_client_wait_us_) / 1e6}};
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
    // Memory per simulated node: the scenario's peak RSS (VmHWM, reset when the fleet was
    // built) above what the process held before it, per node; without the reset, the
    // process's peak so far (an upper bound).
    const auto peak_kb = peak_reset_ ? peak_rss_kb() : max_rss_kb();
    const auto fleet_kb = std::max(0L, peak_kb - rss_before_kb_);
    j["memory"] = {{"rss_after_first_job_kb", rss_after_job_kb_},
                   {"max_rss_kb", max_rss_kb()},
                   {"peak_rss_kb", peak_kb},
                   {"rss_before_fleet_kb", rss_before_kb_},
                   {"peak_is_the_scenarios", peak_reset_},
                   {"rss_per_node_bytes", static_cast<double>(fleet_kb) * 1024.0 / n},
                   {"limit_per_node_bytes", p_.max_bytes_per_node},
                   {"cache_entries_at_end", entries},
                   {"preloaded_paths_at_end", preloaded}};
    // Each timer that fired is a wake-up of a node's event loop (OS noise on a compute node).
    j["wakeups_per_node_hour"] =
        static_cast<double>(clock_.fired() - fired_at_t0_) / n / std::max(hours, 1e-9);
    return j;
}

} // namespace localsa::fleet_scale
