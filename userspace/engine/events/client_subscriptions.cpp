#include "engine/events/client_subscriptions.hpp"

#include <algorithm>

namespace localsa::events {

namespace {
constexpr std::uint16_t kAnyLid = 0xffff;
constexpr std::uint16_t kAnyType = 0xffff;
constexpr std::uint16_t kAnyTrap = 0xffff;
constexpr std::uint32_t kAnyProducer = 0xffffff;

// The subscriber's identity: where its Reports go.
bool same_subscriber(const transport::MadAddress& a, const transport::MadAddress& b) {
    return a.lid == b.lid && a.qpn == b.qpn;
}

// OpenSM's rule for "the same subscription": GID when set, else the LID range, and the type,
// trap and producer. QPN and RespTimeValue do not select (the QPN is the Set's source anyway).
bool same_filter(const sa::InformInfo& a, const sa::InformInfo& b) {
    if (!a.gid.is_zero() || !b.gid.is_zero()) {
        if (a.gid != b.gid)
            return false;
    } else if (a.lid_range_begin != b.lid_range_begin || a.lid_range_end != b.lid_range_end) {
        return false;
    }
    return a.is_generic == b.is_generic && a.type == b.type && a.trap_number == b.trap_number &&
           a.producer_type == b.producer_type;
}
} // namespace

bool ClientSubscriptions::matches(const sa::InformInfo& f, const sa::Notice& n) {
    if (!f.gid.is_zero()) {
        if (f.gid != n.issuer_gid)
            return false;
    } else if (f.lid_range_begin != kAnyLid &&
               (n.issuer_lid < f.lid_range_begin || n.issuer_lid > f.lid_range_end)) {
        return false;
    }
    if ((f.is_generic != 0) != n.is_generic)
        return false;
    if (f.type != kAnyType && f.type != n.type)
        return false;
    if (f.trap_number != kAnyTrap && f.trap_number != n.trap_number)
        return false;
    return f.producer_type == kAnyProducer || f.producer_type == n.producer_type;
}

std::size_t ClientSubscriptions::find(const transport::MadAddress& subscriber,
                                      const sa::InformInfo& filter) const {
    const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) {
        return same_subscriber(e.subscriber, subscriber) && same_filter(e.filter, filter);
    });
    return static_cast<std::size_t>(it - entries_.begin());
}

ClientSubscriptions::AddResult ClientSubscriptions::add(const transport::MadAddress& subscriber,
                                                        const sa::InformInfo& filter) {
    const auto i = find(subscriber, filter);
    if (i != entries_.size()) {
        entries_[i] = {subscriber, filter, 0};
        return AddResult::Updated;
    }
    if (entries_.size() >= max_entries_)
        return AddResult::Full;
    entries_.push_back({subscriber, filter, 0});
    return AddResult::Added;
}

bool ClientSubscriptions::remove(const transport::MadAddress& subscriber,
                                 const sa::InformInfo& filter) {
    const auto i = find(subscriber, filter);
    if (i == entries_.size())
        return false;
    entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
    return true;
}

ClientSubscription* ClientSubscriptions::lookup(const transport::MadAddress& subscriber,
                                                const sa::InformInfo& filter) {
    const auto i = find(subscriber, filter);
    return i == entries_.size() ? nullptr : &entries_[i];
}

std::vector<std::size_t> ClientSubscriptions::matching(const sa::Notice& notice) const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < entries_.size(); ++i)
        if (matches(entries_[i].filter, notice))
            out.push_back(i);
    return out;
}

std::size_t ClientSubscriptions::count_trap(std::uint16_t trap) const {
    return static_cast<std::size_t>(
        std::count_if(entries_.begin(), entries_.end(), [&](const auto& e) {
            return e.filter.is_generic && e.filter.trap_number == trap;
        }));
}

} // namespace localsa::events
