// The kernel's netlink local path service (RDMA_NL_LS, include/uapi/rdma/rdma_netlink.h): the
// messages ib_sa multicasts on RDMA_NL_GROUP_LS and the replies it accepts. Bytes only, no I/O.
//
// A RESOLVE from the kernel (drivers/infiniband/core/sa_query.c, ib_nl_make_request):
//   nlmsghdr {type RDMA_NL_LS << 10 | RESOLVE, flags NLM_F_REQUEST, seq}
//   rdma_ls_resolve_header {device_name[64], port_num, path_use} (padded to 68)
//   attributes, each with RDMA_NLA_F_MANDATORY in its type: SERVICE_ID (u64, host order),
//   DGID, SGID (16 bytes, network order), TCLASS (u8), PKEY, QOS_CLASS (u16, host order).
// The reply (ib_nl_handle_resolve_resp): the same type and seq, no NLM_F_REQUEST, no family
// header; RDMA_NL_LS_F_ERR and nothing else to make the kernel ask the SA now, or PATH_RECORD
// attributes (struct ib_path_rec_data, 72 bytes, type exactly LS_NLA_TYPE_PATH_RECORD).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace localsa::netlink {

using Bytes = std::span<const std::uint8_t>;

constexpr int kProtocolRdma = 20;       // NETLINK_RDMA
constexpr unsigned kGroupLs = 3;        // RDMA_NL_GROUP_LS
constexpr unsigned kClientLs = 4;       // RDMA_NL_LS
constexpr std::size_t kHeaderSize = 16; // struct nlmsghdr

enum class LsOp : std::uint16_t { Resolve = 0, SetTimeout = 1, IpResolve = 2 };
constexpr std::uint16_t ls_type(LsOp op) {
    return static_cast<std::uint16_t>((kClientLs << 10) + static_cast<unsigned>(op));
}

// NLMSG_ERROR: the kernel's answer to a message it refused (an int errno, negative, then the
// refused message's header).
constexpr std::uint16_t kTypeError = 2;

namespace flag {
constexpr std::uint16_t kRequest = 0x1; // NLM_F_REQUEST
constexpr std::uint16_t kLsErr = 0x100; // RDMA_NL_LS_F_ERR
} // namespace flag

namespace attr {
constexpr std::uint16_t kPathRecord = 1;
constexpr std::uint16_t kTimeout = 2;
constexpr std::uint16_t kServiceId = 3;
constexpr std::uint16_t kDgid = 4;
constexpr std::uint16_t kSgid = 5;
constexpr std::uint16_t kTclass = 6;
constexpr std::uint16_t kPkey = 7;
constexpr std::uint16_t kQosClass = 8;
constexpr std::uint16_t kMandatory = 1 << 13; // RDMA_NLA_F_MANDATORY
// nla_type without NLA_F_NESTED, NLA_F_NET_BYTEORDER and RDMA_NLA_F_MANDATORY
constexpr std::uint16_t kTypeMask = 0x1fff;
} // namespace attr

// LS_RESOLVE_PATH_USE_*
enum class PathUse : std::uint8_t { All = 0, Unidirectional = 1, Gmp = 2 };

// enum ib_path_flags (include/uapi/rdma/ib_user_sa.h)
namespace path_flag {
constexpr std::uint32_t kGmp = 1;
constexpr std::uint32_t kPrimary = 1 << 1;
constexpr std::uint32_t kAlternate = 1 << 2;
constexpr std::uint32_t kOutbound = 1 << 3;
constexpr std::uint32_t kInbound = 1 << 4;
constexpr std::uint32_t kInboundReverse = 1 << 5;
constexpr std::uint32_t kBidirectional = kOutbound | kInboundReverse;
} // namespace path_flag

// The path records the kernel takes from one reply (RDMA_PRIMARY_PATH_MAX_REC_NUM).
constexpr std::size_t kMaxRecordsPerReply = 3;
constexpr std::size_t kPathRecordSize = 64;
constexpr std::size_t kPathRecordDataSize = 8 + kPathRecordSize; // struct ib_path_rec_data
constexpr std::size_t kResolveHeaderSize = 68; // NLMSG_ALIGN(sizeof(rdma_ls_resolve_header))
constexpr std::size_t kDeviceNameMax = 64;

// One netlink message of a datagram; `payload` points into the datagram.
struct Message {
    std::uint16_t type = 0;
    std::uint16_t flags = 0;
    std::uint32_t seq = 0;
    std::uint32_t pid = 0;
    Bytes payload;
    // The sending socket's port id (0: the kernel), from the datagram's source address.
    std::uint32_t sender = 0;
};

// The messages of one datagram, and why the rest (if any) could not be read.
struct SplitResult {
    std::vector<Message> messages;
    const char* error = nullptr;
};
SplitResult split_messages(Bytes datagram);

using GidBytes = std::array<std::uint8_t, 16>;

struct ResolveRequest {
    std::uint32_t seq = 0;
    std::string device;
    std::uint8_t port = 0;
    PathUse path_use = PathUse::All;
    std::optional<std::uint64_t> service_id;
    std::optional<GidBytes> dgid;
    std::optional<GidBytes> sgid;
    std::optional<std::uint8_t> tclass;
    std::optional<std::uint16_t> pkey;
    std::optional<std::uint16_t> qos_class;
};

// A RESOLVE, or why the message is not one localsad can answer (then `request` is empty; the
// kernel should still get the error reply when `seq_valid`).
struct ResolveDecode {
    std::optional<ResolveRequest> request;
    const char* error = nullptr;
};
// Reads the kernel's RESOLVE. An unknown attribute is an error when marked mandatory (the
// kernel marks all of its own) and skipped otherwise; so is a known attribute of the wrong
// length, an attribute running past the message, a path_use out of range, no path attribute.
ResolveDecode decode_resolve(const Message& message);

// A path record as the kernel takes it: ib_path_rec_data flags and the 64-byte record (wire
// order, as the SA sends it).
struct PathRecordData {
    std::uint32_t flags = 0;
    std::array<std::uint8_t, kPathRecordSize> record{};
};

// The flags ib_sa needs to take a record for `use` (ib_nl_process_good_resolve_rsp): the
// master's record is the primary path; it is usable for GMPs and both directions when it is
// reversible (PathRecord byte 49, bit 7), else outbound only.
std::uint32_t path_flags(PathUse use, bool reversible);
// True when the kernel takes a record with `flags` for `use` (the kernel's own mask test).
bool kernel_accepts(PathUse use, std::uint32_t flags);

// The reply to RESOLVE `seq` carrying `records` (at most kMaxRecordsPerReply are used).
std::vector<std::uint8_t> encode_resolve_reply(std::uint32_t seq,
                                               std::span<const PathRecordData> records);
// The error reply: the kernel sends the query to the SA at once.
std::vector<std::uint8_t> encode_resolve_error(std::uint32_t seq);
// SET_TIMEOUT: how long the kernel waits for a reply before it asks the SA (it clamps to
// 100-200000 ms).
std::vector<std::uint8_t> encode_set_timeout(std::uint32_t seq, std::uint32_t timeout_ms);

// The kernel's bounds for SET_TIMEOUT (IB_SA_LOCAL_SVC_TIMEOUT_MIN/MAX).
constexpr std::uint32_t kTimeoutMinMs = 100;
constexpr std::uint32_t kTimeoutMaxMs = 200'000;

} // namespace localsa::netlink
