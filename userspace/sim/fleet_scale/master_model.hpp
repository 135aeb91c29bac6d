// The master SA of a simulated fabric, in process: it answers what the nodes' local SAs ask
// (ClassPortInfo, InformInfo Set, InformInfoRecord Get, PathRecord Get and GetTable), as OpenSM
// answers them on a fabric where every port is a full member of the default partition and QoS
// is off, holds the nodes' subscriptions, and builds the Reports it sends them. It counts every
// query it receives. Its capacity is MasterQueue's: a query costs it time by its records, it
// waits in a bounded queue, and what the queue cannot take is dropped (userspace/sim/fleet_scale).
#pragma once

#include "ib/gid.hpp"
#include "ib/inform_info.hpp"
#include "ib/mad.hpp"

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

namespace localsa::fleet_scale {

// What kind of work a query is to the master (one transaction each; a GetTable also has its
// records counted).
enum class QueryKind {
    PathGet,
    PathTable,
    ClassPortInfo,
    InformInfoSet,
    InformInfoRecord,
    ServiceRecord,
    Other,
};
inline constexpr std::size_t kQueryKinds = 7;
const char* kind_name(QueryKind kind);

struct Port {
    std::uint16_t lid = 0;
    sa::Gid gid;
};

struct MasterAnswer {
    QueryKind kind = QueryKind::Other;
    std::vector<std::uint8_t> response; // empty: the master drops the query (none today)
    std::size_t records = 0;            // PathRecords the master computed for it
};

// The master's capacity, calibrated from the project's own vm measurements of OpenSM 3.3.23
// (docs/benchmarks.md, part (f), N = 1,024, 6.12 guest under TCG): 1,118,208 preloaded paths
// (1,024 GetTables) in 23.7 s of OpenSM CPU = 47,182 records/s (~21 us a path), and 65,472 Gets
// in 29.14 s = 2,247 transactions/s (~445 us a Get, its one record included).
struct MasterCapacity {
    double records_per_s = 47'182;
    double transactions_per_s = 2'247;
    // Queries waiting at most (beyond it the master drops: the kernel's MAD receive queue,
    // ib_mad's recv_queue_size, 512, in front of OpenSM's dispatcher).
    std::size_t queue = 512;
    // A query that finds the oldest waiting query older than this is answered BUSY at once,
    // computing nothing (OpenSM's max_msg_fifo_timeout: 50 x the 200 ms transaction timeout).
    std::int64_t busy_after_us = 10'000'000;

    // The master's time for one query of `records` PathRecords, in microseconds: a
    // transaction (its first record included) and the records after the first.
    double cost_us(std::size_t records) const {
        return 1e6 / transactions_per_s +
               (records > 1 ? static_cast<double>(records - 1) * 1e6 / records_per_s : 0.0);
    }
};

// One server working through its queue in order (first come, first served) on simulated time.
class MasterQueue {
public:
    explicit MasterQueue(MasterCapacity capacity) : cap_(capacity) {}
    enum class Admit { Served, Busy, Dropped };
    struct Outcome {
        Admit admit = Admit::Served;
        std::int64_t done_us = 0; // Served: when its answer leaves the master
    };
    // A query arrives at `now_us` (non-decreasing): whether the master takes it (Served), answers
    // BUSY or drops it. Nothing is computed for it unless serve() follows.
    Admit offer(std::int64_t now_us);
    // The query just offered and taken, of `records` records: when its answer leaves.
    std::int64_t serve(std::int64_t now_us, std::size_t records);
    // Both at once.
    Outcome admit(std::int64_t now_us, std::size_t records) {
        const auto a = offer(now_us);
        return {a, a == Admit::Served ? serve(now_us, records) : now_us};
    }
    const MasterCapacity& capacity() const { return cap_; }
    std::uint64_t dropped() const { return dropped_; }
    std::uint64_t busy() const { return busy_; }
    std::int64_t worst_wait_us() const { return worst_wait_us_; }

private:
    MasterCapacity cap_;
    // When each query taken and not yet answered is done, in order.
    std::deque<std::int64_t> waiting_;
    double free_at_us_ = std::numeric_limits<double>::lowest(); // when the server is free
    std::uint64_t dropped_ = 0, busy_ = 0;
    std::int64_t worst_wait_us_ = 0;
};

class MasterModel {
public:
    explicit MasterModel(std::uint16_t sm_lid) : sm_lid_(sm_lid) {}

    // A port the master knows (paths to it are answered).
    void add_port(const Port& port);
    // A port goes (its switch is down: paths to and from it are not answered) or comes back.
    void set_down(const sa::Gid& gid, bool down);
    bool knows(const sa::Gid& gid) const { return by_guid_.contains(gid.guid()); }
    bool is_down(const sa::Gid& gid) const { return down_.contains(gid.guid()); }
    // The rate the master answers (a re-route over a slower or faster spine changes it).
    void set_rate(std::uint8_t rate) { rate_ = rate; }
    std::size_t ports() const { return ports_.size(); }
    std::uint16_t sm_lid() const { return sm_lid_; }

    // What a request is, by its attribute and method (also for one dropped unread).
    static QueryKind kind_of(const std::vector<std::uint8_t>& request);
    // The answer to one request from the port at `from_lid`.
    MasterAnswer answer(const std::vector<std::uint8_t>& request, std::uint16_t from_lid);

    // The ports subscribed to `trap` (by LID), in LID order.
    std::vector<std::uint16_t> subscribers(std::uint16_t trap) const;
    std::size_t subscriptions_of(std::uint16_t lid) const;
    // A Report of `trap` about `subject` (traps 64-67) issued by this master, with `tid`.
    std::vector<std::uint8_t> report(std::uint16_t trap, const sa::Gid& subject,
                                     std::uint64_t tid) const;
    // A standby SM takes over at `new_sm_lid`: it knows no subscription (OpenSM keeps them in
    // memory only), and it answers from its own LID.
    void fail_over(std::uint16_t new_sm_lid);

    // The routing epoch of userspace/opensm/localsa_epoch.c, when the master runs the plugin:
    // the ServiceRecord "localsa.routing-epoch" (ServiceID 0x100000004c534145, ServiceData64 =
    // epoch, SM port GUID) is answered to a ServiceRecord Get, and a routing change bumps it.
    void set_routing_epoch(std::optional<std::uint64_t> epoch) { epoch_ = epoch; }
    const std::optional<std::uint64_t>& routing_epoch() const { return epoch_; }
    // The plugin's sweep after a routing change (a re-route, ports gone or back): the next epoch.
    void bump_routing_epoch() {
        if (epoch_)
            ++*epoch_;
    }
    std::uint64_t sm_port_guid() const { return kSmGuidBase + sm_lid_; }
    // The plugin's vendor Report (DeviceID 0x4c53, "LSAE" + epoch + SM port GUID), with `tid`.
    std::vector<std::uint8_t> epoch_report(std::uint64_t tid) const;
    static constexpr std::uint16_t kEpochDeviceId = 0x4c53;

private:
    static constexpr std::uint64_t kSmGuidBase = 0x0002c90300abc000ULL;
    static constexpr std::uint64_t kSubnetPrefix = 0xfe80000000000000ULL;
    MasterAnswer service_record(const mad::SaMad& q);
    MasterAnswer path_get(const mad::SaMad& q, std::uint16_t from_lid);
    MasterAnswer path_table(const mad::SaMad& q, std::uint16_t from_lid);
    MasterAnswer inform_info_table(const mad::SaMad& q, mad::Bytes request) const;
    std::vector<std::uint8_t> path_record(const Port& src, const Port& dst, std::uint16_t pkey,
                                          bool reversible) const;
    const Port* source_of(const mad::SaMad& q, std::uint16_t from_lid) const;

    std::uint16_t sm_lid_;
    std::vector<Port> ports_;
    std::unordered_map<std::uint64_t, std::size_t> by_guid_; // GUID -> index in ports_
    std::unordered_map<std::uint16_t, std::size_t> by_lid_;
    std::map<std::uint16_t, std::map<std::uint16_t, sa::InformInfo>> subscribed_; // LID -> trap
    std::set<std::uint64_t> down_; // GUIDs of ports that went
    std::uint8_t rate_ = 7;
    std::optional<std::uint64_t> epoch_;
};

} // namespace localsa::fleet_scale
