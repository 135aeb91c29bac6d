#include "sim/fleet_scale/master_model.hpp"

#include "ib/bytes.hpp"
#include "ib/class_port_info.hpp"
#include "ib/constants.hpp"
#include "ib/inform_info.hpp"
#include "ib/notice.hpp"
#include "ib/path_record.hpp"
#include "ib/response.hpp"

#include <algorithm>

namespace localsa::fleet_scale {

using namespace mad;

namespace {
// The plugin's ServiceRecord (userspace/opensm/localsa_epoch.c).
constexpr std::uint64_t kEpochServiceId = 0x100000004c534145ULL;
constexpr std::size_t kServiceRecordSize = 176;
} // namespace

const char* kind_name(QueryKind kind) {
    switch (kind) {
    case QueryKind::PathGet:
        return "path_get";
    case QueryKind::PathTable:
        return "path_table";
    case QueryKind::ClassPortInfo:
        return "class_port_info";
    case QueryKind::InformInfoSet:
        return "inform_info_set";
    case QueryKind::InformInfoRecord:
        return "inform_info_record";
    case QueryKind::ServiceRecord:
        return "service_record";
    case QueryKind::Other:
        break;
    }
    return "other";
}

void MasterModel::add_port(const Port& port) {
    by_guid_[port.gid.guid()] = ports_.size();
    by_lid_[port.lid] = ports_.size();
    ports_.push_back(port);
}

MasterQueue::Admit MasterQueue::offer(std::int64_t now_us) {
    while (!waiting_.empty() && waiting_.front() <= now_us)
        waiting_.pop_front();
    // The work ahead of a new query: past max_msg_fifo_timeout the dispatcher answers BUSY.
    if (!waiting_.empty() && static_cast<std::int64_t>(free_at_us_) - now_us > cap_.busy_after_us) {
        ++busy_;
        return Admit::Busy;
    }
    if (waiting_.size() >= cap_.queue) {
        ++dropped_;
        return Admit::Dropped;
    }
    return Admit::Served;
}

std::int64_t MasterQueue::serve(std::int64_t now_us, std::size_t records) {
    const double start = std::max(free_at_us_, static_cast<double>(now_us));
    free_at_us_ = start + cap_.cost_us(records);
    const auto done = static_cast<std::int64_t>(free_at_us_);
    waiting_.push_back(done);
    worst_wait_us_ = std::max(worst_wait_us_, done - now_us);
    return done;
}

void MasterModel::set_down(const sa::Gid& gid, bool down) {
    if (down)
        down_.insert(gid.guid());
    else
        down_.erase(gid.guid());
}

void MasterModel::fail_over(std::uint16_t new_sm_lid) {
    sm_lid_ = new_sm_lid;
    subscribed_.clear();
    // The new master's plugin publishes its own record (its port GUID) on becoming master.
    bump_routing_epoch();
}

std::vector<std::uint8_t> MasterModel::epoch_report(std::uint64_t tid) const {
    SaMad r;
    r.header.method = method::kReport;
    r.header.attr_id = attr::kNotice;
    r.header.tid = tid;
    sa::Notice n;
    n.is_generic = false;
    n.type = 4;                 // informational
    n.producer_type = 0x4c5341; // the vendor ID field: "LSA"
    n.trap_number = kEpochDeviceId;
    n.issuer_lid = sm_lid_;
    n.issuer_gid = sa::Gid::from_parts(kSubnetPrefix, sm_port_guid());
    const char tag[] = "LSAE";
    std::copy_n(tag, 4, n.data_details.begin());
    const auto epoch = epoch_.value_or(0);
    const auto guid = sm_port_guid();
    for (int i = 0; i < 8; ++i) {
        n.data_details[4 + i] = static_cast<std::uint8_t>(epoch >> (56 - 8 * i));
        n.data_details[12 + i] = static_cast<std::uint8_t>(guid >> (56 - 8 * i));
    }
    n.pack(r.data);
    return r.pack();
}

MasterAnswer MasterModel::service_record(const SaMad& q) {
    // OpenSM's ServiceRecord Get (osm_sa_service_record.c): the records matching the component
    // mask; none is NO_RECORDS, more than one TOO_MANY_RECORDS. The plugin's is the only one.
    const auto request = q.pack();
    constexpr std::uint64_t kServiceIdMask = 1;
    const bool matches =
        epoch_ && (!(q.comp_mask & kServiceIdMask) || load_be64(q.data, 0) == kEpochServiceId);
    if (!matches)
        return {QueryKind::ServiceRecord, sa::make_error_response(request, status::kSaNoRecords),
                0};
    // IBA 15.2.5.14: ServiceID 0, ServiceGID 8, ServiceP_Key 24, ServiceLease 28, ServiceKey 32,
    // ServiceName 48 (64), ServiceData8 112, ServiceData16 128, ServiceData32 144,
    // ServiceData64 160; 176 bytes.
    std::vector<std::uint8_t> rec(kServiceRecordSize);
    store_be64(rec, 0, kEpochServiceId);
    store_be64(rec, 8, kSubnetPrefix);
    store_be64(rec, 16, sm_port_guid());
    store_be16(rec, 24, 0xffff);
    store_be32(rec, 28, 0xffffffff); // infinite lease
    const char name[] = "localsa.routing-epoch";
    std::copy_n(name, sizeof name - 1, rec.begin() + 48);
    store_be64(rec, 160, *epoch_);
    store_be64(rec, 168, sm_port_guid());
    return {QueryKind::ServiceRecord, sa::make_records_response(request, kServiceRecordSize, rec),
            0};
}

std::vector<std::uint16_t> MasterModel::subscribers(std::uint16_t trap) const {
    std::vector<std::uint16_t> out;
    for (const auto& [lid, traps] : subscribed_)
        if (traps.contains(trap))
            out.push_back(lid);
    return out;
}

MasterAnswer MasterModel::inform_info_table(const SaMad& q, Bytes request) const {
    // SubscriberGID selects (OpenSM numbers every subscription Enum 0): one 64-byte
    // InformInfoRecord per subscription held, as OpenSM's GetTable answers.
    constexpr std::size_t kRecordSize = 64;
    sa::Gid subscriber;
    std::copy_n(q.data.begin(), 16, subscriber.raw.begin());
    std::vector<std::uint8_t> records;
    if (const auto port = by_guid_.find(subscriber.guid()); port != by_guid_.end())
        if (const auto it = subscribed_.find(ports_[port->second].lid); it != subscribed_.end())
            for (const auto& [trap, info] : it->second) {
                std::vector<std::uint8_t> r(kRecordSize);
                std::copy(subscriber.raw.begin(), subscriber.raw.end(), r.begin());
                info.pack(MutableBytes{r}.subspan(24, sa::InformInfo::kSize));
                records.insert(records.end(), r.begin(), r.end());
            }
    return {QueryKind::InformInfoRecord, sa::make_records_response(request, kRecordSize, records),
            0};
}

std::size_t MasterModel::subscriptions_of(std::uint16_t lid) const {
    const auto it = subscribed_.find(lid);
    return it == subscribed_.end() ? 0 : it->second.size();
}

std::vector<std::uint8_t> MasterModel::report(std::uint16_t trap, const sa::Gid& subject,
                                              std::uint64_t tid) const {
    SaMad r;
    r.header.method = method::kReport;
    r.header.attr_id = attr::kNotice;
    r.header.tid = tid;
    sa::Notice n;
    n.is_generic = true;
    n.type = 4;          // informational
    n.producer_type = 4; // class manager (the SM)
    n.trap_number = trap;
    n.issuer_lid = sm_lid_; // traps 64-67 are the SM's own
    std::copy(subject.raw.begin(), subject.raw.end(), n.data_details.begin() + 6);
    n.pack(r.data);
    return r.pack();
}

const Port* MasterModel::source_of(const SaMad& q, std::uint16_t from_lid) const {
    const auto pr = sa::PathRecord::unpack(q.data);
    if (q.comp_mask & sa::pr_mask::kSgid) {
        const auto it = by_guid_.find(pr.sgid.guid());
        return it == by_guid_.end() ? nullptr : &ports_[it->second];
    }
    if (q.comp_mask & sa::pr_mask::kSlid) {
        const auto it = by_lid_.find(pr.slid);
        return it == by_lid_.end() ? nullptr : &ports_[it->second];
    }
    // OpenSM takes the requester's port as the source.
    const auto it = by_lid_.find(from_lid);
    return it == by_lid_.end() ? nullptr : &ports_[it->second];
}

std::vector<std::uint8_t> MasterModel::path_record(const Port& src, const Port& dst,
                                                   std::uint16_t pkey, bool reversible) const {
    // What OpenSM 3.3 answers on a fat tree without QoS: SL 0, MTU 2048 (4), 40 Gb/s (7),
    // packet life 18 with their "exactly" selectors, hop limit 0 within the subnet.
    sa::PathRecord r;
    r.dgid = dst.gid;
    r.sgid = src.gid;
    r.dlid = dst.lid;
    r.slid = src.lid;
    r.reversible = reversible;
    r.pkey = pkey;
    r.mtu_selector = 2;
    r.mtu = 4;
    r.rate_selector = 2;
    r.rate = rate_;
    r.packet_life_selector = 2;
    r.packet_life = 18;
    const auto b = r.bytes();
    return {b.begin(), b.end()};
}

MasterAnswer MasterModel::path_get(const SaMad& q, std::uint16_t from_lid) {
    MasterAnswer a{QueryKind::PathGet, {}, 0};
    const auto pr = sa::PathRecord::unpack(q.data);
    const auto* src = source_of(q, from_lid);
    const Port* dst = nullptr;
    if (q.comp_mask & sa::pr_mask::kDgid) {
        const auto it = by_guid_.find(pr.dgid.guid());
        dst = it == by_guid_.end() ? nullptr : &ports_[it->second];
    } else if (q.comp_mask & sa::pr_mask::kDlid) {
        const auto it = by_lid_.find(pr.dlid);
        dst = it == by_lid_.end() ? nullptr : &ports_[it->second];
    }
    const auto request = q.pack();
    if (!src || !dst || down_.contains(src->gid.guid()) || down_.contains(dst->gid.guid())) {
        a.response = sa::make_error_response(request, status::kSaNoRecords);
        return a;
    }
    const std::uint16_t pkey = (q.comp_mask & sa::pr_mask::kPKey) ? pr.pkey : 0xffff;
    const bool reversible = !(q.comp_mask & sa::pr_mask::kReversible) || pr.reversible;
    const auto rec = path_record(*src, *dst, pkey, reversible);
    a.records = 1;
    a.response = sa::make_records_response(request, sa::PathRecord::kSize, rec);
    return a;
}

MasterAnswer MasterModel::path_table(const SaMad& q, std::uint16_t from_lid) {
    MasterAnswer a{QueryKind::PathTable, {}, 0};
    const auto pr = sa::PathRecord::unpack(q.data);
    const auto* src = source_of(q, from_lid);
    const auto request = q.pack();
    if (!src || down_.contains(src->gid.guid())) {
        a.response = sa::make_error_response(request, status::kSaNoRecords);
        return a;
    }
    const std::uint16_t pkey = (q.comp_mask & sa::pr_mask::kPKey) ? pr.pkey : 0xffff;
    // Every port of the partition, this one included, one reversible path each: OpenSM's
    // GetTable for a source GID (pr_rcv_get_port_pair_paths over all ports).
    std::vector<std::uint8_t> records;
    records.reserve(ports_.size() * sa::PathRecord::kSize);
    for (const auto& dst : ports_) {
        if (down_.contains(dst.gid.guid()))
            continue;
        const auto rec = path_record(*src, dst, pkey, true);
        records.insert(records.end(), rec.begin(), rec.end());
        ++a.records;
    }
    // In process the whole RMPP payload arrives as one buffer (what the kernel's RMPP layer
    // hands over once it has reassembled the segments): 56 + n x 64 bytes.
    a.response = sa::make_records_response(request, sa::PathRecord::kSize, records);
    return a;
}

QueryKind MasterModel::kind_of(const std::vector<std::uint8_t>& request) {
    const auto q = SaMad::unpack(request);
    if (!q)
        return QueryKind::Other;
    const auto m = q->header.method;
    switch (q->header.attr_id) {
    case attr::kPathRecord:
        return m == method::kGetTable ? QueryKind::PathTable : QueryKind::PathGet;
    case attr::kClassPortInfo:
        return QueryKind::ClassPortInfo;
    case attr::kInformInfo:
        return QueryKind::InformInfoSet;
    case attr::kServiceRecord:
        return QueryKind::ServiceRecord;
    case attr::kInformInfoRecord:
        return QueryKind::InformInfoRecord;
    default:
        return QueryKind::Other;
    }
}

MasterAnswer MasterModel::answer(const std::vector<std::uint8_t>& request, std::uint16_t from_lid) {
    const auto q = SaMad::unpack(request);
    if (!q)
        return {QueryKind::Other, {}, 0};
    const auto m = q->header.method;
    switch (q->header.attr_id) {
    case attr::kPathRecord:
        if (m == method::kGet)
            return path_get(*q, from_lid);
        if (m == method::kGetTable)
            return path_table(*q, from_lid);
        break;
    case attr::kClassPortInfo: {
        if (m != method::kGet)
            break;
        sa::ClassPortInfo cpi;
        cpi.capability_mask = 0x2602; // OpenSM 3.3: traps, options, multicast, ... (no QoS)
        cpi.resp_time_value = 18;
        std::vector<std::uint8_t> data(sa::ClassPortInfo::kSize);
        cpi.pack(data);
        return {QueryKind::ClassPortInfo,
                sa::make_records_response(request, sa::ClassPortInfo::kSize, data), 0};
    }
    case attr::kInformInfo: {
        if (m != method::kSet)
            break;
        const auto info = sa::InformInfo::unpack(q->data);
        auto& traps = subscribed_[from_lid];
        if (info.subscribe)
            traps[info.trap_number] = info;
        else
            traps.erase(info.trap_number);
        // OpenSM answers a Set with the InformInfo it was given (GetResp, status 0).
        return {
            QueryKind::InformInfoSet,
            sa::make_records_response(request, sa::InformInfo::kSize,
                                      Bytes{request}.subspan(kSaHeaderSize, sa::InformInfo::kSize)),
            0};
    }
    case attr::kServiceRecord:
        if (m == method::kGet)
            return service_record(*q);
        break;
    case attr::kInformInfoRecord: {
        if (m == method::kGetTable)
            return inform_info_table(*q, request);
        if (m != method::kGet)
            break;
        // SubscriberGID selects: OpenSM's answer to a Get is NO_RECORDS, the record, or
        // TOO_MANY_RECORDS. The record's content is not read by the asker.
        const sa::Gid subscriber = [&] {
            sa::Gid g;
            std::copy_n(q->data.begin(), 16, g.raw.begin());
            return g;
        }();
        const auto it = by_guid_.find(subscriber.guid());
        const auto held = it == by_guid_.end() ? 0 : subscriptions_of(ports_[it->second].lid);
        if (held == 0)
            return {QueryKind::InformInfoRecord,
                    sa::make_error_response(request, status::kSaNoRecords), 0};
        if (held > 1)
            return {QueryKind::InformInfoRecord,
                    sa::make_error_response(request, status::kSaTooManyRecords), 0};
        std::vector<std::uint8_t> rec(80);
        std::copy_n(q->data.begin(), 16, rec.begin());
        return {QueryKind::InformInfoRecord, sa::make_records_response(request, 80, rec), 0};
    }
    default:
        break;
    }
    return {QueryKind::Other, sa::make_error_response(request, status::kSaReqInvalid), 0};
}

} // namespace localsa::fleet_scale
