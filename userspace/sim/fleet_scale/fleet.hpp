// A fleet of N local SAs (LocalSa + Coherence, as localsad runs them) on one manual clock,
// against an in-process master SA (MasterModel), through one simulated hour of a scenario.
// Every query that reaches the master is counted per simulated second and per node; the
// background ones are checked against each node's budget.
#pragma once

#include "engine/clock.hpp"
#include "engine/coherence/coherence.hpp"
#include "engine/local_sa.hpp"
#include "sim/fleet_scale/master_model.hpp"

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace localsa::fleet_scale {

enum class Scenario { Idle, Jobs, Trap64, FailOver, Steady, PowerOn, Reroute, SwitchDown };
const char* scenario_name(Scenario s);
std::optional<Scenario> parse_scenario(const std::string& name);

// The kernel's rule for a redirected query its live local SA has not answered.
enum class KernelFallback {
    Timeout, // after sa_redirect_timeout_ms (FleetParams::fail_open): the series before patch 8
    Probe,   // after the caller's timeout (patch 8: a live local SA keeps its Gets)
    Wait,    // never: the client waits for its local SA (a bound no kernel gives)
};

struct FleetParams {
    std::size_t nodes = 256;
    // The measured span (after the warm-up: every node started, subscribed and preloaded).
    std::chrono::seconds duration{3600};
    std::chrono::seconds warmup{60};
    bool per_second = false; // the report lists what each second offered the master
    // Scenario times, from the start of the measured span.
    std::chrono::seconds job_period{600};  // Jobs: a job start every this long
    std::chrono::seconds event_at{1200};   // Trap64 and FailOver: when the event happens
    std::chrono::seconds new_port_use{60}; // Trap64: the nodes ask for the new port this later
    // Steady, PowerOn, Reroute, SwitchDown: every node uses one of its `targets` paths every
    // `use_period` (storage-like: the same few peers, a few times a minute).
    std::chrono::seconds use_period{20};
    std::size_t targets = 4;
    std::chrono::seconds power_on_window{10}; // PowerOn: every node starts within this
    std::chrono::seconds outage{600};         // Reroute, SwitchDown: back this long after
    std::size_t leaf_hosts = 18;              // SwitchDown: the hosts of the leaf (36-port)
    // Idle: the window after which the cache must be silent (0: its idle window).
    std::chrono::seconds idle_target{0};
    // The master's capacity in queries per second (OpenSM's throughput from bench part b),
    // compared with the busiest second's query count (peak_qps_over_capacity_qps).
    double capacity = 0;
    // The master's capacity in records and transactions, its queue and BUSY (MasterQueue).
    MasterCapacity master;
    // How long the master takes to answer (its queueing is not modelled).
    std::chrono::microseconds master_latency{1000};
    // The kernel's sa_redirect_timeout_ms: a client query localsa has not answered by then goes
    // to the master from the kernel itself (fail-open); counted as a master query.
    std::chrono::milliseconds fail_open{200};
    // What the kernel does with a query its live local SA has not answered (--kernel-fallback).
    KernelFallback kernel_fallback = KernelFallback::Timeout;
    // The consumer's own timeout for one try (KernelFallback::Probe: how long a Get waits at a
    // live local SA before the kernel sends it to the master).
    std::chrono::milliseconds caller_timeout{2000};
    // The master runs userspace/opensm/localsa_epoch.c (its routing epoch ServiceRecord, bumped
    // with a Report on a routing change) and the nodes use it (localsad's default), or neither
    // (the TTL rules alone, as before the epoch).
    bool routing_epoch = true;
    // The nodes preload (localsad's default: the whole table per PKey up to
    // CoherenceConfig::preload_max_ports, their warm set above it), or not (off: every path is
    // read through the cache on use). A whole table is ~2.5 MB per node at N = 16,384.
    bool preload = true;
    // Memory per simulated node at most (issue 25: 200 KB), for --check: the scenario's peak
    // RSS above the process's before the fleet was built, per node.
    std::size_t max_bytes_per_node = 200'000;
    LocalSaConfig local_sa;
    coherence::CoherenceConfig coherence;
};

class Fleet {
public:
    explicit Fleet(FleetParams params);
    ~Fleet();
    Fleet(const Fleet&) = delete;
    Fleet& operator=(const Fleet&) = delete;

    // Runs the warm-up and the measured span of `scenario`; returns its report (JSON).
    nlohmann::json run(Scenario scenario);

private:
    struct Node;
    class NodeTransport;
    struct Pending {
        std::int64_t due_us;
        std::uint64_t seq;
        std::function<void()> action;
        bool operator>(const Pending& o) const {
            return due_us != o.due_us ? due_us > o.due_us : seq > o.seq;
        }
    };

    std::int64_t now_us() const;
    // The nodes ask whole tables: the preload is on and the fabric within its threshold.
    bool asks_tables() const;
    void at(std::int64_t due_us, std::function<void()> action);
    void run_until(std::int64_t end_us);
    void on_send(std::size_t node, mad::Bytes bytes, const transport::MadAddress& to);
    void job_start(std::uint16_t first_port);
    void ask(std::size_t node, const Port& dst, std::uint64_t service_id);
    void inject_report(std::uint16_t trap, const sa::Gid& subject);
    void fail_over();
    void steady_use(std::size_t node, std::int64_t t_us, std::size_t k, std::int64_t end_us);
    void switch_leaf(bool down);
    // A routing change at the master: the plugin bumps its epoch and Reports it to subscribers.
    void routing_changed();
    // Counts a query offered to the master at now_us() (its time of `records` records).
    void count_offered(std::size_t records, bool background, MasterQueue::Admit admit);
    nlohmann::json report(Scenario scenario);

    FleetParams p_;
    boost::asio::io_context io_;
    ManualClock clock_;
    Clock::time_point t0_; // the start of the measured span
    MasterModel master_;
    std::vector<std::unique_ptr<Node>> nodes_;
    std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending_;
    std::uint64_t seq_ = 0;
    std::uint32_t next_client_tid_ = 1;
    // Client questions not answered by the time their ask() returned (answered ones leave no
    // state): when each was asked, in ms since the warm-up began, by client TID.
    std::unordered_map<std::uint32_t, std::uint32_t> client_waiting_;
    // The kernel's fail-open of each such question, due in order (every one fail_open after its
    // ask): a FIFO instead of a closure each on pending_.
    struct FailOpen {
        std::int64_t due_us;
        std::uint64_t seq; // pending_'s order among events due at the same time
        std::uint32_t tid;
        bool answerable;
    };
    // The question being asked (its answer may come before ask() returns): no state beyond this.
    struct Asking {
        std::uint32_t tid = 0;
        std::uint32_t asked_ms = 0;
        bool answered = false;
    };
    Asking asking_;
    void client_answered(std::uint32_t asked_ms);
    void client_busy(Node& n, std::uint32_t asked_ms);
    // A table reached n: its clients answered BUSY are served at their next retry.
    void busy_clients_served(Node& n);
    std::deque<FailOpen> fail_opens_;
    void fail_open(const FailOpen& f);
    std::uint64_t report_tid_ = 0x5e000000;

    // What the master received.
    struct Second {
        std::uint32_t queries = 0;
        std::uint32_t background = 0;
        std::uint64_t records = 0;
        std::uint32_t path_queries = 0;      // PathRecord Get and GetTable
        double work_us = 0;                  // the master's time for what it was offered
        std::uint32_t client_asks = 0;       // client questions (without localsa: one Get each)
        std::uint32_t client_records = 0;    // ... of which answerable (the peer is up)
        std::uint32_t dropped = 0, busy = 0; // by the master (its queue full; BUSY)
        std::array<std::uint32_t, kQueryKinds> kinds{}; // what was offered, by kind
    };
    std::vector<Second> seconds_; // from the start of the warm-up
    std::array<std::uint64_t, kQueryKinds> by_kind_{};
    std::uint64_t fail_open_queries_ = 0;
    std::uint64_t lost_queries_ = 0; // sent to a master that is gone
    std::uint64_t report_acks_ = 0;
    std::uint64_t client_queries_ = 0, client_answered_locally_ = 0;
    // Answered BUSY by their local SA; of them, served by the table that came later.
    std::uint64_t client_busy_ = 0, client_answered_after_busy_ = 0;
    std::int64_t event_us_ = -1; // the scenario's event (trap, fail-over)
    MasterQueue queue_;
    std::int64_t worst_client_wait_us_ = 0;
    long rss_after_job_kb_ = 0;
    std::uint64_t fired_at_t0_ = 0; // the clock's timer firings when the measured span began
    // The process's resident memory before the fleet was built (after malloc_trim), and whether
    // its peak (VmHWM) was reset then, so that the scenario's own peak is read.
    long rss_before_kb_ = 0;
    bool peak_reset_ = false;
};

} // namespace localsa::fleet_scale
