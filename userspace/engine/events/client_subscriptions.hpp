// The event subscriptions (InformInfo Set) that clients of this port hold at the local SA.
//
// The master sends Reports to the address a Set came from. A client's Set relayed by localsad
// would come from localsad's own address, so clients subscribe here instead: the table keeps
// each subscriber's address and filter, and a Report from the master goes to every subscriber
// whose filter it matches, with the master's matching rules (OpenSM osm_inform.c).
#pragma once

#include "ib/inform_info.hpp"
#include "ib/notice.hpp"
#include "transport/transport.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace localsa::events {

struct ClientSubscription {
    transport::MadAddress subscriber; // where its Reports go (the Set's source)
    sa::InformInfo filter;
    unsigned undelivered_in_a_row = 0;
};

class ClientSubscriptions {
public:
    explicit ClientSubscriptions(std::size_t max_entries) : max_entries_(max_entries) {}

    enum class AddResult { Added, Updated, Full };
    // A Set(Subscribe=1). The same subscriber with the same filter is one subscription.
    AddResult add(const transport::MadAddress& subscriber, const sa::InformInfo& filter);
    // A Set(Subscribe=0); false when no such subscription is held.
    bool remove(const transport::MadAddress& subscriber, const sa::InformInfo& filter);

    // Indices of the subscriptions `notice` goes to; valid until the next add or remove.
    std::vector<std::size_t> matching(const sa::Notice& notice) const;
    const ClientSubscription& at(std::size_t i) const { return entries_[i]; }
    // The subscription of this subscriber with this filter, nullptr when none is held.
    ClientSubscription* lookup(const transport::MadAddress& subscriber,
                               const sa::InformInfo& filter);

    // How many subscriptions ask for this generic trap number.
    std::size_t count_trap(std::uint16_t trap) const;
    std::size_t size() const { return entries_.size(); }

    // True when a Report of `notice` goes to a subscriber with this filter.
    static bool matches(const sa::InformInfo& filter, const sa::Notice& notice);

private:
    std::size_t find(const transport::MadAddress& subscriber, const sa::InformInfo& filter) const;

    std::size_t max_entries_;
    std::vector<ClientSubscription> entries_;
};

} // namespace localsa::events
