// MAD and SA constants (IBA vol. 1, chapters 13 and 15).
#pragma once

#include <cstddef>
#include <cstdint>

namespace localsa::mad {

inline constexpr std::size_t kMadSize = 256;
inline constexpr std::size_t kMadHeaderSize = 24;
inline constexpr std::size_t kRmppHeaderOffset = 24;
inline constexpr std::size_t kSaHeaderSize = 56;
inline constexpr std::size_t kSaDataSize = kMadSize - kSaHeaderSize;
inline constexpr std::size_t kSmpDataOffset = 64;

// Where the header fields are, for code that reads or changes one in place (MadHeader and the
// SA header's codec hold the whole layout).
namespace offset {
inline constexpr std::size_t kBaseVersion = 0;
inline constexpr std::size_t kMgmtClass = 1;
inline constexpr std::size_t kClassVersion = 2;
inline constexpr std::size_t kMethod = 3;
inline constexpr std::size_t kStatus = 4;
inline constexpr std::size_t kAttrId = 16;
inline constexpr std::size_t kSmKey = 36;      // SA header
inline constexpr std::size_t kAttrOffset = 44; // SA header, in 8-byte words
inline constexpr std::size_t kCompMask = 48;   // SA header
} // namespace offset

inline constexpr std::uint8_t kBaseVersion = 1;
inline constexpr std::uint8_t kSaClassVersion = 2;
inline constexpr std::uint8_t kSmpClassVersion = 1;
// The well-known Q_Key of QP1 (GSI), also the one the SA's Reports and answers to a client's UD
// QP carry.
inline constexpr std::uint32_t kQp1Qkey = 0x80010000;

namespace mgmt_class {
inline constexpr std::uint8_t kSubnLid = 0x01;
inline constexpr std::uint8_t kSubnAdm = 0x03;
inline constexpr std::uint8_t kSubnDirected = 0x81;
} // namespace mgmt_class

namespace method {
inline constexpr std::uint8_t kGet = 0x01;
inline constexpr std::uint8_t kSet = 0x02;
inline constexpr std::uint8_t kSend = 0x03;
inline constexpr std::uint8_t kTrap = 0x05;
inline constexpr std::uint8_t kReport = 0x06;
inline constexpr std::uint8_t kTrapRepress = 0x07;
inline constexpr std::uint8_t kGetTable = 0x12;
inline constexpr std::uint8_t kGetTraceTable = 0x13;
inline constexpr std::uint8_t kGetMulti = 0x14;
inline constexpr std::uint8_t kDelete = 0x15;
inline constexpr std::uint8_t kResponseBit = 0x80;
inline constexpr std::uint8_t kGetResp = kGet | kResponseBit;
inline constexpr std::uint8_t kReportResp = kReport | kResponseBit;
inline constexpr std::uint8_t kGetTableResp = kGetTable | kResponseBit;

inline constexpr bool is_response(std::uint8_t m) {
    return (m & kResponseBit) != 0;
}
// The request methods an SA (class 0x03) accepts.
inline constexpr bool is_sa_request(std::uint8_t m) {
    switch (m) {
    case kGet:
    case kSet:
    case kGetTable:
    case kGetTraceTable:
    case kGetMulti:
    case kDelete:
    case kReport:
        return true;
    default:
        return false;
    }
}
} // namespace method

// MAD status word: bits 0-4 are class independent, bits 8-14 class specific.
namespace status {
inline constexpr std::uint16_t kOk = 0x0000;
inline constexpr std::uint16_t kBusy = 0x0001;
inline constexpr std::uint16_t kRedirect = 0x0002;
inline constexpr std::uint16_t kBadVersion = 0x0004;
inline constexpr std::uint16_t kUnsupportedMethod = 0x0008;
inline constexpr std::uint16_t kUnsupportedMethodAttr = 0x000C;
inline constexpr std::uint16_t kInvalidField = 0x001C;
inline constexpr std::uint16_t kSaNoResources = 0x0100;
inline constexpr std::uint16_t kSaReqInvalid = 0x0200;
inline constexpr std::uint16_t kSaNoRecords = 0x0300;
inline constexpr std::uint16_t kSaTooManyRecords = 0x0400;
inline constexpr std::uint16_t kSaInvalidGid = 0x0500;
inline constexpr std::uint16_t kSaInsufficientComponents = 0x0600;
inline constexpr std::uint16_t kSaDenied = 0x0700;
} // namespace status

namespace attr {
inline constexpr std::uint16_t kClassPortInfo = 0x0001;
inline constexpr std::uint16_t kNotice = 0x0002;
inline constexpr std::uint16_t kInformInfo = 0x0003;
inline constexpr std::uint16_t kNodeRecord = 0x0011;
inline constexpr std::uint16_t kPortInfoRecord = 0x0012;
inline constexpr std::uint16_t kSmInfo = 0x0020;
inline constexpr std::uint16_t kServiceRecord = 0x0031;
inline constexpr std::uint16_t kPathRecord = 0x0035;
inline constexpr std::uint16_t kMcMemberRecord = 0x0038;
inline constexpr std::uint16_t kMultiPathRecord = 0x003A;
inline constexpr std::uint16_t kInformInfoRecord = 0x00F3;
} // namespace attr

namespace rmpp {
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::uint8_t kTypeData = 1;
inline constexpr std::uint8_t kTypeAck = 2;
inline constexpr std::uint8_t kTypeStop = 3;
inline constexpr std::uint8_t kTypeAbort = 4;
inline constexpr std::uint8_t kFlagActive = 0x01;
inline constexpr std::uint8_t kFlagFirst = 0x02;
inline constexpr std::uint8_t kFlagLast = 0x04;
} // namespace rmpp

} // namespace localsa::mad
