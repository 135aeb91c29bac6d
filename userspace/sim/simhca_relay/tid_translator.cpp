#include "tid_translator.hpp"

namespace simhca_relay {
namespace {

constexpr std::uint8_t kClassSmpLid = 0x01;
constexpr std::uint8_t kClassSmpDr = 0x81;
constexpr std::uint64_t kLowMask = 0xffffffffffffULL;
constexpr std::uint16_t kAckFlag = 0x8000;

std::uint64_t get_tid(const std::uint8_t* m) {
    std::uint64_t t = 0;
    for (int i = 8; i < 16; ++i)
        t = t << 8 | m[i];
    return t;
}
void set_tid(std::uint8_t* m, std::uint64_t t) {
    for (int i = 15; i >= 8; --i, t >>= 8)
        m[i] = static_cast<std::uint8_t>(t);
}
std::uint16_t get_stamp(const std::uint8_t* m) {
    return static_cast<std::uint16_t>(m[18] << 8 | m[19]);
}
void set_stamp(std::uint8_t* m, std::uint16_t v) {
    m[18] = static_cast<std::uint8_t>(v >> 8);
    m[19] = static_cast<std::uint8_t>(v);
}
bool is_smp(const std::uint8_t* m) {
    return m[1] == kClassSmpLid || m[1] == kClassSmpDr;
}
bool is_response(const std::uint8_t* m) {
    return m[3] & 0x80;
}

} // namespace

void TidTranslator::outgoing(std::uint8_t* m) {
    const std::uint64_t tid = get_tid(m);
    const std::uint64_t low = tid & kLowMask;
    const auto top = static_cast<std::uint16_t>(tid >> 48);

    if (m[1] == kClassSmpDr)
        m[6] = 0; // hop pointer

    if (!is_response(m)) {
        // a request: ibsim puts our index in the upper bits; remember what they were
        auto [it, fresh] = mine_.try_emplace(low, Entry{top, -1, {}});
        if (!fresh)
            it->second.orig_top = top;
        it->second.when = std::chrono::steady_clock::now();
        return;
    }
    if (is_smp(m))
        return;

    auto it = mine_.find(low);
    if (it != mine_.end() && it->second.orig_top == top) {
        // ACK/STOP/ABORT of a response we receive: send it to the responder's client
        if (it->second.peer >= 0)
            set_tid(m, static_cast<std::uint64_t>(it->second.peer) << 48 | low);
        set_stamp(m, static_cast<std::uint16_t>(kAckFlag | (my_id_ + 1)));
        return;
    }
    // a response of ours: tell the requester's relay who we are
    set_stamp(m, static_cast<std::uint16_t>(my_id_ + 1));
}

void TidTranslator::incoming(std::uint8_t* m) {
    if (m[1] == kClassSmpDr) {
        const std::uint8_t hop_cnt = m[7];
        const bool returning = m[4] & 0x80; // D bit
        m[6] = returning ? (hop_cnt ? 1 : 0) : hop_cnt;
    }
    if (!is_response(m))
        return;

    const std::uint64_t tid = get_tid(m);
    const std::uint64_t low = tid & kLowMask;
    const auto top = static_cast<int>(tid >> 48);
    const std::uint16_t stamp = is_smp(m) ? 0 : get_stamp(m);
    if (!is_smp(m))
        set_stamp(m, 0);

    if (stamp & kAckFlag) {
        // an ACK for a response we sent: the transfer's TID carried the requester's index
        const int requester = (stamp & 0x7fff) - 1;
        set_tid(m, static_cast<std::uint64_t>(requester) << 48 | low);
        return;
    }
    auto it = mine_.find(low);
    if (it != mine_.end() && top == my_id_) {
        if (stamp)
            it->second.peer = stamp - 1;
        it->second.when = std::chrono::steady_clock::now();
        set_tid(m, static_cast<std::uint64_t>(it->second.orig_top) << 48 | low);
    }
}

void TidTranslator::expire(std::chrono::seconds older_than) {
    const auto limit = std::chrono::steady_clock::now() - older_than;
    std::erase_if(mine_, [&](const auto& kv) { return kv.second.when < limit; });
}

} // namespace simhca_relay
