// The master SA of a simulated fabric, in process: it answers what the nodes' local SAs ask
// (ClassPortInfo, InformInfo Set, InformInfoRecord Get, PathRecord Get and GetTable), as OpenSM
// answers them on a fabric where every port is a full member of the default partition and QoS
// is off, holds the nodes' subscriptions, and builds the Reports it sends them. It counts every
// query it receives. It has no capacity limit of its own: the load it is offered is what the
// fleet-scale driver measures (userspace/sim/fleet_scale/main.cpp).
#pragma once

#include "ib/gid.hpp"
#include "ib/mad.hpp"

#include <cstdint>
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
    Other,
};
inline constexpr std::size_t kQueryKinds = 6;
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

class MasterModel {
public:
    explicit MasterModel(std::uint16_t sm_lid) : sm_lid_(sm_lid) {}

    // A port the master knows (paths to it are answered).
    void add_port(const Port& port);
    bool knows(const sa::Gid& gid) const { return by_guid_.contains(gid.guid()); }
    std::size_t ports() const { return ports_.size(); }
    std::uint16_t sm_lid() const { return sm_lid_; }

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

private:
    MasterAnswer path_get(const mad::SaMad& q, std::uint16_t from_lid);
    MasterAnswer path_table(const mad::SaMad& q, std::uint16_t from_lid);
    std::vector<std::uint8_t> path_record(const Port& src, const Port& dst, std::uint16_t pkey,
                                          bool reversible) const;
    const Port* source_of(const mad::SaMad& q, std::uint16_t from_lid) const;

    std::uint16_t sm_lid_;
    std::vector<Port> ports_;
    std::unordered_map<std::uint64_t, std::size_t> by_guid_; // GUID -> index in ports_
    std::unordered_map<std::uint16_t, std::size_t> by_lid_;
    std::map<std::uint16_t, std::set<std::uint16_t>> subscribed_; // LID -> traps
};

} // namespace localsa::fleet_scale
