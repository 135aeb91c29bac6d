// The kernel's netlink local path service answered by the local SA: each RESOLVE ib_sa sends
// before its SubnAdmGet(PathRecord) is turned back into that Get (the component mask from the
// attributes present, Reversible and NumbPath from path_use), handed to the dispatcher as if the
// port's own kernel had sent it (same cache, read-through and coherence as a MAD), and the
// answer goes back as the kernel's PATH_RECORD attributes. Whatever cannot be answered, or not
// within the budget, gets the error reply at once: the kernel then asks the SA itself. So does
// a Get the local SA gives up on (no_answer): where a MAD requester retries as with the master,
// the kernel would wait out the budget for nothing.
//
// The answers come back through the transport: this class is the MadTransport the local SA
// sends on, and takes the sends addressed to the requests it made (its TID marker) for itself.
#pragma once

#include "engine/clock.hpp"
#include "engine/counters.hpp"
#include "transport/netlink/ls_message.hpp"
#include "transport/transport.hpp"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace localsa::netlink {

struct LocalServiceConfig {
    // Every RESOLVE is answered (records or error) within this: the local SA's read-through
    // budget, one upstream query with all its tries (--upstream-timeout-ms x (1 +
    // --upstream-retries)).
    std::chrono::milliseconds answer_budget{600};
    // The kernel waits this much longer (SET_TIMEOUT): a live localsad is never overtaken by the
    // kernel's own timer (which would send the query to the SA as well).
    std::chrono::milliseconds kernel_margin{200};

    std::uint32_t kernel_timeout_ms() const;
};

// The requests of the service carry this in the upper half of their TID.
constexpr std::uint32_t kTidMarker = 0x4c534e4c; // "LSNL"

class LocalService : public transport::MadTransport {
public:
    using SendToKernel = std::function<bool(Bytes)>;
    using Dispatch = std::function<void(const transport::InboundMad&)>;
    // True when another local SA serves that device and port (its requests are left to it).
    using ServedElsewhere = std::function<bool(const std::string& device, int port)>;

    LocalService(boost::asio::any_io_executor executor, Clock& clock,
                 transport::MadTransport& inner, LocalServiceConfig config);

    // Until connected, every send goes to the inner transport and no RESOLVE is taken.
    void connect(SendToKernel to_kernel, Dispatch dispatch, ServedElsewhere served_elsewhere,
                 Counters& counters);
    // One message from the kernel (RESOLVE; anything else is counted and ignored).
    void on_message(const Message& message);
    // Tells the kernel how long to wait for a reply (at start; again after a restart).
    bool send_set_timeout();
    const LocalServiceConfig& config() const { return config_; }
    // RESOLVEs waiting for an answer.
    std::size_t pending() const { return waiting_; }
    // RESOLVEs that may wait for one question; those beyond get the error reply at once.
    static constexpr std::size_t kMaxWaitingPerQuestion = 4096;

    // MadTransport: the inner transport's, except the answers to this service's requests.
    bool send(mad::Bytes mad, const transport::MadAddress& to,
              std::chrono::milliseconds response_timeout) override;
    const transport::PortState& port() const override { return inner_.port(); }
    const transport::PortState& refresh_port(transport::PortRead what) override {
        return inner_.refresh_port(what);
    }
    // The error reply now for the RESOLVEs waiting on one of this service's requests; the
    // inner transport's for others.
    void no_answer(const transport::MadAddress& to, std::uint64_t tid, const char* why) override;

private:
    // One question to the local SA and the kernel's RESOLVEs waiting for its answer: a burst
    // of queries for one path (a job start) is one waiter in the local SA, whatever its size.
    struct Pending {
        std::vector<std::uint32_t> seqs;
        PathUse path_use = PathUse::All;
        Clock::time_point deadline;
        std::vector<std::uint8_t> question;
    };

    void resolve(const ResolveRequest& request);
    void answer(std::uint32_t token, mad::Bytes response);
    void reply_error(std::uint32_t seq, const char* why);
    void reply_error(const Pending& pending, const char* why);
    // Removes a question, with the RESOLVEs waiting for it.
    Pending take(std::unordered_map<std::uint32_t, Pending>::iterator it);
    void arm_timer();
    void on_timer();
    bool to_kernel(Bytes message);

    Clock& clock_;
    transport::MadTransport& inner_;
    Counters scratch_counters_; // counts until connected
    Counters* counters_ = &scratch_counters_;
    LocalServiceConfig config_;
    Timer timer_;
    bool timer_armed_ = false;
    SendToKernel to_kernel_;
    Dispatch dispatch_;
    ServedElsewhere served_elsewhere_;
    std::uint32_t next_token_ = 1;
    std::uint32_t next_seq_ = 1;
    std::unordered_map<std::uint32_t, Pending> pending_;           // by token
    std::map<std::vector<std::uint8_t>, std::uint32_t> questions_; // question -> token
    std::size_t waiting_ = 0;
    std::deque<std::pair<Clock::time_point, std::uint32_t>> deadlines_;
};

// The SubnAdmGet(PathRecord) ib_sa would have sent for `request` (ib_nl_set_path_rec_attrs
// in reverse), with `tid`: the component mask names the attributes present, NumbPath is 1 and
// Reversible 1 when path_use asks for a reversible path (ALL, GMP).
std::vector<std::uint8_t> rebuild_query(const ResolveRequest& request, std::uint64_t tid);

// The reply to a RESOLVE from the local SA's answer MAD: the records the kernel takes for
// `use`, each with its flags; empty when the answer carries none the kernel would take (a
// non-zero status, no records, a malformed answer).
std::vector<PathRecordData> records_for_kernel(mad::Bytes response, PathUse use);

} // namespace localsa::netlink
